"""The capture event log: append-only, one segment per local day, sealed and hash-chained.

Layout under ``<home>/log/`` (docs/event-log.md describes it for users)::

    open/<day>/<kind>.jsonl        rows of a day still open, one JSON object a line, fsync'd
    open/<day>/sources.jsonl       which source / recorder contributed to that day
    sealed/<day>/<kind>.parquet    a sealed day: one Parquet file per row kind, sorted, never rewritten
    sealed/<day>/sources.json      the sealed day's sources and recorders
    manifest.jsonl                 one entry per sealed day, each chained to the previous by sha256
    quarantine.jsonl               rows that could not land, with their reason
    .lock                          held (flock) by the one process writing

A day is sealed exactly when the manifest has an entry for it. Writes are ordered so that a
process killed at any instant leaves a log that reads correctly and that the next writer repairs:
an open segment's torn last line is cut back to the last complete record; a half-finished seal is
either kept (its manifest entry landed) or undone (it did not).
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import fcntl
import functools
import gc
import hashlib
import itertools
import json
import math
import operator
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import Any

import duckdb

from capture.errors import CheckFailed, UserError
from capture.files import canonical_json, sha256_file
from capture.home import Home
from capture.model import CAPTURE_SCHEMA_VERSION, CLASS_OF, ROW_KINDS, CaptureBatch, DayCapture, column_types
from capture.redact import excerpt_text, redact_row
from capture.timeutil import day_bounds, iso_utc, local_day, next_day, parse_day, zone

MANIFEST = "manifest.jsonl"
QUARANTINE = "quarantine.jsonl"
LOCK = ".lock"
SOURCES_OPEN = "sources.jsonl"
SOURCES_SEALED = "sources.json"
# Capture that arrives for a day already sealed (a second device, a second tool, late rows) is
# sealed as an amendment: a further segment of that day in sealed/<day>+<k>/, chained in the
# manifest after the earlier ones, which stay untouched.
AMEND_SEP = "+"
# The ref of the part of a measured span (an ActivityWatch event) that grew after it was logged:
# "<event ref>~<k>" (see EventLog.continue_grown_spans).
CONTINUATION = "~"
RAW_EXCERPT = 300  # characters of a refused row kept in the quarantine for a human to read
HOUR_US = 3_600 * 1_000_000
# Plausible capture times (1990 .. 2100); anything else is a broken clock and cannot be given a day.
TS_MIN_US = 631_152_000 * 1_000_000
TS_MAX_US = 4_102_444_800 * 1_000_000
# Above this many new rows of one kind for one day, rows are encoded by DuckDB (C speed) instead of
# row by row in Python; below it, pandas is not worth importing.
BULK_ROWS = 2_000
# From this many new refs in one append, refs are checked against sealed days through an in-memory
# hash index instead of a scan of every sealed day (small appends, e.g. a recorder's, just scan).
INDEX_MIN_REFS = 5_000
# A manifest entry records which source ids the day's refs start with ("ref_sources"), so an
# append only looks at sealed days that share a source with it. A day fed by more sources than
# this records null instead and is always looked at.
REF_SOURCES_MAX = 64
# A small append keeps the refs of up to this many open days in memory between calls (the recorder
# appends to today every few seconds); the refs of further open days are scanned by DuckDB.
OPEN_REFS_CACHED = 4
# fsync makes a landed record survive power loss, not just a killed process. Tests that only
# check logic may turn it off to run faster; nothing else should.
FSYNC = True

# Total sort keys per row kind: the order read_day returns and the order sealed files are written.
SORT_SQL: dict[str, str] = {
    "snapshots": "ts_us, COALESCE(stream, ''), ref",
    "inputs": "ts_us, COALESCE(stream, ''), ref",
    "elements": "ts_us, snapshot_frame_id, ref",
    "presence": "ts_us, ref",
    "streams": "ts_us, ref",
}


def sort_key(kind: str) -> Callable[[Any], tuple[Any, ...]]:
    """The Python twin of SORT_SQL (same total order)."""
    if kind in ("snapshots", "inputs"):
        return lambda r: (r.ts_us, r.stream or "", r.ref)
    if kind == "elements":
        return lambda r: (r.ts_us, r.snapshot_frame_id, r.ref)
    return lambda r: (r.ts_us, r.ref)


COLUMNS: dict[str, dict[str, str]] = {kind: column_types(CLASS_OF[kind]) for kind in ROW_KINDS}
NAMES: dict[str, tuple[str, ...]] = {kind: tuple(COLUMNS[kind]) for kind in ROW_KINDS}
# Quoted column lists for SQL ("window" is a reserved word in DuckDB).
SELECT_SQL: dict[str, str] = {kind: ", ".join(f'"{n}"' for n in NAMES[kind]) for kind in ROW_KINDS}
# Fields that may not be None.
REQUIRED: dict[str, frozenset[str]] = {
    kind: frozenset(f.name for f in fields(CLASS_OF[kind]) if "None" not in str(f.type)) for kind in ROW_KINDS
}
_NONE = type(None)
_ALLOWED: dict[str, frozenset[type]] = {
    "BOOLEAN": frozenset({bool, _NONE}),
    "BIGINT": frozenset({int, _NONE}),
    "DOUBLE": frozenset({float, int, _NONE}),
    "VARCHAR": frozenset({str, _NONE}),
}
_PANDAS_DTYPE = {"BOOLEAN": "boolean", "BIGINT": "Int64", "DOUBLE": "Float64", "VARCHAR": "string"}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_TS_OF = attrgetter("ts_us")
_REF_OF = attrgetter("ref")

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


@dataclass(frozen=True)
class DayStatus:
    day: str
    sealed: bool
    counts: dict[str, int]
    amendments: int = 0  # sealed segments added after the day's first


@dataclass
class AppendReport:
    landed: dict[str, int]  # per row kind
    skipped: int  # refs already in the log
    quarantined: int  # the batch's own quarantined rows plus rows refused here
    quarantine_reasons: dict[str, int]
    days_touched: list[str]
    days_sealed: list[str]
    recovered: list[str] = field(default_factory=list)  # repairs made after an earlier crash
    days_amended: list[str] = field(default_factory=list)  # sealed days that received an amendment


@dataclass
class VerifyReport:
    ok: bool
    problems: list[str]
    entries: int
    head: str | None
    notes: list[str] = field(default_factory=list)  # not tampering: e.g. a seal a crash left half-done


# ---------------------------------------------------------------------- small file helpers


def _canonical(obj: Any) -> bytes:
    return canonical_json(obj).encode("utf-8")


def entry_hash(entry: dict[str, Any]) -> str:
    """sha256 of a manifest entry's canonical JSON without its own ``hash`` field."""
    return hashlib.sha256(_canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


def _fsync_dir(path: Path) -> None:
    if not FSYNC:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    if not FSYNC:
        return
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _append_bytes(path: Path, data: bytes) -> None:
    """Append whole records and fsync, so a record is on disk entirely or recoverable as a torn tail."""
    if not data:
        return
    new = not path.exists()
    with open(path, "ab") as fh:
        fh.write(data)
        fh.flush()
        if FSYNC:
            os.fsync(fh.fileno())
    if new:
        _fsync_dir(path.parent)


def _complete_lines(data: bytes) -> list[bytes]:
    """The complete lines of a JSON-lines file; a torn tail (no final newline) is not a record."""
    end = data.rfind(b"\n")
    if end < 0:
        return []
    return [ln for ln in data[: end + 1].split(b"\n") if ln]


def _truncate_torn_tail(path: Path) -> int:
    """Cut a file back to just after its last newline; return the number of bytes removed."""
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        keep = 0
        pos = size
        while pos > 0:
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            idx = fh.read(step).rfind(b"\n")
            if idx >= 0:
                keep = pos + idx + 1
                break
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
        return size - keep


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _sql_list(paths: list[Path]) -> str:
    """A DuckDB list literal of file paths."""
    return "[" + ", ".join(f"'{_sql_path(p)}'" for p in paths) + "]"


def _is_day(name: str) -> bool:
    if len(name) != 10:
        return False
    try:
        parse_day(name)
    except ValueError:
        return False
    return True


def segment_name(day: str, amendment: int = 0) -> str:
    """The folder of a sealed segment under sealed/: the day itself, then ``<day>+<k>`` for amendment k."""
    return day if amendment == 0 else f"{day}{AMEND_SEP}{amendment}"


def parse_segment_name(name: str) -> tuple[str, int] | None:
    """(day, amendment) of a sealed segment's folder name, or None if it is not one."""
    day, sep, k = name.partition(AMEND_SEP)
    if not _is_day(day):
        return None
    if not sep:
        return day, 0
    if not k.isdigit() or k.startswith("0") or len(k) > 6:
        return None
    return day, int(k)


def amendment_of(entry: dict[str, Any]) -> int:
    """The amendment number a manifest entry records (0: the day's first sealed segment)."""
    k = entry.get("amendment", 0)
    return k if type(k) is int and k >= 0 else -1


# ---------------------------------------------------------------------- row checks and encoding


def _excerpt(kind: str, row: Any) -> str:
    """A bounded, always-encodable text of a row for the quarantine (typed text redacted)."""
    try:
        data = {n: getattr(row, n, None) for n in NAMES[kind]}
    except Exception:  # a foreign object: show what it is
        return excerpt_text(row)[:RAW_EXCERPT]
    return json.dumps(redact_row(data), ensure_ascii=True, default=repr)[:RAW_EXCERPT]


def _row_problem(kind: str, row: Any) -> str | None:
    """Why one row cannot be stored, in words, or None."""
    for name, sqltype in COLUMNS[kind].items():
        v = getattr(row, name)
        if v is None:
            if name in REQUIRED[kind]:
                return f"has no {name}"
            continue
        if type(v) not in _ALLOWED[sqltype]:
            return f"has {name} of type {type(v).__name__}, expected {sqltype.lower()}"
        if sqltype == "BIGINT" and not _INT64_MIN <= v <= _INT64_MAX:
            return f"has {name} = {v}, outside the 64-bit range"
        if sqltype == "DOUBLE" and not math.isfinite(v):
            return f"has {name} = {v}, not a finite number"
        if sqltype == "VARCHAR":
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return f"has {name} that is not valid Unicode text (lone surrogate)"
    if not row.ref:
        return "has an empty ref"
    return None


def _columns_ok(kind: str, cols: dict[str, list[Any]]) -> bool:
    """Whole-column version of _row_problem (C-speed built-ins; no per-row Python in the usual case)."""
    for name, sqltype in COLUMNS[kind].items():
        col = cols[name]
        types = set(map(type, col))
        if not types <= _ALLOWED[sqltype]:
            return False
        if name in REQUIRED[kind] and _NONE in types:
            return False
        present = [v for v in col if v is not None] if _NONE in types else col
        if not present:
            continue
        if sqltype == "BIGINT" and not (_INT64_MIN <= min(present) and max(present) <= _INT64_MAX):
            return False
        if sqltype == "DOUBLE" and not all(map(math.isfinite, present)):
            return False
        if sqltype == "VARCHAR":
            try:
                "".join(present).encode("utf-8")
            except UnicodeEncodeError:
                return False
    return "" not in cols["ref"]


def _columns(kind: str, rows: list[Any]) -> tuple[dict[str, list[Any]], list[tuple[Any, str]]]:
    """Rows as storable columns, plus the rows that cannot be stored with their reason."""
    bad: list[tuple[Any, str]] = []
    cols = {n: list(map(attrgetter(n), rows)) for n in NAMES[kind]}
    if not _columns_ok(kind, cols):
        good = []
        for row in rows:
            problem = _row_problem(kind, row)
            if problem is None:
                good.append(row)
            else:
                bad.append((row, problem))
        cols = {n: list(map(attrgetter(n), good)) for n in NAMES[kind]}
    for name, sqltype in COLUMNS[kind].items():
        # 0 and 0.0 must read back alike from an open day (JSON) and a sealed one (Parquet DOUBLE).
        if sqltype == "DOUBLE" and int in set(map(type, cols[name])):
            cols[name] = [float(v) if type(v) is int else v for v in cols[name]]
    return cols, bad


def _frame(kind: str, cols: dict[str, list[Any]]) -> Any:
    """A typed pandas DataFrame of checked columns, for DuckDB to scan."""
    import pandas as pd  # imported lazily: only bulk appends need it

    return pd.DataFrame(
        {n: pd.array(cols[n], dtype=_PANDAS_DTYPE[COLUMNS[kind][n]]) for n in NAMES[kind]}, copy=False
    )


def _empty_sql(kind: str) -> str:
    cols = ", ".join(f'CAST(NULL AS {t}) AS "{n}"' for n, t in COLUMNS[kind].items())
    return f"(SELECT {cols} WHERE false)"


def build_instances(cls: type, columns: list[list[Any]]) -> list[Any]:
    """Instances of a frozen slots dataclass from checked columns, field by field at C speed.

    The rows come from a sealed file the log wrote from checked values, so going around the
    generated __init__ (one Python-level setattr per field per row) loses no validation.
    """
    n = len(columns[0]) if columns else 0
    # Tens of thousands of new objects would trigger the cyclic collector many times over (each
    # pass walks every live object); none of them can form a cycle, so it is paused meanwhile.
    paused = gc.isenabled()
    gc.disable()
    try:
        objs: list[Any] = list(map(object.__new__, itertools.repeat(cls, n)))
        for f, values in zip(fields(cls), columns, strict=True):
            collections.deque(map(getattr(cls, f.name).__set__, objs, values), maxlen=0)
    finally:
        if paused:
            gc.enable()
    return objs


def column_values(column: Any) -> list[Any]:
    """A fetched column as Python values, NULL as None (faster than MaskedArray.tolist)."""
    import numpy as np

    if not isinstance(column, np.ma.MaskedArray):
        return column.tolist()  # type: ignore[no-any-return]
    mask = np.ma.getmaskarray(column)
    values = column.data
    if not mask.any():
        return values.tolist()  # type: ignore[no-any-return]
    values = values.astype(object) if values.dtype != object else values.copy()
    values[mask] = None
    return values.tolist()  # type: ignore[no-any-return]


def _in_order(kind: str, data: dict[str, Any]) -> bool:
    """Whether fetched columns are in the total order of SORT_SQL (checked pairwise, vectorised)."""
    import numpy as np

    ts = np.asarray(data["ts_us"])
    if len(ts) < 2:
        return True
    keys: list[Any] = [ts]
    if kind in ("snapshots", "inputs"):
        stream = data["stream"]
        if isinstance(stream, np.ma.MaskedArray):
            stream = np.ma.filled(stream.astype(object), "")
        keys.append(np.asarray(stream, dtype=object))
    elif kind == "elements":
        keys.append(np.asarray(data["snapshot_frame_id"], dtype=object))
    keys.append(np.asarray(data["ref"], dtype=object))
    # Lexicographic: each adjacent pair is ordered by its first differing key (the last key may tie).
    ok = np.zeros(len(ts) - 1, dtype=bool)
    tied = np.ones(len(ts) - 1, dtype=bool)
    for i, k in enumerate(keys):
        a, b = k[:-1], k[1:]
        less = (a < b) if i < len(keys) - 1 else (a <= b)
        ok |= tied & np.asarray(less, dtype=bool)
        tied &= np.asarray(a == b, dtype=bool)
    return bool(ok.all())


def _drop_batch_duplicates(grouped: dict[str, dict[str, list[Any]]]) -> int:
    """Keep one row per ref within a batch: the first in (kind, day, time, batch order).

    Candidates are found by comparing hashes in numpy (no Python set of every ref); only rows whose
    hash repeats are compared by their actual ref, so the result does not depend on hash values.
    """
    import numpy as np

    order = [(day, kind) for kind in ROW_KINDS for day in sorted(grouped) if kind in grouped[day]]
    refs = [row.ref for day, kind in order for row in grouped[day][kind]]
    if len(refs) < 2:
        return 0
    hashes = np.fromiter(map(hash, refs), dtype=np.int64, count=len(refs))
    values, counts = np.unique(hashes, return_counts=True)
    repeated = values[counts > 1]
    if not len(repeated):
        return 0
    first: set[str] = set()
    losers: set[int] = set()
    rows = [row for day, kind in order for row in grouped[day][kind]]
    for i in np.flatnonzero(np.isin(hashes, repeated)).tolist():
        if refs[i] in first:
            losers.add(id(rows[i]))
        else:
            first.add(refs[i])
    for day, kind in order:
        grouped[day][kind] = [row for row in grouped[day][kind] if id(row) not in losers]
    return len(losers)


def _ref_sources(con: duckdb.DuckDBPyConnection, files: list[Path], source_ids: list[str]) -> list[str] | None:
    """The source ids some ref of these files starts with (as "<id>:"), or None when a ref starts
    with none of them (or there are too many to list): then no append may skip the day."""
    ids = sorted(set(source_ids))
    if not ids or len(ids) > REF_SOURCES_MAX:
        return None
    params = [f"{s}:" for s in ids]
    tests = [f"starts_with(ref, ${i})" for i in range(1, len(ids) + 1)]
    row = con.execute(
        f"SELECT count(*) FILTER (WHERE NOT ({' OR '.join(tests)})), "
        f"{', '.join(f'bool_or({t})' for t in tests)} FROM read_parquet({_sql_list(files)})",
        params,
    ).fetchall()[0]  # fetchall: fetchone would leave the result open on the shared connection
    if row[0]:
        return None
    return [s for s, hit in zip(ids, row[1:], strict=True) if hit]


def _exact(row: Any, cls: type) -> bool:
    return type(row) is cls


class _Refusals:
    """Quarantine records of one append, written out in blocks so a huge refusal stays bounded."""

    FLUSH_EVERY = 10_000

    def __init__(self, source_id: str, sink: Callable[[list[dict[str, Any]]], None]):
        self.source_id = source_id
        self.sink = sink
        self.pending: list[dict[str, Any]] = []
        self.count = 0
        self.reasons: dict[str, int] = {}

    def add(self, reason: str, *, row: str, raw: str | None = None, source: str | None = None,
            day: str | None = None) -> None:
        record: dict[str, Any] = {
            "source": source if source is not None else self.source_id,
            "source_id": self.source_id,
            "row": row,
            "reason": reason,
            "raw": None if raw is None else excerpt_text(raw)[:RAW_EXCERPT],  # redacted whoever built it
        }
        if day is not None:
            record["day"] = day
        self.pending.append(record)
        self.count += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        if len(self.pending) >= self.FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.sink(self.pending)
            self.pending = []


def _quarantine_key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(row.get("source_id")), str(row.get("source")), str(row.get("row")), str(row.get("reason")))


