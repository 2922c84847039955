"""`af import ...` end to end through the CLI: counts, idempotent re-import, user errors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from af_pipeline.interfaces.cli import main
from capture.screenpipe_schema import CURRENT_DDL

STUDENT = Path(__file__).resolve().parent / "data" / "rpm" / "StudentRecord.csv"  # vendored real RPM log (Apache-2.0, see its README)


def screenpipe_db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(CURRENT_DDL)
    for i in range(1, 41):
        ts = f"2026-03-{10 + i // 20:02d}T09:{i % 60:02d}:00.250000+00:00"
        con.execute("INSERT INTO frames (id, timestamp, app_name, window_name, focused, device_name, "
                    "capture_trigger) VALUES (?, ?, ?, ?, 1, 'monitor_1', 'click')",
                    (i, ts, "Mail" if i % 3 else "Slack", f"w{i}"))
        con.execute("INSERT INTO ui_events (timestamp, event_type, x, y, button, frame_id) "
                    "VALUES (?, 'click', 10, 20, 0, ?)", (ts, i))
    con.execute("INSERT INTO frames (id, timestamp, app_name, focused) VALUES (41, 'garbage', 'Mail', 1)")
    con.commit()
    con.close()
    return path


def run_json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_screenpipe_import_lands_once(tmp_path: Path, capsys) -> None:
    db = screenpipe_db(tmp_path / "db.sqlite")
    home = tmp_path / "home"
    first = run_json(capsys, ["import", "screenpipe", str(db), "--home", str(home), "--tz", "Europe/Paris"])
    assert first["landed"]["snapshots"] == 40 and first["landed"]["inputs"] == 40
    assert first["landed"]["streams"] == 3  # monitor_1 on three local days
    assert first["quarantined"] == 1 and first["quarantine_reasons"] == {"unreadable timestamp": 1}
    assert first["days_touched"] == ["2026-03-10", "2026-03-11", "2026-03-12"]
    again = run_json(capsys, ["import", "screenpipe", str(db), "--home", str(home)])
    assert sum(again["landed"].values()) == 0
    assert again["skipped"] == 40 + 40 + 3
    assert again["source_id"] == first["source_id"]


def test_table_output_and_screen_override(tmp_path: Path, capsys) -> None:
    db = screenpipe_db(tmp_path / "db.sqlite")
    code = main(["import", "screenpipe", str(db), "--home", str(tmp_path / "h"), "--tz", "UTC",
                 "--screen", "monitor_1=1512x982"])
    out = capsys.readouterr()
    assert code == 0
    assert "snapshots" in out.out and "quarantined:" in out.out and "unreadable timestamp" in out.out
    assert "screenpipe db.sqlite" in out.err  # progress goes to stderr, not into the table
    from capture.home import Home
    from capture.log import EventLog

    day = EventLog(Home(tmp_path / "h")).read_day("2026-03-10")
    assert [(s.stream, s.width_px, s.height_px) for s in day.streams] == [("monitor_1", 1512, 982)]


def test_rpm_and_activitywatch_through_the_cli(tmp_path: Path, capsys) -> None:
    home = str(tmp_path / "home")
    r = run_json(capsys, ["import", "rpm", str(STUDENT), "--home", home, "--tz", "Australia/Melbourne"])
    assert r["landed"]["inputs"] == 2409 and r["quarantined"] == 0
    aw = tmp_path / "aw.json"
    aw.write_text(json.dumps({"buckets": {"aw-watcher-afk_h": {"type": "afkstatus", "hostname": "h", "events": [
        {"timestamp": "2026-03-15T09:00:00Z", "duration": 60, "data": {"status": "afk"}}]}}}))
    a = run_json(capsys, ["import", "activitywatch", str(aw), "--home", home])
    assert a["landed"]["presence"] == 1
    for kind, path in (("rpm", STUDENT), ("activitywatch", aw)):  # re-imports land nothing
        again = run_json(capsys, ["import", kind, str(path), "--home", home])
        assert sum(again["landed"].values()) == 0 and again["skipped"] == sum(again["read"].values())


@pytest.mark.parametrize(
    "argv, message",
    [
        (["import", "screenpipe", "{json}"], "is not an SQLite database"),
        (["import", "rpm", "{missing}"], "no such file"),
        (["import", "activitywatch", "{csv}"], "not an ActivityWatch export or database"),
        (["import", "screenpipe", "{db}", "--screen", "monitor_1=huge"], "is not STREAM=WIDTHxHEIGHT"),
        (["import", "screenpipe", "{db}", "--tz", "Mars/Olympus"], "unknown time zone"),
        (["import"], "say what to import"),
    ],
)
def test_user_mistakes_exit_2_with_one_sentence(tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    js = tmp_path / "x.json"
    js.write_text("{}")
    csvf = tmp_path / "x.csv"
    csvf.write_text("a,b\n")
    db = screenpipe_db(tmp_path / "db.sqlite")
    paths = {"{json}": str(js), "{missing}": str(tmp_path / "nope.csv"), "{csv}": str(csvf), "{db}": str(db)}
    argv = [paths.get(a, a) for a in argv]
    if len(argv) > 1:
        argv += ["--home", str(tmp_path / "home")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
