"""The DuckDB warehouse: one table per derived thing, one ``day`` column, replace-the-day writes.

Every table has ``day`` (the user's local day) and ``seq`` (the row's position in the order the
producing function returned it), then the record's own columns. Writing a day deletes that day's
rows and inserts the new ones in one transaction, so re-materializing a partition is idempotent
and never touches other days. Values that are not scalars (lists, dicts, nested records) are
stored as canonical JSON text so two builds of the same rows compare equal byte for byte.

Bulk inserts go through a pandas DataFrame (DuckDB's executemany is row-at-a-time and far too
slow for a day of element rows).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from capture.files import canonical_json
from capture.log import (
    COLUMNS,
    NAMES,
    SELECT_SQL,
    SORT_SQL,
    ElementsBySnapshot,
    EventLog,
    build_instances,
    column_values,
)
from capture.model import CLASS_OF, ROW_KINDS, DayCapture, column_types

RAW_TABLES: dict[str, str] = {kind: f"raw_{kind}" for kind in ROW_KINDS}
RAW_DAYS = "raw_days"
RAW_DAYS_COLUMNS = {
    "tz": "VARCHAR",
    "sealed": "BOOLEAN",
    "recorders": "VARCHAR",  # JSON list
    "segment_hashes": "VARCHAR",  # JSON object, path -> sha256 of the sealed segment read
}

# day -> captures read by load_capture in this process (row kinds read, not just the day's
# meta): how tests and benchmarks see that a build reads each day's rows once
LOADS: collections.Counter[str] = collections.Counter()


class SchemaChanged(Exception):
    """A table exists with other columns than the code now writes (the code changed)."""


def _cell(value: Any, sql_type: str) -> Any:
    if value is None:
        return None
    if sql_type == "VARCHAR" and not isinstance(value, str):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        return canonical_json(value)
    return value


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _existing_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]] | None:
    # duckdb_columns() is a few times cheaper than information_schema, and every write asks. (Not
    # pragma_table_info: a missing table raises, which would abort the caller's transaction.)
    rows = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ? "
        "ORDER BY column_index",
        [table],
    ).fetchall()
    return [(str(n), str(t)) for n, t in rows] or None


def ensure_table(con: duckdb.DuckDBPyConnection, table: str, columns: Mapping[str, str]) -> None:
    """Create the table, or raise SchemaChanged if it exists with other columns."""
    wanted = [("day", "VARCHAR"), ("seq", "BIGINT"), *columns.items()]
    have = _existing_columns(con, table)
    if have is None:
        cols = ", ".join(f"{_quote(n)} {t}" for n, t in wanted)
        con.execute(f"CREATE TABLE {_quote(table)} ({cols})")
        return
    if [(n, t.upper()) for n, t in have] != [(n, t.upper()) for n, t in wanted]:
        raise SchemaChanged(
            f"warehouse table {table} has columns {[n for n, _ in have]}, the code now writes "
            f"{[n for n, _ in wanted]}; rebuild the warehouse (`af build --fresh`)"
        )


def replace_day(
    con: duckdb.DuckDBPyConnection,
    table: str,
    day: str,
    columns: Mapping[str, str],
    rows: Iterable[Sequence[Any]],
) -> int:
    """Replace one day's rows of a table (created on first use). Returns the rows written."""
    # deferred: pandas (~0.3 s) only when rows are written; `af --help` imports this module
    import numpy as np
    import pandas as pd

    names = list(columns)
    types = [columns[n] for n in names]
    rows = list(rows)
    n = len(rows)
    cols: list[Sequence[Any]] = list(zip(*rows, strict=True)) if n else [() for _ in names]
    if len(cols) != len(names):
        raise ValueError(f"{table}: rows have {len(cols)} values, the table has {len(names)} columns")
    data: dict[str, Any] = {"day": pd.Series([day] * n, dtype=object), "seq": np.arange(n, dtype=np.int64)}
    for i, (col, sql_type) in enumerate(zip(cols, types, strict=True)):
        # Only text columns holding something other than text need converting (to canonical JSON).
        if sql_type == "VARCHAR" and not all(v is None or v.__class__ is str for v in col):
            col = [_cell(v, sql_type) for v in col]
        data[f"c{i}"] = pd.Series(col, dtype=object)
    frame = pd.DataFrame(data)
    select = ", ".join(
        ["CAST(day AS VARCHAR)", "CAST(seq AS BIGINT)"] + [f"CAST(c{i} AS {t})" for i, t in enumerate(types)]
    )

    def clear_day() -> None:
        ensure_table(con, table, columns)
        con.execute(f"DELETE FROM {_quote(table)} WHERE day = ?", [day])

    insert_frame(con, table, select, frame if n else None, prepare=clear_day)
    return n


