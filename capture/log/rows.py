"""Rows to columns and back: the checks a row passes before it is stored, the typed columns the
log writes, and the fast paths that turn fetched columns back into capture rows in log order.

Every value stored is checked here first (type, 64-bit range, finite, valid Unicode, a ref), so
what is read back from a sealed file needs no second check.
"""

from __future__ import annotations

import collections
import gc
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields
from operator import attrgetter
from pathlib import Path
from typing import Any

from capture.errors import CheckFailed
from capture.log.schema import COLUMNS, NAMES, REQUIRED

_NONE = type(None)
_ALLOWED: dict[str, frozenset[type]] = {
    "BOOLEAN": frozenset({bool, _NONE}),
    "BIGINT": frozenset({int, _NONE}),
    "DOUBLE": frozenset({float, int, _NONE}),
    "VARCHAR": frozenset({str, _NONE}),
}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def row_problem(kind: str, row: Any) -> str | None:
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


def columns_ok(kind: str, cols: dict[str, list[Any]]) -> bool:
    """Whole-column version of row_problem (C-speed built-ins; no per-row Python in the usual case)."""
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


def checked_columns(kind: str, rows: list[Any]) -> tuple[dict[str, list[Any]], list[tuple[Any, str]]]:
    """Rows as storable columns, plus the rows that cannot be stored with their reason."""
    bad: list[tuple[Any, str]] = []
    cols = {n: list(map(attrgetter(n), rows)) for n in NAMES[kind]}
    if not columns_ok(kind, cols):
        good = []
        for row in rows:
            problem = row_problem(kind, row)
            if problem is None:
                good.append(row)
            else:
                bad.append((row, problem))
        cols = {n: list(map(attrgetter(n), good)) for n in NAMES[kind]}
    return ints_as_floats(kind, cols), bad


