"""One consistent read per sync pass (issues 36 and 43): screenpipe commits a frame together with
its ui_events and elements; a pass that read `frames` in one snapshot and `ui_events` / `elements`
in later ones landed the events of a frame committed in between with an unknown stream (for good,
on sealed days), and the next pass quarantined their right copies as conflicts ("differs in
stream"). Each pass now reads every table as of one instant."""

from __future__ import annotations

import signal
import sqlite3
import threading
from pathlib import Path

import pytest
from test_faults_source_rewrites import Db, _home, _once, _sync

from capture.importers import screenpipe
from capture.log import EventLog

MAX_FRAMES = 3000  # the writer's bound (a few hundred land in the 12 passes on a laptop)


def _wal(db: Db) -> None:
    db.era.con.commit()
    db.era.con.execute("PRAGMA journal_mode = WAL")  # screenpipe's mode: writers go on while a pass reads


def _inputs(home) -> list:
    log = EventLog(home)
    return [i for d in log.days() for i in log.read_day(d.day).inputs]


def test_a_frame_committed_between_the_passs_queries_is_read_whole_next_time(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    _wal(db)
    db.capture(10)
    seen = db.events()
    _sync(home, db)
    writer = sqlite3.connect(db.path)  # screenpipe: another connection, committing while we read
    writer.create_function("vec_length", 1, lambda blob: len(blob or b"") // 4)
    read_frames = screenpipe._Reader._frames
    committed: list[int] = []

    def frames_then_a_commit(self: screenpipe._Reader) -> None:
        read_frames(self)
        if not committed:
            db.era.con, saved = writer, db.era.con
            db.capture(1)  # a frame and its click, committed after this pass read `frames`
            db.era.con = saved
            committed.append(1)

    db.capture(2)
    seen |= db.events()
    monkeypatch.setattr(screenpipe._Reader, "_frames", frames_then_a_commit)
    r = _sync(home, db)
    monkeypatch.undo()
    assert r.quarantined == 0 and r.landed == 2 * (1 + 5 + 1), r  # the two frames read; not the third's click
    assert all(i.stream is not None for i in _inputs(home))
    db.era.con.commit()
    seen = db.events()
    r = _sync(home, db)
    assert r.quarantined == 0 and r.landed == 1 + 5 + 1, r  # the third frame with its tree and click
    assert all(i.stream is not None for i in _inputs(home))
    _once(home, seen)
    writer.close()


def test_passes_while_screenpipe_writes_land_no_event_without_its_frame(tmp_path: Path) -> None:
    """A writer commits a frame and its click as fast as it can while passes run: every click
    lands with its frame's stream, nothing is quarantined, each event lands once."""
    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    _wal(db)
    db.capture(5)
    db.close()
    stop = threading.Event()
    written = threading.Semaphore(0)

    def write() -> None:
        w = Db.__new__(Db)  # the same database, its own connection (the writer's thread)
        w.path, w.n = db.path, 5
        w.era = type(db.era).__new__(type(db.era))
        w.era.con = sqlite3.connect(db.path)
        w.era.con.create_function("vec_length", 1, lambda blob: len(blob or b"") // 4)
        while not stop.is_set() and w.n < MAX_FRAMES:
            w.capture(1)
            written.release()
        written.release()  # (the last: the passes stop waiting)
        w.era.con.close()

    t = threading.Thread(target=write)
    t.start()
    passes = 0
    try:
        while passes < 12 and t.is_alive():
            assert written.acquire(timeout=60), "the writer committed nothing for a minute"
            r = _sync(home, db)
            assert r.quarantined == 0, r
            passes += 1
    finally:
        stop.set()
        t.join()
    _sync(home, db)
    con = sqlite3.connect(db.path)
    seen = {str(w) for (w,) in con.execute("SELECT window_name FROM frames")}
    con.close()
    assert all(i.stream is not None for i in _inputs(home))
    _once(home, seen)


WRITE_S = 60.0  # how long the writer runs (issue 43: a minute)
EVERY_S = 0.02  # a frame and its two clicks, committed together, this often


def test_af_sync_watch_follows_a_writer_for_a_minute_then_is_quiet(tmp_path: Path) -> None:
    """A real SQLite writer commits a frame with its element tree and two clicks in one transaction
    every 20 ms for a minute while `af sync --watch --interval 1` follows it: every frame and click
    lands once, each click with its frame's stream, nothing but the one bad row is quarantined,
    and the compiled frames carry every click. Once the writer stops, the watch prints nothing
    (its passes re-read the bad row below the watermark: not counted again)."""
    import os
    import subprocess
    import sys
    import time
    from datetime import UTC, datetime

    from screenpipe_eras import sample_tree

    from af_pipeline.compiler.compile import compile_day
    from af_pipeline.interfaces import cli
    from capture import sync

    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    _wal(db)
    db.era.snapshot(datetime.now(UTC), "Code", "first", sample_tree("first"))
    # a row screenpipe wrote that cannot be used, inside every pass's re-read overlap
    db.era.con.execute("INSERT INTO ui_events (timestamp, event_type, x, y, button, frame_id) "
                       "VALUES (?, 'wobble', 1, 2, 0, 1)", (datetime.now(UTC).isoformat(),))
    db.era.con.commit()
    assert cli.main(["sync", "screenpipe", str(db.path), "--home", str(home.root)]) == 0
    db.close()
    out_path = tmp_path / "watch.out"
    env = {**os.environ, "AF_HOME": str(home.root)}
    with out_path.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "af_pipeline.interfaces.cli", "sync", "--watch", "--interval", "1"],
                                env=env, stdout=out, stderr=subprocess.PIPE)
    written = 0
    try:
        con = sqlite3.connect(db.path)
        con.create_function("vec_length", 1, lambda blob: len(blob or b"") // 4)
        era = type(db.era).__new__(type(db.era))
        era.con = con
        end = time.monotonic() + WRITE_S
        while time.monotonic() < end:  # screenpipe's pace: commits as they come, not on a schedule
            at = datetime.now(UTC)
            fid = era.snapshot(at, ["Code", "Firefox", "Slack"][written % 3], f"w{written}", sample_tree(f"t{written}"))
            for k in (1, 2):
                con.execute("INSERT INTO ui_events (timestamp, event_type, x, y, button, frame_id) "
                            "VALUES (?, 'click', ?, 20, 0, ?)", (at.isoformat(), 10 * k, fid))
            con.commit()  # the frame, its tree and its clicks: one transaction
            written += 1
            time.sleep(EVERY_S)  # the writer's pace (the test waits on conditions below)
        con.close()
        log = EventLog(home)

        def landed() -> int:
            return sum(len(log.read_day(d.day).snapshots) for d in log.days())

        deadline = time.monotonic() + 120
        while landed() < written + 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert landed() == written + 1
        # idle: three more passes, and nothing printed
        printed = out_path.read_bytes()
        first = sync.status(home)[0]["last_pass"]
        passes = {first}
        deadline = time.monotonic() + 60
        while len(passes) < 4 and time.monotonic() < deadline:
            passes.add(sync.status(home)[0]["last_pass"])
            time.sleep(0.1)
        assert len(passes) >= 4, "the watch made no further passes"
        assert out_path.read_bytes() == printed, out_path.read_text()[len(printed):]
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    log = EventLog(home)
    caps = [log.read_day(d.day) for d in log.days()]
    snaps = [s for c in caps for s in c.snapshots]
    clicks = [i for c in caps for i in c.inputs]
    assert len({s.window for s in snaps}) == len(snaps) == written + 1
    assert len(clicks) == len({i.ref for i in clicks}) == 2 * written
    assert all(i.stream is not None for i in clicks)
    reasons = [q["reason"] for q in log.quarantine_rows()]
    assert len(reasons) == 1 and "event type" in reasons[0], reasons
    carried = sum(f["input"]["clicks"] for c in caps for f in compile_day(c)["frames"])
    assert carried == 2 * written
    lines = out_path.read_text().splitlines()
    assert lines and all("quarantined" in ln for ln in lines) and not any("already in the log" in ln for ln in lines)
    assert all(ln[:4].isdigit() and ln[19] in "+-Z" for ln in lines), lines[:3]  # the zone's offset is written
    # the watch kept the open day's rows on disk (`af log cache`), where a fresh `af mcp` starts from
    from af_pipeline.interfaces import open_cache

    open_days = [d.day for d in log.days() if not d.sealed]
    assert any(open_cache.load(home.root, d, log.open_dir / d) is not None for d in open_days), open_days


def test_a_folder_holding_inputs_without_a_stream_builds_documents_with_every_click(tmp_path: Path, capsys) -> None:
    """Clicks an earlier release landed before their frame (stream unknown) on a two-monitor day:
    `af log status` says how many, and `af build` publishes documents whose frames carry every
    click, each on its own frame's monitor."""
    import json

    from af_pipeline.interfaces import cli
    from capture.model import CaptureBatch, InputEvent, Snapshot
    from capture.timeutil import parse_ts

    home = _home(tmp_path)
    t0 = parse_ts("2026-03-16T10:00:00Z")
    snaps = [Snapshot(ref=f"sp:frames:{i}", ts_us=t0 + i * 10_000_000, stream=f"m{i % 2 + 1}",
                      app=["Code", "Mail"][i % 2], window=f"w{i}", source_frame_id=str(i)) for i in range(12)]
    # each click 6 s after its frame: nearer the other monitor's next row, 4 s later
    clicks = [InputEvent(ref=f"sp:ui_events:{i}", ts_us=s.ts_us + 6_000_000, kind="click", stream=None,
                         source_frame_id=s.source_frame_id, x=5, y=5) for i, s in enumerate(snaps)]
    EventLog(home).append(CaptureBatch(source_id="sp", recorder="screenpipe", snapshots=snaps, inputs=clicks),
                          now_us=t0 + 3 * 86_400_000_000)
    assert cli.main(["log", "status", "--json", "--home", str(home.root)]) == 0
    (day,) = json.loads(capsys.readouterr().out)["days"]
    assert day["inputs_without_stream"] == 12
    assert cli.main(["build", "--home", str(home.root)]) == 0
    capsys.readouterr()
    doc = json.loads((home.published_dir / "2026-03-16" / "document.json").read_text())
    per_stream: dict[str, int] = {}
    for f in doc["frames"]:
        per_stream[f["stream"]] = per_stream.get(f["stream"], 0) + f["input"]["clicks"]
    assert per_stream == {"m1": 6, "m2": 6}


def test_watch_passes_read_the_open_day_once_and_land_the_same(tmp_path: Path, monkeypatch) -> None:
    """`af sync --watch` keeps the open day's ref digests between passes (issue 43: each pass read
    the whole open day again, its cost and the process's memory growing with the day): a later
    pass reads none of the day's rows back and lands each event once, and a re-read row that
    differs from the logged one is still quarantined as a conflict."""
    from dataclasses import replace

    from test_faults_source_rewrites import T0

    from capture import sync
    from capture.log import append, dedup
    from capture.model import CaptureBatch

    reads: list[str] = []
    for module in (dedup, append):
        real = module.open_row_chunks
        monkeypatch.setattr(module, "open_row_chunks",
                            lambda path, kind, real=real: (reads.append(kind), real(path, kind))[1])
    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    source = sync.register(home, "screenpipe", str(db.path))
    open_refs: dict = {}
    now = int((T0.timestamp() + 600) * 1_000_000)  # just after the last frame: the day stays open
    for k in range(4):
        db.capture(10)
        r = sync.sync_once(home, source, now_us=now, open_refs=open_refs)
        assert r.ok and r.quarantined == 0, r
        if k >= 2:
            assert not reads, f"pass {k + 1} read the open day's rows again: {reads}"
        reads.clear()
    _once(home, db.events())
    assert open_refs, "the passes kept the open day's digests"

    log = EventLog(home)
    log.keep_open_refs(open_refs)
    day = log.days()[0].day
    logged = log.read_day(day).inputs[0]
    report = log.append(CaptureBatch(source_id="test", recorder="test", inputs=[replace(logged, x=(logged.x or 0) + 1)]),
                        now_us=now)
    assert report.quarantined == 1 and "differs in x" in next(iter(report.quarantine_reasons))
    report = log.append(CaptureBatch(source_id="test", recorder="test", inputs=[logged]), now_us=now)
    assert report.quarantined == 0 and report.skipped == 1