# ---------------------------------------------------------------------- the log


class ElementsBySnapshot:
    """A day's element rows, fetched by snapshot when asked (capture.model.ElementSource).

    ``fetch(ids)`` returns the columns (as DuckDB's fetchnumpy gives them) of the elements of
    those snapshots, in the log's order; the rows were checked when they landed. The last answer
    is kept: enrichment and the compile ask for the same snapshots (the same anonymous clicks)."""

    def __init__(self, count: int, fetch: Callable[[list[str]], dict[str, Any]]):
        self.count = count
        self._fetch = fetch
        self._last: tuple[list[str], list[Any]] | None = None

    def of_snapshots(self, frame_ids: Iterable[str]) -> list[Any]:
        ids = sorted(set(frame_ids))
        if not ids or not self.count:
            return []
        if self._last is None or self._last[0] != ids:
            data = self._fetch(ids)
            self._last = (ids, build_instances(CLASS_OF["elements"], [column_values(data[n]) for n in NAMES["elements"]]))
        return list(self._last[1])


class EventLog:
    """The append-only capture log of one data folder."""

    def __init__(self, home: Home) -> None:
        self.home = home
        settings = home.settings()
        self.tz: str = settings.tz
        self.grace_hours: float = settings.grace_hours
        self._zone = zone(self.tz)
        self.dir = home.log_dir
        self.open_dir = self.dir / "open"
        self.sealed_dir = self.dir / "sealed"
        self.manifest_path = self.dir / MANIFEST
        self.quarantine_path = self.dir / QUARANTINE
        self._lock_depth = 0
        # Refs of open days already read by this process, valid while the files keep their sizes.
        self._ref_cache: dict[str, tuple[tuple[int, ...], set[str]]] = {}
        self._con: duckdb.DuckDBPyConnection | None = None
        # Parsed manifest, reused while the file keeps its inode, size and mtime (it only grows).
        self._manifest_cache: tuple[tuple[int, int, int], list[dict[str, Any]]] | None = None
        self._con_lock = threading.RLock()
        self._thread_lock = threading.RLock()
        # Sorted hashes of the refs of sealed days, built on the first large append (see _maybe_sealed).
        self._index: Any = None
        self._index_days: set[str] = set()
        # "<source id>:" prefixes that every ref of a sealed day starts with (None: unknown, always look).
        self._prefix_cache: dict[str, tuple[str, ...] | None] = {}
        self._columns_cache: dict[tuple[str, ...], frozenset[str]] = {}

    @contextmanager
    def _db(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One in-memory DuckDB connection per log object (connecting costs more than a day's read)."""
        with self._con_lock:
            if self._con is None:
                self._con = duckdb.connect()
                # One thread: the same rows always give the same Parquet bytes.
                self._con.execute("SET threads = 1")
            yield self._con

    def close(self) -> None:
        """Release the DuckDB connection (the log object stays usable; it reconnects on demand)."""
        with self._con_lock:
            if self._con is not None:
                self._con.close()
                self._con = None

    # ------------------------------------------------------------------ locking and recovery

    @contextmanager
    def _writing(self) -> Iterator[list[str]]:
        """Hold the writer lock (re-entrant within this object); yield the recovery notes."""
        with self._thread_lock:  # threads of one process queue here; processes meet at the flock
            if self._lock_depth:
                self._lock_depth += 1
                try:
                    yield []
                finally:
                    self._lock_depth -= 1
                return
            with self._process_lock() as notes:
                yield notes

    @contextmanager
    def writing(self) -> Iterator[list[str]]:
        """Hold the writer lock across several appends (a source landed day batch by day batch),
        so no other writer can take the log between them; yields the recovery notes."""
        with self._writing() as notes:
            yield notes

    @contextmanager
    def _process_lock(self) -> Iterator[list[str]]:
        self.dir.mkdir(parents=True, exist_ok=True)
        fh = open(self.dir / LOCK, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise UserError(
                f"the event log at {self.dir} is being written by {holder}; wait for it to finish and retry"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"process {os.getpid()}\n")
        fh.flush()
        self._lock_depth = 1
        try:
            yield self._recover()
        finally:
            self._lock_depth = 0
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()

    def _recover(self) -> list[str]:
        """Repair what a killed writer left behind. Never touches a sealed day's files."""
        notes: list[str] = []
        for path in (self.manifest_path, self.quarantine_path):
            if path.exists():
                cut = _truncate_torn_tail(path)
                if cut:
                    notes.append(f"{path.name}: removed an incomplete last record ({cut} bytes)")
        sealed_days = set(self._sealed())
        chained = self._chained_segments()
        if self.sealed_dir.exists():
            for child in sorted(self.sealed_dir.iterdir()):
                parsed = parse_segment_name(child.name)
                if child.name.startswith(".") and child.name.endswith(".staging"):
                    shutil.rmtree(child)
                    notes.append(f"day {child.name[1:-8]}: removed an unfinished seal")
                elif child.is_dir() and parsed is not None and child.name not in chained:
                    day, k = parsed
                    direct = self.dir / f".{child.name}.direct"
                    if direct.exists() or (k == 0 and (self.open_dir / day).is_dir()):
                        # Moved into place but its manifest entry never landed: not sealed. The open
                        # segment (or the source, for a segment sealed straight from an import) is the truth.
                        shutil.rmtree(child)
                        direct.unlink(missing_ok=True)
                        what = "seal" if k == 0 else f"amendment {k}"
                        notes.append(f"day {day}: undid a {what} interrupted before its manifest entry")
        for marker in sorted(self.dir.glob(".*.direct")):
            marker.unlink()
        if self.open_dir.exists():
            for child in sorted(self.open_dir.iterdir()):
                if not child.is_dir():
                    continue
                if child.name in sealed_days:
                    shutil.rmtree(child)
                    notes.append(f"day {child.name}: removed the open segment of a day already sealed")
                    continue
                for pending in sorted(child.glob(".*.pending")):
                    pending.unlink()
                    notes.append(f"day {child.name}: removed an unfinished write ({pending.name})")
                for f in sorted(child.glob("*.jsonl")):
                    cut = _truncate_torn_tail(f)
                    if cut:
                        notes.append(f"day {child.name}: {f.name}: removed an incomplete last record ({cut} bytes)")
        if notes:
            self._ref_cache.clear()
        return notes

    # ------------------------------------------------------------------ manifest

    def _entries(self) -> list[dict[str, Any]]:
        try:
            st = self.manifest_path.stat()
        except FileNotFoundError:
            return []
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._manifest_cache is not None and self._manifest_cache[0] == stamp:
            return list(self._manifest_cache[1])
        out = []
        for line in _complete_lines(self.manifest_path.read_bytes()):
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # verify() reports it; readers keep going with the rest
            if isinstance(entry, dict) and isinstance(entry.get("day"), str):
                out.append(entry)
        self._manifest_cache = (stamp, out)
        return list(out)

    def _sealed(self) -> dict[str, dict[str, Any]]:
        """Each sealed day's first manifest entry (a day is sealed once it has one)."""
        out: dict[str, dict[str, Any]] = {}
        for e in self._entries():
            out.setdefault(e["day"], e)
        return out

    def _chained_segments(self) -> set[str]:
        """Folder names (under sealed/) of every segment the manifest has an entry for."""
        return {segment_name(e["day"], amendment_of(e)) for e in self._entries() if amendment_of(e) >= 0}

    def day_entries(self, day: str) -> list[dict[str, Any]]:
        """The manifest entries of one day's sealed segments, oldest first (empty while open)."""
        return [e for e in self._entries() if e["day"] == day]

    def _segments(self, day: str) -> list[tuple[str, dict[str, Any]]]:
        """(folder name under sealed/, manifest entry) of each sealed segment of a day, oldest first."""
        return [(segment_name(day, max(amendment_of(e), 0)), e) for e in self.day_entries(day)]

    def segment_files(self, day: str, kind: str) -> list[Path]:
        """The sealed Parquet files of one row kind of a day, one per segment ([] while open)."""
        return [self.sealed_dir / name / f"{kind}.parquet" for name, _ in self._segments(day)]

    def manifest(self) -> list[dict[str, Any]]:
        """The manifest entries, oldest first (a day with amendments has several)."""
        return self._entries()

    def chain_head(self) -> str | None:
        """Hash of the newest manifest entry (None before the first seal)."""
        entries = self._entries()
        return str(entries[-1]["hash"]) if entries else None

    # ------------------------------------------------------------------ append

    def _open_refs(self, day: str) -> set[str]:
        folder = self.open_dir / day
        sizes = self._sizes(folder)
        cached = self._ref_cache.get(day)
        if cached and cached[0] == sizes:
            return cached[1]
        refs: set[str] = set()
        for kind in ROW_KINDS:
            f = folder / f"{kind}.jsonl"
            if f.exists():
                refs.update(r.ref for r in self._parse_open(f, kind)[0])
        self._ref_cache[day] = (sizes, refs)
        return refs

    @staticmethod
    def _parse_open(path: Path, kind: str) -> tuple[list[Any], list[tuple[int, str, str]]]:
        """The rows of an open segment file, and its lines that are not rows: (line, reason, text).

        Read tolerantly: a damaged or hand-edited line, or one written by a newer capture schema
        (fields this version does not know), is reported and left out; every other row is served.
        Sealing quarantines the reported lines with their file and line number.
        """
        if not path.exists():
            return [], []
        cls = CLASS_OF[kind]
        known = NAMES[kind]
        known_set = frozenset(known)
        rows: list[Any] = []
        linenos: list[int] = []
        problems: list[tuple[int, str, str]] = []
        data = path.read_bytes()
        end = data.rfind(b"\n")  # a torn tail is not a record (the next writer cuts it)
        for lineno, line in enumerate(data[: end + 1].split(b"\n")[:-1] if end >= 0 else [], start=1):
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                problems.append((lineno, f"is not valid JSON ({getattr(exc, 'msg', exc)})",
                                 line.decode("utf-8", "replace")))
                continue
            if not isinstance(obj, dict):
                problems.append((lineno, "is not a JSON object", line.decode("utf-8", "replace")))
                continue
            if obj.keys() != known_set:
                extra = sorted(set(obj) - known_set)
                # A field added to the schema later is absent from an older writer's lines: its default.
                missing = sorted(n for n in known_set - set(obj) if n in REQUIRED[kind])
                why = []
                if extra:
                    why.append(f"has fields capture schema v{CAPTURE_SCHEMA_VERSION} does not know "
                               f"({', '.join(extra[:5])}: written by a newer version?)")
                if missing:
                    why.append(f"lacks the fields {', '.join(missing[:5])}")
                if why:
                    problems.append((lineno, "; ".join(why), line.decode("utf-8", "replace")))
                    continue
                rows.append(cls(**obj))
                linenos.append(lineno)
                continue
            rows.append(cls(**{n: obj[n] for n in known}))
            linenos.append(lineno)
        if rows and not _columns_ok(kind, {n: list(map(attrgetter(n), rows)) for n in known}):
            good = []
            for row, lineno in zip(rows, linenos, strict=True):
                problem = _row_problem(kind, row)
                if problem is None:
                    good.append(row)
                else:
                    problems.append((lineno, f"{kind} row {problem}", _excerpt(kind, row)))
            rows = good
            problems.sort()
        return rows, problems

    @staticmethod
    def _sizes(folder: Path) -> tuple[int, ...]:
        return tuple(
            (folder / f"{k}.jsonl").stat().st_size if (folder / f"{k}.jsonl").exists() else -1 for k in ROW_KINDS
        )

    def _sealed_refs(self, day: str) -> set[str]:
        paths = [p for kind in ROW_KINDS for p in self.segment_files(day, kind)]
        if not paths:
            return set()
        with self._db() as con:
            return {r[0] for r in con.execute(f"SELECT ref FROM read_parquet({_sql_list(paths)})").fetchall()}

    def refs_present(self, refs: list[str]) -> set[str]:
        """Which of these refs the log already holds (sealed or open), with the append's own lookup."""
        return self._refs_in_log(refs)

    def _refs_in_log(self, refs: list[str]) -> set[str]:
        """Which of these refs are anywhere in the log (sealed Parquet or open segments)."""
        if not refs:
            return set()
        small = len(refs) < INDEX_MIN_REFS
        # A sealed day none of whose refs starts like one of these cannot hold any of them.
        sealed_days = self._sharing_source(sorted(self._sealed()), refs)
        open_days = self._open_days()
        found: set[str] = set()
        if open_days:
            if small:
                # Open days this process has read stay in memory (checked by file sizes), so the
                # recorder's frequent small appends do not re-read today's whole segment each time.
                held = [d for d in open_days if self._open_refs_held(d)]
                fresh = [d for d in open_days if d not in held]
                held += fresh[: max(0, OPEN_REFS_CACHED - len(held))]
                for day in held:
                    known = self._open_refs(day)
                    found.update(r for r in refs if r in known)
                open_days = [d for d in open_days if d not in held]
            if open_days:
                found |= self._scan_refs(refs, [], open_days)
        if sealed_days:
            if small and self._index is None:
                found |= self._scan_refs(refs, sealed_days, [])
            else:
                maybe = self._maybe_sealed(refs, sealed_days)
                if maybe:
                    found |= self._scan_refs(maybe, sealed_days, [])
        return found

    def continue_grown_spans(self, batch: CaptureBatch) -> tuple[int, dict[str, int]]:
        """Turn rows of measured spans that grew since they were logged into continuation rows.

        A source that measures spans (ActivityWatch) extends its newest event in place: read
        again later, the same event (same ref) ends later. The log never rewrites a row, so such
        a row becomes a continuation (ref ``<ref>~<k>``) that starts where the logged part of the
        event ended; each instant is then credited once. A row the log already covers as far as
        it goes (an older, shorter version) is dropped. Returns (continued, dropped per kind)."""
        kinds = [k for k in ("snapshots", "presence")
                 if any(getattr(r, "end_us", None) is not None for r in batch.rows(k))]
        dropped: dict[str, int] = {}
        if not kinds:
            return 0, dropped
        days = sorted({local_day(r.ts_us, self._zone) for k in kinds for r in batch.rows(k)})
        own_end: dict[str, int] = {}  # logged ref -> its own end
        covered: dict[str, tuple[int, int]] = {}  # event ref -> (end of its last logged piece, pieces)
        for day in days:
            cap = self.read_day(day, lazy_elements=True)
            for k in kinds:
                for row in getattr(cap, k):
                    end = getattr(row, "end_us", None)
                    if end is None:
                        continue
                    base = row.ref.split(CONTINUATION, 1)[0]
                    if base == row.ref:
                        own_end[base] = end
                    have = covered.get(base)
                    covered[base] = (max(end, have[0]) if have else end, (have[1] if have else 0) + 1)
        continued = 0
        for k in kinds:
            out = []
            for row in batch.rows(k):
                end = getattr(row, "end_us", None)
                have = covered.get(row.ref)
                if have is None or end is None or end == own_end.get(row.ref):
                    out.append(row)  # new, or the same row again (the append skips it)
                elif end > have[0]:
                    out.append(dataclasses.replace(row, ref=f"{row.ref}{CONTINUATION}{have[1]}", ts_us=have[0]))
                    continued += 1
                else:
                    dropped[k] = dropped.get(k, 0) + 1  # the log holds this event as far as this version goes
            setattr(batch, k, out)
        return continued, dropped

    def _conflicts(self, day: str, kind: str, rows: list[Any], sealed: bool) -> list[tuple[Any, str]]:
        """Rows whose ref the day already holds but whose content differs, with the reason.

        The same ref with the same content is the same row again (a re-import): not a conflict.
        """
        if not rows:
            return []
        cols, bad = _columns(kind, rows)
        out = [(row, f"{kind} row {problem}") for row, problem in bad]
        if not cols["ref"]:
            return out
        names = NAMES[kind]
        if sealed:
            differing: dict[str, list[str]] = {}
            with self._db() as con:
                con.register("incoming_rows", _frame(kind, cols))
                try:
                    tests = ", ".join(
                        f"CASE WHEN p.\"{n}\" IS DISTINCT FROM s.\"{n}\" THEN '{n}' END" for n in names if n != "ref"
                    )
                    found = con.execute(
                        f"SELECT p.ref, concat_ws(',', {tests}) AS diff FROM incoming_rows p "
                        f"JOIN {self.sealed_relation(day, kind)} s ON p.ref = s.ref"
                    ).fetchall()
                finally:
                    con.unregister("incoming_rows")
            differing = {ref: diff.split(",") for ref, diff in found if diff}
        else:
            stored = {r.ref: r for r in self._parse_open(self.open_dir / day / f"{kind}.jsonl", kind)[0]}
            differing = {}
            for values in zip(*(cols[n] for n in names), strict=True):
                old = stored.get(values[0])
                if old is not None:
                    fields_ = [n for n, v in zip(names, values, strict=True) if getattr(old, n) != v]
                    if fields_:
                        differing[values[0]] = fields_
        for row in rows:
            diff = differing.get(row.ref)
            if diff:
                out.append((row, f"conflicts with the {kind} row of the same ref already in the log "
                                 f"(differs in {', '.join(diff)}); the logged row is kept"))
        return out

    def _open_refs_held(self, day: str) -> bool:
        cached = self._ref_cache.get(day)
        return cached is not None and cached[0] == self._sizes(self.open_dir / day)

    def _sharing_source(self, days: list[str], refs: list[str]) -> list[str]:
        """The sealed days among ``days`` that may hold one of ``refs``, judged by source prefix."""
        out = []
        verdict: dict[tuple[str, ...], bool] = {}  # days fed by the same sources share one answer
        for day in days:
            prefixes = self._day_prefixes(day)
            if prefixes is None:
                out.append(day)
                continue
            if prefixes not in verdict:
                verdict[prefixes] = bool(prefixes) and any(r.startswith(prefixes) for r in refs)
            if verdict[prefixes]:
                out.append(day)
        return out

    def _day_prefixes(self, day: str) -> tuple[str, ...] | None:
        """"<source id>:" prefixes that every ref of a sealed day starts with, or None if unknown."""
        if day in self._prefix_cache:
            return self._prefix_cache[day]
        segments = self._segments(day)
        if not segments:
            return None
        union: set[str] = set()
        unknown = False
        for name, entry in segments:
            ids = self._segment_ref_sources(name, entry)
            if ids is None:
                unknown = True
                break
            union.update(ids)
        prefixes = None if unknown else tuple(f"{s}:" for s in sorted(union))
        self._prefix_cache[day] = prefixes
        return prefixes

    def _segment_ref_sources(self, name: str, entry: dict[str, Any]) -> list[str] | None:
        if "ref_sources" in entry:
            listed = entry["ref_sources"]
            return listed if isinstance(listed, list) and all(isinstance(s, str) for s in listed) else None
        # Sealed before manifest entries recorded it: work it out once per process from the
        # segment's sources and refs (the same computation sealing does).
        try:
            doc = json.loads((self.sealed_dir / name / SOURCES_SEALED).read_bytes())
            candidates = [str(s["source_id"]) for s in doc.get("sources", [])]
            with self._db() as con:
                return _ref_sources(con, [self.sealed_dir / name / f"{k}.parquet" for k in ROW_KINDS], candidates)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, duckdb.Error):
            return None  # unreadable: look at the day every time, as verify will report it

    def _scan_refs(self, refs: list[str], sealed_days: list[str], open_days: list[str]) -> set[str]:
        """Exact lookup: scan the ref column of the given days."""
        parts = []
        if sealed_days:
            files = [p for day in sealed_days for k in ROW_KINDS for p in self.segment_files(day, k)]
            parts.append(f"SELECT ref FROM read_parquet({_sql_list(files)})")
        opened = [
            self.open_dir / day / f"{k}.jsonl"
            for day in open_days
            for k in ROW_KINDS
            if (self.open_dir / day / f"{k}.jsonl").exists()
        ]
        if opened:
            parts.append(
                f"SELECT ref FROM read_json({_sql_list(opened)}, "
                "format = 'newline_delimited', columns = {'ref': 'VARCHAR'})"
            )
        if not parts:
            return set()
        with self._db() as con:
            found = con.execute(
                f"SELECT DISTINCT ref FROM ({' UNION ALL '.join(parts)}) WHERE ref IN (SELECT unnest($refs))",
                {"refs": refs},
            ).fetchall()
        return {r[0] for r in found}

    def _maybe_sealed(self, refs: list[str], sealed_days: list[str]) -> list[str]:
        """Refs whose hash matches a ref of a sealed day (a superset of those present).

        Scanning every sealed day for each large append would grow with the log's age; instead
        this process keeps a sorted array of the hashes of sealed refs (8 bytes a row, extended
        as days seal) and only the rare matches are checked exactly. Python's str hash is salted
        per process, which is fine: the array never leaves the process.
        """
        import numpy as np

        missing = [day for day in sealed_days if day not in self._index_days]
        if missing:
            files = [p for day in missing for k in ROW_KINDS for p in self.segment_files(day, k)]
            with self._db() as con:
                found = con.execute(f"SELECT ref FROM read_parquet({_sql_list(files)})").fetchnumpy()["ref"]
            self._index_add(missing, found.tolist())
        index = self._index
        if index is None or not len(index):
            return []
        hashes = np.fromiter(map(hash, refs), dtype=np.int64, count=len(refs))
        order = np.argsort(hashes, kind="stable")  # sorted queries search the index far faster
        ordered = hashes[order]
        pos = np.minimum(np.searchsorted(index, ordered), len(index) - 1)
        hits = np.sort(order[index[pos] == ordered])
        return [refs[i] for i in hits.tolist()]

    def _index_add(self, days: list[str], refs: list[str]) -> None:
        """Merge the refs of newly sealed days into the hash index."""
        import numpy as np

        new = np.sort(np.fromiter(map(hash, refs), dtype=np.int64, count=len(refs)))
        if self._index is None:
            self._index = new
        else:
            self._index = np.insert(self._index, np.searchsorted(self._index, new), new)
        self._index_days.update(days)

    def append(
        self,
        batch: CaptureBatch,
        *,
        now_us: int | None = None,
        progress: Callable[[str], None] | None = None,
        seal: bool = True,
    ) -> AppendReport:
        """Land a batch: new refs join their local day; refs already in the log are skipped.

        New rows for a sealed day are refused into the quarantine. Afterwards every open day whose
        end plus the grace period is before ``now_us`` (default: the clock) is sealed, so give one
        whole source per call, or pass ``seal=False`` on all calls but the last of a chunked source.
        """
        now = time.time_ns() // 1000 if now_us is None else now_us
        say = progress or (lambda _msg: None)
        landed = dict.fromkeys(ROW_KINDS, 0)
        skipped = 0
        seen: set[tuple[str, str, str, str]] | None = None

        def store(rows: list[dict[str, Any]]) -> None:
            nonlocal seen
            if seen is None:
                seen = {_quarantine_key(r) for r in self.quarantine_rows()}
            self._append_quarantine(rows, seen)

        refused = _Refusals(batch.source_id, store)
        for q in batch.quarantined:
            refused.add(q.reason, row=q.row, raw=q.raw, source=q.source)
        days_sealed: list[str] = []
        amended: list[str] = []
        with self._writing() as recovered:
            for note in recovered:
                say(f"recovered: {note}")
            sealed = self._sealed()
            grouped = self._group(batch, refused)
            touched = sorted(grouped)
            skipped += _drop_batch_duplicates(grouped)
            # Pass 1: rows whose ref is not yet in their own day.
            candidates: dict[str, dict[str, list[Any]]] = {}
            already_here: set[str] = set()  # days holding some of this batch's rows already
            for day in touched:
                by_kind = grouped.pop(day)
                if day in sealed:
                    day_refs = [row.ref for rows in by_kind.values() for row in rows]
                    known = self._sealed_refs(day) if self._sharing_source([day], day_refs) else set()
                elif (self.open_dir / day).is_dir():
                    known = self._open_refs(day)
                else:
                    candidates[day] = by_kind
                    continue
                candidates[day] = {}
                for kind, rows in by_kind.items():
                    new = [row for row in rows if row.ref not in known]
                    if len(new) < len(rows):
                        already_here.add(day)
                        # Same identity: the same row again (skipped), or a true conflict (refused).
                        again = [row for row in rows if row.ref in known]
                        for row, reason in self._conflicts(day, kind, again, day in sealed):
                            refused.add(reason, row=row.ref, raw=_excerpt(kind, row), day=day)
                            skipped -= 1
                    skipped += len(rows) - len(new)
                    if new:
                        candidates[day][kind] = new
            # Pass 2: a ref is one row of the log wherever it is; one found on another day is skipped.
            elsewhere = self._refs_in_log([row.ref for day in candidates.values() for rows in day.values()
                                           for row in rows])
            # Pass 3: refuse rows of sealed days, land the rest day by day.
            for n_done, day in enumerate(touched, start=1):
                by_kind = candidates.pop(day, {})  # drop each day once landed: memory shrinks as we go
                if elsewhere:
                    for kind, rows in list(by_kind.items()):
                        by_kind[kind] = [row for row in rows if row.ref not in elsewhere]
                        skipped += len(rows) - len(by_kind[kind])
                head = f"[{n_done}/{len(touched)}] {day}:"
                fresh: dict[str, dict[str, list[Any]]] = {}
                for kind in ROW_KINDS:
                    if by_kind.get(kind):
                        cols, bad = _columns(kind, by_kind[kind])
                        for row, reason in bad:
                            refused.add(f"{kind} row {reason}", row=str(row.ref), raw=_excerpt(kind, row), day=day)
                        if cols["ref"]:
                            fresh[kind] = cols
                n_day = sum(len(c["ref"]) for c in fresh.values())
                folder = self.open_dir / day
                if not n_day:
                    if day in already_here and folder.is_dir():
                        # A re-run after a kill between rows and source record: name the source.
                        self._note_source(folder, batch)
                    say(f"{head} nothing new")
                    continue
                if day in sealed:
                    # Late capture for a sealed day: a new sealed segment chained after the day's
                    # earlier ones (never merged into them); the day's assets are then stale.
                    k = self._seal_columns(day, fresh, [(batch.source_id, batch.recorder)], amend=True)
                    amended.append(day)
                    if self._index is not None and day in self._index_days:
                        self._index_add([day], [ref for cols in fresh.values() for ref in cols["ref"]])
                    state = f"landed as amendment {k} of the sealed day"
                elif seal and self._due(day, now) and not folder.exists():
                    # A whole past day arriving at once seals straight from memory: no open segment
                    # to write and parse back. Killed before its manifest entry, the day is simply
                    # absent, and running the import again lands it.
                    self._seal_columns(day, fresh, [(batch.source_id, batch.recorder)])
                    days_sealed.append(day)
                    if self._index is not None:  # the day's refs are all here: index them now
                        self._index_add([day], [ref for cols in fresh.values() for ref in cols["ref"]])
                    state = "landed and sealed"
                else:
                    cached = self._ref_cache.get(day) if folder.is_dir() else None
                    folder.mkdir(parents=True, exist_ok=True)
                    self._note_source(folder, batch)  # before the rows: no row lands without its source
                    for kind, cols in fresh.items():
                        self._write_open(folder, kind, cols)
                    self._ref_cache.pop(day, None)
                    if cached is not None:  # keep a live day's refs: the recorder appends often
                        cached[1].update(ref for cols in fresh.values() for ref in cols["ref"])
                        self._ref_cache[day] = (self._sizes(folder), cached[1])
                    state = "landed"
                for kind, cols in fresh.items():
                    landed[kind] += len(cols["ref"])
                say(f"{head} {n_day} rows {state}")
            refused.flush()
            if seal:
                days_sealed.extend(self.seal_due(now))
        return AppendReport(
            landed=landed,
            skipped=skipped,
            quarantined=refused.count,
            quarantine_reasons=dict(sorted(refused.reasons.items())),
            days_touched=touched,
            days_sealed=sorted(days_sealed),
            recovered=recovered,
            days_amended=sorted(amended),
        )

    def _group(self, batch: CaptureBatch, refused: _Refusals) -> dict[str, dict[str, list[Any]]]:
        """Rows by local day and kind; rows without a usable ref, time or type are refused."""
        out: dict[str, dict[str, list[Any]]] = {}
        for kind in ROW_KINDS:
            rows = self._usable(kind, batch.rows(kind), refused)
            if not rows:
                continue
            stamps = list(map(_TS_OF, rows))
            if not all(map(operator.le, stamps, itertools.islice(stamps, 1, None))):
                rows.sort(key=_TS_OF)
                stamps.sort()
            # Sorted by time: each local day is one slice, found by bisecting at the day's end.
            i = 0
            while i < len(rows):
                day = local_day(stamps[i], self._zone)
                end = bisect.bisect_left(stamps, day_bounds(day, self._zone)[1], lo=i)
                out.setdefault(day, {})[kind] = rows[i:end]
                i = end
        return out

    @staticmethod
    def _usable(kind: str, rows: list[Any], refused: _Refusals) -> list[Any]:
        """The rows that are the right class with a non-empty ref and a plausible ts_us."""
        cls = CLASS_OF[kind]
        if set(map(type, rows)) <= {cls}:
            refs = list(map(_REF_OF, rows))
            stamps = list(map(_TS_OF, rows))
            if (
                set(map(type, refs)) <= {str}
                and "" not in refs
                and set(map(type, stamps)) <= {int}
                and (not stamps or (TS_MIN_US <= min(stamps) and max(stamps) < TS_MAX_US))
            ):
                return list(rows)  # the usual case, checked at C speed
        good = []
        for i, row in enumerate(rows):
            if not _exact(row, cls):
                refused.add(f"{kind} row is of type {type(row).__name__}, not {cls.__name__}",
                            row=f"{kind}[{i}]", raw=repr(row))
                continue
            ts, ref = row.ts_us, row.ref
            if type(ref) is not str or not ref:
                refused.add(f"{kind} row has no ref", row=f"{kind}[{i}]", raw=_excerpt(kind, row))
            elif type(ts) is not int or not TS_MIN_US <= ts < TS_MAX_US:
                refused.add(f"{kind} row has no usable ts_us (a time between 1990 and 2100)", row=ref,
                            raw=_excerpt(kind, row))
            else:
                good.append(row)
        return good

    def _write_open(self, folder: Path, kind: str, cols: dict[str, list[Any]]) -> None:
        """Append checked rows to an open segment (fsync'd)."""
        target = folder / f"{kind}.jsonl"
        if len(cols["ref"]) >= BULK_ROWS:
            pending = folder / f".{kind}.pending"
            with self._db() as con:
                con.register("pending_rows", _frame(kind, cols))
                try:
                    con.execute(
                        f"COPY (SELECT {SELECT_SQL[kind]} FROM pending_rows) TO '{_sql_path(pending)}' (FORMAT json)"
                    )
                finally:
                    con.unregister("pending_rows")
            if not target.exists():
                _fsync_file(pending)
                os.rename(pending, target)
                _fsync_dir(folder)
            else:
                with open(pending, "rb") as src, open(target, "ab") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                    dst.flush()
                    if FSYNC:
                        os.fsync(dst.fileno())
                pending.unlink()
            return
        names = NAMES[kind]
        lines = [_encode(dict(zip(names, values, strict=True))) for values in zip(*(cols[n] for n in names), strict=True)]
        _append_bytes(target, ("\n".join(lines) + "\n").encode("utf-8"))

    def _note_source(self, folder: Path, batch: CaptureBatch) -> None:
        path = folder / SOURCES_OPEN
        record = {"source_id": batch.source_id, "recorder": batch.recorder}
        if path.exists() and any(json.loads(ln) == record for ln in _complete_lines(path.read_bytes())):
            return
        _append_bytes(path, _canonical(record) + b"\n")

    def _append_quarantine(self, rows: list[dict[str, Any]], seen: set[tuple[str, str, str, str]]) -> None:
        """Store quarantined rows once: re-importing the same source does not repeat them."""
        fresh: list[bytes] = []
        for r in rows:
            key = _quarantine_key(r)
            if key not in seen:
                seen.add(key)
                # ASCII-escaped: a raw excerpt may hold text that is not valid UTF-8.
                fresh.append(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode() + b"\n")
        _append_bytes(self.quarantine_path, b"".join(fresh))

    # ------------------------------------------------------------------ sealing

    def _due(self, day: str, now_us: int) -> bool:
        return day_bounds(day, self._zone)[1] + int(round(self.grace_hours * HOUR_US)) < now_us

    def _open_days(self) -> list[str]:
        if not self.open_dir.exists():
            return []
        sealed = self._sealed()
        return sorted(
            c.name for c in self.open_dir.iterdir() if c.is_dir() and _is_day(c.name) and c.name not in sealed
        )

    def seal_due(self, now_us: int | None = None) -> list[str]:
        """Seal every open day whose local end plus the grace period is before now; return them."""
        now = time.time_ns() // 1000 if now_us is None else now_us
        done = []
        with self._writing():
            for day in self._open_days():
                if self._due(day, now) and self.seal(day):
                    done.append(day)
        return done

    def seal(self, day: str) -> bool:
        """Seal one open day now. True if it sealed, False if it was already sealed."""
        try:
            parse_day(day)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        with self._writing():
            if day in self._sealed():
                return False
            folder = self.open_dir / day
            present = [k for k in ROW_KINDS if (folder / f"{k}.jsonl").exists() and (folder / f"{k}.jsonl").stat().st_size]
            if not present:
                raise UserError(f"there is no capture for {day} in the event log at {self.dir}; nothing to seal")
            sources: list[tuple[str, str]] = []
            if (folder / SOURCES_OPEN).exists():
                for ln in _complete_lines((folder / SOURCES_OPEN).read_bytes()):
                    try:
                        s = json.loads(ln)
                        sources.append((str(s["source_id"]), str(s["recorder"])))
                    except (ValueError, TypeError, KeyError):
                        continue  # a damaged source note: the rows' refs still name their source
            fresh: dict[str, dict[str, list[Any]]] = {}
            refused = _Refusals(f"log:open:{day}", self._store_refused)
            for kind in present:
                path = folder / f"{kind}.jsonl"
                rows, problems = self._parse_open(path, kind)
                for lineno, reason, text in problems:
                    refused.add(f"open segment line {reason}", row=f"line {lineno}", raw=text,
                                source=f"log/open/{day}/{kind}.jsonl", day=day)
                if rows:
                    fresh[kind] = _columns(kind, rows)[0]
            # Quarantined before the seal lands: a kill in between leaves the open segment (and its
            # bad lines) in place, and sealing again records the same lines once (keyed by line).
            refused.flush()
            if not fresh:
                raise UserError(f"the open segment of {day} in {folder} holds no usable row "
                                f"({refused.count} damaged lines); nothing to seal")
            with self._db() as con:
                names = []
                relations = {}
                for kind in ROW_KINDS:
                    if kind in fresh:
                        names.append(f"pending_{kind}")
                        con.register(names[-1], _frame(kind, fresh[kind]))
                        relations[kind] = names[-1]
                    else:
                        relations[kind] = _empty_sql(kind)
                try:
                    self._write_sealed(con, day, relations, sources)
                finally:
                    for view in names:
                        con.unregister(view)
            shutil.rmtree(folder)
            self._ref_cache.pop(day, None)
            return True

    def _store_refused(self, rows: list[dict[str, Any]]) -> None:
        seen = {_quarantine_key(r) for r in self.quarantine_rows()}
        self._append_quarantine(rows, seen)

    def _seal_columns(self, day: str, fresh: dict[str, dict[str, list[Any]]], sources: list[tuple[str, str]],
                      amend: bool = False) -> int:
        """Seal checked in-memory rows as a segment of ``day``: its first (the day has no open
        segment) or, with ``amend``, its next amendment. Returns the amendment number."""
        k = (max(amendment_of(e) for e in self.day_entries(day)) + 1) if amend else 0
        name = segment_name(day, k)
        marker = self.dir / f".{name}.direct"  # tells recovery this seal had no open segment behind it
        _append_bytes(marker, b"sealing from an import\n")
        try:
            with self._db() as con:
                names = []
                relations = {}
                for kind in ROW_KINDS:
                    if kind in fresh:
                        name = f"pending_{kind}"
                        con.register(name, _frame(kind, fresh[kind]))
                        names.append(name)
                        relations[kind] = name
                    else:
                        relations[kind] = _empty_sql(kind)
                try:
                    self._write_sealed(con, day, relations, sources, amendment=k)
                finally:
                    for view in names:
                        con.unregister(view)
        finally:
            # Only a killed process leaves the marker behind; an error here must not let recovery
            # treat a folder this call did not create as its own half-finished seal.
            marker.unlink(missing_ok=True)
        return k

    def _write_sealed(
        self, con: duckdb.DuckDBPyConnection, day: str, relations: dict[str, str], sources: list[tuple[str, str]],
        amendment: int = 0,
    ) -> None:
        """Write a segment's Parquet files to a staging folder, move it into place, chain the manifest."""
        name = segment_name(day, amendment)
        final = self.sealed_dir / name
        if final.exists():
            raise UserError(
                f"{final} exists but the manifest has no entry for it: the log was changed by hand "
                "(run `af log verify`)"
            )
        staging = self.sealed_dir / f".{name}.staging"
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        files: dict[str, dict[str, Any]] = {}
        for kind in ROW_KINDS:
            dst = staging / f"{kind}.parquet"
            result = con.execute(
                f"COPY (SELECT {SELECT_SQL[kind]} FROM {relations[kind]} ORDER BY {SORT_SQL[kind]}) "
                f"TO '{_sql_path(dst)}' (FORMAT parquet, COMPRESSION zstd)"
            ).fetchone()
            files[dst.name] = {"rows": int(result[0]) if result else 0}
        unique = sorted(set(sources))
        ref_sources = _ref_sources(con, [staging / f"{kind}.parquet" for kind in ROW_KINDS], [s for s, _ in unique])
        doc = {
            "day": day,
            "recorders": sorted({r for _, r in unique}),
            "sources": [{"source_id": s, "recorder": r} for s, r in unique],
        }
        (staging / SOURCES_SEALED).write_bytes(_canonical(doc) + b"\n")
        files[SOURCES_SEALED] = {"rows": len(unique)}
        for name in files:
            _fsync_file(staging / name)
            files[name]["sha256"] = sha256_file(staging / name)
        _fsync_dir(staging)
        os.rename(staging, final)
        _fsync_dir(self.sealed_dir)
        entries = self._entries()
        entry: dict[str, Any] = {
            "seq": len(entries),
            "day": day,
            **({"amendment": amendment} if amendment else {}),
            "tz": self.tz,
            "capture_schema": CAPTURE_SCHEMA_VERSION,
            "files": dict(sorted(files.items())),
            "ref_sources": ref_sources,
            "sealed_at": iso_utc(time.time_ns() // 1000),
            "prev": entries[-1]["hash"] if entries else None,
        }
        entry["hash"] = entry_hash(entry)
        _append_bytes(self.manifest_path, _canonical(entry) + b"\n")
        self._prefix_cache.pop(day, None)  # worked out again from every segment of the day

    # ------------------------------------------------------------------ reading

    def days(self) -> list[DayStatus]:
        """Every day in the log, sealed or open, with its row counts per kind (all segments)."""
        out: list[DayStatus] = []
        counts_of: dict[str, dict[str, int]] = {}
        amendments: dict[str, int] = {}
        for entry in self._entries():
            day = entry["day"]
            counts = counts_of.setdefault(day, dict.fromkeys(ROW_KINDS, 0))
            files: dict[str, Any] = entry["files"] if isinstance(entry.get("files"), dict) else {}
            for k in ROW_KINDS:
                meta = files.get(f"{k}.parquet", {})
                counts[k] += int(meta.get("rows", 0)) if isinstance(meta, dict) else 0
            if amendment_of(entry):
                amendments[day] = amendments.get(day, 0) + 1
        for day, counts in counts_of.items():
            out.append(DayStatus(day, True, counts, amendments.get(day, 0)))
        for day in self._open_days():
            counts = {}
            for k in ROW_KINDS:
                f = self.open_dir / day / f"{k}.jsonl"
                counts[k] = len(_complete_lines(f.read_bytes())) if f.exists() else 0
            out.append(DayStatus(day, False, counts))
        return sorted(out, key=lambda s: s.day)

    def segment_paths(self, day: str) -> dict[str, Path]:
        """The Parquet file of each row kind of a sealed day's first segment ({} while the day is
        open). A day with amendments has more: see segment_files."""
        if day not in self._sealed():
            return {}
        return {k: self.sealed_dir / day / f"{k}.parquet" for k in ROW_KINDS}

    def read_day(self, day: str, lazy_elements: bool = False) -> DayCapture:
        """Every row of a local day, sorted (an unknown day reads as empty and open).

        A sealed day's rows are those of all its segments (the first and every amendment), in
        one total order, so a day reads the same whether its capture arrived before or after it
        was sealed. ``lazy_elements``: a sealed day's element trees (most of its rows) are not
        read; the capture gets an element source that reads the trees of the snapshots a compile
        asks for from the same verified segments. Open days are read whole either way."""
        try:
            parse_day(day)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        if day in self._sealed():
            return self._read_sealed(day, lazy_elements)
        try:
            cap: DayCapture | None = self._read_open(day)
        except FileNotFoundError:
            cap = None
        if cap is None or not (self.open_dir / day).is_dir():
            # A writer may have sealed the day (and removed its open segment) while we looked.
            if day in self._sealed():
                return self._read_sealed(day, lazy_elements)
        return cap if cap is not None else DayCapture(day=day, tz=self.tz, sealed=False)

    def verified_segments(self, day: str) -> dict[str, str]:
        """``sealed/<segment>/<file>`` -> sha256 of every file of a sealed day's segments, each
        re-hashed now and checked against its manifest entry (CheckFailed on any difference)."""
        hashes: dict[str, str] = {}
        for name, entry in self._segments(day):
            folder = self.sealed_dir / name
            files: dict[str, Any] = entry["files"] if isinstance(entry.get("files"), dict) else {}
            for fname, meta in sorted(files.items()):
                path = folder / fname
                if not path.is_file():
                    raise CheckFailed(f"sealed segment {path} is missing; run `af log verify`")
                actual = sha256_file(path)
                if not isinstance(meta, dict) or actual != meta.get("sha256"):
                    raise CheckFailed(
                        f"sealed segment {path} no longer matches the sha256 in its manifest entry; "
                        "run `af log verify`"
                    )
                hashes[f"sealed/{name}/{fname}"] = actual
        return hashes

    def sealed_relation(self, day: str, kind: str) -> str:
        """SQL for the rows of one kind of a sealed day, every segment, with the current columns
        (a column that an older capture schema lacked reads as NULL). Not sorted."""
        files = [self.sealed_dir / name / f"{kind}.parquet" for name, _ in self._segments(day)]
        rel = f"read_parquet({_sql_list(files)}, union_by_name = true)"
        if self.has_current_columns(day, kind):
            return f"(SELECT {SELECT_SQL[kind]} FROM {rel})"
        present = self._present_columns(files)
        cols = ", ".join(f'"{n}"' if n in present else f'CAST(NULL AS {t}) AS "{n}"' for n, t in COLUMNS[kind].items())
        return f"(SELECT {cols} FROM {rel})"

    def has_current_columns(self, day: str, kind: str) -> bool:
        """Whether every segment of a sealed day has all of this version's columns for ``kind``
        (a segment sealed before a column was added to the capture schema has not)."""
        files = [self.sealed_dir / name / f"{kind}.parquet" for name, _ in self._segments(day)]
        return all(set(NAMES[kind]) <= self._present_columns([f]) for f in files)

    def _present_columns(self, files: list[Path]) -> frozenset[str]:
        """Columns of these Parquet files (their union), from the file metadata; sealed files never
        change, so the answer is kept for the life of this object."""
        key = tuple(str(f) for f in files)
        cached = self._columns_cache.get(key)
        if cached is None:
            with self._db() as con:
                rel = f"read_parquet({_sql_list(files)}, union_by_name = true)"
                cached = frozenset(r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall())
            self._columns_cache[key] = cached
        return cached

    def _read_sealed(self, day: str, lazy_elements: bool = False) -> DayCapture:
        segments = self._segments(day)
        hashes = self.verified_segments(day)
        cap = DayCapture(day=day, tz=self.tz, sealed=True, segment_hashes=hashes)
        kinds = ROW_KINDS
        if lazy_elements:
            kinds = tuple(k for k in ROW_KINDS if k != "elements")
            rows = sum(int(e["files"].get("elements.parquet", {}).get("rows", 0)) for _, e in segments)
            cap.element_source = ElementsBySnapshot(rows, functools.partial(self._sealed_element_columns, day))
        with self._db() as con:
            for kind in kinds:
                query = f"SELECT {SELECT_SQL[kind]} FROM {self.sealed_relation(day, kind)}"
                # Sealing writes each file in SORT_SQL order, and the files were just checked against
                # their hashes: a day of one segment is read as stored (one thread keeps file order)
                # and only sorted if the check of the order says otherwise, e.g. for a file sealed
                # under a different order; a day with amendments is merged by the sort.
                data = con.execute(query).fetchnumpy()
                if len(segments) > 1 or not _in_order(kind, data):
                    data = con.execute(f"{query} ORDER BY {SORT_SQL[kind]}").fetchnumpy()
                # Column-wise conversion is several times faster than fetchall() on wide days.
                setattr(cap, kind, build_instances(CLASS_OF[kind], [column_values(data[n]) for n in NAMES[kind]]))
        recorders: set[str] = set()
        for name, _ in segments:
            doc = json.loads((self.sealed_dir / name / SOURCES_SEALED).read_bytes())
            recorders.update(doc.get("recorders", []))
        cap.recorders = sorted(recorders)
        return cap

    def _sealed_element_columns(self, day: str, frame_ids: list[str]) -> dict[str, Any]:
        """The element rows of these snapshots from a sealed day's (hash-checked) segments, in log order."""
        query = (
            f"SELECT {SELECT_SQL['elements']} FROM {self.sealed_relation(day, 'elements')} "
            "WHERE snapshot_frame_id IN (SELECT unnest(?::VARCHAR[]))"
        )
        with self._db() as con:  # one thread: rows come back in file order
            data: dict[str, Any] = con.execute(query, [frame_ids]).fetchnumpy()
            if len(self._segments(day)) > 1 or not _in_order("elements", data):
                data = con.execute(f"{query} ORDER BY {SORT_SQL['elements']}", [frame_ids]).fetchnumpy()
        return data

    def _read_open(self, day: str) -> DayCapture:
        folder = self.open_dir / day
        cap = DayCapture(day=day, tz=self.tz, sealed=False)
        if not folder.is_dir():
            return cap
        for kind in ROW_KINDS:
            f = folder / f"{kind}.jsonl"
            if f.exists():
                rows = self._parse_open(f, kind)[0]
                rows.sort(key=sort_key(kind))
                setattr(cap, kind, rows)
        src = folder / SOURCES_OPEN
        if src.exists():
            cap.recorders = sorted({json.loads(ln)["recorder"] for ln in _complete_lines(src.read_bytes())})
        return cap

    def read_range(self, start_us: int, end_us: int) -> DayCapture:
        """Rows with start_us <= ts_us < end_us across days; ``day`` is the local day of start_us."""
        first = local_day(start_us, self._zone)
        out = DayCapture(day=first, tz=self.tz, sealed=True)
        if end_us <= start_us:
            return out
        last = local_day(end_us - 1, self._zone)
        known = set(self._sealed()) | set(self._open_days())
        recorders: set[str] = set()
        any_day = False
        day = first
        while day <= last:
            if day in known:
                any_day = True
                cap = self.read_day(day)
                for kind in ROW_KINDS:
                    getattr(out, kind).extend(r for r in getattr(cap, kind) if start_us <= r.ts_us < end_us)
                recorders.update(cap.recorders)
                out.segment_hashes.update(cap.segment_hashes)
                out.sealed = out.sealed and cap.sealed
            day = next_day(day)
        out.sealed = out.sealed and any_day
        out.recorders = sorted(recorders)
        return out

    def quarantine_rows(self) -> list[dict[str, Any]]:
        """Every quarantined row: source, row locator, reason, raw excerpt and, when known, day."""
        if not self.quarantine_path.exists():
            return []
        out = []
        for line in _complete_lines(self.quarantine_path.read_bytes()):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    # ------------------------------------------------------------------ verification

    def verify(self) -> VerifyReport:
        """Walk the manifest chain and re-hash every sealed file; report each problem precisely."""
        problems: list[str] = []
        notes: list[str] = []
        entries: list[dict[str, Any]] = []
        raw = self.manifest_path.read_bytes() if self.manifest_path.exists() else b""
        lines = raw.split(b"\n")
        if lines[-1]:
            notes.append("manifest.jsonl ends with an incomplete record (a writer was interrupted)")
        prev: str | None = None
        days_seen: dict[str, int] = {}
        amendments_seen: dict[str, int] = {}
        segments_seen: set[str] = set()
        for lineno, line in enumerate(lines[:-1], start=1):
            where = f"manifest.jsonl line {lineno}"
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict):
                    raise ValueError("not an object")
            except ValueError:
                problems.append(f"{where} is not a valid JSON entry (edited or damaged)")
                prev = None
                continue
            seq = len(entries)
            entries.append(entry)
            day = entry.get("day")
            label = f"{where} (entry {seq}, day {day})"
            if entry.get("seq") != seq:
                problems.append(f"{label}: seq is {entry.get('seq')!r}, expected {seq} (an entry was removed or reordered)")
            if entry.get("prev") != prev:
                problems.append(
                    f"{label}: broken chain link: prev is {entry.get('prev')!r} but the previous entry's hash is {prev!r}"
                )
            recomputed = entry_hash(entry)
            if entry.get("hash") != recomputed:
                problems.append(
                    f"{label}: the entry was edited: its content hashes to {recomputed}, it records {entry.get('hash')!r}"
                )
            prev = entry["hash"] if isinstance(entry.get("hash"), str) else recomputed
            if not isinstance(day, str) or not _is_day(day):
                problems.append(f"{label}: {day!r} is not a day")
                continue
            k = amendment_of(entry)
            expected_k = amendments_seen.get(day, -1) + 1
            if k < 0:
                problems.append(f"{label}: amendment {entry.get('amendment')!r} is not a number")
                continue
            if k != expected_k:
                if k == 0:
                    problems.append(f"{label}: day {day} is sealed twice (first at entry {days_seen[day]})")
                else:
                    problems.append(f"{label}: amendment {k} of day {day} follows "
                                    + (f"amendment {expected_k - 1}" if expected_k else "no sealed segment of that day")
                                    + " (an entry was removed, reordered or forged)")
            amendments_seen[day] = max(k, amendments_seen.get(day, -1))
            if entry.get("tz") != self.tz:
                problems.append(
                    f"{label}: sealed in time zone {entry.get('tz')!r} but the data folder now says {self.tz!r} "
                    f"({self.home.settings_path.name} was edited; day boundaries would move)"
                )
            days_seen.setdefault(day, seq)
            name = segment_name(day, k)
            segments_seen.add(name)
            problems.extend(self._verify_files(label, name, entry.get("files")))
        if self.sealed_dir.exists():
            for child in sorted(self.sealed_dir.iterdir()):
                if child.name in segments_seen:
                    continue
                parsed = parse_segment_name(child.name)
                if child.name.startswith(".") and child.name.endswith(".staging"):
                    notes.append(f"sealed/{child.name}: an unfinished seal (a writer was interrupted)")
                elif parsed is not None and (
                    (self.dir / f".{child.name}.direct").exists()
                    or (parsed[1] == 0 and (self.open_dir / parsed[0]).is_dir())
                ):
                    notes.append(f"sealed/{child.name}: a seal interrupted before its manifest entry")
                else:
                    problems.append(f"sealed/{child.name} is not in the manifest (added by hand, or its entry was removed)")
        # Open segments are not hashed (they still grow), but each line must be a row this version
        # can read: a damaged one is reported here and quarantined when the day is sealed.
        for day in self._open_days():
            for kind in ROW_KINDS:
                for lineno, reason, _text in self._parse_open(self.open_dir / day / f"{kind}.jsonl", kind)[1]:
                    problems.append(f"open/{day}/{kind}.jsonl line {lineno} {reason} "
                                    "(it will be quarantined when the day is sealed)")
        head = entries[-1].get("hash") if entries else None
        return VerifyReport(ok=not problems, problems=problems, entries=len(entries),
                            head=head if isinstance(head, str) else None, notes=notes)

    def _verify_files(self, label: str, day: str, files: Any) -> list[str]:
        """Problems of one sealed segment's folder (``day`` is its folder name) against its entry."""
        folder = self.sealed_dir / day
        if not isinstance(files, dict) or not files:
            return [f"{label}: lists no files"]
        if not folder.is_dir():
            return [f"{label}: the folder sealed/{day} is missing"]
        problems: list[str] = []
        for name in sorted(files):
            meta = files[name]
            rel = f"sealed/{day}/{name}"
            path = folder / name
            if not path.is_file():
                problems.append(f"{label}: file {rel} is missing")
                continue
            expected = meta.get("sha256") if isinstance(meta, dict) else None
            actual = sha256_file(path)
            if actual != expected:
                problems.append(f"{label}: file {rel} was changed: its sha256 is {actual}, the manifest records {expected}")
        for extra in sorted(p.name for p in folder.iterdir() if p.name not in files):
            problems.append(f"{label}: unexpected file sealed/{day}/{extra} in a sealed day")
        return problems


__all__ = ["AppendReport", "DayStatus", "EventLog", "VerifyReport", "entry_hash", "sort_key"]
