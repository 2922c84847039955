"""The capture schema: what every source is mapped onto before it lands in the log.

Version 1. All times are integer microseconds since the Unix epoch, UTC (``ts_us``); nothing
downstream compares timestamp strings. Every row carries ``ref``, a stable reference to where it
came from (``<source-id>:<table>:<row id>``), which is also its identity in the log: landing the
same ref twice is a no-op.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from operator import attrgetter
from typing import Any, Protocol

CAPTURE_SCHEMA_VERSION = 1

# The kinds of rows the log stores, one Parquet file per kind per sealed day.
ROW_KINDS: tuple[str, ...] = ("snapshots", "inputs", "elements", "presence", "streams")

INPUT_KINDS: tuple[str, ...] = (
    "click", "move", "scroll", "key", "text", "app_switch", "window_focus", "clipboard"
)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One capture row: at ts_us, on stream (monitor), app showed window at url."""

    ref: str
    ts_us: int
    stream: str
    app: str
    window: str | None = None
    url: str | None = None
    focused: bool = True
    trigger: str | None = None  # what made the recorder capture (click, app_switch, idle, ...)
    heartbeat: bool = False  # captured because nothing happened for ~30 s
    source_frame_id: str | None = None  # the recorder's own id, what input events point at
    # The source measured this window as shown from ts_us until end_us (ActivityWatch events):
    # such a row is credited exactly that span. None for instant-style capture (screenpipe),
    # which the paper's dwell rule credits. Importers split spans at local midnight.
    end_us: int | None = None


@dataclass(frozen=True, slots=True)
class InputEvent:
    """One input event. ``text`` is typed content: sensitive, never emitted without opt-in."""

    ref: str
    ts_us: int
    kind: str  # one of INPUT_KINDS
    stream: str | None = None
    x: int | None = None  # pixels on the stream's screen
    y: int | None = None
    button: str | None = None
    key_code: int | None = None
    modifiers: int | None = None
    text: str | None = None
    clipboard_op: str | None = None  # copy | cut | paste for kind == clipboard
    app: str | None = None  # what the recorder believed was focused (may be stale)
    window: str | None = None
    url: str | None = None
    element_role: str | None = None
    element_name: str | None = None
    element_automation_id: str | None = None
    element_bounds: str | None = None  # JSON {"left","top","width","height"} in pixels
    source_frame_id: str | None = None


@dataclass(frozen=True, slots=True)
class Element:
    """One node of a snapshot's element tree; bounds are normalised to 0..1 of the screen."""

    ref: str
    ts_us: int  # the snapshot's time, so elements seal into the same day as their snapshot
    snapshot_frame_id: str  # Snapshot.source_frame_id of the owning snapshot
    source: str  # accessibility | ocr
    role: str | None = None
    text: str | None = None
    parent_ref: str | None = None
    depth: int | None = None
    left: float | None = None
    top: float | None = None
    width: float | None = None
    height: float | None = None


def names_no_element(element_name: str | None) -> bool:
    """Whether a click's recorder named no element (none, or only blanks): click resolution
    then looks for it in the element tree of the click's snapshot."""
    return not (element_name and element_name.strip())


# What a click's resolution reads of an element (af_pipeline.compiler.enrich.resolve_click),
# apart from its ref: every Element field but the tree's parent link and the snapshot time.
HIT_FIELDS = ("snapshot_frame_id", "source", "role", "text", "depth", "left", "top", "width", "height")


@dataclass(frozen=True, slots=True)
class ElementHit:
    """An element of a sealed day's element columns within reach of a click
    (capture.log.rows.ElementColumns.hits): the fields click resolution reads, and its row in
    the day's file. Its ref is not here: resolution reads a ref only to break a tie between
    equally good elements, and the ref column is the costliest of the file to decode
    (ElementColumns.ref reads it, once, when a tie asks)."""

    row: int
    snapshot_frame_id: str
    source: str
    role: str | None = None
    text: str | None = None
    depth: int | None = None
    left: float | None = None
    top: float | None = None
    width: float | None = None
    height: float | None = None

    @classmethod
    def of(cls, e: Element, row: int) -> ElementHit:
        return cls(row, *(getattr(e, n) for n in HIT_FIELDS))


