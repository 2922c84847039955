"""The DuckDB warehouse: one table per derived thing, one ``day`` column, replace-the-day writes.

Every table has ``day`` (the user's local day) and ``seq`` (the row's position in the order the
producing function returned it), then the record's own columns. Writing a day deletes that day's
rows and inserts the new ones in one transaction, so re-materializing a partition is idempotent
and never touches other days. Values that are not scalars (lists, dicts, nested records) are
stored as canonical JSON text so two builds of the same rows compare equal byte for byte.

Bulk inserts register the columns as numpy arrays, typed where every value is of the column's
type (DuckDB copies those without looking at Python objects), object arrays otherwise (DuckDB
reads them value by value, as it read the pandas frames writes went through before, so the
stored values are the same). executemany is row-at-a-time and far too slow for a day of element
rows.

What a connection's warehouse is known to hold (the tables whose columns were checked, that the
raw layer exists, the document folder) is remembered per connection (``_known``) and forgotten
when one of its transactions rolls back: a step's days ask each once, not once per write.

The raw layer is the sealed log itself, not a copy of it. ``raw_<kind>`` (raw_snapshots,
raw_inputs, raw_elements, raw_presence, raw_streams) are views with the columns they always had
(``day``, ``seq``, the capture columns). A sealed day of one segment with every current column,
nearly every day, is *registered*: ``raw_files`` lists its Parquet file per kind (relative to the
log folder in ``raw_root``) and the views read the file, ``seq`` being the file row number (sealing
writes in the log's order). Everything else is *copied* into ``raw_copied_<kind>`` as before: open
days (their rows live in JSONL that keeps changing) and days with amendments or sealed before a
column existed (merged in the log's order). Each view is the copied table plus one read_parquet
of the log's sealed files of its kind (a glob) kept to the files ``raw_files`` lists: its text
names no day, so registering a day is a row in raw_files and binds nothing. A view that named
every registered file grew with the history, and so did every checkpoint, which writes the whole
catalog (at 365 days, views over 1,825 file names made a one-day checkpoint 2-4x dearer). Per-day
readers (load_capture, the
element fetch, page_refs, the quality checks) go to the day's file directly (``day_relation``),
so their cost does not follow the history either.

Large per-day texts (the canonical day documents) are *document files*, not table cells: one
gzip file per day and content hash under ``<warehouse>.documents/`` beside the DuckDB file
(``write_document``), the table keeping the day's sha256, which every reader checks
(``read_document``). In one table column every day's text shares the compressed row group
DuckDB rewrites at each checkpoint, a cost that grew with the history (5.8-9.4 s a checkpoint
at 365 days). A file is named by its hash and written before the table row that names it is
committed, so the table never names a file that is not there; the day's older files are removed
after the commit. An in-memory warehouse keeps its files in a folder given with
``use_documents_dir`` (else a temporary one removed when the process ends).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import functools
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from capture.errors import CheckFailed
from capture.files import atomic_write, canonical_json
from capture.log import (
    COLUMNS,
    DEFERRED,
    NAMES,
    SELECT_SQL,
    SORT_SQL,
    ElementsBySnapshot,
    EventLog,
    FetchedRows,
    build_instances,
    column_values,
)
from capture.model import CLASS_OF, ROW_KINDS, DayCapture, column_types

RAW_TABLES: dict[str, str] = {kind: f"raw_{kind}" for kind in ROW_KINDS}  # views (module docstring)
COPIED_TABLES: dict[str, str] = {kind: f"raw_copied_{kind}" for kind in ROW_KINDS}
RAW_FILES = "raw_files"  # the registered sealed files: day, seq, kind, file (under raw_root), rows
RAW_FILES_COLUMNS = {"kind": "VARCHAR", "file": "VARCHAR", "rows": "BIGINT"}
RAW_ROOT = "raw_root"  # one row: the log folder the registered files are under
PARTS = "raw_parts"  # schema of the per-month views of earlier layouts (dropped when met)
RAW_DAYS = "raw_days"
RAW_DAYS_COLUMNS = {
    "tz": "VARCHAR",
    "sealed": "BOOLEAN",
    "recorders": "VARCHAR",  # JSON list
    "segment_hashes": "VARCHAR",  # JSON object, path -> sha256 of the sealed segment read
}

# Typed text (what input events of these kinds carry in ``text``: keys, typed text, clipboard
# contents) is kept out of the warehouse unless the build opts in (DataFolder.include_typed_text):
# a copied day's rows hold a mask of the same length instead (the compile counts typed characters
# without the opt-in, never reads them), and the raw_inputs view shows the registered files' rows
# masked too. The log keeps the text; a compile reads it from there (day_relation) when opted in.
TYPED_KINDS = ("key", "text", "clipboard")
TYPED_MASK = "\u2022"  # one per character: len(mask) == len(text)
_MASKED_TEXT = (f"CASE WHEN \"kind\" IN ({', '.join(repr(k) for k in TYPED_KINDS)}) "
                f"THEN repeat('{TYPED_MASK}', length(\"text\")) ELSE \"text\" END AS \"text\"")


def _select(kind: str, typed_text: bool) -> str:
    """SELECT_SQL[kind], with the typed text masked (inputs, without the opt-in)."""
    if kind != "inputs" or typed_text:
        return SELECT_SQL[kind]
    return SELECT_SQL[kind].replace('"text"', _MASKED_TEXT, 1)


def _masked(rows: Sequence[Any]) -> list[Any]:
    """Input events with their typed text masked (what _MASKED_TEXT does in SQL)."""
    return [dataclasses.replace(r, text=TYPED_MASK * len(r.text)) if r.kind in TYPED_KINDS and r.text else r
            for r in rows]


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


@dataclasses.dataclass
class _Known:
    """What one connection's warehouse was seen to hold (module docstring)."""

    tables: dict[str, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=dict)  # checked columns
    layout: bool = False  # the raw layer's tables and views exist (ensure_layout)
    documents: Path | None = None  # documents_dir