def ints_as_floats(kind: str, cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Whole numbers in DOUBLE columns as floats, so 0 and 0.0 read back alike from an open day
    (JSON) and a sealed one (Parquet DOUBLE)."""
    for name, sqltype in COLUMNS[kind].items():
        if sqltype == "DOUBLE" and int in set(map(type, cols[name])):
            cols[name] = [float(v) if type(v) is int else v for v in cols[name]]
    return cols


def empty_sql(kind: str) -> str:
    cols = ", ".join(f'CAST(NULL AS {t}) AS "{n}"' for n, t in COLUMNS[kind].items())
    return f"(SELECT {cols} WHERE false)"


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a bulk step (restored after, as it was).

    An import builds millions of tuples, strings and lists while every snapshot and input of the
    source is alive; each full collection walks all of them, which cost ~15 % of an import's CPU.
    None of these objects forms a cycle; whatever cycle a step leaves is collected after it."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def build_instances(cls: type, columns: list[list[Any]]) -> list[Any]:
    """Instances of a frozen slots dataclass from checked columns, at near C speed.

    The rows come from a sealed file the log wrote from checked values, so going around the
    generated __init__ (whose frozen field assignments go through object.__setattr__) loses no
    validation. The objects are made by a twin class with the same slots and a plain __init__,
    then given their real class: about twice as fast as setting every field through its slot
    descriptor, and the result is the same objects (same class, fields, equality, hash).
    """
    n = len(columns[0]) if columns else 0
    # Tens of thousands of new objects would trigger the cyclic collector many times over (each
    # pass walks every live object); none of them can form a cycle, so it is paused meanwhile.
    paused = gc.isenabled()
    gc.disable()
    try:
        twin = _twin(cls)
        if twin is not None:
            objs: list[Any] = list(map(twin, *columns)) if columns else []
            collections.deque(map(_SET_CLASS, objs, itertools.repeat(cls, n)), maxlen=0)
            return objs
        objs = list(map(object.__new__, itertools.repeat(cls, n)))
        for f, values in zip(fields(cls), columns, strict=True):
            collections.deque(map(getattr(cls, f.name).__set__, objs, values), maxlen=0)
    finally:
        if paused:
            gc.enable()
    return objs


_SET_CLASS = object.__dict__["__class__"].__set__
_TWINS: dict[type, type | None] = {}


def _twin(cls: type) -> type | None:
    """A mutable class with cls's slots, in order, whose __init__ takes the fields positionally;
    None when an instance of it cannot become a cls (a layout CPython does not accept)."""
    if cls in _TWINS:
        return _TWINS[cls]
    names = [f.name for f in fields(cls)]
    twin: type | None = None
    if tuple(getattr(cls, "__slots__", ())) == tuple(names) and all(n.isidentifier() for n in names):
        body = "".join(f"    self.{n} = {n}\n" for n in names) or "    pass\n"
        scope: dict[str, Any] = {}
        exec(f"def __init__(self, {', '.join(names)}):\n{body}", scope)  # noqa: S102 - field names only
        candidate = type(f"_{cls.__name__}Columns", (), {"__slots__": tuple(names), "__init__": scope["__init__"]})
        try:
            _SET_CLASS(candidate(*([None] * len(names))), cls)
            twin = candidate
        except TypeError:
            twin = None
    _TWINS[cls] = twin
    return twin


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


def in_order(kind: str, data: Mapping[str, Any]) -> bool:
    """Whether fetched columns are in the total order of SORT_SQL: the times never decrease
    (vectorised), and each pair of rows at the same time is ordered by the rest of the sort key,
    compared in Python for those pairs alone (a day of the log has few or none). ``data``: the
    key columns (lists, numpy or masked arrays; read only where times tie)."""
    import numpy as np

    ts = np.asarray(data["ts_us"], dtype=np.int64)
    if len(ts) < 2:
        return True
    step = ts[1:] - ts[:-1]
    if bool((step < 0).any()):
        return False
    ties = np.flatnonzero(step == 0).tolist()
    if not ties:
        return True
    names = ("stream", "ref") if kind in ("snapshots", "inputs") else (
        ("snapshot_frame_id", "ref") if kind == "elements" else ("ref",))
    cols = [data[n] for n in names]

    def key(i: int) -> tuple[Any, ...]:
        out = []
        for n, col in zip(names, cols, strict=True):
            v = col[i]
            if v is np.ma.masked or v is None:
                v = ""  # a NULL stream sorts as '' (SORT_SQL's COALESCE)
            out.append(str(v) if n == "stream" else v)
        return tuple(out)

    return all(key(i) <= key(i + 1) for i in ties)


def arrow_table(path: Path, kind: str, dictionary: Sequence[str] = (), columns: Sequence[str] | None = None,
                data: bytes | None = None, use_threads: bool = True, opened: Callable[[], Any] | None = None) -> Any:
    """A sealed file's columns of this version (NAMES order, file order; or just ``columns``) as
    a pyarrow Table, the ``dictionary`` columns dictionary-encoded; None when the file lacks one
    of the kind's columns (a file sealed before the column existed: the SQL read fills it with
    NULL). ``data``: the file's bytes, already read (and hashed), parsed instead of the file.

    ``use_threads``: columns decoded in pyarrow's threads, which cuts the wall time of a read
    alone by a third to a half for no more CPU; a read that overlaps other work (a background
    read, or the reads beside one) decodes in its own thread only. ``opened``: called once the
    file is open and checked, as the decoding (which holds no GIL) starts."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # imported lazily: only sealed reads need it

    pf = pq.ParquetFile(path if data is None else pa.BufferReader(data),
                        read_dictionary=[n for n in dictionary if columns is None or n in columns] or None)
    names = NAMES[kind]
    if not set(names) <= set(pf.schema_arrow.names):
        return None
    if opened is not None:
        opened()
    return pf.read(columns=list(names if columns is None else columns), use_threads=use_threads)


# String columns of few distinct values a day (apps, windows, URLs, streams, kinds): read as
# dictionaries and decoded once per distinct value, so equal values are one str object (its
# hash computed once for every dict and set the compile puts it in) and the read makes fewer.
REPEATED: dict[str, tuple[str, ...]] = {
    "snapshots": ("stream", "app", "window", "url", "trigger"),
    "inputs": ("kind", "stream", "button", "clipboard_op", "app", "window", "url", "element_role", "element_name"),
}