@dataclass(frozen=True, slots=True)
class Presence:
    """An afk / not-afk interval, or an unlock instant, reported by the source."""

    ref: str
    ts_us: int  # start
    end_us: int
    status: str  # afk | not-afk | unlock (an instant: ts_us == end_us, presence starts)
    # the snapshot stream it describes (e.g. "aw:<host>"); None: every stream of the day
    stream: str | None = None


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """A capture stream (monitor) and its real screen size in pixels, when known."""

    ref: str
    ts_us: int  # first time the stream was seen that day
    stream: str
    width_px: int | None = None
    height_px: int | None = None


Row = Snapshot | InputEvent | Element | Presence | StreamInfo

KIND_OF: dict[type, str] = {
    Snapshot: "snapshots",
    InputEvent: "inputs",
    Element: "elements",
    Presence: "presence",
    StreamInfo: "streams",
}
CLASS_OF: dict[str, type] = {v: k for k, v in KIND_OF.items()}


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A source row that could not be used, with where it came from and why."""

    source: str  # the file it came from
    row: str  # the row / line / event locator inside that file
    reason: str
    raw: str | None = None  # a bounded excerpt of the row, for a human to look at


@dataclass
class CaptureBatch:
    """What an importer produces: usable rows plus the rows it had to quarantine."""

    source_id: str  # stable identity of the source (e.g. "screenpipe:<db file name>")
    recorder: str  # screenpipe | activitywatch | rpm | synth | recorder
    snapshots: list[Snapshot] = field(default_factory=list)
    inputs: list[InputEvent] = field(default_factory=list)
    elements: list[Element] = field(default_factory=list)
    presence: list[Presence] = field(default_factory=list)
    streams: list[StreamInfo] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)

    def rows(self, kind: str) -> list[Any]:
        return getattr(self, kind)  # type: ignore[no-any-return]

    def count(self) -> int:
        return sum(len(self.rows(k)) for k in ROW_KINDS)


class ElementSource(Protocol):
    """A day's element rows, fetched by snapshot when asked."""

    count: int  # every element row of the day

    def of_snapshots(self, frame_ids: Iterable[str]) -> list[Element]:
        """The elements of these snapshots (Snapshot.source_frame_id), in the log's order."""
        ...


@dataclass(frozen=True)
class SkippedLine:
    """A line of the log's open segments that its reader (capture.log.opensegments) left out:
    its file (from the data folder), its line number (from 1), the reason in words and the
    start of its text."""

    file: str
    line: int
    reason: str
    text: str = field(default="", compare=False, repr=False)

    def sentence(self) -> str:
        return f"{self.file} line {self.line} {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "reason": self.reason}