_KNOWN: weakref.WeakKeyDictionary[Any, _Known] = weakref.WeakKeyDictionary()


def _known(con: Any) -> _Known:
    try:
        known = _KNOWN.get(con)
        if known is None:
            known = _KNOWN[con] = _Known()
    except TypeError:  # not weak-referenceable (a wrapper): nothing remembered, every question asked
        return _Known()
    return known


def forget(con: Any) -> None:
    """Ask the warehouse again from now on (after changing its tables by other means than this module)."""
    with contextlib.suppress(TypeError):
        _KNOWN.pop(con, None)


def _existing_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]] | None:
    # duckdb_columns() is a few times cheaper than information_schema. (Not pragma_table_info: a
    # missing table raises, which would abort the caller's transaction.)
    rows = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ? "
        "ORDER BY column_index",
        [table],
    ).fetchall()
    return [(str(n), str(t)) for n, t in rows] or None


def ensure_table(con: duckdb.DuckDBPyConnection, table: str, columns: Mapping[str, str]) -> None:
    """Create the table, or raise SchemaChanged if it exists with other columns (checked once
    per connection and table)."""
    wanted = (("day", "VARCHAR"), ("seq", "BIGINT"), *columns.items())
    known = _known(con)
    if known.tables.get(table) == wanted:
        return
    have = _existing_columns(con, table)
    if have is None:
        cols = ", ".join(f"{_quote(n)} {t}" for n, t in wanted)
        con.execute(f"CREATE TABLE {_quote(table)} ({cols})")
    elif [(n, t.upper()) for n, t in have] != [(n, t.upper()) for n, t in wanted]:
        raise SchemaChanged(
            f"warehouse table {table} has columns {[n for n, _ in have]}, the code now writes "
            f"{[n for n, _ in wanted]}; rebuild the warehouse (`af build --fresh`)"
        )
    known.tables[table] = wanted


_TEXT_TYPES = {str, type(None)}
_NONE = type(None)
# SQL type -> (the Python types a column of it may hold to be passed typed, numpy dtype)
_TYPED = {"BIGINT": ({int, _NONE}, "int64"), "DOUBLE": ({float, _NONE}, "float64"), "BOOLEAN": ({bool, _NONE}, "bool")}


def _text_cells(col: Sequence[Any], sql_type: str) -> Sequence[Any]:
    # Only text columns holding something other than text need converting (to canonical JSON).
    # (the set of the column's types, built in C: a generator over every cell cost 50 ms a day)
    if sql_type == "VARCHAR" and not set(map(type, col)) <= _TEXT_TYPES:
        return [_cell(v, sql_type) for v in col]
    return col


