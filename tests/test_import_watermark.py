"""The source watermark of `af import screenpipe`: an unchanged database is answered without being
read, one that grew at its end is read from the watermark on, any other change is read whole."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.interfaces.cli import main
from capture.home import Home
from capture.log import EventLog
from capture.screenpipe_schema import CURRENT_DDL


def add_rows(path: Path, lo: int, hi: int) -> None:
    """Frames lo..hi-1 (one capture every 7 minutes from 2026-03-10 08:00 UTC), a click on each,
    and two accessibility elements per frame, written the way screenpipe writes them."""
    new = not path.exists()
    con = sqlite3.connect(path)
    if new:
        con.execute("PRAGMA journal_mode=WAL")
        con.executescript(CURRENT_DDL)
    for i in range(lo, hi):
        minutes = 8 * 60 + 7 * i
        ts = f"2026-03-{10 + minutes // 1440:02d}T{minutes % 1440 // 60:02d}:{minutes % 60:02d}:00.250000+00:00"
        con.execute("INSERT INTO frames (id, timestamp, app_name, window_name, focused, device_name, "
                    "capture_trigger) VALUES (?, ?, ?, ?, 1, 'monitor_1', 'click')",
                    (i, ts, "Mail" if i % 3 else "Slack", f"w{i}"))
        con.execute("INSERT INTO ui_events (timestamp, event_type, x, y, button, frame_id) "
                    "VALUES (?, 'click', 10, 20, 0, ?)", (ts, i))
        con.execute("INSERT INTO elements (frame_id, source, role, text, parent_id, depth, left_bound, top_bound, "
                    "width_bound, height_bound) VALUES (?, 'accessibility', 'AXWindow', ?, NULL, 0, 0, 0, 1, 1)",
                    (i, f"w{i}"))
        root = con.execute("SELECT last_insert_rowid()").fetchone()[0]
        con.execute("INSERT INTO elements (frame_id, source, role, text, parent_id, depth, left_bound, top_bound, "
                    "width_bound, height_bound) VALUES (?, 'accessibility', 'AXButton', 'Send', ?, 1, 0.1, 0.1, "
                    "0.2, 0.05)", (i, root))
    con.commit()
    con.close()


def run(capsys, db: Path, home: Path) -> dict:
    assert main(["import", "screenpipe", str(db), "--home", str(home), "--tz", "Europe/Paris", "--json",
                 "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def log_rows(home: Path) -> dict[str, list]:
    """Every row of the log, by day (what a reader sees)."""
    log = EventLog(Home(home))
    out = {}
    for d in log.days():
        cap = log.read_day(d.day)
        out[d.day] = [cap.snapshots, cap.inputs, cap.elements, cap.presence, cap.streams]
    return out


def log_files(home: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted((home / "log").rglob("*")) if p.is_file() and p.name != ".lock"}  # the lock names its holder


def test_an_unchanged_source_is_not_read(tmp_path: Path, capsys) -> None:
    db = tmp_path / "db.sqlite"
    add_rows(db, 1, 101)
    home = tmp_path / "home"
    first = run(capsys, db, home)
    assert first["landed"]["snapshots"] == 100 and "unchanged" not in first
    # A change in the middle of the history (below the hashed tail; no recorder does this) would be
    # quarantined by a full read: it is not, so the second import did not read the database.
    con = sqlite3.connect(db)
    con.execute("UPDATE frames SET timestamp = 'garbage' WHERE id = 5")
    con.commit()
    con.close()
    files = log_files(home)
    again = run(capsys, db, home)
    assert again["unchanged"] is True and again["rows_read"] == 0
    assert sum(again["landed"].values()) == 0
    assert again["skipped"] == sum(first["read"].values()) == 100 + 100 + 200 + 1
    assert "has not changed since it was last imported" in again["message"]
    assert log_files(home) == files  # nothing written, not even the watermark
    # the table output says it in a sentence, and exits 0
    assert main(["import", "screenpipe", str(db), "--home", str(home), "--quiet"]) == 0
    assert "nothing was read" in capsys.readouterr().out


def test_a_grown_source_is_read_from_its_watermark(tmp_path: Path, capsys) -> None:
    db = tmp_path / "db.sqlite"
    add_rows(db, 1, 301)
    home = tmp_path / "home"
    run(capsys, db, home)
    add_rows(db, 301, 341)
    grown = run(capsys, db, home)
    assert "unchanged" not in grown
    assert grown["landed"]["snapshots"] == 40 and grown["landed"]["inputs"] == 40
    assert grown["landed"]["elements"] == 80
    # read from the watermark less the overlap (200 frames), not the whole history (340)
    assert grown["read"]["snapshots"] < 340
    assert grown["quarantined"] == 0
    # the log holds what one import of the grown database gives
    fresh = tmp_path / "fresh"
    once = run(capsys, db, fresh)
    assert log_rows(home) == log_rows(fresh)
    # and the grown import's watermark answers the next one
    again = run(capsys, db, home)
    assert again["unchanged"] is True and again["skipped"] == sum(once["read"].values())


def test_a_changed_tail_is_read_whole(tmp_path: Path, capsys) -> None:
    db = tmp_path / "db.sqlite"
    add_rows(db, 1, 41)
    home = tmp_path / "home"
    first = run(capsys, db, home)
    con = sqlite3.connect(db)  # the newest frame rewritten: not the database the watermark saw
    con.execute("UPDATE frames SET window_name = 'renamed' WHERE id = 40")
    con.commit()
    con.close()
    again = run(capsys, db, home)
    assert "unchanged" not in again
    assert again["read"] == first["read"]  # read whole
    assert again["quarantine_reasons"] == {
        "conflicts with the snapshots row of the same ref already in the log (differs in window); "
        "the logged row is kept": 1}


def test_another_database_at_the_same_path_is_read_whole(tmp_path: Path, capsys) -> None:
    db = tmp_path / "db.sqlite"
    add_rows(db, 1, 41)
    home = tmp_path / "home"
    run(capsys, db, home)
    copy = tmp_path / "copy.sqlite"
    shutil.copy(db, copy)
    db.unlink()
    add_rows(db, 1, 31)  # the same first frame (same identity), a different end
    again = run(capsys, db, home)
    assert "unchanged" not in again and again["read"]["snapshots"] == 30
    assert sum(again["landed"].values()) == 0  # its rows are the old file's: already in the log


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=2, max_value=260), min_size=1, max_size=3, unique=True))
def test_importing_as_it_grows_lands_what_one_import_lands(tmp_path_factory, capsys, cuts: list[int]) -> None:
    """Rule: however a database grew between imports, the log ends as one import of it leaves it."""
    tmp = tmp_path_factory.mktemp("grow")
    db, home = tmp / "db.sqlite", tmp / "home"
    lo = 1
    for cut in [*sorted(cuts), 261]:
        add_rows(db, lo, cut)
        run(capsys, db, home)
        lo = cut
    run(capsys, db, tmp / "once")
    assert log_rows(home) == log_rows(tmp / "once")


def test_ui_events_with_bad_utf8_are_read_once_and_repaired(tmp_path: Path) -> None:
    """ui_events are read with the strict decoder first; text that is not UTF-8 makes the pass run
    again with the repairing one, and nothing of the first attempt stays behind."""
    from capture.importers.screenpipe import read_screenpipe

    db = tmp_path / "db.sqlite"
    add_rows(db, 1, 3001)  # 3000 captures over 15 days
    con = sqlite3.connect(db)
    con.execute("UPDATE ui_events SET window_title = CAST(X'436166e9206d656e75' AS TEXT) WHERE id = 2500")
    con.commit()
    con.close()
    b = read_screenpipe(db, tz="UTC")
    assert len(b.inputs) == 3000 and len({e.ref for e in b.inputs}) == 3000
    assert [e.window for e in b.inputs if e.window] == ["Caf\ufffd menu"]
    assert b.notes["ui_events.window_title: invalid UTF-8 replaced with U+FFFD"] == 1
    assert b.quarantined == []