@dataclass
class DayCapture:
    """Every row of one local day, as the compiler receives it (sorted by the log)."""

    day: str  # YYYY-MM-DD in the user's zone
    tz: str
    snapshots: list[Snapshot] = field(default_factory=list)
    inputs: list[InputEvent] = field(default_factory=list)
    elements: list[Element] = field(default_factory=list)
    presence: list[Presence] = field(default_factory=list)
    streams: list[StreamInfo] = field(default_factory=list)
    sealed: bool = False
    # provenance: recorders seen and the sha256 of each sealed segment file read
    recorders: list[str] = field(default_factory=list)
    segment_hashes: dict[str, str] = field(default_factory=dict)
    # Set instead of ``elements`` by readers that fetch element trees on demand (they are most
    # of a day's rows, and only the trees under anonymous clicks are ever looked at).
    element_source: ElementSource | None = field(default=None, compare=False, repr=False)
    # Lines of an open segment the reader left out (SkippedLine: file, line, reason): a damaged
    # line, or one of a newer capture schema. Empty for a sealed day.
    skipped: list[SkippedLine] = field(default_factory=list, compare=False, repr=False)

    def element_count(self) -> int:
        return self.element_source.count if self.element_source is not None else len(self.elements)

    # A reader may leave a row kind as columns (DeferredRows) until something asks for the rows:
    # the compiler reads the few columns it needs (row_columns) and never makes the objects.
    # Reading the attribute (``capture.inputs``) makes them, so every other use is unchanged.
    def defer_rows(self, kind: str, columns: DeferredRows) -> None:
        """Hold ``kind``'s rows as these columns until they are first read."""
        self.__dict__.pop(kind, None)
        self.__dict__.setdefault("_deferred", {})[kind] = columns

    def row_columns(self, kind: str) -> DeferredRows | None:
        """The rows of ``kind`` as columns if they are still deferred, else None (use the rows)."""
        deferred = self.__dict__.get("_deferred")
        return deferred.get(kind) if deferred else None

    def values(self, kind: str, names: Iterable[str]) -> list[list[Any]]:
        """Columns of ``kind``'s rows, in row order: the reader's own columns while the rows are
        deferred (no object is made), else read off the rows."""
        columns = self.row_columns(kind)
        if columns is not None:
            return [columns.values(n) for n in names]
        rows = getattr(self, kind)
        return [list(map(attrgetter(n), rows)) for n in names]

    def count(self, kind: str) -> int:
        """How many rows of ``kind`` the day has (without making them, while they are deferred)."""
        columns = self.row_columns(kind)
        return columns.count if columns is not None else len(getattr(self, kind))

    def values_at(self, kind: str, names: Iterable[str], rows: Sequence[int]) -> list[list[Any]]:
        """Columns of ``kind`` at these row positions only (a deferred column is not decoded whole)."""
        columns = self.row_columns(kind)
        at = getattr(columns, "values_at", None)
        if at is not None:
            return [at(n, rows) for n in names]
        return [list(map(col.__getitem__, rows)) for col in self.values(kind, names)]

    def array(self, kind: str, name: str) -> Any:
        """A numeric column without NULLs (a time, say) as a numpy array (the reader's own
        buffer where it has one)."""
        columns = self.row_columns(kind)
        got = getattr(columns, "array", None)
        found = got(name) if got is not None else None
        if found is not None:
            return found
        import numpy as np

        return np.asarray(self.values(kind, (name,))[0])

    def codes(self, kind: str, name: str) -> tuple[Any, list[Any]]:
        """One column as (codes, values): a numpy int64 array, row i's value being
        ``values[codes[i]]`` and -1 meaning NULL. ``values`` may name one value twice (a
        reader's dictionary): compare values, not codes. Without objects or a string per row
        where the reader holds the column dictionary-encoded."""
        columns = self.row_columns(kind)
        got = getattr(columns, "codes", None)
        found = got(name) if got is not None else None
        if found is not None:
            return found  # type: ignore[no-any-return]
        return factorize(self.values(kind, (name,))[0])

    if not typing.TYPE_CHECKING:  # hidden from mypy, which would otherwise accept any attribute name

        def __getattr__(self, name: str) -> Any:
            # reached only for a name that is not set: a deferred row kind is made into rows now
            deferred = self.__dict__.get("_deferred")
            columns = deferred.get(name) if deferred else None
            if columns is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            rows = columns.rows()
            self.__dict__[name] = rows
            deferred.pop(name, None)
            return rows

    def __getstate__(self) -> dict[str, Any]:
        # copies and pickles carry rows, never the reader's columns
        for kind in list(self.__dict__.get("_deferred", {})):
            getattr(self, kind)
        return {k: v for k, v in self.__dict__.items() if k != "_deferred"}


def factorize(column: Sequence[Any]) -> tuple[Any, list[Any]]:
    """(codes, distinct values in order of first appearance) of a column, NULL as code -1."""
    import numpy as np  # only the compile's columnar paths need it

    seen: dict[Any, int] = {}
    codes = np.fromiter((-1 if v is None else seen.setdefault(v, len(seen)) for v in column),
                        dtype=np.int64, count=len(column))
    return codes, list(seen)


class DeferredRows(Protocol):
    """One row kind of a day held as columns until its rows are read, in the log's order (a
    reader's, e.g. capture.log.rows.ArrowRows)."""

    count: int

    def values(self, name: str) -> list[Any]:
        """One column as Python values (NULL as None)."""
        ...

    def rows(self) -> list[Any]:
        """The rows as capture objects, the same a read that makes them gives."""
        ...

    # Optional, for readers that can do better than from values(): values_at(name, rows) (one
    # column at some rows), array(name) and codes(name) (DayCapture.array and .codes, or None to
    # fall back).


_SCALAR_TYPES = {bool: "BOOLEAN", int: "BIGINT", float: "DOUBLE", str: "VARCHAR"}
_UnionType = type(int | None)


def column_types(cls: type) -> dict[str, str]:
    """DuckDB column types of a dataclass's fields, in field order: ``X | None`` is typed as X,
    a scalar (bool, int, float, str) as its SQL type, anything else (lists, dicts) as VARCHAR
    holding JSON text. The log's files and the warehouse's tables are both typed by this."""
    hints = typing.get_type_hints(cls)
    out: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        base = args[0] if len(args) == 1 and typing.get_origin(hint) in (typing.Union, _UnionType) else hint
        out[f.name] = _SCALAR_TYPES.get(base, "VARCHAR") if isinstance(base, type) else "VARCHAR"
    return out


def row_to_dict(row: Row) -> dict[str, Any]:
    return asdict(row)
