"""Captures shaped exactly as the real tools write them, through `af import`, `af build` and
`af certify` (real Dagster, real DuckDB), as a new user runs them.

ActivityWatch: a real aw-server (the PyPI release in .venv-aw, peewee storage) fed by the
official aw-client the way its watchers send heartbeats, then read back as its web UI's export
(GET /api/0/export, the Linux layout: window, afk and web buckets) and as the database file the
server keeps; aw-server-rust's schema (tests/test_import_activitywatch.py); a Windows PC's
dashboard dump; an Android export. RPM: the vendored real StudentRecord.csv UI log. Each must
import, build, publish every day and certify, with the published per-app minutes equal to a
count made here from the events themselves.

A failing day fails alone: a range build where one day's frames break a quality rule publishes
the other days, names the failing day, check and reason, and never a folder it did not write.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aw_live import AwServer
from test_import_activitywatch import _rust_db

from af_pipeline.interfaces import cli

DAY1, DAY2 = "2026-03-15", "2026-03-16"
RPM = Path(__file__).resolve().parent / "data" / "rpm" / "StudentRecord.csv"


def at(day: str, hh: int, mm: int, ss: int = 0) -> datetime:
    y, m, d = map(int, day.split("-"))
    return datetime(y, m, d, hh, mm, ss, tzinfo=UTC)


# One person's two days on a Linux desktop: (start, seconds, app, title). A 27-minute dialog is
# one event, as aw-watcher-window records a window that does not change.
WINDOWS = [
    (at(DAY1, 9, 0), 120, "Code", "main.py - project"),
    (at(DAY1, 9, 2), 27 * 60, "Zenity", "Save As"),
    (at(DAY1, 9, 40), 10 * 60, "Gnome-terminal", "make test"),
    (at(DAY2, 10, 0), 30 * 60, "firefox", "Pull requests"),
    (at(DAY2, 10, 30), 90, "Code", "README.md"),
]
NOT_AFK = [(at(DAY1, 9, 0), 31 * 60), (at(DAY1, 9, 40), 10 * 60), (at(DAY2, 10, 0), 32 * 60)]
AFK = [(at(DAY1, 9, 31), 9 * 60)]
TABS = [(at(DAY2, 10, 0), 30 * 60, "https://github.com/pulls")]


def expected_minutes() -> dict[str, dict[str, float]]:
    """Per day and app: each window event's seconds (every one lies inside not-afk time)."""
    out: dict[str, Counter] = {}
    for start, secs, app, _title in WINDOWS:
        out.setdefault(start.date().isoformat(), Counter())[app] += secs
    return {day: {app: round(s / 60, 2) for app, s in c.items()} for day, c in out.items()}


def beats(start: datetime, secs: int, data: dict) -> list[tuple[str, float, dict]]:
    """A watcher's heartbeats for one unchanged window: one at the start, one at the end."""
    return [(start.isoformat(), 0.0, data), ((start + timedelta(seconds=secs)).isoformat(), 0.0, data)]


@pytest.fixture(scope="module")
def aw_server(tmp_path_factory):
    """A real aw-server with peewee storage, fed as its watchers feed it."""
    server = AwServer(tmp_path_factory.mktemp("aw-server"), storage="peewee").start()
    try:
        host = "testhost"
        # pulsetime over the longest event: both heartbeats of one window merge into one event
        pulse = 3600.0
        window = [b for s, secs, app, title in WINDOWS for b in beats(s, secs, {"app": app, "title": title})]
        server.feed(f"aw-watcher-window_{host}", "currentwindow", window, pulsetime=pulse)
        afk = sorted([*((s, n, "not-afk") for s, n in NOT_AFK), *((s, n, "afk") for s, n in AFK)])
        server.feed(f"aw-watcher-afk_{host}", "afkstatus",
                    [b for s, n, status in afk for b in beats(s, n, {"status": status})], pulsetime=pulse)
        server.feed("aw-watcher-web-firefox", "web.tab.current",
                    [b for s, n, url in TABS for b in beats(s, n, {"url": url, "title": "Pull requests",
                                                                    "audible": False, "incognito": False})],
                    pulsetime=pulse)
        export = server.export()
    finally:
        server.stop()  # the database file is complete once the server has stopped
    return export, server.database()


def af(capsys, *args: str) -> tuple[int, str]:
    code = cli.main(list(args))
    said = capsys.readouterr()
    return code, said.out + said.err


def published_minutes(home: Path, day: str) -> dict[str, float]:
    doc = json.loads((home / "published" / day / "document.json").read_text())
    return {a["app"]: a["minutes"] for a in doc["apps"]}


