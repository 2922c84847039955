"""The raw_* views over the registered sealed files (af_pipeline/warehouse/store.py). Whatever
order days are registered in, the views show exactly the registered rows; registering a day of a
new month or year binds no view again, and the views' text does not grow with the days (every
checkpoint writes the whole catalog, so a view naming each file made each night dearer)."""

from __future__ import annotations

import duckdb
import pytest
from dagster_support import corpus, days_of, new_home
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.warehouse import day_work as steps
from af_pipeline.warehouse import store
from capture.log import EventLog

# two days across a new year, two across a new month
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


def _views_text(con) -> int:
    (n,) = con.execute("SELECT sum(length(sql)) FROM duckdb_views() WHERE NOT internal").fetchone()
    return int(n)


def _check_views(con, registered: set[str]) -> None:
    """Every raw_* view holds exactly the registered days' rows, in the log's order."""
    for kind, view in store.RAW_TABLES.items():
        shown = dict(con.execute(f"SELECT day, count(*) FROM {view} GROUP BY day").fetchall())
        files = dict(con.execute("SELECT day, rows FROM raw_files WHERE kind = ?", [kind]).fetchall())
        assert set(files) == registered, kind
        assert shown == {d: n for d, n in files.items() if n}, kind
        seqs = con.execute(f"SELECT day, list(seq ORDER BY seq) FROM {view} GROUP BY day").fetchall()
        assert all(s == list(range(len(s))) for _, s in seqs), kind


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


def test_registering_days_binds_no_view_again_and_the_views_do_not_grow(years_log, tmp_path):
    log, days = years_log
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        steps.raw_day(con, log, days[0])  # 2024-12-31: every kind gets its first file
        first, text = _view_oids(con), _views_text(con)
        for day in [*days[1:], days[0]]:  # a new year, a new month, an earlier day again
            steps.raw_day(con, log, day)
            assert _view_oids(con) == first, day
            assert _views_text(con) == text, day
        _check_views(con, set(days))
    finally:
        con.close()
    con = duckdb.connect(str(tmp_path / "w.duckdb"))  # as a later run finds it
    try:
        _check_views(con, set(days))
    finally:
        con.close()


def test_a_warehouse_with_per_month_views_is_migrated_when_a_day_is_registered(years_log, tmp_path):
    """The layout before bound each raw_* view over per-month views in raw_parts."""
    log, days = years_log
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    try:
        for day in days[:2]:
            steps.raw_day(con, log, day)
        con.execute(f"CREATE SCHEMA {store.PARTS}")
        for kind, view in store.RAW_TABLES.items():
            con.execute(f"CREATE TABLE kept_{kind} AS SELECT * FROM {view}")
            months = {"2024-12": "day < '2025'", "2025-01": "day >= '2025'"}
            for month, where in months.items():
                con.execute(f'CREATE VIEW {store.PARTS}."{kind} {month}" AS SELECT * FROM kept_{kind} WHERE {where}')
            union = " UNION ALL ".join(f'SELECT * FROM {store.PARTS}."{kind} {m}"' for m in months)
            con.execute(f"CREATE OR REPLACE VIEW {view} AS SELECT * FROM {store.COPIED_TABLES[kind]} UNION ALL {union}")
    finally:
        con.close()
    con = duckdb.connect(str(path))  # the new code opens it
    try:
        steps.raw_day(con, log, days[2])
        (parts,) = con.execute("SELECT count(*) FROM duckdb_schemas() WHERE schema_name = ?", [store.PARTS]).fetchone()
        assert parts == 0
        assert all("raw_parts" not in str(q) for (q,) in con.execute("SELECT sql FROM duckdb_views()").fetchall())
        _check_views(con, set(days[:3]))
    finally:
        con.close()
