"""The read model's ground: its limits, periods, frame references, errors, and the Memory core
(settings, the clock, the lock, the log, periods). The rest of Memory builds on it, one concern
per module (af_pipeline/interfaces/memory/__init__.py).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from af_pipeline.compiler import layouts
from capture.errors import UserError
from capture.home import Home
from capture.model import DayCapture
from capture.timeutil import US, day_bounds, local_day, parse_day, to_datetime

if TYPE_CHECKING:  # the log's reader: imported with the log, off `af mcp`'s start-up path
    from capture.log.opensegments import OpenSegmentFile

MAX_PERIOD_DAYS = 31
MAX_HOURS = 24.0 * MAX_PERIOD_DAYS
MAX_SEARCH_DAYS = 366  # search reads a compact per-day index, so it may span a year
DEFAULT_MIN_MINUTES = 0.0  # what `af build` publishes with, so published days are served as is
DEFAULT_MAX_TOKENS = 20_000  # under the 25k output cap of common MCP clients
MIN_MAX_TOKENS = 5000  # a busy day's ledger and coverage alone are ~3.5k tokens
MAX_STEPS = 500
CACHED_DAYS = 8  # day captures kept in memory (a busy day is tens of MB of rows)
# rows of days other than today kept in memory at most (snapshots, inputs, presence: a sealed
# day's element trees are read on demand), about 40 MB at ~125 B a row: a few busy days, so a
# long-lived MCP server does not keep 8 busy sealed days nobody asks about again (issue 43)
CACHED_ROWS = 300_000
SKIPPED_SHOWN = 20  # unreadable open-segment lines an answer names (its sentence counts them all)
CACHED_DOCS = 70  # day documents (a few hundred kB each): two months of search
CACHED_PIECES = 4  # compiled parts of a day (a busy open day's is MBs): only exact repeats hit
FORMAT_FILES = {"json": "document.json", "yaml": "document.yaml", "md": "document.md", "context": "context.txt"}

BARE_ID = re.compile(r"^f-[0-9]{4,}$")
QUALIFIED_ID = re.compile(r"^([0-9]{4}-[0-9]{2}-[0-9]{2})/(f-[0-9]{4,})$")
_WORD = re.compile(r"[\w.@#+-]+", re.UNICODE)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Mail and messaging surfaces: by a word of the application name, by site, or by page kind.
MAIL_APPS = ("mail", "outlook", "thunderbird", "spark", "airmail", "mimestream", "superhuman")
CHAT_APPS = (
    "slack", "teams", "discord", "telegram", "whatsapp", "signal", "messages", "messenger",
    "skype", "element", "wechat", "line", "mattermost", "rocket.chat",
)
MAIL_SITES = ("mail.google.com", "outlook.live.com", "outlook.office.com", "outlook.office365.com",
              "mail.yahoo.com", "mail.proton.me", "app.fastmail.com", "icloud.com")
CHAT_SITES = ("slack.com", "app.slack.com", "teams.microsoft.com", "teams.live.com", "discord.com",
              "web.whatsapp.com", "web.telegram.org", "messenger.com", "messages.google.com",
              "chat.google.com", "app.element.io")
MAIL_PAGE_KINDS = ("email", "mail", "inbox")
CHAT_PAGE_KINDS = ("messaging", "chat", "channel")

class BadArgument(UserError):
    """An argument that cannot be used; the message says which and why."""


class Tampered(UserError):
    """A published file no longer matches its manifest: it is refused, never served."""


@dataclass(frozen=True)
class Period:
    """[start_us, end_us) in UTC microseconds, with the local days it touches."""

    kind: str  # day | hours | range
    start_us: int
    end_us: int
    days: tuple[str, ...]
    label: str

    @property
    def day(self) -> str:
        return self.days[0]

    def to_json(self, tz: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "start": to_datetime(self.start_us, tz).isoformat(timespec="seconds"),
            "end": to_datetime(self.end_us, tz).isoformat(timespec="seconds"),
        }
        if len(self.days) <= 7:  # a long range would spend tokens listing every date
            out["days"] = list(self.days)
        else:
            out["day_count"] = len(self.days)
        return out


@dataclass(frozen=True)
class FrameRef:
    """A frame of a day document with its absolute bounds (for lookups by time and period)."""

    day: str
    start_us: int
    end_us: int
    frame: dict[str, Any]

    @property
    def qid(self) -> str:
        return f"{self.day}/{self.frame['id']}"


@dataclass
class _DayIndex:
    """What lookups need of one day document, built once per document version."""

    frames: list[FrameRef]
    # built on the first search of the day (reading the rows' window titles costs a log read)
    hay: list[str] | None = None  # per frame: every searchable field, casefolded, joined
    fields: list[list[tuple[str, str]]] | None = None  # per frame: (field kind, text)
    tokens: list[frozenset[str]] | None = None  # per frame: the tokens of all its fields (terms.py)


def _casefold(text: object) -> str:
    return str(text or "").casefold()


def _is_day(name: str) -> bool:
    try:
        parse_day(name)
    except ValueError:
        return False
    return True


class MemoryCore:
    """What every part of Memory builds on: the data folder's settings, the clock, the lock, the
    event log (opened on first use) and periods.

    ``home`` is a ``capture.home.Home`` or the data folder's path. ``clock`` returns "now" in UTC
    microseconds (frozen in tests and replays); it only resolves "today" and "the last N hours",
    never anything inside a document.
    """

    def __init__(
        self,
        home: Home | str | Path,
        include_typed_text: bool = False,
        clock: Callable[[], int] | None = None,
        layout: str | None = None,
        write_cache: bool = False,
    ) -> None:
        self.home = home if isinstance(home, Home) else Home(Path(home))
        if not self.home.exists():
            raise UserError(f"{self.home.root} is not an activity-frames data folder (import a capture first, "
                            "or pass --home)")
        try:
            self.tz = self.home.settings().tz
        except (FileNotFoundError, ValueError) as exc:
            raise UserError(str(exc)) from None
        self.zone = ZoneInfo(self.tz)
        self._log: Any = None
        self.include_typed_text = include_typed_text
        self.layout = layout or layouts.DEFAULT_LAYOUT
        self.clock = clock or (lambda: time.time_ns() // 1000)
        # One lock: the MCP server warms caches in a thread while the first call may arrive.
        self.lock = threading.RLock()
        self._captures: dict[str, tuple[tuple[Any, ...], DayCapture]] = {}
        self._open: dict[str, dict[str, OpenSegmentFile]] = {}  # open days' files, followed
        self._touched: set[str] | None = None  # open days read while noting_skipped
        self._ts: dict[tuple[str, str], tuple[list[Any], list[int]]] = {}
        self._docs: dict[tuple[Any, ...], tuple[dict[str, Any], str]] = {}
        self._index: dict[tuple[Any, ...], _DayIndex] = {}
        self._slices: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._published: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self._duck: Any = None
        self._actions: dict[tuple[Any, ...], list[Any]] = {}
        # The open day's state on disk (open_cache): read by every Memory, written only by one
        # made with write_cache (the MCP server never writes into the data folder).
        self.write_cache = write_cache
        self._disk_docs: dict[str, tuple[tuple[Any, ...], dict[str, str]]] = {}

    @property
    def log(self) -> Any:
        """The event log (capture.log.EventLog), opened on first use: importing it loads DuckDB,
        which the MCP server should not pay for before it answers ``initialize``."""
        if self._log is None:
            # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
            from capture.log import EventLog

            self._log = EventLog(self.home)
        return self._log

    # ------------------------------------------------------------------ periods

    def now_us(self) -> int:
        return int(self.clock())

    def today(self) -> str:
        return local_day(self.now_us(), self.tz)

    def days(self) -> list[str]:
        """Days the log holds, sealed or open (from the manifest and the open folders, cheaply)."""
        days = {e["day"] for e in self.log.manifest()}
        if self.log.open_dir.is_dir():
            days.update(p.name for p in self.log.open_dir.iterdir() if p.is_dir() and _is_day(p.name))
        return sorted(days)

    def parse_day(self, day: str | None) -> str:
        text = (day or "today").strip().lower()
        today = self.today()
        if text == "today":
            return today
        if text == "yesterday":
            return (parse_day(today) - timedelta(days=1)).isoformat()
        try:
            parsed = parse_day(text).isoformat()
        except ValueError:
            raise BadArgument(
                f"day must be 'today', 'yesterday' or a date YYYY-MM-DD, not {day!r}"
            ) from None
        if parsed > today:
            raise BadArgument(f"day {parsed} is in the future (today is {today} in {self.tz})")
        return parsed

    def parse_time(self, text: str, what: str = "time", end_of_day: bool = False) -> int:
        """An ISO time (or date) in UTC microseconds; without an offset it is in the user's zone.
        A bare date is its first instant, or with ``end_of_day`` the first instant after it."""
        if not isinstance(text, str) or not text.strip():
            raise BadArgument(f"{what} must be an ISO time such as 2026-06-03T14:05, not {text!r}")
        raw = text.strip()
        try:
            if len(raw) == 10 and _is_day(raw):
                start, end = day_bounds(raw, self.tz)
                return end if end_of_day else start
            dt = datetime.fromisoformat(raw.replace("Z", "+00:00") if raw.endswith("Z") else raw)
        except ValueError:
            raise BadArgument(
                f"{what} must be an ISO time such as 2026-06-03T14:05 (user's zone {self.tz}) or "
                f"2026-06-03T12:05:00Z, not {text!r}"
            ) from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=self.zone)
        return (dt - _EPOCH) // timedelta(microseconds=1)

    def period(
        self,
        day: str | None = None,
        hours: float | None = None,
        start: str | None = None,
        end: str | None = None,
        max_days: int = MAX_PERIOD_DAYS,
    ) -> Period:
        """Resolve one of: ``day``; ``hours`` (ending now); ``start`` [+ ``end``, default now]."""
        given = [n for n, v in (("day", day), ("hours", hours), ("start/end", start or end)) if v is not None]
        if len(given) > 1:
            raise BadArgument(f"give one of day, hours or start/end, not {' and '.join(given)}")
        if hours is not None:
            if isinstance(hours, bool) or not isinstance(hours, (int, float)) or hours != hours:
                raise BadArgument(f"hours must be a number, not {hours!r}")
            if not 0 < hours <= MAX_HOURS:
                raise BadArgument(f"hours must be more than 0 and at most {MAX_HOURS:g} (31 days), not {hours:g}")
            e = self.now_us()
            s = e - int(round(hours * 3600 * US))
            label = (f"the last {hours:g} hours ({to_datetime(s, self.tz):%Y-%m-%d %H:%M} to "
                     f"{to_datetime(e, self.tz):%Y-%m-%d %H:%M} {self.tz})")
            return Period("hours", s, e, self._days_between(s, e), label)
        if start is not None or end is not None:
            if start is None:
                raise BadArgument("end needs a start (ISO times in the user's zone, e.g. 2026-06-03T09:00)")
            s = self.parse_time(start, "start")
            e = self.now_us() if end is None else self.parse_time(end, "end", end_of_day=True)
            if e <= s:
                raise BadArgument(f"end ({end or 'now'}) must be after start ({start})")
            if e - s > max_days * 24 * 3600 * US + 3600 * US:  # an hour of slack for DST
                raise BadArgument(f"start and end must be at most {max_days} days apart")
            label = (f"{to_datetime(s, self.tz):%Y-%m-%d %H:%M} to {to_datetime(e, self.tz):%Y-%m-%d %H:%M} "
                     f"{self.tz}")
            return Period("range", s, e, self._days_between(s, e), label)
        d = self.parse_day(day)
        s, e = day_bounds(d, self.tz)
        return Period("day", s, e, (d,), d)

    def as_period(self, p: Period | str | None) -> Period:
        """A Period as is; a day (``"today"``, ``"yesterday"``, ``YYYY-MM-DD``, None for today) as
        that day's period. Every lookup taking a period takes a day this way, so a script can say
        ``memory.summary("yesterday")``; other forms go through ``period(hours=...)`` etc."""
        return p if isinstance(p, Period) else self.period(day=p)

    def _days_between(self, start_us: int, end_us: int) -> tuple[str, ...]:
        first = parse_day(local_day(start_us, self.tz))
        last = local_day(max(start_us, end_us - 1), self.tz)
        out = []
        while first.isoformat() <= last:
            out.append(first.isoformat())
            first += timedelta(days=1)
        return tuple(out)

    def _no_capture(self, label: str) -> BadArgument:
        known = self.days()
        if not known:
            return BadArgument(f"no capture for {label}: the log in {self.home.root} holds no capture yet; "
                               "import or record something first")
        return BadArgument(f"no capture for {label}: the log holds {len(known)} day(s), {known[0]} to {known[-1]}")