def insert_frame(con: Any, table: str, select: str, frame: Any, prepare: Callable[[], None]) -> None:
    """In one transaction: ``prepare()`` (clear what is replaced), then insert ``select`` over the
    frame's rows (``frame`` None: nothing to insert). Any failure rolls the whole write back."""
    con.execute("BEGIN TRANSACTION")
    try:
        prepare()
        if frame is not None:
            con.register("_af_rows", frame)
            try:
                con.execute(f"INSERT INTO {_quote(table)} SELECT {select} FROM _af_rows")
            finally:
                con.unregister("_af_rows")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def replace_table(con: Any, table: str, columns: Mapping[str, str], rows: Sequence[Sequence[Any]]) -> int:
    """Replace a whole table that is not per day (no ``day``/``seq`` columns: the routine tables)
    in one transaction; non-scalar cells are stored as canonical JSON. Returns the rows written."""
    # deferred: pandas (~0.3 s) only when rows are written; `af --help` imports this module
    import pandas as pd

    names = list(columns)
    frame = pd.DataFrame(
        {f"c{i}": pd.Series([_cell(r[i], columns[n]) for r in rows], dtype=object) for i, n in enumerate(names)}
    )
    cols = ", ".join(f"{_quote(n)} {t}" for n, t in columns.items())
    select = ", ".join(f"CAST(c{i} AS {columns[n]})" for i, n in enumerate(names))
    insert_frame(
        con, table, select, frame if rows else None,
        prepare=lambda: con.execute(f"CREATE OR REPLACE TABLE {_quote(table)} ({cols})"),
    )
    return len(rows)


def replace_records(con: duckdb.DuckDBPyConnection, table: str, day: str, cls: type, records: Sequence[Any]) -> int:
    """replace_day for a list of dataclass instances of one type."""
    columns = column_types(cls)
    names = list(columns)
    return replace_day(con, table, day, columns, ([getattr(r, n) for n in names] for r in records))


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def load_raw_day(con: duckdb.DuckDBPyConnection, log: EventLog, day: str) -> dict[str, Any]:
    """Copy one day of the event log into the raw_* tables; returns counts and provenance.

    A sealed day is scanned straight from its Parquet segments after checking each file against
    the sha256 its manifest entry records; an open day is read through the log.
    """
    segments = log.day_entries(day)
    counts: dict[str, int] = {}
    hashes: dict[str, str] = {}
    if not segments:
        capture = log.read_day(day)
        for kind in ROW_KINDS:
            counts[kind] = replace_records(con, RAW_TABLES[kind], day, CLASS_OF[kind], getattr(capture, kind))
        sealed, recorders = False, capture.recorders
    else:
        hashes = log.verified_segments(day)  # CheckFailed if any file differs from its entry
        single = len(segments) == 1
        con.execute("BEGIN TRANSACTION")
        try:
            for kind in ROW_KINDS:
                table = RAW_TABLES[kind]
                ensure_table(con, table, COLUMNS[kind])
                con.execute(f"DELETE FROM {_quote(table)} WHERE day = ?", [day])
                if single and log.has_current_columns(day, kind):
                    # Sealed files are written in the log's sort order: the file row number is the seq.
                    path = _sql_path(log.segment_files(day, kind)[0])
                    select = (f"SELECT ?, file_row_number, {SELECT_SQL[kind]} "
                              f"FROM read_parquet('{path}', file_row_number = true)")
                else:
                    # A day with amendments (or sealed before a column existed): merged in the log's order.
                    select = (f"SELECT ?, row_number() OVER (ORDER BY {SORT_SQL[kind]}) - 1, {SELECT_SQL[kind]} "
                              f"FROM {log.sealed_relation(day, kind)}")
                (counts[kind],) = con.execute(  # an INSERT answers with the number of rows it wrote
                    f"INSERT INTO {_quote(table)} {select}", [day]
                ).fetchone() or (0,)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        recorders_seen: set[str] = set()
        for rel in hashes:
            if rel.endswith("/sources.json"):
                recorders_seen.update(json.loads((log.dir / rel).read_bytes()).get("recorders", []))
        sealed, recorders = True, sorted(recorders_seen)
    replace_day(
        con,
        RAW_DAYS,
        day,
        RAW_DAYS_COLUMNS,
        [(log.tz, sealed, canonical_json(sorted(recorders)), canonical_json(dict(sorted(hashes.items()))))],
    )
    return {"counts": counts, "sealed": sealed, "recorders": sorted(recorders), "segment_hashes": hashes}


