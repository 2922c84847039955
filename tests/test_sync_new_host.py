"""`af sync` meeting a new host never lands a row twice (issue 35): the refs of an ActivityWatch
source name its hosts, so the same events read under another host set (a host renamed on the same
aw-server, or an export imported before a live sync) carry other refs; rows the log already holds
are skipped as duplicates, and an event that grew continues its logged row."""

from __future__ import annotations

import json
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aw_live import AwServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.interfaces import cli
from capture import sync
from capture.home import Home
from capture.log import EventLog
from capture.model import Presence, Snapshot
from capture.timeutil import US

TZ = "UTC"


def _home(tmp_path: Path) -> Home:
    h = Home(tmp_path / "home")
    h.init(tz=TZ)
    return h


def _post(url: str, body: Any) -> None:
    req = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def _bucket(server: AwServer, bid: str, kind: str, host: str, events: list[tuple[datetime, float, dict]]) -> None:
    """A bucket of a given host (as that machine's watcher makes it) with these events."""
    try:
        _post(f"{server.url}/api/0/buckets/{bid}", {"client": "af-test", "type": kind, "hostname": host})
    except urllib.error.HTTPError as exc:  # 304: the bucket exists
        if exc.code != 304:
            raise
    _post(f"{server.url}/api/0/buckets/{bid}/events",
          [{"timestamp": t.isoformat(), "duration": d, "data": data} for t, d, data in events])


def _rows(home: Home) -> tuple[list[Snapshot], list[Presence]]:
    log = EventLog(home)
    snaps: list[Snapshot] = []
    pres: list[Presence] = []
    for d in log.days():
        cap = log.read_day(d.day)
        snaps += cap.snapshots
        pres += cap.presence
    return snaps, pres


def _credited(snaps: list[Snapshot]) -> dict[tuple[str, str], float]:
    """Seconds per (stream, app): the sum of the rows' measured spans (a row landed twice counts twice)."""
    out: dict[tuple[str, str], float] = {}
    for s in snaps:
        key = (s.stream, s.app)
        out[key] = out.get(key, 0.0) + ((s.end_us or s.ts_us) - s.ts_us) / US
    return out


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    srv = AwServer(tmp_path / "aw").start()
    yield srv
    srv.stop()


def _work(t0: datetime, apps: list[str], n: int) -> list[tuple[datetime, float, dict]]:
    return [(t0 + timedelta(seconds=30 * i), 25.0, {"app": apps[i % len(apps)], "title": f"t{i % len(apps)}"})
            for i in range(n)]


def test_a_renamed_host_on_the_same_server_lands_nothing_twice(tmp_path: Path, server: AwServer) -> None:
    home = _home(tmp_path)
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=8)
    if t0.date() != (t0 + timedelta(minutes=12)).date():  # near midnight: a second day adds a stream row
        t0 -= timedelta(minutes=20)
    _bucket(server, "aw-watcher-window_oldname", "currentwindow", "oldname", _work(t0, ["Code", "Slack"], 10))
    _bucket(server, "aw-watcher-afk_oldname", "afkstatus", "oldname",
            [(t0, 300.0, {"status": "not-afk"})])
    assert cli.main(["sync", "activitywatch", server.url, "--home", str(home.root)]) == 0
    before_snaps, before_pres = _rows(home)
    assert len(before_snaps) == 10 and len(before_pres) == 1
    # The machine is renamed: its watchers now write new buckets; the old ones stay on the server
    # (their last minutes are read again, as every pass re-reads an overlap).
    t1 = t0 + timedelta(minutes=5)
    _bucket(server, "aw-watcher-window_newname", "currentwindow", "newname", _work(t1, ["Firefox"], 4))
    r = sync.sync_once(home, sync.sources(home)[0])
    assert r.ok, r
    snaps, pres = _rows(home)
    old = [s for s in snaps if s.stream == "aw:oldname"]
    assert len(old) == 10 and len(pres) == 1  # nothing of the old host twice
    assert len([s for s in snaps if s.stream == "aw:newname"]) == 4
    assert r.landed == 4 + 1 and r.skipped >= 11, r  # the new host's rows and stream; the old ones skipped
    assert _credited(snaps)[("aw:oldname", "Code")] == pytest.approx(5 * 25.0)
    # The same server registered again under another address reads everything again: still once.
    again = sync.register(home, "activitywatch", server.url.replace("127.0.0.1", "localhost"))
    r2 = sync.sync_once(home, again)
    assert r2.ok and r2.landed == 0 and r2.skipped >= 15, r2
    assert sorted(s.ts_us for s in _rows(home)[0]) == sorted(s.ts_us for s in snaps)


