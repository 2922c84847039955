"""Open segments (open/<day>/<kind>.jsonl), read tolerantly: the one reader of open/.

A damaged or hand-edited line, a line of the wrong types, or one written by a newer capture
schema is reported with its file, line number and reason and left out; every other row is
served. Every path reads open/ here: the log (read_day, verify, seal, append), the read model
(``af day``, ``af context``, the MCP server, the views), which follows a growing file with
OpenSegmentFile. Sealing quarantines the reported lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capture.log.layout import SOURCES_OPEN
from capture.log.quarantine import excerpt
from capture.log.rows import columns_ok, row_problem
from capture.log.schema import COLUMNS, NAMES, REQUIRED, sort_key
from capture.model import CAPTURE_SCHEMA_VERSION, CLASS_OF, ROW_KINDS, DayCapture, SkippedLine

if TYPE_CHECKING:
    from capture.log.opencolumns import OpenColumns

# A line may name the capture schema version that wrote it; one newer than this code's is left
# out whatever its fields (they may mean something else in that version).
VERSION_FIELD = "capture_schema"
# What a last line without its line end is: a write still under way, or one a crash cut short
# (the next writer cuts it). Not a row yet, and not a problem of the log.
INCOMPLETE = "is incomplete (no line end: a write under way, or cut short by a crash; the next write removes it)"


def skipped_sentence(lines: Sequence[SkippedLine], named: int = 3) -> str:
    """One sentence for a reader's user: how many lines were left out, the first ``named`` of them."""
    shown = "; ".join(s.sentence() for s in lines[:named])
    more = f"; and {len(lines) - named} more" if len(lines) > named else ""
    return (f"warning: {len(lines)} line(s) of the log's open segments could not be read and were left out "
            f"({shown}{more}); everything else is answered, and `af log verify` lists them")


# Text fields whose values repeat from row to row (app, window, stream, role, a frame's id...):
# json.loads makes a new string for each row, and a reader following a busy open day holds every
# row, so equal values are made one object (sys.intern: freed with the last row holding it).
# Every text field but the ref, which is unique.
_SHARED = {kind: tuple(n for n, t in COLUMNS[kind].items() if t == "VARCHAR" and n != "ref") for kind in COLUMNS}
_intern = sys.intern
# Numbers repeat too (an element tree's time and bounds, a click's position): within one parse,
# equal ints, and equal non-zero floats (0.0 and -0.0 are equal but print differently), are
# made one object. About 100 of an element row's ~350 bytes held (bench/soak_rows.py).
_NUMBERS = {kind: tuple(n for n, t in COLUMNS[kind].items() if t in ("BIGINT", "DOUBLE")) for kind in COLUMNS}
# The row kinds a columnar follower holds as columns: all but the few presence and stream rows.
COLUMNAR_KINDS = ("snapshots", "inputs", "elements")


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace")[:300]