def _numpy_column(col: Sequence[Any], sql_type: str) -> Any:
    """One column for DuckDB to scan: a typed numpy array (masked where None) when every value is
    of the column's Python type, else an object array, which DuckDB reads value by value exactly
    as it read the object columns of the pandas frames writes went through before."""
    import numpy as np

    kinds = set(map(type, col))  # built in C
    typed = _TYPED.get(sql_type.upper())
    if typed is not None and kinds <= typed[0]:
        try:
            if _NONE not in kinds:
                return np.array(col, dtype=typed[1])
            mask = np.fromiter(map(_NONE.__instancecheck__, col), dtype=bool, count=len(col))
            filler = {"int64": 0, "float64": 0.0, "bool": False}[typed[1]]
            data = np.array([filler if v is None else v for v in col], dtype=typed[1])
            if typed[1] == "float64":
                mask |= np.isnan(data)  # NaN was NULL in the object scan too
            return np.ma.masked_array(data, mask)
        except OverflowError:  # an int beyond BIGINT: the object scan decides, as before
            pass
    if isinstance(col, np.ndarray) and col.dtype != object:
        return col
    out = np.empty(len(col), dtype=object)
    out[:] = col
    return out


def _rows_relation(names: Sequence[str], cols: Sequence[Sequence[Any]], types: Sequence[str]) -> dict[str, Any]:
    """The columns as a dict of numpy arrays, which DuckDB scans without pandas or Arrow (pyarrow's
    array() imports pandas, a second's start-up, whenever pandas is installed)."""
    return {n: _numpy_column(c, t) for n, c, t in zip(names, cols, types, strict=True)}


def replace_day(
    con: duckdb.DuckDBPyConnection,
    table: str,
    day: str,
    columns: Mapping[str, str],
    rows: Iterable[Sequence[Any]],
) -> int:
    """Replace one day's rows of a table (created on first use). Returns the rows written."""
    rows = list(rows)
    cols: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
    if len(cols) != len(columns):
        raise ValueError(f"{table}: rows have {len(cols)} values, the table has {len(columns)} columns")
    return replace_day_columns(con, table, day, columns, cols)


def replace_day_columns(
    con: duckdb.DuckDBPyConnection,
    table: str,
    day: str,
    columns: Mapping[str, str],
    cols: Sequence[Sequence[Any]],
) -> int:
    """replace_day for rows given as columns (one sequence per column, in ``columns`` order)."""
    import numpy as np

    names = list(columns)
    types = [columns[n] for n in names]
    if len(cols) != len(names):
        raise ValueError(f"{table}: {len(cols)} columns given, the table has {len(names)}")
    n = len(cols[0]) if cols else 0
    if any(len(c) != n for c in cols):
        raise ValueError(f"{table}: columns of different lengths {sorted({len(c) for c in cols})}")
    frame = None
    if n:
        cols = [_text_cells(col, t) for col, t in zip(cols, types, strict=True)]
        frame = {"seq": np.arange(n, dtype=np.int64)} | _rows_relation([f"c{i}" for i in range(len(names))], cols, types)
    select = ", ".join(
        [f"CAST({_lit(day)} AS VARCHAR)", "CAST(seq AS BIGINT)"] + [f"CAST(c{i} AS {t})" for i, t in enumerate(types)]
    )

    def clear_day() -> None:
        ensure_table(con, table, columns)
        con.execute(f"DELETE FROM {_quote(table)} WHERE day = ?", [day])

    insert_frame(con, table, select, frame, prepare=clear_day)
    return n


# id(connection) -> what to do once its batch commits, for the connections inside batch()
_BATCHES: dict[int, list[Callable[[], None]]] = {}
# id(connection) -> whether every raw view must be bound again (the log moved) for the batch's
# registrations; the views are looked at once, before the batch commits
_VIEWS_DUE: dict[int, bool] = {}


@contextlib.contextmanager
def _transaction(con: Any) -> Iterator[None]:
    """One DuckDB transaction: committed when the block ends, rolled back on any failure. Inside
    ``batch`` the block is part of the batch's transaction."""
    if id(con) in _BATCHES:
        yield
        return
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        forget(con)  # what the block created or checked is undone with it
        con.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def batch(con: Any) -> Iterator[None]:
    """Every write of the block in one transaction: a step's days committed together (one WAL
    sync instead of one per table and day), or none of them if the step fails, which is also
    what Dagster records (a failed step materializes none of its partitions). What must wait for
    the commit (``after_commit``) runs after it. Re-entrant."""
    if id(con) in _BATCHES:
        yield
        return
    later: list[Callable[[], None]] = []
    try:
        with _transaction(con):
            _BATCHES[id(con)] = later  # from here on, the block's own transactions join this one
            yield
            if id(con) in _VIEWS_DUE:
                _refresh_views(con, _VIEWS_DUE.pop(id(con)))
    finally:
        _BATCHES.pop(id(con), None)
        _VIEWS_DUE.pop(id(con), None)
    for fn in later:
        fn()


