"""The screenpipe importer raises nothing but UserError, whatever the file or its cells hold."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture.errors import UserError
from capture.importers.screenpipe import read_screenpipe
from capture.screenpipe_schema import CURRENT_DDL, LEGACY_DDL

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _read(path: Path) -> None:
    try:
        read_screenpipe(path)
    except UserError as exc:
        assert str(exc)  # one sentence, never empty


def _valid_db(path: Path) -> bytes:
    con = sqlite3.connect(path)
    con.executescript(CURRENT_DDL)
    for i in range(1, 30):
        con.execute("INSERT INTO frames (id, timestamp, app_name, focused, capture_trigger, accessibility_tree_json) "
                    "VALUES (?, ?, 'Mail', 1, 'click', ?)",
                    (i, f"2026-03-15T10:00:{i:02d}.5+00:00", '[{"role":"AXWindow","text":"w","depth":0}]'))
        con.execute("INSERT INTO elements (frame_id, source, role, text, depth) VALUES (?, 'ocr', 'line', 'x', 0)", (i,))
    con.commit()
    con.close()
    return path.read_bytes()


@FUZZ
@given(data=st.binary(max_size=4096), sqlite_header=st.booleans())
def test_arbitrary_bytes(tmp_path_factory, data: bytes, sqlite_header: bool) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "db.sqlite"
    path.write_bytes((b"SQLite format 3\x00" if sqlite_header else b"") + data)
    _read(path)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 255)), min_size=1, max_size=40))
def test_a_valid_database_with_damaged_bytes(tmp_path_factory, flips: list[tuple[int, int]]) -> None:
    folder = tmp_path_factory.mktemp("damaged")
    raw = bytearray(_valid_db(folder / "good.sqlite"))
    for at, value in flips:
        raw[at % len(raw)] = value
    path = folder / "db.sqlite"
    path.write_bytes(bytes(raw))
    _read(path)


cells = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.sampled_from(["2026-03-15T10:00:00Z", "2026-03-15 10:00:00.123456789+00:00", "1e999", "nan", "",
                     '[{"role":"AXButton","text":"Send","depth":1,"bounds":{"left":1e308,"top":-1e308}}]',
                     '{"role":"AXWindow","children":[{"depth":-3}]}', '{"left":"x"}', "[" * 5000]),
)
FRAME_COLS = ["timestamp", "app_name", "window_name", "focused", "browser_url", "device_name",
              "accessibility_tree_json", "capture_trigger", "video_chunk_id"]
UI_COLS = ["timestamp", "event_type", "x", "y", "button", "key_code", "modifiers", "text_content", "app_name",
           "element_name", "element_bounds", "frame_id"]
ELEMENT_COLS = ["frame_id", "source", "role", "text", "parent_id", "depth", "left_bound", "top_bound",
                "width_bound", "height_bound"]


def _row(draw: st.DrawFn, cols: list[str]) -> dict[str, object]:
    return {c: draw(cells) for c in cols}


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[dict], list[dict], list[dict]]:
    n = draw(st.integers(1, 6))
    frames = [_row(draw, FRAME_COLS) for _ in range(n)]
    ui = [_row(draw, UI_COLS) for _ in range(draw(st.integers(0, 4)))]
    elements = [_row(draw, ELEMENT_COLS) for _ in range(draw(st.integers(0, 4)))]
    return frames, ui, elements


def _insert(con: sqlite3.Connection, table: str, row: dict[str, object]) -> None:
    cols = [c for c in row if c in {r[1] for r in con.execute(f"PRAGMA table_info({table})")}]
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [row[c] for c in cols])
    except sqlite3.IntegrityError:
        pass  # NOT NULL columns: SQLite itself refuses the row, so no recorder could write it


@FUZZ
@given(content=tables(), legacy=st.booleans())
def test_arbitrary_cells_in_a_valid_schema(tmp_path_factory, content, legacy: bool) -> None:
    frames, ui, elements = content
    path = tmp_path_factory.mktemp("cells") / "db.sqlite"
    con = sqlite3.connect(path)
    con.executescript(LEGACY_DDL if legacy else CURRENT_DDL)
    if legacy:  # the 2024 layout: names beside the OCR text
        con.execute("CREATE TABLE ocr_text (frame_id INTEGER, text TEXT, app_name TEXT, window_name TEXT, "
                    "focused BOOLEAN)")
    for i, f in enumerate(frames, 1):
        _insert(con, "frames", f)
        if legacy:
            _insert(con, "ocr_text", {"frame_id": i, "text": "t", "app_name": f["app_name"],
                                      "window_name": f["window_name"], "focused": f["focused"]})
    for u in ui:
        _insert(con, "ui_events", u)
    if not legacy:
        for e in elements:
            _insert(con, "elements", e)
    con.commit()
    con.close()
    _read(path)
