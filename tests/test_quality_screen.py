"""The data-quality checks' DuckDB screen never passes what Great Expectations would fail.

The checks report a batch as passing from the screen alone and leave everything else to GX
(checks/quality.py), so the one property that matters is: screen passes => GX passes, on the
same rows as the warehouse hands them to GX (DuckDB -> pandas). Generated frames cover nulls,
repeated ids, equal and out-of-order values, values past float precision; the fixed cases show
that each kind of bad row is sent to GX and that GX then fails it.
"""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checks import quality

DAYS = ["2026-06-01", "2026-06-02"]
RAW_COLUMNS = {"day": "VARCHAR", "ref": "VARCHAR", "ts_us": "BIGINT", "stream_key": "VARCHAR", "what": "VARCHAR",
               "prev_ts_us": "BIGINT"}
FRAME_COLUMNS = {"day": "VARCHAR", "frame_id": "VARCHAR", "stream": "VARCHAR", "app": "VARCHAR",
                 "start_us": "BIGINT", "end_us": "BIGINT", "wall_us": "BIGINT", "active_us": "BIGINT",
                 "dwell_cap_us": "BIGINT", "prev_end_us": "BIGINT"}
SELECT = "SELECT * FROM t"


def table(columns: dict[str, str], rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t (" + ", ".join(f"{c} {t}" for c, t in columns.items()) + ")")
    if rows:
        con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(columns))})", rows)
    return con


def gx_problems(con: duckdb.DuckDBPyConnection, name: str, expectations) -> list[str]:
    return quality.validate(name, con.execute(SELECT).df(), expectations(quality._gx()))


big = st.integers(min_value=-(2**62), max_value=2**62)
small = st.integers(min_value=-3, max_value=3)
value = st.one_of(small, small.map(lambda v: 1_780_000_000_000_000 + v), big)  # us since 1970, and beyond
maybe = st.one_of(st.none(), value)
text = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h"]))


@st.composite
def raw_rows(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    refs = draw(st.lists(text, min_size=n, max_size=n))
    return [(draw(st.sampled_from(DAYS)), refs[i], draw(maybe), draw(text), draw(text), draw(maybe))
            for i in range(n)]


@st.composite
def frame_rows(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    rows = []
    for _ in range(n):
        rows.append((draw(st.sampled_from(DAYS)), draw(text), draw(text), draw(text), draw(maybe), draw(maybe),
                     draw(maybe), draw(maybe), draw(maybe), draw(maybe)))
    return rows


SLOW = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SLOW
@given(raw_rows())
def test_raw_screen_passes_only_what_gx_passes(rows):
    con = table(RAW_COLUMNS, rows)
    days = sorted({r[0] for r in rows})
    if quality.screen(con, SELECT, quality.RAW_SCREEN, days) is not None:
        assert gx_problems(con, "raw_rows", quality._raw_expectations) == []


@SLOW
@given(frame_rows())
def test_frames_screen_passes_only_what_gx_passes(rows):
    con = table(FRAME_COLUMNS, rows)
    days = sorted({r[0] for r in rows})
    if quality.screen(con, SELECT, quality.FRAMES_SCREEN, days) is not None:
        assert gx_problems(con, "frames", quality._frames_expectations) == []


T = 1_780_000_000_000_000
CLEAN_RAW = [(DAYS[0], "a", T, "s1", "App", None), (DAYS[0], "b", T + 5, "s1", "App", T),
             (DAYS[1], "c", T + 9, "s2", "click", None)]
CLEAN_FRAMES = [(DAYS[0], "s1:a", "s1", "App", T, T + 10, 10, 8, 300, None),
                (DAYS[0], "s1:b", "s1", "App", T + 10, T + 20, 10, 10, 300, T + 10),
                (DAYS[1], "s2:c", "s2", "Other", T, T + 5, 5, 0, 300, None)]


def test_clean_batches_pass_the_screen_with_their_row_counts():
    assert quality.screen(table(RAW_COLUMNS, CLEAN_RAW), SELECT, quality.RAW_SCREEN, DAYS) == {DAYS[0]: 2, DAYS[1]: 1}
    assert quality.screen(table(FRAME_COLUMNS, CLEAN_FRAMES), SELECT, quality.FRAMES_SCREEN, DAYS) == {
        DAYS[0]: 2, DAYS[1]: 1}


def _with(rows: list[tuple], index: int, column: int, new) -> list[tuple]:
    out = [list(r) for r in rows]
    out[index][column] = new
    return [tuple(r) for r in out]


@pytest.mark.parametrize("rows", [
    _with(CLEAN_RAW, 1, 1, "a"),  # a repeated ref
    _with(CLEAN_RAW, 2, 1, "a"),  # repeated across days: the whole batch fails in GX
    _with(CLEAN_RAW, 0, 3, None),  # a null key
    _with(CLEAN_RAW, 1, 2, T - 1),  # before its predecessor
])
def test_each_bad_raw_row_goes_to_gx_and_fails_there(rows):
    con = table(RAW_COLUMNS, rows)
    assert quality.screen(con, SELECT, quality.RAW_SCREEN, DAYS) is None
    assert gx_problems(con, "raw_rows", quality._raw_expectations)


@pytest.mark.parametrize("rows", [
    _with(CLEAN_FRAMES, 1, 1, "s1:a"),  # a repeated frame id
    _with(CLEAN_FRAMES, 0, 3, None),  # a null app
    _with(CLEAN_FRAMES, 0, 6, -1),  # negative wall time
    _with(CLEAN_FRAMES, 0, 7, 11),  # active above wall
    _with(CLEAN_FRAMES, 0, 8, 7),  # active above the dwell cap
    _with(CLEAN_FRAMES, 1, 9, T + 11),  # starts before the previous frame ended
    _with(CLEAN_FRAMES, 0, 7, None),  # active time missing: GX fails the pair on it
])
def test_each_bad_frame_row_goes_to_gx_and_fails_there(rows):
    con = table(FRAME_COLUMNS, rows)
    assert quality.screen(con, SELECT, quality.FRAMES_SCREEN, DAYS) is None
    assert gx_problems(con, "frames", quality._frames_expectations)


def test_a_column_of_floats_is_left_to_gx():
    con = table({**FRAME_COLUMNS, "active_us": "DOUBLE"}, CLEAN_FRAMES)
    assert quality.screen(con, SELECT, quality.FRAMES_SCREEN, DAYS) is None


def test_a_day_without_rows_is_left_to_gx():
    assert quality.screen(table(RAW_COLUMNS, CLEAN_RAW[:2]), SELECT, quality.RAW_SCREEN, DAYS) is None
