"""An open day's rows held as columns: what a long-lived reader (the MCP server, ``af serve``)
keeps of a day that grows all day long.

As row objects an open day cost the MCP server about 300 bytes a row (a slotted object, an int
object per time, a string per ref), and a busy day has hundreds of thousands of rows: its
resident memory grew with the open day (docs/benchmarks.md, the soak). Held as columns it costs
about a third of that:

- numbers (BIGINT, DOUBLE, BOOLEAN) in numpy buffers, with a mask where a value is NULL;
- text in a dictionary per column (a code per row, one to four bytes as the distinct values
  need; app, window, stream, a frame's id repeat from row to row), code 0 being NULL;
- the refs, unique per row, as a dictionary of their prefix (up to the last ``:``: the source
  and table) and their rest in one byte buffer.

Rows stay in the log's order (schema.sort_key). Buffers grow by doubling and are only ever
written past the rows already held; a new row that sorts before a held one makes new buffers.
So a view (``ColumnRows``) taken earlier keeps seeing exactly the rows it was taken over.

A view is a ``capture.model.DeferredRows``: the compiler reads the columns it needs without a row
object being made; ``rows()`` makes the objects for the few readers that want them, for as long
as they hold them. ``OpenElements`` serves the element trees by snapshot (``ElementSource``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import add, attrgetter, itemgetter, methodcaller
from typing import Any

import numpy as np

from capture.log.rows import build_instances
from capture.log.schema import COLUMNS, NAMES
from capture.model import CLASS_OF, HIT_FIELDS, ElementHit

# Rows a store makes room for at first; it doubles from there (untouched room is not resident).
FIRST_CAPACITY = 1024
_DTYPES = {"BIGINT": np.int64, "DOUBLE": np.float64, "BOOLEAN": np.int8}
_RPARTITION = methodcaller("rpartition", ":")
_HEAD, _SEP, _TAIL = itemgetter(0), itemgetter(1), itemgetter(2)
# Text columns whose values are refs, unique per row: kept as _Refs, not in a dictionary.
REF_COLUMNS = ("ref", "parent_ref")
# The columns of each kind's order (schema.sort_key): a row's key is read off these.
_ORDER = {"snapshots": ("ts_us", "stream", "ref"), "inputs": ("ts_us", "stream", "ref"),
          "elements": ("ts_us", "snapshot_frame_id", "ref")}


class _Numbers:
    """A BIGINT, DOUBLE or BOOLEAN column: a numpy buffer and a NULL mask."""

    def __init__(self, sqltype: str):
        self.sqltype = sqltype
        self.data = np.empty(0, _DTYPES[sqltype])
        self.null = np.zeros(0, np.bool_)
        self.nulls = 0  # NULLs held: values() skips the mask when there are none

    def resize(self, capacity: int, n: int) -> None:
        data = np.empty(capacity, self.data.dtype)
        data[:n] = self.data[:n]
        null = np.zeros(capacity, np.bool_)
        null[:n] = self.null[:n]
        self.data, self.null = data, null

    def put(self, at: int, values: list[Any]) -> None:
        m = len(values)
        if None in values:
            mask = np.fromiter((v is None for v in values), np.bool_, m)
            self.null[at:at + m] = mask
            self.nulls += int(mask.sum())
            values = [0 if v is None else v for v in values]
        self.data[at:at + m] = values

    def permute(self, order: np.ndarray, capacity: int) -> None:
        data = np.empty(capacity, self.data.dtype)
        data[:len(order)] = self.data[order]
        null = np.zeros(capacity, np.bool_)
        null[:len(order)] = self.null[order]
        self.data, self.null = data, null

    def values(self, at: Any) -> list[Any]:
        part = self.data[at]
        out: list[Any] = (part.astype(np.bool_) if self.sqltype == "BOOLEAN" else part).tolist()
        if self.nulls:
            for i in np.flatnonzero(self.null[at]).tolist():
                out[i] = None
        return out


class _Texts:
    """A VARCHAR column as codes into its distinct values (0: NULL). The codes are as narrow as
    the distinct values allow (most of an input event's text columns hold only NULL)."""

    def __init__(self) -> None:
        self.codes: np.ndarray = np.empty(0, np.int8)
        self.distinct: list[str | None] = [None]
        self.index: dict[str | None, int] = {None: 0}

    def resize(self, capacity: int, n: int) -> None:
        codes = np.empty(capacity, self.codes.dtype)
        codes[:n] = self.codes[:n]
        self.codes = codes

    def put(self, at: int, values: list[Any]) -> None:
        index = self.index
        for v in dict.fromkeys(values):  # new values, in the order they first appear
            if v not in index:
                index[v] = len(self.distinct)
                self.distinct.append(v)
        codes = list(map(index.__getitem__, values))
        if len(self.distinct) > np.iinfo(self.codes.dtype).max:  # wider codes, in a new buffer
            wide = np.empty(len(self.codes), np.int16 if len(self.distinct) <= 2**15 - 1 else np.int32)
            wide[:at] = self.codes[:at]
            self.codes = wide
        self.codes[at:at + len(values)] = codes

    def permute(self, order: np.ndarray, capacity: int) -> None:
        codes = np.empty(capacity, self.codes.dtype)
        codes[:len(order)] = self.codes[order]
        self.codes = codes

    def values(self, at: Any) -> list[Any]:
        return list(map(self.distinct.__getitem__, self.codes[at].tolist()))


class _Refs:
    """A column of refs (unique per row: a row's own, an element's parent): a dictionary of their
    prefixes (up to the last ':', the source and its table) and the rest in one byte buffer.
    NULL is a length of -1."""

    def __init__(self) -> None:
        self.prefix = _Texts()
        self.start = np.empty(0, np.int64)
        self.length = np.empty(0, np.int32)
        self.blob = bytearray()

    def resize(self, capacity: int, n: int) -> None:
        self.prefix.resize(capacity, n)
        start, length = np.empty(capacity, np.int64), np.empty(capacity, np.int32)
        start[:n], length[:n] = self.start[:n], self.length[:n]
        self.start, self.length = start, length

    def put(self, at: int, values: list[Any]) -> None:
        # at C speed (map over the whole chunk): a busy day's refs are most of a parse's values
        m = len(values)
        nulls = None in values
        parts = list(map(_RPARTITION, ["" if v is None else v for v in values] if nulls else values))
        prefixes: list[str | None] = list(map(add, map(_HEAD, parts), map(_SEP, parts)))
        rests = list(map(str.encode, map(_TAIL, parts)))
        lengths = np.fromiter(map(len, rests), np.int64, m)
        self.start[at:at + m] = len(self.blob) + np.cumsum(lengths) - lengths
        if nulls:
            lengths[np.fromiter((v is None for v in values), np.bool_, m)] = -1
            prefixes = [None if v is None else p for v, p in zip(values, prefixes, strict=True)]
        self.length[at:at + m] = lengths
        self.blob += b"".join(rests)
        self.prefix.put(at, prefixes)

    def permute(self, order: np.ndarray, capacity: int) -> None:
        self.prefix.permute(order, capacity)
        start, length = np.empty(capacity, np.int64), np.empty(capacity, np.int32)
        start[:len(order)], length[:len(order)] = self.start[order], self.length[order]
        self.start, self.length = start, length

    def values(self, at: Any) -> list[Any]:
        blob = self.blob
        return [None if k < 0 else p + blob[s:s + k].decode("utf-8") for p, s, k in
                zip(self.prefix.values(at), self.start[at].tolist(), self.length[at].tolist(), strict=True)]


class OpenColumns:
    """One row kind of an open day (snapshots, inputs or elements), as columns in the log's
    order. ``extend`` adds checked rows (a parse's), ``view`` gives a DeferredRows over some of
    them that stays as it was taken while more rows come."""

    def __init__(self, kind: str):
        self.kind = kind
        self.count = 0
        self._capacity = 0
        self._columns: dict[str, Any] = {
            name: _Refs() if name in REF_COLUMNS else _Texts() if t == "VARCHAR" else _Numbers(t)
            for name, t in COLUMNS[kind].items()}

    def column(self, name: str) -> Any:
        return self._columns[name]

    def extend(self, rows: Sequence[Any]) -> None:
        """Add rows (checked, in the log's order among themselves)."""
        if rows:
            self.extend_columns([list(map(attrgetter(n), rows)) for n in NAMES[self.kind]])

    def extend_columns(self, columns: list[list[Any]]) -> None:
        """Add rows given as one list per field (NAMES order), in the log's order among themselves."""
        m = len(columns[0]) if columns else 0
        if not m:
            return
        n = self.count
        if n + m > self._capacity:
            self._capacity = max(FIRST_CAPACITY, 2 * self._capacity, n + m)
            for col in self._columns.values():
                col.resize(self._capacity, n)
        for name, values in zip(NAMES[self.kind], columns, strict=True):
            self._columns[name].put(n, values)
        if n and self._key(n) < self._key(n - 1):  # a row sorts before one held: put all in order
            self._reorder(n + m)
        self.count = n + m

    def _key(self, i: int) -> tuple[Any, ...]:
        return tuple("" if v is None else v for v in
                     (self._columns[name].values(slice(i, i + 1))[0] for name in _ORDER[self.kind]))

    def _reorder(self, n: int) -> None:
        every = slice(0, n)
        keys = [self._columns[name].values(every) for name in _ORDER[self.kind]]
        if keys[1] and None in keys[1]:
            keys[1] = ["" if v is None else v for v in keys[1]]
        order = np.array(sorted(range(n), key=list(zip(*keys, strict=True)).__getitem__), dtype=np.int64)
        # new buffers, so views taken before keep their rows
        for col in self._columns.values():
            col.permute(order, self._capacity)

    def dump(self) -> dict[str, Any]:
        """The rows as plain values (bytes, lists, strings: for marshal), restore's input."""
        n = self.count
        out: dict[str, Any] = {"count": n}
        for name, col in self._columns.items():
            if isinstance(col, _Numbers):
                out[name] = [col.data[:n].tobytes(), col.null[:n].tobytes() if col.nulls else b""]
            elif isinstance(col, _Texts):
                out[name] = [col.codes.dtype.str, col.codes[:n].tobytes(), col.distinct[1:]]
            else:
                p = col.prefix
                out[name] = [p.codes.dtype.str, p.codes[:n].tobytes(), p.distinct[1:], col.start[:n].tobytes(),
                             col.length[:n].tobytes(), bytes(col.blob)]
        return out

    @classmethod
    def restore(cls, kind: str, data: dict[str, Any]) -> OpenColumns:
        """The store dump() described; ValueError (or KeyError, TypeError) when ``data`` is not one."""
        store = cls(kind)
        n = int(data["count"])
        store._capacity, store.count = n, n

        def codes(col: _Texts, dtype: str, raw: bytes, distinct: list[Any]) -> None:
            if dtype not in ("|i1", "<i2", "<i4") or any(type(v) is not str for v in distinct):
                raise ValueError("not a text column")
            col.codes = np.frombuffer(raw, dtype, n).copy()
            col.distinct = [None, *distinct]
            col.index = {v: i for i, v in enumerate(col.distinct)}
            if len(col.index) != len(col.distinct) or (n and not 0 <= int(col.codes.min()) <= int(col.codes.max())
                                                         < len(col.distinct)):
                raise ValueError("codes outside their dictionary")

        for name, col in store._columns.items():
            entry = data[name]
            if isinstance(col, _Numbers):
                col.data = np.frombuffer(entry[0], col.data.dtype, n).copy()
                col.null = np.frombuffer(entry[1], np.bool_, n).copy() if entry[1] else np.zeros(n, np.bool_)
                col.nulls = int(col.null.sum())
            elif isinstance(col, _Texts):
                codes(col, *entry)
            else:
                codes(col.prefix, *entry[:3])
                col.start = np.frombuffer(entry[3], np.int64, n).copy()
                col.length = np.frombuffer(entry[4], np.int32, n).copy()
                col.blob = bytearray(entry[5])
                if n and int((col.start + np.maximum(col.length, 0)).max()) > len(col.blob):
                    raise ValueError("refs past the end of their bytes")
        return store

    def view(self, lo: int = 0, hi: int | None = None) -> ColumnRows:
        """The rows lo..hi-1 (all by default), as they are now."""
        hi = self.count if hi is None else min(hi, self.count)
        return ColumnRows(self, slice(lo, max(lo, hi)))


class ColumnRows:
    """Some rows of an OpenColumns (a range or positions) as capture.model.DeferredRows."""

    __slots__ = ("kind", "count", "_at", "_columns")

    def __init__(self, store: OpenColumns, at: slice | np.ndarray):
        self.kind = store.kind
        # the buffers as they are now: a later extend writes past them or makes new ones
        self._columns = {name: _frozen(col) for name, col in store._columns.items()}
        self._at = at
        self.count = (at.stop - at.start) if isinstance(at, slice) else len(at)

    def values(self, name: str) -> list[Any]:
        return self._columns[name].values(self._at)  # type: ignore[no-any-return]

    def values_at(self, name: str, rows: Sequence[int] | np.ndarray) -> list[Any]:
        if not len(rows):
            return []
        at = np.asarray(rows, dtype=np.int64)
        at = at + self._at.start if isinstance(self._at, slice) else self._at[at]
        return self._columns[name].values(at)  # type: ignore[no-any-return]

    def array(self, name: str) -> Any:
        col = self._columns[name]
        if not isinstance(col, _Numbers) or col.sqltype == "BOOLEAN" or (col.nulls and col.null[self._at].any()):
            return None
        return col.data[self._at].copy()

    def codes(self, name: str) -> tuple[Any, list[Any]] | None:
        col = self._columns[name]
        if not isinstance(col, _Texts):
            return None
        return col.codes[self._at].astype(np.int64) - 1, col.distinct[1:]

    def rows(self) -> list[Any]:
        return build_instances(CLASS_OF[self.kind], [self.values(n) for n in NAMES[self.kind]])

    def between(self, start_us: int, end_us: int) -> ColumnRows:
        """The rows timed inside [start_us, end_us) (the log's order starts with the time)."""
        if not isinstance(self._at, slice):
            raise TypeError("between() takes a range of rows, not of positions taken (take())")
        times = self._columns["ts_us"].data[self._at]
        lo, hi = np.searchsorted(times, (start_us, end_us), "left").tolist()
        return self._sub(slice(self._at.start + lo, self._at.start + hi))

    def take(self, positions: Sequence[int]) -> ColumnRows:
        """These rows of the view (positions in it), in this order."""
        at = np.asarray(positions, dtype=np.int64)
        return self._sub(at + self._at.start if isinstance(self._at, slice) else self._at[at])

    def _sub(self, at: slice | np.ndarray) -> ColumnRows:
        out = object.__new__(ColumnRows)
        out.kind, out._columns, out._at = self.kind, self._columns, at
        out.count = (at.stop - at.start) if isinstance(at, slice) else len(at)
        return out


def _frozen(col: Any) -> Any:
    """A copy of a column's handles (not its data): the buffers and dictionary as they are now.
    A store only writes past its rows, into these same buffers, or makes new ones."""
    out = object.__new__(type(col))
    out.__dict__.update(col.__dict__)
    if isinstance(col, _Refs):
        out.prefix = _frozen(col.prefix)
    return out


class OpenElements:
    """An open day's element trees served by snapshot (capture.model.ElementSource): the
    elements of a view of the day's element columns (the whole day, or a part: ``between``)."""

    def __init__(self, rows: ColumnRows):
        self._rows = rows
        self.count = rows.count

    def between(self, start_us: int, end_us: int) -> OpenElements:
        """Only the elements timed inside [start_us, end_us)."""
        return OpenElements(self._rows.between(start_us, end_us))

    def of_snapshots(self, frame_ids: Iterable[str]) -> list[Any]:
        frames = self._rows._columns["snapshot_frame_id"]
        index = frames.index
        wanted = np.array(sorted({index[f] for f in frame_ids if f in index}), dtype=np.int32)
        if not len(wanted) or not self.count:
            return []
        hits = np.flatnonzero(np.isin(frames.codes[self._rows._at], wanted))
        if not len(hits):
            return []
        return build_instances(CLASS_OF["elements"], [self._rows.values_at(n, hits) for n in NAMES["elements"]])

    def columns(self) -> ElementGeometry:
        """The elements as columns for click resolution (enrich.ring_candidates), as a sealed
        day's capture.log.rows.ElementColumns gives them: no element object is made but the few
        in reach of a click."""
        return ElementGeometry(self._rows)


class ElementGeometry:
    """Element columns for click resolution (the interface of capture.log.rows.ElementColumns):
    times and bounds as numpy arrays (NULL bounds as NaN), the other fields by position."""

    def __init__(self, rows: ColumnRows):
        self._rows = rows
        self.ts_us = rows.array("ts_us")
        self.left, self.top, self.width, self.height = (self._floats(n) for n in ("left", "top", "width", "height"))

    def _floats(self, name: str) -> np.ndarray:
        col = self._rows._columns[name]
        at = self._rows._at
        out = col.data[at].astype(np.float64, copy=True)
        if col.nulls:
            out[col.null[at]] = np.nan
        return out  # type: ignore[no-any-return]

    def at(self, indices: list[int], names: Sequence[str] | None = None) -> dict[str, list[Any]]:
        return {n: self._rows.values_at(n, indices) for n in (HIT_FIELDS if names is None else names)}

    def hits(self, indices: list[int]) -> list[Any]:
        got = self.at(indices)
        return build_instances(ElementHit, [indices, *(got[n] for n in HIT_FIELDS)])

    def ref(self, hit: Any) -> str:
        return str(self._rows.values_at("ref", [hit.row])[0])
