"""Rows of one kind held as columns, the form an import hands to the log in bulk.

An importer that has already checked a chunk of rows cell by cell (types, ranges, text) can give
them as columns (:class:`RowColumns`) instead of one Python object a row: the append groups,
deduplicates and seals them as columns, and builds row objects only for the rare paths that
need them (a day already in the log, a conflict). As a sequence it still reads as the row
objects, in the same order, so a consumer that iterates a batch sees what it always saw.

:func:`registered` hands checked columns to DuckDB as numpy arrays, to write an open or sealed
segment (the write side no longer imports pandas: about 85 MB and a second).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from operator import attrgetter, itemgetter
from typing import Any, overload

from capture.log.rows import build_instances, checked_columns, columns_ok, ints_as_floats
from capture.log.schema import COLUMNS, NAMES
from capture.model import CLASS_OF

_NONE = type(None)


class RowColumns(Sequence[Any]):
    """Rows of one kind as columns: ``cols[name]`` is a list per field of the kind, in NAMES order."""

    __slots__ = ("kind", "cols", "_rows", "verified")

    def __init__(self, kind: str, cols: dict[str, list[Any]], verified: bool = False) -> None:
        self.kind = kind
        self.cols = cols
        self._rows: list[Any] | None = None
        # Set by a producer that checked every cell already: columns_ok holds and DOUBLE columns
        # hold no int, so :func:`checked` need not scan the columns a second time.
        self.verified = verified

    @classmethod
    def from_rows(cls, kind: str, rows: Iterable[Any]) -> RowColumns:
        rows = list(rows)
        return cls(kind, {n: list(map(attrgetter(n), rows)) for n in NAMES[kind]})

    @classmethod
    def concat(cls, kind: str, parts: Iterable[RowColumns]) -> RowColumns:
        """One block of several, in order. Verified when every part is, or passes the checks as it
        is (the checks hold for a whole column exactly when they hold for each of its parts), so
        only the parts no producer checked are scanned."""
        out: dict[str, list[Any]] = {n: [] for n in NAMES[kind]}
        verified = True
        for part in parts:
            verified = verified and (part.verified or storable_as_is(kind, part.cols))
            for n in NAMES[kind]:
                out[n].extend(part.cols[n])
        return cls(kind, out, verified)

    @property
    def refs(self) -> list[Any]:
        return self.cols["ref"]

    def __len__(self) -> int:
        return len(self.cols["ref"])

    def rows(self) -> list[Any]:
        """The row objects (built once, on first use)."""
        if self._rows is None:
            self._rows = build_instances(CLASS_OF[self.kind], [self.cols[n] for n in NAMES[self.kind]])
        return self._rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows())

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        return self.rows()[i]

    def take(self, index: Sequence[int]) -> RowColumns:
        """The rows at these positions, in this order."""
        if len(index) < 2:
            return RowColumns(self.kind, {n: [col[i] for i in index] for n, col in self.cols.items()},
                              self.verified)
        pick = itemgetter(*index)  # C speed: a Python loop per cell costs more than the rest of the append
        return RowColumns(self.kind, {n: list(pick(col)) for n, col in self.cols.items()}, self.verified)

    def where(self, keep: Sequence[bool]) -> RowColumns:
        """The rows whose flag is true."""
        import itertools

        return RowColumns(self.kind, {n: list(itertools.compress(col, keep)) for n, col in self.cols.items()},
                          self.verified)

    def slice(self, start: int, stop: int) -> RowColumns:
        return RowColumns(self.kind, {n: col[start:stop] for n, col in self.cols.items()}, self.verified)


def storable_as_is(kind: str, cols: dict[str, list[Any]]) -> bool:
    """Whether checked() would store these columns unchanged: they pass columns_ok and no DOUBLE
    column holds an int (which ints_as_floats would turn into a float)."""
    return columns_ok(kind, cols) and not any(
        int in set(map(type, cols[n])) for n, t in COLUMNS[kind].items() if t == "DOUBLE")


def numpy_columns(kind: str, cols: dict[str, list[Any]]) -> dict[str, Any]:
    """Checked columns as numpy arrays (masked where NULL), which DuckDB scans as they are.

    Not Arrow or pandas: pyarrow's array() imports pandas whenever it is installed (about 85 MB
    and a second), and DuckDB reads a dict of numpy arrays without either."""
    import numpy as np

    out: dict[str, Any] = {}
    for n, sqltype in COLUMNS[kind].items():
        values = cols[n]
        if sqltype == "VARCHAR" or not values:
            arr = np.empty(len(values), dtype=object)
            arr[:] = values
            out[n] = arr
        elif sqltype == "DOUBLE":
            # None -> NaN; checked columns hold no NaN of their own (finite only), so NaN marks NULL
            data = np.array(values, dtype=np.float64)
            out[n] = np.ma.masked_array(data, np.isnan(data))
        else:
            mask = np.fromiter(map(_NONE.__instancecheck__, values), dtype=bool, count=len(values))
            dtype = np.int64 if sqltype == "BIGINT" else np.bool_
            if mask.any():
                obj = np.array(values, dtype=object)
                obj[mask] = 0
                out[n] = np.ma.masked_array(obj.astype(dtype), mask)
            else:
                out[n] = np.array(values, dtype=dtype)
    return out


@contextmanager
def registered(con: Any, name: str, kind: str, cols: dict[str, list[Any]]) -> Iterator[str]:
    """Register checked columns with DuckDB as ``name``; yields the SQL relation that reads them
    with the log's column types (a column of NULLs alone would otherwise have no type)."""
    con.register(name, numpy_columns(kind, cols))
    try:
        casts = ", ".join(f'CAST("{n}" AS {t}) AS "{n}"' for n, t in COLUMNS[kind].items())
        yield f"(SELECT {casts} FROM {name})"
    finally:
        con.unregister(name)


def checked(kind: str, rows: Any) -> tuple[dict[str, list[Any]], list[tuple[Any, str]]]:
    """checked_columns for rows given either way: columns that pass the checks as they are (or
    that their producer marked verified) are used as they are; otherwise their row objects go through checked_columns one by one."""
    if not isinstance(rows, RowColumns):
        return checked_columns(kind, rows)
    cols = {n: rows.cols[n] for n in NAMES[kind]}
    if rows.verified:
        return cols, []
    if not columns_ok(kind, cols):
        return checked_columns(kind, rows.rows())
    return ints_as_floats(kind, cols), []
