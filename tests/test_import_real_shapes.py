"""`af import` on files shaped as the real tools write them (issue 35), through the CLI.

Every fixture is synthetic, written here in the exact shape of the tool's output: a dashboard's
saved ActivityWatch buckets, a capture kept as bucket metadata plus a top-level events map, a
copy of aw-server-rust's sqlite.db without its -wal file, Action Logger / SmartRPA time stamps.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.interfaces.cli import main
from capture.home import Home
from capture.log import EventLog
from capture.timeutil import parse_ts

HEADER = '"timeStamp","userID","targetApp","eventType","url","content","target.id","target.tagName","target.name"'


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main([*argv, "--quiet"])
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys, argv: list[str], code: int = 0) -> dict:
    got, out, err = run(capsys, [*argv, "--json"])
    assert got == code, err
    return json.loads(out)


def aw_event(ts: str, duration: float, **data) -> dict:
    return {"timestamp": ts, "duration": duration, "data": data}


def snapshots(home: Path, day: str) -> list:
    return EventLog(Home(home)).read_day(day).snapshots


# ---------------------------------------------------------------------------------------------
# ActivityWatch: buckets recognised by their id, events in a top-level map


def test_dashboard_buckets_are_read_by_their_id_whatever_type_the_wrapper_gave(tmp_path: Path, capsys) -> None:
    doc = {"buckets": {
        "aw-watcher-window_desk": {"type": "window", "events": [
            aw_event("2026-03-15T09:00:00+00:00", 600, app="firefox", title="Docs"),
            aw_event("2026-03-15T09:10:00+00:00", 300, app="Code", title="x.py")]},
        "aw-watcher-afk_desk": {"type": "afk", "events": [
            aw_event("2026-03-15T09:00:00+00:00", 900, status="not-afk")]},
        "aw-watcher-web-firefox": {"type": "web", "events": [
            aw_event("2026-03-15T09:00:00.500000+00:00", 590, url="https://docs.example.org/a", title="A")]},
        # a correct type keeps its meaning, whatever the id
        "my-own-editor-bucket": {"type": "app.editor.activity", "events": [
            aw_event("2026-03-15T09:00:00+00:00", 10, file="a.py")]},
    }}
    path = tmp_path / "dashboard.json"
    path.write_text(json.dumps(doc))
    r = run_json(capsys, ["import", "activitywatch", str(path), "--home", str(tmp_path / "h"), "--tz", "UTC"])
    assert r["source_id"] == "activitywatch:desk"
    assert r["landed"]["presence"] == 1 and r["quarantined"] == 0
    assert r["importer_notes"]["buckets of type 'window' read as 'currentwindow' by their id (aw-watcher-window_...)"] == 1
    assert r["importer_notes"]["events in buckets of type 'app.editor.activity' (not imported)"] == 1
    snaps = snapshots(tmp_path / "h", "2026-03-15")
    assert {s.app for s in snaps} == {"firefox", "Code"} and {s.stream for s in snaps} == {"aw:desk"}
    assert snaps[0].app == "firefox" and snaps[0].url == "https://docs.example.org/a"  # the web bucket gave it


def test_events_kept_in_a_top_level_map_beside_the_bucket_metadata(tmp_path: Path, capsys) -> None:
    doc = {
        "buckets": {
            "aw-watcher-window_lap": {"id": "aw-watcher-window_lap", "type": "currentwindow",
                                      "client": "aw-watcher-window", "hostname": "lap"},
            "aw-watcher-afk_lap": {"id": "aw-watcher-afk_lap", "type": "afkstatus",
                                   "client": "aw-watcher-afk", "hostname": "lap"},
        },
        "events": {
            "aw-watcher-window_lap": [aw_event("2026-03-15T09:00:00+00:00", 60, app="Mail", title="Inbox"),
                                      aw_event("2026-03-15T09:01:00+00:00", "soon", app="Mail", title="x")],
            "aw-watcher-afk_lap": [aw_event("2026-03-15T09:00:00+00:00", 120, status="not-afk")],
        },
    }
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(doc))
    r = run_json(capsys, ["import", "activitywatch", str(path), "--home", str(tmp_path / "h"), "--tz", "UTC"])
    assert r["landed"]["snapshots"] == 1 and r["landed"]["presence"] == 1
    assert r["quarantine_reasons"] == {"duration is not a number of seconds >= 0": 1}
    rows = [json.loads(line) for line in (tmp_path / "h" / "log" / "quarantine.jsonl").read_text().splitlines()]
    assert [q["row"] for q in rows] == ["events['aw-watcher-window_lap'][1]"]  # where it is in the file


AW_RUST_DDL = """
    CREATE TABLE IF NOT EXISTS buckets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE NOT NULL,
        type TEXT NOT NULL, client TEXT NOT NULL, hostname TEXT NOT NULL, created TEXT NOT NULL,
        data TEXT NOT NULL DEFAULT '{}');
    CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, bucketrow INTEGER NOT NULL,
        starttime INTEGER NOT NULL, endtime INTEGER NOT NULL, data TEXT NOT NULL,
        FOREIGN KEY (bucketrow) REFERENCES buckets(id));
    CREATE TABLE key_value (key TEXT PRIMARY KEY, value TEXT, last_modified NUMBER NOT NULL);
    CREATE INDEX IF NOT EXISTS events_bucketrow_starttime_endtime_index ON events(bucketrow, starttime DESC, endtime);
