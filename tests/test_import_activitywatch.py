"""ActivityWatch importer: export JSON, aw-server-rust sqlite.db, heartbeats, URLs, presence."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler.compile import compile_day
from af_pipeline.compiler.document import validate
from af_pipeline.compiler.emit import context_block
from capture.errors import UserError
from capture.importers.activitywatch import read_activitywatch
from capture.log import EventLog
from capture.model import DayCapture
from capture.timeutil import day_bounds, iso_utc, local_day, parse_ts

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


def test_export_windows_spans_urls_and_presence(sample_export: Path) -> None:
    b = read_activitywatch(sample_export)
    assert b.source_id == "activitywatch:laptop" and b.recorder == "activitywatch"
    snaps = sorted(b.snapshots, key=lambda s: s.ts_us)
    # one snapshot per span with its measured end, no heartbeat rows: Chrome is cut where the
    # tab changes (the first tab event, 0.4 s late, still gives the visit its URL)
    rel = [((s.ts_us - T_US) / 1e6, (s.end_us - T_US) / 1e6) for s in snaps]
    assert rel == [(0, 60.4), (60.4, 95), (100, 105)]
    assert not any(s.heartbeat for s in snaps) and {s.trigger for s in snaps} == {"aw:window"}
    assert all(s.stream == "aw:laptop" for s in snaps)
    pulls, pr = "https://github.com/pulls", "https://github.com/x/y/pull/3"
    assert [s.url for s in snaps] == [pulls, pr, None]
    assert snaps[2].app == "Slack" and snaps[2].window == "general"
    assert [(p.status, (p.end_us - p.ts_us) // 1_000_000, p.stream) for p in
            sorted(b.presence, key=lambda p: p.ts_us)] == [("not-afk", 90, "aw:laptop"), ("afk", 30, "aw:laptop")]
    assert b.notes["events in buckets of type 'app.editor.activity' (not imported)"] == 1
    assert len({s.ref for s in snaps}) == 3
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
    assert [(s.app, s.ts_us, s.end_us) for s in b.snapshots] == [("Terminal", T_US, T_US + 45_000_000)]


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
    assert [s.app for s in sorted(b.snapshots, key=lambda s: s.ts_us) if s.ref.count(":") == 3] == [
        "Mail", "Mail", "Mail", "Stuck"]
    assert b.notes["merged heartbeat versions (same start, shorter or equal duration; the longest kept)"] == 1
    assert b.notes["window title: truncated to 1024 characters"] == 1
    assert b.notes["window title: invalid UTF-8 replaced with U+FFFD"] == 1
    assert b.notes["events longer than 24 h (cut to 24 h)"] == 1
    # the stuck 24 h event is two rows (split at midnight UTC), not 2880 heartbeats
    stuck = sorted((s for s in b.snapshots if s.app == "Stuck"), key=lambda s: s.ts_us)
    assert [(s.ts_us, s.end_us) for s in stuck] == [
        (T_US + 59_000_000, parse_ts("2026-03-16T00:00:00Z")),
        (parse_ts("2026-03-16T00:00:00Z"), T_US + 59_000_000 + 24 * 3600 * 1_000_000)]


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




# ---------------------------------------------------------------------------------------------
# Captures shaped as ActivityWatch writes them, and the time they must give


S = 1_000_000


def _aw_event(start_us: int, dur_us: int, data: dict) -> dict:
    return {"timestamp": iso_utc(start_us).replace("Z", "+00:00"), "duration": dur_us / S, "data": data}


def _desktop_export(windows: list[tuple[int, int, str, str]], afk: list[tuple[int, int, str]],
                    versions: int = 3, tabs: list[tuple[int, int, str]] = ()) -> dict:
    """An aw-server export of one desktop host: events newest first; each window and afk event
    also stored in ``versions`` heartbeat states (same start, growing durations)."""
    def states(start: int, dur: int, data: dict) -> list[dict]:
        return [_aw_event(start, dur * k // versions, data) for k in range(1, versions + 1)]

    win = [e for a, d, app, title in windows for e in states(a, d, {"app": app, "title": title})]
    away = [e for a, d, st_ in afk for e in states(a, d, {"status": st_})]
    web = [_aw_event(a, d, {"url": url, "title": url, "audible": False, "incognito": False, "tabCount": 3})
           for a, d, url in tabs]
    return {"buckets": {
        "aw-watcher-window_desk": {"id": "aw-watcher-window_desk", "created": T, "name": None,
                                   "type": "currentwindow", "client": "aw-watcher-window", "hostname": "desk",
                                   "events": sorted(win, key=lambda e: e["timestamp"], reverse=True)},
        "aw-watcher-afk_desk": {"id": "aw-watcher-afk_desk", "created": T, "name": None, "type": "afkstatus",
                                "client": "aw-watcher-afk", "hostname": "desk",
                                "events": sorted(away, key=lambda e: e["timestamp"], reverse=True)},
        "aw-watcher-web-firefox": {"id": "aw-watcher-web-firefox", "created": T, "name": None,
                                   "type": "web.tab.current", "client": "aw-client-web", "hostname": "unknown",
                                   "events": sorted(web, key=lambda e: e["timestamp"], reverse=True)},
    }}


def _overlap(a: int, b: int, spans: list[tuple[int, int]]) -> int:
    return sum(max(0, min(b, z) - max(a, y)) for y, z in spans)


def _expected(windows: list[tuple[int, int, str, str]], afk: list[tuple[int, int, str]], tz: str
              ) -> dict[str, dict[str, int]]:
    """Per day and app: the event durations inside not-afk time, computed without the importer."""
    not_afk = [(a, a + d) for a, d, st_ in afk if st_ == "not-afk"]
    out: dict[str, dict[str, int]] = {}
    for a, d, app, _title in windows:
        day = local_day(a, tz)
        while True:
            lo, hi = day_bounds(day, tz)
            us = _overlap(max(a, lo), min(a + d, hi), not_afk)
            if us:
                out.setdefault(day, {})[app] = out.setdefault(day, {}).get(app, 0) + us
            if a + d <= hi:
                break
            day = local_day(hi, tz)
    return out


def _compile(batch, day: str, tz: str) -> dict:
    lo, hi = day_bounds(day, tz)
    cap = DayCapture(day=day, tz=tz, recorders=["activitywatch"],
                     snapshots=[s for s in batch.snapshots if lo <= s.ts_us < hi],
                     presence=[p for p in batch.presence if lo <= p.ts_us < hi])
    doc = compile_day(cap)
    validate(doc)
    return doc


APPS = ("Code", "Firefox", "Slack", "loginwindow")


@settings(max_examples=40, deadline=None)
@given(
    plan=st.lists(st.tuples(st.sampled_from(APPS), st.integers(1, 3 * 3600), st.sampled_from([0, 1, 1, 2, 400])),
                  min_size=1, max_size=25),
    afk_plan=st.lists(st.tuples(st.integers(1, 4 * 3600), st.booleans()), min_size=0, max_size=8),
    versions=st.integers(1, 3),
    tz=st.sampled_from(["Europe/Paris", "UTC", "America/New_York"]),
)
def test_ledger_equals_event_durations_inside_not_afk(tmp_path_factory, plan, afk_plan, versions, tz) -> None:
    """Per app and day, the ledger is the sum of the app's event durations after AFK (within 1 %
    and the documents' 0.01 min rounding), however events cross midnight, poll gaps or versions."""
    t0 = parse_ts("2026-03-14T21:30:00Z")
    windows = []
    t = t0
    for app, dur_s, gap_s in plan:
        t += gap_s * S  # 1 s: the window watcher's polling gap at an app switch
        windows.append((t, dur_s * S, app, f"{app} window"))
        t += dur_s * S
    afk = []
    a = t0
    for dur_s, away in afk_plan:
        afk.append((a, dur_s * S, "afk" if away else "not-afk"))
        a += dur_s * S + S
    if a < t:
        afk.append((a, t - a, "not-afk"))  # the afk watcher reports until the end
    p = tmp_path_factory.mktemp("aw") / "aw-buckets-export.json"
    p.write_text(json.dumps(_desktop_export(windows, afk, versions)))
    batch = read_activitywatch(p, tz=tz)
    want = _expected(windows, afk, tz)
    days = sorted({local_day(s.ts_us, tz) for s in batch.snapshots} | set(want))
    for day in days:
        doc = _compile(batch, day, tz)
        got = {x["app"]: x["minutes"] for x in doc["apps"]}
        exp = {app: us / 60 / S for app, us in want.get(day, {}).items()}
        for app in set(got) | set(exp):
            g, e = got.get(app, 0.0), exp.get(app, 0.0)
            assert abs(g - e) <= max(0.01 * e, 0.006), (day, app, g, e)
        assert doc["coverage"]["input_recorded"] is False
        assert doc["coverage"]["presence"]["sources"] == ["afk"]
    if versions > 1:
        assert batch.notes["merged heartbeat versions (same start, shorter or equal duration; the longest kept)"] == (
            (versions - 1) * (len(windows) + len(afk)))


