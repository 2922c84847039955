"""`af sync` against a real aw-server (PyPI, testing mode, fed by aw-client) and a growing
screenpipe-layout database written by another process while sync follows it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from aw_live import AwServer

from af_pipeline.interfaces import cli
from capture import sync
from capture.home import Home
from capture.log import EventLog
from capture.timeutil import US, local_day

ROOT = Path(__file__).resolve().parent.parent
TZ = "Europe/Paris"
HOST_BUCKET = "aw-watcher-window_testhost"
AFK_BUCKET = "aw-watcher-afk_testhost"


def _home(tmp_path: Path) -> Home:
    h = Home(tmp_path / "home")
    h.init(tz=TZ)
    return h


def _iso(t: datetime) -> str:
    return t.isoformat()


def _snapshots(home: Home, day: str):
    return [s for s in EventLog(home).read_day(day).snapshots if s.app in ("Code", "Firefox", "Slack")]


def _credited_s(snaps) -> dict[str, float]:
    """Seconds per app as the log's measured spans give them (each row clipped at the next)."""
    rows = sorted(snaps, key=lambda s: (s.ts_us, s.ref))
    out: dict[str, float] = {}
    for i, s in enumerate(rows):
        nxt = rows[i + 1].ts_us if i + 1 < len(rows) else None
        end = s.end_us if s.end_us is not None else s.ts_us
        if nxt is not None:
            end = min(end, nxt)
        out[s.app] = out.get(s.app, 0.0) + max(0, end - s.ts_us) / US
    return out


@pytest.fixture
def server(tmp_path):
    srv = AwServer(tmp_path / "aw").start()
    yield srv
    srv.stop()


def test_sync_follows_a_live_aw_server_as_events_grow(tmp_path, server, capsys):
    home = _home(tmp_path)
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=20)
    # a watcher polling every second: Code for 60 s, then Firefox (still open, keeps growing)
    beats = [(_iso(t0 + timedelta(seconds=i)), 0, {"app": "Code", "title": "sync.py"}) for i in range(61)]
    beats += [(_iso(t0 + timedelta(seconds=61 + i)), 0, {"app": "Firefox", "title": "Docs"}) for i in range(30)]
    server.feed(HOST_BUCKET, "currentwindow", beats)
    # aw-watcher-afk: a not-afk heartbeat every 5 s (merged into one interval covering the work)
    server.feed(AFK_BUCKET, "afkstatus",
                [(_iso(t0 + timedelta(seconds=5 * i)), 0, {"status": "not-afk"}) for i in range(41)], pulsetime=10)
    assert cli.main(["sync", "activitywatch", server.url, "--home", str(home.root)]) == 0
    out = capsys.readouterr().out
    assert "rows landed" in out
    day = local_day(int(t0.timestamp()) * US, ZoneInfo(TZ))
    first = _credited_s(_snapshots(home, day))
    # what ActivityWatch measured: heartbeats 0..60 s merge into 60 s of Code, 61..90 s into 29 s of Firefox
    assert first == pytest.approx({"Code": 60.0, "Firefox": 29.0}, abs=0.01)
    # Firefox grows by 40 s, then Slack opens: the grown part lands as a continuation
    more = [(_iso(t0 + timedelta(seconds=91 + i)), 0, {"app": "Firefox", "title": "Docs"}) for i in range(40)]
    more += [(_iso(t0 + timedelta(seconds=131 + i)), 0, {"app": "Slack", "title": "#team"}) for i in range(11)]
    server.feed(HOST_BUCKET, "currentwindow", more)
    result = sync.sync_once(home, sync.sources(home)[0])
    assert result.ok and result.continued >= 1, result
    events = {e["data"]["app"]: e["duration"] for e in server.events(HOST_BUCKET)}
    credited = _credited_s(_snapshots(home, day))
    # the log credits each app exactly what ActivityWatch measured, though the event grew in place
    for app, dur in events.items():
        assert credited[app] == pytest.approx(dur, abs=0.01), (app, credited, events)
    # a pass with nothing new lands nothing and never a duplicate
    again = sync.sync_once(home, sync.sources(home)[0])
    assert again.ok and again.landed == 0 and again.continued == 0
    assert _credited_s(_snapshots(home, day)) == credited
    # the agent-facing context of the last hour shows what happened minutes ago
    capsys.readouterr()
    assert cli.main(["context", "--hours", "1", "--home", str(home.root)]) == 0
    block = capsys.readouterr().out
    assert "Slack" in block and "Firefox" in block


