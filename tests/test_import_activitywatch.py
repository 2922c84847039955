"""ActivityWatch importer: export JSON, aw-server-rust sqlite.db, heartbeats, URLs, presence."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capture.errors import UserError
from capture.importers.activitywatch import HEARTBEAT_US, read_activitywatch
from capture.timeutil import parse_ts

T = "2026-03-15T09:00:00.000000+00:00"
T_US = parse_ts(T)


def ev(offset_s: float, duration: float, **data) -> dict:
    return {"timestamp": f"2026-03-15T09:{int(offset_s) // 60:02d}:{offset_s % 60:06.3f}+00:00",
            "duration": duration, "data": data}


def export(buckets: dict) -> dict:
    return {"buckets": buckets}


def window_bucket(*events, host="laptop") -> dict:
    return {"id": f"aw-watcher-window_{host}", "type": "currentwindow", "client": "aw-watcher-window",
            "hostname": host, "events": list(events)}


@pytest.fixture
def sample_export(tmp_path: Path) -> Path:
    doc = export({
        "aw-watcher-window_laptop": window_bucket(
            # newest first, as ActivityWatch exports them
            ev(100, 5, app="Slack", title="general"),
            ev(0, 95, app="Google-chrome", title="Pull requests - GitHub"),
        ),
        "aw-watcher-web-chrome": {"type": "web.tab.current", "client": "aw-client-web", "hostname": "unknown",
                                  "events": [ev(0.4, 60, url="https://github.com/pulls", title="Pull requests"),
                                             ev(60.4, 40, url="https://github.com/x/y/pull/3", title="PR 3")]},
        "aw-watcher-afk_laptop": {"type": "afkstatus", "client": "aw-watcher-afk", "hostname": "laptop",
                                  "events": [ev(0, 90, status="not-afk"), ev(90, 30, status="afk")]},
        "aw-watcher-vscode_laptop": {"type": "app.editor.activity", "hostname": "laptop",
                                     "events": [ev(0, 10, file="a.py")]},
    })
    p = tmp_path / "aw-buckets-export.json"
    p.write_text(json.dumps(doc))
    return p


def test_export_windows_heartbeats_urls_and_presence(sample_export: Path) -> None:
    b = read_activitywatch(sample_export)
    assert b.source_id == "activitywatch:laptop" and b.recorder == "activitywatch"
    snaps = sorted(b.snapshots, key=lambda s: s.ts_us)
    # 95 s of Chrome -> start + heartbeats at 30, 60, 90 s; then Slack at 100 s.
    assert [(s.ts_us - T_US) // 1_000_000 for s in snaps] == [0, 30, 60, 90, 100]
    assert [s.heartbeat for s in snaps] == [False, True, True, True, False]
    assert snaps[0].trigger == "aw:window" and snaps[1].trigger == "heartbeat"
    assert all(s.stream == "aw:laptop" for s in snaps)
    # URLs from the tab bucket: the first tab event starts 0.4 s after the window event.
    # At 60 s the first tab (0.4 s .. 60.4 s) is still showing.
    pulls, pr = "https://github.com/pulls", "https://github.com/x/y/pull/3"
    assert [s.url for s in snaps] == [pulls, pulls, pulls, pr, None]
    assert snaps[4].app == "Slack" and snaps[4].window == "general"
    assert [(p.status, (p.end_us - p.ts_us) // 1_000_000) for p in sorted(b.presence, key=lambda p: p.ts_us)] == [
        ("not-afk", 90), ("afk", 30)]
    assert b.notes["events in buckets of type 'app.editor.activity' (not mapped)"] == 1
    assert len({s.ref for s in snaps}) == 5
    assert [(s.stream, s.ref.rsplit(":", 1)[1]) for s in b.streams] == [("aw:laptop", "2026-03-15")]


def test_same_refs_from_export_and_database(sample_export: Path, tmp_path: Path) -> None:
    """The server database and an export of the same machine describe the same events."""
    doc = json.loads(sample_export.read_text())
    db = tmp_path / "sqlite.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE buckets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE NOT NULL, type TEXT NOT NULL,
            client TEXT NOT NULL, hostname TEXT NOT NULL, created TEXT NOT NULL, data TEXT NOT NULL DEFAULT '{}');
        CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, bucketrow INTEGER NOT NULL,
            starttime INTEGER NOT NULL, endtime INTEGER NOT NULL, data TEXT NOT NULL);
    """)
    for row, (name, bucket) in enumerate(sorted(doc["buckets"].items()), 1):
        con.execute("INSERT INTO buckets VALUES (?, ?, ?, ?, ?, ?, '{}')",
                    (row, name, bucket["type"], bucket.get("client", "x"), bucket["hostname"], T))
        for e in bucket["events"]:
            start_ns = parse_ts(e["timestamp"]) * 1000
            con.execute("INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (?, ?, ?, ?)",
                        (row, start_ns, start_ns + int(e["duration"] * 1e9), json.dumps(e["data"])))
    con.execute("INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (1, 5, 6, '{}')")  # bad clock
    con.execute("INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (9, 1, 2, '{}')")  # no bucket
    con.commit()
    con.close()
    before = db.read_bytes()
    a, b = read_activitywatch(sample_export), read_activitywatch(db)
    assert db.read_bytes() == before
    assert b.source_id == a.source_id
    assert sorted(a.snapshots, key=lambda s: s.ref) == sorted(b.snapshots, key=lambda s: s.ref)
    assert sorted(a.presence, key=lambda s: s.ref) == sorted(b.presence, key=lambda s: s.ref)
    reasons = {q.row: q.reason for q in b.quarantined}
    n = sum(len(bucket["events"]) for bucket in doc["buckets"].values())
    assert reasons[f"events id={n + 1}"] == "unreadable timestamp"
    assert reasons[f"events id={n + 2}"] == "event of a bucket that does not exist"


