"""What capture tools do to their own databases, and how each captured event still lands once.

A screenpipe row's ref is ``<source id>:<table>:<row id>``: cheap, and exact while the database
only grows. Two things screenpipe (and its users) do break that, and are handled here:

- **Retention** deletes the oldest rows. The source id hashes the first frame row, so it changes,
  and every remaining row would come back under new refs. A database whose current first rows
  are in the log under an earlier source id, with the same times, is that source with its
  oldest rows deleted: it keeps the earlier id (:func:`retained_source`), so its refs stay.
- **A rollback or restore** puts back an older copy; screenpipe then writes new rows under ids
  the log already holds for other events. A pass notices that the rows at its last watermark
  changed (:func:`tails_changed`) and reads the database whole; a row whose ref the log holds
  for an event at another time is a different event, and lands under
  ``<ref>@<start us>`` (:func:`rekey_reused_ids`) with its elements and input links. The same
  ref at the same time is the same event: skipped (or, if its content differs, a conflict).

Rules (units in the names): RETENTION_PROBE_ROWS first frames are looked up in the log; the
lowest one present must be there at the same time, under its ref or rekeyed (none present, or
another time: another database).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any
from zoneinfo import ZoneInfo

from capture.log import EventLog
from capture.log.columns import RowColumns
from capture.model import CaptureBatch
from capture.timeutil import local_day

REUSED = "@"  # <ref>@<start us>: an event under a row id the source used before for another
RETENTION_PROBE_ROWS = 8  # first frames of the database looked up in the log


def _logged_times(log: EventLog, refs: Iterable[tuple[str, int]], tz: str) -> dict[str, int]:
    """ref -> ts_us of the logged snapshot or input of each (ref, time): looked up on the local
    day of the given time (a ref logged on another day is another time: absent here)."""
    zone = ZoneInfo(tz)
    wanted: dict[str, set[str]] = {}
    for ref, ts in refs:
        wanted.setdefault(local_day(ts, zone), set()).add(ref)
    found: dict[str, int] = {}
    days = {d.day for d in log.days()}
    for day, names in sorted(wanted.items()):
        if day not in days:
            continue
        cap = log.read_day(day, lazy_elements=True)
        for kind in ("snapshots", "inputs"):
            for row in getattr(cap, kind):
                if row.ref in names:
                    found[row.ref] = row.ts_us
    return found


def retained_source(log: EventLog, first_frames: Sequence[tuple[int, int]], candidates: Iterable[str],
                    tz: str) -> str | None:
    """The earlier source id under which the log holds this database's first frames at the
    same times (the database lost its oldest rows to retention), or None.

    ``first_frames``: (row id, ts_us) of the database's lowest frame ids."""
    probe = list(first_frames)[:RETENTION_PROBE_ROWS]
    if not probe:
        return None
    for sid in candidates:
        refs = [(f"{sid}:frames:{fid}", ts) for fid, ts in probe]
        # a frame under an id a restore reused landed as <ref>@<ts> (rekey_reused_ids): its time
        # is in its ref, so it is the same frame at the same time
        rekeyed = {ref: f"{ref}{REUSED}{ts}" for ref, ts in refs}
        present = log.refs_present([r for r, _ in refs] + list(rekeyed.values()))
        if not present:
            continue
        logged = _logged_times(log, [(r, ts) for r, ts in refs if r in present], tz)
        # the lowest present frame decides: later ones may be ids a restore reused (tails_changed)
        ref, ts = next((r, t) for r, t in refs if r in present or rekeyed[r] in present)
        if rekeyed[ref] in present or logged.get(ref) == ts:
            return sid
    return None


def tails_changed(marks: dict[str, Any] | None, now: dict[str, Any]) -> bool:
    """Whether the rows at the last pass's watermark changed (``marks`` and ``now``: per table
    {"max_id", "tail"} as taken then and as the same ids read now); False without marks."""
    if not isinstance(marks, dict) or not marks:
        return False
    return any(now.get(t) != m for t, m in marks.items())