def test_desktop_export_per_app_minutes_exact_and_away_shown(home) -> None:
    """A realistic desktop day through the log: per-app minutes equal the event durations after
    AFK, the lock screen is away (no app, no frame), and the 1 s polling gaps go to nobody."""
    t = parse_ts("2026-03-16T08:00:00Z")
    m = 60 * S
    windows = [
        (t, 25 * m, "Code", "main.py - proj"),
        (t + 25 * m + S, 10 * m, "Firefox", "Docs"),           # 1 s polling gap at the switch
        (t + 35 * m + 2 * S, 3 * m, "Slack", "general"),
        (t + 38 * m + 3 * S, 40 * m, "loginwindow", ""),       # locked, afk
        (t + 78 * m + 4 * S, 30 * m, "Code", "main.py - proj"),
    ]
    afk = [(t, 38 * m + 3 * S, "not-afk"), (t + 38 * m + 3 * S, 40 * m, "afk"),
           (t + 78 * m + 4 * S, 30 * m, "not-afk")]
    tabs = [(t + 25 * m + 3 * S, 4 * m, "https://docs.python.org/3/library/json.html"),
            (t + 29 * m + 3 * S, 6 * m, "https://github.com/ActivityWatch/aw-core/issues")]
    p = home.root / "aw-buckets-export.json"
    p.write_text(json.dumps(_desktop_export(windows, afk, versions=4, tabs=tabs)))
    log = EventLog(home)
    log.append(read_activitywatch(p, tz="Europe/Paris"), now_us=parse_ts("2026-03-20T12:00:00Z"))
    doc = compile_day(log.read_day("2026-03-16"))
    validate(doc)
    want = {app: round(us / 60 / S, 2) for app, us in _expected(windows, afk, "Europe/Paris")["2026-03-16"].items()}
    assert {a["app"]: a["minutes"] for a in doc["apps"]} == want == {"Code": 55.0, "Firefox": 10.0, "Slack": 3.0}
    assert doc["coverage"]["presence"] == {"sources": ["afk"], "away_min": 40.0, "away_frames": 1}
    assert all(f["app"] != "loginwindow" for f in doc["frames"])
    assert {d["domain"]: d["minutes"] for d in doc["domains"]} == {"python.org": 4.03, "github.com": 5.97}  # the first tab, 2 s late, still has its visit from the start
    block = context_block(doc)
    assert "input not recorded by this source" in block and "k0 c0" not in block
    assert "away 40.0 min (presence: afk)" in block