"""


def _running_server_db(path: Path) -> sqlite3.Connection:
    """aw-server-rust's database as the running server holds it: WAL mode, the schema
    checkpointed into the main file, the events still in sqlite.db-wal (the connection stays
    open, as the server's does, so nothing is checkpointed)."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(AW_RUST_DDL)
    con.execute("INSERT INTO buckets (name, type, client, hostname, created) VALUES "
                "('aw-watcher-window_desk', 'currentwindow', 'aw-watcher-window', 'desk', '2026-03-15T08:00:00Z')")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA wal_autocheckpoint=0")
    start = parse_ts("2026-03-15T09:00:00Z") * 1000
    con.execute("BEGIN")
    for i in range(20):
        con.execute("INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (1, ?, ?, ?)",
                    (start + i * 60_000_000_000, start + (i * 60 + 50) * 1_000_000_000,
                     json.dumps({"app": "Code", "title": f"f{i}.py"})))
    con.execute("COMMIT")
    return con


def test_a_copy_without_its_wal_file_says_where_the_events_are(tmp_path: Path, capsys) -> None:
    live = tmp_path / "live"
    live.mkdir()
    con = _running_server_db(live / "sqlite.db")
    try:
        assert (live / "sqlite.db-wal").stat().st_size > 0
        copy = tmp_path / "copy"
        copy.mkdir()
        shutil.copy2(live / "sqlite.db", copy / "sqlite.db")  # the main file only
        code, out, err = run(capsys, ["import", "activitywatch", str(copy / "sqlite.db"),
                                      "--home", str(tmp_path / "h"), "--tz", "UTC"])
        assert code == 2
        assert "nothing usable landed" in err
        assert "no sqlite.db-wal beside it" in err and "Copy sqlite.db-wal (and sqlite.db-shm)" in err
        assert "stop aw-server first" in err
        assert not list(copy.glob("sqlite.db-*"))  # the copy was read as it is, nothing created beside it

        # with its -wal copied along, the same database lands every event, and no hint is given
        both = tmp_path / "both"
        both.mkdir()
        for name in ("sqlite.db", "sqlite.db-wal"):
            shutil.copy2(live / name, both / name)
        r = run_json(capsys, ["import", "activitywatch", str(both / "sqlite.db"), "--home", str(tmp_path / "h2"),
                              "--tz", "UTC"])
        assert r["landed"]["snapshots"] == 20 and r["hints"] == []
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------
# RPM / Action Logger time stamps and zones


def write_log(path: Path, stamps: list[str], app: str = "Chrome") -> Path:
    lines = [HEADER] + [f'"{ts}","u1","{app}","clickButton","https://forms.example.org/new","","b{i}","BUTTON","Save"'
                        for i, ts in enumerate(stamps)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def landed_stamps(home: Path) -> list[int]:
    log = EventLog(Home(home))
    return sorted(s.ts_us for d in log.days() for s in log.read_day(d.day).snapshots)


def test_action_logger_colon_milliseconds_are_local_time_of_the_data_folder(tmp_path: Path, capsys) -> None:
    log = write_log(tmp_path / "actions.csv", ["2020-04-09 17:22:00:365", "2020-04-09 17:22:01:007"])
    home = tmp_path / "h"
    code, out, _ = run(capsys, ["import", "rpm", str(log), "--home", str(home), "--tz", "Europe/Berlin"])
    assert code == 0
    assert "unreadable timestamp" not in out
    note = "time stamps carry no zone: read as Europe/Berlin (the new data folder's zone, from --tz); " \
           "pass --source-tz to change"
    assert note in out
    assert f"new data folder {home} uses time zone Europe/Berlin (from --tz" in out
    assert landed_stamps(home) == [parse_ts("2020-04-09T15:22:00.365Z"), parse_ts("2020-04-09T15:22:01.007Z")]


def test_source_tz_overrides_the_data_folder_zone_and_is_named(tmp_path: Path, capsys) -> None:
    home = tmp_path / "h"
    Home(home).init(tz="UTC")
    log = write_log(tmp_path / "actions.csv", ["2020-04-09 17:22:00,365"])
    r = run_json(capsys, ["import", "rpm", str(log), "--home", str(home), "--source-tz", "Australia/Melbourne"])
    assert r["importer_notes"] == {
        "time stamps carry no zone: read as Australia/Melbourne (--source-tz); pass --source-tz to change": 1}
    assert r["new_home_tz"] is None  # the folder existed
    assert landed_stamps(home) == [parse_ts("2020-04-09T07:22:00.365Z")]  # AEST is UTC+10
    code, out, _ = run(capsys, ["import", "rpm", str(write_log(tmp_path / "b.csv", ["2020-04-10 08:00:00"])),
                                "--home", str(home)])
    assert code == 0 and "read as UTC (the data folder's zone)" in out and "new data folder" not in out


def test_stamps_with_a_zone_or_epoch_need_no_note(tmp_path: Path, capsys) -> None:
    log = write_log(tmp_path / "a.csv", ["2019-10-21T00:10:08.994Z", "2019-10-21T02:10:09.640+02:00",
                                         "1571616610000"])
    r = run_json(capsys, ["import", "rpm", str(log), "--home", str(tmp_path / "h"), "--tz", "Asia/Tokyo"])
    assert r["landed"]["snapshots"] == 3 and r["quarantined"] == 0
    assert not any("zone" in n for n in r["importer_notes"])
    assert landed_stamps(tmp_path / "h") == [parse_ts("2019-10-21T00:10:08.994Z"), parse_ts("2019-10-21T00:10:09.640Z"),
                                             parse_ts("2019-10-21T00:10:10Z")]


def test_day_month_order_is_decided_by_the_whole_file(tmp_path: Path, capsys) -> None:
    # 03/04 alone could be either; 13/04 on a later line says the file is day/month
    dmy = write_log(tmp_path / "dmy.csv", ["03/04/2020 09:00:00", "13/04/2020 09:00:00"])
    r = run_json(capsys, ["import", "rpm", str(dmy), "--home", str(tmp_path / "h1"), "--tz", "UTC"])
    assert r["quarantined"] == 0
    assert landed_stamps(tmp_path / "h1") == [parse_ts("2020-04-03T09:00:00Z"), parse_ts("2020-04-13T09:00:00Z")]
    mdy = write_log(tmp_path / "mdy.csv", ["03/04/2020 9:00:00 PM", "04/13/2020 09:00:00"])
    run_json(capsys, ["import", "rpm", str(mdy), "--home", str(tmp_path / "h2"), "--tz", "UTC"])
    assert landed_stamps(tmp_path / "h2") == [parse_ts("2020-03-04T21:00:00Z"), parse_ts("2020-04-13T09:00:00Z")]


def test_an_undecided_day_month_order_is_said_and_can_be_given(tmp_path: Path, capsys) -> None:
    log = write_log(tmp_path / "a.csv", ["03/04/2020 09:00:00", "05/04/2020 09:00:00"])
    r = run_json(capsys, ["import", "rpm", str(log), "--home", str(tmp_path / "h1"), "--tz", "UTC"])
    assert r["importer_notes"]["dates like 03/04/2020 whose order no date of the file decides: read as day/month "
                               "(pass --date-order mdy for month/day)"] == 2
    assert landed_stamps(tmp_path / "h1")[0] == parse_ts("2020-04-03T09:00:00Z")
    r = run_json(capsys, ["import", "rpm", str(log), "--home", str(tmp_path / "h2"), "--tz", "UTC",
                          "--date-order", "mdy"])
    assert not any("order" in n for n in r["importer_notes"])
    assert landed_stamps(tmp_path / "h2")[0] == parse_ts("2020-03-04T09:00:00Z")


def test_contradicting_date_orders_are_refused_with_both_lines(tmp_path: Path, capsys) -> None:
    log = write_log(tmp_path / "a.csv", ["13/04/2020 09:00:00", "04/14/2020 09:00:00"])
    code, _, err = run(capsys, ["import", "rpm", str(log), "--home", str(tmp_path / "h"), "--tz", "UTC"])
    assert code == 2
    assert "line 2 ('13/04/2020 09:00:00') is day/month, line 3 ('04/14/2020 09:00:00') month/day" in err
    assert not (tmp_path / "h").exists()


_ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Melbourne", "Asia/Kolkata"]


def _forms(instant: datetime, zone: str) -> list[tuple[str, bool]]:
    """The instant (whole milliseconds, UTC) written in every accepted form: (text, zone-less)."""
    local = instant.astimezone(ZoneInfo(zone))
    ms = f"{local.microsecond // 1000:03d}"
    return [
        (instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z", False),
        (local.isoformat(timespec="milliseconds"), False),
        (str(int(instant.timestamp() * 1000)), False),
        (local.strftime("%Y-%m-%d %H:%M:%S:") + ms, True),
        (local.strftime("%Y-%m-%d %H:%M:%S,") + ms, True),
        (local.strftime("%Y-%m-%dT%H:%M:%S.") + ms, True),
        (local.strftime("%d/%m/%Y %H:%M:%S.") + ms, True),
    ]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ms=st.integers(min_value=parse_ts("2015-01-01T00:00:00Z") // 1000, max_value=parse_ts("2035-12-31T00:00:00Z") // 1000),
       zone=st.sampled_from(_ZONES))
def test_every_timestamp_form_round_trips(tmp_path_factory, capsys, ms: int, zone: str) -> None:
    instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    local = instant.astimezone(ZoneInfo(zone))
    if local.replace(fold=0).timestamp() != instant.timestamp():
        return  # the second pass of a wall clock hour set back (DST end): its zone-less text is that of the first
    forms = _forms(instant, zone)
    tmp = tmp_path_factory.mktemp("forms")
    # a row dated the 13th or later decides the day/month order for the whole file
    decider = f"13/01/{local.year} 00:00:00"
    log = write_log(tmp / "a.csv", [text for text, _ in forms] + [decider])
    r = run_json(capsys, ["import", "rpm", str(log), "--home", str(tmp / "h"), "--tz", "UTC", "--source-tz", zone])
    assert r["quarantined"] == 0
    assert r["importer_notes"].get(f"time stamps carry no zone: read as {zone} (--source-tz); pass --source-tz to change") \
        == sum(zoneless for _, zoneless in forms) + 1
    got = landed_stamps(tmp / "h")
    want = parse_ts(instant.isoformat())
    decider_us = int(datetime(local.year, 1, 13, tzinfo=ZoneInfo(zone)).timestamp() * 1_000_000)
    assert sorted(got) == sorted([want] * len(forms) + [decider_us])


# ---------------------------------------------------------------------------------------------
# The summary: amended re-imports, units, partial imports


def _aw_export(path: Path, events: list[tuple[str, float, str]]) -> Path:
    path.write_text(json.dumps({"buckets": {
        "aw-watcher-window_host": {"type": "currentwindow", "hostname": "host", "client": "aw-watcher-window",
                                   "events": [aw_event(ts, dur, app=app, title=app) for ts, dur, app in events]},
        "aw-watcher-afk_host": {"type": "afkstatus", "hostname": "host", "client": "aw-watcher-afk",
                                "events": [aw_event("2026-03-15T09:00:00Z", 3600, status="not-afk")]}}}))
    return path


def test_an_amending_reimport_does_not_quarantine_the_hosts_stream_row(tmp_path: Path, capsys) -> None:
    home = str(tmp_path / "h")
    first = [("2026-03-15T09:00:00Z", 50, "Code"), ("2026-03-15T09:01:00Z", 50, "Mail")]
    run_json(capsys, ["import", "activitywatch", str(_aw_export(tmp_path / "f.json", first)), "--home", home, "--tz", "UTC"])
    # the export taken later holds an earlier event: the stream is first seen at another time that day
    later = [("2026-03-15T08:00:00Z", 50, "Slack"), *first]
    r = run_json(capsys, ["import", "activitywatch", str(_aw_export(tmp_path / "f.json", later)), "--home", home])
    assert r["days_amended"] == ["2026-03-15"]
    assert r["quarantined"] == 0 and r["quarantine_reasons"] == {}
    assert r["landed"]["snapshots"] == 1 and r["read"]["streams"] == 1 and r["skipped"] == 2 + 1 + 1
    assert not (tmp_path / "h" / "log" / "quarantine.jsonl").exists() or \
        "streams" not in (tmp_path / "h" / "log" / "quarantine.jsonl").read_text()


def test_note_units_are_printed_in_their_own_column(tmp_path: Path, capsys) -> None:
    log = write_log(tmp_path / "a.csv", ["2020-04-09T17:22:00Z", "2020-04-09T17:20:00Z", "2020-04-09T17:23:00Z"])
    code, out, _ = run(capsys, ["import", "rpm", str(log), "--home", str(tmp_path / "h"), "--tz", "UTC"])
    assert code == 0
    lines = out.splitlines()
    step = next(line for line in lines if "largest backwards step" in line)
    back = next(line for line in lines if "clock went backwards" in line)
    assert step.split()[:2] == ["120", "seconds"] and not step.rstrip().endswith("seconds")
    assert step.index("rows:") == back.index("rows:")  # the texts start in one column


def test_a_mostly_quarantined_source_lands_what_it_can_and_exits_2(tmp_path: Path, capsys) -> None:
    good = ["2020-04-09T17:22:00Z", "2020-04-09T17:22:05Z"]
    log = write_log(tmp_path / "half.csv", [*good, "yesterday", "soon", "later"])
    home = tmp_path / "h"
    code, out, err = run(capsys, ["import", "rpm", str(log), "--home", str(home), "--tz", "UTC"])
    assert code == 2
    assert "3 of the 5 rows read were quarantined, mostly for \"unreadable timestamp\" (e.g. half.csv:line 4)" in err
    assert "the rest landed" in err
    assert len(err.strip().splitlines()) == 1
    assert "landed" in out  # the table was printed first
    assert len(landed_stamps(home)) == 2  # what could be used landed
    # re-importing: the usable rows are already in the log (skipped, not quarantined): still mostly bad
    code, _, err = run(capsys, ["import", "rpm", str(log), "--home", str(home)])
    assert code == 2 and "3 of the 5 rows" in err


def test_half_quarantined_is_not_mostly(tmp_path: Path, capsys) -> None:
    log = write_log(tmp_path / "a.csv", ["2020-04-09T17:22:00Z", "2020-04-09T17:22:05Z", "bad", "worse"])
    r = run_json(capsys, ["import", "rpm", str(log), "--home", str(tmp_path / "h"), "--tz", "UTC"])
    assert r["quarantined"] == 2 and r["landed"]["snapshots"] == 2


def test_duplicate_rows_do_not_count_as_quarantined(tmp_path: Path, capsys) -> None:
    row = "2020-04-09T17:22:00Z"
    log = write_log(tmp_path / "a.csv", [row, "bad"])
    text = log.read_text().splitlines()
    log.write_text("\n".join([*text, text[1], text[1], text[1]]) + "\n")  # the same row three more times
    r = run_json(capsys, ["import", "rpm", str(log), "--home", str(tmp_path / "h"), "--tz", "UTC"])
    assert r["quarantined"] == 1 and r["importer_notes"]["duplicate rows skipped (identical to an earlier row)"] == 3


@pytest.mark.parametrize("kind", ["activitywatch"])
def test_nothing_usable_still_names_its_reasons(tmp_path: Path, capsys, kind: str) -> None:
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"buckets": {"aw-watcher-window_h": {"type": "window", "events": [
        aw_event("yesterday", 5, app="Code")]}}}))
    code, _, err = run(capsys, ["import", kind, str(path), "--home", str(tmp_path / "h"), "--tz", "UTC"])
    assert code == 2 and "nothing usable landed (1 quarantined: unreadable timestamp" in err


