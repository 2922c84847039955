"""The warehouse's write path (store.replace_day / replace_table): what lands is what the earlier
pandas path stored, value for value and type for type, and the schema check still catches a
changed table although it is asked once per connection."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.warehouse import store

TYPES = ("VARCHAR", "BIGINT", "DOUBLE", "BOOLEAN")


def _pandas_write(con: duckdb.DuckDBPyConnection, table: str, day: str, columns: dict[str, str], rows: list) -> None:
    """The write as it was before the numpy path (the oracle): every column an object Series of a
    pandas frame, CAST to its type by DuckDB."""
    import numpy as np
    import pandas as pd

    names = list(columns)
    types = [columns[n] for n in names]
    n = len(rows)
    cols: list[Any] = list(zip(*rows, strict=True)) if n else [() for _ in names]
    data: dict[str, Any] = {"day": pd.Series([day] * n, dtype=object), "seq": np.arange(n, dtype=np.int64)}
    for i, (col, t) in enumerate(zip(cols, types, strict=True)):
        if t == "VARCHAR" and not set(map(type, col)) <= {str, type(None)}:
            col = [store._cell(v, t) for v in col]
        data[f"c{i}"] = pd.Series(col, dtype=object)
    select = ", ".join(["CAST(day AS VARCHAR)", "CAST(seq AS BIGINT)"] + [f"CAST(c{i} AS {t})" for i, t in enumerate(types)])
    store.ensure_table(con, table, columns)
    con.execute(f"DELETE FROM {table} WHERE day = ?", [day])
    if n:
        frame = pd.DataFrame(data)
        con.register("_old_rows", frame)
        con.execute(f"INSERT INTO {table} SELECT {select} FROM _old_rows")
        con.unregister("_old_rows")


def _stored(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    # typeof per cell and the value's text: -0.0 / 0.0 and NaN / NULL count as different
    cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
    exprs = ", ".join(f'typeof("{c}"), CAST("{c}" AS VARCHAR), "{c}" IS NULL' for c in cols)
    return con.execute(f"SELECT {exprs} FROM {table} ORDER BY day, seq").fetchall()


_CONS: dict[str, duckdb.DuckDBPyConnection] = {}


def _outcome(write, table: str, columns: dict[str, str], rows: list) -> tuple[str, Any]:
    if write.__name__ not in _CONS:
        _CONS[write.__name__] = duckdb.connect()  # a connection per path, reused (a connect is ~60 ms)
    con = _CONS[write.__name__]
    con.execute(f"DROP TABLE IF EXISTS {table}")
    store.forget(con)
    try:
        write(con, table, "2026-01-01", columns, rows)
    except Exception as exc:  # both paths must refuse the same inputs
        return "error", type(exc).__name__
    return "ok", _stored(con, table)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=2**63, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)


def _column_values(sql_type: str) -> st.SearchStrategy:
    typed = {
        "VARCHAR": st.one_of(st.none(), st.text(max_size=12), st.lists(st.integers(), max_size=3),
                             st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
        "BIGINT": st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1)),
        "DOUBLE": st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
        "BOOLEAN": st.one_of(st.none(), st.booleans()),
    }[sql_type]
    # mostly values of the column's type, sometimes anything (what the fallback is for)
    return st.one_of(typed, typed, typed, _scalars)


@st.composite
def tables(draw):
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=4))
    columns = {f"k{i}": t for i, t in enumerate(types)}
    n = draw(st.integers(min_value=0, max_value=12))
    cols = [draw(st.lists(_column_values(t), min_size=n, max_size=n)) for t in types]
    return columns, [tuple(c[r] for c in cols) for r in range(n)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_a_day_lands_exactly_as_the_pandas_path_stored_it(table):
    columns, rows = table
    new = _outcome(store.replace_day, "t", columns, rows)
    old = _outcome(_pandas_write, "t", columns, rows)
    assert new == old


def test_typed_values_keep_their_type_and_nulls():
    con = duckdb.connect()
    columns = {"a": "DOUBLE", "b": "BIGINT", "s": "VARCHAR", "f": "BOOLEAN", "j": "VARCHAR"}
    rows = [(1.5, 2**62, "x", True, [1, 2]), (math.nan, None, None, None, {"b": 1, "a": 2}), (-0.0, -1, "", False, None)]
    assert store.replace_day(con, "t", "d", columns, rows) == 3
    assert con.execute("SELECT * FROM t ORDER BY seq").fetchall() == [
        ("d", 0, 1.5, 2**62, "x", True, "[1,2]"),
        ("d", 1, None, None, None, None, '{"a":2,"b":1}'),
        ("d", 2, -0.0, -1, "", False, None),
    ]
    assert store.replace_day(con, "t", "d", columns, []) == 0  # the day emptied
    assert con.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_a_changed_table_is_refused_and_a_rolled_back_table_is_made_again(tmp_path):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    store.replace_day(con, "t", "d", {"v": "BIGINT"}, [(1,)])
    with pytest.raises(store.SchemaChanged):
        store.replace_day(con, "t", "d", {"v": "VARCHAR"}, [("x",)])
    # a table created in a batch that rolls back is gone: the next write creates it again
    with pytest.raises(RuntimeError), store.batch(con):
        store.replace_day(con, "u", "d", {"v": "BIGINT"}, [(1,)])
        raise RuntimeError("the step failed")
    store.replace_day(con, "u", "d", {"v": "BIGINT"}, [(2,)])
    assert con.execute("SELECT v FROM u").fetchall() == [(2,)]
    con.close()
    # a new connection checks again: the table as another version of the code left it
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("ALTER TABLE t ADD COLUMN extra VARCHAR")
    with pytest.raises(store.SchemaChanged):
        store.replace_day(con, "t", "d", {"v": "BIGINT"}, [(1,)])
    con.close()


def test_writing_a_day_imports_neither_pandas_nor_pyarrow():
    """pandas costs a second of start-up in the certification rebuild's processes."""
    code = (
        "import sys, duckdb\n"
        "from af_pipeline.warehouse import store\n"
        "con = duckdb.connect()\n"
        "store.replace_day(con, 't', 'd', {'a': 'VARCHAR', 'b': 'BIGINT', 'c': 'DOUBLE'}, [('x', 1, 1.0), (None, None, None)])\n"
        "store.replace_table(con, 'r', {'a': 'VARCHAR', 'b': 'DOUBLE'}, [('x', 2.0)])\n"
        "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def two_days(tmp_path_factory):
    from dagster_support import corpus, days_of, new_home

    from capture.log import EventLog

    home = new_home(tmp_path_factory.mktemp("writes"))
    batch = corpus(2)
    log = EventLog(home)
    log.append(batch)
    return log, days_of(batch)


def _raw_views(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {kind: con.execute(f"SELECT * FROM {table} ORDER BY day, seq").fetchall()
            for kind, table in store.RAW_TABLES.items()}


def test_days_registered_in_one_batch_read_through_the_views_as_days_registered_one_by_one(two_days, tmp_path):
    """A batch rebinds the raw views once, at its end: the views then show every day it registered."""
    log, days = two_days
    assert len(days) >= 2
    one = duckdb.connect(str(tmp_path / "one.duckdb"))
    for day in days:
        store.load_raw_day(one, log, day)
    together = duckdb.connect(str(tmp_path / "together.duckdb"))
    with store.batch(together):
        for day in days:
            store.load_raw_day(together, log, day)
    want = _raw_views(one)
    assert want["inputs"] and {d for (d, *_r) in want["snapshots"]} == set(days)
    assert _raw_views(together) == want
    # a batch that fails leaves the views as they were (and registers nothing)
    fresh = duckdb.connect(str(tmp_path / "failed.duckdb"))
    store.load_raw_day(fresh, log, days[0])
    before = _raw_views(fresh)
    with pytest.raises(RuntimeError), store.batch(fresh):
        store.load_raw_day(fresh, log, days[1])
        raise RuntimeError("the step failed")
    assert _raw_views(fresh) == before
    for con in (one, together, fresh):
        con.close()


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.text(max_size=40), st.sampled_from([
    "https://github.com/acme/widgets/pull/12", "https://www.linkedin.com/company/hooli/",
    "https://www.google.com/search?q=caf%C3%A9", "mailto:a@b.c", "file:///tmp/x y"])))
def test_page_refs_are_stored_as_their_dataclass_dict(url):
    import dataclasses

    from af_pipeline.compiler.entities import type_url
    from af_pipeline.warehouse import day_work

    ref = type_url(url)
    assert day_work._plain(ref) == dataclasses.asdict(ref)
    assert list(day_work._plain(ref)) == [f.name for f in dataclasses.fields(ref)]


def test_a_record_holding_more_than_scalars_is_copied_as_asdict_copies_it():
    import dataclasses

    from af_pipeline.warehouse import day_work

    @dataclasses.dataclass
    class Inner:
        a: int

    @dataclasses.dataclass
    class Outer:
        inner: Inner
        tags: list

    value = Outer(Inner(1), ["x"])
    assert day_work._plain(value) == {"inner": {"a": 1}, "tags": ["x"]}
    assert day_work._plain(value)["tags"] is not value.tags