def test_an_export_imported_first_then_synced_live_lands_once(tmp_path: Path, server: AwServer) -> None:
    home = _home(tmp_path)
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=20)
    _bucket(server, "aw-watcher-window_laptop", "currentwindow", "laptop", _work(t0, ["Code", "Slack"], 10))
    export = tmp_path / "aw-buckets-export.json"
    export.write_bytes(server.export())
    assert cli.main(["import", "activitywatch", str(export), "--home", str(home.root), "--tz", TZ]) == 0
    # Later the user's phone syncs to the same server (another host), and the server is followed live.
    _bucket(server, "aw-watcher-window_phone", "currentwindow", "phone", _work(t0, ["Maps"], 3))
    # The last window event grew since the export (a watcher's heartbeat): that part alone is new.
    last = t0 + timedelta(seconds=30 * 9)
    _post(f"{server.url}/api/0/buckets/aw-watcher-window_laptop/heartbeat?pulsetime=60",
          {"timestamp": (last + timedelta(seconds=40)).isoformat(), "duration": 0, "data": {"app": "Slack", "title": "t1"}})
    assert [e["duration"] for e in server.events("aw-watcher-window_laptop")][0] == pytest.approx(40.0)
    assert cli.main(["sync", "activitywatch", server.url, "--home", str(home.root)]) == 0
    snaps, _ = _rows(home)
    laptop = [s for s in snaps if s.stream == "aw:laptop"]
    assert len([s for s in laptop if "~" not in s.ref]) == 10  # each event once...
    assert [s.ts_us for s in laptop if "~" in s.ref] == [int((last + timedelta(seconds=25)).timestamp()) * US]  # ...and its growth
    credited = _credited(snaps)
    assert credited[("aw:laptop", "Code")] == pytest.approx(5 * 25.0)
    assert credited[("aw:laptop", "Slack")] == pytest.approx(4 * 25.0 + 40.0)  # the grown event counted once
    assert credited[("aw:phone", "Maps")] == pytest.approx(3 * 25.0)


def test_a_server_synced_live_then_imported_as_an_export_lands_once(tmp_path: Path, server: AwServer) -> None:
    """The other order: the laptop is followed live, a phone joins the server, and the user then
    imports the server's export (hosts laptop+phone: other refs). The laptop's events are
    skipped as already in the log; only the phone's land."""
    home = _home(tmp_path)
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=20)
    _bucket(server, "aw-watcher-window_laptop", "currentwindow", "laptop", _work(t0, ["Code", "Slack"], 10))
    _bucket(server, "aw-watcher-afk_laptop", "afkstatus", "laptop", [(t0, 300.0, {"status": "not-afk"})])
    assert cli.main(["sync", "activitywatch", server.url, "--home", str(home.root)]) == 0
    _bucket(server, "aw-watcher-window_phone", "currentwindow", "phone", _work(t0, ["Maps"], 3))
    export = tmp_path / "aw-buckets-export.json"
    export.write_bytes(server.export())
    assert cli.main(["import", "activitywatch", str(export), "--home", str(home.root), "--tz", TZ]) == 0
    snaps, pres = _rows(home)
    assert len([s for s in snaps if s.stream == "aw:laptop"]) == 10 and len(pres) == 1
    credited = _credited(snaps)
    assert credited[("aw:laptop", "Code")] == pytest.approx(5 * 25.0)
    assert credited[("aw:phone", "Maps")] == pytest.approx(3 * 25.0)
    # importing it again lands nothing
    assert cli.main(["import", "activitywatch", str(export), "--home", str(home.root), "--tz", TZ]) == 0
    assert len(_rows(home)[0]) == len(snaps)


# -- the rule, over any events and host sets (an export file followed as the source) ----------

T0 = datetime(2026, 3, 16, 9, 0, tzinfo=UTC)