def test_sync_survives_the_server_going_away_and_coming_back(tmp_path, server, capsys):
    home = _home(tmp_path)
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=30)
    server.feed(HOST_BUCKET, "currentwindow",
                [(_iso(t0 + timedelta(seconds=i)), 0, {"app": "Code", "title": "a"}) for i in range(10)])
    assert cli.main(["sync", "activitywatch", server.url, "--home", str(home.root)]) == 0
    landed = len(_snapshots(home, local_day(int(t0.timestamp()) * US, ZoneInfo(TZ))))
    port = server.port
    server.stop()
    capsys.readouterr()
    assert cli.main(["sync", "--home", str(home.root)]) == 2
    assert "cannot be reached" in capsys.readouterr().err
    (row,) = sync.status(home)
    assert row["failures"] == 1 and "cannot be reached" in row["last_error"]
    # back on the same port, restarted empty (memory storage) and fed the same events again
    back = AwServer(tmp_path / "aw2", port=port).start()
    try:
        back.feed(HOST_BUCKET, "currentwindow",
                  [(_iso(t0 + timedelta(seconds=i)), 0, {"app": "Code", "title": "a"}) for i in range(10)])
        assert cli.main(["sync", "--home", str(home.root)]) == 0
    finally:
        back.stop()
    assert len(_snapshots(home, local_day(int(t0.timestamp()) * US, ZoneInfo(TZ)))) == landed
    (row,) = sync.status(home)
    assert row["failures"] == 0 and row["last_error"] is None and row["rows_landed"] >= landed
    assert cli.main(["sync", "--status", "--home", str(home.root)]) == 0
    assert "newest capture" in capsys.readouterr().out


