"""Helpers shared by the importers: safe opening of user files, text hygiene, notes, progress.

Importers never modify what they read. SQLite sources are opened through a read-only URI
connection (see :func:`open_sqlite_readonly`); text files are opened for reading only.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from capture.errors import UserError
from capture.model import CaptureBatch, Quarantined, StreamInfo
from capture.redact import excerpt_text
from capture.timeutil import MAX_YEAR, MIN_YEAR, BadTimestamp, local_day, parse_ts, zone

# Caps on text a capture row may carry. Longer values are truncated and the truncation is
# counted in the batch notes; an app name this long is not an app name, so that row is quarantined.
MAX_APP = 256
MAX_WINDOW = 1024
MAX_URL = 4096
MAX_ELEMENT_TEXT = 4096
MAX_TYPED_TEXT = 8192
RAW_EXCERPT = 300  # characters of an unusable row kept in the quarantine for a human to read

ProgressFn = Callable[[str], None]
SQLITE_WAIT_S = 5.0  # how long to wait for a recorder's write lock before giving up


@dataclass
class ImportBatch(CaptureBatch):
    """A CaptureBatch plus what the importer deliberately did not map or had to repair.

    ``notes`` maps a sentence ("background windows of legacy capture cycles (not imported)")
    to a count, so that nothing is dropped or altered without the user being told.
    """

    notes: dict[str, int] = field(default_factory=dict)
    # Sentences for the user about the source as a whole (what to do to get more of it), printed
    # after the table and added to the error when nothing lands.
    hints: list[str] = field(default_factory=list)
    # How many rows of the source were read (CSV rows, events), when the importer counts them:
    # the base of the "mostly quarantined" rule; None to use the capture rows instead.
    source_rows: int | None = None

    def note(self, what: str, n: int = 1) -> None:
        if n:
            self.notes[what] = self.notes.get(what, 0) + n

    def quarantine(self, source: str, row: str, reason: str, raw: object = None) -> None:
        excerpt = None if raw is None else excerpt_of(raw)
        self.quarantined.append(Quarantined(source=source, row=row, reason=reason, raw=excerpt))


def excerpt_of(raw: object) -> str:
    text = plain(excerpt_text(raw))  # typed text, clipboard and field values never reach the quarantine
    return text if len(text) <= RAW_EXCERPT else text[:RAW_EXCERPT] + "..."


# ---------------------------------------------------------------------------------------------
# Files


def check_readable(path: Path, what: str) -> Path:
    """The path as given, or a UserError saying in one sentence why it cannot be read."""
    p = Path(path).expanduser()
    if not p.exists():
        raise UserError(f"{p}: no such file (expected {what})")
    if p.is_dir():
        raise UserError(f"{p} is a folder, not a file (expected {what})")
    if not os.access(p, os.R_OK):
        raise UserError(f"{p} is not readable by this user (permission denied)")
    if p.stat().st_size == 0:
        raise UserError(f"{p} is empty (expected {what})")
    return p


def sniff(path: Path) -> str:
    """What a file looks like from its first bytes: sqlite, json, csv-or-text, or binary."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError as exc:
        raise UserError(f"{path} cannot be read ({exc.strerror or exc})") from None
    if head.startswith(b"SQLite format 3\x00"):
        return "sqlite"
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        return "json"
    if b"\x00" in head:
        return "binary"
    return "text"


HINT = {
    "sqlite": "it is an SQLite database (try `af import screenpipe` or `af import activitywatch`)",
    "json": "it looks like JSON (try `af import activitywatch` for an ActivityWatch export)",
    "text": "it looks like a text file (try `af import rpm` for a UI-log CSV)",
    "binary": "it is a binary file of an unknown kind",
}


def source_fingerprint(*parts: object) -> str:
    """A short stable hash of what identifies a source (not of its whole content, which grows)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()[:10]


# ---------------------------------------------------------------------------------------------
# SQLite


def sqlite_uri(path: Path) -> str:
    """A read-only URI for the database at path.

    A database in WAL mode keeps recent transactions in ``<db>-wal`` until they are checkpointed:
    when that file exists we must read through it (``mode=ro``; SQLite may create the ``-shm``
    index beside it, as every reader does, but never writes the database or the WAL). When it does
    not exist, ``immutable=1`` stops SQLite from creating empty ``-wal``/``-shm`` files next to
    the user's database.
    """
    p = Path(path).resolve()
    uri = "file:" + quote(str(p)) + "?mode=ro"
    wal = p.with_name(p.name + "-wal")
    journal = p.with_name(p.name + "-journal")
    if _header_says_wal(p) and not wal.exists() and not journal.exists():
        uri += "&immutable=1"
    return uri


def wal_missing(path: Path) -> bool:
    """Whether a database in WAL mode has no ``-wal`` file beside it (a copy of the main file
    alone): the transactions since its last checkpoint are then not in what can be read."""
    p = Path(path)
    return _header_says_wal(p) and not p.with_name(p.name + "-wal").exists()


def _header_says_wal(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return False
    # Bytes 18/19 of the header are the file format read/write versions: 2 means WAL.
    return len(header) == 20 and header[18] == 2


class BadText(str):
    """Text that was not valid UTF-8 in the source; undecodable bytes became U+FFFD."""

    __slots__ = ()


def _decode_text(raw: bytes) -> str:
    """SQLite text factory that never fails: invalid UTF-8 becomes U+FFFD in a BadText."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return BadText(raw.decode("utf-8", "replace"))


