"""Shared importer helpers: the fast timestamp path, text repair, screen-size options."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capture.errors import UserError
from capture.importers.common import parse_screen_sizes, ts_us
from capture.importers.screenpipe import read_screenpipe
from capture.screenpipe_schema import CURRENT_DDL
from capture.timeutil import BadTimestamp, parse_ts

offsets = st.one_of(st.just(""), st.just("Z"), st.builds(
    lambda sign, h, m, colon: f"{sign}{h:02d}{':' if colon else ''}{m:02d}",
    st.sampled_from("+-"), st.integers(0, 14), st.sampled_from([0, 15, 30, 45]), st.booleans()))


@settings(max_examples=300, deadline=None)
@given(
    stamp=st.datetimes(min_value=__import__("datetime").datetime(1990, 1, 1),
                       max_value=__import__("datetime").datetime(2099, 12, 31)),
    sep=st.sampled_from(["T", " "]),
    digits=st.integers(0, 9),
    offset=offsets,
)
def test_fast_timestamps_equal_parse_ts(stamp, sep: str, digits: int, offset: str) -> None:
    frac = f"{stamp.microsecond:06d}{'789'}"[:digits]
    text = stamp.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + (f".{frac}" if digits else "") + offset
    assert ts_us(text) == parse_ts(text)


@pytest.mark.parametrize("bad", ["1970-01-01 00:00:00", "2026-13-01 00:00:00", "2026-03-15T25:00:00Z",
                                 "15/03/2026 10:00", ""])
def test_fast_timestamps_reject_what_parse_ts_rejects(bad: str) -> None:
    with pytest.raises(BadTimestamp):
        parse_ts(bad)
    with pytest.raises(BadTimestamp):
        ts_us(bad)


def test_invalid_utf8_stored_as_text_is_repaired_not_fatal(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    con = sqlite3.connect(db)
    con.executescript(CURRENT_DDL)
    # TEXT values holding bytes that are not UTF-8 (what a buggy recorder can write)
    con.execute("INSERT INTO frames (id, timestamp, app_name, window_name, focused) "
                "VALUES (1, '2026-03-15T10:00:00Z', 'Mail', CAST(x'436166e9' AS TEXT), 1)")
    con.execute("INSERT INTO elements (id, frame_id, source, text) VALUES (1, 1, 'ocr', CAST(x'ff41' AS TEXT))")
    con.commit()
    con.close()
    b = read_screenpipe(db)
    assert b.snapshots[0].window == "Caf\ufffd"
    assert b.elements[0].text == "\ufffdA"
    assert b.notes["frames.window_name: invalid UTF-8 replaced with U+FFFD"] == 1
    assert b.notes["elements.text: invalid UTF-8 replaced with U+FFFD"] == 1


def test_screen_specs() -> None:
    assert parse_screen_sizes(["monitor_1=1512x982", "monitor_2=2560X1440"]) == {
        "monitor_1": (1512, 982), "monitor_2": (2560, 1440)}
    for bad in ["monitor_1", "=1x1", "monitor_1=1512", "monitor_1=10x10", "m=axb"]:
        with pytest.raises(UserError):
            parse_screen_sizes([bad])


def test_a_locked_database_is_a_clear_user_error(tmp_path: Path, monkeypatch) -> None:
    import capture.importers.common as common

    monkeypatch.setattr(common, "SQLITE_WAIT_S", 0.05)
    db = tmp_path / "db.sqlite"
    con = sqlite3.connect(db)
    con.executescript(CURRENT_DDL)
    con.commit()
    con.execute("BEGIN EXCLUSIVE")  # a recorder in rollback-journal mode, mid-write
    try:
        with pytest.raises(UserError, match=r"db.sqlite is locked by another program"):
            read_screenpipe(db)
    finally:
        con.rollback()
        con.close()
