"""The row kinds as the log stores them: DuckDB column types, required fields, and each kind's
total sort order (the order read_day returns and sealed files are written in), in SQL and Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from capture.model import CLASS_OF, ROW_KINDS, column_types

# Plausible capture times (1990 .. 2100); anything else is a broken clock and cannot be given a day.
TS_MIN_US = 631_152_000 * 1_000_000
TS_MAX_US = 4_102_444_800 * 1_000_000

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
