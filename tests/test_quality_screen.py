"""The data-quality rules' SQL forms agree with Great Expectations.

The checks report a batch as passing from the screen alone and leave everything else to GX
(checks/quality.py), so: screen passes => GX passes, on the same rows as the warehouse hands
them to GX (DuckDB -> pandas). The build keeps a day from being published when
quality.violations names a broken rule for it (af_pipeline/warehouse/quality.py), so: a day it
names is one GX fails, and a day GX fails on integer and text columns is one it names. Generated
rows cover nulls, repeated ids, equal and out-of-order values, values past float precision; the
fixed cases show that each kind of bad row is sent to GX and that GX then fails it.
"""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.warehouse import quality as rules
from checks import quality

DAYS = ["2026-06-01", "2026-06-02"]
RAW_COLUMNS = {"day": "VARCHAR", "ref": "VARCHAR", "ts_us": "BIGINT", "stream_key": "VARCHAR", "what": "VARCHAR",
               "prev_ts_us": "BIGINT", "end_us": "BIGINT"}
FRAME_COLUMNS = {"day": "VARCHAR", "frame_id": "VARCHAR", "stream": "VARCHAR", "app": "VARCHAR",
                 "start_us": "BIGINT", "end_us": "BIGINT", "wall_us": "BIGINT", "active_us": "BIGINT",
                 "earn_cap_us": "BIGINT", "prev_end_us": "BIGINT"}
SELECT = "SELECT * FROM t"


def table(columns: dict[str, str], rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t (" + ", ".join(f"{c} {t}" for c, t in columns.items()) + ")")
    if rows:
        con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(columns))})", rows)
    return con


def gx_problems(con: duckdb.DuckDBPyConnection, spec: rules.Spec) -> list[str]:
    return quality.validate(spec.check, con.execute(SELECT).df(), quality.expectations(spec)(quality._gx()))


big = st.integers(min_value=-(2**62), max_value=2**62)
small = st.integers(min_value=-3, max_value=3)
value = st.one_of(small, small.map(lambda v: 1_780_000_000_000_000 + v), big)  # us since 1970, and beyond
maybe = st.one_of(st.none(), value)
text = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h"]))


@st.composite
def raw_rows(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    refs = draw(st.lists(text, min_size=n, max_size=n))
    return [(draw(st.sampled_from(DAYS)), refs[i], draw(maybe), draw(text), draw(text), draw(maybe), draw(maybe))
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
    if rules.screen(con, SELECT, rules.RAW, days) is not None:
        assert gx_problems(con, rules.RAW) == []


@SLOW
@given(frame_rows())
def test_frames_screen_passes_only_what_gx_passes(rows):
    con = table(FRAME_COLUMNS, rows)
    days = sorted({r[0] for r in rows})
    if rules.screen(con, SELECT, rules.FRAMES, days) is not None:
        assert gx_problems(con, rules.FRAMES) == []


T = 1_780_000_000_000_000
CLEAN_RAW = [(DAYS[0], "a", T, "s1", "App", None, None), (DAYS[0], "b", T + 5, "s1", "App", T, T + 7),
             (DAYS[1], "c", T + 9, "s2", "click", None, None)]
CLEAN_FRAMES = [(DAYS[0], "s1:a", "s1", "App", T, T + 10, 10, 8, 300, None),
                (DAYS[0], "s1:b", "s1", "App", T + 10, T + 20, 10, 10, 300, T + 10),
                (DAYS[1], "s2:c", "s2", "Other", T, T + 5, 5, 0, 300, None)]


def test_clean_batches_pass_the_screen_with_their_row_counts():
    assert rules.screen(table(RAW_COLUMNS, CLEAN_RAW), SELECT, rules.RAW, DAYS) == {DAYS[0]: 2, DAYS[1]: 1}
    assert rules.screen(table(FRAME_COLUMNS, CLEAN_FRAMES), SELECT, rules.FRAMES, DAYS) == {
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
    _with(CLEAN_RAW, 1, 6, T + 4),  # a measured span that ends before it starts
])
def test_each_bad_raw_row_goes_to_gx_and_fails_there(rows):
    con = table(RAW_COLUMNS, rows)
    assert rules.screen(con, SELECT, rules.RAW, DAYS) is None
    assert gx_problems(con, rules.RAW)


@pytest.mark.parametrize("rows", [
    _with(CLEAN_FRAMES, 1, 1, "s1:a"),  # a repeated frame id
    _with(CLEAN_FRAMES, 0, 3, None),  # a null app
    _with(CLEAN_FRAMES, 0, 6, -1),  # negative wall time
    _with(CLEAN_FRAMES, 0, 7, 11),  # active above wall
    _with(CLEAN_FRAMES, 0, 8, 7),  # active above what its snapshots can earn
    _with(CLEAN_FRAMES, 1, 9, T + 11),  # starts before the previous frame ended
    _with(CLEAN_FRAMES, 0, 7, None),  # active time missing: GX fails the pair on it
])
def test_each_bad_frame_row_goes_to_gx_and_fails_there(rows):
    con = table(FRAME_COLUMNS, rows)
    assert rules.screen(con, SELECT, rules.FRAMES, DAYS) is None
    assert gx_problems(con, rules.FRAMES)


def test_a_column_of_floats_is_left_to_gx():
    con = table({**FRAME_COLUMNS, "active_us": "DOUBLE"}, CLEAN_FRAMES)
    assert rules.screen(con, SELECT, rules.FRAMES, DAYS) is None


def test_a_day_without_rows_is_left_to_gx():
    assert rules.screen(table(RAW_COLUMNS, CLEAN_RAW[:2]), SELECT, rules.RAW, DAYS) is None


def _gx_days(con: duckdb.DuckDBPyConnection, spec: rules.Spec, days: list[str]) -> set[str]:
    """The days GX fails when each day is validated alone (how the build judges a day)."""
    frame = con.execute(SELECT).df()
    make = quality.expectations(spec)
    return {d for d in days if quality.validate(spec.check, frame[frame["day"] == d], make(quality._gx()))}


@SLOW
@given(raw_rows())
def test_the_days_the_build_withholds_are_the_days_gx_fails_raw(rows):
    con = table(RAW_COLUMNS, rows)
    days = sorted({r[0] for r in rows})
    assert set(rules.violations(con, SELECT, rules.RAW)) == _gx_days(con, rules.RAW, days)


@SLOW
@given(frame_rows())
def test_the_days_the_build_withholds_are_the_days_gx_fails_frames(rows):
    con = table(FRAME_COLUMNS, rows)
    days = sorted({r[0] for r in rows})
    assert set(rules.violations(con, SELECT, rules.FRAMES)) == _gx_days(con, rules.FRAMES, days)


def test_a_violation_names_the_rule_and_row_ids_never_a_title():
    rows = _with(CLEAN_FRAMES, 0, 7, 400)  # active 400 us: above wall (10) and above the earn cap (300)
    found = rules.violations(table(FRAME_COLUMNS, rows), SELECT, rules.FRAMES)
    assert list(found) == [DAYS[0]]
    said = " ".join(found[DAYS[0]])
    assert "rule wall_us >= active_us" in said and "rule earn_cap_us >= active_us" in said
    assert "frame_id s1:a" in said and "App" not in said