def test_android_export_unlocks_and_unimported_buckets(tmp_path: Path) -> None:
    """aw-android: its currentwindow bucket (app, package, classname) is mapped with its spans,
    unlocks become presence starts that do not gate time, media is reported as not imported."""
    t = parse_ts("2026-03-16T07:00:00Z")
    m = 60 * S
    doc = {"buckets": {
        "aw-watcher-android": {"id": "aw-watcher-android", "type": "currentwindow", "client": "aw-android",
                               "hostname": "Pixel 7", "created": T, "events": [
                                   _aw_event(t + 12 * m, 3 * m, {"app": "Chrome", "package": "com.android.chrome",
                                                                 "classname": "org.chromium.chrome.browser.ChromeTabbedActivity"}),
                                   _aw_event(t, 10 * m, {"app": "Signal", "package": "org.thoughtcrime.securesms",
                                                         "classname": ""})]},
        "aw-watcher-android-unlock": {"id": "aw-watcher-android-unlock", "type": "os.lockscreen.unlocks",
                                      "client": "aw-android", "hostname": "Pixel 7", "created": T,
                                      "events": [_aw_event(t + 12 * m, 0, {}), _aw_event(t - 5 * S, 0, {})]},
        "aw-watcher-android-media": {"id": "aw-watcher-android-media", "type": "media.playback",
                                     "client": "aw-android", "hostname": "Pixel 7", "created": T,
                                     "events": [_aw_event(t, 60 * S, {"title": "song", "artist": "x"})]},
    }}
    p = tmp_path / "aw-android-export.json"
    p.write_text(json.dumps(doc))
    b = read_activitywatch(p, tz="UTC")
    assert b.source_id == "activitywatch:Pixel 7"
    assert sorted((pr.status, pr.ts_us - t, pr.stream) for pr in b.presence) == [
        ("unlock", -5 * S, "aw:Pixel 7"), ("unlock", 12 * m, "aw:Pixel 7")]
    assert b.notes["events in buckets of type 'media.playback' (not imported)"] == 1
    d = _compile(b, "2026-03-16", "UTC")
    assert {a["app"]: a["minutes"] for a in d["apps"]} == {"Signal": 10.0, "Chrome": 3.0}
    assert d["coverage"]["presence"]["sources"] == ["unlocks"] and d["coverage"]["presence"]["away_min"] == 0