def open_sqlite_readonly(path: Path, what: str) -> sqlite3.Connection:
    """Open an SQLite file so that nothing can be written through the connection.

    Raises UserError when the file is missing, not SQLite, or unreadable (locked, corrupt).
    """
    p = check_readable(path, what)
    kind = sniff(p)
    if kind != "sqlite":
        raise UserError(f"{p} is not an SQLite database: {HINT[kind]}")
    try:
        con = sqlite3.connect(sqlite_uri(p), uri=True, timeout=SQLITE_WAIT_S)
        con.text_factory = _decode_text
        # Belt and braces: even if the URI were ignored, this connection refuses writes.
        con.execute("PRAGMA query_only = ON")
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except UnicodeDecodeError as exc:  # SQLite's message quoted a damaged schema that is not UTF-8
        raise UserError(f"{p} cannot be opened as an SQLite database (its schema is damaged: {exc})") from None
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc).lower() or "busy" in str(exc).lower():
            raise read_failure(p, exc) from None
        raise UserError(f"{p} cannot be opened as an SQLite database ({exc})") from None
    return con


def read_failure(path: Path, exc: sqlite3.DatabaseError | UnicodeDecodeError) -> UserError:
    """The one-sentence error for an SQLite source that failed part-way through."""
    if "locked" in str(exc).lower() or "busy" in str(exc).lower():
        return UserError(f"{path} is locked by another program ({exc}); wait for it to finish writing and retry")
    return UserError(f"{path} could not be read to the end ({exc}); the database may be corrupt")


def table_columns(con: sqlite3.Connection, table: str) -> list[str]:
    """Column names of a table (empty when the table does not exist)."""
    return [str(r[1]) for r in con.execute(f'PRAGMA table_info("{table}")').fetchall()]


def iter_rows(cur: sqlite3.Cursor, size: int = 5000) -> Iterator[tuple[Any, ...]]:
    """Stream a cursor in chunks so millions of rows never sit in memory as one list."""
    while True:
        chunk = cur.fetchmany(size)
        if not chunk:
            return
        yield from chunk


# ---------------------------------------------------------------------------------------------
# Timestamps

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)


_ZONED = re.compile(r"(?:[Zz]|[+-]\d\d(?::?\d\d)?)\s*$")
ZONELESS_UTC = "time stamps carry no zone: read as UTC (what screenpipe writes)"


def zoneless(value: object) -> bool:
    """Whether a timestamp is text without a zone or offset (``2026-03-15 18:25:55``)."""
    return type(value) is str and len(value) >= 16 and value[4] == "-" and _ZONED.search(value, 16) is None


def ts_us(value: object) -> int:
    """parse_ts with a fast path for ISO text (the C parser); same result, same errors.

    Millions of rows pass here; capture.timeutil.parse_ts stays the definition (and gives the
    error message) for anything the fast path does not take.
    """
    if type(value) is str and len(value) >= 16 and value[4] == "-" and value[10] in "T ":
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return parse_ts(value)
        if MIN_YEAR <= dt.year <= MAX_YEAR:
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            return (dt - _EPOCH) // _ONE_US
    if type(value) is float and not math.isfinite(value):
        # SQLite REAL columns can hold Inf and NaN; they are no time (and int() would raise).
        raise BadTimestamp(f"timestamp {value!r} is not a finite number")
    try:
        return parse_ts(value)
    except (OverflowError, ValueError) as exc:  # BadTimestamp is a ValueError and passes as is
        if isinstance(exc, BadTimestamp):
            raise
        raise BadTimestamp(f"timestamp {excerpt_of(value)[:40]!r} is not readable ({exc})") from None


# ---------------------------------------------------------------------------------------------
# Text hygiene


_SURROGATE = re.compile("[\ud800-\udfff]")


def plain(value: str) -> str:
    """A plain str (the log stores exact str), with lone surrogates replaced by U+FFFD."""
    if type(value) is not str:
        value = str.__str__(value)
    return _SURROGATE.sub("\ufffd", value) if _has_surrogates(value) else value