def rekey_reused_ids(log: EventLog, batch: CaptureBatch, tz: str) -> int:
    """Give rows whose ref the log holds for an event at another time ``<ref>@<ts_us>``; return
    how many snapshots and inputs were given one. A rekeyed frame's elements follow it (their
    refs, parents and frame link), and inputs pointing at it are linked to its new id."""
    kinds = ("snapshots", "inputs")
    pairs = [(r, t) for k in kinds for r, t in _refs_and_times(batch.rows(k))]
    present = log.refs_present([r for r, _ in pairs])
    if not present:
        return 0
    logged = _logged_times(log, [(r, t) for r, t in pairs if r in present], tz)

    def reused(ref: str, ts: int) -> bool:
        return ref in present and logged.get(ref) != ts

    frames: dict[tuple[str, int], str] = {}  # (old frame id, ts) -> new frame id
    renamed = 0
    snaps = []
    for row in batch.snapshots:
        if reused(row.ref, row.ts_us):
            renamed += 1
            changes: dict[str, Any] = {"ref": f"{row.ref}{REUSED}{row.ts_us}"}
            if row.source_frame_id is not None:
                changes["source_frame_id"] = frames[(row.source_frame_id, row.ts_us)] = \
                    f"{row.source_frame_id}{REUSED}{row.ts_us}"
            row = dataclasses.replace(row, **changes)
        snaps.append(row)
    batch.snapshots = snaps
    by_frame = {old: new for (old, _ts), new in frames.items()}

    inputs_renamed = 0

    def input_changes(ref: str, ts: int, frame: str | None) -> dict[str, Any]:
        nonlocal inputs_renamed
        out: dict[str, Any] = {}
        if reused(ref, ts):
            out["ref"] = f"{ref}{REUSED}{ts}"
            inputs_renamed += 1
        if frame is not None and frame in by_frame:
            out["source_frame_id"] = by_frame[frame]
        return out

    batch.inputs = _changed(batch.inputs, ("ref", "ts_us", "source_frame_id"), input_changes)  # type: ignore[assignment]
    renamed += inputs_renamed
    if frames:
        parents: dict[str, str] = {}

        def element_changes(ref: str, ts: int, frame: str) -> dict[str, Any]:
            new = frames.get((frame, ts))
            if new is None:
                return {}
            parents[ref] = f"{ref}{REUSED}{ts}"
            return {"ref": parents[ref], "snapshot_frame_id": new}

        batch.elements = _changed(batch.elements, ("ref", "ts_us", "snapshot_frame_id"), element_changes)  # type: ignore[assignment]
        batch.elements = _changed(batch.elements, ("parent_ref",),  # type: ignore[assignment]
                                  lambda p: {"parent_ref": parents[p]} if p in parents else {})
    return renamed


def _refs_and_times(rows: Any) -> list[tuple[str, int]]:
    if isinstance(rows, RowColumns):
        return list(zip(rows.cols["ref"], rows.cols["ts_us"], strict=True))
    return [(r.ref, r.ts_us) for r in rows]


def _changed(rows: Any, fields: Sequence[str], change: Any) -> Any:
    """Rows (a list of row objects or RowColumns) with ``change(*fields)``'s new values applied."""
    if isinstance(rows, RowColumns):
        cols = {n: list(c) for n, c in rows.cols.items()}
        for i, values in enumerate(zip(*(rows.cols[f] for f in fields), strict=True)):
            for name, value in change(*values).items():
                cols[name][i] = value
        return RowColumns(rows.kind, cols, rows.verified)
    out = []
    for row in rows:
        new = change(*(getattr(row, f) for f in fields))
        out.append(dataclasses.replace(row, **new) if new else row)
    return out


def source_changes_note(kind: str) -> str:
    """What the sync status says when a source was rewritten under us."""
    return {
        "retention": "its oldest rows were deleted (retention): followed under the same identity",
        "rewritten": "the rows at the last watermark changed (a restore or rollback): read whole; "
                     "rows under ids used before for other events land under their own refs",
    }[kind]