def after_commit(con: Any, fn: Callable[[], None]) -> None:
    """Run ``fn`` once what the connection wrote is committed: now, or at the end of its batch."""
    if id(con) in _BATCHES:
        _BATCHES[id(con)].append(fn)
    else:
        fn()


def insert_frame(con: Any, table: str, select: str, frame: Any, prepare: Callable[[], None]) -> None:
    """In one transaction: ``prepare()`` (clear what is replaced), then insert ``select`` over the
    frame's rows (what DuckDB can register: a dict of numpy arrays; None: nothing to insert). Any failure
    rolls the whole write back."""
    with _transaction(con):
        prepare()
        if frame is not None:
            con.register("_af_rows", frame)
            try:
                con.execute(f"INSERT INTO {_quote(table)} SELECT {select} FROM _af_rows")
            finally:
                # after a failed INSERT the transaction is aborted and unregister raises too, which
                # would hide the reason; the next register replaces the name anyway
                with contextlib.suppress(duckdb.Error):
                    con.unregister("_af_rows")


def replace_table(con: Any, table: str, columns: Mapping[str, str], rows: Sequence[Sequence[Any]]) -> int:
    """Replace a whole table that is not per day (no ``day``/``seq`` columns: the routine tables)
    in one transaction; non-scalar cells are stored as canonical JSON. Returns the rows written."""
    names = list(columns)
    types = [columns[n] for n in names]
    cols = [[_cell(r[i], types[i]) for r in rows] for i in range(len(names))]
    frame = _rows_relation([f"c{i}" for i in range(len(names))], cols, types) if rows else None
    declared = ", ".join(f"{_quote(n)} {t}" for n, t in columns.items())
    select = ", ".join(f"CAST(c{i} AS {t})" for i, t in enumerate(types))

    def create() -> None:
        known = _known(con)
        known.tables.pop(table, None)  # not a per-day table: ensure_table's check is not this one
        con.execute(f"CREATE OR REPLACE TABLE {_quote(table)} ({declared})")

    insert_frame(con, table, select, frame, prepare=create)
    return len(rows)


def replace_records(con: duckdb.DuckDBPyConnection, table: str, day: str, cls: type, records: Sequence[Any]) -> int:
    """replace_day for a list of dataclass instances of one type."""
    columns = column_types(cls)
    names = list(columns)
    return replace_day(con, table, day, columns, ([getattr(r, n) for n in names] for r in records))


