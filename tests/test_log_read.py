"""Reading a sealed day trusts the order sealing wrote only after checking it.

read_day fetches a sealed file as stored (it was written in the log's total order and its hash was
just checked) and sorts only if the order check fails. The check must agree with the Python twin of
the order (capture.log.sort_key) on any arrangement of rows, ties and missing streams included.
"""

from __future__ import annotations

import duckdb
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import capture.log as log_module
from capture.log import NAMES, SELECT_SQL, EventLog, _in_order, sort_key
from capture.log.columns import registered
from capture.model import CLASS_OF, CaptureBatch, Element, InputEvent, Snapshot
from capture.timeutil import day_bounds

DAY = "2026-03-29"
T0 = day_bounds(DAY, "Europe/Paris")[0] + 3_600_000_000
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

small_ts = st.integers(T0, T0 + 3)  # few distinct times: ties on every key are common
name = st.sampled_from(["a", "b", "é", "a:1", "B"])
snapshots = st.builds(lambda r, t, s: Snapshot(r, t, s, "App"), name, small_ts, st.sampled_from(["", "m0", "m1"]))
inputs = st.builds(lambda r, t, s: InputEvent(r, t, "click", stream=s), name, small_ts,
                   st.one_of(st.none(), st.sampled_from(["", "m0", "m1"])))
elements = st.builds(lambda r, t, f: Element(r, t, f, "accessibility"), name, small_ts, name)
kind_rows = st.one_of(
    st.tuples(st.just("snapshots"), st.lists(snapshots, max_size=12)),
    st.tuples(st.just("inputs"), st.lists(inputs, max_size=12)),
    st.tuples(st.just("elements"), st.lists(elements, max_size=12)),
)


def _fetched(kind: str, rows: list) -> dict:
    """Columns of rows as DuckDB's fetchnumpy returns them (masked arrays where NULLs occur)."""
    con = duckdb.connect()
    cols = {n: [getattr(r, n) for r in rows] for n in NAMES[kind]}
    with registered(con, "rows_in", kind, cols) as rows_in:
        return con.execute(f"SELECT {SELECT_SQL[kind]} FROM {rows_in}").fetchnumpy()


@SETTINGS
@given(kind_rows=kind_rows, presort=st.booleans())
def test_order_check_agrees_with_the_sort_key(kind_rows, presort):
    from capture.log.rows import order_keys

    kind, rows = kind_rows
    key = sort_key(kind)
    if presort:
        rows = sorted(rows, key=key)
    expected = rows == sorted(rows, key=key)
    # the columns as DuckDB fetches them, and as a one-segment sealed read gives them (pyarrow's
    # Python values, None for NULL)
    assert _in_order(kind, _fetched(kind, rows)) == expected
    assert _in_order(kind, order_keys(kind, [[getattr(r, n) for r in rows] for n in NAMES[kind]])) == expected


def test_a_sealed_file_in_another_order_still_reads_sorted(home, monkeypatch):
    """A day sealed under a different row order (e.g. by an older version) reads in today's order."""
    log = EventLog(home)
    rows = [InputEvent(f"r{i}", T0 + (i % 3), "click", stream=["m1", None, "m0"][i % 3]) for i in range(30)]
    monkeypatch.setitem(log_module.SORT_SQL, "inputs", "ref DESC")
    log.append(CaptureBatch("src", "synth", inputs=rows), now_us=T0 + 10**12)
    monkeypatch.undo()
    got = log.read_day(DAY).inputs
    assert got == sorted(rows, key=sort_key("inputs"))
    assert log.verify().ok


def test_sealed_read_builds_the_same_rows_as_the_constructor(home):
    log = EventLog(home)
    rows = [Element(f"e{i}", T0, f"f{i % 4}", "ocr", None if i % 2 else "AXButton", f"t{i}", None, i, 0.5, None, 1, 0.25)
            for i in range(20)]
    log.append(CaptureBatch("src", "synth", elements=rows), now_us=T0 + 10**12)
    got = log.read_day(DAY).elements
    expected = sorted((Element(**{**{n: getattr(r, n) for n in NAMES["elements"]}, "width": 1.0}) for r in rows),
                      key=sort_key("elements"))
    assert got == expected
    assert all(type(e) is CLASS_OF["elements"] for e in got)
    assert [type(e.width) for e in got] == [float] * len(got)
    assert np.isnan(np.array([e.top for e in got], dtype=float)).all()  # missing stays missing