def test_peewee_database_layout(tmp_path: Path) -> None:
    db = tmp_path / "peewee-sqlite.v2.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE bucketmodel (key INTEGER PRIMARY KEY, id TEXT, created TEXT, name TEXT, type TEXT,
            client TEXT, hostname TEXT);
        CREATE TABLE eventmodel (id INTEGER PRIMARY KEY, bucket_id INTEGER, timestamp TEXT, duration DECIMAL,
            datastr TEXT);
    """)
    con.execute("INSERT INTO bucketmodel VALUES (1, 'aw-watcher-window_box', ?, NULL, 'currentwindow', 'w', 'box')",
                (T,))
    con.execute("INSERT INTO eventmodel VALUES (1, 1, '2026-03-15 09:00:00.000000+00:00', 45.0, ?)",
                (json.dumps({"app": "Terminal", "title": "zsh"}),))
    con.commit()
    con.close()
    b = read_activitywatch(db)
    assert [(s.app, s.heartbeat) for s in b.snapshots] == [("Terminal", False), ("Terminal", True)]


def test_web_only_export_becomes_browser_snapshots(tmp_path: Path) -> None:
    p = tmp_path / "web.json"
    p.write_text(json.dumps(export({"aw-watcher-web-firefox": {
        "type": "web.tab.current", "hostname": "unknown",
        "events": [ev(0, 10, url="https://docs.python.org/3/", title="Python docs")]}})))
    b = read_activitywatch(p)
    [s] = b.snapshots
    assert (s.app, s.url, s.window) == ("Firefox", "https://docs.python.org/3/", "Python docs")


def test_bad_events_are_quarantined_and_duplicates_skipped(tmp_path: Path) -> None:
    good = ev(0, 1, app="Mail", title="Inbox")
    events = [
        good, dict(good),  # the same event twice
        {"timestamp": "soon", "duration": 1, "data": {"app": "Mail"}},
        ev(10, -4, app="Mail"),
        ev(20, 1, app=None, title="no app"),
        ev(30, 1, app="A" * 1000),
        ev(40, 1, app="Mail", title="T" * 9000),
        ev(50, 1, app="Mail", title="Caf\udce9"),  # a lone surrogate from a bad encoder
        "not an event",
        ev(59, 200_000, app="Stuck"),
    ]
    doc = export({
        "aw-watcher-window_h": window_bucket(*events, host="h"),
        "aw-watcher-afk_h": {"type": "afkstatus", "hostname": "h", "events": [ev(0, 5, status="away")]},
    })
    p = tmp_path / "export.json"
    p.write_text(json.dumps(doc))
    b = read_activitywatch(p)
    q = {(x.row, x.reason) for x in b.quarantined}
    loc = "buckets['aw-watcher-window_h'].events"
    assert (f"{loc}[2]", "unreadable timestamp") in q
    assert (f"{loc}[3]", "duration is not a number of seconds >= 0") in q
    assert (f"{loc}[4]", "window event has no app name") in q
    assert (f"{loc}[5]", "app name longer than 256 characters") in q
    assert (f"{loc}[8]", "event is not an object") in q
    assert ("buckets['aw-watcher-afk_h'].events[0]", "afk status is neither 'afk' nor 'not-afk'") in q
    starts = [s for s in b.snapshots if not s.heartbeat]
    assert [s.app for s in starts] == ["Mail", "Mail", "Mail", "Stuck"]
    assert b.notes["events: duplicates skipped (same bucket, start, duration and data)"] == 1
    assert b.notes["window title: truncated to 1024 characters"] == 1
    assert b.notes["window title: invalid UTF-8 replaced with U+FFFD"] == 1
    assert b.notes["events longer than 24 h (cut to 24 h)"] == 1
    stuck = [s for s in b.snapshots if s.app == "Stuck"]
    assert len(stuck) == 24 * 3600 // 30


def test_export_with_invalid_utf8_bytes_is_repaired(tmp_path: Path) -> None:
    p = tmp_path / "latin1.json"
    doc = json.dumps(export({"aw-watcher-window_h": window_bucket(ev(0, 1, app="Mail", title="Caf_"), host="h")}))
    p.write_bytes(doc.encode().replace(b"Caf_", b"Caf\xe9"))
    b = read_activitywatch(p)
    assert b.snapshots[0].window == "Caf\ufffd"
    assert b.notes["export file: invalid UTF-8 replaced with U+FFFD"] == 1


def test_wrong_or_broken_files_are_user_errors(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"buckets": {"x": ')
    with pytest.raises(UserError, match=r"broken.json is not valid JSON \(line 1"):
        read_activitywatch(bad)
    other = tmp_path / "list.json"
    other.write_text("[1, 2]")
    with pytest.raises(UserError, match="not an ActivityWatch export"):
        read_activitywatch(other)
    csvf = tmp_path / "log.csv"
    csvf.write_text("timeStamp,eventType\n")
    with pytest.raises(UserError, match="af import rpm"):
        read_activitywatch(csvf)
    sp = tmp_path / "db.sqlite"
    sqlite3.connect(sp).execute("CREATE TABLE frames (id INTEGER)").connection.commit()
    with pytest.raises(UserError, match="af import screenpipe"):
        read_activitywatch(sp)


@settings(max_examples=60, deadline=None)
@given(duration=st.floats(min_value=0, max_value=3 * 3600, allow_nan=False))
def test_heartbeats_cover_the_event_at_the_screenpipe_cadence(tmp_path_factory, duration: float) -> None:
    p = tmp_path_factory.mktemp("aw") / "e.json"
    p.write_text(json.dumps(export({"w_h": window_bucket(ev(0, duration, app="Editor"), host="h")})))
    snaps = sorted(read_activitywatch(p).snapshots, key=lambda s: s.ts_us)
    end = T_US + round(duration * 1_000_000)
    assert snaps[0].ts_us == T_US and not snaps[0].heartbeat
    assert all(b.ts_us - a.ts_us == HEARTBEAT_US for a, b in zip(snaps, snaps[1:], strict=False))
    assert all(s.ts_us < max(end, T_US + 1) for s in snaps)
    # no gap longer than one heartbeat period is left uncovered before the event ends
    assert end - snaps[-1].ts_us <= HEARTBEAT_US
