"""The raw_* views' parts (af_pipeline/warehouse/store.py): a month of the latest year, or an
earlier year. Whatever order days are registered in, the views show exactly the registered rows,
and a new month of the latest year replaces one part view without binding the raw_* views again
(binding them binds every part, a cost that would follow the history)."""

from __future__ import annotations

import duckdb
import pytest
from dagster_support import corpus, days_of, new_home
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.warehouse import day_work as steps
from af_pipeline.warehouse import store
from capture.log import EventLog

# two days across a new year, two across a new month of the latest year
STARTS = (("2024-12-31", 2), ("2025-01-31", 4))  # (first day, days): no capture on weekends


@pytest.fixture(scope="module")
def years_log(tmp_path_factory):
    home = new_home(tmp_path_factory.mktemp("parts"))
    log = EventLog(home)
    days: list[str] = []
    for start, n in STARTS:
        batch = corpus(n, start)
        log.append(batch)
        days += days_of(batch)
    assert days == ["2024-12-31", "2025-01-01", "2025-01-31", "2025-02-03"]
    return log, days


def _view_oids(con) -> dict[str, int]:
    return {str(n): int(o) for n, o in con.execute(
        "SELECT view_name, view_oid FROM duckdb_views() WHERE schema_name = 'main' AND view_name LIKE 'raw_%'"
    ).fetchall()}


def _parts(con) -> set[str]:
    return {str(n) for (n,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE schema_name = ?", [store.PARTS]).fetchall()}


def _check_views(con, registered: set[str]) -> None:
    """Every raw_* view holds exactly the registered days' rows, and the parts are the wanted ones."""
    for kind, view in store.RAW_TABLES.items():
        shown = dict(con.execute(f"SELECT day, count(*) FROM {view} GROUP BY day").fetchall())
        files = dict(con.execute("SELECT day, rows FROM raw_files WHERE kind = ?", [kind]).fetchall())
        assert set(files) == registered, kind
        assert shown == {d: n for d, n in files.items() if n}, kind
    years = sorted({d[:4] for d in registered})
    latest = years[-1]
    want = set(years[:-1]) | {f"{latest}-{m:02d}" for m in range(1, 13)}
    assert _parts(con) == {f"{k} {p}" for k in store.ROW_KINDS for p in want}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(4)), again=st.lists(st.integers(0, 3), max_size=2), in_batch=st.booleans())
def test_the_raw_views_show_every_registered_day_whatever_the_order(years_log, order, again, in_batch):
    log, days = years_log
    con = duckdb.connect(":memory:")
    try:
        registered: set[str] = set()
        for i in [*order, *again]:
            if in_batch:
                with store.batch(con):
                    steps.raw_day(con, log, days[i])
            else:
                steps.raw_day(con, log, days[i])
            registered.add(days[i])
            _check_views(con, registered)
    finally:
        con.close()


def test_a_new_month_of_the_latest_year_does_not_bind_the_raw_views_again(years_log, tmp_path):
    log, days = years_log
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        steps.raw_day(con, log, days[0])  # 2024-12-31
        first = _view_oids(con)
        steps.raw_day(con, log, days[1])  # a new year: 2024 becomes one part, 2025 twelve
        new_year = _view_oids(con)
        assert all(new_year[v] != first[v] for v in store.RAW_TABLES.values())
        for day in days[2:]:  # 2025-01-31, then 2025-02-03 of a new month
            steps.raw_day(con, log, day)
            assert {v: _view_oids(con)[v] for v in store.RAW_TABLES.values()} == {
                v: new_year[v] for v in store.RAW_TABLES.values()}, day
        _check_views(con, set(days))
        steps.raw_day(con, log, days[0])  # a day of an earlier year again: its year's part alone
        assert {v: _view_oids(con)[v] for v in store.RAW_TABLES.values()} == {
            v: new_year[v] for v in store.RAW_TABLES.values()}
        _check_views(con, set(days))
    finally:
        con.close()
