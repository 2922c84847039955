"""What screenpipe and its users do to the database, and every captured event still lands once
(issue 36): retention deletes the oldest rows (the source's natural identity changes), VACUUM,
a restore of an older copy after which new rows reuse ids the log holds, and a copy under another
name. Followed by `af sync` and imported by `af import`; a hypothesis property runs any sequence
of these against the Dagster-free sync pass."""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from screenpipe_eras import EraDB, sample_tree

from af_pipeline.interfaces import cli
from capture import sync
from capture.home import Home
from capture.log import EventLog

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
FAR_FUTURE_US = int((T0 + timedelta(days=3)).timestamp() * 1_000_000)  # every day sealed after a pass


def _home(tmp: Path) -> Home:
    h = Home(tmp / "home")
    h.init(tz="UTC")
    return h


class Db:
    """A current-layout screenpipe database with a capture clock: each frame a new window label,
    each frame its element tree, and a click per frame (ui_events pointing at it)."""

    def __init__(self, path: Path):
        self.era = EraDB(path, "current")
        self.path = path
        self.n = 0

    def capture(self, k: int) -> None:
        con = self.era.con
        for _ in range(k):
            at = T0 + timedelta(seconds=7 * self.n)
            fid = self.era.snapshot(at, ["Code", "Firefox", "Slack"][self.n % 3], f"w{self.n}", sample_tree(f"t{self.n}"))
            con.execute("INSERT INTO ui_events (timestamp, event_type, x, y, button, frame_id) VALUES (?, 'click', 10, 20, 0, ?)",
                        ((at + timedelta(seconds=1)).isoformat(), fid))
            self.n += 1
        con.commit()

    def delete_oldest(self, k: int) -> None:
        """screenpipe's retention: the oldest frames go, with what hangs off them."""
        con = self.era.con
        ids = [r[0] for r in con.execute("SELECT id FROM frames ORDER BY id LIMIT ?", (k,))]
        for table, col in (("elements", "frame_id"), ("ui_events", "frame_id"), ("frames", "id")):
            con.executemany(f"DELETE FROM {table} WHERE {col} = ?", [(i,) for i in ids])
        con.commit()

    def vacuum(self) -> None:
        self.era.con.commit()
        self.era.con.execute("VACUUM")

    def backup(self, to: Path) -> None:
        self.era.con.commit()
        dst = sqlite3.connect(to)
        self.era.con.backup(dst)
        dst.close()

    def restore(self, frm: Path) -> None:
        """A restore of an older copy: later rows are gone, and the next ids are reused."""
        self.era.con.close()
        shutil.copyfile(frm, self.path)
        self.era.con = sqlite3.connect(self.path)
        self.era.con.create_function("vec_length", 1, lambda blob: len(blob or b"") // 4)

    def events(self) -> set[str]:
        return {str(r[0]) for r in self.era.con.execute("SELECT window_name FROM frames")}

    def close(self) -> None:
        self.era.close()


def _logged(home: Home) -> tuple[Counter[str], int, Counter[str]]:
    """Windows of the logged snapshots (each should be one), element rows, input timestamps."""
    log = EventLog(home)
    windows: Counter[str] = Counter()
    elements = 0
    clicks: Counter[str] = Counter()
    for d in log.days():
        cap = log.read_day(d.day)
        windows.update(str(s.window) for s in cap.snapshots)
        elements += len(cap.elements)
        clicks.update(str(i.ts_us) for i in cap.inputs)
    return windows, elements, clicks


def _once(home: Home, seen: set[str]) -> None:
    windows, elements, clicks = _logged(home)
    assert set(windows) == seen, (set(windows) ^ seen)
    assert max(windows.values()) == 1, [w for w, n in windows.items() if n > 1][:5]  # nothing doubled
    assert elements == 5 * len(seen)  # each frame's tree once
    assert len(clicks) == len(seen) and max(clicks.values()) == 1


def _sync(home: Home, db: Db) -> sync.PassResult:
    r = sync.sync_once(home, sync.register(home, "screenpipe", str(db.path)), now_us=FAR_FUTURE_US)
    assert r.ok, r.error
    return r


def test_retention_deletes_the_oldest_rows_and_nothing_lands_twice(tmp_path: Path) -> None:
    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    db.capture(30)
    seen = db.events()
    _sync(home, db)
    db.delete_oldest(10)  # the first frame changes: so does the database's natural identity
    db.vacuum()
    db.capture(5)
    seen |= db.events()
    r = _sync(home, db)
    assert r.landed == 5 * (1 + 5 + 1), r  # five frames, their trees, their clicks
    assert r.changed and "retention" in r.changed
    _once(home, seen)
    status = sync.status(home)[0]["source_changed"]
    assert status["what"] == "retention"
    db.capture(3)
    seen |= db.events()
    _sync(home, db)
    _once(home, seen)


def test_a_restored_older_copy_loses_no_new_row(tmp_path: Path) -> None:
    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    db.capture(20)
    db.backup(tmp_path / "backup.sqlite")
    db.capture(10)
    seen = db.events()
    _sync(home, db)
    db.restore(tmp_path / "backup.sqlite")  # frames 21-30 are gone; new ones will take their ids
    db.capture(12)
    seen |= db.events()
    r = _sync(home, db)
    assert r.changed and "rollback" in r.changed, r
    assert r.quarantined == 0, r
    _once(home, seen)
    db.capture(4)  # later passes read incrementally again, the reused ids still told apart
    seen |= db.events()
    _sync(home, db)
    _once(home, seen)
    assert sync.status(home)[0]["source_changed"]["what"] == "rewritten"


def test_a_copy_under_another_name_after_retention_imports_once(tmp_path: Path) -> None:
    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    db.capture(25)
    seen = db.events()
    assert cli.main(["import", "screenpipe", str(db.path), "--home", str(home.root), "--quiet"]) == 0
    db.delete_oldest(8)
    db.capture(6)
    seen |= db.events()
    db.close()
    copy = tmp_path / "moved" / "screenpipe-backup.sqlite"
    copy.parent.mkdir()
    shutil.copyfile(db.path, copy)
    assert cli.main(["import", "screenpipe", str(copy), "--home", str(home.root), "--quiet"]) == 0
    _once(home, seen)


# -- the property: any sequence of what a source does to itself, synced between ----------------

OPS = st.lists(st.tuples(st.sampled_from(["capture", "capture", "delete_oldest", "vacuum", "backup", "restore"]),
                         st.integers(1, 8), st.booleans()),  # the op, its size, a sync after it
               min_size=2, max_size=10)


@given(OPS)
# a restore of the copy synced before, after the path was followed under another id (the first
# frames all deleted), with and without its own oldest row deleted: found with seeds 4 and 5
@example([("capture", 1, False), ("delete_oldest", 5, False), ("delete_oldest", 8, True), ("restore", 1, False)])
@example([("capture", 1, False), ("delete_oldest", 5, False), ("delete_oldest", 8, True), ("restore", 1, False),
          ("delete_oldest", 1, False)])
@example([("restore", 1, False), ("capture", 1, True), ("delete_oldest", 4, False), ("delete_oldest", 8, False)])
# derandomize: CI runs the same examples each time (other seeds: --hypothesis-seed with
# derandomize off; seeds 4-13 pass)
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_any_sequence_of_rewrites_and_syncs_lands_each_event_once(tmp_path_factory: pytest.TempPathFactory,
                                                                  ops: list[tuple[str, int, bool]]) -> None:
    tmp = tmp_path_factory.mktemp("rw")
    home, db = _home(tmp), Db(tmp / "db.sqlite")
    db.capture(12)
    db.backup(tmp / "backup.sqlite")
    seen: set[str] = set()
    for op, k, then_sync in [("capture", 1, True), *ops, ("capture", 1, True)]:
        if op == "capture":
            db.capture(k)
        elif op == "delete_oldest":
            db.delete_oldest(k)
        elif op == "vacuum":
            db.vacuum()
        elif op == "backup":
            db.backup(tmp / "backup.sqlite")
        elif op == "restore":
            db.restore(tmp / "backup.sqlite")
        if then_sync and db.events():
            seen |= db.events()  # what the source held when it was read
            _sync(home, db)
    _once(home, seen)


def test_a_folder_synced_by_the_previous_release_lands_nothing_again(tmp_path: Path) -> None:
    """sync.json as the previous release wrote it (no source_id, no tails): the next pass keeps
    the refs the log holds and lands only what is new."""
    import json

    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    db.capture(15)
    seen = db.events()
    _sync(home, db)
    path = home.root / "sync.json"
    doc = json.loads(path.read_text())
    for entry in doc["sources"].values():
        for key in ("source_id", "tails", "changed", "reused_ids"):
            entry["state"].pop(key, None)
    path.write_text(json.dumps(doc))
    db.capture(2)
    seen |= db.events()
    r = _sync(home, db)
    assert r.landed == 2 * (1 + 5 + 1) and r.changed is None, r
    _once(home, seen)


def test_retention_after_a_restore_keeps_the_rekeyed_first_frame(tmp_path: Path) -> None:
    """After a restore a new frame took an id the log held (it landed as <ref>@<ts>); retention
    then deleted every frame below it, so it is the database's first frame. That frame is in the
    log at its time: the database is the same source and nothing lands again (found by the
    property below with --hypothesis-seed=4)."""
    home, db = _home(tmp_path), Db(tmp_path / "db.sqlite")
    db.capture(12)
    db.backup(tmp_path / "backup.sqlite")
    db.capture(1)
    seen = db.events()
    _sync(home, db)
    db.restore(tmp_path / "backup.sqlite")
    db.capture(1)  # w13 under the id w12 had
    seen |= db.events()
    _sync(home, db)
    db.delete_oldest(12)  # only w13 is left: its id is the reused one
    db.capture(1)
    seen |= db.events()
    r = _sync(home, db)
    assert r.landed == 1 + 5 + 1, r  # w14, its tree and its click
    _once(home, seen)
