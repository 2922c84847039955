"""Appending: a batch lands row by row into its local days, append-only and idempotent.

A ref already in the log (any day, open or sealed) is skipped: re-importing a source lands
nothing. The same ref with different content is a conflict: the logged row is kept and the new
one quarantined. Rows for a sealed day become an amendment of it; a whole past day arriving at
once is sealed straight from memory; other rows join the day's open segment, each record one
fsync'd line written after the source that brought it.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import operator
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Any

from capture.log.columns import RowColumns, checked, registered
from capture.log.dedup import drop_batch_duplicates
from capture.log.files import (
    append_bytes,
    append_file,
    canonical_json,
    complete_lines,
    fsync_dir,
    fsync_file,
    sql_path,
)
from capture.log.layout import SOURCES_OPEN
from capture.log.opensegments import open_row_chunks, open_sizes
from capture.log.quarantine import Refusals, excerpt, quarantine_key
from capture.log.read import Reading
from capture.log.rows import checked_columns, gc_paused
from capture.log.schema import NAMES, SELECT_SQL, TS_MAX_US, TS_MIN_US
from capture.log.seal import Sealing
from capture.model import CLASS_OF, ROW_KINDS, CaptureBatch
from capture.timeutil import day_bounds, local_day

# The ref of the part of a measured span (an ActivityWatch event) that grew after it was logged:
# "<event ref>~<k>" (see EventLog.continue_grown_spans).
CONTINUATION = "~"
# Above this many new rows of one kind for one day, rows are encoded by DuckDB (C speed) instead of
# row by row in Python; below it, DuckDB is not worth the trip.
BULK_ROWS = 2_000
_TS_OF = attrgetter("ts_us")
_REF_OF = attrgetter("ref")

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


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
    quarantined_new: int = 0  # of quarantined, rows the quarantine did not hold already
    forgotten: int = 0  # rows not landed because their ref was forgotten (af forget), not in skipped


def _refs(rows: Any) -> list[Any]:
    return rows.refs if isinstance(rows, RowColumns) else list(map(_REF_OF, rows))


def _in_set(known: set[str], refs: list[str]) -> list[bool]:
    return [r in known for r in refs]


def _exact(row: Any, cls: type) -> bool:
    return type(row) is cls


def _in_time_order(cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Checked columns in time order (stable: rows of one time keep their batch order), as an open
    segment's lines have always been written; _group leaves a day of checked columns as it came."""
    stamps = cols["ts_us"]
    if all(map(operator.le, stamps, itertools.islice(stamps, 1, None))):
        return cols
    pick = operator.itemgetter(*sorted(range(len(stamps)), key=stamps.__getitem__))  # (two rows or more here)
    return {n: list(pick(col)) for n, col in cols.items()}