def through_the_pipeline(capsys, home: Path, kind: str, source: Path, tz: str = "UTC") -> tuple[str, str]:
    """af import, af build, af certify on a new data folder; each must succeed."""
    code, imported = af(capsys, "import", kind, str(source), "--home", str(home), "--tz", tz)
    assert code == 0, imported
    code, built = af(capsys, "build", "--home", str(home))
    assert code == 0, built
    assert "FAILED" not in built and "not published" not in built
    code, certified = af(capsys, "certify", "--home", str(home))
    assert code == 0, certified
    cert = json.loads((home / "certificate.json").read_text())
    assert cert["verdict"] == "pass" and all(d["passed"] for d in cert["days"].values()), certified
    for day in cert["days"]:
        assert (home / "published" / day / "manifest.json").is_file(), day
    return built, certified


def test_a_real_aw_server_export_builds_certifies_and_publishes(aw_server, tmp_path, capsys):
    export, _db = aw_server
    doc = json.loads(export)
    assert {"aw-watcher-window_testhost", "aw-watcher-afk_testhost", "aw-watcher-web-firefox"} <= set(doc["buckets"])
    src = tmp_path / "aw-buckets-export.json"
    src.write_bytes(export)
    home = tmp_path / "home"
    built, _ = through_the_pipeline(capsys, home, "activitywatch", src)
    assert f"2 day(s) published to {home / 'published'}" in built
    for day, want in expected_minutes().items():
        assert published_minutes(home, day) == want, day


def test_a_real_aw_server_database_builds_like_its_export(aw_server, tmp_path, capsys):
    _export, db = aw_server
    home = tmp_path / "home"
    through_the_pipeline(capsys, home, "activitywatch", db)
    for day, want in expected_minutes().items():
        assert published_minutes(home, day) == want, day


def _bucket(bid: str, kind: str, host: str, client: str, events: list[dict]) -> dict:
    return {"id": bid, "created": "2026-03-01T08:00:00.000000+00:00", "name": None, "type": kind,
            "client": client, "hostname": host, "data": {}, "events": events}


def _event(start: datetime, secs: float, data: dict) -> dict:
    return {"timestamp": start.isoformat(), "duration": secs, "data": data}


def windows_dump() -> dict:
    """A Windows PC's export from the web UI: exe names, newest event first, a long dialog."""
    host = "DESKTOP-7Q2LK3M"
    win = [_event(s, secs, {"app": app, "title": title}) for s, secs, app, title in [
        (at(DAY1, 8, 0), 300, "Code.exe", "app.ts - Visual Studio Code"),
        (at(DAY1, 8, 5), 1620, "explorer.exe", "Save As"),
        (at(DAY1, 8, 32), 600, "WINWORD.EXE", "Report.docx - Word"),
        (at(DAY1, 8, 42), 45, "powershell.exe", "Windows PowerShell"),
    ]]
    afk = [_event(at(DAY1, 8, 0), 2830, {"status": "not-afk"}), _event(at(DAY1, 8, 47, 10), 600, {"status": "afk"})]
    return {"buckets": {
        f"aw-watcher-window_{host}": _bucket(f"aw-watcher-window_{host}", "currentwindow", host,
                                             "aw-watcher-window", win[::-1]),
        f"aw-watcher-afk_{host}": _bucket(f"aw-watcher-afk_{host}", "afkstatus", host, "aw-watcher-afk", afk[::-1]),
    }}


def test_a_windows_dashboard_dump_builds_and_certifies(tmp_path, capsys):
    src = tmp_path / "aw-buckets-export.json"
    src.write_text(json.dumps(windows_dump()))
    home = tmp_path / "home"
    through_the_pipeline(capsys, home, "activitywatch", src)
    assert published_minutes(home, DAY1) == {"Code.exe": 5.0, "explorer.exe": 27.0, "WINWORD.EXE": 10.0,
                                             "powershell.exe": 0.75}


def test_an_aw_server_rust_database_builds_and_certifies(tmp_path, capsys):
    buckets = windows_dump()["buckets"]
    folder = tmp_path / "aw-server-rust"
    folder.mkdir()
    _rust_db(folder / "sqlite.db", buckets)
    home = tmp_path / "home"
    through_the_pipeline(capsys, home, "activitywatch", folder / "sqlite.db")
    assert published_minutes(home, DAY1)["explorer.exe"] == 27.0


def test_an_android_export_builds_and_certifies(tmp_path, capsys):
    t = at(DAY2, 7, 0)
    doc = {"buckets": {
        "aw-watcher-android": _bucket("aw-watcher-android", "currentwindow", "Pixel 7", "aw-android", [
            _event(t + timedelta(minutes=12), 180, {"app": "Chrome", "package": "com.android.chrome",
                                                    "classname": "org.chromium.chrome.browser.ChromeTabbedActivity"}),
            _event(t, 600, {"app": "Signal", "package": "org.thoughtcrime.securesms", "classname": ""})]),
        "aw-watcher-android-unlock": _bucket("aw-watcher-android-unlock", "os.lockscreen.unlocks", "Pixel 7",
                                             "aw-android", [_event(t + timedelta(minutes=12), 0, {}),
                                                            _event(t - timedelta(seconds=5), 0, {})]),
    }}
    src = tmp_path / "aw-android-export.json"
    src.write_text(json.dumps(doc))
    home = tmp_path / "home"
    through_the_pipeline(capsys, home, "activitywatch", src)
    assert published_minutes(home, DAY2) == {"Signal": 10.0, "Chrome": 3.0}


