"""The capture event log: append-only, one segment per local day, sealed and hash-chained.

Layout under ``<home>/log/`` (see docs/event-log.md for the user-facing description)::

    open/<day>/<kind>.jsonl        rows of a day still open, one JSON object a line (fsync'd)
    open/<day>/sources.jsonl       which source / recorder contributed to that day
    sealed/<day>/<kind>.parquet    a sealed day: one Parquet file per row kind, sorted, never rewritten
    sealed/<day>/sources.json      the sealed day's sources and recorders
    manifest.jsonl                 one entry per sealed day, each chained to the previous by sha256
    quarantine.jsonl               rows that could not land, with their reason
    .lock                          held (flock) by the one process writing

A day is sealed exactly when the manifest has an entry for it. Every write is ordered so that a
process killed at any instant leaves a log that reads correctly and that the next writer repairs:
an open segment's torn last line is cut back to the last complete record, a half-finished seal is
either finished (the manifest entry was written) or forgotten (it was not).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from capture.errors import CheckFailed, UserError
from capture.home import Home
from capture.model import (
    CAPTURE_SCHEMA_VERSION,
    CLASS_OF,
    ROW_KINDS,
    CaptureBatch,
    DayCapture,
    Quarantined,
)
from capture.timeutil import day_bounds, iso_utc, local_day, parse_day, zone

MANIFEST = "manifest.jsonl"
QUARANTINE = "quarantine.jsonl"
LOCK = ".lock"
SOURCES_OPEN = "sources.jsonl"
SOURCES_SEALED = "sources.json"
RAW_EXCERPT = 500  # characters of a refused row kept in the quarantine for a human to read
HOUR_US = 3_600 * 1_000_000

# Total sort keys per row kind: the order read_day returns and the order sealed files are written.
SORT_SQL: dict[str, str] = {
    "snapshots": "ts_us, COALESCE(stream, ''), ref",
    "inputs": "ts_us, COALESCE(stream, ''), ref",
    "elements": "ts_us, snapshot_frame_id, ref",
    "presence": "ts_us, ref",
    "streams": "ts_us, ref",
}


def _sort_key(kind: str) -> Callable[[Any], tuple[Any, ...]]:
    if kind in ("snapshots", "inputs"):
        return lambda r: (r.ts_us, r.stream or "", r.ref)
    if kind == "elements":
        return lambda r: (r.ts_us, r.snapshot_frame_id, r.ref)
    return lambda r: (r.ts_us, r.ref)


def _column_types(cls: type) -> dict[str, str]:
    """DuckDB column types of a capture dataclass, in field order."""
    hints = typing.get_type_hints(cls)
    out: dict[str, str] = {}
    for f in fields(cls):
        args = [a for a in typing.get_args(hints[f.name]) if a is not type(None)] or [hints[f.name]]
        base = args[0]
        out[f.name] = {bool: "BOOLEAN", int: "BIGINT", float: "DOUBLE"}.get(base, "VARCHAR")
    return out


COLUMNS: dict[str, dict[str, str]] = {kind: _column_types(CLASS_OF[kind]) for kind in ROW_KINDS}
NAMES: dict[str, tuple[str, ...]] = {kind: tuple(COLUMNS[kind]) for kind in ROW_KINDS}
# Quoted column lists for SQL ("window" is a reserved word in DuckDB).
SELECT_SQL: dict[str, str] = {kind: ", ".join(f'"{n}"' for n in NAMES[kind]) for kind in ROW_KINDS}
# Fields that must be present (not None) in every row of a kind.
_REQUIRED: dict[str, tuple[str, ...]] = {
    kind: tuple(
        f.name
        for f in fields(CLASS_OF[kind])
        if "None" not in str(f.type)
    )
    for kind in ROW_KINDS
}
_PY_TYPES = {"BOOLEAN": (bool,), "BIGINT": (int,), "DOUBLE": (float, int), "VARCHAR": (str,)}
_INT64 = (-(2**63), 2**63)

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


@dataclass(frozen=True)
class DayStatus:
    day: str
    sealed: bool
    counts: dict[str, int]


@dataclass
class AppendReport:
    landed: dict[str, int]
    skipped: int
    quarantined: int
    quarantine_reasons: dict[str, int]
    days_touched: list[str]
    days_sealed: list[str]
    recovered: list[str] = field(default_factory=list)  # repairs made after an earlier crash


@dataclass
class VerifyReport:
    ok: bool
    problems: list[str]
    entries: int
    head: str | None
    notes: list[str] = field(default_factory=list)  # not tampering: e.g. a seal left half-done by a crash


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def entry_hash(entry: dict[str, Any]) -> str:
    """sha256 of a manifest entry's canonical JSON without its own ``hash`` field."""
    return hashlib.sha256(_canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _append_lines(path: Path, lines: list[bytes]) -> None:
    """Append whole lines and fsync, so a record is either fully on disk or recoverable as torn."""
    if not lines:
        return
    new = not path.exists()
    with open(path, "ab") as fh:
        fh.write(b"".join(lines))
        fh.flush()
        os.fsync(fh.fileno())
    if new:
        _fsync_dir(path.parent)


def _complete_lines(data: bytes) -> list[bytes]:
    """The complete lines of a JSON-lines file; a torn tail (no final newline) is ignored."""
    end = data.rfind(b"\n")
    if end < 0:
        return []
    return [ln for ln in data[: end + 1].split(b"\n") if ln]


def _truncate_torn_tail(path: Path) -> int:
    """Cut a file back to its last newline; return the number of bytes removed."""
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        # Walk back to the previous newline in blocks (records are small, a few KB at most).
        pos = size
        keep = 0
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            fh.seek(pos)
            block = fh.read(step)
            idx = block.rfind(b"\n")
            if idx >= 0:
                keep = pos + idx + 1
                break
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
        return size - keep


class _DayOf:
    """Local day of a timestamp; rows arrive mostly in time order, so the last day's bounds hit."""

    def __init__(self, tz: ZoneInfo):
        self.tz = tz
        self.start = 0
        self.end = 0
        self.day = ""

    def __call__(self, ts_us: int) -> str:
        if self.start <= ts_us < self.end:
            return self.day
        day = local_day(ts_us, self.tz)
        self.start, self.end = day_bounds(day, self.tz)
        self.day = day
        return day


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
        self._lock_fh: Any = None
        # Refs of open days already seen by this process, keyed by day, valid while file sizes match.
        self._ref_cache: dict[str, tuple[tuple[int, ...], set[str]]] = {}

    # ------------------------------------------------------------------ locking and recovery

    @contextmanager
    def _writing(self) -> Iterator[list[str]]:
        """Hold the writer lock (re-entrant within this object); yield the recovery notes."""
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield []
            finally:
                self._lock_depth -= 1
            return
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
        fh.write(f"pid {os.getpid()}\n")
        fh.flush()
        self._lock_fh = fh
        self._lock_depth = 1
        try:
            yield self._recover()
        finally:
            self._lock_depth = 0
            self._lock_fh = None
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
        sealed_days = {e["day"] for e in self._entries()}
        if self.sealed_dir.exists():
            for child in sorted(self.sealed_dir.iterdir()):
                if child.name.startswith(".") and child.name.endswith(".staging"):
                    shutil.rmtree(child)
                    notes.append(f"removed an unfinished seal of {child.name[1:-8]}")
                elif child.is_dir() and child.name not in sealed_days and (self.open_dir / child.name).is_dir():
                    # Renamed into place but the manifest entry never landed: the open segment is
                    # still the truth, the day will seal again.
                    shutil.rmtree(child)
                    notes.append(f"day {child.name}: undid a seal interrupted before its manifest entry")
        if self.open_dir.exists():
            for child in sorted(self.open_dir.iterdir()):
                if not child.is_dir():
                    continue
                if child.name in sealed_days:
                    shutil.rmtree(child)
                    notes.append(f"day {child.name}: removed the open segment of a day already sealed")
                    continue
                for f in sorted(child.glob("*.jsonl")):
                    cut = _truncate_torn_tail(f)
                    if cut:
                        notes.append(
                            f"day {child.name}: {f.name}: removed an incomplete last record ({cut} bytes)"
                        )
        if notes:
            self._ref_cache.clear()
        return notes

    # ------------------------------------------------------------------ manifest

    def _entries(self) -> list[dict[str, Any]]:
        if not self.manifest_path.exists():
            return []
        out = []
        for line in _complete_lines(self.manifest_path.read_bytes()):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # verify() reports it; readers keep going on the rest
        return [e for e in out if isinstance(e, dict) and isinstance(e.get("day"), str)]

    def _sealed(self) -> dict[str, dict[str, Any]]:
        return {e["day"]: e for e in self._entries()}

    def manifest(self) -> list[dict[str, Any]]:
        return self._entries()

    def chain_head(self) -> str | None:
        entries = self._entries()
        return str(entries[-1]["hash"]) if entries else None

    # ------------------------------------------------------------------ append

    def _open_refs(self, day: str) -> set[str]:
        folder = self.open_dir / day
        files = [folder / f"{k}.jsonl" for k in ROW_KINDS]
        sizes = tuple(f.stat().st_size if f.exists() else -1 for f in files)
        cached = self._ref_cache.get(day)
        if cached and cached[0] == sizes:
            return cached[1]
        refs: set[str] = set()
        for f in files:
            if f.exists():
                for line in _complete_lines(f.read_bytes()):
                    refs.add(json.loads(line)["ref"])
        self._ref_cache[day] = (sizes, refs)
        return refs

    def _sealed_refs(self, day: str) -> set[str]:
        paths = self.segment_paths(day)
        if not paths:
            return set()
        files = ", ".join(f"'{p}'" for p in paths.values())
        con = duckdb.connect()
        try:
            return {r[0] for r in con.execute(f"SELECT ref FROM read_parquet([{files}])").fetchall()}
        finally:
            con.close()

    def append(
        self,
        batch: CaptureBatch,
        *,
        now_us: int | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> AppendReport:
        """Land a batch: new refs are appended to their local day, known refs are skipped."""
        now = time.time_ns() // 1000 if now_us is None else now_us
        say = progress or (lambda _msg: None)
        landed = dict.fromkeys(ROW_KINDS, 0)
        skipped = 0
        reasons: dict[str, int] = {}
        quarantine: list[dict[str, Any]] = [
            {"source": q.source, "row": q.row, "reason": q.reason, "raw": q.raw, "source_id": batch.source_id}
            for q in batch.quarantined
        ]
        for q in batch.quarantined:
            reasons[q.reason] = reasons.get(q.reason, 0) + 1
        with self._writing() as recovered:
            for note in recovered:
                say(f"recovered: {note}")
            sealed = self._sealed()
            by_day = self._split_by_day(batch, quarantine, reasons)
            for day in sorted(by_day):
                kinds = by_day[day]
                if day in sealed:
                    known = self._sealed_refs(day)
                    refused = 0
                    for kind in ROW_KINDS:
                        for ref, line in kinds.get(kind, []):
                            if ref in known:
                                skipped += 1
                                continue
                            known.add(ref)
                            refused += 1
                            reason = f"day {day} is sealed"
                            reasons[reason] = reasons.get(reason, 0) + 1
                            quarantine.append(
                                {
                                    "source": batch.source_id,
                                    "row": ref,
                                    "reason": reason,
                                    "raw": line.decode("utf-8")[:RAW_EXCERPT],
                                    "day": day,
                                    "source_id": batch.source_id,
                                }
                            )
                    if refused:
                        say(f"{day}: sealed, {refused} new rows refused into the quarantine")
                    continue
                folder = self.open_dir / day
                folder.mkdir(parents=True, exist_ok=True)
                known = self._open_refs(day)
                n_day = 0
                for kind in ROW_KINDS:
                    fresh: list[bytes] = []
                    for ref, line in kinds.get(kind, []):
                        if ref in known:
                            skipped += 1
                            continue
                        known.add(ref)
                        fresh.append(line)
                    _append_lines(folder / f"{kind}.jsonl", fresh)
                    landed[kind] += len(fresh)
                    n_day += len(fresh)
                self._note_source(folder, batch)
                self._ref_cache.pop(day, None)  # sizes changed; next call re-reads or re-caches
                self._ref_cache[day] = (
                    tuple(
                        (folder / f"{k}.jsonl").stat().st_size if (folder / f"{k}.jsonl").exists() else -1
                        for k in ROW_KINDS
                    ),
                    known,
                )
                say(f"{day}: {n_day} rows landed")
            if quarantine:
                self._append_quarantine(quarantine)
            days_sealed = self.seal_due(now)
        return AppendReport(
            landed=landed,
            skipped=skipped,
            quarantined=len(quarantine),
            quarantine_reasons=dict(sorted(reasons.items())),
            days_touched=sorted(by_day),
            days_sealed=days_sealed,
            recovered=recovered,
        )

    def _split_by_day(
        self, batch: CaptureBatch, quarantine: list[dict[str, Any]], reasons: dict[str, int]
    ) -> dict[str, dict[str, list[tuple[str, bytes]]]]:
        """Encode each row as one JSON line and group by local day; unusable rows go to quarantine."""
        day_of = _DayOf(self._zone)
        out: dict[str, dict[str, list[tuple[str, bytes]]]] = {}
        for kind in ROW_KINDS:
            names = NAMES[kind]
            types = [(n, _PY_TYPES[t]) for n, t in COLUMNS[kind].items()]
            doubles = [n for n, t in COLUMNS[kind].items() if t == "DOUBLE"]
            required = _REQUIRED[kind]
            for i, row in enumerate(batch.rows(kind)):
                values = {n: getattr(row, n) for n in names}
                for n in doubles:  # 0 and 0.0 must read back the same from open and sealed days
                    if type(values[n]) is int:
                        values[n] = float(values[n])
                problem = _check(values, types, required)
                line = b""
                if problem is None:
                    try:
                        line = (_encode(values) + "\n").encode("utf-8")
                    except (UnicodeEncodeError, ValueError) as exc:
                        problem = f"a value cannot be stored ({type(exc).__name__}: {str(exc)[:80]})"
                if problem is not None:
                    reason = f"{kind} row {problem}"
                    reasons[reason] = reasons.get(reason, 0) + 1
                    quarantine.append(
                        {
                            "source": batch.source_id,
                            "row": str(values.get("ref") or f"{kind}[{i}]"),
                            "reason": reason,
                            "raw": repr(values)[:RAW_EXCERPT],
                            "source_id": batch.source_id,
                        }
                    )
                    continue
                day = day_of(values["ts_us"])
                out.setdefault(day, {}).setdefault(kind, []).append((values["ref"], line))
        return out

    def _note_source(self, folder: Path, batch: CaptureBatch) -> None:
        path = folder / SOURCES_OPEN
        record = {"source_id": batch.source_id, "recorder": batch.recorder}
        if path.exists():
            for line in _complete_lines(path.read_bytes()):
                if json.loads(line) == record:
                    return
        _append_lines(path, [_canonical(record) + b"\n"])

    def _append_quarantine(self, rows: list[dict[str, Any]]) -> None:
        """Store quarantined rows once: re-importing the same source does not repeat them."""
        self.dir.mkdir(parents=True, exist_ok=True)
        seen = {_quarantine_key(r) for r in self.quarantine_rows()}
        fresh: list[bytes] = []
        for r in rows:
            key = _quarantine_key(r)
            if key not in seen:
                seen.add(key)
                fresh.append(_canonical(r) + b"\n")
        _append_lines(self.quarantine_path, fresh)

    # ------------------------------------------------------------------ sealing

    def _open_days(self) -> list[str]:
        if not self.open_dir.exists():
            return []
        sealed = self._sealed()
        return sorted(
            c.name for c in self.open_dir.iterdir() if c.is_dir() and c.name not in sealed and _is_day(c.name)
        )

    def seal_due(self, now_us: int | None = None) -> list[str]:
        """Seal every open day whose local end plus the grace period is before now."""
        now = time.time_ns() // 1000 if now_us is None else now_us
        grace = int(round(self.grace_hours * HOUR_US))
        done = []
        with self._writing():
            for day in self._open_days():
                if day_bounds(day, self._zone)[1] + grace < now and self.seal(day):
                    done.append(day)
        return done

    def seal(self, day: str) -> bool:
        """Seal one day now. True if it sealed, False if it was already sealed."""
        try:
            parse_day(day)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        with self._writing():
            if day in self._sealed():
                return False
            folder = self.open_dir / day
            if not folder.is_dir() or not any(
                (folder / f"{k}.jsonl").exists() and (folder / f"{k}.jsonl").stat().st_size for k in ROW_KINDS
            ):
                raise UserError(f"there is no capture for {day} in the event log at {self.dir}; nothing to seal")
            final = self.sealed_dir / day
            if final.exists():
                raise UserError(
                    f"{final} exists but the manifest has no entry for {day}; "
                    "the log was changed by hand (run `af log verify`)"
                )
            staging = self.sealed_dir / f".{day}.staging"
            if staging.exists():
                shutil.rmtree(staging)
            staging.mkdir(parents=True)
            files: dict[str, dict[str, Any]] = {}
            con = duckdb.connect()
            try:
                con.execute("SET threads = 1")  # one writer thread: the same rows give the same bytes
                for kind in ROW_KINDS:
                    src = folder / f"{kind}.jsonl"
                    if not src.exists():
                        src.touch()
                    dst = staging / f"{kind}.parquet"
                    cols = SELECT_SQL[kind]
                    (rows,) = con.execute(
                        f"COPY (SELECT {cols} FROM read_json('{_sql_path(src)}', format = 'newline_delimited', "
                        f"columns = {COLUMNS[kind]!r}) ORDER BY {SORT_SQL[kind]}) "
                        f"TO '{_sql_path(dst)}' (FORMAT parquet, COMPRESSION zstd)"
                    ).fetchone() or (0,)
                    files[dst.name] = {"rows": int(rows)}
            finally:
                con.close()
            sources = []
            if (folder / SOURCES_OPEN).exists():
                sources = [json.loads(ln) for ln in _complete_lines((folder / SOURCES_OPEN).read_bytes())]
            sources = sorted({(s["source_id"], s["recorder"]) for s in sources})
            doc = {
                "day": day,
                "recorders": sorted({r for _, r in sources}),
                "sources": [{"source_id": s, "recorder": r} for s, r in sources],
            }
            (staging / SOURCES_SEALED).write_bytes(_canonical(doc) + b"\n")
            files[SOURCES_SEALED] = {"rows": len(sources)}
            for name in files:
                with open(staging / name, "rb+") as fh:
                    os.fsync(fh.fileno())
                files[name]["sha256"] = _sha256_file(staging / name)
            _fsync_dir(staging)
            os.rename(staging, final)
            _fsync_dir(self.sealed_dir)
            entries = self._entries()
            prev = entries[-1]["hash"] if entries else None
            entry: dict[str, Any] = {
                "seq": len(entries),
                "day": day,
                "tz": self.tz,
                "capture_schema": CAPTURE_SCHEMA_VERSION,
                "files": dict(sorted(files.items())),
                "sealed_at": iso_utc(time.time_ns() // 1000),
                "prev": prev,
            }
            entry["hash"] = entry_hash(entry)
            _append_lines(self.manifest_path, [_canonical(entry) + b"\n"])
            shutil.rmtree(folder)
            self._ref_cache.pop(day, None)
            return True

    # ------------------------------------------------------------------ reading

    def days(self) -> list[DayStatus]:
        out: list[DayStatus] = []
        sealed = self._sealed()
        for day, entry in sealed.items():
            counts = {k: int(entry["files"].get(f"{k}.parquet", {}).get("rows", 0)) for k in ROW_KINDS}
            out.append(DayStatus(day, True, counts))
        for day in self._open_days():
            counts = {}
            for k in ROW_KINDS:
                f = self.open_dir / day / f"{k}.jsonl"
                counts[k] = len(_complete_lines(f.read_bytes())) if f.exists() else 0
            out.append(DayStatus(day, False, counts))
        return sorted(out, key=lambda s: s.day)

    def segment_paths(self, day: str) -> dict[str, Path]:
        entry = self._sealed().get(day)
        if entry is None:
            return {}
        return {k: self.sealed_dir / day / f"{k}.parquet" for k in ROW_KINDS}

    def read_day(self, day: str) -> DayCapture:
        try:
            parse_day(day)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        entry = self._sealed().get(day)
        if entry is not None:
            return self._read_sealed(day, entry)
        return self._read_open(day)

    def _read_sealed(self, day: str, entry: dict[str, Any]) -> DayCapture:
        folder = self.sealed_dir / day
        hashes: dict[str, str] = {}
        for name, meta in sorted(entry["files"].items()):
            path = folder / name
            if not path.exists():
                raise CheckFailed(f"sealed segment {path} is missing; run `af log verify`")
            actual = _sha256_file(path)
            if actual != meta.get("sha256"):
                raise CheckFailed(
                    f"sealed segment {path} does not match the sha256 its manifest entry records; "
                    "run `af log verify`"
                )
            hashes[f"sealed/{day}/{name}"] = actual
        cap = DayCapture(day=day, tz=self.tz, sealed=True, segment_hashes=hashes)
        con = duckdb.connect()
        try:
            for kind in ROW_KINDS:
                cls = CLASS_OF[kind]
                rows = con.execute(
                    f"SELECT {SELECT_SQL[kind]} FROM read_parquet('{_sql_path(folder / f'{kind}.parquet')}') "
                    f"ORDER BY {SORT_SQL[kind]}"
                ).fetchall()
                setattr(cap, kind, [cls(*r) for r in rows])
        finally:
            con.close()
        doc = json.loads((folder / SOURCES_SEALED).read_bytes())
        cap.recorders = sorted(doc.get("recorders", []))
        return cap

    def _read_open(self, day: str) -> DayCapture:
        folder = self.open_dir / day
        cap = DayCapture(day=day, tz=self.tz, sealed=False)
        if not folder.is_dir():
            return cap
        for kind in ROW_KINDS:
            f = folder / f"{kind}.jsonl"
            if not f.exists():
                continue
            cls = CLASS_OF[kind]
            rows = [cls(**json.loads(line)) for line in _complete_lines(f.read_bytes())]
            rows.sort(key=_sort_key(kind))
            setattr(cap, kind, rows)
        src = folder / SOURCES_OPEN
        if src.exists():
            cap.recorders = sorted({json.loads(ln)["recorder"] for ln in _complete_lines(src.read_bytes())})
        return cap

    def read_range(self, start_us: int, end_us: int) -> DayCapture:
        """Rows with start_us <= ts_us < end_us, across days; ``day`` is the local day of start."""
        first = local_day(start_us, self._zone)
        out = DayCapture(day=first, tz=self.tz, sealed=True)
        if end_us <= start_us:
            return out
        last = local_day(end_us - 1, self._zone)
        known = {s.day for s in self.days()}
        recorders: set[str] = set()
        day = first
        while day <= last:
            if day in known:
                cap = self.read_day(day)
                for kind in ROW_KINDS:
                    getattr(out, kind).extend(r for r in getattr(cap, kind) if start_us <= r.ts_us < end_us)
                recorders.update(cap.recorders)
                out.segment_hashes.update(cap.segment_hashes)
                out.sealed = out.sealed and cap.sealed
            day = _next_day(day)
        out.recorders = sorted(recorders)
        return out

    def quarantine_rows(self) -> list[dict[str, Any]]:
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
        problems: list[str] = []
        notes: list[str] = []
        entries: list[dict[str, Any]] = []
        raw = self.manifest_path.read_bytes() if self.manifest_path.exists() else b""
        lines = raw.split(b"\n")
        torn = lines[-1] != b""
        if torn:
            notes.append("manifest.jsonl ends with an incomplete record (a writer was interrupted)")
        prev: str | None = None
        days_seen: dict[str, int] = {}
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
            if entry.get("prev") != (prev if seq else None):
                problems.append(
                    f"{label}: broken chain link, prev is {entry.get('prev')!r} but the previous entry's hash is {prev!r}"
                )
            recomputed = entry_hash(entry)
            if entry.get("hash") != recomputed:
                problems.append(
                    f"{label}: the entry was edited, its content hashes to {recomputed} but it records {entry.get('hash')!r}"
                )
            prev = entry.get("hash") if isinstance(entry.get("hash"), str) else recomputed
            if not isinstance(day, str) or not _is_day(day):
                problems.append(f"{label}: day {day!r} is not a day")
                continue
            if day in days_seen:
                problems.append(f"{label}: day {day} is sealed twice (first at entry {days_seen[day]})")
            days_seen[day] = seq
            problems.extend(self._verify_files(label, day, entry.get("files")))
        if self.sealed_dir.exists():
            for child in sorted(self.sealed_dir.iterdir()):
                if child.name in days_seen:
                    continue
                if child.name.startswith(".") and child.name.endswith(".staging"):
                    notes.append(f"sealed/{child.name}: an unfinished seal (a writer was interrupted)")
                elif child.is_dir() and (self.open_dir / child.name).is_dir():
                    notes.append(f"sealed/{child.name}: a seal interrupted before its manifest entry")
                else:
                    problems.append(f"sealed/{child.name} is not in the manifest (added by hand or its entry was removed)")
        head = entries[-1].get("hash") if entries else None
        return VerifyReport(ok=not problems, problems=problems, entries=len(entries), head=head, notes=notes)

    def _verify_files(self, label: str, day: str, files: Any) -> list[str]:
        problems: list[str] = []
        folder = self.sealed_dir / day
        if not isinstance(files, dict) or not files:
            return [f"{label}: lists no files"]
        if not folder.is_dir():
            return [f"{label}: the folder sealed/{day} is missing"]
        for name in sorted(files):
            meta = files[name]
            path = folder / name
            rel = f"sealed/{day}/{name}"
            if not path.is_file():
                problems.append(f"{label}: file {rel} is missing")
                continue
            actual = _sha256_file(path)
            expected = meta.get("sha256") if isinstance(meta, dict) else None
            if actual != expected:
                problems.append(f"{label}: file {rel} was changed, sha256 is {actual}, the manifest records {expected}")
        for extra in sorted(p.name for p in folder.iterdir()):
            if extra not in files:
                problems.append(f"{label}: unexpected file sealed/{day}/{extra} in a sealed day")
        return problems


def _quarantine_key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(row.get("source_id")), str(row.get("source")), str(row.get("row")), str(row.get("reason")))


def _is_day(name: str) -> bool:
    try:
        parse_day(name)
    except ValueError:
        return False
    return len(name) == 10


def _next_day(day: str) -> str:
    from datetime import timedelta

    return (parse_day(day) + timedelta(days=1)).isoformat()


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _check(values: dict[str, Any], types: list[tuple[str, tuple[type, ...]]], required: tuple[str, ...]) -> str | None:
    """Why a row cannot be stored, or None. Cheap: type checks only."""
    for name in required:
        if values[name] is None:
            return f"has no {name}"
    for name, allowed in types:
        v = values[name]
        if v is None:
            continue
        if type(v) not in allowed:
            return f"field {name} is {type(v).__name__}, not {allowed[0].__name__}"
        if type(v) is int and not _INT64[0] <= v < _INT64[1]:
            return f"field {name} = {v} is out of range"
    if not values["ref"]:
        return "has an empty ref"
    return None


__all__ = ["AppendReport", "DayStatus", "EventLog", "Quarantined", "VerifyReport", "entry_hash"]
