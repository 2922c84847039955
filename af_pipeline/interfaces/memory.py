"""The read model: "the memory for this period", one answer for the CLI and the MCP server.

``Memory(home)`` is the only way ``af day``, ``af context`` and every MCP tool read the user's
activity. It owns the rules they share:

- **Periods.** A period is one local day (``"today"``, ``"yesterday"``, ``YYYY-MM-DD``), the last
  N hours, or ``start``/``end`` (ISO times; without an offset they are in the user's zone). A
  period is at most 31 days long (``MAX_PERIOD_DAYS``); search ranges may cover a year.
- **One trust rule.** A day whose log is sealed and whose ``published/<day>/manifest.json`` says
  sealed is served from its published files, each checked against the sha256 its manifest
  records. A published file that does not match (edited by hand, truncated, missing) is refused
  with ``Tampered`` naming the file; it is never printed, and never silently replaced by a live
  compilation (the caller may ask for ``live`` explicitly). Anything else (today, an open day,
  an unpublished day, other compile options) is compiled on request from the log with the same
  pure functions the build uses.
- **Stable frame ids.** A frame is always a frame of its day's document. Outside a single day's
  raw document, ids are day-qualified (``2026-06-03/f-0003``): the same frame keeps the same id
  whatever period it is served in. A bare ``f-0003`` is only accepted together with its day.
- **One patterns algorithm.** Workflow patterns and routines come from ``af_pipeline.routines``
  (``report.day_actions`` and the miner, the same code as ``af routines``), over the period's
  action streams.

Everything here is read-only: the log and the published folder are only read.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from af_pipeline.compiler import emit, layouts, tokens
from af_pipeline.compiler.document import decode_refs, encode_refs
from af_pipeline.compiler.emit import DEFAULT_BUDGET, context_block
from capture.errors import AfError, UserError
from capture.files import canonical_json, sha256_file
from capture.home import Home
from capture.model import DayCapture, SkippedLine, StreamInfo
from capture.timeutil import US, day_bounds, hhmmss, local_day, parse_day, to_datetime

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


def _casefold(text: object) -> str:
    return str(text or "").casefold()


def _is_day(name: str) -> bool:
    try:
        parse_day(name)
    except ValueError:
        return False
    return True


class Memory:
    """Read-only access to one data folder: periods, trust rule, documents and lookups.

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

    # ------------------------------------------------------------------ captures (cached)

    def _fingerprint(self, day: str) -> tuple[Any, ...]:
        """Changes whenever the rows for a day change (a sealed day only by an amendment)."""
        if self.log.segment_paths(day):
            return ("sealed", len(self.log.segment_files(day, "snapshots")))
        folder = self.log.open_dir / day
        if not folder.is_dir():
            return ("absent",)
        if self._touched is not None:
            self._touched.add(day)  # an open day an answer read: its skipped lines are noted
        return tuple(
            sorted((p.name, st.st_size, st.st_mtime_ns) for p in folder.iterdir() if (st := p.stat()))
        )

    def day_capture(self, day: str) -> DayCapture:
        """A day's rows: sealed days read once; open days follow their files incrementally."""
        with self.lock:
            fp = self._fingerprint(day)
            hit = self._captures.get(day)
            if hit is not None and hit[0] == fp:
                self._captures[day] = self._captures.pop(day)  # most recently used last
                return hit[1]
            if fp[0] == "sealed":
                self._open.pop(day, None)
                cap = self.log.read_day(day, lazy_elements=True)
            else:
                cap = self._read_open(day)
            self._captures.pop(day, None)
            self._captures[day] = (fp, cap)
            today = self.today()  # kept: the day live questions ask about
            while len(self._captures) > CACHED_DAYS:
                oldest = next(d for d in self._captures if d != today)
                self._captures.pop(oldest)
                self._open.pop(oldest, None)
                self._ts = {k: v for k, v in self._ts.items() if k[0] != oldest}
            return cap

    def _read_open(self, day: str) -> DayCapture:
        """An open day's rows, by the log's one open-segment reader, which follows the day's
        files and parses only what was appended since the last read (a live recorder appends
        every few seconds). A line it cannot read is left out and named in ``skipped``."""
        from af_pipeline.interfaces import open_cache
        from capture.log.opensegments import read_open_day  # with the log: not before `af mcp` answers

        if day not in self._open:  # a first read in this process: start from the cache when it holds
            loaded = open_cache.load(self.home.root, day, self.log.open_dir / day)
            if loaded is not None:
                self._open[day], docs, state = loaded
                self._disk_docs[day] = (state, docs)
        return read_open_day(self.log.open_dir, day, self.tz, self._open.setdefault(day, {}))

    def _options_key(self, min_minutes: float, typed: bool, layout: str) -> str:
        """The compile options a cached document must have been compiled with."""
        from af_pipeline.compiler.categories import RULES_FILE

        try:
            rules = hashlib.sha256((self.home.root / RULES_FILE).read_bytes()).hexdigest()
        except FileNotFoundError:
            rules = "defaults"
        return canonical_json({"min_minutes": min_minutes, "include_typed_text": typed, "layout": layout,
                               "categories": rules})

    def save_open_cache(self, day: str) -> bool:
        """Write an open day's parsed rows and the documents compiled from them (open_cache);
        False when the day is not open here or nothing is read yet."""
        from af_pipeline.interfaces import open_cache

        with self.lock:
            follow = self._open.get(day)
            if not follow or self.log.segment_paths(day):
                return False
            state = open_cache.files_state(follow)
            disk = self._disk_docs.get(day)
            docs = disk[1] if disk is not None and disk[0] == state else {}
            open_cache.save(self.home.root, day, follow, docs)
            return True

    def save_open_caches(self) -> list[str]:
        """save_open_cache for every open day read here; the days written."""
        return [day for day in sorted(self._open) if self.save_open_cache(day)]

    # ------------------------------------------------------------------ lines the reader left out

    @contextmanager
    def noting_skipped(self) -> Iterator[list[SkippedLine]]:
        """Collect the open-segment lines left out of the answers given inside the block: the
        list yielded is filled when the block ends, with the skipped lines of every open day the
        answers read (a damaged line, or one of a newer capture schema). Take ``lock`` around
        it when other threads share this Memory."""
        outer, self._touched = self._touched, set()
        found: list[SkippedLine] = []
        try:
            yield found
        finally:
            touched, self._touched = self._touched, outer
            if outer is not None:
                outer.update(touched)
        for day in sorted(touched):
            try:
                found.extend(self.day_capture(day).skipped)
            except (AfError, OSError, ValueError):
                continue  # the day went away (sealed meanwhile): nothing of it was left out

    def _times(self, day: str, kind: str, rows: list[Any]) -> list[int]:
        hit = self._ts.get((day, kind))
        if hit is not None and hit[0] is rows:
            return hit[1]
        times = [r.ts_us for r in rows]
        self._ts[(day, kind)] = (rows, times)
        return times

    def _slice(self, day: str, start_us: int, end_us: int) -> DayCapture:
        """The rows of one day inside [start_us, end_us)."""
        cap = self.day_capture(day)
        out = DayCapture(day=day, tz=self.tz, sealed=cap.sealed)
        for kind in ("snapshots", "inputs", "elements"):
            rows = getattr(cap, kind)
            keys = self._times(day, kind, rows)
            lo, hi = bisect_left(keys, start_us), bisect_left(keys, end_us)
            setattr(out, kind, list(rows[lo:hi]))
        out.presence = [
            replace(p, ts_us=max(p.ts_us, start_us), end_us=min(p.end_us, end_us))
            for p in cap.presence if p.ts_us < end_us and p.end_us > start_us
        ]
        streams: dict[str, StreamInfo] = {}
        for s in cap.streams:  # screen sizes hold for the whole day
            streams.setdefault(s.stream, s)
        out.streams = sorted(streams.values(), key=lambda s: (s.ts_us, s.ref))
        out.recorders = list(cap.recorders)
        out.segment_hashes = dict(cap.segment_hashes)
        out.skipped = list(cap.skipped)
        return out

    # ------------------------------------------------------------------ published artifacts (trust rule)

    def published_dir(self, day: str) -> Path:
        return self.home.published_dir / day

    def published_days(self) -> list[str]:
        root = self.home.published_dir
        if not root.is_dir():
            return []
        return [p.name for p in sorted(root.iterdir()) if _is_day(p.name) and (p / "manifest.json").is_file()]

    def published_manifest(self, day: str) -> dict[str, Any] | None:
        path = self.published_dir(day) / "manifest.json"
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise Tampered(f"{path} is not readable JSON ({exc}): refusing the published day; "
                           "rebuild it with `af build`") from None
        if not isinstance(data, dict):
            raise Tampered(f"{path} is not a manifest object: refusing the published day; rebuild it with `af build`")
        return data

    def verified_file(self, day: str, name: str) -> Path | None:
        """A published file whose sha256 matches the day's manifest; None when the day is not
        published or the manifest does not list the file. A listed file that is missing or
        differs raises Tampered: it is refused, never served."""
        manifest = self.published_manifest(day)
        if manifest is None:
            return None
        entry = (manifest.get("files") or {}).get(name)
        expected = entry.get("sha256") if isinstance(entry, dict) else None
        if not expected:
            return None
        path = self.published_dir(day) / name
        if not path.is_file():
            raise Tampered(f"{path} is listed in its manifest but missing: refusing it; rebuild with `af build`")
        actual = sha256_file(path)
        if actual != expected:
            raise Tampered(
                f"{path} does not match its manifest (sha256 {actual[:12]}, published {str(expected)[:12]}): "
                "it was changed after publication and is refused; rebuild with `af build`, or compile "
                "from the log (`--live`)"
            )
        return path

    def _servable(self, day: str, min_minutes: float, typed: bool) -> bool:
        """Whether a day is answered from its published files: the log's day is sealed, the
        manifest says sealed, and the options asked for are the ones published."""
        if typed or abs(min_minutes - DEFAULT_MIN_MINUTES) > 1e-9 or not self.log.segment_paths(day):
            return False
        manifest = self.published_manifest(day)
        return bool(manifest and manifest.get("sealed"))

    def _stat_key(self, day: str) -> tuple[Any, ...]:
        out = []
        for name in ("manifest.json", "document.json"):
            try:
                st = (self.published_dir(day) / name).stat()
            except FileNotFoundError:
                return ()
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(out)

    def _published_document(self, day: str, min_minutes: float) -> dict[str, Any] | None:
        # verified once per file version (a changed file gets another size or mtime, and is
        # verified again): hashing every published day on every search would cost more than it
        stat = self._stat_key(day)
        hit = self._published.get(day)
        if hit is not None and stat and hit[0] == stat:
            doc: dict[str, Any] = hit[1]
        else:
            path = self.verified_file(day, "document.json")
            if path is None:
                return None
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise Tampered(f"{path} is not readable JSON ({exc}); rebuild with `af build`") from None
            if not isinstance(doc, dict):
                raise Tampered(f"{path} is not a document object; rebuild with `af build`")
            self._published[day] = (stat, doc)
        built = (doc.get("provenance") or {}).get("options") or {}
        floor = built.get("min_minutes")
        if built.get("include_typed_text") or not isinstance(floor, (int, float)) or \
                abs(float(floor) - min_minutes) > 1e-9:
            return None  # published with other options: compile with the ones asked for
        return doc

    # ------------------------------------------------------------------ documents

    def _check_min(self, min_minutes: float) -> float:
        if isinstance(min_minutes, bool) or not isinstance(min_minutes, (int, float)) or \
                not 0 <= min_minutes <= 24 * 60:
            raise BadArgument(f"min_minutes must be between 0 and 1440, not {min_minutes!r}")
        return float(min_minutes)

    def day_document(self, day: str, min_minutes: float = DEFAULT_MIN_MINUTES,
                     live: bool = False) -> tuple[dict[str, Any], str]:
        """(document, source) of one local day: published and verified, else compiled live."""
        min_minutes = self._check_min(min_minutes)
        layout = self.layout
        with self.lock:
            typed = self.include_typed_text
            if not live and layout == layouts.DEFAULT_LAYOUT and self._servable(day, min_minutes, typed):
                doc = self._published_document(day, min_minutes)
                if doc is not None:
                    return doc, f"published/{day}/document.json"
            key = (day, min_minutes, typed, layout, self._fingerprint(day))
            hit = self._docs.get(key)
            if hit is not None:
                return hit
            # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
            from af_pipeline.compiler.categories import rules_in
            from af_pipeline.compiler.compile import CompileOptions, compile_day

            cap = self.day_capture(day)
            if not cap.snapshots and not cap.inputs:
                raise self._no_capture(day)
            sealed = bool(self.log.segment_paths(day))
            follow = None if sealed else self._open.get(day)
            state = okey = None
            if follow:  # an open day: a document compiled from exactly these rows by an earlier process
                from af_pipeline.interfaces import open_cache

                state, okey = open_cache.files_state(follow), self._options_key(min_minutes, typed, layout)
                disk = self._disk_docs.get(day)
                text = disk[1].get(okey) if disk is not None and disk[0] == state else None
                doc = json.loads(text) if text is not None else None
            else:
                doc = None
            if doc is None:
                doc = compile_day(cap, CompileOptions(min_minutes=min_minutes, include_typed_text=typed,
                                                      layout=layout, categories=rules_in(self.home.root)))
                if follow and state is not None and okey is not None:
                    disk = self._disk_docs.get(day)
                    docs = dict(disk[1]) if disk is not None and disk[0] == state else {}
                    docs[okey] = canonical_json(doc)
                    self._disk_docs[day] = (state, docs)
                    if self.write_cache:
                        self.save_open_cache(day)
            source = "compiled from the sealed log" if sealed else "compiled live from the log (includes unsealed data)"
            self._docs = {k: v for k, v in self._docs.items() if k[:4] != key[:4]}  # older versions
            while len(self._docs) >= CACHED_DOCS:
                self._docs.pop(next(iter(self._docs)))
            self._docs[key] = (doc, source)
            return doc, source

    def document(self, day: str | None = None, min_minutes: float = DEFAULT_MIN_MINUTES,
                 live: bool = False) -> dict[str, Any]:
        """One day's schema v1 document ("today", "yesterday" or YYYY-MM-DD): published and
        verified against its manifest when it can be, else compiled live from the log."""
        return self.day_document(self.parse_day(day), min_minutes, live)[0]

    def published_text(self, day: str, fmt: str) -> str | None:
        """The verified published rendering of a day (json, yaml, md or the default-budget
        context block), or None when it cannot be served as published."""
        if fmt not in FORMAT_FILES or self.layout != layouts.DEFAULT_LAYOUT or \
                not self._servable(day, DEFAULT_MIN_MINUTES, self.include_typed_text):
            return None
        if self._published_document(day, DEFAULT_MIN_MINUTES) is None:
            return None
        path = self.verified_file(day, FORMAT_FILES[fmt])
        return None if path is None else path.read_text(encoding="utf-8")

    def render(self, document: dict[str, Any], fmt: str = "json", budget_tokens: int = DEFAULT_BUDGET) -> str:
        """A document as json | yaml | md | context (typed text only if this Memory opted in)."""
        if fmt not in emit.FORMATS:
            raise BadArgument(f"format must be one of {', '.join(emit.FORMATS)}, not {fmt!r}")
        return emit.render(document, fmt, include_typed_text=self.include_typed_text, budget_tokens=budget_tokens)

    def _check_budget(self, budget_tokens: int) -> int:
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or \
                not 200 <= budget_tokens <= DEFAULT_MAX_TOKENS:
            raise BadArgument(f"budget_tokens must be a whole number between 200 and {DEFAULT_MAX_TOKENS}, "
                              f"not {budget_tokens!r}")
        return budget_tokens

    def context_block(self, day: str | Period | None = None, budget_tokens: int = DEFAULT_BUDGET,
                      min_minutes: float = DEFAULT_MIN_MINUTES) -> str:
        """The token-budgeted context block of a day or a period."""
        return self.context(self.as_period(day), budget_tokens, min_minutes)[0]

    def context(self, p: Period | str, budget_tokens: int = DEFAULT_BUDGET,
                min_minutes: float = DEFAULT_MIN_MINUTES) -> tuple[str, str]:
        """(block, source) for a period."""
        p = self.as_period(p)
        self._check_budget(budget_tokens)
        if p.kind == "day" and budget_tokens == DEFAULT_BUDGET and min_minutes == DEFAULT_MIN_MINUTES:
            text = self.published_text(p.day, "context")
            if text is not None:
                return text, f"published/{p.day}/context.txt"
        doc, source = self.period_document(p, min_minutes)
        return context_block(doc, budget_tokens=budget_tokens, include_typed_text=self.include_typed_text), source

    # ------------------------------------------------------------------ frames and periods

    def _local_us(self, day: str, clock: str) -> int:
        """HH:MM:SS on a local day in UTC microseconds (an ambiguous DST hour takes the first)."""
        d = parse_day(day)
        h, m, s = (int(x) for x in clock.split(":"))
        dt = datetime(d.year, d.month, d.day, h, m, min(s, 59), tzinfo=self.zone)
        return (dt - _EPOCH) // timedelta(microseconds=1)

    def day_index(self, day: str, min_minutes: float = DEFAULT_MIN_MINUTES) -> _DayIndex:
        """Frames of a day document with their absolute bounds."""
        doc, _ = self.day_document(day, min_minutes)
        key = (day, id(doc))
        hit = self._index.get(key)
        if hit is not None:
            return hit
        frames: list[FrameRef] = []
        for f in doc.get("frames", []):
            s = self._local_us(day, f["start"])
            e = self._local_us(day, f["end"])
            if e < s:  # the frame's last credit ran past midnight
                e += 24 * 3600 * US
            frames.append(FrameRef(day, s, e, f))
        idx = _DayIndex(frames)
        live = {id(d) for d, _ in self._docs.values()} | {id(d) for _, d in self._published.values()}
        self._index = {k: v for k, v in self._index.items() if k[1] in live}
        self._index[key] = idx
        return idx

    def search_index(self, day: str) -> _DayIndex:
        """The day's index with its searchable fields: every window title a frame's rows showed
        (read from the log), not only the three the document lists."""
        idx = self.day_index(day, 0.0)
        if idx.hay is None or idx.fields is None:
            typed = self.include_typed_text
            frames = [f.frame for f in idx.frames]
            fields: list[list[tuple[str, str]]] = []
            for f, extra in zip(frames, self._row_titles(day, frames), strict=True):
                listed = {str(w.get("title") or "") for w in f.get("windows") or []}
                fields.append(list(_fields(f, typed)) + [("title", t) for t in extra if t not in listed])
            idx.fields = fields
            idx.hay = ["\n".join(text for _, text in fs).casefold() for fs in fields]
        return idx

    def _row_titles(self, day: str, frames: Sequence[dict[str, Any]]) -> list[list[str]]:
        """Per frame, the distinct window titles of its snapshot rows and of its interruptions'
        rows, in row order."""
        try:
            window = self._window_titles(day)
        except (AfError, OSError, ValueError):
            return [[] for _ in frames]

        def titles(evidence: Any) -> list[str]:
            try:
                refs = decode_refs((evidence or {}).get("snapshots", []))
            except (ValueError, KeyError, TypeError, AttributeError):
                refs = []
            seen: dict[str, None] = {}
            for r in sorted(refs, key=_ref_key):
                w = window.get(r)
                if w:
                    seen.setdefault(w, None)
            return list(seen)

        out = []
        for f in frames:
            own = titles(f.get("evidence"))
            # a folded detour's rows belong to the frame it interrupted: its titles are found there
            for i in f.get("interruptions") or []:
                own += [t for t in titles(i.get("evidence")) if t not in own]
            out.append(own)
        return out

    def _window_titles(self, day: str) -> dict[str, str]:
        """ref -> window title of a day's snapshot rows. A sealed day's two columns come straight
        from its Parquet segments (8 ms where reading the whole day takes 300 ms); an open day's
        from the rows already followed."""
        files = [str(f) for f in self.log.segment_files(day, "snapshots")]
        if not files:
            return {s.ref: s.window for s in self.day_capture(day).snapshots if s.window}
        if self._duck is None:
            import duckdb  # DuckDB: only for window titles, off `af mcp`'s start-up path

            self._duck = duckdb.connect()
        rows = self._duck.execute(
            'SELECT ref, "window" FROM read_parquet(?, union_by_name = true) WHERE "window" IS NOT NULL',
            [files]).fetchall()
        return {str(r): str(w) for r, w in rows}

    def period_frames(self, p: Period | str, min_minutes: float = DEFAULT_MIN_MINUTES) -> list[FrameRef]:
        """Frames of the period's day documents that overlap it, in time order (whole frames:
        a frame is never cut, so its id and numbers are the same in every period)."""
        p = self.as_period(p)
        out: list[FrameRef] = []
        for d in p.days:
            try:
                idx = self.day_index(d, min_minutes)
            except BadArgument:
                continue  # a day without capture inside a longer period
            out.extend(f for f in idx.frames if f.start_us < p.end_us and f.end_us > p.start_us)
        out.sort(key=lambda f: (f.start_us, f.day, str(f.frame.get("stream") or ""), f.frame["id"]))
        return out

    def period_document(self, p: Period | str, min_minutes: float = DEFAULT_MIN_MINUTES) -> tuple[dict[str, Any], str]:
        """A document for any period. One day: that day's document (ids bare; its ``day`` names
        the day). Otherwise frames are day-qualified (``DAY/f-0003``), and for a part of a day: the ledger and coverage compiled from the rows inside the period. Several
        days: their ledgers summed. Frames are always whole frames of the day documents."""
        p = self.as_period(p)
        min_minutes = self._check_min(min_minutes)
        if p.kind == "day":  # the day's own document, bare ids: its header names the day
            return self.day_document(p.day, min_minutes)
        with self.lock:
            pieces: list[tuple[dict[str, Any], str]] = []
            for d in p.days:
                ds, de = day_bounds(d, self.tz)
                lo, hi = max(ds, p.start_us), min(de, p.end_us)
                if lo >= hi:
                    continue
                if (lo, hi) == (ds, de):
                    try:
                        pieces.append(self.day_document(d, min_minutes))
                    except BadArgument:
                        continue
                else:
                    piece = self._piece(d, lo, hi, min_minutes)
                    if piece is not None:
                        pieces.append(piece)
            if not pieces:
                raise self._no_capture(p.label)
            frames = self.period_frames(p, min_minutes)
            base = dict(pieces[0][0]) if len(pieces) == 1 else _merge([d for d, _ in pieces])
            base["frames"] = [dict(f.frame, id=f.qid) for f in frames]
            base["window"] = {k: v for k, v in p.to_json(self.tz).items() if k in ("start", "end")}
            base = self._recategorized(base)
            sources = sorted({s for _, s in pieces})
            return base, sources[0] if len(sources) == 1 else "; ".join(sources)

    def _recategorized(self, doc: dict[str, Any]) -> dict[str, Any]:
        """doc with its categories block made again over its own frames: the pieces' blocks name
        frames by their bare day ids, the period's frames are day-qualified."""
        from af_pipeline.compiler.categories import NAMESPACE, categorize, rules_in

        if NAMESPACE in doc.get("inferred", {}):
            doc = dict(doc, inferred={k: v for k, v in doc["inferred"].items() if k != NAMESPACE})
        return categorize(doc, rules_in(self.home.root))

    def _piece(self, day: str, lo: int, hi: int, min_minutes: float) -> tuple[dict[str, Any], str] | None:
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.compiler.categories import rules_in
        from af_pipeline.compiler.compile import CompileOptions, compile_day

        key = (day, lo, hi, min_minutes, self.include_typed_text, self._fingerprint(day))
        hit = self._slices.pop(key, None)
        if hit is None:
            cap = self._slice(day, lo, hi)
            if not cap.snapshots and not cap.inputs:
                return None
            hit = compile_day(cap, CompileOptions(min_minutes=min_minutes, include_typed_text=self.include_typed_text,
                                                  layout=self.layout, categories=rules_in(self.home.root)))
            # "The last N hours" ends at a new now on every call and a live day's rows change with
            # each sync pass, so most pieces are never asked again: keep none of an older version
            # of the day and only the few newest (each holds a compiled document; 17 of them were
            # most of the MCP server's growth in the soak, docs/benchmarks.md).
            self._slices = {k: v for k, v in self._slices.items() if k[0] != day or k[5] == key[5]}
            while len(self._slices) >= CACHED_PIECES:
                self._slices.pop(next(iter(self._slices)))
        self._slices[key] = hit  # most recently used last
        sealed = bool(self.log.segment_paths(day))
        return hit, ("compiled from the sealed log" if sealed else "compiled live from the log (includes unsealed data)")

    def resolve_frame(self, frame_id: str, day: str | None = None) -> FrameRef:
        """A frame by its day-qualified id (``2026-06-03/f-0003``), or by a bare id with its day.
        An id is never mapped to another day's frame."""
        fid = (frame_id or "").strip()
        m = QUALIFIED_ID.match(fid)
        if m:
            fday, bare = m.group(1), m.group(2)
            if day is not None and self.parse_day(day) != fday:
                raise BadArgument(f"frame {fid} belongs to {fday}, not to day {day}; drop day or use that day's id")
        elif BARE_ID.match(fid):
            if day is None:
                raise BadArgument(f"frame id {fid} needs its day: give the day-qualified id (e.g. "
                                  f"{self.today()}/{fid}) as returned by the tools, or day=YYYY-MM-DD")
            fday, bare = self.parse_day(day), fid
        else:
            raise BadArgument(f"frame_id must look like 2026-06-03/f-0012 (day/frame), not {frame_id!r}")
        idx = self.day_index(fday, 0.0)
        hit = next((f for f in idx.frames if f.frame["id"] == bare), None)
        if hit is None:
            span = f"{idx.frames[0].frame['id']}..{idx.frames[-1].frame['id']}" if idx.frames else "none"
            raise BadArgument(f"no frame {bare} on {fday} (frames there: {span})")
        return hit

    # ------------------------------------------------------------------ lookups

    def activity_at(self, when: str, around: int = 1) -> dict[str, Any]:
        """What covered an instant on each monitor: the frame (or the gap), and ``around`` frames
        before and after it."""
        if isinstance(around, bool) or not isinstance(around, int) or not 0 <= around <= 5:
            raise BadArgument(f"around must be between 0 and 5, not {around!r}")
        t = self.parse_time(when, "time")
        if t > self.now_us():
            raise BadArgument(f"time {when} is in the future")
        day = local_day(t, self.tz)
        try:
            idx = self.day_index(day, 0.0)
        except BadArgument:
            raise self._no_capture(f"{day} (asked for {when})") from None
        streams: dict[str, list[FrameRef]] = {}
        for f in idx.frames:
            streams.setdefault(str(f.frame.get("stream") or ""), []).append(f)
        out = []
        for stream in sorted(streams):
            frames = streams[stream]
            pos = bisect_left([f.start_us for f in frames], t + 1) - 1  # last frame starting <= t
            covering = frames[pos] if pos >= 0 and frames[pos].end_us > t else None
            before = frames[max(0, pos - around + (0 if covering else 1)):pos + (0 if covering else 1)] if pos >= 0 else []
            after = frames[pos + 1:pos + 1 + around]
            row: dict[str, Any] = {"stream": stream}
            if covering:
                row["at"] = self._brief(covering)
            else:
                gap_from = hhmmss(frames[pos].end_us, self.tz) if pos >= 0 else None
                gap_to = hhmmss(frames[pos + 1].start_us, self.tz) if pos + 1 < len(frames) else None
                row["at"] = None
                row["gap"] = {"from": gap_from, "to": gap_to,
                              "note": "no frame on this monitor at that time (no capture, or a gap over 5 min)"}
            row["before"] = [self._brief(f, short=True) for f in before]
            row["after"] = [self._brief(f, short=True) for f in after]
            out.append(row)
        return {"time": to_datetime(t, self.tz).isoformat(timespec="seconds"), "day": day, "tz": self.tz,
                "streams": out}

    def _brief(self, f: FrameRef, short: bool = False) -> dict[str, Any]:
        fr = f.frame
        out: dict[str, Any] = {"id": f.qid, "app": fr["app"], "start": fr["start"], "end": fr["end"],
                               "active_min": fr["active_min"]}
        if fr.get("site"):
            out["site"] = fr["site"]
        if fr.get("windows"):
            out["window"] = fr["windows"][0]["title"]
        if not short:
            if fr.get("pages"):
                out["pages"] = [f"{p['kind']} {p.get('entity') or ''}".strip() for p in fr["pages"][:3]]
            v = fr.get("input") or {}
            out["input"] = {k: v[k] for k in ("keys", "clicks", "text") if v.get(k)}
            if fr.get("clicked"):
                out["clicked"] = [c["target"] for c in fr["clicked"][:3]]
        return out

    def search(self, query: str, start: str | None = None, end: str | None = None, limit: int = 20,
               cursor: str | None = None, order: str = "relevance") -> dict[str, Any]:
        """Ranked frames across days matching the query's words (each word may match a different
        field): apps, window titles, sites, typed pages, clicked targets, communications
        subjects, and typed text only when opted in. Frames holding the query as typed in one
        field rank first, then those holding every word in one field, then by matched words.
        ``order="recent"`` keeps the best-matching tier only, newest first ("when did I last")."""
        if order not in ("relevance", "recent"):
            raise BadArgument(f"order must be 'relevance' or 'recent', not {order!r}")
        words = sorted({w for w in _WORD.findall(_casefold(query)) if w})
        phrase = " ".join(_casefold(query).split())
        if not words:
            raise BadArgument("query must contain at least one word (e.g. 'PROJ-42' or 'expense form')")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise BadArgument(f"limit must be between 1 and 100, not {limit!r}")
        days = self.days()
        if not days:
            raise self._no_capture("search")
        if start is None and end is None:  # the newest year of the log, however old it is
            last = min(days[-1], self.today())
            first = max(days[0], (parse_day(last) - timedelta(days=MAX_SEARCH_DAYS - 1)).isoformat())
            p = self.period(start=first, end=last, max_days=MAX_SEARCH_DAYS)
        else:
            p = self.period(start=start or days[0], end=end, max_days=MAX_SEARCH_DAYS)
        known = set(days)
        scored: list[tuple[tuple[Any, ...], FrameRef, list[str]]] = []
        with self.lock:
            for d in p.days:
                if d not in known:
                    continue
                idx = self.search_index(d)
                all_fields = idx.fields or []
                for i, hay in enumerate(idx.hay or []):
                    hits = [w for w in words if w in hay]
                    if not hits:
                        continue
                    f = idx.frames[i]
                    if f.start_us >= p.end_us or f.end_us <= p.start_us:
                        continue
                    has_phrase, together, score, fields = _score(all_fields[i], hits, phrase)
                    tier = (-has_phrase, -together, -len(hits))
                    rank: tuple[Any, ...] = (*tier, -score, -float(f.frame.get("active_min", 0.0)), -f.start_us, f.qid)
                    if order == "recent":
                        rank = (*tier, -f.start_us, f.qid)
                    scored.append((rank, f, fields))
        scored.sort(key=lambda r: r[0])
        if order == "recent" and scored:  # only the best-matching tier, newest first
            best = scored[0][0][:3]
            scored = [r for r in scored if r[0][:3] == best]
        key = ("search", tuple(words), phrase, order, p.start_us, p.end_us)
        offset = _cursor_offset(cursor, key)
        page = scored[offset:offset + limit]
        results = []
        for _, f, fields in page:
            fr = f.frame
            item = self._brief(f, short=True)
            item["day"] = f.day
            item["matched"] = fields
            item["evidence"] = _evidence_summary(fr)
            results.append(item)
        more = offset + limit < len(scored)
        return {
            "query": query, "words": words, "order": order, "period": p.to_json(self.tz), "total": len(scored),
            "results": results,
            "next_cursor": _make_cursor(offset + limit, key) if more else None,
            "typed_text": "searched" if self.include_typed_text else "not searched (operator did not enable it)",
            **({"note": f"nothing matched in {p.label}; the log holds {days[0]} to {days[-1]}"}
               if not scored else {}),
        }

    # ------------------------------------------------------------------ tools' bodies

    def summary(self, p: Period | str, top: int = 20) -> dict[str, Any]:
        """Per-app ledger, one-timeline minutes first (per-monitor beside them, labelled)."""
        p = self.as_period(p)
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 200:
            raise BadArgument(f"top must be between 1 and 200, not {top!r}")
        doc, source = self.period_document(p)
        cov = doc.get("coverage", {})
        apps = []
        for a in doc.get("apps", [])[:top]:
            apps.append({
                "app": a["app"],
                "minutes": a.get("timeline_minutes", a["minutes"]),
                "per_monitor_minutes": a["minutes"],
                "sessions": a["frames"],
                "longest_session_min": a["longest_frame_min"],
                "interruptions": a.get("interruptions", 0),
                "top_windows": [w["title"] if isinstance(w, dict) else w for w in a.get("top_windows", [])],
            })
        return {
            "period": p.to_json(self.tz),
            "source": source,
            "minutes": cov.get("timeline_min"),
            "per_monitor_minutes": cov.get("active_min"),
            "covered_min": cov.get("covered_min"),
            "first_activity": cov.get("first_activity"),
            "last_activity": cov.get("last_activity"),
            "distinct_apps": cov.get("distinct_apps"),
            "apps": apps,
            "apps_not_listed": max(0, len(doc.get("apps", [])) - len(apps)),
            "note": ("minutes: all monitors on one timeline, each instant once (use these for 'how long'); "
                     "per_monitor_minutes count a dual-monitor minute on both; a session is one frame"),
        }

    def activity(self, p: Period | str, min_minutes: float = DEFAULT_MIN_MINUTES, evidence: str = "ranges",
                 max_tokens: int = DEFAULT_MAX_TOKENS, cursor: str | None = None) -> dict[str, Any]:
        """The period's document, frames paged to fit max_tokens."""
        p = self.as_period(p)
        if evidence not in ("ranges", "none"):
            raise BadArgument(f"evidence must be 'ranges' or 'none', not {evidence!r}")
        _check_max_tokens(max_tokens)
        doc, source = self.period_document(p, min_minutes)
        frames = doc["frames"]
        if p.kind == "day":  # JSON answers always carry day-qualified ids
            frames = [dict(f, id=f"{p.day}/{f['id']}") for f in frames]
        if evidence == "none":
            frames = [{k: v for k, v in f.items() if k != "evidence"} for f in frames]
            for f in frames:
                if f.get("interruptions"):
                    f["interruptions"] = [{k: v for k, v in i.items() if k != "evidence"} for i in f["interruptions"]]
        frames = [_shrink_frame(f) for f in frames]
        head = {k: v for k, v in doc.items() if k != "frames"}
        if "inferred" in head:
            # tier 2 grouped (category totals, frame counts): its per-frame evidence lists would
            # outgrow the header on a busy day; the day's document keeps them
            head["inferred"] = {ns: {"generator": b["generator"], "items": [
                {k: v for k, v in it.items() if k != "evidence"} | {"frames": len(it["evidence"].get("frames", []))}
                for it in b["items"]]} for ns, b in head["inferred"].items()}
        head["served"] = {"source": source, "period": p.to_json(self.tz)}
        key = ("activity", p.start_us, p.end_us, min_minutes, evidence)
        return _page(head, "frames", frames, max_tokens, cursor, key, lean=("day", "served"))

    def steps(self, p: Period | None, frame_id: str | None, query: str | None, limit: int = 100,
              cursor: str | None = None, day: str | None = None) -> dict[str, Any]:
        if (frame_id is None) == (query is None or not query.strip()):
            raise BadArgument("give exactly one of frame_id (e.g. 2026-06-03/f-0012) or query (words to find a task)")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_STEPS:
            raise BadArgument(f"limit must be between 1 and {MAX_STEPS}, not {limit!r}")
        others: list[str] = []
        if frame_id is not None:
            f = self.resolve_frame(frame_id, day)
        else:
            per = p or self.period()
            ranked = self._match(per, query or "")
            if not ranked:
                raise BadArgument(f"no frame in {per.label} matches {query!r} (app, site, window title, page, clicked target)")
            f = ranked[0]
            others = [r.qid for r in ranked[1:11]]
        all_steps = self._frame_steps(f)
        for st in all_steps:
            st["evidence"] = encode_refs(st.pop("refs"))
        brief: dict[str, Any] = {"id": f.qid}
        brief.update({k: f.frame[k] for k in ("app", "site", "stream", "start", "end", "active_min") if k in f.frame})
        head: dict[str, Any] = {
            "frame": brief,
            "other_matches": others,
            "typed_text": "included" if self.include_typed_text else "excluded (operator did not enable it)",
        }
        return _page(head, "steps", all_steps, DEFAULT_MAX_TOKENS, cursor, ("steps", f.qid, limit),
                     lean=("frame",), limit=limit)

    def _match(self, p: Period, query: str) -> list[FrameRef]:
        words = sorted({w for w in _WORD.findall(_casefold(query)) if w})
        out = []
        with self.lock:
            for d in p.days:
                try:
                    idx = self.search_index(d)
                except BadArgument:
                    continue
                for f, hay in zip(idx.frames, idx.hay or [], strict=True):
                    if f.start_us >= p.end_us or f.end_us <= p.start_us:
                        continue
                    hits = [w for w in words if w in hay]
                    if hits:
                        out.append(((-len(hits), -float(f.frame.get("active_min", 0)), f.qid), f))
        return [f for _, f in sorted(out, key=lambda r: r[0])]

    def _frame_steps(self, f: FrameRef) -> list[dict[str, Any]]:
        # deferred: entities load the public suffix list (~0.6 s), see warm()
        from af_pipeline.compiler.actions import actions_for_day
        from af_pipeline.compiler.enrich import enrich

        cap = self.day_capture(f.day)
        refs: set[str] = set()
        try:
            refs = set(decode_refs(f.frame.get("evidence", {}).get("snapshots", [])))
        except (ValueError, KeyError, TypeError):
            refs = set()
        times = [s.ts_us for s in cap.snapshots if s.ref in refs]
        start = min(times) if times else f.start_us
        end = max(max(times) if times else f.end_us, f.end_us)
        stream = f.frame.get("stream")
        enriched = [e for e in enrich(self._slice(f.day, start, end + 1))
                    if (e.stream or e.event.stream) == stream]
        texts: dict[str, str] = {}
        if self.include_typed_text:
            texts = {e.event.ref: e.key_text for e in enriched if e.key_text}
        out = []
        for a in actions_for_day(f.day, enriched):
            step: dict[str, Any] = {"at": hhmmss(a.ts_us, self.tz), "op": {"app": "focus"}.get(a.op, a.op),
                                    "target": a.target}
            if a.role:
                step["role"] = a.role
            if a.app:
                step["app"] = a.app
            if a.url and a.op in ("nav", "click"):
                step["url"] = a.url
            if a.repeat > 1:
                step["repeat"] = a.repeat
            if a.op == "type" and texts:
                typed = "".join(texts.get(r, "") for r in a.refs)
                if typed:
                    step["typed_text"] = typed
            step["refs"] = list(a.refs)
            out.append(step)
        return out

    def communications(self, p: Period | str, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        p = self.as_period(p)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200:
            raise BadArgument(f"limit must be between 1 and 200, not {limit!r}")
        frames = self.period_frames(p, 0.0)
        if not frames:
            raise self._no_capture(p.label)
        surfaces: dict[tuple[str, str, str], dict[str, Any]] = {}
        for f in frames:
            fr = f.frame
            kind = _comm_kind(fr)
            if kind is None:
                continue
            s = surfaces.setdefault((kind, fr["app"], fr.get("site") or ""), {
                "kind": kind, "app": fr["app"], "site": fr.get("site"), "minutes": 0.0, "frames": [], "threads": {}})
            s["minutes"] += float(fr.get("active_min", 0.0))
            s["frames"].append(f.qid)
            for t in fr.get("windows") or []:
                if _LIST_VIEW.search(str(t.get("title") or "")):
                    continue  # an inbox, a folder or search results: a list of threads, not one
                th = s["threads"].setdefault(t["title"], {"subject": t["title"], "minutes": 0.0, "frames": []})
                th["minutes"] += float(t.get("minutes", 0.0))
                th["frames"].append(f.qid)
            for pg in fr.get("pages") or []:
                if pg.get("entity") and pg.get("kind") in MAIL_PAGE_KINDS + CHAT_PAGE_KINDS \
                        and pg.get("kind") not in LIST_PAGE_KINDS:
                    name = f"{pg['kind']}: {pg['entity']}"
                    th = s["threads"].setdefault(name, {"subject": name, "minutes": 0.0, "frames": []})
                    th["frames"].append(f.qid)
        # an app surface (Slack, Mail) has the app's one-timeline minutes from the ledger; a site
        # inside a browser has only its frames' per-monitor minutes (the ledger's domain would
        # mix mail with the rest of the site)
        doc, _ = self.period_document(p, 0.0)
        timeline = {a["app"]: a.get("timeline_minutes") for a in doc.get("apps", [])}
        rows = []
        for s in sorted(surfaces.values(), key=lambda s: (-s["minutes"], s["app"], s["site"] or "")):
            threads = sorted(s["threads"].values(), key=lambda t: (-t["minutes"], t["subject"]))
            for t in threads:
                t["per_monitor_minutes"] = round(t.pop("minutes"), 2)
                fr_ids = sorted(set(t["frames"]))
                t["frames"] = fr_ids[:5]
                if len(fr_ids) > 5:
                    t["more_frames"] = len(fr_ids) - 5
            row = {"kind": s["kind"], "app": s["app"], "site": s["site"]}
            if not s["site"] and timeline.get(s["app"]) is not None:
                row["minutes"] = timeline[s["app"]]
            row.update({"per_monitor_minutes": round(s["minutes"], 2), "frames": len(s["frames"]),
                        "threads": threads[:limit], "threads_not_listed": max(0, len(threads) - limit)})
            rows.append(row)
        key = ("comms", p.start_us, p.end_us, limit)
        head = {"period": p.to_json(self.tz),
                "note": ("subjects are window titles and page references; message bodies are never read; "
                         "the frame ids are the evidence (get_steps / get_activity); minutes: the app on "
                         "one timeline; per_monitor_minutes: its frames, a two-monitor minute twice")}
        return _page(head, "surfaces", rows, DEFAULT_MAX_TOKENS, cursor, key, lean=("period",))

    # ------------------------------------------------------------------ patterns and routines (af_pipeline.routines.miner)

    def day_actions(self, day: str) -> list[Any]:
        """A day's action stream (the input of routine mining), cached while the day is."""
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.routines.report import day_actions

        with self.lock:
            key = (day, self._fingerprint(day))
            hit = self._actions.get(key)
            if hit is None:
                hit = day_actions(self.day_capture(day))
                self._actions = {k: v for k, v in self._actions.items() if k[0] != day}
                while len(self._actions) >= MAX_PERIOD_DAYS + 1:
                    self._actions.pop(next(iter(self._actions)))
                self._actions[key] = hit
            return hit

    def pattern_period(self, days: int | None, day: str | None, hours: float | None, start: str | None,
                       end: str | None) -> Period:
        """A period for patterns and routines; ``days`` = the last N local days up to today."""
        if days is not None:
            if any(v is not None for v in (day, hours, start, end)):
                raise BadArgument("give days or a period (day, hours, start/end), not both")
            if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_PERIOD_DAYS:
                raise BadArgument(f"days must be between 1 and {MAX_PERIOD_DAYS}, not {days!r}")
            first = (parse_day(self.today()) - timedelta(days=days - 1)).isoformat()
            return self.period(start=first, end=self.today())
        if all(v is None for v in (day, hours, start, end)):
            return self.pattern_period(7, None, None, None, None)
        return self.period(day, hours, start, end)

    def _mine(self, p: Period) -> tuple[list[str], list[list[Any]], Any]:
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.routines import miner

        known = set(self.days())
        chosen, per_day = [], []
        for d in p.days:
            if d not in known:
                continue
            acts = [a for a in self.day_actions(d) if p.start_us <= a.ts_us < p.end_us]
            if acts:
                chosen.append(d)
                per_day.append(acts)
        if not per_day:
            raise BadArgument(f"no input actions in {p.label}")
        return chosen, per_day, miner.mine_days(per_day)

    def patterns(self, p: Period | str, top: int = 10) -> dict[str, Any]:
        """Workflow patterns: the same algorithm and output as ``af routines`` (patterns part)."""
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.routines import miner

        p = self.as_period(p)
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 50:
            raise BadArgument(f"top must be between 1 and 50, not {top!r}")
        with self.lock:
            chosen, per_day, mined = self._mine(p)
            wp = miner.workflow_patterns(per_day, self.tz, result=mined, top=top)
        return fit({"period": p.to_json(self.tz), "active_days": chosen, **wp.to_dict()})

    def routines(self, p: Period | str, top: int = 10) -> dict[str, Any]:
        p = self.as_period(p)
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 50:
            raise BadArgument(f"top must be between 1 and 50, not {top!r}")
        with self.lock:
            chosen, _, mined = self._mine(p)
            out = []
            for r in mined.routines[:top]:
                item = {k: v for k, v in r.to_dict(evidence=False).items() if k != "steps"}
                item["examples"] = [{"day": o.day, "at": hhmmss(o.start_us, self.tz), "stream": o.stream}
                                    for o in r.occurrences[:3]]
                out.append(item)
        return fit({"period": p.to_json(self.tz), "active_days": chosen, "total": len(mined.routines),
                    "routines": out,
                    "note": "routine ids are hashes of their steps: get_plan(routine_id) with the same period"})

    def plan(self, routine_id: str, p: Period | str) -> dict[str, Any]:
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.routines import plans

        p = self.as_period(p)
        rid = (routine_id or "").strip()
        if not rid:
            raise BadArgument("routine_id is required (an id from get_routines)")
        with self.lock:
            _, _, mined = self._mine(p)
            routine = next((r for r in mined.routines if r.id == rid), None)
            if routine is None:
                raise BadArgument(f"no routine {rid} among the {len(mined.routines)} mined over {p.label}; "
                                  "call get_routines with the same period for current ids")
            plan = plans.compile_plan(routine)
        return {"routine": rid, "period": p.to_json(self.tz), "plan": plan, "script": plans.minimal_script(plan),
                "note": "a guarded plan: `af replay PLAN.json` checks every guard before acting and runs "
                        "nothing destructive without --allow-destructive"}

    # ------------------------------------------------------------------ capabilities

    def capabilities(self) -> dict[str, Any]:
        days = self.days()
        return {
            "tz": self.tz,
            "today": self.today(),
            "covered": {"first_day": days[0] if days else None, "last_day": days[-1] if days else None,
                        "days": len(days)},
            "published_days": len(self.published_days()),
            "typed_text": "included (the operator enabled it)" if self.include_typed_text else "never included",
            "limits": {"max_period_days": MAX_PERIOD_DAYS, "max_hours": MAX_HOURS,
                       "max_search_days": MAX_SEARCH_DAYS, "default_max_tokens": DEFAULT_MAX_TOKENS},
        }

    def prepare(self) -> None:
        """Pay what any first answer about today pays: the compiler's imports (numpy, the suffix
        list), the tokenizer and today's rows. Best effort, as ``warm``."""
        from af_pipeline.compiler.compile import compile_day  # noqa: F401

        tokens.encoding()
        try:
            self.day_capture(self.today())
        except (AfError, OSError, ValueError):
            return

    def warm(self, index_days: int = CACHED_DOCS - 10) -> None:
        """Pay one-time costs before the first question: the tokenizer, the compiler's imports,
        today's document, then the search index of the most recent days, newest first (the
        lock is taken day by day, so questions are answered in between). Best effort: a
        failure here surfaces on the call that needs it."""
        self.prepare()
        try:
            with self.lock:
                self.day_document(self.today())
            days = [d for d in self.days() if d <= self.today()]
        except (AfError, OSError, ValueError):
            return
        for d in reversed(days[-index_days:] if index_days > 0 else []):
            try:
                with self.lock:
                    self.search_index(d)
            except (AfError, OSError, ValueError):
                continue


# ---------------------------------------------------------------------- helpers


def _fields(f: dict[str, Any], typed: bool) -> Iterable[tuple[str, str]]:
    """A frame's searchable fields, (name, text)."""
    yield "app", str(f.get("app") or "")
    if f.get("site"):
        yield "site", str(f["site"])
    for w in f.get("windows") or []:
        yield "title", str(w.get("title") or "")
    for p in f.get("pages") or []:
        # the entity (a ticket key, a PR, a person) and its kind apart: a kind label such as
        # "design_file" is not the user's words and must not join them into one field
        if p.get("entity"):
            yield "page", str(p["entity"])
        yield "page_kind", str(p.get("kind") or "")
    for c in f.get("clicked") or []:
        yield "clicked", str(c.get("target") or "")
    for i in f.get("interruptions") or []:
        yield "interruption", " ".join(str(x) for x in (i.get("app"), i.get("site")) if x)
    if typed and f.get("typed_text"):
        yield "typed", str(f["typed_text"])


_WEIGHT = {"page": 5, "title": 4, "site": 3, "app": 3, "clicked": 2, "page_kind": 1, "interruption": 1, "typed": 1}


def _score(fields: Sequence[tuple[str, str]], words: Sequence[str], phrase: str) -> tuple[int, int, int, list[str]]:
    """(phrase, together, weighted score, matched fields): whether one field holds the query as
    typed, whether one field holds every word, the field-weighted count of matched words, and
    the fields that matched (kind: text)."""
    score, has_phrase, together = 0, 0, 0
    shown: list[str] = []
    for name, text in fields:
        low = text.casefold()
        hit = [w for w in words if w in low]
        if hit:
            score += _WEIGHT[name] * len(hit)
            has_phrase |= int(bool(phrase) and phrase in low)
            together |= int(len(hit) == len(words))
            if len(shown) < 4:
                shown.append(f"{name}: {text[:120]}")
    return has_phrase, together, score, shown


def _evidence_summary(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame's evidence in a few tokens: its row count and first and last row references."""
    try:
        refs = decode_refs(frame.get("evidence", {}).get("snapshots", []))
    except (ValueError, KeyError, TypeError):
        refs = []
    out: dict[str, Any] = {"rows": len(refs)}
    if refs:
        ordered = sorted(refs, key=_ref_key)
        out["first"], out["last"] = ordered[0], ordered[-1]
    return out


def _ref_key(ref: str) -> tuple[str, int, str]:
    """Row references in their numeric order (frames:93 before frames:102)."""
    head, _, tail = ref.rpartition(":")
    return (head, int(tail), "") if tail.isdigit() else (ref, -1, ref)


LIST_PAGE_KINDS = ("inbox",)  # page kinds that list threads (an inbox), not one thread

# Window titles of mail and chat views that list threads rather than show one (Gmail's
# "Inbox (3) - jane@x - Gmail", "Search results - ...", a web search for "gmail"): not subjects.
_LIST_VIEW = re.compile(
    r"^(?:inbox|sent(?: mail| items)?|drafts|starred|snoozed|important|all mail|spam|junk(?: email)?|trash|"
    r"deleted items|archive|outbox|search results|unread)\b(?:\s*\(\d+\))?(?:\s*[-–|]|$)"
    r"|\bsearch results\b|\s[-–]\s(?:google|bing|duckduckgo) search$",
    re.IGNORECASE)


def _comm_kind(frame: dict[str, Any]) -> str | None:
    app = _casefold(frame.get("app"))
    site = _casefold(frame.get("site"))
    kinds = {str(p.get("kind")) for p in frame.get("pages") or []}
    if site:
        if any(site == s or site.endswith("." + s) for s in MAIL_SITES) or \
                kinds & set(MAIL_PAGE_KINDS):
            return "mail"
        if any(site == s or site.endswith("." + s) for s in CHAT_SITES) or \
                kinds & set(CHAT_PAGE_KINDS):
            return "messaging"
        return None
    words = set(re.split(r"[^a-z0-9.]+", app))
    if any(a in words or app == a for a in MAIL_APPS):
        return "mail"
    if any(a in words or app == a for a in CHAT_APPS):
        return "messaging"
    return None


def _merge(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several days' documents as one period document: ledgers and coverage summed."""
    first = docs[0]
    apps: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for a in doc.get("apps", []):
            m = apps.setdefault(a["app"], {"app": a["app"], "minutes": 0.0, "timeline_minutes": 0.0, "frames": 0,
                                           "interruptions": 0, "longest_frame_min": 0.0, "top_windows": []})
            m["minutes"] += float(a["minutes"])
            m["timeline_minutes"] += float(a.get("timeline_minutes") or 0.0)
            m["frames"] += int(a["frames"])
            m["interruptions"] += int(a.get("interruptions", 0))
            m["longest_frame_min"] = max(m["longest_frame_min"], float(a["longest_frame_min"]))
            if not m["top_windows"]:
                m["top_windows"] = list(a.get("top_windows", []))
    domains: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for d in doc.get("domains", []):
            m = domains.setdefault(d["domain"], {"domain": d["domain"], "minutes": 0.0, "timeline_minutes": 0.0,
                                                 "visits": 0})
            m["minutes"] += float(d["minutes"])
            m["timeline_minutes"] += float(d.get("timeline_minutes") or 0.0)
            m["visits"] += int(d["visits"])
    for m in [*apps.values(), *domains.values()]:
        m["minutes"] = round(m["minutes"], 2)
        m["timeline_minutes"] = round(m["timeline_minutes"], 2)
    covs = [d["coverage"] for d in docs]

    def total(key: str) -> float:
        return round(sum(float(c.get(key) or 0.0) for c in covs), 2)

    firsts = [c["first_activity"] for c in covs if c.get("first_activity")]
    lasts = [c["last_activity"] for c in covs if c.get("last_activity")]
    coverage: dict[str, Any] = {
        "first_activity": f"{docs[0]['day']} {firsts[0]}" if firsts else None,
        "last_activity": f"{docs[-1]['day']} {lasts[-1]}" if lasts else None,
        "active_min": total("active_min"), "timeline_min": total("timeline_min"),
        "covered_min": total("covered_min"), "span_min": total("span_min"),
        "dual_monitor_min": total("dual_monitor_min"), "gap_min": total("gap_min"),
        "distinct_apps": len(apps), "frames": int(total("frames")),
        "presence_only": {"minutes": round(sum(float(c["presence_only"]["minutes"]) for c in covs), 2)},
        "gaps": [], "days": len(docs),
    }
    blind: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for b in doc.get("blind_spots", []):
            blind.setdefault(b["kind"], {"kind": b["kind"], "note": b.get("note", "")})
    om = [d["omitted"] for d in docs]
    return {
        "schema_version": first.get("schema_version"),
        "day": f"{docs[0]['day']}..{docs[-1]['day']}",
        "tz": first["tz"],
        "coverage": coverage,
        "apps": sorted(apps.values(), key=lambda a: (-a["timeline_minutes"], -a["minutes"], a["app"])),
        "domains": sorted(domains.values(), key=lambda d: (-d["timeline_minutes"], -d["minutes"], d["domain"])),
        "omitted": {"min_minutes": om[0]["min_minutes"], "frames": sum(o["frames"] for o in om),
                    "minutes": round(sum(float(o["minutes"]) for o in om), 2)},
        "blind_spots": sorted(blind.values(), key=lambda b: b["kind"]),
        "privacy": first.get("privacy", {}),
        "days": [d["day"] for d in docs],
    }


MAX_LISTED_INTERRUPTIONS = 20


def _shrink_frame(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame with more folded interruptions than an answer can carry (a real RPM log has one
    with 343: 34k tokens) lists the longest ones, in time order, and says how many are left
    out; ``interruption_s`` keeps the total of all of them."""
    its = frame.get("interruptions") or []
    if len(its) <= MAX_LISTED_INTERRUPTIONS:
        return frame
    keep = sorted(sorted(range(len(its)), key=lambda i: (-float(its[i].get("seconds", 0)), i))
                  [:MAX_LISTED_INTERRUPTIONS])
    return dict(frame, interruptions=[its[i] for i in keep], interruptions_not_listed=len(its) - len(keep))


def with_skipped(answer: Any, skipped: Sequence[SkippedLine]) -> Any:
    """An answer with the open-segment lines its reads left out named (Memory.noting_skipped):
    a JSON answer gains ``log_warning`` (one sentence) and ``skipped_lines`` (file, line and
    reason of the first SKIPPED_SHOWN); a text answer ends with the sentence."""
    if not skipped:
        return answer
    from capture.log.opensegments import skipped_sentence

    sentence = skipped_sentence(skipped)
    if isinstance(answer, str):
        return f"{answer.rstrip(chr(10))}\n\n{sentence}\n"
    if isinstance(answer, dict):
        return {**answer, "log_warning": sentence, "skipped_lines": [s.to_json() for s in skipped[:SKIPPED_SHOWN]]}
    return answer


def fit(payload: dict[str, Any], max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    """The payload cut to max_tokens by dropping the tail of its longest list (top level or one
    level down), repeatedly; ``truncated`` says how many items each list lost."""
    out = json.loads(canonical_json(payload))  # a copy, never the cached document
    cut: dict[str, int] = {}
    while tokens.count(canonical_json(out)) > max_tokens:
        lists = [(k, None, v) for k, v in out.items() if isinstance(v, list) and v]
        lists += [(k, k2, v2) for k, v in out.items() if isinstance(v, dict)
                  for k2, v2 in v.items() if isinstance(v2, list) and v2]
        if not lists:
            break
        k, k2, longest = max(lists, key=lambda t: (len(canonical_json(t[2])), t[0], t[1] or ""))
        n = max(1, len(longest) // 10)
        del longest[-n:]
        name = k if k2 is None else f"{k}.{k2}"
        cut[name] = cut.get(name, 0) + n
    if cut:
        out["truncated"] = dict(sorted(cut.items()))
        out["truncated_note"] = f"items left out to stay under {max_tokens} tokens: ask with a smaller top"
    return out


def _check_max_tokens(max_tokens: int) -> None:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or \
            not MIN_MAX_TOKENS <= max_tokens <= DEFAULT_MAX_TOKENS:
        raise BadArgument(f"max_tokens must be between {MIN_MAX_TOKENS} and {DEFAULT_MAX_TOKENS}, not {max_tokens!r}")


def _digest(key: tuple[Any, ...]) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()[:8]


def _make_cursor(offset: int, key: tuple[Any, ...]) -> str:
    return f"{offset}.{_digest(key)}"


def _cursor_offset(cursor: str | None, key: tuple[Any, ...]) -> int:
    """A cursor is bound to the question it pages: one from another question is refused."""
    if cursor is None or cursor == "":
        return 0
    m = re.match(r"^([0-9]+)\.([0-9a-f]{8})$", str(cursor))
    if not m:
        raise BadArgument(f"cursor {cursor!r} is not a cursor from this server (pass next_cursor as given)")
    if m.group(2) != _digest(key):
        raise BadArgument(f"cursor {cursor!r} belongs to another question: repeat the same arguments with it")
    return int(m.group(1))


def _page(head: dict[str, Any], list_key: str, items: list[Any], max_tokens: int, cursor: str | None,
          key: tuple[Any, ...], lean: Sequence[str] = (), limit: int | None = None) -> dict[str, Any]:
    """head plus as many items (from the cursor on) as fit max_tokens (cl100k, compact JSON).
    Pages after the first carry only the head's ``lean`` keys; a first page whose head leaves no
    room for an item carries the head alone (the next page goes on from the same item)."""
    offset = _cursor_offset(cursor, key)
    if offset > len(items):
        raise BadArgument(f"cursor {cursor!r} is past the end ({len(items)} items)")
    first = cursor is None or cursor == ""
    shown = head if first or not lean else {k: head[k] for k in lean if k in head}
    base = dict(shown, total=len(items), offset=offset, next_cursor=_make_cursor(10**9, key))
    base[list_key] = []
    room = max_tokens - tokens.count(canonical_json(base))
    if room <= 0:
        raise BadArgument(f"max_tokens {max_tokens} is too small for this answer's header "
                          f"({max_tokens - room} tokens); ask with a larger max_tokens")
    # estimate with ~3 characters a token (measured on documents), then check the real count
    take, est = 0, 0.0
    for it in items[offset:offset + limit] if limit else items[offset:]:
        cost = len(canonical_json(it)) / 2.9 + 1
        if est + cost > room * 0.97:
            break
        est += cost
        take += 1
    def build(n: int) -> dict[str, Any]:
        out = dict(base, **{list_key: items[offset:offset + n]})
        out["next_cursor"] = _make_cursor(offset + n, key) if offset + n < len(items) else None
        return out

    while take > 0:
        out = build(take)
        if tokens.count(canonical_json(out)) <= max_tokens:
            return out
        take -= max(1, take // 10)
    # nothing fits beside the first page's head: the head alone; later pages always progress
    return build(0 if first else min(1, len(items) - offset))