def _sql_path(path: Path | str) -> str:
    return str(path).replace("'", "''")


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _kind_of_table(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """name -> 'BASE TABLE' or 'VIEW' of the main schema's tables and views."""
    rows = con.execute(
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_catalog = current_database() AND table_schema = 'main'"
    ).fetchall()
    return {str(n): str(t) for n, t in rows}


def ensure_layout(con: duckdb.DuckDBPyConnection) -> None:
    """Create the raw layer's tables and views, or migrate a warehouse written when the raw_*
    were tables: those tables become the copied tables (the same rows, so every day built before
    reads as it did) and their days are registered zero-copy when raw_day runs for them again."""
    known = _known(con)
    if known.layout:  # seen on this connection (every load of a day asks)
        _follow_move(con)
        return
    have = _kind_of_table(con)
    if all(have.get(RAW_TABLES[k]) == "VIEW" for k in ROW_KINDS) and RAW_FILES in have:
        _follow_move(con)
        known.layout = True
        return
    with _transaction(con):
        for kind in ROW_KINDS:
            old, copied = RAW_TABLES[kind], COPIED_TABLES[kind]
            if have.get(old) == "BASE TABLE" and copied not in have:
                con.execute(f"ALTER TABLE {_quote(old)} RENAME TO {_quote(copied)}")
            ensure_table(con, copied, COLUMNS[kind])
        ensure_table(con, RAW_FILES, RAW_FILES_COLUMNS)
        con.execute(f"CREATE TABLE IF NOT EXISTS {RAW_ROOT} (log_dir VARCHAR, from_warehouse VARCHAR)")
        _refresh_views(con, True)
    known.layout = True  # committed (a rollback forgets it)


def _warehouse_dir(con: duckdb.DuckDBPyConnection) -> Path | None:
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return Path(str(row[0])).resolve().parent if row and row[0] else None  # None: in memory


def _follow_move(con: duckdb.DuckDBPyConnection) -> None:
    """When the registered files' folder is gone but the log sits where it sat relative to the
    warehouse file (the data folder was moved or copied whole), name the files there."""
    row = con.execute(f"SELECT log_dir, from_warehouse FROM {RAW_ROOT}").fetchone()
    if row is None or row[1] is None or Path(str(row[0])).is_dir():
        return
    here = _warehouse_dir(con)
    if here is None or not (here / str(row[1])).is_dir():
        return  # reading a registered day will name the missing file
    with _transaction(con):
        con.execute(f"UPDATE {RAW_ROOT} SET log_dir = ?", [str((here / str(row[1])).resolve())])
        _refresh_views(con, True)


def _root(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute(f"SELECT log_dir FROM {RAW_ROOT}").fetchone()
    return str(row[0]) if row else None


# The day of a registered file is the name of its segment folder (sealed/<day>/<kind>.parquet):
# as an expression of the file name alone, a filter on day prunes the files before any is opened.
_DAY_OF_FILE = r"regexp_extract(filename, '([0-9]{4}-[0-9]{2}-[0-9]{2})/[^/]+$', 1)"


def _files_select(kind: str, paths: Sequence[str], typed_text: bool = True) -> str:
    return (f"SELECT {_DAY_OF_FILE} AS day, file_row_number AS seq, {_select(kind, typed_text)} "
            f"FROM read_parquet([{', '.join(_lit(p) for p in paths)}], filename = true, file_row_number = true)")


def _view_sql(kind: str, root: str | None, with_files: bool) -> str:
    """A raw_* view: the copied rows, and the rows of the sealed files raw_files lists for the kind
    (the glob matches every day's file of the kind; only the registered ones are kept)."""
    copied = f"SELECT * FROM {_quote(COPIED_TABLES[kind])}"
    if not with_files or root is None:
        return copied  # read_parquet fails on a glob that matches nothing
    glob = _lit(f"{root}/sealed/*/{kind}.parquet")
    listed = (f"SELECT r.log_dir || '/' || f.file FROM {RAW_FILES} f, {RAW_ROOT} r "
              f"WHERE f.kind = {_lit(kind)}")
    files = (f"SELECT {_DAY_OF_FILE} AS day, file_row_number AS seq, {_select(kind, False)} "
             f"FROM read_parquet({glob}, filename = true, file_row_number = true) WHERE filename IN ({listed})")
    return f"{copied} UNION ALL {files}"


def _refresh_views(con: duckdb.DuckDBPyConnection, everything: bool) -> None:
    """Bind the raw_* views again where what they must read changed: every view when the log's
    folder changed (``everything``), else a view whose kind got its first registered file or lost
    its last. Runs inside the caller's transaction."""
    root = _root(con)
    with_files = {str(k) for (k,) in con.execute(f"SELECT DISTINCT kind FROM {RAW_FILES}").fetchall()}
    views = con.execute(
        "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name IN ('main', ?)", [PARTS]
    ).fetchall()
    current = {str(n): str(q) for schema, n, q in views if schema == "main"}
    old_parts = any(schema == PARTS for schema, _n, _q in views)
    for kind in ROW_KINDS:
        sql = current.get(RAW_TABLES[kind])
        reads_files = sql is not None and "read_parquet" in sql
        unmasked = reads_files and kind == "inputs" and "repeat(" not in str(sql)  # a view made before the mask
        if everything or old_parts or sql is None or reads_files != (kind in with_files) or unmasked:
            con.execute(f"CREATE OR REPLACE VIEW {_quote(RAW_TABLES[kind])} AS "
                        f"{_view_sql(kind, root, kind in with_files)}")
    if old_parts:  # the per-month views of the layout before
        con.execute(f"DROP SCHEMA {PARTS} CASCADE")


def refresh_views(con: duckdb.DuckDBPyConnection) -> None:
    """Bind every raw view again from raw_files (after raw_files or raw_root was changed by hand)."""
    ensure_layout(con)
    with _transaction(con):
        _refresh_views(con, True)


def _registered(con: duckdb.DuckDBPyConnection, day: str) -> dict[str, tuple[str, int]]:
    """kind -> (absolute file, rows) of the day's registered files (kinds not listed are copied)."""
    ensure_layout(con)
    rows = con.execute(f"SELECT kind, file, rows FROM {RAW_FILES} WHERE day = ?", [day]).fetchall()
    if not rows:
        return {}
    root = _root(con)
    return {str(k): (f"{root}/{f}", int(n)) for k, f, n in rows}


def day_relation(con: duckdb.DuckDBPyConnection, day: str, kind: str,
                 registered: Mapping[str, tuple[str, int]] | None = None) -> str:
    """SQL for one day's raw rows of a kind, columns ``day, seq`` and the capture columns (what
    ``raw_<kind> WHERE day = ...`` holds), reading only that day's file or copied rows."""
    reg = _registered(con, day) if registered is None else registered
    if kind in reg:
        return f"({_files_select(kind, [reg[kind][0]])})"
    return f"(SELECT * FROM {_quote(COPIED_TABLES[kind])} WHERE day = {_lit(day)})"


def days_relation(con: duckdb.DuckDBPyConnection, kind: str, days: Sequence[str]) -> str:
    """What ``raw_<kind> WHERE day IN days`` holds (typed text masked, as the view shows it),
    reading only those days' files."""
    ensure_layout(con)
    wanted = sorted(set(days))
    root = _root(con)
    paths = [f"{root}/{f}" for (f,) in con.execute(
        f"SELECT file FROM {RAW_FILES} WHERE kind = ? AND day IN (SELECT unnest(?::VARCHAR[])) ORDER BY day",
        [kind, wanted],
    ).fetchall()]
    inside = ", ".join(_lit(d) for d in wanted) or "NULL"
    copied = f"SELECT * FROM {_quote(COPIED_TABLES[kind])} WHERE day IN ({inside})"
    # a file's rows carry the day of its folder: only the days asked for, whatever is registered
    files = f"SELECT * FROM ({_files_select(kind, paths, False)}) WHERE day IN ({inside})"  # as the view shows them
    return f"({copied} UNION ALL {files})" if paths else f"({copied})"


def load_raw_day(con: duckdb.DuckDBPyConnection, log: EventLog, day: str, typed_text: bool = False) -> dict[str, Any]:
    """Make one day of the event log the raw_* rows of the day; returns counts and provenance.
    Copied input events keep their typed text only with ``typed_text`` (the build's opt-in).

    A sealed day's segments are first checked against the sha256 their manifest entries record.
    A day of one segment with the current columns is registered (its files are the rows); other
    sealed days are copied from their segments merged in the log's order, and an open day is
    copied as the log reads it (module docstring)."""
    ensure_layout(con)
    segments = log.day_entries(day)
    counts: dict[str, int] = {}
    hashes: dict[str, str] = {}
    if not segments:
        capture = log.read_day(day)
        for kind in ROW_KINDS:
            rows = getattr(capture, kind)
            if kind == "inputs" and not typed_text:
                rows = _masked(rows)
            counts[kind] = replace_records(con, COPIED_TABLES[kind], day, CLASS_OF[kind], rows)
        sealed, recorders = False, capture.recorders
        with _transaction(con):
            _register(con, day, [], str(Path(log.dir).resolve()))  # no longer registered, if it was
    else:
        hashes = log.verified_segments(day)  # CheckFailed if any file differs from its entry
        single = len(segments) == 1
        registered: list[tuple[str, str, int]] = []
        root = Path(log.dir).resolve()
        with _transaction(con):
            for kind in ROW_KINDS:
                table = COPIED_TABLES[kind]
                con.execute(f"DELETE FROM {_quote(table)} WHERE day = ?", [day])
                if single and log.has_current_columns(day, kind):
                    # Sealed files are written in the log's sort order: the file row number is the seq.
                    path = log.segment_files(day, kind)[0].resolve()
                    # the entry's row count, of the file just checked against the entry's sha256
                    n = segments[0].get("files", {}).get(path.name, {}).get("rows")
                    if not isinstance(n, int):
                        (n,) = con.execute(f"SELECT count(*) FROM read_parquet('{_sql_path(path)}')").fetchone() or (0,)
                    registered.append((kind, path.relative_to(root).as_posix(), int(n)))
                    counts[kind] = int(n)
                    continue
                # A day with amendments (or sealed before a column existed): merged in the log's order.
                select = (f"SELECT ?, row_number() OVER (ORDER BY {SORT_SQL[kind]}) - 1, {_select(kind, typed_text)} "
                          f"FROM {log.sealed_relation(day, kind)}")
                (counts[kind],) = con.execute(  # an INSERT answers with the number of rows it wrote
                    f"INSERT INTO {_quote(table)} {select}", [day]
                ).fetchone() or (0,)
            _register(con, day, registered, str(root))
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


def _register(con: duckdb.DuckDBPyConnection, day: str, files: list[tuple[str, str, int]], root: str) -> None:
    """Replace the day's registered files and rebind what that changes (in the caller's transaction)."""
    before = con.execute(f"SELECT kind, file, rows FROM {RAW_FILES} WHERE day = ? ORDER BY seq", [day]).fetchall()
    moved = _root(con) != root
    if not moved and [tuple(r) for r in before] == files:
        return  # the same files as last time: the views already read them
    if moved:  # a new warehouse, or the data folder was moved: every view names the files anew
        con.execute(f"DELETE FROM {RAW_ROOT}")
        here = _warehouse_dir(con)
        rel = os.path.relpath(root, here) if here is not None else None
        con.execute(f"INSERT INTO {RAW_ROOT} VALUES (?, ?)", [root, rel])
    con.execute(f"DELETE FROM {RAW_FILES} WHERE day = ?", [day])
    for i, (kind, file, n) in enumerate(files):
        con.execute(f"INSERT INTO {RAW_FILES} VALUES (?, ?, ?, ?, ?)", [day, i, kind, file, n])
    if id(con) in _BATCHES:  # looked at once, when the batch's days are all registered
        _VIEWS_DUE[id(con)] = _VIEWS_DUE.get(id(con), False) or moved
    else:
        _refresh_views(con, moved)


def _element_columns(con: duckdb.DuckDBPyConnection, source: str, frame_ids: list[str]) -> dict[str, Any]:
    """The elements of these snapshots from one day's relation, in the log's order (fetchnumpy columns)."""
    return con.execute(  # type: ignore[no-any-return]
        f"SELECT {SELECT_SQL['elements']} FROM {source} "
        "WHERE snapshot_frame_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY seq",
        [frame_ids],
    ).fetchnumpy()


def bind_elements(con: duckdb.DuckDBPyConnection, cap: DayCapture) -> None:
    """Fetch a lazily read capture's element trees through ``con`` from now on (the connection
    that read it may have been closed since: each Dagster step opens its own)."""
    src = cap.element_source
    if isinstance(src, ElementsBySnapshot):
        source = day_relation(con, cap.day, "elements")
        cap.element_source = ElementsBySnapshot(src.count, functools.partial(_element_columns, con, source))


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
    registered = _registered(con, day)
    if lazy_elements:
        kinds = [k for k in kinds if k != "elements"]
        source = day_relation(con, day, "elements", registered)
        if "elements" in registered:
            count = registered["elements"][1]
        else:
            (count,) = con.execute(f"SELECT count(*) FROM {source}").fetchone() or (0,)
        # valid while this connection is open
        cap.element_source = ElementsBySnapshot(int(count), functools.partial(_element_columns, con, source))
    if kinds:
        LOADS[day] += 1
    for kind in kinds:
        data = con.execute(
            f"SELECT {SELECT_SQL[kind]} FROM {day_relation(con, day, kind, registered)} ORDER BY seq"
        ).fetchnumpy()
        if kind in DEFERRED:  # the compile reads their columns; other readers make the rows
            cap.defer_rows(kind, FetchedRows(kind, data))
            continue
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
    # The raw rows are compared as the raw_* views show them, whether a day's rows are registered
    # files or copied (a warehouse migrated from the old layout compares equal to a fresh one);
    # how they are stored (raw_files, raw_copied_*) is not content.
    storage = {RAW_FILES, *COPIED_TABLES.values()}
    kinds = {v: k for k, v in RAW_TABLES.items()}
    have = _kind_of_table(con) if RAW_FILES in tables(con) else {}
    for table in tables(con):
        if table in storage:
            continue
        cols = [n for n, _ in _existing_columns(con, table) or [] if n != "day"]
        if "seq" not in cols:
            continue
        row = "struct_pack(" + ", ".join(f"{_quote(c)} := {_quote(c)}" for c in cols) + ")"
        if table in kinds and have.get(table) == "VIEW":
            source, params = days_relation(con, kinds[table], wanted), []
        else:
            source, params = f"(SELECT * FROM {_quote(table)} WHERE day IN (SELECT unnest(?::VARCHAR[])))", [wanted]
        found = dict.fromkeys(wanted, "0:" + "0" * 32)
        for day, n, a, b in con.execute(
            f"SELECT day, count(*), bit_xor(h), bit_xor(hash(h // 2, h % 2)) FROM "
            f"(SELECT day, hash({row}) AS h FROM {source}) GROUP BY day",
            params,
        ).fetchall():
            found[str(day)] = f"{n}:{int(a):016x}{int(b):016x}"
        for day, digest in found.items():
            out[day][table] = digest
    return out


# --- document files (module docstring) -------------------------------------------------------------

_DOCUMENTS_VAR = "af_documents_dir"  # a DuckDB session variable: the folder of an in-memory warehouse
DOCUMENT_SUFFIX = ".json.gz"


def use_documents_dir(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """Keep this connection's document files in ``folder`` (for an in-memory warehouse)."""
    con.execute(f"SET VARIABLE {_DOCUMENTS_VAR} = ?", [str(Path(folder).resolve())])
    _known(con).documents = Path(folder).resolve()


def documents_dir(con: duckdb.DuckDBPyConnection) -> Path:
    """The folder of the warehouse's document files: ``<stem>.documents`` beside its file."""
    known = _known(con)
    if known.documents is not None:
        return known.documents
    known.documents = _documents_dir(con)
    return known.documents


def _documents_dir(con: duckdb.DuckDBPyConnection) -> Path:
    (given,) = con.execute(f"SELECT getvariable('{_DOCUMENTS_VAR}')").fetchone() or (None,)
    if given:
        return Path(str(given))
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    if row and row[0]:
        db = Path(str(row[0])).resolve()
        return db.with_name(f"{db.stem}.documents")
    # in memory and nobody said where: a folder that lives as long as the process
    folder = Path(tempfile.mkdtemp(prefix="af-documents-"))
    atexit.register(shutil.rmtree, folder, True)
    use_documents_dir(con, folder)
    return folder


def document_path(con: duckdb.DuckDBPyConnection, day: str, sha256: str) -> Path:
    return documents_dir(con) / f"{day}.{sha256}{DOCUMENT_SUFFIX}"


def write_document(con: duckdb.DuckDBPyConnection, day: str, sha256: str, body: bytes) -> Path:
    """Write one day's document file (gzip with no name or time in it: equal bodies give equal
    files), atomically and private (0600). Call before committing the row that names it."""
    path = document_path(con, day, sha256)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write(path, gzip.compress(body, compresslevel=6, mtime=0), mode=0o600)
    return path


def drop_other_documents(con: duckdb.DuckDBPyConnection, day: str, keep: str | None) -> None:
    """Remove the day's document files but the one of hash ``keep`` (after its row is committed)."""
    folder = documents_dir(con)
    if not folder.is_dir():
        return
    for path in folder.glob(f"{day}.*{DOCUMENT_SUFFIX}"):
        if keep is None or path.name != f"{day}.{keep}{DOCUMENT_SUFFIX}":
            path.unlink(missing_ok=True)


def read_document_bytes(con: duckdb.DuckDBPyConnection, day: str, sha256: str) -> bytes:
    """The day's document as written, or CheckFailed naming the file when it is missing,
    unreadable or does not hash to the sha256 the warehouse holds for it."""
    path = document_path(con, day, sha256)
    try:
        body = gzip.decompress(path.read_bytes())
    except FileNotFoundError:
        raise CheckFailed(f"{path}: the warehouse's document of {day} is missing; rebuild the day "
                          f"(`af build --force --from {day} --to {day}`)") from None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise CheckFailed(f"{path}: the warehouse's document of {day} is unreadable ({exc})") from None
    actual = hashlib.sha256(body).hexdigest()
    if actual != sha256:
        raise CheckFailed(f"{path}: the warehouse's document of {day} hashes to {actual[:12]}, "
                          f"not the {sha256[:12]} the warehouse recorded: it was changed after it was written")
    return body


def document_hash(con: duckdb.DuckDBPyConnection, day: str, sha256: str) -> str:
    """The sha256 of the day's document file as it is now (what certification compares), or a
    text saying why there is none."""
    path = document_path(con, day, sha256)
    try:
        return hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()
    except FileNotFoundError:
        return f"missing ({path})"
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return f"unreadable ({path}: {exc})"


def move_text_to_documents(con: duckdb.DuckDBPyConnection, table: str, text_column: str) -> bool:
    """Migrate a table that still holds its documents in ``text_column`` (warehouses written
    before document files): every row's text becomes its document file (named by the row's
    ``sha256``, the text as it was, so a changed row still fails its check), then the column is
    dropped. True when the table was migrated; a read-only connection cannot, and says so."""
    if not has_column(con, table, text_column):
        return False
    for day, sha, text in con.execute(f"SELECT day, sha256, {_quote(text_column)} FROM {_quote(table)}").fetchall():
        write_document(con, str(day), str(sha), str(text).encode("utf-8"))
    with _transaction(con):
        con.execute(f"ALTER TABLE {_quote(table)} DROP COLUMN {_quote(text_column)}")
        _known(con).tables.pop(table, None)
    return True


def has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    return column in {n for n, _ in _existing_columns(con, table) or []}
