"""The fast read of a day's elements rows lands exactly what the checked row-by-row read lands.

The fast way (capture/importers/screenpipe.py: _elements_fast) reads without sorting, checks each
chunk's columns whole and marks them verified so the log skips its own column checks; any cell it
would not keep as it is sends the whole day to the checked way. These tests compare it with the
checked way on elements tables full of awkward cells, and the log's stored columns either way.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture.importers.common import open_sqlite_readonly
from capture.importers.screenpipe import WHAT, _Reader
from capture.log.columns import RowColumns, checked
from capture.log.rows import checked_columns
from capture.screenpipe_schema import CURRENT_DDL


class _CheckedOnly(_Reader):
    """The reference: every day of elements through the checked way."""

    def _elements_fast(self, fids: list[int]) -> list[Any] | None:
        return None


_TEXT = st.one_of(st.none(), st.just(""), st.text(max_size=6), st.just("a\x00b"), st.just("x" * 5000),
                  st.integers(-3, 3), st.binary(max_size=3))
_BOUND = st.one_of(st.none(), st.floats(-0.4, 1.4), st.integers(0, 1), st.just(float("nan")),
                   st.just(2.5), st.text(max_size=2))
_DEPTH = st.one_of(st.none(), st.integers(0, 5), st.just(-1), st.just(10**7), st.just(1.0), st.just("2"))
_PARENT = st.one_of(st.none(), st.integers(1, 400), st.just(3.5), st.just("p"))
_SOURCE = st.one_of(st.sampled_from(["ocr", "accessibility", "OCR", ""]), st.just("s\x00"), st.just("z" * 40))
_ROLE = st.one_of(st.none(), st.sampled_from(["AXButton", "AXLink", ""]), st.just("r\x00"), st.just("z" * 200))
_ROW = st.fixed_dictionaries({
    "frame": st.integers(1, 4), "source": _SOURCE, "role": _ROLE, "text": _TEXT, "parent_id": _PARENT,
    "depth": _DEPTH, "left_bound": _BOUND, "top_bound": _BOUND, "width_bound": _BOUND, "height_bound": _BOUND,
})
CLEAN = {"source": "ocr", "role": "AXButton", "text": "hello", "parent_id": None, "depth": 1,
         "left_bound": 0.1, "top_bound": 0.2, "width_bound": 0.3, "height_bound": 0.4}

_CLEAN_ROW = st.builds(lambda f, p: dict(CLEAN, frame=f, parent_id=p), st.integers(1, 4), st.none() | st.integers(1, 30))


def _db(path: Path, rows: list[dict[str, Any]], ids: list[int]) -> Path:
    con = sqlite3.connect(path)
    con.executescript(CURRENT_DDL)
    for fid in range(1, 5):  # four snapshots of one day
        con.execute("INSERT INTO frames (id, timestamp, app_name, focused, device_name) VALUES (?, ?, ?, 1, ?)",
                    (fid, f"2026-03-15T10:00:0{fid}Z", "Mail", "monitor_1"))
    for eid, row in zip(ids, rows, strict=True):
        cells = {k: v for k, v in row.items() if k != "frame"}
        con.execute(f"INSERT INTO elements (id, frame_id, {', '.join(cells)}) VALUES (?, ?, "
                    f"{', '.join('?' * len(cells))})", [eid, row["frame"], *cells.values()])
    con.commit()
    con.close()
    return path


def _read(cls: type[_Reader], db: Path) -> tuple[list[Any], list[Any], dict[str, int], list[Any]]:
    con = open_sqlite_readonly(db, WHAT)
    try:
        chunks = list(cls(con, db, "Europe/Paris", {}, None, None, {}).chunks())
    finally:
        con.close()
    elements = [c.elements for c in chunks]
    quarantined = [(q.row, q.reason) for c in chunks for q in c.quarantined]
    notes: dict[str, int] = {}
    for c in chunks:
        for what, n in c.notes.items():
            notes[what] = notes.get(what, 0) + n
    return [list(e) for e in elements], quarantined, notes, elements


def _same_as_checked_way(tmp_path: Path, rows: list[dict[str, Any]], ids: list[int]) -> None:
    db = _db(tmp_path / "db.sqlite", rows, ids)
    fast_rows, fast_q, fast_notes, fast_blocks = _read(_Reader, db)
    ref_rows, ref_q, ref_notes, _ = _read(_CheckedOnly, db)
    assert fast_rows == ref_rows  # the same Element rows, in the same order, day by day
    assert fast_q == ref_q and fast_notes == ref_notes and list(fast_notes) == list(ref_notes)
    for block in fast_blocks:  # what the log stores: the verified shortcut changes nothing
        full = checked_columns("elements", list(block))
        got = checked("elements", block)
        assert got[0] == full[0] and [(r.ref, why) for r, why in got[1]] == [(r.ref, why) for r, why in full[1]]
        assert all(type(v) is float for n in ("left", "top", "width", "height") for v in got[0][n] if v is not None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.one_of(_CLEAN_ROW, _CLEAN_ROW, _ROW), min_size=1, max_size=25), data=st.data())
def test_fast_elements_read_lands_what_the_checked_read_lands(rows, data) -> None:
    # ids in any order against the frames (a later frame's elements may have lower ids)
    ids = data.draw(st.permutations(range(1, len(rows) + 1)))
    with tempfile.TemporaryDirectory() as tmp:
        _same_as_checked_way(Path(tmp), rows, list(ids))


def test_clean_days_take_the_fast_way_and_out_of_order_ids_keep_id_order(tmp_path: Path) -> None:
    rows = [dict(CLEAN, frame=f, text=f"t{f}-{k}", parent_id=None if k == 0 else 1) for f in (1, 2, 3) for k in range(3)]
    ids = [30, 31, 32, 10, 11, 12, 20, 21, 22]  # frame 1 has the highest ids
    db = _db(tmp_path / "db.sqlite", rows, ids)
    _rows, _q, _notes, blocks = _read(_Reader, db)
    [day] = [b for b in blocks if len(b)]
    assert isinstance(day, RowColumns) and day.verified  # the log will not check these columns again
    assert [r.split(":")[-1] for r in day.refs] == ["10", "11", "12", "20", "21", "22", "30", "31", "32"]
    (tmp_path / "again").mkdir()
    _same_as_checked_way(tmp_path / "again", rows, ids)


def test_one_unclean_cell_sends_the_day_the_checked_way(tmp_path: Path) -> None:
    rows = [dict(CLEAN, frame=1), dict(CLEAN, frame=2, depth=-1), dict(CLEAN, frame=3, text="a\x00b")]
    db = _db(tmp_path / "db.sqlite", rows, [1, 2, 3])
    _rows, quarantined, notes, blocks = _read(_Reader, db)
    assert not any(isinstance(b, RowColumns) and b.verified for b in blocks)
    assert quarantined == [("elements id=2", "number out of range")]
    assert notes.get("elements.text: NUL characters removed") == 1
    (tmp_path / "again").mkdir()
    _same_as_checked_way(tmp_path / "again", rows, [1, 2, 3])