def arrow_columns(path: Path, kind: str, data: bytes | None = None, use_threads: bool = True) -> list[list[Any]] | None:
    """A sealed file's rows as Python values per column (see arrow_table)."""
    table = arrow_table(path, kind, REPEATED.get(kind, ()), data=data, use_threads=use_threads)
    return None if table is None else [pylist(table.column(n)) for n in NAMES[kind]]


def pylist(column: Any) -> list[Any]:
    """A pyarrow column as Python values (NULL as None); a dictionary column's values decoded
    once each, every row holding its distinct value's object."""
    import pyarrow as pa

    if not pa.types.is_dictionary(column.type):
        return column.to_pylist()  # type: ignore[no-any-return]
    out: list[Any] = []
    for chunk in column.chunks:
        values = chunk.dictionary.to_pylist()
        indices = chunk.indices
        if indices.null_count:
            out += [None if i is None else values[i] for i in indices.to_pylist()]
        else:
            out += map(values.__getitem__, numbers(indices).tolist())
    return out


# numpy's type of each Arrow number type numbers() reads
_NUMPY_TYPES = {"int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "uint8": "u1", "uint16": "u2",
                "uint32": "u4", "uint64": "u8", "float": "f4", "double": "f8"}


def numbers(column: Any, null: float = math.nan) -> Any:
    """An Arrow array (or chunked array) of numbers as a numpy array read off its buffers (a
    view when it has one chunk and no NULL), a NULL as ``null`` (an integer column with a NULL
    comes out as float64 when ``null`` is NaN, as pyarrow's to_numpy gives it).

    pyarrow's own to_numpy imports pandas on its first call: 48 MB of resident memory, for a
    long-lived reader (the MCP server, at its first answer from a sealed day) that never uses it."""
    import numpy as np
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 1:
            return numbers(column.chunk(0), null)
        parts = [numbers(c, null) for c in column.chunks]
        return np.concatenate(parts) if parts else np.empty(0, _NUMPY_TYPES.get(str(column.type), "f8"))
    code = _NUMPY_TYPES.get(str(column.type))
    if code is None:  # not a plain number (a time type, say): pyarrow's way
        return column.to_numpy(zero_copy_only=False)
    n, off = len(column), column.offset
    buffers = column.buffers()
    data = np.frombuffer(buffers[1], dtype=code, count=off + n)[off:] if n else np.empty(0, code)
    if column.null_count:
        valid = np.unpackbits(np.frombuffer(buffers[0], np.uint8), count=off + n, bitorder="little")[off:]
        data = np.where(valid.astype(np.bool_), data, null)
    return data


