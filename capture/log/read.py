"""Reading: a day's rows in one total order, whether open or sealed, first segment or amendment.

A sealed day is read only from files re-hashed against their manifest entries (verified_segments),
so a compile never sees a changed file. Its element trees, most of its rows, can be left unread
and fetched by snapshot when a compile asks (ElementsBySnapshot).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import weakref
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capture.errors import CheckFailed, UserError
from capture.home import Home
from capture.log.files import sha256_file, sql_list
from capture.log.layout import SOURCES_SEALED, amendment_of
from capture.log.manifest import ManifestChain
from capture.log.opensegments import read_open_day
from capture.log.rows import (
    REPEATED,
    ArrowRows,
    ElementColumns,
    arrow_columns,
    arrow_table,
    build_instances,
    column_values,
    in_order,
    order_keys,
    order_keys_of,
)
from capture.log.schema import COLUMNS, NAMES, SELECT_SQL, SORT_SQL
from capture.model import CLASS_OF, ROW_KINDS, DayCapture, SkippedLine, names_no_element
from capture.timeutil import local_day, next_day, parse_day


@dataclass(frozen=True)
class DayStatus:
    day: str
    sealed: bool
    counts: dict[str, int]
    amendments: int = 0  # sealed segments added after the day's first
    skipped: tuple[SkippedLine, ...] = ()  # an open day's lines that are not rows (not in counts)


# Reader threads per process, by task: a day's first columns never wait behind element trees.
_WORKERS = {"rows": 2, "trees": 1}
_BACKGROUND: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_BACKGROUND_LOCK = threading.Lock()


def background(task: str = "rows") -> ThreadPoolExecutor:
    """The process's reader threads for a task ("rows": a day's first columns, "trees": its
    element columns): a sealed read hands them a file to decode (pyarrow holds no GIL
    meanwhile) and goes on with its own work. Made per process: a forked child would inherit
    an executor whose threads it does not have."""
    with _BACKGROUND_LOCK:
        got = _BACKGROUND.get(task)
        if got is None or got[0] != os.getpid():
            got = _BACKGROUND[task] = (os.getpid(), ThreadPoolExecutor(_WORKERS[task], thread_name_prefix=f"af-{task}"))
        return got[1]


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


# Row kinds a read leaves as columns until their rows are asked for (DayCapture.defer_rows): the
# snapshots and the input events, whose columns the compiler reads (DayCapture.values, the
# SnapIndex), so their rows would be most of the objects of a read, made and freed again.
DEFERRED = frozenset({"snapshots", "inputs"})
# The columns of a deferred kind read with the day: what the compiler reads (af_pipeline.compiler:
# attribution, click resolution, the input tally); the others (the recorder's stale app, window
# and URL, element bounds, the input events' refs, ...) are read when the rows or one of those
# columns are asked for (the order check asks for the refs only where two events share a time).
FIRST_COLUMNS = {"inputs": ("ts_us", "kind", "stream", "x", "y", "text", "clipboard_op", "element_role",
                            "element_name"),
                 "snapshots": ("ref", "ts_us", "stream", "app", "window", "url", "heartbeat", "source_frame_id",
                               "end_us")}


# How long prefetch waits for the element read to start, s (longer only when the reader thread
# is still busy with an earlier day's trees: then the read starts when it can).
STARTING_S = 0.002


class SealedElements(ElementsBySnapshot):
    """ElementsBySnapshot of a sealed day, which can also give the day's element rows as columns
    (``columns()``, ElementColumns) when the day is one verified file in log order: click
    resolution then looks at the bounds of every tree with numpy and makes rows only of the
    elements near a click."""

    def __init__(self, count: int, fetch: Callable[[list[str]], dict[str, Any]], path: Path | None):
        super().__init__(count, fetch)
        self._path = path
        self._columns: ElementColumns | None = None
        self._tried = path is None
        self._pending: Future[ElementColumns | None] | None = None

    def prefetch(self) -> None:
        """Start reading the columns in a background thread: a compile that will ask for them
        does its first phases meanwhile. Returns once the file is open and its decoding (which
        holds no GIL) has begun, or after STARTING_S: opening it needs the GIL, and a caller that
        went straight on with Python would keep it waiting for the interpreter's switch interval
        (5 ms)."""
        if not self._tried and self._pending is None and self._path is not None and self.count:
            started = threading.Event()
            self._pending = background("trees").submit(ElementColumns.read, self._path, False, started.set)
            # a capture dropped unasked (a read that never compiled) takes its read off the queue
            weakref.finalize(self, self._pending.cancel)
            started.wait(STARTING_S)

    @property
    def prefetching(self) -> bool:
        """Whether a background read of the columns is under way (or done and not yet asked for)."""
        return self._pending is not None

    def columns(self) -> ElementColumns | None:
        """The day's element columns (read once), None when the day has amendments, an older
        schema or a file out of time order (then of_snapshots is the way)."""
        if not self._tried:
            self._tried = True
            if self._pending is not None:
                self._columns = self._pending.result()
            else:
                self._columns = ElementColumns.read(self._path) if self._path is not None and self.count else None
            self._pending = None
        return self._columns


# what a read says of a sealed file that is not as its manifest entry recorded it
_MISSING = "sealed segment {path} is missing; run `af log verify`"
_CHANGED = "sealed segment {path} no longer matches the sha256 in its manifest entry; run `af log verify`"


def checked_bytes(path: Path, meta: Any) -> bytes:
    """A sealed file's bytes, hashed now and checked against its manifest entry ``meta``
    (CheckFailed when the file is missing or differs)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CheckFailed(_MISSING.format(path=path)) from None
    if not isinstance(meta, dict) or hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        raise CheckFailed(_CHANGED.format(path=path))
    return data


