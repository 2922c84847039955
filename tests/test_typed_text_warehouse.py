"""Typed text stays out of warehouse.duckdb unless the build opts in (DataFolder.include_typed_text):
every VARCHAR column of every table and view is scanned for what was typed. The log keeps it;
the documents are the same bytes either way (the compile only counts typed characters)."""

from __future__ import annotations

from dataclasses import replace

import dagster as dg
import duckdb
import pytest
from dagster_support import corpus, days_of, new_home

from assets import certify as harness
from assets.definitions import BUILD_JOB, build_definitions
from capture.log import EventLog
from capture.timeutil import day_bounds

SECRET = "Zq7 typed secret"  # a text event, a clipboard and a key event carry parts of it
KEY = "\u00a7"  # one typed key no other row holds


def _typed_capture():
    batch = corpus()
    inputs, done = [], set()
    for ev in batch.inputs:
        day = days_of(batch)[0] if ev.ts_us < day_bounds(days_of(batch)[1], "Europe/Paris")[0] else days_of(batch)[1]
        if ev.kind in ("text", "clipboard", "key") and (day, ev.kind) not in done:
            done.add((day, ev.kind))
            ev = replace(ev, text=KEY if ev.kind == "key" else SECRET)
        inputs.append(ev)
    assert len(done) == 6
    return replace(batch, inputs=inputs)


def _holding(home, needle: str) -> list[str]:
    """table.column of every VARCHAR column (tables and views) holding needle."""
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        found = []
        cols = con.execute("SELECT table_name, column_name FROM information_schema.columns "
                           "WHERE data_type = 'VARCHAR' ORDER BY table_name, column_name").fetchall()
        for table, column in cols:
            (n,) = con.execute(f'SELECT count(*) FROM "{table}" WHERE strpos("{column}", ?) > 0',
                               [needle]).fetchone() or (0,)
            if n:
                found.append(f"{table}.{column}")
        return found
    finally:
        con.close()


@pytest.fixture
def typed_home(tmp_path):
    """Day 1 sealed (its files registered), day 2 open (its rows copied into the warehouse)."""
    home = new_home(tmp_path)
    batch = _typed_capture()
    days = days_of(batch)
    EventLog(home).append(batch, now_us=day_bounds(days[1], "Europe/Paris")[1] - 1)
    statuses = {d.day: d.sealed for d in EventLog(home).days()}
    assert statuses == {days[0]: True, days[1]: False}
    return home, days


def test_without_the_opt_in_no_table_or_view_holds_typed_text(typed_home):
    home, days = typed_home
    out = harness.run_build(home, days)
    assert out.ok, out.failures
    assert _holding(home, SECRET) == [] and _holding(home, KEY) == []
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:  # what is kept: the kinds and the length of what was typed (the documents count characters)
        rows = con.execute("SELECT DISTINCT day, kind FROM raw_inputs WHERE text = ? ORDER BY day, kind",
                           ["\u2022" * len(SECRET)]).fetchall()
        assert rows == [(days[0], "clipboard"), (days[0], "text"), (days[1], "clipboard"), (days[1], "text")]
    finally:
        con.close()
    assert SECRET in "".join(r.text or "" for r in EventLog(home).read_day(days[1]).inputs)  # the log keeps it


def test_with_the_opt_in_the_open_days_copied_rows_hold_it(typed_home):
    home, days = typed_home
    from assets.partitions import register_days

    job = build_definitions(home).resolve_job_def(BUILD_JOB)
    register_days(dg.DagsterInstance.get(), days)
    result = job.execute_in_process(
        instance=dg.DagsterInstance.get(), raise_on_error=False,
        tags={"dagster/asset_partition_range_start": days[0], "dagster/asset_partition_range_end": days[1]},
        run_config={"resources": {"data_folder": {"config": {"root": str(home.root), "include_typed_text": True}}}},
    )
    assert result.success
    held = _holding(home, SECRET)
    assert "raw_copied_inputs.text" in held and "raw_inputs.text" in held, held