def _element_columns(con: duckdb.DuckDBPyConnection, day: str, frame_ids: list[str]) -> dict[str, Any]:
    """raw_elements of these snapshots of the day, in the log's order (fetchnumpy columns)."""
    return con.execute(  # type: ignore[no-any-return]
        f"SELECT {SELECT_SQL['elements']} FROM {RAW_TABLES['elements']} "
        "WHERE day = ? AND snapshot_frame_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY seq",
        [day, frame_ids],
    ).fetchnumpy()


def bind_elements(con: duckdb.DuckDBPyConnection, cap: DayCapture) -> None:
    """Fetch a lazily read capture's element trees through ``con`` from now on (the connection
    that read it may have been closed since: each Dagster step opens its own)."""
    src = cap.element_source
    if isinstance(src, ElementsBySnapshot):
        cap.element_source = ElementsBySnapshot(src.count, functools.partial(_element_columns, con, cap.day))


def load_capture(
    con: duckdb.DuckDBPyConnection, day: str, kinds: Sequence[str] = ROW_KINDS, lazy_elements: bool = False
) -> DayCapture:
    """The DayCapture of one day as raw_day stored it (same rows, same order as the log).

    ``kinds`` limits which row kinds are read (element trees are most of a day's bytes);
    ``lazy_elements`` reads none of them but gives the capture an element source that fetches
    the trees of the snapshots a compile asks for, through this connection."""
    meta = con.execute(
        f"SELECT tz, sealed, recorders, segment_hashes FROM {RAW_DAYS} WHERE day = ?", [day]
    ).fetchone()
    if meta is None:
        raise LookupError(f"day {day} is not in the warehouse; materialize raw_day for it first")
    tz, sealed, recorders, hashes = meta
    cap = DayCapture(
        day=day, tz=str(tz), sealed=bool(sealed), recorders=json.loads(recorders), segment_hashes=json.loads(hashes)
    )
    if lazy_elements:
        kinds = [k for k in kinds if k != "elements"]
        (count,) = con.execute(f"SELECT count(*) FROM {RAW_TABLES['elements']} WHERE day = ?", [day]).fetchone() or (0,)
        # valid while this connection is open
        cap.element_source = ElementsBySnapshot(int(count), functools.partial(_element_columns, con, day))
    if kinds:
        LOADS[day] += 1
    for kind in kinds:
        data = con.execute(
            f"SELECT {SELECT_SQL[kind]} FROM {_quote(RAW_TABLES[kind])} WHERE day = ? ORDER BY seq", [day]
        ).fetchnumpy()
        # Column by column (as the log reads sealed days): the rows were checked when they landed.
        setattr(cap, kind, build_instances(CLASS_OF[kind], [column_values(data[n]) for n in NAMES[kind]]))
    return cap


def tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def digests(con: duckdb.DuckDBPyConnection, days: Sequence[str]) -> dict[str, dict[str, str]]:
    """day -> table -> ``rows:digest`` of each table's rows for the days (every column, each row
    with its seq): what rebuilds compare.

    One grouped scan per table for all the days. Each row (seq included, so order counts) is
    hashed with DuckDB's 64-bit hash h; the day's digest is the xor of h and the xor of a second,
    non-linear rehash of h: 128 bits, about fifty times cheaper than a sha256 of every row's text
    (element tables hold tens of thousands of rows a day). Both sides of a comparison hash with
    the same DuckDB build, so the digests are only compared, never stored for later.
    """
    wanted = sorted(set(days))
    out: dict[str, dict[str, str]] = {day: {} for day in wanted}
    if not wanted:
        return out
    for table in tables(con):
        cols = [n for n, _ in _existing_columns(con, table) or [] if n != "day"]
        if "seq" not in cols:
            continue
        row = "struct_pack(" + ", ".join(f"{_quote(c)} := {_quote(c)}" for c in cols) + ")"
        found = dict.fromkeys(wanted, "0:" + "0" * 32)
        for day, n, a, b in con.execute(
            f"SELECT day, count(*), bit_xor(h), bit_xor(hash(h // 2, h % 2)) FROM "
            f"(SELECT day, hash({row}) AS h FROM {_quote(table)} WHERE day IN (SELECT unnest(?::VARCHAR[]))) "
            "GROUP BY day",
            [wanted],
        ).fetchall():
            found[str(day)] = f"{n}:{int(a):016x}{int(b):016x}"
        for day, digest in found.items():
            out[day][table] = digest
    return out