def _first_columns(kind: str, path: Path, data: bytes | None) -> ArrowRows | None:
    """A deferred kind's first columns from one sealed file (its bytes when given), decoded in
    the calling thread alone; None when the file lacks a column of this version or its rows are
    not in the log's order (then SQL reads it)."""
    table = arrow_table(path, kind, REPEATED.get(kind, ()), FIRST_COLUMNS.get(kind), data, use_threads=False)
    if table is None:
        return None
    rows = ArrowRows(kind, table, path, data)

    def key(name: str) -> Any:
        # the times as numpy straight from the file's column: no list of ints made for the check
        got = rows.array(name) if name == "ts_us" else None
        return got if got is not None else rows.values(name)

    return rows if in_order(kind, order_keys_of(kind, key)) else None


def _input_columns(path: Path, meta: Any, trees: SealedElements | None) -> ArrowRows | None:
    """The input events' first columns (_first_columns) from the file's bytes, checked against
    its manifest entry ``meta`` here (checked_bytes); then, when a click among them names no
    element, the element columns' read is started too: compiling the day will resolve that
    click in the trees, and the read overlaps the rest of the day's read and its first phases."""
    rows = _first_columns("inputs", path, checked_bytes(path, meta))
    if rows is not None and trees is not None and _has_anonymous_click(rows):
        trees.prefetch()
    return rows


def _has_anonymous_click(rows: ArrowRows) -> bool:
    import numpy as np

    got = rows.codes("kind")  # the kinds as the file's dictionary: no string per row
    if got is not None:
        codes, kinds = got
        clicks = np.flatnonzero(np.isin(codes, [k for k, v in enumerate(kinds) if v == "click"])).tolist()
    else:
        clicks = [i for i, v in enumerate(rows.values("kind")) if v == "click"]
    return any(map(names_no_element, rows.values_at("element_name", clicks)))