def _rust_db(path: Path, buckets: dict) -> None:
    """A sqlite.db made by aw-server-rust's own migrations (aw-datastore/src/datastore.rs, v1-v5)."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE IF NOT EXISTS buckets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE NOT NULL,
            type TEXT NOT NULL, client TEXT NOT NULL, hostname TEXT NOT NULL, created TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS bucket_id_index ON buckets(id);
        CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, bucketrow INTEGER NOT NULL,
            starttime INTEGER NOT NULL, endtime INTEGER NOT NULL, data TEXT NOT NULL,
            FOREIGN KEY (bucketrow) REFERENCES buckets(id));
        ALTER TABLE buckets ADD COLUMN data TEXT DEFAULT '{}';
        ALTER TABLE buckets RENAME COLUMN data TO data_deprecated;
        ALTER TABLE buckets ADD COLUMN data TEXT NOT NULL DEFAULT '{}';
        CREATE TABLE key_value (key TEXT PRIMARY KEY, value TEXT, last_modified NUMBER NOT NULL);
        CREATE INDEX IF NOT EXISTS events_bucketrow_starttime_endtime_index ON events(bucketrow, starttime DESC, endtime);
        PRAGMA user_version = 5;
    """)
    for name, b in buckets.items():
        row = con.execute("INSERT INTO buckets (name, type, client, hostname, created, data) VALUES (?, ?, ?, ?, ?, '{}')",
                          (name, b["type"], b["client"], b["hostname"], T)).lastrowid
        # the server replaces the last event in place on each merged heartbeat: one row per event
        for e in b["events"]:
            ns = parse_ts(e["timestamp"]) * 1000
            con.execute("INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (?, ?, ?, ?)",
                        (row, ns, ns + round(e["duration"] * 1e9), json.dumps(e["data"])))
    con.commit()
    con.close()