def test_watch_backs_off_and_stops_on_sigterm(tmp_path):
    """`af sync --watch` on a source that is down keeps retrying with back-off, says why, and
    stops cleanly on SIGTERM (what systemd and launchd send)."""
    home = _home(tmp_path)
    data = {"version": 1, "sources": {"activitywatch:http://127.0.0.1:9": {
        "kind": "activitywatch", "location": "http://127.0.0.1:9"}}}
    (home.root / "sync.json").write_text(json.dumps(data))
    env = {**os.environ, "AF_HOME": str(home.root)}
    proc = subprocess.Popen([sys.executable, "-m", "af_pipeline.interfaces.cli", "sync", "--watch", "--interval", "0.2"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until two failed passes are recorded
            st = sync.status(home)
            if st and st[0]["failures"] >= 2:
                break
            time.sleep(0.1)
        assert sync.status(home)[0]["failures"] >= 2
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert "cannot be reached" in err and "retrying with back-off" in err and "stopped" in err


def _all_rows(home, kind: str) -> list:
    """Every row of a kind over all the log's days (ten minutes ago may be yesterday, locally)."""
    log = EventLog(home)
    return [r for d in log.days() for r in getattr(log.read_day(d.day), kind)]


def test_sync_follows_a_screenpipe_database_while_it_is_written(tmp_path, monkeypatch):
    """A process keeps writing screenpipe's current layout (WAL, as screenpipe runs it) while
    `af sync --watch` follows it; every snapshot lands once, within seconds, read incrementally."""
    from screenpipe_eras import EraDB, sample_tree

    home = _home(tmp_path)
    db = EraDB(tmp_path / "db.sqlite", "current")
    db.con.execute("PRAGMA journal_mode = WAL")
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    apps = ["Code", "Firefox", "Slack"]
    for i in range(30):
        db.snapshot(t0 + timedelta(seconds=5 * i), apps[i % 3], f"w{i % 3}", sample_tree(f"t{i}"))
    db.con.commit()
    assert cli.main(["sync", "screenpipe", str(db.path), "--home", str(home.root)]) == 0
    assert len(_all_rows(home, "snapshots")) == 30
    env = {**os.environ, "AF_HOME": str(home.root)}
    proc = subprocess.Popen([sys.executable, "-m", "af_pipeline.interfaces.cli", "sync", "--watch", "--interval", "0.3"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for i in range(30, 60):  # screenpipe keeps capturing while sync follows
            db.snapshot(t0 + timedelta(seconds=5 * i), apps[i % 3], f"w{i % 3}", sample_tree(f"t{i}"))
            db.con.commit()
        deadline = time.monotonic() + 90
        n = 0
        while time.monotonic() < deadline:  # wait for the rows, not for a fixed time
            n = len(_all_rows(home, "snapshots"))
            if n >= 60:
                break
            time.sleep(0.2)
        assert n == 60
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    snaps, elements = _all_rows(home, "snapshots"), _all_rows(home, "elements")
    assert len({s.ref for s in snaps}) == 60 and len(elements) == 60 * 5
    # later passes read only what is new (plus the overlap): one more snapshot is not sixty re-read
    monkeypatch.setattr(sync, "SP_OVERLAP_ROWS", 2)
    assert sync.sync_once(home, sync.sources(home)[0]).ok  # records watermarks with the small overlap
    db.snapshot(t0 + timedelta(seconds=5 * 60), "Code", "w0", sample_tree("last"))
    db.close()
    r = sync.sync_once(home, sync.sources(home)[0])
    assert r.ok and r.landed == 1 + 5, r
    assert r.skipped <= 2 * (1 + 5), r  # the two overlap frames and their elements, nothing older
    assert len(_all_rows(home, "snapshots")) == 61


def test_an_agent_sees_capture_under_a_minute_old_while_sync_runs(tmp_path, server):
    """`af sync --watch` follows a live aw-server and a screenpipe database being written; an agent
    asking the MCP server (official client, stdio) for the last hour sees both, under a minute old."""
    import asyncio

    from mcp import ClientSession, StdioServerParameters, stdio_client
    from screenpipe_eras import EraDB, sample_tree

    home = _home(tmp_path)
    db = EraDB(tmp_path / "db.sqlite", "current")
    db.con.execute("PRAGMA journal_mode = WAL")
    now = datetime.now(UTC).replace(microsecond=0)
    db.snapshot(now - timedelta(minutes=5), "Figma", "Landing page", sample_tree("a"))
    db.con.commit()
    server.feed(HOST_BUCKET, "currentwindow",
                [(_iso(now - timedelta(minutes=3) + timedelta(seconds=i)), 0, {"app": "Code", "title": "live.py"})
                 for i in range(60)])
    assert cli.main(["sync", "screenpipe", str(db.path), "--home", str(home.root)]) == 0
    assert cli.main(["sync", "activitywatch", server.url, "--home", str(home.root)]) == 0
    env = {**os.environ, "AF_HOME": str(home.root)}
    proc = subprocess.Popen([sys.executable, "-m", "af_pipeline.interfaces.cli", "sync", "--watch", "--interval", "0.5"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fresh = datetime.now(UTC).replace(microsecond=0)
    try:
        # new capture in both tools while sync follows
        db.snapshot(fresh - timedelta(seconds=20), "Linear", "PROJ-42 Fix login", sample_tree("b"))
        db.con.commit()
        server.feed(HOST_BUCKET, "currentwindow",
                    [(_iso(fresh - timedelta(seconds=30) + timedelta(seconds=i)), 0, {"app": "Slack", "title": "#ops"})
                     for i in range(25)])
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # wait for both to land, not for a fixed time
            snaps = EventLog(home).read_day(local_day(int(fresh.timestamp()) * US, ZoneInfo(TZ))).snapshots
            if {"Linear", "Slack"} <= {s.app for s in snaps}:
                break
            time.sleep(0.2)
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "af_pipeline.interfaces.cli", "mcp", "--home", str(home.root)],
                                       cwd=str(ROOT), env={"PATH": os.environ.get("PATH", ""),
                                                           "PYTHONPATH": str(ROOT)})

        async def ask() -> str:
            with open(os.devnull, "w") as devnull:
                async with stdio_client(params, errlog=devnull) as (read, write):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        res = await s.call_tool("get_context", {"hours": 1})
                        assert not res.is_error, res.content[0].text
                        return str(res.content[0].text)

        block = asyncio.run(ask())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        db.close()
    for app in ("Figma", "Code", "Linear", "Slack"):
        assert app in block, (app, block)
    # the newest capture the agent sees ended less than a minute before it asked
    end = next(line for line in block.splitlines() if line.startswith("summary:")).split("| end ")[1]
    # HH:MM:SS, after the date when the last hour spans local midnight
    hh, mm, ss = (int(x) for x in re.search(r"(\d\d):(\d\d):(\d\d)", end).groups())  # type: ignore[union-attr]
    local_now = datetime.now(ZoneInfo(TZ))
    seen = local_now.replace(hour=hh, minute=mm, second=ss, microsecond=0)
    if seen > local_now:  # the capture was just before local midnight
        seen -= timedelta(days=1)
    assert local_now - seen < timedelta(minutes=1), (end, local_now)