class Appending(Sealing, Reading):
    """``append`` and what it needs: grouping by day, conflicts, open-segment writes, grown spans."""

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
        cols, bad = checked_columns(kind, rows)
        out = [(row, f"{kind} row {problem}") for row, problem in bad]
        if not cols["ref"]:
            return out
        names = NAMES[kind]
        if sealed:
            differing: dict[str, list[str]] = {}
            with self._db() as con, registered(con, "incoming_rows", kind, cols) as incoming:
                tests = ", ".join(
                    f"CASE WHEN p.\"{n}\" IS DISTINCT FROM s.\"{n}\" THEN '{n}' END" for n in names if n != "ref"
                )
                found = con.execute(
                    f"SELECT p.ref, concat_ws(',', {tests}) AS diff FROM {incoming} p "
                    f"JOIN {self.sealed_relation(day, kind)} s ON p.ref = s.ref"
                ).fetchall()
            differing = {ref: diff.split(",") for ref, diff in found if diff}
        else:
            # A pass re-reads a few hundred rows below its watermark, each pass: rows equal field
            # for field to a logged one are known by their content digests (OpenRefs) without
            # reading the day again; only the others are compared with the logged rows of their
            # refs, read from the day's file (not its whole rows: they grew with the day).
            given = list(zip(*(cols[n] for n in names), strict=True))
            same = self._open_refs(day).same_rows(kind, given)
            unknown = [v for v, known in zip(given, same, strict=True) if not known]
            wanted = {v[0] for v in unknown}
            stored = {r.ref: r for rows_ in open_row_chunks(self.open_dir / day / f"{kind}.jsonl", kind)
                      for r in rows_ if r.ref in wanted} if wanted else {}
            differing = {}
            for values in unknown:
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

        def store(rows: list[dict[str, Any]]) -> int:
            nonlocal seen
            if seen is None:
                seen = {quarantine_key(r) for r in self.quarantine_rows()}
            return self._append_quarantine(rows, seen)

        refused = Refusals(batch.source_id, store)
        for q in batch.quarantined:
            refused.add(q.reason, row=q.row, raw=q.raw, source=q.source)
        days_sealed: list[str] = []
        amended: list[str] = []
        with gc_paused(), self._writing() as recovered:  # (bulk work: see gc_paused)
            for note in recovered:
                say(f"recovered: {note}")
            batch, forgotten = self._without_forgotten(batch)
            sealed = self._sealed()
            grouped = self._group(batch, refused)
            touched = sorted(grouped)
            skipped += drop_batch_duplicates(grouped)
            # Pass 1: rows whose ref is not yet in their own day.
            candidates: dict[str, dict[str, Any]] = {}
            already_here: set[str] = set()  # days holding some of this batch's rows already
            for day in touched:
                by_kind = grouped.pop(day)
                if day in sealed or (self.open_dir / day).is_dir():
                    # a day the log holds already: row by row, as rows in time order (the rare path)
                    by_kind = {k: sorted(v.rows(), key=_TS_OF) if isinstance(v, RowColumns) else v
                               for k, v in by_kind.items()}
                if day in sealed:
                    day_refs = [row.ref for rows in by_kind.values() for row in rows]
                    sealed_refs = self._sealed_refs(day) if self._sharing_source([day], day_refs) else set()
                    held: Callable[[list[str]], list[bool]] = partial(_in_set, sealed_refs)
                elif (self.open_dir / day).is_dir():
                    held = self._open_refs(day).mask
                else:
                    candidates[day] = by_kind
                    continue
                candidates[day] = {}
                for kind, rows in by_kind.items():
                    here = held([row.ref for row in rows])
                    new = [row for row, h in zip(rows, here, strict=True) if not h]
                    if len(new) < len(rows):
                        already_here.add(day)
                        # Same identity: the same row again (skipped), or a true conflict (refused).
                        again = [row for row, h in zip(rows, here, strict=True) if h]
                        for row, reason in self._conflicts(day, kind, again, day in sealed):
                            refused.add(reason, row=row.ref, raw=excerpt(kind, row), day=day)
                            skipped -= 1
                    skipped += len(rows) - len(new)
                    if new:
                        candidates[day][kind] = new
            # Pass 2: a ref is one row of the log wherever it is; one found on another day is skipped.
            elsewhere = self._refs_in_log([ref for day in candidates.values() for rows in day.values()
                                           for ref in _refs(rows)])
            # Pass 3: refuse rows of sealed days, land the rest day by day.
            for n_done, day in enumerate(touched, start=1):
                by_kind = candidates.pop(day, {})  # drop each day once landed: memory shrinks as we go
                if elsewhere:
                    for kind, rows in list(by_kind.items()):
                        if isinstance(rows, RowColumns):
                            by_kind[kind] = rows.where([ref not in elsewhere for ref in rows.refs])
                        else:
                            by_kind[kind] = [row for row in rows if row.ref not in elsewhere]
                        skipped += len(rows) - len(by_kind[kind])
                head = f"[{n_done}/{len(touched)}] {day}:"
                fresh: dict[str, dict[str, list[Any]]] = {}
                for kind in ROW_KINDS:
                    if kind in by_kind and len(by_kind[kind]):
                        cols, bad = checked(kind, by_kind[kind])
                        for row, reason in bad:
                            refused.add(f"{kind} row {reason}", row=str(row.ref), raw=excerpt(kind, row), day=day)
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
                        self._write_open(folder, kind, _in_time_order(cols))
                    self._ref_cache.pop(day, None)
                    if cached is not None:  # keep a live day's refs: the recorder appends often
                        cached[1].update(ref for cols in fresh.values() for ref in cols["ref"])
                        for kind, cols in fresh.items():
                            cached[1].add_rows(kind, zip(*(cols[n] for n in NAMES[kind]), strict=True))
                        self._ref_cache[day] = (open_sizes(folder), cached[1])
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
            quarantined_new=refused.new,
            forgotten=forgotten,
        )

    def _without_forgotten(self, batch: CaptureBatch) -> tuple[CaptureBatch, int]:
        """The batch without rows whose ref was forgotten (a copy; the caller's is left as is)."""
        if not self.redactions():
            return batch, 0
        dropped = 0
        kept: dict[str, Any] = {}
        for kind in ROW_KINDS:
            rows = batch.rows(kind)
            if not len(rows):
                continue
            gone = self.forgotten_mask(_refs(rows))
            spans = self.forgotten_days()
            if spans:
                starts = [lo for lo, _ in spans]
                stamps = rows.cols["ts_us"] if isinstance(rows, RowColumns) else list(map(_TS_OF, rows))
                for i, ts in enumerate(stamps):
                    j = bisect.bisect_right(starts, ts) - 1 if type(ts) is int else -1
                    if j >= 0 and ts < spans[j][1]:
                        gone[i] = True
            if any(gone):
                keep = [not g for g in gone]
                kept[kind] = rows.where(keep) if isinstance(rows, RowColumns) else list(itertools.compress(rows, keep))
                dropped += len(rows) - len(kept[kind])
        return (dataclasses.replace(batch, **kept) if kept else batch), dropped

    def _group(self, batch: CaptureBatch, refused: Refusals) -> dict[str, dict[str, Any]]:
        """Rows by local day and kind; rows without a usable ref, time or type are refused.

        A kind given as columns (RowColumns) stays columns: sorted and sliced as columns."""
        out: dict[str, dict[str, Any]] = {}
        for kind in ROW_KINDS:
            given = batch.rows(kind)
            rows: Any
            if isinstance(given, RowColumns):
                rows = self._usable_columns(kind, given, refused)
                stamps = rows.cols["ts_us"]
                if (rows.verified and stamps
                        and local_day(min(stamps), self._zone) == local_day(max(stamps), self._zone)):
                    # One local day of checked columns (an importer's day batch) is landed as it
                    # is: the seal writes SORT_SQL order and reads of an open day sort, so putting
                    # 12 columns in time order here (1.5 s of a 61-day import) bought nothing.
                    # Duplicates are still resolved in time order (drop_batch_duplicates).
                    out.setdefault(local_day(stamps[0], self._zone), {})[kind] = rows
                    continue
                if not all(map(operator.le, stamps, itertools.islice(stamps, 1, None))):
                    import numpy as np

                    # stable, as list.sort: rows of one time keep their batch order
                    rows = rows.take(np.argsort(np.asarray(stamps, dtype=np.int64), kind="stable").tolist())
                    stamps = rows.cols["ts_us"]
            else:
                rows = self._usable(kind, given, refused)
                stamps = list(map(_TS_OF, rows))
                if not all(map(operator.le, stamps, itertools.islice(stamps, 1, None))):
                    rows.sort(key=_TS_OF)
                    stamps.sort()
            if not len(rows):
                continue
            # Sorted by time: each local day is one slice, found by bisecting at the day's end.
            i = 0
            while i < len(rows):
                day = local_day(stamps[i], self._zone)
                end = bisect.bisect_left(stamps, day_bounds(day, self._zone)[1], lo=i)
                out.setdefault(day, {})[kind] = rows.slice(i, end) if isinstance(rows, RowColumns) else rows[i:end]
                i = end
        return out

    def _usable_columns(self, kind: str, rows: RowColumns, refused: Refusals) -> Any:
        """_usable for rows given as columns: the columns as they are when every ref and time is
        usable (checked at C speed), else the row objects that pass _usable."""
        refs, stamps = rows.cols["ref"], rows.cols["ts_us"]
        if (
            set(map(type, refs)) <= {str}
            and "" not in refs
            and set(map(type, stamps)) <= {int}
            and (not stamps or (TS_MIN_US <= min(stamps) and max(stamps) < TS_MAX_US))
        ):
            return rows
        return RowColumns.from_rows(kind, self._usable(kind, rows.rows(), refused))

    @staticmethod
    def _usable(kind: str, rows: list[Any], refused: Refusals) -> list[Any]:
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
                refused.add(f"{kind} row has no ref", row=f"{kind}[{i}]", raw=excerpt(kind, row))
            elif type(ts) is not int or not TS_MIN_US <= ts < TS_MAX_US:
                refused.add(f"{kind} row has no usable ts_us (a time between 1990 and 2100)", row=ref,
                            raw=excerpt(kind, row))
            else:
                good.append(row)
        return good

    def _write_open(self, folder: Path, kind: str, cols: dict[str, list[Any]]) -> None:
        """Append checked rows to an open segment (fsync'd)."""
        target = folder / f"{kind}.jsonl"
        if len(cols["ref"]) >= BULK_ROWS:
            pending = folder / f".{kind}.pending"
            with self._db() as con, registered(con, "pending_rows", kind, cols) as rows:
                con.execute(f"COPY (SELECT {SELECT_SQL[kind]} FROM {rows}) TO '{sql_path(pending)}' (FORMAT json)")
            if not target.exists():
                fsync_file(pending)
                os.rename(pending, target)
                fsync_dir(folder)
            else:
                append_file(pending, target)
                pending.unlink()
            return
        names = NAMES[kind]
        lines = [_encode(dict(zip(names, values, strict=True))) for values in zip(*(cols[n] for n in names), strict=True)]
        append_bytes(target, ("\n".join(lines) + "\n").encode("utf-8"))

    def _note_source(self, folder: Path, batch: CaptureBatch) -> None:
        path = folder / SOURCES_OPEN
        record = {"source_id": batch.source_id, "recorder": batch.recorder}
        if path.exists() and any(json.loads(ln) == record for ln in complete_lines(path.read_bytes())):
            return
        append_bytes(path, canonical_json(record) + b"\n")