def parse_lines(data: bytes, kind: str, first_line: int = 1) -> tuple[list[Any], list[tuple[int, str, str]]]:
    """The rows of complete JSON lines ``data`` (numbered from ``first_line``), in file order, and
    the lines that are not rows: (line, reason, text)."""
    cls = CLASS_OF[kind]
    known = NAMES[kind]
    known_set = frozenset(known)
    shared = _SHARED[kind]
    numeric = _NUMBERS[kind]
    ints: dict[int, int] = {}
    floats: dict[float, float] = {}
    rows: list[Any] = []
    linenos: list[int] = []
    problems: list[tuple[int, str, str]] = []
    for lineno, line in enumerate(data.split(b"\n")[:-1] if data else [], start=first_line):
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            problems.append((lineno, f"is not valid JSON ({getattr(exc, 'msg', exc)})", _text(line)))
            continue
        if not isinstance(obj, dict):
            problems.append((lineno, "is not a JSON object", _text(line)))
            continue
        for n in shared:
            v = obj.get(n)
            if type(v) is str:
                obj[n] = _intern(v)
        for n in numeric:
            v = obj.get(n)
            t = type(v)  # exact types: a bool is an int, and 1 == 1.0
            if t is int:
                obj[n] = ints.setdefault(v, v)  # type: ignore[arg-type]
            elif t is float and v:
                obj[n] = floats.setdefault(v, v)  # type: ignore[arg-type]
        if VERSION_FIELD in obj:
            version = obj.pop(VERSION_FIELD)
            if type(version) is not int or version < 1:
                problems.append((lineno, f"has {VERSION_FIELD} {version!r}, not a capture schema version", _text(line)))
                continue
            if version > CAPTURE_SCHEMA_VERSION:
                problems.append((lineno, f"was written by capture schema v{version}, newer than this version's "
                                 f"v{CAPTURE_SCHEMA_VERSION} (a newer activity-frames reads it)", _text(line)))
                continue
        if obj.keys() != known_set:
            extra = sorted(set(obj) - known_set)
            # A field added to the schema later is absent from an older writer's lines: its default.
            missing = sorted(n for n in known_set - set(obj) if n in REQUIRED[kind])
            why = []
            if extra:
                why.append(f"has fields capture schema v{CAPTURE_SCHEMA_VERSION} does not know "
                           f"({', '.join(extra[:5])}: written by a newer version?)")
            if missing:
                why.append(f"lacks the fields {', '.join(missing[:5])}")
            if why:
                problems.append((lineno, "; ".join(why), _text(line)))
                continue
            try:
                rows.append(cls(**obj))
            except TypeError:
                problems.append((lineno, f"is not a {kind} row", _text(line)))
                continue
            linenos.append(lineno)
            continue
        rows.append(cls(**{n: obj[n] for n in known}))
        linenos.append(lineno)
    if rows and not columns_ok(kind, {n: list(map(attrgetter(n), rows)) for n in known}):
        good = []
        for row, lineno in zip(rows, linenos, strict=True):
            problem = row_problem(kind, row)
            if problem is None:
                good.append(row)
            else:
                problems.append((lineno, f"{kind} row {problem}", excerpt(kind, row)))
        rows = good
        problems.sort()
    return rows, problems


def parse_open(path: Path, kind: str) -> tuple[list[Any], list[tuple[int, str, str]]]:
    """The rows of an open segment file, and its lines that are not rows: (line, reason, text).

    Read tolerantly (parse_lines): a damaged or hand-edited line, or one written by a newer
    capture schema, is reported and left out; every other row is served. A torn tail is not a
    record (the next writer cuts it). Sealing quarantines the reported lines with their file
    and line number.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], []
    return parse_lines(data[: data.rfind(b"\n") + 1], kind)


# Bytes read at once by open_row_chunks: some thousands of lines, whatever the day's size.
CHUNK_BYTES = 1 << 20


def open_row_chunks(path: Path, kind: str, size: int = CHUNK_BYTES) -> Iterator[list[Any]]:
    """parse_open's rows, about ``size`` bytes of whole lines at a time, in file order. A caller
    that keeps only a little of each row (its ref) then never holds a busy open day's rows, or
    its file's bytes, at once: the sync pass did, twice a pass, and its resident memory grew with
    the open day (docs/benchmarks.md). Each line is judged on its own, so the rows are exactly
    parse_open's (a last line without its line end is left out, as there)."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed below, also when the caller stops early)
    except FileNotFoundError:
        return
    with fh:
        rest = b""
        while block := fh.read(size):
            data = rest + block
            end = data.rfind(b"\n") + 1
            rest = data[end:]
            if end:
                yield parse_lines(data[:end], kind)[0]