def test_rust_sqlite_db_gives_the_same_minutes_as_its_export(tmp_path: Path) -> None:
    t = parse_ts("2026-03-16T21:50:00Z")  # crosses midnight in Paris (UTC+1)
    m = 60 * S
    windows = [(t, 30 * m, "Code", "a"), (t + 30 * m + S, 50 * m, "Terminal", "zsh"),
               (t + 80 * m + S, 20 * m, "Code", "b")]
    afk = [(t, 100 * m + S, "not-afk")]
    export_doc = _desktop_export(windows, afk, versions=1)
    db = tmp_path / "sqlite.db"
    _rust_db(db, export_doc["buckets"])
    before = db.read_bytes()
    from_db = read_activitywatch(tmp_path, tz="Europe/Paris")  # the server's folder
    assert db.read_bytes() == before
    want = _expected(windows, afk, "Europe/Paris")
    for day in ("2026-03-16", "2026-03-17"):
        d = _compile(from_db, day, "Europe/Paris")
        assert {a["app"]: a["minutes"] for a in d["apps"]} == {
            app: round(us / 60 / S, 2) for app, us in want[day].items()}
    assert {a["app"]: a["minutes"] for a in _compile(from_db, "2026-03-16", "Europe/Paris")["apps"]} == {
        "Code": 30.0, "Terminal": 39.98}  # 23:20:01 to local midnight


def test_heartbeat_versions_are_merged_not_already_in_the_log(home, tmp_path: Path) -> None:
    t = parse_ts("2026-03-16T09:00:00Z")
    p = tmp_path / "e.json"
    p.write_text(json.dumps(_desktop_export([(t, 600 * S, "Code", "x")], [], versions=5)))
    log = EventLog(home)
    r = log.append(read_activitywatch(p), now_us=parse_ts("2026-03-20T12:00:00Z"))
    assert r.skipped == 0  # the shorter versions are not "already in the log"
    [s] = log.read_day("2026-03-16").snapshots
    assert s.end_us - s.ts_us == 600 * S


def test_overlapping_day_long_events_are_clipped_not_expanded(tmp_path: Path) -> None:
    """600 overlapping 24 h window events used to expand to 1.7 M heartbeat rows."""
    t = parse_ts("2026-03-16T00:00:00Z")
    events = [_aw_event(t + i * 60 * S, 24 * 3600 * S, {"app": f"A{i % 7}", "title": ""}) for i in range(600)]
    p = tmp_path / "big.json"
    p.write_text(json.dumps({"buckets": {"w_h": {"type": "currentwindow", "hostname": "h", "events": events}}}))
    b = read_activitywatch(p, tz="UTC")
    assert len(b.snapshots) == 601  # 599 clipped one-minute events, the last one split at midnight
    assert b.notes["overlapping events clipped at the next event's start"] == 599
    d = _compile(b, "2026-03-16", "UTC")
    assert round(sum(a["minutes"] for a in d["apps"]), 2) == 24 * 60


@pytest.mark.parametrize("bad", ["1e400", "NaN", "-Infinity", "1" * 400, "9" * 5000, '"2026-13-45T99:00:00Z"'])
def test_extreme_timestamps_are_quarantined(tmp_path: Path, bad: str) -> None:
    good = json.dumps(_aw_event(T_US, 5 * S, {"app": "Mail", "title": "Inbox"}))
    text = ('{"buckets": {"w_h": {"type": "currentwindow", "hostname": "h", "events": [' + good +
            ', {"timestamp": ' + bad + ', "duration": 1, "data": {"app": "X"}}]}}}')
    p = tmp_path / "x.json"
    p.write_text(text)
    b = read_activitywatch(p)
    assert [s.app for s in b.snapshots] == ["Mail"]
    assert [(q.row, q.reason) for q in b.quarantined] == [("buckets['w_h'].events[1]", "unreadable timestamp")]


@pytest.mark.parametrize("dur", ["1" * 400, "1e308", "1e400", "NaN", "-1", '"5"', "true"])
def test_extreme_durations_are_quarantined(tmp_path: Path, dur: str) -> None:
    text = ('{"buckets": {"w_h": {"type": "currentwindow", "hostname": "h", "events": ['
            '{"timestamp": "2026-03-15T09:00:00Z", "duration": ' + dur + ', "data": {"app": "X"}},'
            '{"timestamp": "2026-03-15T10:00:00Z", "duration": 2, "data": {"app": "Mail"}}]}}}')
    p = tmp_path / "x.json"
    p.write_text(text)
    b = read_activitywatch(p)
    assert [s.app for s in b.snapshots] == ["Mail"]
    [q] = b.quarantined
    assert q.row == "buckets['w_h'].events[0]" and "duration" in q.reason