def test_screenpipe_zoneless_stamps_are_utc_and_the_summary_says_so(tmp_path: Path, capsys) -> None:
    from capture.screenpipe_schema import CURRENT_DDL

    db = tmp_path / "db.sqlite"
    con = sqlite3.connect(db)
    con.executescript(CURRENT_DDL)
    con.execute("INSERT INTO frames (id, timestamp, app_name, window_name, focused, device_name, capture_trigger) "
                "VALUES (1, '2026-03-15 18:25:55', 'Mail', 'Inbox', 1, 'monitor_1', 'click')")
    con.execute("INSERT INTO frames (id, timestamp, app_name, window_name, focused, device_name, capture_trigger) "
                "VALUES (2, '2026-03-15T18:26:55.5+00:00', 'Mail', 'Inbox', 1, 'monitor_1', 'click')")
    con.execute("INSERT INTO ui_events (timestamp, event_type, x, y, button, frame_id) "
                "VALUES ('2026-03-15 18:25:56', 'click', 1, 2, 0, 1)")
    con.commit()
    con.close()
    code, out, _ = run(capsys, ["import", "screenpipe", str(db), "--home", str(tmp_path / "h"), "--tz", "Asia/Tokyo"])
    assert code == 0
    line = next(x for x in out.splitlines() if "carry no zone" in x)
    assert line.split()[0] == "2" and line.endswith("time stamps carry no zone: read as UTC (what screenpipe writes)")
    assert landed_stamps(tmp_path / "h")[0] == parse_ts("2026-03-15T18:25:55Z")