def positions(rows: Sequence[int]) -> Any:
    """Row positions as an Arrow int64 array, for ``take``. Made from a numpy buffer: pa.array()
    imports pandas on its first call (see numbers)."""
    import numpy as np
    import pyarrow as pa

    data = np.asarray(rows, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


class ArrowRows:
    """One kind of a sealed day's rows as the columns of its file (capture.model.DeferredRows):
    each column becomes Python values when first asked for, the rows only when asked for.
    ``table`` may hold only some of the kind's columns (those a compile reads): the others are
    read from ``path`` in one read when one of them or the rows are first asked for."""

    __slots__ = ("kind", "count", "_table", "_path", "_data", "_values")

    def __init__(self, kind: str, table: Any, path: Path | None = None, data: bytes | None = None):
        self.kind = kind
        self.count: int = table.num_rows
        self._table = table
        self._path = path
        self._data = data  # the file's verified bytes, when the read had them: the rest comes from those
        self._values: dict[str, list[Any]] = {}

    def values(self, name: str) -> list[Any]:
        got = self._values.get(name)
        if got is None:
            got = self._values[name] = pylist(self._column(name))
        return got

    def values_at(self, name: str, rows: Sequence[int]) -> list[Any]:
        """One column's values at these rows (the column is not decoded whole)."""
        got = self._values.get(name)
        if got is not None:
            return list(map(got.__getitem__, rows))
        if not rows:
            return []

        return pylist(self._column(name).take(positions(rows)))

    def array(self, name: str) -> Any:
        """A column without NULLs as numpy (None when it has a NULL)."""
        column = self._column(name)
        return None if column.null_count else numbers(column)

    def codes(self, name: str) -> tuple[Any, list[Any]] | None:
        """(codes, values) of a dictionary-encoded column (capture.model.DayCapture.codes), from
        the file's dictionary; None for a column that is not one."""
        import numpy as np
        import pyarrow as pa

        column = self._column(name)
        if not pa.types.is_dictionary(column.type) or column.num_chunks != 1:
            return None
        chunk = column.chunk(0)
        indices = chunk.indices
        codes = numbers(indices, -1).astype(np.int64)
        return codes, chunk.dictionary.to_pylist()

    def _column(self, name: str) -> Any:
        if name not in self._table.column_names:
            if name not in NAMES[self.kind]:
                raise KeyError(name)
            self._read([name])  # one more column (the refs, say, when times tie): not the rest
        return self._table.column(name)

    def _read(self, names: list[str]) -> None:
        if self._path is None:
            raise KeyError(f"{self.kind} columns {names} were not read")
        more = arrow_table(self._path, self.kind, REPEATED.get(self.kind, ()), columns=names, data=self._data)
        if more is None:  # the file was checked when its first columns were read
            raise CheckFailed(f"sealed segment {self._path} lost its {self.kind} columns since it was read")
        for n in names:
            self._table = self._table.append_column(more.schema.field(n), more.column(n))

    def rows(self) -> list[Any]:
        from capture.model import CLASS_OF

        have = set(self._table.column_names)
        rest = [n for n in NAMES[self.kind] if n not in have]
        if rest:
            self._read(rest)  # in one read
        return build_instances(CLASS_OF[self.kind], [self.values(n) for n in NAMES[self.kind]])


class FetchedRows:
    """One kind of a day's rows as the columns DuckDB fetched (fetchnumpy), held until its rows
    are asked for (capture.model.DeferredRows): each column becomes Python values when first
    asked for, the rows only when asked for."""

    __slots__ = ("kind", "count", "_data", "_values")

    def __init__(self, kind: str, data: Mapping[str, Any]):
        self.kind = kind
        self._data = data
        self.count: int = len(data["ref"])
        self._values: dict[str, list[Any]] = {}

    def values(self, name: str) -> list[Any]:
        got = self._values.get(name)
        if got is None:
            got = self._values[name] = column_values(self._data[name])
        return got

    def values_at(self, name: str, rows: Sequence[int]) -> list[Any]:
        """One column's values at these rows (the column is not converted whole)."""
        got = self._values.get(name)
        if got is not None:
            return list(map(got.__getitem__, rows))
        import numpy as np

        return column_values(self._data[name][np.asarray(rows, dtype=np.int64)])

    def rows(self) -> list[Any]:
        from capture.model import CLASS_OF

        return build_instances(CLASS_OF[self.kind], [self.values(n) for n in NAMES[self.kind]])


class _KeyColumns(Mapping[str, Any]):
    """The sort-key columns of a kind, each fetched by ``values(name)`` only when in_order reads it."""

    def __init__(self, kind: str, values: Callable[[str], Any]):
        self._names = [n for n in ("ts_us", "stream", "snapshot_frame_id", "ref") if n in NAMES[kind]]
        self._values = values

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        return self._values(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def order_keys_of(kind: str, values: Callable[[str], Any]) -> Mapping[str, Any]:
    """The sort-key columns given by ``values(name)``, as in_order takes them (each read when used)."""
    return _KeyColumns(kind, values)


def order_keys(kind: str, cols: list[list[Any]]) -> Mapping[str, Any]:
    """The sort-key columns of columns in NAMES order, as in_order takes them."""
    at = dict(zip(NAMES[kind], cols, strict=True))
    return _KeyColumns(kind, at.__getitem__)


class ElementColumns:
    """A sealed day's element rows as columns, for click resolution (enrich.ring_candidates):
    the snapshot times and the bounds as numpy arrays (NULL bounds as NaN) for vectorised
    geometry, with the other columns click resolution reads (capture.model.HIT_FIELDS) in the
    same read of the file (one read of ten columns costs less than two of five, and a day with
    anonymous clicks nearly always has elements in reach of one); ElementHit rows are made only
    for the rows asked for, and the refs are read only if a tie between two elements asks."""

    __slots__ = ("ts_us", "left", "top", "width", "height", "_path", "_arrays")

    GEOMETRY = ("ts_us", "left", "top", "width", "height")

    def __init__(self, geometry: dict[str, Any], path: Path):
        import numpy as np

        self._path = path
        self._arrays: dict[str, Any] = dict(geometry)  # name -> pyarrow Array (strings as dictionaries)
        self.ts_us = numbers(geometry["ts_us"]).astype(np.int64, copy=False)
        # a float array's NULLs come out as NaN (no fill_null pass needed)
        self.left, self.top, self.width, self.height = (
            numbers(geometry[n]).astype(np.float64, copy=False)
            for n in ("left", "top", "width", "height"))

    @classmethod
    def read(cls, path: Path, use_threads: bool = True, opened: Callable[[], Any] | None = None) -> ElementColumns | None:
        """The geometry of one sealed elements file; None when it lacks a current column or its
        rows are not in time order (then the rows are fetched by snapshot with SQL). ``opened``:
        see arrow_table (called in any case)."""
        import numpy as np

        from capture.model import HIT_FIELDS

        names = [*cls.GEOMETRY, *(n for n in HIT_FIELDS if n not in cls.GEOMETRY)]
        # strings as dictionaries: their values are decoded once per distinct value
        strings = [n for n in names if COLUMNS["elements"][n] == "VARCHAR"]
        table = arrow_table(path, "elements", strings, columns=names, use_threads=use_threads, opened=opened)
        if table is None:
            if opened is not None:
                opened()  # a file without the columns is not decoded: nobody should wait for that
            return None
        out = cls({n: _one_array(table.column(n)) for n in names}, path)
        ts = out.ts_us
        if ts.size > 1 and not bool(np.all(ts[1:] >= ts[:-1])):
            return None
        return out

    def at(self, indices: list[int], names: Sequence[str] | None = None) -> dict[str, list[Any]]:
        """The HIT_FIELDS columns (or those of them named) at these positions, in the order
        given (NULL as None)."""
        import pyarrow as pa

        from capture.model import HIT_FIELDS

        take = positions(indices)
        out: dict[str, list[Any]] = {}
        for n in HIT_FIELDS if names is None else names:
            arr = self._arrays[n]
            if pa.types.is_dictionary(arr.type):
                out[n] = arr.dictionary.take(arr.indices.take(take)).to_pylist()
            else:
                out[n] = arr.take(take).to_pylist()
        return out

    def hits(self, indices: list[int]) -> list[Any]:
        """The ElementHit rows at these positions, in the order given."""
        from capture.model import HIT_FIELDS, ElementHit

        got = self.at(indices)
        return build_instances(ElementHit, [indices, *(got[n] for n in HIT_FIELDS)])

    def ref(self, hit: Any) -> str:
        """The ref of an ElementHit of these columns (the ref column is read at the first call)."""
        arr = self._arrays.get("ref")
        if arr is None:
            table = arrow_table(self._path, "elements", columns=["ref"])
            if table is None:  # the file was checked when its geometry was read
                raise CheckFailed(f"sealed segment {self._path} lost its element columns since it was read")
            arr = self._arrays["ref"] = _one_array(table.column("ref"))
        return str(arr[hit.row].as_py())


def _one_array(column: Any) -> Any:
    """A ChunkedArray as one Array (without a copy when it has one chunk, as a one-file read has)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
