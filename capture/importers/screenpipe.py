"""Import a screenpipe SQLite database (every era, also mixed in one file) into capture rows, read-only.

What is mapped (docs/importers.md says the same for users):

- ``frames`` -> Snapshot. The layout is decided per row, because a database screenpipe upgraded
  keeps its old rows in the old layout: a row whose ``ocr_text`` row names an app is 2024 layout
  (one row per window, each with its own insert time: the focused row is the snapshot, the
  others are background); a row without trigger but with a video chunk is 2025 video capture
  (one row per window, a cycle's rows share the timestamp: per monitor the focused row of the
  cycle is the snapshot; a cycle without a focused row is quarantined, "capture cycle without a
  focused window"); any other row is an event-driven capture and a snapshot itself.
  The stream is ``device_name``, else the video chunk's, else ``monitor_1``.
  ``capture_trigger`` is kept as the trigger; the heartbeat flag is set for the idle fallback
  triggers in HEARTBEAT_TRIGGERS.
- ``ui_events`` -> InputEvent. ``app_switch`` keeps the app in ``text_content``; clipboard keeps
  its operation as an ASCII code in ``modifiers`` (99 copy, 120 cut, 118 paste); buttons are
  numbers (0 left, 1 right, 2 middle). The stream is the monitor of the event's frame when
  ``frame_id`` is set, else unknown (None).
- ``elements`` and ``frames.accessibility_tree_json`` -> Element (bounds normalised 0..1). The
  JSON is screenpipe's flat depth-first node list (parents rebuilt from ``depth``) or a nested
  tree; current screenpipe writes the same nodes to ``elements`` too, so a frame's nodes come
  from ``elements`` when it has accessibility rows there and from the JSON otherwise (counted in
  the notes). The legacy ``accessibility`` table -> one text-only Element tied to the nearest
  snapshot.
- Numbers no recorder writes (Inf/NaN times, coordinates, codes or depths beyond any real value)
  quarantine their row ("unreadable timestamp", "number out of range").
- Rows come out as one batch per local day (:func:`iter_screenpipe`); element rows are read
  day by day so memory holds one day of them.
- StreamInfo per monitor and local day; the screen size comes from ``--screen`` or is derived
  from click events whose element bounds are known both in pixels (``ui_events.element_bounds``)
  and normalised (the same element in the frame's tree). It is never guessed from coordinates.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import hashlib
import itertools
import json
import json.scanner
import math
import operator
import pickle
import sqlite3
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from capture.errors import UserError
from capture.files import canonical_json
from capture.importers.common import (
    MAX_APP,
    MAX_ELEMENT_TEXT,
    MAX_TYPED_TEXT,
    MAX_URL,
    MAX_WINDOW,
    ZONELESS_UTC,
    ClockWatch,
    DaySeen,
    ImportBatch,
    Progress,
    ProgressFn,
    Texts,
    iter_rows,
    open_sqlite_readonly,
    read_failure,
    source_fingerprint,
    stream_infos,
    table_columns,
    ts_us,
    zoneless,
)
from capture.log.columns import RowColumns
from capture.log.rows import gc_paused
from capture.model import (
    CAPTURE_SCHEMA_VERSION,
    INPUT_KINDS,
    ROW_KINDS,
    Element,
    InputEvent,
    Snapshot,
    StreamInfo,
)
from capture.screenpipe_schema import BUTTONS, CLIPBOARD_OPS
from capture.timeutil import BadTimestamp

DEFAULT_STREAM = "monitor_1"
# capture_trigger values that mean "nothing happened, the recorder captured anyway".
HEARTBEAT_TRIGGERS = frozenset({"idle", "heartbeat", "timer", "periodic", "interval", "idle_fallback"})
# A legacy accessibility text row is tied to a snapshot at most this far away in time.
ACCESSIBILITY_MAX_GAP_US = 30 * 1_000_000
MAX_TREE_NODES = 20_000  # per accessibility_tree_json; deeper/larger trees are cut and counted
MAX_TREE_DEPTH = 256
SIZE_CANDIDATES = 200  # click events examined per monitor to derive its screen size
SPILL_ROWS = 4096  # rows held as objects (of any days) before they are packed (see _DaySpill)
Box = tuple[float, float, float, float]  # left, top, width, height
_NONE = type(None)
_INT = frozenset({int})
_INT_OR_NONE = frozenset({int, _NONE})
_TEXT = frozenset({str, _NONE})
_FLOAT_OR_NONE = frozenset({float, _NONE})
_STR = frozenset({str})
_FIRST = operator.itemgetter(0)
_LO, _HI = -0.5, 1.5  # normalised bounds kept as they are (see _unit)
DUPLICATE_FRAMES = "frames: duplicate rows skipped (identical apart from the id)"
BACKGROUND = "frames: background windows of a capture cycle (not the foreground; not imported)"
WHAT = "a screenpipe database (usually ~/.screenpipe/db.sqlite)"


def read_screenpipe(
    path: Path,
    *,
    tz: str | None = None,
    screens: dict[str, tuple[int, int]] | None = None,
    source_id: str | None = None,
    progress: ProgressFn | None = None,
) -> ImportBatch:
    """Read a screenpipe database into one batch. The file is opened read-only and never changed.

    ``tz`` is the user's zone (StreamInfo rows are per local day); ``screens`` overrides screen
    sizes per stream; ``source_id`` overrides the derived identity (see :func:`screenpipe_source_id`).
    For large databases prefer :func:`iter_screenpipe`, which holds one day of elements at a time.
    """
    merged: ImportBatch | None = None
    for chunk in iter_screenpipe(path, tz=tz, screens=screens, source_id=source_id, progress=progress):
        if merged is None:
            merged = chunk
            for kind in ROW_KINDS:  # as lists of rows (a batch of iter_screenpipe may hold columns)
                setattr(merged, kind, list(chunk.rows(kind)))
            continue
        for kind in ROW_KINDS:
            merged.rows(kind).extend(chunk.rows(kind))  # (a list: the first chunk's were made one)
        merged.quarantined.extend(chunk.quarantined)
        for what, n in chunk.notes.items():
            merged.note(what, n)
    assert merged is not None  # iter_screenpipe always yields at least one batch
    return merged


def iter_screenpipe(
    path: Path,
    *,
    tz: str | None = None,
    screens: dict[str, tuple[int, int]] | None = None,
    source_id: str | None = None,
    progress: ProgressFn | None = None,
    since: dict[str, int] | None = None,
    con: sqlite3.Connection | None = None,
) -> Iterator[ImportBatch]:
    """The same rows as :func:`read_screenpipe`, as one batch per local day (in ``tz``).

    Each batch holds every row of its day (so a log that seals past days as they land never sees
    a day twice); quarantined rows and notes ride on the batch during which they were found.
    Element rows, by far the most numerous, are read day by day, so memory holds one day of them.

    ``since`` (continuous sync): read only rows whose id is above ``since[table]`` for frames,
    ui_events and accessibility (elements and trees follow their frames); see :func:`watermarks`.

    ``con``: a connection of :func:`open_snapshot` (the caller's, left open): the rows are read
    in its read transaction, with what the caller read before. Without it the reader holds its
    own: every table is read as of one instant either way.
    """
    path = _resolve(path)
    with _reading(path, con, snapshot=True) as use:
        yield from _Reader(use, path, tz, screens or {}, source_id, progress, since or {}).chunks()


@contextlib.contextmanager
def _reading(path: Path, con: sqlite3.Connection | None, snapshot: bool = False) -> Iterator[sqlite3.Connection]:
    """The caller's connection (left open), or one opened here and closed after (``snapshot``:
    in one read transaction, see open_snapshot); a database that fails part-way through is a
    one-sentence UserError."""
    use = con if con is not None else open_snapshot(path) if snapshot else open_sqlite_readonly(_resolve(path), WHAT)
    try:
        yield use
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # corrupt pages / damaged schema text
        raise read_failure(path, exc) from None
    finally:
        if con is None:
            use.close()


def open_snapshot(path: Path) -> sqlite3.Connection:
    """A read-only connection inside one read transaction, begun now: every query through it
    sees the database as it was at this instant. screenpipe commits a frame together with its
    ui_events and elements; read in separate snapshots, a commit falling between the frames query
    and the next would give events without their frame (an unknown stream) and elements pointing
    at a frame "that does not exist". In WAL mode (screenpipe's) writers go on meanwhile; in
    rollback-journal mode the shared lock makes them wait until the connection is closed."""
    path = _resolve(path)
    con = open_sqlite_readonly(path, WHAT)
    try:
        if not con.in_transaction:
            con.execute("BEGIN")
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot starts at a read
    except sqlite3.DatabaseError as exc:
        con.close()
        raise read_failure(path, exc) from None
    return con


SINCE_TABLES = ("frames", "ui_events", "accessibility")


def watermarks(path: Path, overlap: int = 0) -> dict[str, int]:
    """The highest row id of each table a sync pass reads by id, less ``overlap`` rows' worth
    (rows written while a pass read are read again by the next; refs make that land once)."""
    con = open_sqlite_readonly(Path(path), WHAT)
    try:
        tables = {str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        out = {}
        for table in SINCE_TABLES:
            if table in tables:
                (top,) = con.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()
                out[table] = max(0, int(top or 0) - overlap)
        return out
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        raise read_failure(path, exc) from None
    finally:
        con.close()


def source_identity(path: Path, con: sqlite3.Connection | None = None) -> str:
    """The source id a database would be imported under (its identity, see screenpipe_source_id);
    ``con``: read through the caller's connection (left open)."""
    with _reading(Path(path), con) as use:
        return screenpipe_source_id(use, Path(path))


# -- the source watermark ------------------------------------------------------------------------
# What `af import` records about a database after importing it completely, so that importing it
# again is answered from the database's ends alone: per table its row count, highest row id and a
# hash of the content of its last rows. Bump WATERMARK_VERSION when the mapping changes what a
# database lands, so that older records no longer match.
WATERMARK_VERSION = 1
MARK_TABLES = ("frames", "ui_events", "elements", "accessibility", "ocr_text", "video_chunks")
TAIL_ROWS = 64  # rows at the end of each table whose content the watermark hashes


def _tail_hash(con: sqlite3.Connection, table: str, top: int) -> str:
    """sha256 of every column of the last TAIL_ROWS rows at or below row id ``top``."""
    h = hashlib.sha256()
    for row in con.execute(f'SELECT rowid, * FROM "{table}" WHERE rowid <= ? ORDER BY rowid DESC LIMIT {TAIL_ROWS}',
                           (top,)):
        _hash_row(h, row)
    return h.hexdigest()


def _hash_row(h: Any, row: Sequence[Any]) -> None:
    for v in row:
        # the type tag keeps 1, 1.0, '1' and b'1' apart
        h.update(f"{type(v).__name__}:{len(v) if isinstance(v, (str, bytes)) else ''}:".encode())
        h.update(v if isinstance(v, bytes) else str(v).encode("utf-8", "surrogatepass"))
    h.update(b"\n")


def source_mark(path: Path, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The watermark of a database as it is now: its identity, the import options, and per table
    its rows, highest row id and tail hash (a few indexed reads, whatever the database's size)."""
    path = _resolve(path)
    con = open_sqlite_readonly(path, WHAT)
    try:
        tables = {str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        con.text_factory = bytes  # hashed as stored: no decoding, no repair
        per: dict[str, Any] = {}
        for table in MARK_TABLES:
            if table in tables:
                (rows, top) = con.execute(f'SELECT count(*), max(rowid) FROM "{table}"').fetchone()
                top = int(top or 0)
                per[table] = {"rows": int(rows), "max_id": top, "tail": _tail_hash(con, table, top)}
        con.text_factory = str
        identity = screenpipe_source_id(con, path) if "frames" in tables else None
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        raise read_failure(path, exc) from None
    finally:
        con.close()
    mark = {"kind": "screenpipe", "version": WATERMARK_VERSION, "capture_schema": CAPTURE_SCHEMA_VERSION,
            "identity": identity, "options": dict(sorted((options or {}).items())), "tables": per}
    return json.loads(json.dumps(mark))  # type: ignore[no-any-return]  # as read back: comparable with ==


def grown_since(path: Path, old: dict[str, Any], now: dict[str, Any]) -> dict[str, int] | None:
    """Row ids to read from (``since`` of :func:`iter_screenpipe`) when the database is the one
    ``old`` was taken of, only grown at its end: same identity and options, and every table's
    recorded tail rows still there with the same content. None when it is not (read it whole)."""
    keys = ("kind", "version", "capture_schema", "identity", "options")
    if any(old.get(k) != now.get(k) for k in keys) or not isinstance(old.get("tables"), dict):
        return None
    con = open_sqlite_readonly(_resolve(path), WHAT)
    try:
        con.text_factory = bytes
        for table, was in old["tables"].items():
            cur = now["tables"].get(table)
            if not isinstance(was, dict) or cur is None or cur["max_id"] < was.get("max_id", -1) \
                    or cur["rows"] < was.get("rows", -1):
                return None
            if _tail_hash(con, table, int(was["max_id"])) != was.get("tail"):
                return None
        if set(now["tables"]) - set(old["tables"]):
            return None  # a table that appeared (an upgrade): its rows may concern old frames
    except (sqlite3.DatabaseError, UnicodeDecodeError, KeyError, TypeError, ValueError):
        return None
    finally:
        con.close()
    return {t: max(0, int(old["tables"][t]["max_id"]) - GROWN_OVERLAP_ROWS) for t in SINCE_TABLES if t in old["tables"]}


SYNC_TAIL_ROWS = 8  # rows at a sync watermark whose content is checked at the next pass (a few:
# retention deleting into them would read as a rewrite, which costs a whole read, never a row)


def tail_marks(path: Path, marks: dict[str, Any] | None = None,
               con: sqlite3.Connection | None = None) -> dict[str, dict[str, Any]]:
    """Per table a sync pass reads by id: {"min_id", "max_id", "tail"}, a hash of the rows with
    ids in [min_id, max_id]: the table's last SYNC_TAIL_ROWS rows now, or (``marks``) the same id
    ranges as recorded at the last pass. Different hashes mean the rows at the watermark were
    rewritten (a restore or rollback), so new rows may sit below it. Retention, which deletes
    the oldest rows, leaves them alone. ``con``: read through the caller's connection (left
    open); without it the tables are read in one read transaction of their own."""
    with _reading(_resolve(path), con, snapshot=True) as use:
        decode = use.text_factory  # (the caller's connection gets its own back)
        try:
            tables = {str(r[0]) for r in use.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            use.text_factory = bytes
            out: dict[str, dict[str, Any]] = {}
            for table in SINCE_TABLES:
                if table not in tables:
                    continue
                was = (marks or {}).get(table)
                if marks is not None and not isinstance(was, dict):
                    continue
                if isinstance(was, dict):
                    lo, top = int(was.get("min_id", 0)), int(was.get("max_id", 0))
                else:
                    (found,) = use.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()
                    top = int(found or 0)
                    row = use.execute(f'SELECT rowid FROM "{table}" WHERE rowid <= ? ORDER BY rowid DESC LIMIT 1 '
                                      f"OFFSET {SYNC_TAIL_ROWS - 1}", (top,)).fetchone()
                    lo = int(row[0]) if row else 0
                h = hashlib.sha256()
                for values in use.execute(f'SELECT rowid, * FROM "{table}" WHERE rowid BETWEEN ? AND ? ORDER BY rowid',
                                          (lo, top)):
                    _hash_row(h, values)
                out[table] = {"min_id": lo, "max_id": top, "tail": h.hexdigest()}
            return out
        finally:
            use.text_factory = decode


def first_frames(path: Path, n: int, con: sqlite3.Connection | None = None) -> list[tuple[int, int]]:
    """(row id, UTC microseconds) of the database's lowest frame ids whose time is readable;
    ``con``: read through the caller's connection (left open)."""
    with _reading(path, con) as use:
        rows = use.execute("SELECT id, timestamp FROM frames ORDER BY id LIMIT ?", (4 * n,)).fetchall()
    out = []
    for fid, raw in rows:
        try:
            out.append((int(fid), ts_us(raw)))
        except (BadTimestamp, ValueError, TypeError, OverflowError):
            continue
    return out[:n]


GROWN_OVERLAP_ROWS = 200  # as a sync pass: a capture cycle half-written at the last import is read whole


def _resolve(path: Path) -> Path:
    path = Path(path).expanduser()
    if path.is_dir() and (path / "db.sqlite").is_file():
        path = path / "db.sqlite"  # pointed at screenpipe's folder (~/.screenpipe)
    return path


# Columns of a frame row that screenpipe never rewrites once the row exists; a column a later era
# added reads as '' so an upgraded database keeps its id. Not app_name / window_name / focused:
# screenpipe's ocr_text-to-frames migration worker may fill them in on old rows later.
IDENTITY_FRAME_COLS = ("id", "timestamp", "offset_index", "video_chunk_id", "name", "device_name",
                       "browser_url", "snapshot_path", "accessibility_text")


def screenpipe_source_id(con: sqlite3.Connection, path: Path) -> str:
    """``screenpipe:<file name>:<hash of the content of the first frame row>``.

    The hash covers the first frame's stable columns (IDENTITY_FRAME_COLS: time, video file or
    snapshot path, device, ...) and the text, app and window of its first ``ocr_text`` row, so a
    different database whose first frame merely has the same id and time gets its own identity.
    The first row never changes while the database grows or is upgraded by screenpipe, so the same
    database keeps its identity when re-imported later or from another folder. (Only the first
    row: the first N rows of a young database would change as it grows.)
    """
    cols = set(table_columns(con, "frames"))
    parts = [f'"{c}"' if c in cols else "NULL" for c in IDENTITY_FRAME_COLS]
    row = con.execute(f"SELECT {', '.join(parts)} FROM frames ORDER BY id LIMIT 1").fetchone()
    if row is None:
        return f"screenpipe:{path.name}:{source_fingerprint('empty')}"
    ocr: tuple[Any, ...] = ()
    ocr_cols = set(table_columns(con, "ocr_text"))
    if {"frame_id", "text"} <= ocr_cols:
        wanted = [c if c in ocr_cols else "NULL" for c in ("text", "app_name", "window_name")]
        ocr = con.execute(f"SELECT {', '.join(wanted)} FROM ocr_text WHERE frame_id = ? ORDER BY rowid LIMIT 1",
                          (row[0],)).fetchone() or ()
    content = ["" if v is None else v for v in (*row, *ocr)]
    return f"screenpipe:{path.name}:{source_fingerprint(*content)}"


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "t", "yes")
    return bool(value)


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(round(value))
    if isinstance(value, str):
        try:
            return int(float(value.strip()))
        except (ValueError, OverflowError):  # "nan", "1e999"
            return None
    return None


# Plausible magnitudes of integer cells; beyond them a row is broken, not data (and a 64-bit
# column downstream could not hold it).
COORD_LIMIT = 1_000_000  # pixels, either side of the origin (monitors left of / above the main one)
CODE_LIMIT = 2**32  # key codes, modifier masks (clipboard ASCII codes included)
BUTTON_LIMIT = 256
DEPTH_LIMIT = 1_000_000


def _out_of_range(cells: Iterable[tuple[str, int | None, int]]) -> str | None:
    """``"x=1e+30"``-style text naming the first cell whose value lies outside +-limit, else None."""
    for name, value, limit in cells:
        if value is not None and not -limit <= value <= limit:
            return f"{name}={value}"[:80]
    return None


def _unit(value: Any) -> float | None:
    """A normalised coordinate, or None when missing / not finite / far outside 0..1."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    if not math.isfinite(v) or v < -0.5 or v > 1.5:
        return None
    return v


def _cells_kept_as_they_are(texts: Sequence[Any], depths: Sequence[Any], bounds: Sequence[Sequence[Any]]) -> bool:
    """Whether a chunk's element texts, depths and bounds (columns) are all cells the row-by-row
    checks keep unchanged: plain text within the limit and without NUL, depths in range, bounds
    finite within _LO.._HI (NaN fails both comparisons, as it fails the row check)."""
    types = set(map(type, texts))
    if not types <= _TEXT:
        return False
    present = [t for t in texts if t is not None] if _NONE in types else texts
    if present and (max(map(len, present)) > MAX_ELEMENT_TEXT or "\x00" in "".join(present)):
        return False
    types = set(map(type, depths))
    if not types <= _INT_OR_NONE:
        return False
    present = [d for d in depths if d is not None] if _NONE in types else depths
    if present and not (0 <= min(present) and max(present) <= DEPTH_LIMIT):
        return False
    for col in bounds:
        types = set(map(type, col))
        if not types <= _FLOAT_OR_NONE:
            return False
        present = [v for v in col if v is not None] if _NONE in types else col
        if not (all(map(_LO.__le__, present)) and all(map(_HI.__ge__, present))):
            return False
    return True


class _Reader:
    def __init__(
        self,
        con: sqlite3.Connection,
        path: Path,
        tz: str | None,
        screens: dict[str, tuple[int, int]],
        source_id: str | None,
        progress: ProgressFn | None,
        since: dict[str, int] | None = None,
    ) -> None:
        self.since = dict(since or {})
        self._devices: dict[Any, Any] | None = None
        self.con = con
        self.path = path
        self.file = str(path)
        self.screens = screens
        self.progress = Progress(f"screenpipe {path.name}", progress)
        self.tables = {str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "frames" not in self.tables:
            raise UserError(
                f"{path} has no frames table, so it is not a screenpipe database "
                f"(tables: {', '.join(sorted(self.tables)[:8]) or 'none'})"
            )
        self.frame_cols = set(table_columns(con, "frames"))
        missing = {"id", "timestamp"} - self.frame_cols
        if missing:
            raise UserError(f"{path}: table frames lacks column(s) {', '.join(sorted(missing))}; not a screenpipe layout")
        self.legacy = (
            "capture_trigger" not in self.frame_cols
            and "accessibility_tree_json" not in self.frame_cols
            and "elements" not in self.tables
        )
        sid = source_id or screenpipe_source_id(con, path)
        self.batch = ImportBatch(source_id=sid, recorder="screenpipe")
        self.text = Texts(self.batch)
        self.days = DaySeen(tz)
        # frame id -> stream for every frame row (what ui_events point at)
        self.stream_of: dict[int, str] = {}
        # frame id -> ts_us for frames that became snapshots (an int, not a tuple with the id's
        # text: this holds every kept frame of the source, 132k in the 61-day benchmark)
        self.kept: dict[int, int] = {}
        self._tree_roles: dict[str, str | None] = {}  # raw role -> cleaned, interned
        self.tree_frames: set[int] = set()  # kept frames with an accessibility_tree_json
        self._labels: dict[tuple[str, Any], str | None] = {}  # (field, raw) -> cleaned role/source
        # frame id -> why it did not become a snapshot ("background" / "quarantined")
        self.dropped: dict[int, str] = {}
        self._shared: dict[str, str] = {}
        # Held until their day is made: snapshots as tuples of Snapshot's fields in order, inputs
        # as the tuples _ui_events makes.
        self.snaps = _DaySpill()
        self.inputs = _DaySpill()

    # -- helpers -------------------------------------------------------------------------------

    def _share(self, value: str | None) -> str | None:
        """One str object per distinct app / window / url / element name: every input and snapshot
        of the whole source is held until its day lands, and these repeat on most of them."""
        return None if value is None else self._shared.setdefault(value, value)

    def _select(self, table: str, wanted: list[str]) -> str:
        cols = set(table_columns(self.con, table))
        parts = [f'"{c}"' if c in cols else "NULL" for c in wanted]
        where = f" WHERE id > {int(self.since[table])}" if table in self.since else ""
        return f"SELECT {', '.join(parts)} FROM \"{table}\"{where} ORDER BY id"

    def _total(self, table: str) -> int:
        row = self.con.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()
        return int(row[0] or 0)

    def _older_stream(self, fid: int) -> str | None:
        """The stream of a frame below the sync watermark (not read by this pass)."""
        cols = self.frame_cols
        device = "device_name" if "device_name" in cols else "NULL"
        chunk = "video_chunk_id" if "video_chunk_id" in cols else "NULL"
        row = self.con.execute(f"SELECT {device}, {chunk} FROM frames WHERE id = ?", [fid]).fetchone()
        if row is None:
            return None
        dev = row[0]
        if (dev is None or dev == "") and row[1] is not None:
            dev = self._chunk_devices().get(row[1])
        self.stream_of[fid] = self._stream(dev)
        return self.stream_of[fid]

    def _stream(self, device: Any) -> str:
        if device is None:
            return DEFAULT_STREAM
        name = self.text(device, 128, "frames.device_name")
        name = name.strip() if name else None
        # One str per monitor, not one per frame: stream_of keeps an entry for every frame read.
        return self._shared.setdefault(name, name) if name else DEFAULT_STREAM

    # -- the passes ----------------------------------------------------------------------------

    def chunks(self) -> Iterator[ImportBatch]:
        with gc_paused():  # (never across a yield: the consumer's own work keeps the collector)
            days = self._partition()
        texts, streams, has_elements, scanned = days
        all_days = sorted(self.snaps.days() | self.inputs.days() | set(streams))
        for i, d in enumerate(all_days, 1):
            with gc_paused():
                snaps = [Snapshot(*t) for t in self.snaps.pop(d)]
                elements = texts.pop(d, [])
                fids = sorted(int(s.source_frame_id or 0) for s in snaps)
                elements.extend(self._trees_of(f for f in fids if f in self.tree_frames))
                if scanned is not None:
                    elements.extend(scanned.pop(d, []))
                elif has_elements and fids:
                    elements.extend(self._elements_of(fids))
                self.progress.tick(f"day {d}:", i, len(all_days))
                chunk = self._chunk(snaps, self._input_columns(self.inputs.pop(d)),
                                    _as_columns(elements), streams.get(d, []))
                del snaps, elements, fids  # the parts of the element columns: not held while the day lands
            yield chunk
            del chunk
        if not all_days:
            yield self._chunk([], [], [], [])

    def _partition(self) -> tuple[Any, ...]:
        """Every pass but the elements', and their rows by local day."""
        self.progress.say(f"{'legacy' if self.legacy else 'current'} schema; reading frames")
        self._frames()
        legacy_text: list[Element] = []
        if "accessibility" in self.tables:
            legacy_text = self._accessibility()
        candidates: dict[int, list[tuple[str | None, str, Box]]] = {}
        if "ui_events" in self.tables:
            candidates = self._strict_first(self._ui_events)
        sizes = self._derive_sizes(candidates)
        sizes.update(self.screens)
        for stream in sorted(set(self.screens) - {s for s, _d in self.days.first}):
            self.batch.note(f"--screen {stream}: no such stream in this database (ignored)")
        has_elements = "elements" in self.tables
        if has_elements:
            self._report_orphans(self._orphan_counts())
        # Partition everything but the elements by local day, then read elements day by day.
        day = self.days.day
        texts: dict[str, list[Element]] = {}
        for el in legacy_text:
            texts.setdefault(day(el.ts_us), []).append(el)
        streams: dict[str, list[StreamInfo]] = {}
        for info in stream_infos(self.batch.source_id, self.days.first, sizes):
            streams.setdefault(day(info.ts_us), []).append(info)
        self._choose_tree_side(has_elements)
        scanned = self._elements_scan() if has_elements and not self._frame_index() else None
        return texts, streams, has_elements, scanned

    def _input_columns(self, rows: list[tuple[Any, ...]]) -> RowColumns:
        """A day's input tuples (see _ui_events) as the columns of InputEvent rows."""
        names = [f.name for f in dataclasses.fields(InputEvent)]
        if not rows:
            return RowColumns("inputs", {n: [] for n in names})
        cols = dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))
        prefix = f"{self.batch.source_id}:ui_events:"
        cols["ref"] = list(map(prefix.__add__, map(str, cols["ref"])))
        cols["source_frame_id"] = [None if f is None else str(f) for f in cols["source_frame_id"]]
        return RowColumns("inputs", cols)

    def _strict_first(self, read: Any) -> Any:
        """Run a pass with SQLite's strict UTF-8 decoder (C speed); if some text is not UTF-8, undo
        what the pass added and run it again with the repairing decoder (bad bytes replaced and
        counted), so the result is the repairing pass's either way."""
        batch = self.batch
        marks = (len(self.snaps), len(self.inputs), len(batch.elements), len(batch.quarantined))
        notes = dict(batch.notes)
        factory = self.con.text_factory
        self.con.text_factory = str
        try:
            return read()
        except sqlite3.OperationalError as exc:
            if "decode" not in str(exc).lower():
                raise
        finally:
            self.con.text_factory = factory
        self.snaps.truncate(marks[0])
        self.inputs.truncate(marks[1])
        del batch.elements[marks[2]:]
        del batch.quarantined[marks[3]:]
        batch.notes = notes
        return read()

    def _chunk(self, snapshots: list[Snapshot], inputs: Any, elements: Any,
               streams: list[StreamInfo]) -> ImportBatch:
        """A batch of one day, carrying the quarantine and notes gathered so far."""
        out = ImportBatch(source_id=self.batch.source_id, recorder="screenpipe", snapshots=snapshots,
                          inputs=inputs, elements=elements, streams=streams,
                          quarantined=self.batch.quarantined, notes=self.batch.notes)
        self.batch.quarantined, self.batch.notes = [], {}
        return out

    def _ocr_windows(self) -> dict[int, tuple[Any, Any, Any]]:
        """frame id -> (app, window, focused) of 2024-layout rows, which keep them in ``ocr_text``.

        Later layouts leave ``ocr_text.app_name`` at its default '' (the names moved to frames), so
        a non-empty one marks a row written in 2024 layout, also inside an upgraded database.
        """
        cols = set(table_columns(self.con, "ocr_text"))
        if not {"frame_id", "app_name"} <= cols:
            return {}
        wanted = [c if c in cols else "NULL" for c in ("frame_id", "app_name", "window_name", "focused")]
        out: dict[int, tuple[Any, Any, Any]] = {}
        for fid, app, window, focused in iter_rows(self.con.execute(
            f"SELECT {', '.join(wanted)} FROM ocr_text WHERE app_name IS NOT NULL AND app_name != '' "
            f"AND frame_id > {int(self.since.get('frames', -1))} ORDER BY rowid"
        )):
            if fid in out:
                self.batch.note("ocr_text: extra rows of one frame (the first names the window)")
                continue
            out[fid] = (app, window, focused)
        return out

    def _chunk_devices(self) -> dict[Any, Any]:
        """video chunk id -> device name (what frames of 2024-10 to 2025-01 name their monitor by)."""
        if self._devices is None:
            self._devices = ({} if "device_name" not in table_columns(self.con, "video_chunks")
                             else dict(self.con.execute("SELECT id, device_name FROM video_chunks")))
        return self._devices

    def _frames(self) -> None:
        wanted = ["id", "timestamp", "app_name", "window_name", "focused", "browser_url", "device_name",
                  "capture_trigger", "video_chunk_id"]
        # Trees are read day by day later; here only whether a frame has one.
        # (typeof() does not load the text itself, so this pass skips the JSON's bytes.)
        has_tree = ("typeof(accessibility_tree_json) = 'text'"
                    if "accessibility_tree_json" in self.frame_cols else "0")
        total = self._total("frames")
        cur = self.con.execute(self._select("frames", wanted).replace(" FROM ", f", {has_tree} FROM ", 1))
        ocr = self._ocr_windows()
        chunk_device = self._chunk_devices()
        event_layout = "capture_trigger" in self.frame_cols
        clock = ClockWatch(self.batch, "frames")
        seen: set[tuple[int, int]] = set()
        group: list[tuple[Any, ...]] = []
        n = 0
        for row in iter_rows(cur):
            n += 1
            if n % 4096 == 0:
                self.progress.tick("frames", n, total)
            # Decided per row, since an upgraded database holds every era in one table:
            # "event" (one row per capture), "ocr" (2024: one row per window, names in ocr_text)
            # or "video" (2025: one row per window, names on the frame, cycle = same timestamp).
            win = ocr.get(row[0])
            if win is not None:
                row = (row[0], row[1], win[0], win[1], win[2], *row[5:], "ocr")
            elif event_layout and (row[7] is not None or row[8] is None):
                row = (*row, "event")
            else:
                row = (*row, "video")
            device = row[6]
            if (device is None or device == "") and row[8] is not None:
                device = chunk_device.get(row[8])
            self.stream_of[row[0]] = self._stream(device)
            if group and row[1] != group[0][1]:
                self._cycle(group, clock, seen)
                group = []
            group.append(row)
        if group:
            self._cycle(group, clock, seen)
        clock.finish()

    def _cycle(self, rows: list[tuple[Any, ...]], clock: ClockWatch, seen: set[tuple[int, int]]) -> None:
        """Rows sharing one timestamp.

        Event-driven capture writes one row per capture (two in the same second share a
        second-resolution timestamp): every row is a snapshot. Video capture wrote one row per
        visible window per cycle: the focused window is the snapshot, the others are background.
        In 2025 layout a cycle's rows share the timestamp, so per monitor the focused row of the
        group wins; in 2024 layout each row got its own insert time, so each row is decided alone.
        """
        raw_ts = rows[0][1]
        try:
            ts = ts_us(raw_ts)
        except BadTimestamp as exc:
            for r in rows:
                self.dropped[r[0]] = "quarantined"
                self.batch.quarantine(self.file, f"frames id={r[0]}", "unreadable timestamp", f"{exc}")
            return
        if zoneless(raw_ts):
            self.batch.note(ZONELESS_UTC, len(rows))
        clock.see(ts)
        by_stream: dict[str, list[tuple[Any, ...]]] = {}
        for r in rows:
            kind = r[10]
            if kind == "event":
                self._snapshot(r, ts, self.stream_of[r[0]], seen)
            elif kind == "ocr":
                if _truthy(r[4]):
                    self._snapshot(r, ts, self.stream_of[r[0]], seen)
                else:
                    self.dropped[r[0]] = "background"
                    self.batch.note(BACKGROUND)
            else:
                by_stream.setdefault(self.stream_of[r[0]], []).append(r)
        for stream, cycle in by_stream.items():
            focused = [r for r in cycle if _truthy(r[4])]
            if not focused and len(cycle) == 1 and cycle[0][4] is None:
                # focus not recorded and a single window: it is what the monitor showed
                self.batch.note("frames: single-window cycles without focus information (kept)")
                focused = cycle
            if not focused:
                for r in cycle:
                    self.dropped[r[0]] = "quarantined"
                    self.batch.quarantine(
                        self.file, f"frames id={r[0]}", "capture cycle without a focused window",
                        f"{raw_ts} {stream} app={r[2]!r} window={r[3]!r}",
                    )
                continue
            for r in cycle:
                if not any(r is f for f in focused):
                    self.dropped[r[0]] = "background"
                    self.batch.note(BACKGROUND)
            self._snapshot(focused[0], ts, stream, seen)
            first = focused[0]
            for r in focused[1:]:
                if (r[2], r[3], r[5]) == (first[2], first[3], first[5]):
                    self.dropped[r[0]] = "duplicate"
                    self.batch.note(DUPLICATE_FRAMES)
                else:
                    self.dropped[r[0]] = "background"
                    self.batch.note("frames: extra focused rows in one capture cycle (the first was kept)")

    def _snapshot(self, r: tuple[Any, ...], ts: int, stream: str, seen: set[tuple[int, int]]) -> None:
        fid = r[0]
        app = self.text(r[2], 100_000, "frames.app_name")
        if app is None or not app.strip():
            self.dropped[fid] = "quarantined"
            self.batch.quarantine(self.file, f"frames id={fid}", "frame has no app name",
                                  f"{r[1]} {stream} window={r[3]!r}")
            return
        if len(app) > MAX_APP:
            self.dropped[fid] = "quarantined"
            self.batch.quarantine(self.file, f"frames id={fid}", f"app name longer than {MAX_APP} characters", app)
            return
        window = self.text(r[3], MAX_WINDOW, "frames.window_name")
        url = self.text(r[5], MAX_URL, "frames.browser_url")
        # Only a sub-second clock tells a repeated row from two captures in the same second, so
        # only such rows are remembered, as (time, hash of the rest) like ui_events' (see there).
        if ts % 1_000_000:
            key = (ts, hash((stream, app, window, url, r[4], r[7])))
            if key in seen:
                self.dropped[fid] = "duplicate"
                self.batch.note(DUPLICATE_FRAMES)
                return
            seen.add(key)
        trigger = self._share(self.text(r[7], 64, "frames.capture_trigger"))
        fid_text = str(fid)
        self.snaps.add(self.days.day(ts), (  # Snapshot's fields, in order
            f"{self.batch.source_id}:frames:{fid}",
            ts,
            stream,
            self._shared.setdefault(app, app),
            self._share(window),
            self._share(url),
            True if r[4] is None else _truthy(r[4]),
            trigger,
            trigger is not None and trigger.strip().lower() in HEARTBEAT_TRIGGERS,
            fid_text,
        ))
        self.kept[fid] = ts
        self.days.see(stream, ts)
        if r[9]:
            self.tree_frames.add(fid)

    def _choose_tree_side(self, has_elements: bool) -> None:
        """Each accessibility node is imported once: current screenpipe writes a frame's tree both
        to ``accessibility_tree_json`` and, node by node, to ``elements``. The elements rows win
        (they carry screenpipe's own ids and parents); the JSON is read for frames without them
        (2026-02 databases, written before the elements table existed)."""
        if not self.tree_frames:
            return
        both: set[int] = set()
        if has_elements:
            both = {fid for (fid,) in self.con.execute(
                "SELECT DISTINCT frame_id FROM elements WHERE source = 'accessibility'") if fid in self.tree_frames}
        self.tree_frames -= both
        self.batch.note("accessibility trees: frames whose nodes came from the elements table "
                        "(their accessibility_tree_json holds the same nodes; not read twice)", len(both))
        self.batch.note("accessibility trees: frames whose nodes came from accessibility_tree_json "
                        "(no elements rows for them)", len(self.tree_frames))

    def _trees_of(self, fids: Iterable[int]) -> list[Element]:
        """Element rows of the accessibility trees of these (kept) frames."""
        out: list[Element] = []
        ids = list(fids)
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for fid, raw in self.con.execute(
                f"SELECT id, accessibility_tree_json FROM frames WHERE id IN ({marks}) ORDER BY id", chunk
            ):
                if isinstance(raw, str) and not raw.strip():
                    continue  # an empty tree column: nothing recorded
                self._tree(fid, self.kept[fid], raw, out)
        return out

    def _tree(self, fid: int, ts: int, raw: Any, out: list[Element]) -> None:
        nodes = _parse_tree(raw)
        if nodes is None:
            self.batch.quarantine(self.file, f"frames id={fid} accessibility_tree_json",
                                  "accessibility tree is not valid JSON", raw)
            return
        prefix = f"{self.batch.source_id}:frames:{fid}:tree:"
        fid_text = str(fid)
        roles = self._tree_roles
        count = 0
        if _is_flat(nodes):
            nodes = self._nest_flat(nodes)
        stack: list[tuple[Any, str | None, int]] = [(n, None, 0) for n in reversed(nodes)]
        while stack:
            node, parent, depth = stack.pop()
            if not isinstance(node, dict):
                self.batch.note("accessibility trees: nodes that are not objects (skipped)")
                continue
            if count >= MAX_TREE_NODES or depth > MAX_TREE_DEPTH:
                self.batch.note(f"accessibility trees: cut at {MAX_TREE_NODES} nodes / depth {MAX_TREE_DEPTH}")
                break
            ref = f"{prefix}{count}"
            count += 1
            b = node.get("bounds")
            b = b if isinstance(b, dict) else {}
            name = node.get("name")
            if name is None:
                name = node.get("text")
            role = node.get("role")
            role = roles.get(role, "") if isinstance(role, str) else None
            if role == "":
                cleaned = self.text(node.get("role"), 128, "accessibility tree role")
                role = roles[node["role"]] = sys.intern(cleaned) if cleaned else None
            left, top, width, height = b.get("left"), b.get("top"), b.get("width"), b.get("height")
            out.append(Element(
                ref, ts, fid_text, "accessibility", role,
                self.text(name if isinstance(name, str) else None, MAX_ELEMENT_TEXT, "accessibility tree text"),
                parent, depth,
                left if type(left) is float and -0.5 <= left <= 1.5 else _unit(left),
                top if type(top) is float and -0.5 <= top <= 1.5 else _unit(top),
                width if type(width) is float and -0.5 <= width <= 1.5 else _unit(width),
                height if type(height) is float and -0.5 <= height <= 1.5 else _unit(height),
            ))
            children = node.get("children")
            if isinstance(children, list):
                for child in reversed(children):
                    stack.append((child, ref, depth + 1))

    def _nest_flat(self, nodes: list[Any]) -> list[Any]:
        """screenpipe's flat node list (depth-first, each with ``depth``) as nested nodes.

        The parent of a node at depth d is the latest node before it at depth d-1, as screenpipe
        resolves it for ``elements``; a node whose depth skips a level has no such node and becomes
        a root. Nodes with no usable depth are skipped and counted.
        """
        roots: list[Any] = []
        path: list[dict[str, Any]] = []  # path[d] = latest node at depth d
        for node in nodes[:MAX_TREE_NODES + 1]:
            if not isinstance(node, dict):
                roots.append(node)  # counted as "not objects" by the walk
                continue
            d = node.get("depth")
            if type(d) is not int or d < 0:
                self.batch.note("accessibility trees: nodes without a usable depth (skipped)")
                continue
            copy = {k: v for k, v in node.items() if k != "children"}
            copy["children"] = []
            if d == 0 or d > len(path):
                if d:
                    self.batch.note("accessibility trees: nodes whose depth skips a level (made roots)")
                roots.append(copy)
                del path[:]
                path.append(copy)
                continue
            path[d - 1]["children"].append(copy)
            del path[d:]
            path.append(copy)
        return roots

    _ELEMENT_COLS = ["id", "frame_id", "source", "role", "text", "parent_id", "depth",
                     "left_bound", "top_bound", "width_bound", "height_bound"]

    def _frame_index(self) -> bool:
        """Whether elements(frame_id) is indexed, so one day's elements can be fetched alone."""
        for row in self.con.execute("PRAGMA index_list(elements)").fetchall():
            cols = [str(r[2]) for r in self.con.execute(f'PRAGMA index_info("{row[1]}")').fetchall()]
            if cols[:1] == ["frame_id"]:
                return True
        return False

    def _elements_of(self, fids: list[int]) -> list[Any]:
        """The elements rows of one day's frames (via the frame_id index).

        Read with SQLite's strict UTF-8 decoder (fast); a day holding text that is not UTF-8 is
        read again with the repairing decoder, so bad bytes are replaced and counted.
        """
        base = self._select("elements", self._ELEMENT_COLS).replace(" ORDER BY id", "")
        factory = self.con.text_factory
        self.con.text_factory = str
        try:
            fast = self._elements_fast(fids)
            if fast is not None:
                return fast
            return self._convert_elements(base, fids)
        except sqlite3.OperationalError as exc:
            if "decode" not in str(exc).lower():
                raise
        finally:
            self.con.text_factory = factory
        return self._convert_elements(base, fids)

    def _elements_fast(self, fids: list[int]) -> list[Any] | None:
        """The day's elements rows as :meth:`_convert_elements` gives them, when every cell is one
        the checks keep as it is; else None (nothing noted or quarantined) and the day is read
        again the checked way. Read without ORDER BY (SQLite's sort of each chunk costs more than
        checking in Python that the ids already ascend); the columns are checked whole
        (:meth:`_fast_block`) and marked verified, so the log does not check them again."""
        if not set(self._ELEMENT_COLS) <= set(table_columns(self.con, "elements")):
            return None
        since = f"id > {int(self.since['elements'])} AND " if "elements" in self.since else ""
        sql = f"SELECT {', '.join(self._ELEMENT_COLS)} FROM elements WHERE {since}frame_id IN "
        blocks: list[Any] = []
        for i in range(0, len(fids), 500):
            chunk = fids[i:i + 500]
            rows = self.con.execute(f"{sql}({','.join('?' * len(chunk))})", chunk).fetchall()
            if not rows:
                continue
            block = self._fast_block(rows)
            if block is None:
                return None
            blocks.append(block)
        return blocks

    def _fast_block(self, rows: list[tuple[Any, ...]]) -> RowColumns | None:
        """One chunk of :meth:`_elements_fast` as verified columns in id order, or None."""
        ids = list(map(_FIRST, rows))
        if not set(map(type, ids)) <= _INT:
            return None
        if not all(map(int.__lt__, ids, itertools.islice(ids, 1, None))):
            rows.sort(key=_FIRST)  # the order of ORDER BY id (ids are unique: the primary key)
        eids, fids, sources, roles, texts, parents, depths, lefts, tops, widths, heights = zip(*rows, strict=True)
        found = list(map(self.kept.get, fids))
        if None in found:
            return None
        if not _cells_kept_as_they_are(texts, depths, (lefts, tops, widths, heights)):
            return None
        labels = self._labels
        smap: dict[Any, Any] = {}
        rmap: dict[Any, Any] = {}
        for field, raw_values, limit, out in (("s", sources, 32, smap), ("r", roles, 128, rmap)):
            for v in dict.fromkeys(raw_values):
                if (field, v) not in labels and not (v is None or (type(v) is str and len(v) <= limit
                                                                   and "\x00" not in v)):
                    return None  # cleaning it would note a repair: the checked way keeps the notes' order
                out[v] = self._label(field, v) or ("unknown" if field == "s" else None)
        if not set(map(type, smap.values())) <= _STR or not set(map(type, rmap.values())) <= _TEXT:
            return None  # a label repaired earlier (a str subclass): the row checks decide
        prefix = f"{self.batch.source_id}:elements:"
        add = prefix.__add__
        return RowColumns("elements", {
            "ref": list(map(add, map(str, eids))),
            "ts_us": found,
            "snapshot_frame_id": _id_texts(fids),
            "source": list(map(smap.__getitem__, sources)),
            "role": list(map(rmap.__getitem__, roles)),
            "text": [None if t == "" else t for t in texts] if "" in texts else list(texts),
            "parent_ref": ([None if p is None else add(str(p)) for p in parents] if None in parents
                           else list(map(add, map(str, parents)))),
            "depth": list(depths), "left": list(lefts), "top": list(tops), "width": list(widths),
            "height": list(heights),
        }, verified=True)

    def _convert_elements(self, base: str, fids: list[int]) -> list[Any]:
        out: dict[str, list[Any]] = {}
        for i in range(0, len(fids), 500):
            chunk = fids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            cur = self.con.execute(f"{base} WHERE frame_id IN ({marks}) ORDER BY id", chunk)
            self._element_rows(cur, out)
        return [e for rows in out.values() for e in rows]

    def _elements_scan(self) -> dict[str, list[Any]]:
        """Without a frame_id index: one pass over all elements, sorted into days in memory."""
        self.progress.say("elements(frame_id) has no index: reading all elements in one pass")
        out: dict[str, list[Any]] = {}
        self._element_rows(self.con.execute(self._select("elements", self._ELEMENT_COLS)), out,
                           self._total("elements"))
        return out

    def _element_rows(self, cur: sqlite3.Cursor, out: dict[str, list[Any]], total: int = 0) -> None:
        """Convert elements rows of kept frames into Element rows, per local day of their frame.

        Chunk by chunk: a chunk whose every cell is already clean (the usual case) is converted a
        column at a time (:meth:`_clean_elements`); any other goes row by row through the checks."""
        n = 0
        while True:
            chunk = cur.fetchmany(5000)
            if not chunk:
                return
            n += len(chunk)
            if total:
                self.progress.tick("elements", n, total)
            if not self._clean_elements(chunk, out):
                self._element_rows_checked(chunk, out)

    def _label(self, field: str, raw: Any) -> str | None:
        """An elements source ("s") or role ("r") as stored, cleaned once per raw value."""
        got = self._labels.get((field, raw), "")
        if got == "":
            if field == "s":
                cleaned = self.text(raw, 32, "elements.source")
                got = sys.intern(cleaned.lower()) if cleaned else "unknown"
            else:
                cleaned = self.text(raw, 128, "elements.role")
                got = sys.intern(cleaned) if cleaned else None
            self._labels[(field, raw)] = got
        return got

    def _clean_elements(self, chunk: list[tuple[Any, ...]], out: dict[str, list[Any]]) -> bool:
        """Convert a chunk of elements rows a column at a time, if every cell is one the row-by-row
        checks would keep as it is (integer ids, plain text within the limit, depths in range,
        bounds finite within -0.5..1.5); else change nothing and return False."""
        eids, fids, sources, roles, texts, parents, depths, lefts, tops, widths, heights = zip(*chunk, strict=True)
        found = list(map(self.kept.get, fids))
        if None in found or not set(map(type, eids)) <= _INT:
            return False
        stamps: list[int] = found  # type: ignore[assignment]  # no None, checked above
        if not _cells_kept_as_they_are(texts, depths, (lefts, tops, widths, heights)):
            return False
        smap = {v: self._label("s", v) or "unknown" for v in dict.fromkeys(sources)}
        rmap = {v: self._label("r", v) for v in dict.fromkeys(roles)}
        prefix = f"{self.batch.source_id}:elements:"
        # The rows as columns (no object a row): the log groups and seals them as columns.
        block = RowColumns("elements", {
            "ref": list(map(prefix.__add__, map(str, eids))),
            "ts_us": stamps,
            "snapshot_frame_id": _id_texts(fids),
            "source": list(map(smap.__getitem__, sources)),
            "role": list(map(rmap.__getitem__, roles)),
            "text": [None if t == "" else t for t in texts],
            "parent_ref": [None if p is None else prefix + str(p) for p in parents],
            "depth": list(depths), "left": list(lefts), "top": list(tops), "width": list(widths),
            "height": list(heights),
        })
        day = self.days.day
        first = stamps[0]
        if all(t == first for t in stamps) or len({day(t) for t in set(stamps)}) == 1:
            out.setdefault(day(first), []).append(block)
        else:
            days = list(map(day, stamps))
            for d in dict.fromkeys(days):
                out.setdefault(d, []).append(block.take([i for i, x in enumerate(days) if x == d]))
        return True

    def _element_rows_checked(self, chunk: list[tuple[Any, ...]], out: dict[str, list[Any]]) -> None:
        """Row by row, every check (text repair, depth range, bounds) and quarantine."""
        prefix = f"{self.batch.source_id}:elements:"
        text = self.text
        kept = self.kept
        day = self.days.day
        labels = self._labels
        recent: dict[Any, str] = {}  # element id -> ref within the current frame: parents share one string
        last_fid: Any = None
        append: Any = None
        for (eid, fid, source, role, etext, parent, depth, left, top, width, height) in chunk:
            owner = kept.get(fid)
            if owner is None:
                continue  # counted by _orphan_counts
            if fid != last_fid:
                recent = {}
                last_fid = fid
                fid_text = str(int(fid))  # the kept frame's id as text (fid may be a REAL equal to it)
                append = out.setdefault(day(owner), []).append
            src = labels.get(("s", source), "")
            if src == "":
                src = self._label("s", source)
            r = labels.get(("r", role), "")
            if r == "":
                r = self._label("r", role)
            if etext is not None and (type(etext) is not str or len(etext) > MAX_ELEMENT_TEXT or "\x00" in etext):
                etext = text(etext, MAX_ELEMENT_TEXT, "elements.text")
            elif etext == "":
                etext = None
            d = depth if type(depth) is int else _int(depth)
            if d is not None and not 0 <= d <= DEPTH_LIMIT:
                self.batch.quarantine(self.file, f"elements id={eid}", "number out of range", f"depth={d}"[:80])
                continue
            ref = prefix + str(eid)
            recent[eid] = ref
            parent_ref = None if parent is None else (recent.get(parent) or prefix + str(parent))
            append(Element(
                ref, owner, fid_text, src or "unknown", r, etext, parent_ref, d,
                left if type(left) is float and -0.5 <= left <= 1.5 else _unit(left),
                top if type(top) is float and -0.5 <= top <= 1.5 else _unit(top),
                width if type(width) is float and -0.5 <= width <= 1.5 else _unit(width),
                height if type(height) is float and -0.5 <= height <= 1.5 else _unit(height),
            ))

    def _orphan_counts(self) -> dict[tuple[Any, str], int]:
        """Elements rows whose frame did not become a snapshot, per frame and why."""
        orphans: dict[tuple[Any, str], int] = {}
        # A pass from a watermark reads the frames above it only: older frames are not orphans.
        where = f" WHERE frame_id > {int(self.since['frames'])}" if "frames" in self.since else ""
        for fid, count in self.con.execute(f"SELECT frame_id, count(*) FROM elements{where} GROUP BY frame_id"):
            if fid not in self.kept:
                why = self.dropped.get(fid, "missing")
                orphans[(fid, why)] = count
        return orphans

    def _report_orphans(self, orphans: dict[tuple[Any, str], int]) -> None:
        for (fid, why), count in sorted(orphans.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            if why in ("background", "duplicate"):
                self.batch.note(f"elements of frames that are not snapshots ({why}; not imported)", count)
            elif why == "quarantined":
                self.batch.quarantine(self.file, f"elements frame_id={fid} ({count} rows)",
                                      "elements of a quarantined frame")
            else:
                self.batch.quarantine(self.file, f"elements frame_id={fid} ({count} rows)",
                                      "elements point at a frame that does not exist")

    def _accessibility(self) -> list[Element]:
        """Legacy text-only accessibility rows, each tied to the nearest snapshot in time."""
        snaps = sorted((s[1], s[9] or "", s[3]) for s in self.snaps)  # (ts_us, frame id, app)
        times = [s[0] for s in snaps]
        wanted = ["id", "timestamp", "app_name", "text_content"]
        sid = self.batch.source_id
        out: list[Element] = []
        for aid, raw_ts, app, content in iter_rows(self.con.execute(self._select("accessibility", wanted))):
            try:
                ts = ts_us(raw_ts)
            except BadTimestamp as exc:
                self.batch.quarantine(self.file, f"accessibility id={aid}", "unreadable timestamp", str(exc))
                continue
            if zoneless(raw_ts):
                self.batch.note(ZONELESS_UTC)
            body = self.text(content, MAX_ELEMENT_TEXT, "accessibility.text_content")
            if body is None or not body.strip():
                self.batch.note("accessibility: empty text rows (nothing to import)")
                continue
            owner = _nearest(snaps, times, ts, app)
            if owner is None:
                self.batch.quarantine(self.file, f"accessibility id={aid}",
                                      "accessibility text with no snapshot within 30 s", body)
                continue
            out.append(Element(
                ref=f"{sid}:accessibility:{aid}", ts_us=owner[0], snapshot_frame_id=owner[1],
                source="accessibility", role=None, text=body, parent_ref=None, depth=0,
            ))
        return out

    def _ui_events(self) -> dict[int, list[tuple[str | None, str, Box]]]:
        wanted = ["id", "timestamp", "event_type", "x", "y", "button", "key_code", "modifiers",
                  "text_content", "app_name", "window_title", "browser_url", "element_role",
                  "element_name", "element_automation_id", "element_bounds", "frame_id"]
        total = self._total("ui_events")
        cur = self.con.execute(self._select("ui_events", wanted))
        text = self.text
        clock = ClockWatch(self.batch, "ui_events")
        seen: set[tuple[int, int]] = set()
        candidates: dict[int, list[tuple[str | None, str, Box]]] = {}
        n_candidates: dict[str, int] = {}
        kinds: dict[Any, str] = {}  # raw event_type -> normalised kind ("" when unknown)
        stream_of = self.stream_of
        add = self.inputs.add  # tuples until their day is made (see _input_columns)
        day = self.days.day
        share = self._share
        n = 0
        for row in iter_rows(cur):
            n += 1
            if not n & 0x1FFF:
                self.progress.tick("ui_events", n, total)
            (eid, raw_ts, etype, x, y, button, key_code, modifiers, content, app, window, url,
             role, name, auto_id, bounds, frame_id) = row
            try:
                ts = ts_us(raw_ts)
            except BadTimestamp as exc:
                self.batch.quarantine(self.file, f"ui_events id={eid}", "unreadable timestamp", str(exc))
                continue
            if zoneless(raw_ts):
                self.batch.note(ZONELESS_UTC)
            kind = kinds.get(etype)
            if kind is None:
                kind = kinds[etype] = (text(etype, 64, "ui_events.event_type") or "").strip().lower()
            if kind not in INPUT_KINDS:
                self.batch.quarantine(self.file, f"ui_events id={eid}", "unknown event type", f"event_type={etype!r}")
                continue
            if ts % 1_000_000:  # sub-second clock: an identical row is a duplicate, not a double click
                # (time, hash of the rest): a collision would need two different rows at the same
                # microsecond with equal 64-bit hashes; keeping whole rows would double the memory.
                key = (ts, hash(row[2:]))
                if key in seen:
                    self.batch.note("ui_events: duplicate rows skipped (identical apart from the id)")
                    continue
                seen.add(key)
            clock.see(ts)
            stream = None
            fid = frame_id if type(frame_id) is int else _int(frame_id)
            if fid is not None:
                stream = stream_of.get(fid)
                if stream is None and self.since and fid <= self.since.get("frames", -1):
                    stream = self._older_stream(fid)  # a sync pass: the frame was read by an earlier one
                if stream is None:
                    self.batch.note("ui_events: frame_id points at no frame (stream unknown)")
            op = None
            mods = modifiers if modifiers is None or type(modifiers) is int else _int(modifiers)
            typed = None
            app_name = None if app is None else text(app, MAX_APP, "ui_events.app_name")
            if kind == "clipboard":
                op = CLIPBOARD_OPS.get(mods) if mods is not None else None
                if op is None:
                    self.batch.note("ui_events: clipboard events with an unknown operation code")
                mods = None  # the field held the operation, not modifier keys
                typed = text(content, MAX_TYPED_TEXT, "ui_events.text_content")
            elif kind == "app_switch":
                app_name = text(content, MAX_APP, "ui_events.text_content (app)") or app_name
            elif kind in ("key", "text"):
                typed = text(content, MAX_TYPED_TEXT, "ui_events.text_content")
            b = button if button is None or type(button) is int else _int(button)
            px = x if x is None or type(x) is int else _int(x)
            py = y if y is None or type(y) is int else _int(y)
            kc = key_code if key_code is None or type(key_code) is int else _int(key_code)
            bad = _out_of_range((("x", px, COORD_LIMIT), ("y", py, COORD_LIMIT), ("key_code", kc, CODE_LIMIT),
                                 ("button", b, BUTTON_LIMIT), ("modifiers", mods, CODE_LIMIT)))
            if bad:
                self.batch.quarantine(self.file, f"ui_events id={eid}", "number out of range", bad)
                continue
            px_bounds = None
            if bounds is not None:
                px_bounds = _bounds_json(bounds)
                if px_bounds is None:
                    self.batch.note("ui_events: element_bounds that are not {left,top,width,height} JSON (dropped)")
            elem_name = None if name is None else share(text(name, MAX_WINDOW, "ui_events.element_name"))
            elem_role = None if role is None else share(text(role, 128, "ui_events.element_role"))
            # A tuple, not an InputEvent: every input of the source is held (packed, see _DaySpill)
            # until its day lands; the id and frame id stay ints (the ref and frame text are made
            # per day, as columns). Fields in InputEvent order.
            add(day(ts), (
                eid,
                ts,
                kind,
                stream,
                px,
                py,
                None if b is None else BUTTONS.get(b, str(b)),
                kc,
                mods,
                typed,
                op,
                share(app_name),
                None if window is None else share(text(window, MAX_WINDOW, "ui_events.window_title")),
                None if url is None else share(text(url, MAX_URL, "ui_events.browser_url")),
                elem_role,
                elem_name,
                None if auto_id is None else text(auto_id, 256, "ui_events.element_automation_id"),
                px_bounds[0] if px_bounds else None,
                fid,
            ))
            if px_bounds and stream is not None and elem_name and n_candidates.get(stream, 0) < SIZE_CANDIDATES:
                if px_bounds[1][2] > 0 and px_bounds[1][3] > 0 and fid is not None:
                    candidates.setdefault(fid, []).append((elem_role, elem_name, px_bounds[1]))
                    n_candidates[stream] = n_candidates.get(stream, 0) + 1
        clock.finish()
        return candidates

    def _derive_sizes(
        self, candidates: dict[int, list[tuple[str | None, str, Box]]]
    ) -> dict[str, tuple[int, int]]:
        """Screen size per stream from elements known both in pixels and normalised."""
        estimates: dict[str, list[tuple[Box, Box]]] = {}
        for fid, nodes in self._normalised_nodes(sorted(candidates)):
            stream = self.stream_of.get(fid)
            if stream is None:
                continue
            for role, name, px in candidates[fid]:
                norm = nodes.get((role, name)) or nodes.get((None, name))
                # Tiny elements make the ratio noisy; a hundredth of the screen is too small.
                if norm is not None and norm[2] >= 0.01 and norm[3] >= 0.01:
                    estimates.setdefault(stream, []).append((px, norm))
        sizes: dict[str, tuple[int, int]] = {}
        for stream, pairs in sorted(estimates.items()):
            size = _consensus(pairs)
            if size is None:
                self.batch.note(f"screen size of {stream}: estimates disagree (left unknown)")
            else:
                sizes[stream] = size
                self.batch.note(f"screen size of {stream}: derived from click element bounds", len(pairs))
        return sizes

    def _normalised_nodes(self, fids: list[int]) -> Iterator[tuple[int, dict[tuple[str | None, str], Box]]]:
        """For each candidate frame: (role, name) -> normalised bounds, from its tree."""
        has_tree = "accessibility_tree_json" in self.frame_cols
        has_elements = "elements" in self.tables
        for i in range(0, len(fids), 200):
            chunk = fids[i:i + 200]
            marks = ",".join("?" * len(chunk))
            found: dict[int, dict[tuple[str | None, str], Box]] = {f: {} for f in chunk}
            if has_elements:
                for fid, role, etext, left, top, w, h in self.con.execute(
                    "SELECT frame_id, role, text, left_bound, top_bound, width_bound, height_bound "
                    f"FROM elements WHERE frame_id IN ({marks})",
                    chunk,
                ):
                    _index_node(found[fid], role, etext, (left, top, w, h))
            if has_tree:
                for fid, raw in self.con.execute(
                    f"SELECT id, accessibility_tree_json FROM frames WHERE id IN ({marks})", chunk
                ):
                    for node in _walk(_parse_tree(raw) or []):
                        bd = node.get("bounds")
                        b: dict[str, Any] = bd if isinstance(bd, dict) else {}
                        _index_node(found[fid], node.get("role"), node.get("name", node.get("text")),
                                    (b.get("left"), b.get("top"), b.get("width"), b.get("height")))
            yield from found.items()


class _DaySpill:
    """Rows (tuples) held until their local day is made, by day, packed once SPILL_ROWS are open.

    Every pass but the elements' reads the whole source before its first day lands. In the 61-day
    benchmark, holding its 343k input tuples and 132k snapshots as objects left 305 MB resident
    when the first day began; packed (pickle writes a string shared by many rows once per block),
    they take ~8 MB, and 153 MB were resident. The rows of a day come back in the order they were
    added."""

    def __init__(self) -> None:
        self._packed: dict[str, list[bytes]] = {}
        self._open: dict[str, list[tuple[Any, ...]]] = {}
        self._count = 0
        self._open_count = 0

    def __len__(self) -> int:
        return self._count

    def days(self) -> set[str]:
        return set(self._open) | set(self._packed)

    def add(self, day: str, row: tuple[Any, ...]) -> None:
        rows = self._open.get(day)
        if rows is None:
            rows = self._open[day] = []
        rows.append(row)
        self._count += 1
        self._open_count += 1
        if self._open_count >= SPILL_ROWS:
            # Rows come nearly in time order, so this is almost always one day's block.
            for d, held in self._open.items():
                self._packed.setdefault(d, []).append(_pack(held))
            self._open.clear()
            self._open_count = 0

    def pop(self, day: str) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for block in self._packed.pop(day, []):
            out.extend(_unpack(block))
        held = self._open.pop(day, [])
        out.extend(held)
        self._count -= len(out)
        self._open_count -= len(held)
        return out

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        """Every row, day by day (unpacked a block at a time)."""
        for day in sorted(self.days()):
            for block in self._packed.get(day, []):
                yield from _unpack(block)
            yield from self._open.get(day, [])

    def truncate(self, count: int) -> None:
        """Drop what was added since the spill held ``count`` rows (only a whole pass is undone)."""
        if count == self._count:
            return
        if count:
            raise AssertionError("a spill is undone to its start or not at all")
        self._packed.clear()
        self._open.clear()
        self._count = self._open_count = 0


def _pack(rows: list[tuple[Any, ...]]) -> bytes:
    return zlib.compress(pickle.dumps(rows, 5), 1)  # level 1: most of the gain at little cost


def _unpack(block: bytes) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = pickle.loads(zlib.decompress(block))  # only what _pack wrote
    return rows


def _id_texts(ids: Sequence[Any]) -> list[str]:
    """The text of each (kept) frame id, one str per distinct id; an id may be a REAL equal to it."""
    names = {f: str(int(f)) for f in dict.fromkeys(ids)}
    return list(map(names.__getitem__, ids))


def _as_columns(parts: list[Any]) -> RowColumns:
    """A day's element rows, in the order read: Element objects and RowColumns blocks as one block."""
    blocks: list[RowColumns] = []
    loose: list[Element] = []
    for part in parts:
        if isinstance(part, RowColumns):
            if loose:
                blocks.append(RowColumns.from_rows("elements", loose))
                loose = []
            blocks.append(part)
        else:
            loose.append(part)
    if loose:
        blocks.append(RowColumns.from_rows("elements", loose))
    return blocks[0] if len(blocks) == 1 else RowColumns.concat("elements", blocks)


def _index_node(index: dict[tuple[str | None, str], Box], role: Any, name: Any, bounds: tuple[Any, ...]) -> None:
    if not isinstance(name, str) or not name:
        return
    vals = [_unit(v) for v in bounds]
    if any(v is None for v in vals):
        return
    box = (float(vals[0] or 0.0), float(vals[1] or 0.0), float(vals[2] or 0.0), float(vals[3] or 0.0))
    r = role if isinstance(role, str) else None
    index.setdefault((r, name), box)
    index.setdefault((None, name), box)


def _consensus(pairs: list[tuple[Box, Box]]) -> tuple[int, int] | None:
    """Screen size from matched elements' (pixel bounds, normalised bounds).

    Sizes first: the ratio of summed pixel to summed normalised widths (heights), reported only
    when most single-element estimates agree with it, never as a guess. Pixel rounding limits
    that to about 1 %; positions (left / left_norm) are more precise, so when the position
    estimates of an axis agree tightly with each other and with the size estimate they refine
    it. On a secondary monitor whose pixel positions carry its offset they disagree and are
    not used.
    """
    w = sum(px[2] for px, _n in pairs) / sum(n[2] for _p, n in pairs)
    h = sum(px[3] for px, _n in pairs) / sum(n[3] for _p, n in pairs)
    if not (200 <= w <= 20000 and 200 <= h <= 20000):
        return None

    def close(px: float, norm: float, size: float) -> bool:
        # within 3 %, or within what rounding the pixel value to 1 px can explain
        return abs(px / norm - size) <= max(0.03 * size, 1.0 / norm)

    agree = sum(1 for px, n in pairs if close(px[2], n[2], w) and close(px[3], n[3], h))
    if agree * 5 < len(pairs) * 3:  # fewer than 60 % agree
        return None
    return int(round(_refine(pairs, 0, w))), int(round(_refine(pairs, 1, h)))


def _refine(pairs: list[tuple[Box, Box]], axis: int, size: float) -> float:
    """The size along one axis from element positions, when they agree; else ``size``."""
    points = [(px[axis], n[axis]) for px, n in pairs if n[axis] >= 0.1 and px[axis] > 0]
    est = sorted(p / n for p, n in points)
    if len(est) < 3:
        return size
    mid = est[len(est) // 2]
    tight = [(p, n) for p, n in points if abs(p / n - mid) <= 0.005 * mid]
    if len(tight) * 5 < len(est) * 4 or abs(mid - size) > 0.03 * size:  # need 80 % within 0.5 %
        return size
    # Each pixel position was rounded to 1 px: the true size lies in every [(p-0.5)/n, (p+0.5)/n].
    lo = max((p - 0.5) / n for p, n in tight)
    hi = min((p + 0.5) / n for p, n in tight)
    return (lo + hi) / 2 if lo <= hi else mid


def _is_flat(nodes: list[Any]) -> bool:
    """Whether a tree is screenpipe's flat list of nodes with ``depth`` (not nested children)."""
    first = next((n for n in nodes if isinstance(n, dict)), None)
    return first is not None and "depth" in first and "children" not in first


DEEP_JSON_LIMIT = 1_000_000  # recursion limit for the pure-Python JSON decoder (deep trees)


def _loads(raw: Any) -> Any:
    """json.loads, and for JSON nested deeper than the C decoder's recursion limit the pure-Python
    decoder with a raised limit: a deep but valid tree is still valid JSON."""
    try:
        return json.loads(raw)
    except RecursionError:
        pass
    decoder = json.JSONDecoder()
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, DEEP_JSON_LIMIT))
    try:
        return decoder.decode(raw)
    finally:
        sys.setrecursionlimit(old)


def _parse_tree(raw: Any) -> list[Any] | None:
    if raw is None:
        return []
    try:
        data = _loads(raw)
    except (TypeError, ValueError, RecursionError, MemoryError):
        return None
    if isinstance(data, dict):
        return [data]
    if isinstance(data, list):
        return data
    return None


def _walk(nodes: list[Any]) -> Iterator[dict[str, Any]]:
    stack = list(nodes)
    seen = 0
    while stack and seen < MAX_TREE_NODES:
        node = stack.pop()
        if isinstance(node, dict):
            seen += 1
            yield node
            children = node.get("children")
            if isinstance(children, list):
                stack.extend(children)


def _bounds_json(raw: Any) -> tuple[str, Box] | None:
    """Pixel bounds as canonical JSON {"left","top","width","height"}, plus the numbers."""
    if raw is None:
        return None
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    left = data.get("left", data.get("x"))
    top = data.get("top", data.get("y"))
    vals = [left, top, data.get("width"), data.get("height")]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in vals):
        return None
    nums = [round(float(v), 1) for v in vals if isinstance(v, (int, float))]
    text = canonical_json({"left": nums[0], "top": nums[1], "width": nums[2], "height": nums[3]})
    return text, (nums[0], nums[1], nums[2], nums[3])


def _nearest(
    snaps: list[tuple[int, str, str]], times: list[int], ts: int, app: Any
) -> tuple[int, str] | None:
    """The snapshot closest in time (same app preferred) within ACCESSIBILITY_MAX_GAP_US."""
    lo = bisect.bisect_left(times, ts - ACCESSIBILITY_MAX_GAP_US)
    hi = bisect.bisect_right(times, ts + ACCESSIBILITY_MAX_GAP_US)
    if lo >= hi:
        return None
    # Rank: same app first, then distance in time, then frame id (a total order).
    t, fid, _app = min(
        snaps[lo:hi],
        key=lambda s: (0 if app is not None and s[2] == app else 1, abs(s[0] - ts), s[1]),
    )
    return t, fid