def test_routines_on_activitywatch_data_explain_that_input_is_needed(tmp_path: Path, capsys) -> None:
    from af_pipeline.interfaces import cli

    t = parse_ts("2026-03-16T09:00:00Z")
    p = tmp_path / "aw.json"
    p.write_text(json.dumps(_desktop_export([(t, 600 * S, "Code", "x")], [(t, 600 * S, "not-afk")])))
    home = str(tmp_path / "home")
    assert cli.main(["import", "activitywatch", str(p), "--home", home, "--tz", "UTC"]) == 0
    capsys.readouterr()
    assert cli.main(["routines", "--home", home]) == 2
    err = capsys.readouterr().err
    assert "routines are mined from input events" in err and "activitywatch" in err


def test_a_later_export_with_grown_events_lands_only_what_grew(tmp_path):
    """Exported at 10:05 and again at 10:20, the event still open at 10:05 has grown in place:
    the second import lands its new part as a continuation, and each app is credited once."""
    import json as _json

    from af_pipeline.interfaces import cli as _cli
    from capture.home import Home as _Home
    from capture.log import EventLog as _Log

    def export(code_end_s: int) -> dict:
        window = {"id": "aw-watcher-window_h", "type": "currentwindow", "client": "aw-watcher-window",
                  "hostname": "h", "created": "2026-03-10T09:00:00+00:00",
                  "events": [
                      {"id": 2, "timestamp": "2026-03-10T09:10:00+00:00", "duration": code_end_s,
                       "data": {"app": "Code", "title": "a.py"}},
                      {"id": 1, "timestamp": "2026-03-10T09:00:00+00:00", "duration": 599.0,
                       "data": {"app": "Firefox", "title": "Docs"}}]}
        return {"buckets": {"aw-watcher-window_h": window}}

    home = _Home(tmp_path / "home")
    first, second = tmp_path / "early.json", tmp_path / "late.json"
    first.write_text(_json.dumps(export(300)))
    second.write_text(_json.dumps(export(1200)))
    for path in (first, second, first):  # the earlier export again after the later one: nothing
        assert _cli.main(["import", "activitywatch", str(path), "--home", str(home.root), "--tz", "UTC",
                          "--quiet", "--json"]) == 0
    log = _Log(home)
    snaps = [s for s in log.read_day("2026-03-10").snapshots if s.app == "Code"]
    assert sorted(s.ref.rsplit(":", 1)[-1] for s in snaps)[-1].endswith("~1")
    spans = sorted((s.ts_us, s.end_us) for s in snaps)
    assert sum(e - t for t, e in spans) == 1200 * 1_000_000  # the whole event, once
    assert not log.quarantine_rows()


def test_zone_less_stamps_are_read_as_utc_with_a_note(tmp_path: Path) -> None:
    """ActivityWatch writes offsets; a stamp without one is UTC, as aw-core reads it, and said."""
    events = [{"timestamp": "2026-03-15T23:30:00", "duration": 60.0, "data": {"app": "Code", "title": "a"}},
              {"timestamp": "2026-03-15T23:40:00+00:00", "duration": 60.0, "data": {"app": "Code", "title": "b"}}]
    path = tmp_path / "aw.json"
    path.write_text(json.dumps({"buckets": {"aw-watcher-window_h": {
        "id": "aw-watcher-window_h", "type": "currentwindow", "client": "aw-watcher-window", "hostname": "h",
        "events": events}}}), encoding="utf-8")
    batch = read_activitywatch(path, tz="Europe/Berlin")
    assert sorted(s.ts_us for s in batch.snapshots) == [parse_ts("2026-03-15T23:30:00Z"), parse_ts("2026-03-15T23:40:00Z")]
    assert batch.notes["time stamps carry no zone: read as UTC, as ActivityWatch itself reads them"] == 1