class OpenSegmentFile:
    """One open segment file followed as it grows: each ``refresh()`` parses only the lines
    appended since the last (a live recorder appends every few seconds). A file that got shorter
    or was replaced (a writer cut a torn tail, a seal removed the day) is read again whole.

    ``rows`` is sorted in the log's order and replaced, never changed in place, so a capture
    holding it keeps what it read. ``skipped`` names every line left out, the incomplete last
    line included."""

    def __init__(self, path: Path, kind: str, name: str, columnar: bool = False):
        self.path = path
        self.kind = kind
        self.name = name  # the file as skipped lines name it: log/open/<day>/<kind>.jsonl
        self.rows: list[Any] = []
        # A long-lived reader's rows as columns instead (opencolumns: a third of the memory);
        # ``rows`` then stays empty.
        self.columns: OpenColumns | None = None
        if columnar and kind in COLUMNAR_KINDS:
            from capture.log.opencolumns import OpenColumns  # numpy: not before `af mcp` answers

            self.columns = OpenColumns(kind)
        self._problems: list[SkippedLine] = []
        self._tail: SkippedLine | None = None
        self._offset = 0
        self._lines = 0
        self._inode: int | None = None

    def held(self) -> list[Any]:
        """Every row read so far, as row objects (made from the columns of a columnar follower)."""
        return self.columns.view().rows() if self.columns is not None else self.rows

    @property
    def skipped(self) -> list[SkippedLine]:
        return self._problems + ([self._tail] if self._tail is not None else [])

    def refresh(self) -> None:
        try:
            st = self.path.stat()
            size, inode = st.st_size, st.st_ino
        except FileNotFoundError:
            size, inode = 0, None
        if size < self._offset or inode != self._inode:
            self.rows, self._problems, self._tail, self._offset, self._lines = [], [], None, 0, 0
            if self.columns is not None:
                self.columns = type(self.columns)(self.kind)
            self._inode = inode
        if size <= self._offset:
            self._tail = None
            return
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read(size - self._offset)
        end = data.rfind(b"\n") + 1
        new, problems = parse_lines(data[:end], self.kind, self._lines + 1)
        if problems:
            self._problems = self._problems + [SkippedLine(self.name, n, why, text) for n, why, text in problems]
        if new and self.columns is not None:
            new.sort(key=sort_key(self.kind))
            self.columns.extend(new)
        elif new:
            key = sort_key(self.kind)
            new.sort(key=key)
            self.rows = sorted(self.rows + new, key=key) if self.rows and key(new[0]) < key(self.rows[-1]) \
                else self.rows + new
        self._offset += end
        self._lines += data.count(b"\n", 0, end)
        torn = data[end:]
        self._tail = SkippedLine(self.name, self._lines + 1, INCOMPLETE, _text(torn)) if torn.strip() else None


def read_open_day(open_dir: Path, day: str, tz: str, follow: dict[str, OpenSegmentFile] | None = None,
                  columnar: bool = False) -> DayCapture:
    """An open day's rows, sorted, with the lines left out in ``skipped``. ``follow`` keeps the
    day's files between calls (a reader following a live day passes the same dict each time).
    ``columnar``: the followers hold the COLUMNAR_KINDS as columns (opencolumns), and the capture
    has them as deferred rows (snapshots, inputs) and an element source (elements)."""
    folder = open_dir / day
    follow = {} if follow is None else follow
    cap = DayCapture(day=day, tz=tz, sealed=False)
    skipped: list[SkippedLine] = []
    for kind in ROW_KINDS:
        seg = follow.get(kind)
        if seg is None:
            seg = follow[kind] = OpenSegmentFile(folder / f"{kind}.jsonl", kind, f"log/open/{day}/{kind}.jsonl",
                                                 columnar)
        seg.refresh()
        if seg.columns is not None and kind == "elements":
            from capture.log.opencolumns import OpenElements

            cap.element_source = OpenElements(seg.columns.view())
        elif seg.columns is not None:
            cap.defer_rows(kind, seg.columns.view())  # a view: the rows as they are now
        else:
            setattr(cap, kind, seg.rows)  # shared, never mutated: a change makes a new list
        skipped.extend(seg.skipped)
    recorders: set[str] = set()
    try:
        data = (folder / SOURCES_OPEN).read_bytes()
    except FileNotFoundError:
        data = b""
    name = f"log/open/{day}/{SOURCES_OPEN}"
    for lineno, line in enumerate(data[: data.rfind(b"\n") + 1].split(b"\n")[:-1], start=1):
        if not line.strip():
            continue
        try:
            recorders.add(str(json.loads(line)["recorder"]))
        except (ValueError, KeyError, TypeError, IndexError, RecursionError):
            skipped.append(SkippedLine(name, lineno, "is not a source note (a JSON object with a recorder)",
                                       _text(line)))
    cap.recorders = sorted(recorders)
    cap.skipped = skipped
    return cap


def open_sizes(folder: Path) -> tuple[int, ...]:
    return tuple(
        (folder / f"{k}.jsonl").stat().st_size if (folder / f"{k}.jsonl").exists() else -1 for k in ROW_KINDS
    )