def _export(path: Path, hosts: dict[str, list[tuple[int, int, str]]]) -> None:
    """An export file with one window bucket per host: events as (start s, duration s, app)."""
    buckets = {
        f"aw-watcher-window_{h}": {"id": f"aw-watcher-window_{h}", "type": "currentwindow", "client": "aw-watcher-window",
                                   "hostname": h, "events": [{"timestamp": (T0 + timedelta(seconds=a)).isoformat(),
                                                              "duration": float(d), "data": {"app": app, "title": app}}
                                                             for a, d, app in evs]}
        for h, evs in hosts.items()
    }  # fmt: skip
    path.write_text(json.dumps({"buckets": buckets}), encoding="utf-8")


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[tuple[int, int, str]], list[str], list[int]]:
    n = draw(st.integers(1, 8))
    starts = sorted(draw(st.lists(st.integers(0, 3000), min_size=n, max_size=n, unique=True)))
    events = []
    for i, a in enumerate(starts):
        room = (starts[i + 1] - a) if i + 1 < n else 600
        events.append((a, draw(st.integers(1, max(1, room - 1))), draw(st.sampled_from(["Code", "Slack", "Mail"]))))
    # the host sets the source shows on successive passes (the laptop's own bucket always there)
    others = draw(st.lists(st.sampled_from(["", "phone", "desk", "phone+desk"]), min_size=2, max_size=4))
    # how many of the laptop's events each pass sees (they arrive over time)
    seen = sorted(draw(st.lists(st.integers(1, n), min_size=len(others), max_size=len(others))))
    return events, others, seen


@given(histories())
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_each_event_lands_once_whatever_hosts_each_pass_sees(tmp_path_factory: pytest.TempPathFactory,
                                                             drawn) -> None:  # type: ignore[no-untyped-def]
    events, others, seen = drawn
    tmp = tmp_path_factory.mktemp("h")
    home = _home(tmp)
    path = tmp / "aw.json"
    src = None
    for extra, k in zip(others, seen, strict=True):
        hosts = {"laptop": events[:k]}
        for h in filter(None, extra.split("+")):
            hosts[h] = [(5000 + 60 * i, 30, "Maps") for i in range(2)]
        _export(path, hosts)
        src = src or sync.register(home, "activitywatch", str(path))
        assert sync.sync_once(home, src, now_us=int(T0.timestamp() * US) + 86_400 * US).ok
    snaps, _ = _rows(home)
    laptop = sorted((s.ts_us, s.end_us) for s in snaps if s.stream == "aw:laptop")
    assert laptop == sorted((int((T0 + timedelta(seconds=a)).timestamp()) * US,
                             int((T0 + timedelta(seconds=a + d)).timestamp()) * US) for a, d, _ in events[: seen[-1]])
    for h in ("phone", "desk"):
        assert len([s for s in snaps if s.stream == f"aw:{h}"]) in (0, 2)


def test_a_long_event_read_again_clipped_at_a_later_start_lands_once(tmp_path: Path) -> None:
    """aw-server-rust clips events to the range a pass asks for: an event held longer than the
    pass's overlap comes back with a later start. It is the logged event, grown: its new part
    lands as a continuation, never as a second, overlapping row."""
    home = _home(tmp_path)
    path = tmp_path / "aw.json"
    _export(path, {"laptop": [(0, 900, "Code")]})
    src = sync.register(home, "activitywatch", str(path))
    now = int(T0.timestamp()) * US + 86_400 * US
    assert sync.sync_once(home, src, now_us=now).ok
    _export(path, {"laptop": [(300, 900, "Code")]})  # [300, 1200): clipped at 300, grown to 1200
    r = sync.sync_once(home, src, now_us=now)
    assert r.ok and r.continued == 1, r
    _export(path, {"laptop": [(600, 500, "Code")]})  # an older, clipped version: nothing new
    assert sync.sync_once(home, src, now_us=now).ok
    snaps, _ = _rows(home)
    spans = sorted(((s.ts_us - int(T0.timestamp()) * US) // US, ((s.end_us or 0) - int(T0.timestamp()) * US) // US)
                   for s in snaps)
    assert spans == [(0, 900), (900, 1200)]
    assert _credited(snaps)[("aw:laptop", "Code")] == pytest.approx(1200.0)


def test_events_written_after_the_clock_went_back_are_not_lost(tmp_path: Path, server: AwServer) -> None:
    """The machine's clock jumps back 30 minutes: the events written then end before the
    watermark of the last pass. The next pass asks from the clock, not only from the watermark."""
    home = _home(tmp_path)
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    _bucket(server, "aw-watcher-window_laptop", "currentwindow", "laptop", _work(t0, ["Code"], 40))  # to t0+20 min
    src = sync.register(home, "activitywatch", server.url)
    assert sync.sync_once(home, src, now_us=int((t0 + timedelta(minutes=20)).timestamp()) * US).ok
    back = t0 - timedelta(minutes=10)  # the clock now reads 30 minutes earlier
    _bucket(server, "aw-watcher-window_laptop", "currentwindow", "laptop", _work(back, ["Slack"], 10))
    r = sync.sync_once(home, src, now_us=int((back + timedelta(minutes=6)).timestamp()) * US)
    assert r.ok and r.landed == 10, r
    assert _credited(_rows(home)[0])[("aw:laptop", "Slack")] == pytest.approx(10 * 25.0)
