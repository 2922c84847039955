"""`af forget` (issue 41): a thin command over EventLog.forget, on a folder imported from a
synthetic screenpipe database through `af import`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from af_pipeline.interfaces import cli
from capture.home import Home
from capture.log import EventLog
from capture.synth import generate

TZ = "Europe/Paris"
DAY = "2026-06-01"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, Path]:
    """(data folder, the screenpipe database it was imported from)."""
    root = tmp_path_factory.mktemp("forget-cli")
    generate(2, 11, root / "src", start_day=DAY, tz=TZ)
    home = root / "home"
    Home(home).init(tz=TZ)
    assert cli.main(["import", "screenpipe", str(root / "src" / "screenpipe.sqlite"), "--home", str(home)]) == 0
    return home, root / "src" / "screenpipe.sqlite"


@pytest.fixture
def home(imported, tmp_path) -> Path:
    shutil.copytree(imported[0], tmp_path / "home")
    return tmp_path / "home"


def _json(capsys, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = cli.main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_dry_run_shows_what_would_go_and_changes_nothing(home, capsys):
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    code = cli.main(["forget", "--app", "Slack", "--dry-run", "--home", str(home)])
    out = capsys.readouterr().out
    assert code == 0 and "rows removed:" in out and "frames affected:" in out and "dry run: nothing changed" in out
    assert f"{DAY}:" in out
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before


def test_forget_a_range_then_reimport_lands_nothing_forgotten(imported, home, capsys):
    code, done = _json(capsys, "forget", "--from", f"{DAY} 10:00", "--to", f"{DAY} 11:00", "--yes",
                       "--home", str(home))
    assert code == 0 and done["forgotten"] and done["days"] == [DAY] and done["rows"][DAY]["snapshots"] > 0
    assert cli.main(["log", "verify", "--home", str(home)]) == 0
    log = EventLog(Home(home))
    lo = 1780300800000000  # 2026-06-01 10:00 in Paris (UTC+2)
    assert not [s for s in log.read_day(DAY).snapshots if lo <= s.ts_us < lo + 3_600_000_000]
    # the same database again, read whole (no watermark short-cut): nothing forgotten lands
    (home / "log" / "watermarks.json").unlink(missing_ok=True)
    code, report = _json(capsys, "import", "screenpipe", str(imported[1]), "--home", str(home))
    assert code == 0 and sum(report["landed"].values()) == 0
    assert not [s for s in EventLog(Home(home)).read_day(DAY).snapshots if lo <= s.ts_us < lo + 3_600_000_000]


def test_reimport_says_how_many_rows_it_skipped_as_forgotten(imported, home, capsys):
    assert cli.main(["forget", "--site", "wikipedia.org", "--yes", "--home", str(home)]) == 0
    # a watermark lets an unchanged source be answered without reading it: drop it to re-read
    (home / "log" / "watermarks.json").unlink(missing_ok=True)
    capsys.readouterr()
    assert cli.main(["import", "screenpipe", str(imported[1]), "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "rows skipped: forgotten" in out


def test_typed_text_and_older_than_and_retention_setting(home, capsys):
    code, done = _json(capsys, "forget", "--typed-text", "--day", DAY, "--yes", "--home", str(home))
    assert code == 0 and done["typed_text_blanked"][DAY] > 0
    assert not [i for i in EventLog(Home(home)).read_day(DAY).inputs if i.text]
    settings = json.loads((home / "af.json").read_text())
    (home / "af.json").write_text(json.dumps({**settings, "retention_days": 30}))
    code, plan = _json(capsys, "forget", "--older-than", "--dry-run", "--home", str(home))
    assert code == 0 and plan["selection"] == "retention" and plan["days"] == [DAY, "2026-06-02"]
    code, done = _json(capsys, "forget", "--older-than", "30", "--yes", "--home", str(home))
    assert code == 0 and done["forgotten"]
    log = EventLog(Home(home))
    assert all(sum(d.counts.values()) == 0 for d in log.days())
    assert log.verify().ok


@pytest.mark.parametrize("argv, words", [
    (["--from", "yesterday"], "is not a time"),
    (["--from", f"{DAY} 12:00", "--to", f"{DAY} 11:00"], "after its start"),
    (["--title", "(["], "not a regular expression"),
    (["--older-than", "zero"], "whole number of days"),
    ([], "say what to forget"),
    (["--app", "Slack"], "add --yes"),
])
def test_bad_input_exits_2_with_a_sentence(home, capsys, argv, words):
    assert cli.main(["forget", *argv, "--home", str(home)]) == 2
    assert words in capsys.readouterr().err


def test_reimporting_an_activitywatch_export_lands_nothing_forgotten_and_says_how_much(tmp_path, capsys):
    """A Windows day exported from ActivityWatch (tests/aw_windows_day.py), an app forgotten: the
    same export imported again lands none of its events and says how many rows it skipped as
    forgotten; a later export in which the app's open event grew lands nothing of it either."""
    import aw_windows_day as aw

    data = aw.export()
    window = data["buckets"][f"aw-watcher-window_{aw.HOST}"]
    app = window["events"][0]["data"]["app"]  # the newest event's app: the event a later export has grown
    export = tmp_path / "aw-export.json"
    export.write_text(json.dumps(data))
    home = tmp_path / "home"
    Home(home).init(tz="UTC")
    code, first = _json(capsys, "import", "activitywatch", str(export), "--home", str(home), "--quiet")
    events = sum(1 for e in window["events"] if e["data"]["app"] == app)
    assert code == 0 and first["landed"]["snapshots"] == len(window["events"]) and events > 1

    def rows_of_app() -> list:
        return [s for s in EventLog(Home(home)).read_day(aw.DAY).snapshots if s.app == app]

    assert len(rows_of_app()) == events
    code, done = _json(capsys, "forget", "--app", app, "--yes", "--home", str(home))
    assert code == 0 and done["rows"] == {aw.DAY: {"snapshots": events}} and not rows_of_app()
    left = EventLog(Home(home)).read_day(aw.DAY)

    capsys.readouterr()
    assert cli.main(["import", "activitywatch", str(export), "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert f"{events:,} rows skipped: forgotten" in out
    again = EventLog(Home(home)).read_day(aw.DAY)
    assert again.snapshots == left.snapshots and again.presence == left.presence and not rows_of_app()

    window["events"][0]["duration"] += 900  # still open when exported later: it grew in place
    grown = tmp_path / "aw-export-later.json"
    grown.write_text(json.dumps(data))
    code, later = _json(capsys, "import", "activitywatch", str(grown), "--home", str(home), "--quiet")
    assert code == 0 and sum(later["landed"].values()) == 0 and later["forgotten"] == events
    assert not rows_of_app() and not [q for q in EventLog(Home(home)).quarantine_rows() if app in json.dumps(q)]
    assert cli.main(["log", "verify", "--home", str(home)]) == 0


def test_af_sync_of_the_same_screenpipe_database_lands_nothing_forgotten(imported, home, capsys):
    """`af sync` follows the database the folder was imported from: its pass reads the rows again
    and lands none of the forgotten app's (issue 41: sync never brings forgotten rows back)."""
    assert cli.main(["forget", "--app", "Slack", "--yes", "--home", str(home)]) == 0
    log = EventLog(Home(home))
    assert not [s for s in log.read_day(DAY).snapshots if s.app == "Slack"]
    capsys.readouterr()
    code = cli.main(["sync", "screenpipe", str(imported[1]), "--home", str(home), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert report["landed"] == 0 and report["forgotten"] > 0, report
    assert not [s for s in EventLog(Home(home)).read_day(DAY).snapshots if s.app == "Slack"]
    assert cli.main(["log", "verify", "--home", str(home)]) == 0