class Reading(ManifestChain):
    """Days, their rows and the SQL relations of sealed days."""

    def __init__(self, home: Home) -> None:
        super().__init__(home)
        self._columns_cache: dict[tuple[str, ...], frozenset[str]] = {}

    def day_names(self) -> list[str]:
        """Every day in the log, sealed or open, oldest first, from the manifest and the open
        folder's names alone: ``days()`` reads each open day whole to count its rows, which the
        watchers that only ask which days exist (sync's announcing, the sensor's tick) paid on
        every pass."""
        return sorted(set(self._sealed()) | set(self._open_days()))

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
            # the rows the open segments' one reader serves; the lines it leaves out apart
            cap = read_open_day(self.open_dir, day, self.tz)
            out.append(DayStatus(day, False, {k: len(getattr(cap, k)) for k in ROW_KINDS}, skipped=tuple(cap.skipped)))
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
        return self._verified(day)[0]

    def _verified(self, day: str, keep: Collection[str] = (), skip: Collection[str] = ()
                  ) -> tuple[dict[str, str], dict[str, bytes]]:
        """verified_segments, and the bytes of the files named in ``keep`` (``<kind>.parquet`` of
        the day's first segment) as hashed: what is parsed is what was checked, with no second
        open of the file in between. The first segment's files in ``skip`` are checked by the
        caller (checked_bytes) and left out."""
        hashes: dict[str, str] = {}
        kept: dict[str, bytes] = {}
        for i, (name, entry) in enumerate(self._segments(day)):
            folder = self.sealed_dir / name
            files: dict[str, Any] = entry["files"] if isinstance(entry.get("files"), dict) else {}
            for fname, meta in sorted(files.items()):
                if i == 0 and fname in skip:
                    continue
                path = folder / fname
                if i == 0 and fname in keep:
                    kept[fname] = checked_bytes(path, meta)
                    hashes[f"sealed/{name}/{fname}"] = meta["sha256"]
                    continue
                if not path.is_file():
                    raise CheckFailed(_MISSING.format(path=path))
                if not isinstance(meta, dict) or sha256_file(path) != meta.get("sha256"):
                    raise CheckFailed(_CHANGED.format(path=path))
                hashes[f"sealed/{name}/{fname}"] = meta["sha256"]
        return hashes, kept

    def sealed_relation(self, day: str, kind: str) -> str:
        """SQL for the rows of one kind of a sealed day, every segment, with the current columns
        (a column that an older capture schema lacked reads as NULL). Not sorted."""
        files = [self.sealed_dir / name / f"{kind}.parquet" for name, _ in self._segments(day)]
        # one file has nothing to unite by name, and its scan is planned faster without it
        rel = f"read_parquet({sql_list(files)}, union_by_name = true)" if len(files) > 1 else f"read_parquet({sql_list(files)})"
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
                rel = f"read_parquet({sql_list(files)}, union_by_name = true)"
                cached = frozenset(r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall())
            self._columns_cache[key] = cached
        return cached

    def _read_sealed(self, day: str, lazy_elements: bool = False) -> DayCapture:
        segments = self._segments(day)
        kinds = ROW_KINDS if not lazy_elements else tuple(k for k in ROW_KINDS if k != "elements")
        # A day of one segment (most days) is read straight from its files by pyarrow, without
        # DuckDB (a third of the cost of a DuckDB scan into numpy for files this small), from the
        # bytes that were hashed. The element trees, the largest file, are not kept in memory.
        single = {k: self.sealed_dir / segments[0][0] / f"{k}.parquet" for k in ROW_KINDS} if len(segments) == 1 else {}
        cap = DayCapture(day=day, tz=self.tz, sealed=True)
        if lazy_elements:
            rows = sum(int(e["files"].get("elements.parquet", {}).get("rows", 0)) for _, e in segments)
            cap.element_source = SealedElements(rows, functools.partial(self._sealed_element_columns, day),
                                                single.get("elements"))
        early: Future[ArrowRows | None] | None = None
        inputs_meta: Any = segments[0][1]["files"].get("inputs.parquet") if single else None
        if inputs_meta is not None:
            # The input events' file is checked and decoded in a background thread while this one
            # checks and decodes the others: hashlib and pyarrow work without the GIL, so the two
            # share the wall time. Its answer (or its CheckFailed) is taken before the read returns.
            trees = cap.element_source if isinstance(cap.element_source, SealedElements) else None
            early = background().submit(_input_columns, single["inputs"], inputs_meta, trees)
        hashes, kept = self._verified(day, [f"{k}.parquet" for k in kinds if k not in ("elements", "inputs")] if single else [],
                                      ["inputs.parquet"] if early is not None else [])
        cap.segment_hashes = hashes
        # a kind the segment's manifest entry counts no row of is not read (the file was hashed)
        counted = segments[0][1]["files"] if single else {}
        for kind in kinds:
            if single and kind not in DEFERRED and counted.get(f"{kind}.parquet", {}).get("rows") == 0:
                setattr(cap, kind, [])
                continue
            if single and kind in DEFERRED:
                if kind == "inputs" and early is not None:
                    deferred = early.result()
                    hashes[f"sealed/{segments[0][0]}/inputs.parquet"] = inputs_meta["sha256"]
                else:
                    deferred = _first_columns(kind, single[kind], kept.get(f"{kind}.parquet"))
                if deferred is not None:
                    cap.defer_rows(kind, deferred)
                    continue
            # (a deferred kind's file was just read: missing a column or out of order, SQL reads it)
            cols = (arrow_columns(single[kind], kind, kept.get(f"{kind}.parquet"), use_threads=kind == "elements")
                    if single and kind not in DEFERRED else None)
            if cols is not None and in_order(kind, order_keys(kind, cols)):
                setattr(cap, kind, build_instances(CLASS_OF[kind], cols))
                continue
            with self._db() as con:
                query = f"SELECT {SELECT_SQL[kind]} FROM {self.sealed_relation(day, kind)}"
                # Sealing writes each file in SORT_SQL order, and the files were just checked against
                # their hashes: a day of one segment is read as stored (one thread keeps file order)
                # and only sorted if the check of the order says otherwise, e.g. for a file sealed
                # under a different order; a day with amendments is merged by the sort.
                data = con.execute(query).fetchnumpy()
                if len(segments) > 1 or not in_order(kind, data):
                    data = con.execute(f"{query} ORDER BY {SORT_SQL[kind]}").fetchnumpy()
            # Column-wise conversion is several times faster than fetchall() on wide days.
            setattr(cap, kind, build_instances(CLASS_OF[kind], [column_values(data[n]) for n in NAMES[kind]]))
        if early is not None:  # the input file's hash in its place, as verified_segments orders them
            cap.segment_hashes = dict(sorted(hashes.items()))
        recorders: set[str] = set()
        for name, _ in segments:
            doc = json.loads((self.sealed_dir / name / SOURCES_SEALED).read_bytes())
            recorders.update(doc.get("recorders", []))
        cap.recorders = sorted(recorders)
        return cap

    def _sealed_element_columns(self, day: str, frame_ids: list[str]) -> dict[str, Any]:
        """The element rows of these snapshots from a sealed day's (hash-checked) segments, in log order."""
        # The semi-join does not keep file order on every day, so the (few) matching rows are
        # sorted in the same query: one pass over the file, where an order check that failed
        # used to cost a second full read.
        query = (
            f"SELECT {SELECT_SQL['elements']} FROM {self.sealed_relation(day, 'elements')} "
            f"WHERE snapshot_frame_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY {SORT_SQL['elements']}"
        )
        with self._db() as con:
            data: dict[str, Any] = con.execute(query, [frame_ids]).fetchnumpy()
        return data

    def _read_open(self, day: str) -> DayCapture:
        """An open day's rows, sorted; the lines the reader left out are in ``skipped``."""
        return read_open_day(self.open_dir, day, self.tz)

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
                out.skipped.extend(cap.skipped)
                out.sealed = out.sealed and cap.sealed
            day = next_day(day)
        out.sealed = out.sealed and any_day
        out.recorders = sorted(recorders)
        return out
