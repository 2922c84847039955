"""One consistent read per sync pass (issues 36 and 43): screenpipe commits a frame together with
its ui_events and elements; a pass that read `frames` in one snapshot and `ui_events` / `elements`
in later ones landed the events of a frame committed in between with an unknown stream (for good,
on sealed days), and the next pass quarantined their right copies as conflicts ("differs in
stream"). Each pass now reads every table as of one instant."""

from __future__ import annotations

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