class Texts:
    """Cleans text fields for one batch and counts every repair in the batch notes.

    ``surrogates=True`` for sources whose text may hold lone surrogates (JSON escapes, CSV read
    with surrogateescape); SQLite text arrives already decoded (see :class:`BadText`).
    """

    def __init__(self, batch: ImportBatch, surrogates: bool = False):
        self.batch = batch
        self.surrogates = surrogates

    def __call__(self, value: object, limit: int, what: str) -> str | None:
        if value is None:
            return None
        if type(value) is str and not self.surrogates and len(value) <= limit and "\x00" not in value:
            return value or None  # the common case, kept cheap for millions of element rows
        if isinstance(value, bytes):
            value = _decode_text(value)
        if not isinstance(value, str):
            value = str(value)
        if isinstance(value, BadText) or (self.surrogates and _has_surrogates(value)):
            self.batch.note(f"{what}: invalid UTF-8 replaced with U+FFFD")
            value = plain(value)
        if "\x00" in value:
            self.batch.note(f"{what}: NUL characters removed")
            value = value.replace("\x00", "")
        if len(value) > limit:
            self.batch.note(f"{what}: truncated to {limit} characters")
            value = value[:limit]
        return value or None


def _has_surrogates(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# ---------------------------------------------------------------------------------------------
# Order, duplicates, streams


class ClockWatch:
    """Counts the times a source's clock went backwards in its own row order (rows are kept)."""

    def __init__(self, batch: ImportBatch, what: str):
        self.batch = batch
        self.what = what
        self.last: int | None = None
        self.largest_us = 0

    def see(self, ts_us: int) -> None:
        if self.last is not None and ts_us < self.last:
            self.batch.note(f"{self.what}: clock went backwards (rows kept; the log sorts them)")
            self.largest_us = max(self.largest_us, self.last - ts_us)
        self.last = ts_us if self.last is None else max(self.last, ts_us)

    def finish(self) -> None:
        if self.largest_us:
            self.batch.note(f"{self.what}: largest backwards step, seconds", -(-self.largest_us // 1_000_000))


def parse_screen_sizes(specs: Iterable[str] | None) -> dict[str, tuple[int, int]]:
    """``["monitor_1=1512x982", ...]`` -> {stream: (width, height)}; UserError on a bad spec."""
    out: dict[str, tuple[int, int]] = {}
    for spec in specs or ():
        stream, sep, size = spec.partition("=")
        w, x, h = size.lower().partition("x")
        if not sep or not stream or not x or not w.isdigit() or not h.isdigit():
            raise UserError(f"--screen {spec!r} is not STREAM=WIDTHxHEIGHT (for example monitor_1=1512x982)")
        width, height = int(w), int(h)
        if not (100 <= width <= 20000 and 100 <= height <= 20000):
            raise UserError(f"--screen {spec!r}: {width}x{height} is not a plausible screen size in pixels")
        out[stream.strip()] = (width, height)
    return out


def stream_infos(
    source_id: str,
    first_seen: dict[tuple[str, str], int],
    sizes: dict[str, tuple[int, int]],
) -> list[StreamInfo]:
    """One StreamInfo per (stream, local day) at the stream's first time that day."""
    out = []
    for (stream, day), ts in sorted(first_seen.items()):
        w, h = sizes.get(stream, (None, None))
        out.append(StreamInfo(ref=f"{source_id}:streams:{stream}:{day}", ts_us=ts, stream=stream,
                              width_px=w, height_px=h))
    return out


class DaySeen:
    """Records the first time each stream is seen per local day (in the user's zone)."""

    def __init__(self, tz: str | None):
        try:
            self.zone = zone(tz or "UTC")
        except ValueError as exc:
            raise UserError(str(exc)) from None
        self.first: dict[tuple[str, str], int] = {}
        self._cache: dict[int, str] = {}

    def day(self, ts_us: int) -> str:
        """The local day of ts_us in the zone."""
        # Local midnights fall on whole quarter hours of UTC: caching per quarter hour is exact.
        slot = ts_us // 900_000_000
        day = self._cache.get(slot)
        if day is None:
            day = local_day(slot * 900_000_000, self.zone)
            self._cache[slot] = day
        return day

    def see(self, stream: str, ts_us: int) -> None:
        key = (stream, self.day(ts_us))
        prev = self.first.get(key)
        if prev is None or ts_us < prev:
            self.first[key] = ts_us


# ---------------------------------------------------------------------------------------------
# Progress


class Progress:
    """Throttled progress lines on stderr for long imports (at most one line per second)."""

    def __init__(self, label: str, sink: ProgressFn | None = None, every_s: float = 1.0):
        self.label = label
        self.sink = sink
        self.every_s = every_s
        self._next = time.monotonic() + every_s

    def tick(self, what: str, done: int, total: int | None = None) -> None:
        if self.sink is None:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.every_s
        if total:
            self.sink(f"{self.label}: {what} {done:,}/{total:,} ({100 * done // max(total, 1)}%)")
        else:
            self.sink(f"{self.label}: {what} {done:,}")

    def say(self, message: str) -> None:
        if self.sink is not None:
            self.sink(f"{self.label}: {message}")