def test_a_copy_whose_newest_event_is_old_lands_and_hints_at_the_wal(tmp_path: Path, capsys) -> None:
    import os

    live = tmp_path / "live"
    live.mkdir()
    con = _running_server_db(live / "sqlite.db")
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # these events reached the main file ...
        copy = tmp_path / "copy"
        copy.mkdir()
        shutil.copy(live / "sqlite.db", copy / "sqlite.db")
        # ... and the copy was made two days after its newest event (newer ones stayed in the -wal)
        newest = parse_ts("2026-03-15T09:19:50Z") / 1e6
        os.utime(copy / "sqlite.db", (newest + 2 * 86400, newest + 2 * 86400))
        code, out, _ = run(capsys, ["import", "activitywatch", str(copy / "sqlite.db"),
                                    "--home", str(tmp_path / "h"), "--tz", "UTC"])
        assert code == 0
        assert "holds no events of the day before it was last written and there is no sqlite.db-wal" in out
        assert out.index("no sqlite.db-wal") > out.index("landed")  # after the table
        os.utime(copy / "sqlite.db", (newest + 3600, newest + 3600))  # copied an hour after: no hint
        code, out, _ = run(capsys, ["import", "activitywatch", str(copy / "sqlite.db"), "--home", str(tmp_path / "h")])
        assert code == 0 and "-wal" not in out
    finally:
        con.close()