def test_a_real_rpm_ui_log_builds_and_certifies(tmp_path, capsys):
    home = tmp_path / "home"
    through_the_pipeline(capsys, home, "rpm", RPM)
    days = sorted(p.name for p in (home / "published").iterdir() if p.is_dir())
    assert days, "nothing was published"


def test_an_amended_sealed_day_builds_and_certifies_again(tmp_path, capsys):
    """A second export of the same PC with an earlier morning lands as an amendment of the sealed day."""
    first = windows_dump()
    src = tmp_path / "first.json"
    src.write_text(json.dumps(first))
    home = tmp_path / "home"
    through_the_pipeline(capsys, home, "activitywatch", src)
    later = windows_dump()
    host = "DESKTOP-7Q2LK3M"
    later["buckets"][f"aw-watcher-window_{host}"]["events"].append(
        _event(at(DAY1, 7, 30), 600, {"app": "OUTLOOK.EXE", "title": "Inbox"}))
    later["buckets"][f"aw-watcher-afk_{host}"]["events"].append(_event(at(DAY1, 7, 30), 600, {"status": "not-afk"}))
    src2 = tmp_path / "second.json"
    src2.write_text(json.dumps(later))
    code, said = af(capsys, "import", "activitywatch", str(src2), "--home", str(home))
    assert code == 0, said
    code, built = af(capsys, "build", "--home", str(home))
    assert code == 0, built
    code, certified = af(capsys, "certify", "--home", str(home))
    assert code == 0, certified
    assert published_minutes(home, DAY1)["OUTLOOK.EXE"] == 10.0


def test_a_failing_day_fails_alone(tmp_path, capsys, monkeypatch):
    """One day of a range whose frames break a quality rule: the other day is published, the
    failing one is not, and build and certify name the day, the check and the reason."""
    src = tmp_path / "aw-buckets-export.json"
    doc = {"buckets": {"aw-watcher-window_pc": _bucket("aw-watcher-window_pc", "currentwindow", "pc",
                                                       "aw-watcher-window", [
        _event(at(DAY1, 9, 0), 600, {"app": "Code", "title": "a"}),
        _event(at(DAY2, 9, 0), 600, {"app": "Code", "title": "b"})])}}
    src.write_text(json.dumps(doc))
    home = tmp_path / "home"
    code, said = af(capsys, "import", "activitywatch", str(src), "--home", str(home), "--tz", "UTC")
    assert code == 0, said

    from af_pipeline.warehouse import day_work

    honest = day_work.WRITERS[day_work.FRAMES]

    def over_credited(con, day, part):  # a compiler fault on one day: active time above wall time
        out = honest(con, day, part)
        if day == DAY2:
            con.execute("UPDATE frames SET active_us = wall_us + 1 WHERE day = ?", [day])
        return out

    monkeypatch.setitem(day_work.WRITERS, day_work.FRAMES, over_credited)
    code, built = af(capsys, "build", "--home", str(home))
    assert code == 1
    assert (home / "published" / DAY1 / "manifest.json").is_file()
    assert not (home / "published" / DAY2).exists()
    assert f"1 day(s) published to {home / 'published'}" in built
    assert f"1 day(s) not published ({DAY2}" in built
    assert f"{DAY2} frames_quality: active time is above wall time (rule wall_us >= active_us) on 1 row" in built
    assert "frame_id aw:pc:" in built  # the rows, by id
    assert "Code" not in built.split("not published")[1]  # ids and the rule, never a title or app

    code, certified = af(capsys, "certify", "--home", str(home))
    assert code == 1
    cert = json.loads((home / "certificate.json").read_text())
    assert cert["days"][DAY1]["passed"], cert["days"][DAY1]
    failed = cert["days"][DAY2]["checks"]
    assert failed["frames_quality"]["passed"] is False and failed["frames_quality"]["consequence_of"] is None
    assert failed["byte_identical_recompile"]["consequence_of"] == "frames_quality"
    assert "a consequence of frames_quality failing" in failed["byte_identical_recompile"]["problem"]
    assert f"{DAY2} byte_identical_recompile [consequence]:" in certified
    assert "frames_quality: frames_quality" not in built + certified

    monkeypatch.setitem(day_work.WRITERS, day_work.FRAMES, honest)  # the fault fixed: the next build publishes the day
    code, built = af(capsys, "build", "--home", str(home))
    assert code == 0, built
    assert (home / "published" / DAY2 / "manifest.json").is_file()
