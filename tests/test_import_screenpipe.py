"""screenpipe importer: both schema eras, WAL, read-only proof, bad input, screen sizes."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture.errors import UserError
from capture.importers.common import open_sqlite_readonly
from capture.importers.screenpipe import read_screenpipe
from capture.screenpipe_schema import CLIPBOARD_CODES, CURRENT_DDL, LEGACY_DDL
from capture.timeutil import parse_ts

T0 = "2026-03-15T18:25:55.123456+00:00"


def make_db(path: Path, ddl: str, frames=(), ui=(), elements=(), accessibility=(), wal: bool = False) -> Path:
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    con.executescript(ddl)
    _insert(con, "frames", frames)
    _insert(con, "ui_events", ui)
    _insert(con, "elements", elements)
    _insert(con, "accessibility", accessibility)
    con.commit()
    con.close()
    return path


def _insert(con: sqlite3.Connection, table: str, rows) -> None:
    for row in rows:
        cols = ", ".join(row)
        marks = ", ".join("?" * len(row))
        con.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(row.values()))


def tree(*children, role="AXWindow", name="Mail", w=1.0, h=1.0):
    return {"role": role, "name": name, "bounds": {"left": 0, "top": 0, "width": w, "height": h},
            "children": list(children)}


@pytest.fixture
def current_db(tmp_path: Path) -> Path:
    send = tree(role="AXButton", name="Send", w=0.2, h=0.1)
    frames = [
        dict(id=1, timestamp="2026-03-15T18:25:55.123456+00:00", app_name="Mail", window_name="Inbox",
             focused=1, device_name="monitor_1", capture_trigger="click",
             accessibility_tree_json=json.dumps(tree(send))),
        dict(id=2, timestamp="2026-03-15 18:26:10", app_name="Google Chrome", window_name="GitHub",
             focused=1, browser_url="https://github.com/x/y", device_name="monitor_2", capture_trigger="app_switch"),
        dict(id=3, timestamp="2026-03-15T18:26:40Z", app_name="Google Chrome", window_name="GitHub",
             focused=1, browser_url="https://github.com/x/y", device_name="", capture_trigger="idle"),
    ]
    ui = [
        dict(id=1, timestamp="2026-03-15T18:25:55.200000+00:00", event_type="click", x=400, y=300, button=0,
             element_role="AXButton", element_name="Send",
             element_bounds=json.dumps({"left": 302.4, "top": 98.2, "width": 302.4, "height": 98.2}), frame_id=1),
        dict(id=2, timestamp="2026-03-15T18:26:09.5Z", event_type="app_switch", text_content="Google Chrome",
             app_name="Mail", frame_id=2),
        dict(id=3, timestamp="2026-03-15T18:26:11.1Z", event_type="clipboard",
             modifiers=CLIPBOARD_CODES["copy"], text_content="secret snippet"),
        dict(id=4, timestamp="2026-03-15T18:26:12.1Z", event_type="clipboard", modifiers=120, frame_id=2),
        dict(id=5, timestamp="2026-03-15T18:26:13.1Z", event_type="clipboard", modifiers=118, frame_id=2),
        dict(id=6, timestamp="2026-03-15T18:26:14.1Z", event_type="text", text_content="hello", frame_id=2),
        dict(id=7, timestamp="2026-03-15T18:26:15.1Z", event_type="click", x=5, y=6, button=1, frame_id=99),
        dict(id=8, timestamp="2026-03-15T18:26:16.1Z", event_type="wiggle"),
    ]
    elements = [
        dict(id=10, frame_id=2, source="accessibility", role="AXLink", text="Pull requests", depth=0,
             left_bound=0.1, top_bound=0.05, width_bound=0.08, height_bound=0.02),
        dict(id=11, frame_id=2, source="ocr", text="README.md", parent_id=10, depth=1,
             left_bound=0.2, top_bound=0.3, width_bound=0.1, height_bound=0.02),
        dict(id=12, frame_id=77, source="ocr", text="orphan"),
    ]
    return make_db(tmp_path / "db.sqlite", CURRENT_DDL, frames, ui, elements)


def test_current_era_maps_frames_inputs_elements(current_db: Path) -> None:
    b = read_screenpipe(current_db)
    assert b.recorder == "screenpipe" and b.source_id.startswith("screenpipe:db.sqlite:")
    snaps = {s.source_frame_id: s for s in b.snapshots}
    assert [snaps[k].ts_us for k in ("1", "2", "3")] == [
        parse_ts("2026-03-15T18:25:55.123456Z"), parse_ts("2026-03-15T18:26:10Z"), parse_ts("2026-03-15T18:26:40Z")]
    assert snaps["2"].stream == "monitor_2" and snaps["3"].stream == "monitor_1"  # '' -> monitor_1
    assert snaps["3"].heartbeat and not snaps["2"].heartbeat and snaps["2"].trigger == "app_switch"
    assert snaps["2"].url == "https://github.com/x/y"
    assert snaps["1"].ref == f"{b.source_id}:frames:1"

    ev = {e.ref.rsplit(":", 1)[1]: e for e in b.inputs}
    assert ev["1"].kind == "click" and ev["1"].button == "left" and ev["1"].stream == "monitor_1"
    assert ev["1"].element_name == "Send" and ev["1"].element_role == "AXButton"
    assert json.loads(ev["1"].element_bounds) == {"left": 302.4, "top": 98.2, "width": 302.4, "height": 98.2}
    assert ev["2"].kind == "app_switch" and ev["2"].app == "Google Chrome" and ev["2"].text is None
    assert ev["2"].stream == "monitor_2"
    assert [ev[k].clipboard_op for k in ("3", "4", "5")] == ["copy", "cut", "paste"]
    assert ev["3"].stream is None and ev["3"].modifiers is None and ev["3"].text == "secret snippet"
    assert ev["6"].text == "hello"
    assert ev["7"].button == "right" and ev["7"].stream is None  # frame 99 does not exist
    assert "8" not in ev
    assert any(q.row == "ui_events id=8" and q.reason == "unknown event type" for q in b.quarantined)

    by_ref = {e.ref: e for e in b.elements}
    tree_nodes = [e for e in b.elements if ":tree:" in e.ref]
    assert [(e.role, e.text, e.depth) for e in tree_nodes] == [("AXWindow", "Mail", 0), ("AXButton", "Send", 1)]
    assert tree_nodes[1].parent_ref == tree_nodes[0].ref and tree_nodes[1].width == 0.2
    child = by_ref[f"{b.source_id}:elements:11"]
    assert child.parent_ref == f"{b.source_id}:elements:10" and child.source == "ocr"
    assert child.ts_us == snaps["2"].ts_us and child.snapshot_frame_id == "2"
    assert any(q.row == "elements frame_id=77 (1 rows)" for q in b.quarantined)

    # Screen size: 302.4 px / 0.2 and 98.2 px / 0.1 of the same "Send" button.
    sizes = {(s.stream, s.width_px, s.height_px) for s in b.streams}
    assert ("monitor_1", 1512, 982) in sizes
    assert ("monitor_2", None, None) in sizes


def test_current_era_keeps_every_capture_of_the_same_second(tmp_path: Path) -> None:
    """Second-resolution timestamps: two capture events in one second are two snapshots."""
    frames = [
        dict(id=1, timestamp="2026-06-01 07:33:34", app_name="Chrome", window_name="SO", focused=1,
             device_name="monitor_1", capture_trigger="typing"),
        dict(id=2, timestamp="2026-06-01 07:33:34", app_name="Chrome", window_name="SO", focused=1,
             device_name="monitor_1", capture_trigger="click"),
        # identical to 2, but a one-second clock cannot tell a repeat from a second click capture
        dict(id=3, timestamp="2026-06-01 07:33:34", app_name="Chrome", window_name="SO", focused=1,
             device_name="monitor_1", capture_trigger="click"),
        dict(id=4, timestamp="2026-06-01 07:33:35.25", app_name="Chrome", window_name="SO", focused=1,
             device_name="monitor_1", capture_trigger="click"),
        dict(id=5, timestamp="2026-06-01 07:33:35.25", app_name="Chrome", window_name="SO", focused=1,
             device_name="monitor_1", capture_trigger="click"),  # a sub-second repeat: a duplicate
    ]
    b = read_screenpipe(make_db(tmp_path / "db.sqlite", CURRENT_DDL, frames))
    assert [(s.source_frame_id, s.trigger) for s in b.snapshots] == [
        ("1", "typing"), ("2", "click"), ("3", "click"), ("4", "click")]
    assert b.notes == {"frames: duplicate rows skipped (identical apart from the id)": 1,
                       "time stamps carry no zone: read as UTC (what screenpipe writes)": 5}


def test_screen_override_and_per_day_streams(current_db: Path) -> None:
    b = read_screenpipe(current_db, screens={"monitor_2": (2560, 1440)}, tz="Asia/Tokyo")
    m2 = [s for s in b.streams if s.stream == "monitor_2"]
    assert [(s.width_px, s.height_px) for s in m2] == [(2560, 1440)]
    # 18:26 UTC is already the next day in Tokyo: the stream row carries the local day.
    assert m2[0].ref.endswith(":monitor_2:2026-03-16")


def test_source_id_is_stable_and_import_is_deterministic(current_db: Path, tmp_path: Path) -> None:
    a, b = read_screenpipe(current_db), read_screenpipe(current_db)
    assert a.source_id == b.source_id
    assert a.snapshots == b.snapshots and a.inputs == b.inputs and a.elements == b.elements
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "db.sqlite").write_bytes(current_db.read_bytes())
    assert read_screenpipe(moved / "db.sqlite").source_id == a.source_id
    assert read_screenpipe(moved).source_id == a.source_id  # the ~/.screenpipe folder works too


def test_legacy_era_keeps_the_focused_row_of_each_cycle(tmp_path: Path) -> None:
    frames = [
        # cycle 1 on the default device: three visible windows, Slack is focused
        dict(id=1, timestamp="2025-11-02 09:00:00", app_name="Finder", window_name="Home", focused=0),
        dict(id=2, timestamp="2025-11-02 09:00:00", app_name="Slack", window_name="general", focused=1),
        dict(id=3, timestamp="2025-11-02 09:00:00", app_name="Mail", window_name="Inbox", focused=0),
        # cycle 2: nothing focused -> no snapshot, rows quarantined
        dict(id=4, timestamp="2025-11-02 09:00:05", app_name="Finder", window_name="Home", focused=0),
        dict(id=5, timestamp="2025-11-02 09:00:05", app_name="Mail", window_name="Inbox", focused=0),
        # cycle 3: two monitors at the same instant
        dict(id=6, timestamp="2025-11-02 09:00:10", app_name="Slack", focused=1, device_name="monitor_1"),
        dict(id=7, timestamp="2025-11-02 09:00:10", app_name="Xcode", focused=1, device_name="monitor_2"),
        # focus not recorded: one window is kept, several are ambiguous
        dict(id=8, timestamp="2025-11-02 09:00:15", app_name="Notes", focused=None),
        dict(id=9, timestamp="2025-11-02 09:00:20", app_name="Notes", focused=None),
        dict(id=10, timestamp="2025-11-02 09:00:20", app_name="Mail", focused=None),
    ]
    ui = [dict(id=1, timestamp="2025-11-02 09:00:01", event_type="key", key_code=38, modifiers=0, text_content="j",
               app_name="Slack")]
    acc = [
        dict(id=1, timestamp="2025-11-02 09:00:01", app_name="Slack", text_content="general: hello team"),
        dict(id=2, timestamp="2025-11-02 10:00:00", app_name="Slack", text_content="far from any snapshot"),
    ]
    db = make_db(tmp_path / "old.sqlite", LEGACY_DDL, frames, ui, accessibility=acc)
    b = read_screenpipe(db)
    assert [(s.source_frame_id, s.app, s.stream) for s in b.snapshots] == [
        ("2", "Slack", "monitor_1"), ("6", "Slack", "monitor_1"), ("7", "Xcode", "monitor_2"),
        ("8", "Notes", "monitor_1")]
    assert all(s.trigger is None and not s.heartbeat for s in b.snapshots)
    no_focus = sorted(q.row for q in b.quarantined if q.reason == "capture cycle without a focused window")
    assert no_focus == ["frames id=10", "frames id=4", "frames id=5", "frames id=9"]
    assert b.notes["frames: background windows of a capture cycle (not the foreground; not imported)"] == 2
    [key] = b.inputs
    assert key.kind == "key" and key.text == "j" and key.stream is None and key.element_bounds is None
    [text] = b.elements
    assert text.snapshot_frame_id == "2" and text.text == "general: hello team" and text.role is None
    assert any(q.row == "accessibility id=2" for q in b.quarantined)


def _stat(p: Path) -> tuple[bytes, int]:
    return p.read_bytes(), p.stat().st_mtime_ns


def test_wal_database_is_read_through_its_wal_and_never_changed(tmp_path: Path) -> None:
    db = make_db(tmp_path / "db.sqlite", CURRENT_DDL, wal=True,
                 frames=[dict(id=1, timestamp=T0, app_name="Mail", focused=1)])
    # A running recorder: its connection is open and the newest rows live only in the -wal file.
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO frames (id, timestamp, app_name, focused) VALUES (2, ?, 'Slack', 1)",
                   ("2026-03-15T18:26:00Z",))
    writer.commit()
    wal = Path(str(db) + "-wal")
    assert wal.stat().st_size > 0
    before = {p.name: _stat(p) for p in (db, wal)}
    try:
        b = read_screenpipe(db)
        assert [s.app for s in b.snapshots] == ["Mail", "Slack"]  # row 2 exists only in the WAL
        con = open_sqlite_readonly(db, "test")
        with pytest.raises(sqlite3.OperationalError, match="readonly|read-only"):
            con.execute("INSERT INTO frames (id, timestamp, app_name) VALUES (3, ?, 'x')", (T0,))
        with pytest.raises(sqlite3.OperationalError):
            con.execute("DELETE FROM frames")
        con.close()
        # Compared while the recorder is still open (its own close checkpoints the WAL).
        assert {p.name: _stat(p) for p in (db, wal)} == before
    finally:
        writer.close()


def test_the_importers_own_connection_refuses_writes(tmp_path: Path, monkeypatch) -> None:
    import capture.importers.screenpipe as sp

    db = make_db(tmp_path / "db.sqlite", CURRENT_DDL, frames=[dict(id=1, timestamp=T0, app_name="Mail", focused=1)])
    refused: list[str] = []

    def spy(path, what):
        con = open_sqlite_readonly(path, what)
        for sql in ("INSERT INTO frames (id, timestamp, app_name) VALUES (9, '2026-01-01', 'x')",
                    "UPDATE frames SET app_name = 'x'", "CREATE TABLE t (x)", "PRAGMA user_version = 7"):
            try:
                con.execute(sql)
            except sqlite3.OperationalError as exc:
                refused.append(str(exc))
        return con

    monkeypatch.setattr(sp, "open_sqlite_readonly", spy)
    before = _stat(db)
    assert [s.app for s in sp.read_screenpipe(db).snapshots] == ["Mail"]
    assert len(refused) == 4
    assert _stat(db) == before


def test_reading_does_not_change_or_create_files(tmp_path: Path) -> None:
    db = make_db(tmp_path / "db.sqlite", CURRENT_DDL, wal=True,
                 frames=[dict(id=1, timestamp=T0, app_name="Mail", focused=1)])
    names_before = sorted(os.listdir(tmp_path))
    before = _stat(db)
    read_screenpipe(db)
    read_screenpipe(db)
    assert _stat(db) == before
    assert sorted(os.listdir(tmp_path)) == names_before  # no stray -wal / -shm beside the user's db


def test_wal_files_unchanged_by_import(tmp_path: Path) -> None:
    """A recorder that stopped without checkpointing: db + wal on disk, bytes and mtimes kept."""
    db = make_db(tmp_path / "db.sqlite", CURRENT_DDL, wal=True,
                 frames=[dict(id=1, timestamp=T0, app_name="Mail", focused=1)])
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO frames (id, timestamp, app_name, focused) VALUES (2, ?, 'Slack', 1)", ("2026-03-15T18:27:00Z",))
    writer.commit()
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    for suffix in ("", "-wal"):
        (frozen / f"db.sqlite{suffix}").write_bytes(Path(f"{db}{suffix}").read_bytes())
    writer.close()
    copy, copy_wal = frozen / "db.sqlite", frozen / "db.sqlite-wal"
    before = (_stat(copy), _stat(copy_wal))
    assert len(read_screenpipe(copy).snapshots) == 2
    assert (_stat(copy), _stat(copy_wal)) == before


def test_wrong_format_and_unreadable_files_are_user_errors(tmp_path: Path) -> None:
    js = tmp_path / "aw-export.json"
    js.write_text('{"buckets": {}}')
    with pytest.raises(UserError, match=r"aw-export.json is not an SQLite database.*activitywatch"):
        read_screenpipe(js)
    with pytest.raises(UserError, match="no such file"):
        read_screenpipe(tmp_path / "missing.sqlite")
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(UserError, match="is empty"):
        read_screenpipe(empty)
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"SQLite format 3\x00" + os.urandom(3000))
    with pytest.raises(UserError, match="corrupt.sqlite"):
        read_screenpipe(corrupt)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE notes (id INTEGER)").connection.commit()
    with pytest.raises(UserError, match="no frames table"):
        read_screenpipe(other)


def test_truncated_database_is_a_user_error(tmp_path: Path) -> None:
    rows = [dict(id=i, timestamp=T0, app_name="A" * 500, focused=1) for i in range(1, 400)]
    db = make_db(tmp_path / "db.sqlite", CURRENT_DDL, rows)
    half = tmp_path / "half.sqlite"
    half.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    with pytest.raises(UserError, match="half.sqlite"):
        read_screenpipe(half)


def test_bad_rows_are_quarantined_or_repaired_with_reasons(tmp_path: Path) -> None:
    frames = [
        dict(id=1, timestamp="yesterday-ish", app_name="Mail", focused=1),
        dict(id=2, timestamp="2026-03-15T18:00:00Z", app_name=None, focused=1),
        dict(id=3, timestamp="2026-03-15T18:00:01Z", app_name="Mail", focused=1,
             window_name=b"Caf\xe9 menu"),  # invalid UTF-8 bytes
        dict(id=4, timestamp="2026-03-15T18:00:02Z", app_name="Mail", window_name="W" * 50_000, focused=1),
        dict(id=5, timestamp="2026-03-15T18:00:03Z", app_name="X" * 5000, focused=1),
        dict(id=6, timestamp="2026-03-15T17:00:00Z", app_name="Mail", focused=1),  # clock went back an hour
        dict(id=7, timestamp="2026-03-15T18:00:05.5Z", app_name="Mail", window_name="dup", focused=1),
        dict(id=8, timestamp="2026-03-15T18:00:05.5Z", app_name="Mail", window_name="dup", focused=1),
        dict(id=9, timestamp="1970-01-01 00:00:00", app_name="Mail", focused=1),
        dict(id=10, timestamp="2026-03-15T18:00:07Z", app_name="Mail", focused=1,
             accessibility_tree_json="{not json"),
        dict(id=11, timestamp="2026-03-15T18:00:08Z", app_name="Mail", focused=1, accessibility_tree_json=""),
    ]
    ui = [
        dict(id=1, timestamp="2026-03-15T18:00:01.5Z", event_type="key", text_content="a"),
        dict(id=2, timestamp="2026-03-15T18:00:01.5Z", event_type="key", text_content="a"),
        dict(id=3, timestamp="not a time", event_type="click"),
        dict(id=4, timestamp="2026-03-15T18:00:02Z", event_type="click", x=1, y=1),
        dict(id=5, timestamp="2026-03-15T18:00:02Z", event_type="click", x=1, y=1),  # a double click at 1 s precision
        dict(id=6, timestamp="2026-03-15T18:00:03.5Z", event_type="clipboard", modifiers=0),
        dict(id=7, timestamp="2026-03-15T18:00:03.6Z", event_type="text", text_content="t" * 100_000),
    ]
    db = make_db(tmp_path / "bad.sqlite", CURRENT_DDL, frames, ui)
    b = read_screenpipe(db)
    q = {(x.row, x.reason) for x in b.quarantined}
    assert ("frames id=1", "unreadable timestamp") in q
    assert ("frames id=2", "frame has no app name") in q
    assert ("frames id=5", "app name longer than 256 characters") in q
    assert ("frames id=9", "unreadable timestamp") in q  # 1970 is a broken clock, not data
    assert ("ui_events id=3", "unreadable timestamp") in q
    assert ("frames id=10 accessibility_tree_json", "accessibility tree is not valid JSON") in q
    assert all(x.source == str(db) for x in b.quarantined)
    snaps = {s.source_frame_id: s for s in b.snapshots}
    assert set(snaps) == {"3", "4", "6", "7", "10", "11"}  # 8 duplicates 7; frame 10 keeps its snapshot
    assert not any("id=11" in x.row for x in b.quarantined)  # an empty tree is no tree, not bad JSON
    assert snaps["3"].window == "Caf\ufffd menu"
    assert len(snaps["4"].window or "") == 1024
    assert b.notes["frames.window_name: invalid UTF-8 replaced with U+FFFD"] == 1
    assert b.notes["frames.window_name: truncated to 1024 characters"] == 1
    assert b.notes["frames: clock went backwards (rows kept; the log sorts them)"] == 1
    assert b.notes["frames: duplicate rows skipped (identical apart from the id)"] == 1
    ev = {e.ref.rsplit(":", 1)[1]: e for e in b.inputs}
    assert set(ev) == {"1", "4", "5", "6", "7"}  # 2 is a duplicate of 1; 4 and 5 are two clicks
    assert ev["6"].clipboard_op is None
    assert len(ev["7"].text or "") == 8192
    # Every row lands in exactly one place: snapshot, quarantine, or a counted note.
    assert len(b.snapshots) + sum(1 for x in b.quarantined if x.row.startswith("frames id=") and
                                  "accessibility" not in x.row) + 1 == len(frames)


cycles = st.lists(
    st.lists(st.tuples(st.sampled_from(["", "monitor_1", "monitor_2"]), st.booleans()), min_size=1, max_size=4),
    min_size=1, max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cycles=cycles)
def test_legacy_rule_one_snapshot_per_cycle_with_a_focused_row(tmp_path_factory, cycles) -> None:
    rows, expect_snaps, expect_quarantine, n = [], 0, 0, 0
    for i, cycle in enumerate(cycles):
        ts = f"2025-11-02 09:{i // 60:02d}:{i % 60:02d}"
        groups: dict[str, list[bool]] = {}
        for device, focused in cycle:
            n += 1
            rows.append(dict(id=n, timestamp=ts, app_name=f"App{n}", focused=int(focused), device_name=device))
            groups.setdefault(device or "monitor_1", []).append(focused)
        expect_snaps += sum(1 for g in groups.values() if any(g))
        expect_quarantine += sum(len(g) for g in groups.values() if not any(g))
    db = make_db(tmp_path_factory.mktemp("legacy") / "db.sqlite", LEGACY_DDL, rows)
    b = read_screenpipe(db)
    assert len(b.snapshots) == expect_snaps
    assert len(b.quarantined) == expect_quarantine
    assert all(s.focused for s in b.snapshots)
    # at most one snapshot per (time, stream)
    assert len({(s.ts_us, s.stream) for s in b.snapshots}) == len(b.snapshots)


def _multi_day_db(path: Path, with_index: bool) -> Path:
    ddl = CURRENT_DDL if with_index else CURRENT_DDL.replace(
        "CREATE INDEX idx_elements_frame ON elements(frame_id);", "")
    frames, elements, ui = [], [], []
    for i in range(1, 13):
        # 22:00 UTC on three days: in Paris that is already the next local day (midnight split)
        ts = f"2026-03-{10 + i % 3:02d}T{22 + i % 2:02d}:{i:02d}:00.5Z"
        frames.append(dict(id=i, timestamp=ts, app_name=f"A{i % 4}", focused=1, device_name=f"monitor_{1 + i % 2}",
                           accessibility_tree_json=json.dumps(tree(tree(role="AXButton", name=f"b{i}")))
                           if i % 4 == 0 else None))
        for k in range(3):
            elements.append(dict(id=100 * i + k, frame_id=i, source="ocr", text=f"t{i}-{k}",
                                 parent_id=100 * i if k else None, depth=min(k, 1)))
        ui.append(dict(id=i, timestamp=ts, event_type="click", x=1, y=2, frame_id=i))
    elements.append(dict(id=9999, frame_id=404, source="ocr", text="orphan"))
    return make_db(path, ddl, frames, ui, elements)


def test_iter_screenpipe_gives_whole_days(tmp_path: Path) -> None:
    from capture.importers.screenpipe import iter_screenpipe
    from capture.timeutil import local_day

    db = _multi_day_db(tmp_path / "db.sqlite", with_index=True)
    chunks = list(iter_screenpipe(db, tz="Europe/Paris"))
    days = []
    for c in chunks:
        kinds = [c.snapshots, c.inputs, c.elements, c.streams]
        chunk_days = {local_day(r.ts_us, "Europe/Paris") for rows in kinds for r in rows}
        assert len(chunk_days) == 1  # one local day per batch, nothing of it elsewhere
        days.append(chunk_days.pop())
    assert days == sorted(set(days)) and len(days) == 4
    whole = read_screenpipe(db, tz="Europe/Paris")
    for kind in ("snapshots", "inputs", "elements", "streams"):
        assert sorted(r.ref for c in chunks for r in c.rows(kind)) == sorted(r.ref for r in whole.rows(kind))
    assert len(whole.elements) == 12 * 3 + 3 * 2  # table rows + tree nodes of frames 4, 8, 12
    assert [q.row for q in whole.quarantined] == ["elements frame_id=404 (1 rows)"]


def test_elements_without_a_frame_index_read_the_same(tmp_path: Path) -> None:
    a = read_screenpipe(_multi_day_db(tmp_path / "a.sqlite", with_index=True), tz="Europe/Paris")
    b = read_screenpipe(_multi_day_db(tmp_path / "b.sqlite", with_index=False), tz="Europe/Paris")
    strip = lambda rows: sorted((r.ref.split(":", 3)[3], r) for r in rows)  # noqa: E731 - source ids differ by file name
    assert [x[0] for x in strip(a.elements)] == [x[0] for x in strip(b.elements)]
    assert [(e.text, e.parent_ref is None, e.ts_us) for _r, e in strip(a.elements)] == [
        (e.text, e.parent_ref is None, e.ts_us) for _r, e in strip(b.elements)]


def _clicks_db(path: Path, screen: tuple[int, int], offset: tuple[int, int] = (0, 0),
               scramble: bool = False) -> Path:
    """Clicks on named buttons whose pixel bounds are rounded to whole pixels, as recorders do."""
    w, h = screen
    frames, ui, elements = [], [], []
    for i in range(1, 25):
        left, top, bw, bh = 0.05 + 0.03 * i, 0.1 + 0.025 * i, 0.06 + 0.004 * (i % 5), 0.035
        frames.append(dict(id=i, timestamp=f"2026-03-15T10:00:{i:02d}.5Z", app_name="App", focused=1,
                           device_name="monitor_2"))
        elements.append(dict(id=i, frame_id=i, source="accessibility", role="AXButton", text=f"B{i}",
                             left_bound=left, top_bound=top, width_bound=bw, height_bound=bh))
        px = {"left": round(left * w) + offset[0], "top": round(top * h) + offset[1],
              "width": round(bw * w), "height": round(bh * h)}
        if scramble:  # the recorder's element does not match the tree's: sizes say nothing
            px["width"], px["height"] = 40 + 37 * (i % 7), 20 + 53 * (i % 3)
        ui.append(dict(id=i, timestamp=f"2026-03-15T10:00:{i:02d}.6Z", event_type="click", x=1, y=1,
                       element_role="AXButton", element_name=f"B{i}", element_bounds=json.dumps(px), frame_id=i))
    return make_db(path, CURRENT_DDL, frames, ui, elements)


def _size(b) -> tuple:
    return {(s.width_px, s.height_px) for s in b.streams}.pop()


def test_screen_size_is_exact_despite_pixel_rounding(tmp_path: Path) -> None:
    assert _size(read_screenpipe(_clicks_db(tmp_path / "a.sqlite", (1512, 982)))) == (1512, 982)
    assert _size(read_screenpipe(_clicks_db(tmp_path / "b.sqlite", (2560, 1440)))) == (2560, 1440)


def test_screen_size_with_offset_positions_falls_back_to_sizes(tmp_path: Path) -> None:
    """A secondary monitor whose pixel positions include its offset: positions are not used."""
    w, h = _size(read_screenpipe(_clicks_db(tmp_path / "c.sqlite", (2560, 1440), offset=(1512, 0))))
    assert abs(w - 2560) <= 0.01 * 2560 and abs(h - 1440) <= 0.015 * 1440


def test_screen_size_is_never_guessed(tmp_path: Path) -> None:
    b = read_screenpipe(_clicks_db(tmp_path / "d.sqlite", (1512, 982), scramble=True))
    assert _size(b) == (None, None)
    assert b.notes["screen size of monitor_2: estimates disagree (left unknown)"] == 1


# ---------------------------------------------------------------------------------------------
# Every era, built from screenpipe's shipped migrations (tests/screenpipe_eras.py)

from datetime import timedelta  # noqa: E402

from screenpipe_eras import BASE, EraDB, Window, sample_tree  # noqa: E402

BG = "frames: background windows of a capture cycle (not the foreground; not imported)"
FROM_ELEMENTS = ("accessibility trees: frames whose nodes came from the elements table "
                 "(their accessibility_tree_json holds the same nodes; not read twice)")
FROM_JSON = "accessibility trees: frames whose nodes came from accessibility_tree_json (no elements rows for them)"
# Focused app of each 10-second cycle; Finder and Slack sit in the background of every cycle.
FOCUS = ["Mail", "Mail", "Code", "Code", "Code", "Mail", "Terminal"]


def _windows(app: str) -> list[Window]:
    others = [Window(a, f"{a} window", False) for a in ("Finder", "Slack") if a != app]
    return [Window(app, f"{app} window", True), *others]


def _dwell_s(snapshots, day: str) -> dict[str, float]:
    from af_pipeline.interfaces.qa.oracle import DuckDBOracle

    oracle = DuckDBOracle()
    try:
        got = oracle.day_from_rows(day, snapshots, "UTC")
    finally:
        oracle.close()
    return {app: us / 1e6 for app, us in sorted(got.app_dwell_us.items()) if us}


# 10 s per cycle; the last cycle of the day earns nothing (nothing after it says how long it lasted).
EXPECTED_S = {"Mail": 30.0, "Code": 30.0}


def _video_era(tmp_path: Path, era: str) -> Path:
    db = EraDB(tmp_path / "db.sqlite", era)
    for i, app in enumerate(FOCUS):
        write = db.cycle_2024 if era == "2024-08" else db.cycle_2025
        write(BASE + timedelta(seconds=10 * i), _windows(app))
    return db.close()


@pytest.mark.parametrize("era", ["2024-08", "2025-02"])
def test_video_eras_credit_the_focused_window_of_each_cycle(tmp_path: Path, era: str) -> None:
    b = read_screenpipe(_video_era(tmp_path, era))
    assert [s.app for s in b.snapshots] == FOCUS
    assert {s.stream for s in b.snapshots} == {"monitor_1"}
    assert _dwell_s(b.snapshots, "2024-08-20") == EXPECTED_S
    assert b.notes[BG] == 2 * len(FOCUS)
    assert b.quarantined == [] and b.elements == []


def _event_era(tmp_path: Path, era: str, n: int = 4) -> Path:
    db = EraDB(tmp_path / "db.sqlite", era)
    day = BASE + timedelta(days=540)
    for i in range(n):
        db.snapshot(day + timedelta(seconds=10 * i), "Arc" if i % 2 else "Xcode", f"w{i}", sample_tree(f"n{i}"),
                    trigger="idle" if i == 3 else "click")
    return db.close()


def test_2026_02_era_rebuilds_parents_from_depth(tmp_path: Path) -> None:
    b = read_screenpipe(_event_era(tmp_path, "2026-02"))
    assert [(s.app, s.heartbeat) for s in b.snapshots] == [("Xcode", False), ("Arc", False), ("Xcode", False),
                                                          ("Arc", True)]
    assert _dwell_s(b.snapshots, "2026-02-11") == {"Xcode": 20.0, "Arc": 10.0}
    assert len(b.elements) == 4 * 5
    first = [e for e in b.elements if e.snapshot_frame_id == "1"]
    by_text = {e.role: e for e in first}
    assert [(e.role, e.depth) for e in first] == [("AXWindow", 0), ("AXGroup", 1), ("AXButton", 2),
                                                  ("AXStaticText", 2), ("AXMenuBar", 0)]
    assert by_text["AXButton"].parent_ref == by_text["AXGroup"].ref
    assert by_text["AXStaticText"].parent_ref == by_text["AXGroup"].ref
    assert by_text["AXGroup"].parent_ref == by_text["AXWindow"].ref
    assert by_text["AXMenuBar"].parent_ref is None and by_text["AXGroup"].text is None
    assert by_text["AXButton"].text == "n0 send" and by_text["AXButton"].width == 0.2
    assert b.notes[FROM_JSON] == 4 and FROM_ELEMENTS not in b.notes


def test_current_era_imports_each_node_once_from_elements(tmp_path: Path) -> None:
    b = read_screenpipe(_event_era(tmp_path, "current"))
    assert len(b.elements) == 4 * 5  # not 40: the tree JSON holds the same nodes as elements
    assert all(":elements:" in e.ref for e in b.elements)
    first = {e.role: e for e in b.elements if e.snapshot_frame_id == "1"}
    assert first["AXButton"].parent_ref == first["AXGroup"].ref and first["AXMenuBar"].parent_ref is None
    assert b.notes[FROM_ELEMENTS] == 4 and FROM_JSON not in b.notes
    assert _dwell_s(b.snapshots, "2026-02-11") == {"Xcode": 20.0, "Arc": 10.0}


def _two_video_eras(path: Path, then: str, copy_2024_to: Path | None = None) -> EraDB:
    """A database started in 2024 layout (day 1), upgraded to 2025 (day 2), then to ``then``;
    ``copy_2024_to`` keeps a copy of it as it was in 2024."""
    import shutil

    db = EraDB(path, "2024-08")
    for i, app in enumerate(FOCUS):
        db.cycle_2024(BASE + timedelta(seconds=10 * i), _windows(app))
    db.con.commit()
    if copy_2024_to is not None:
        shutil.copy(db.path, copy_2024_to)
    db.upgrade("2025-02")
    for i, app in enumerate(FOCUS):
        db.cycle_2025(BASE + timedelta(days=1, seconds=10 * i), _windows(app))
    db.upgrade(then)
    return db


def test_database_upgraded_through_all_migrations(tmp_path: Path) -> None:
    """One file, every era: 2024 rows (names in ocr_text), 2025 rows, 2026-02 trees, current."""
    young = tmp_path / "young" / "db.sqlite"
    young.parent.mkdir()
    db = _two_video_eras(tmp_path / "db.sqlite", "2026-02", young)
    day3 = BASE + timedelta(days=2)
    for i in range(3):
        db.snapshot(day3 + timedelta(seconds=10 * i), "Arc", f"w{i}", sample_tree(f"a{i}"))
    db.upgrade("current")
    assert len(db.applied) == 66
    for i in range(3):
        db.snapshot(day3 + timedelta(seconds=30 + 10 * i), "Xcode", f"x{i}", sample_tree(f"x{i}"))
    b = read_screenpipe(db.close())
    assert _dwell_s(b.snapshots, "2024-08-20") == EXPECTED_S  # not a second for Finder or Slack
    assert _dwell_s(b.snapshots, "2024-08-21") == EXPECTED_S
    assert _dwell_s(b.snapshots, "2024-08-22") == {"Arc": 30.0, "Xcode": 20.0}
    assert b.notes[BG] == 4 * len(FOCUS)
    assert len(b.elements) == 6 * 5
    assert b.notes[FROM_JSON] == 3 and b.notes[FROM_ELEMENTS] == 3
    assert b.quarantined == []
    # grown by a year of rows and upgraded by screenpipe: still the same source
    assert read_screenpipe(young).source_id == b.source_id


def test_source_identity_covers_the_first_frames_content(tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    a, b = EraDB(tmp_path / "a" / "db.sqlite"), EraDB(tmp_path / "b" / "db.sqlite")
    a.snapshot(BASE, "Mail", "Inbox", sample_tree("m"))
    b.snapshot(BASE, "Mail", "Inbox", sample_tree("other text"))  # same id, same time, other screen
    assert read_screenpipe(a.close()).source_id != read_screenpipe(b.close()).source_id


def test_nothing_usable_exits_2_and_reimport_exits_0(tmp_path: Path, capsys) -> None:
    from af_pipeline.interfaces.cli import main

    db = EraDB(tmp_path / "db.sqlite", "2024-08")
    for i in range(3):
        db.cycle_2024(BASE + timedelta(seconds=10 * i), [Window("Finder", "Home", False)])
    home = tmp_path / "home"
    assert main(["import", "screenpipe", str(db.close()), "--home", str(home), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "nothing usable landed" in err and "3 frames: background windows" in err
    ok = EraDB(tmp_path / "ok.sqlite", "2024-08")
    ok.cycle_2024(BASE, _windows("Mail"))
    argv = ["import", "screenpipe", str(ok.close()), "--home", str(home), "--quiet"]
    assert main(argv) == 0
    assert main(argv) == 0  # every row already in the log: success


def test_extreme_numbers_are_quarantined_and_the_rest_lands(tmp_path: Path) -> None:
    frames = [dict(id=1, timestamp=float("inf"), app_name="Mail", focused=1),
              dict(id=2, timestamp="NaN", app_name="Mail", focused=1),  # SQLite stores a NaN REAL as NULL
              dict(id=3, timestamp=10**18 * 9, app_name="Mail", focused=1),
              dict(id=4, timestamp=T0, app_name="Mail", focused=1)]
    ui = [dict(id=1, timestamp=T0, event_type="click", x=10**18, y=1, frame_id=4),
          dict(id=2, timestamp=T0, event_type="key", key_code=-(2**62), frame_id=4),
          dict(id=3, timestamp=T0, event_type="click", x="1e999", y=float("inf"), button=2**40),
          dict(id=4, timestamp=float("-inf"), event_type="click"),
          dict(id=5, timestamp=T0, event_type="click", x=5, y=6, button=0, frame_id=4)]
    elements = [dict(id=1, frame_id=4, source="ocr", text="deep", depth=2**62),
                dict(id=2, frame_id=4, source="ocr", text="ok", depth=0, left_bound=float("nan"))]
    b = read_screenpipe(make_db(tmp_path / "db.sqlite", CURRENT_DDL, frames, ui, elements))
    q = {(x.row, x.reason) for x in b.quarantined}
    assert {("frames id=1", "unreadable timestamp"), ("frames id=2", "unreadable timestamp"),
            ("frames id=3", "unreadable timestamp"), ("ui_events id=1", "number out of range"),
            ("ui_events id=2", "number out of range"), ("ui_events id=3", "number out of range"),
            ("ui_events id=4", "unreadable timestamp"), ("elements id=1", "number out of range")} <= q
    assert [s.source_frame_id for s in b.snapshots] == ["4"]
    assert [e.ref.rsplit(":", 1)[1] for e in b.inputs] == ["5"]
    assert [(e.text, e.left) for e in b.elements] == [("ok", None)]


def test_a_deep_but_valid_tree_is_read_and_cut(tmp_path: Path) -> None:
    deep = '{"role": "AXGroup", "name": "g", "children": [' * 3000 + '{"role": "AXStaticText"}' + "]}" * 3000
    frames = [dict(id=1, timestamp=T0, app_name="Mail", focused=1, accessibility_tree_json=deep)]
    b = read_screenpipe(make_db(tmp_path / "db.sqlite", CURRENT_DDL, frames))
    assert not any("not valid JSON" in q.reason for q in b.quarantined)
    assert len(b.elements) == 257 and max(e.depth or 0 for e in b.elements) == 256
    assert b.notes["accessibility trees: cut at 20000 nodes / depth 256"] == 1


def test_the_independent_oracle_agrees_with_the_importer_on_an_upgraded_database(tmp_path: Path) -> None:
    """The QA oracle reads the screenpipe file itself, in SQL written apart from the importer, and
    decides each row's layout too: on a database upgraded through every era its per-app and
    per-host dwell equals what the importer landed in the log, day by day."""
    from af_pipeline.interfaces.qa import oracle
    from capture.home import Home
    from capture.importers.screenpipe import read_screenpipe as _read
    from capture.log import EventLog

    db = _two_video_eras(tmp_path / "db.sqlite", "current")
    day3 = BASE + timedelta(days=2)
    for i in range(4):
        db.snapshot(day3 + timedelta(seconds=10 * i), "Arc", f"w{i}", sample_tree(f"a{i}"),
                    url="https://github.com/acme/widgets")
    path = db.close()
    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    log = EventLog(home)
    log.append(_read(path, tz="UTC"))
    sp = oracle.ScreenpipeOracle(path)
    try:
        assert sp.layouts() == {"event": 4, "ocr": 3 * len(FOCUS), "video": 3 * len(FOCUS)}
        days = sp.days("UTC")
        assert days == ["2024-08-20", "2024-08-21", "2024-08-22"]
        for day in days:
            ours, theirs = oracle.oracle_log_day(log, day), sp.day(day, "UTC")
            assert oracle.agree(ours, theirs) == [], day
            assert theirs.app_dwell_us
    finally:
        sp.close()


def test_a_pass_read_again_for_bad_text_lands_each_input_once(tmp_path: Path) -> None:
    # Inputs are held packed by day (_DaySpill) until their day lands. A ui_event whose text is
    # not UTF-8 makes the pass start again with the repairing decoder, after thousands of rows
    # were already packed: each must still land once, in id order, and the bad one repaired.
    from capture.importers.screenpipe import SPILL_ROWS

    n = 2 * SPILL_ROWS + 10
    frames = [dict(id=1, timestamp="2026-03-15T08:00:00Z", app_name="Mail", focused=1, device_name="monitor_1")]
    ui = [dict(id=i, timestamp=f"2026-03-15T{8 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.5Z",
               event_type="click", x=i % 500, y=1, window_title=f"W{i % 7}", frame_id=1) for i in range(1, n)]
    ui.append(dict(id=n, timestamp="2026-03-16T09:00:00.5Z", event_type="click", x=3, y=4,
                   window_title=b"Caf\xe9", frame_id=1))  # a second day, and bytes that are not UTF-8
    db = make_db(tmp_path / "db.sqlite", CURRENT_DDL, frames, ui)
    con = sqlite3.connect(db)  # TEXT holding those bytes (what the strict decoder refuses), not a BLOB
    con.execute(f"UPDATE ui_events SET window_title = CAST(window_title AS TEXT) WHERE id = {n}")
    con.commit()
    con.close()
    b = read_screenpipe(db, tz="UTC")
    assert [e.ref.rsplit(":", 1)[1] for e in b.inputs] == [str(i) for i in range(1, n + 1)]
    assert [e.x for e in b.inputs][:600] == [i % 500 for i in range(1, 601)]
    assert b.inputs[-1].window == "Caf\ufffd" and b.inputs[-2].window == f"W{(n - 1) % 7}"
    assert b.notes["ui_events.window_title: invalid UTF-8 replaced with U+FFFD"] == 1
