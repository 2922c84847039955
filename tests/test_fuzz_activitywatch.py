"""The ActivityWatch importer raises nothing but the project's user errors, whatever it reads.

Arbitrary bytes, arbitrary JSON, export-shaped JSON with arbitrary values, and aw-server-rust
databases with arbitrary cell values: the importer either returns a batch (bad rows quarantined)
or raises capture.errors.UserError, never anything else.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture.errors import UserError
from capture.importers.activitywatch import read_activitywatch

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True),
    st.text(max_size=30), st.sampled_from(["2026-03-15T09:00:00Z", "2026-03-15 09:00:00.5+02:00", "1e400",
                                           "9" * 400, "NaN", ""]),
)
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                       max_size=4), max_leaves=20)
events = st.lists(st.fixed_dictionaries({}, optional={
    "timestamp": scalars, "duration": scalars,
    "data": st.one_of(json_values, st.fixed_dictionaries({}, optional={
        "app": scalars, "title": scalars, "url": scalars, "status": st.sampled_from(["afk", "not-afk", "x"])})),
}), max_size=6)
bucket = st.fixed_dictionaries({"events": st.one_of(events, json_values)}, optional={
    "type": st.sampled_from(["currentwindow", "afkstatus", "web.tab.current", "os.lockscreen.unlocks", "x"]),
    "hostname": scalars, "client": scalars})
exports = st.fixed_dictionaries({"buckets": st.dictionaries(st.text(max_size=12), st.one_of(bucket, json_values),
                                                            max_size=4)})


def _read(path: Path) -> None:
    try:
        read_activitywatch(path, tz="Europe/Paris")
    except UserError:
        pass


@SETTINGS
@given(raw=st.binary(max_size=300))
def test_arbitrary_bytes(tmp_path: Path, raw: bytes) -> None:
    p = tmp_path / "aw.json"
    p.write_bytes(raw)
    _read(p)


@SETTINGS
@given(doc=json_values)
def test_arbitrary_json(tmp_path: Path, doc: object) -> None:
    p = tmp_path / "aw.json"
    p.write_text(json.dumps(doc))
    _read(p)


@SETTINGS
@given(doc=exports, big=st.sampled_from(["", "1" * 400, "9" * 5000, "1e400", "-1e400", "NaN"]))
def test_export_shaped_json(tmp_path: Path, doc: dict, big: str) -> None:
    p = tmp_path / "aw.json"
    text = json.dumps(doc)
    if big:  # numbers json.dumps cannot write: spliced in as the raw tokens a file may hold
        text = text.replace('"duration": 0', f'"duration": {big}').replace('"timestamp": 0', f'"timestamp": {big}')
    p.write_text(text)
    _read(p)


cells = st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(),
                  st.text(max_size=20), st.binary(max_size=10),
                  st.sampled_from(['{"app": "Code", "title": "x"}', '{"status": "afk"}', "[]", "{"]))


@SETTINGS
@given(rows=st.lists(st.tuples(st.one_of(st.just(1), cells), st.one_of(st.integers(-(2**63), 2**63 - 1), cells),
                                cells, cells), max_size=8),
       btype=st.sampled_from(["currentwindow", "afkstatus", "web.tab.current", "other"]))
def test_rust_database_with_arbitrary_cells(tmp_path: Path, rows: list, btype: str) -> None:
    p = tmp_path / "sqlite.db"
    p.unlink(missing_ok=True)
    con = sqlite3.connect(p)
    # aw-server-rust's tables, without its NOT NULL / type constraints (a damaged or foreign file)
    con.executescript("""
        CREATE TABLE buckets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, type TEXT, client TEXT,
            hostname TEXT, created TEXT, data TEXT);
        CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, bucketrow, starttime, endtime, data);
    """)
    con.execute("INSERT INTO buckets VALUES (1, 'aw-watcher-window_h', ?, 'c', 'h', '', '{}')", (btype,))
    con.executemany("INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    _read(p)
