"""Forgetting (issue 41): selected rows leave every file of the log, the chain records it, and
verify accepts exactly the recorded rewrites. A folder landed from the synthetic corpus: its
first day sealed, its second still open."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from dagster_support import TZ, corpus, only_days

from capture.errors import UserError
from capture.home import Home
from capture.log import EventLog, Selection
from capture.log.forget import _host
from capture.log.redaction import FORGET_WORK, KEY_FILE
from capture.model import CaptureBatch, Quarantined
from capture.timeutil import day_bounds
from certification import appendonly

DAY1, DAY2 = "2026-06-01", "2026-06-02"
HOUR = 3_600_000_000


def _rows_of(path: Path) -> list[dict]:
    """A log file's records read through its format (never a grep of compressed bytes)."""
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    if path.suffix == ".jsonl":
        return [json.loads(ln) for ln in path.read_bytes().splitlines() if ln.strip()]
    if path.suffix == ".json":
        doc = json.loads(path.read_bytes())
        return [doc] if isinstance(doc, dict) else doc
    return []


def _every_row(log: EventLog) -> list[tuple[str, dict]]:
    """(file, record) of every file under the log: sealed Parquet, open JSONL, quarantine."""
    out = []
    for path in sorted(log.dir.rglob("*")):
        if path.is_file():
            kind = path.stem
            out.extend((f"{path.relative_to(log.dir)}:{kind}", r) for r in _rows_of(path))
    return out


@pytest.fixture(scope="module")
def landed(tmp_path_factory) -> Path:
    """A folder holding the corpus: DAY1 sealed, DAY2 open, one quarantined row naming a site."""
    root = tmp_path_factory.mktemp("forget") / "home"
    home = Home(root)
    home.init(tz=TZ)
    log = EventLog(home)
    b = corpus()
    log.append(only_days(b, {DAY1}), now_us=day_bounds(DAY1, TZ)[1] + 48 * HOUR)
    log.append(only_days(b, {DAY2}), now_us=day_bounds(DAY2, TZ)[0] + 12 * HOUR)
    bad = CaptureBatch("screenpipe:other.sqlite", "screenpipe", quarantined=[
        Quarantined("other.sqlite", "frames id 9", "timestamp is not a time",
                    '{"app": "Slack", "url": "https://en.wikipedia.org/wiki/X", "ts_us": "?"}')])
    log.append(bad, now_us=day_bounds(DAY2, TZ)[0] + 12 * HOUR)
    return root


@pytest.fixture
def log(landed, tmp_path) -> EventLog:
    shutil.copytree(landed, tmp_path / "home")
    return EventLog(Home(tmp_path / "home"))


def _ok(log: EventLog) -> None:
    report = log.verify()
    assert report.ok, report.problems
    for day in (DAY1, DAY2):
        assert appendonly.check_day(log, log.home.published_dir, day) == []


def test_forget_an_app_a_site_a_range_and_typed_text_leaves_no_trace(log):
    b = corpus()
    # an app: gone from both days (sealed and open), with its snapshots' inputs and element trees
    frames = {s.source_frame_id for s in b.snapshots if s.app == "Slack"}
    plan = log.plan(Selection(app="slack"))
    assert plan.days == [DAY1, DAY2] and plan.segments == [DAY1] and plan.open_days == [DAY2]
    done = log.forget(Selection(app="slack"))
    assert done.seq is not None and done.totals() == plan.totals() and done.totals()["snapshots"] == 64
    rows = _every_row(log)
    assert not [r for _, r in rows if str(r.get("app") or "").casefold() == "slack"]
    assert not [r for f, r in rows if f.endswith(":elements") and r["snapshot_frame_id"] in frames]
    assert not [r for f, r in rows if "quarantine" in f and "Slack" in str(r.get("raw"))]
    assert log.read_day(DAY1).sealed and not log.read_day(DAY2).sealed
    _ok(log)

    # a site (and its subdomains' rows only: en.wikipedia.org, not www.google.com)
    log.forget(Selection(site="wikipedia.org"))
    rows = _every_row(log)
    assert not [r for _, r in rows if (_host(r.get("url")) or "").endswith("wikipedia.org")]
    assert not [r for _, r in rows if "wikipedia" in str(r.get("raw") or "")]
    assert any(_host(r.get("url")) == "www.google.com" for _, r in rows)
    _ok(log)

    # a range of ten minutes: nothing timed inside it remains, in any kind
    lo = day_bounds(DAY1, TZ)[0] + 9 * HOUR + 20 * 60_000_000
    hi = lo + 10 * 60_000_000
    before = {k: v for k, v in log.days()[0].counts.items()}
    done = log.forget(Selection(start_us=lo, end_us=hi))
    assert done.days == [DAY1] and done.totals()["elements"] > 0
    assert not [r for f, r in _every_row(log) if "ts_us" in r and lo <= r["ts_us"] < hi]
    after = log.days()[0].counts
    assert {k: before[k] - after[k] for k in before} == done.totals()
    _ok(log)

    # typed text of the sealed day: the input rows stay, their text is blanked
    typed = [i for i in b.inputs if i.text and i.ts_us < day_bounds(DAY1, TZ)[1]]
    n_inputs = log.days()[0].counts["inputs"]
    done = log.forget(Selection(typed_text=True, days=(DAY1,)))
    assert done.blanked[DAY1] > 0 and done.totals() == dict.fromkeys(done.totals(), 0)
    day1 = [r for f, r in _every_row(log) if f.startswith(f"sealed/{DAY1}/") and f.endswith(":inputs")]
    assert len(day1) == n_inputs and all(r["text"] is None for r in day1) and typed
    assert any(i.text for i in log.read_day(DAY2).inputs)  # the open day keeps its typed text
    _ok(log)

    # the chain: four redaction records after the two sealed segments, none naming a value
    records = log.redactions()
    assert [r["redaction"]["selection"] for r in records] == ["app", "site", "range", "day+typed_text"]
    text = log.manifest_path.read_text()
    assert "slack" not in text.casefold() and "wikipedia" not in text
    assert log.manifest()[0]["redacted_by"] == [r["seq"] for r in records]
    assert (log.home.root / KEY_FILE).stat().st_mode & 0o077 == 0


def test_plan_changes_nothing(log):
    snapshot = {p: p.read_bytes() for p in log.home.root.rglob("*") if p.is_file()}
    plan = log.plan(Selection(app="Google Chrome"))
    assert plan.totals()["snapshots"] == 188 and plan.frames == 188
    assert {p: p.read_bytes() for p in log.home.root.rglob("*") if p.is_file()} == snapshot


def test_a_hand_edit_without_a_record_fails_verify(log):
    log.forget(Selection(app="Mail"))
    assert log.verify().ok
    # the same kind of change by hand: another app's rows removed from the rewritten segment
    path = log.sealed_dir / DAY1 / "snapshots.parquet"
    tmp = path.with_name("edited.parquet")
    duckdb.sql(f"COPY (SELECT * FROM read_parquet('{path}') WHERE app <> 'Figma' ORDER BY ts_us, stream, ref) "
               f"TO '{tmp}' (FORMAT parquet, COMPRESSION zstd)")
    tmp.replace(path)
    report = log.verify()
    assert not report.ok and any("snapshots.parquet was changed" in p for p in report.problems)


def test_an_edited_redaction_record_fails_verify(log):
    log.forget(Selection(app="Mail"))
    lines = log.manifest_path.read_bytes().splitlines()
    record = json.loads(lines[-1])
    record["redaction"]["rows"][DAY1]["snapshots"] = 1
    log.manifest_path.write_bytes(b"\n".join([*lines[:-1], json.dumps(record).encode()]) + b"\n")
    assert any("was edited" in p for p in log.verify().problems)


def test_reimporting_the_source_lands_nothing_forgotten(log):
    b = corpus()
    done = log.forget(Selection(app="Cursor"))
    gone = done.totals()
    again = log.append(b, now_us=day_bounds(DAY2, TZ)[0] + 12 * HOUR)
    assert sum(again.landed.values()) == 0
    assert again.forgotten == sum(gone.values())
    assert not [s for d in (DAY1, DAY2) for s in log.read_day(d).snapshots if s.app == "Cursor"]
    # once DAY2 seals, nothing comes back either
    log.seal(DAY2)
    again = log.append(b, now_us=day_bounds(DAY2, TZ)[1] + 48 * HOUR)
    assert sum(again.landed.values()) == 0 and again.forgotten == sum(gone.values())
    _ok(log)


def test_a_killed_forget_is_completed_by_the_next_writer(log):
    class Killed(EventLog):
        def _complete_forget(self, record):  # the process dies right after its intent landed
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Killed(log.home).forget(Selection(app="Figma"))
    assert (log.dir / FORGET_WORK).is_dir() and not log.redactions()
    assert log.verify().ok  # nothing in place changed yet
    fresh = EventLog(log.home)
    fresh.seal_due(now_us=0)  # any write takes the lock and recovers
    assert [r["redaction"]["selection"] for r in fresh.redactions()] == ["app"]
    assert not [s for d in (DAY1, DAY2) for s in fresh.read_day(d).snapshots if s.app == "Figma"]
    assert not (log.dir / FORGET_WORK).exists()
    _ok(fresh)


@pytest.mark.parametrize("sel, words", [
    (Selection(), "say what to forget"),
    (Selection(start_us=10, end_us=5), "after its start"),
    (Selection(title="("), "not a regular expression"),
    (Selection(days=("2026-13-01",)), "not a day"),
    (Selection(app=" "), "empty"),
])
def test_a_bad_selection_is_refused_with_a_sentence(log, sel, words):
    with pytest.raises(UserError, match=words):
        log.plan(sel)


def test_a_day_forgotten_whole_takes_no_later_rows(log):
    n = sum(log.days()[0].counts.values())
    done = log.forget(Selection(days=(DAY1,)))
    assert sum(done.totals().values()) == n and done.segments == [DAY1]
    assert log.redactions()[-1]["redaction"]["days"] == [DAY1]
    assert sum(log.days()[0].counts.values()) == 0 and log.read_day(DAY1).sealed
    again = log.append(corpus(), now_us=day_bounds(DAY2, TZ)[0] + 12 * HOUR)
    assert again.forgotten >= n and not any(getattr(log.read_day(DAY1), k) for k in ("snapshots", "inputs", "elements"))
    _ok(log)


def test_a_running_memory_sees_the_forgotten_site_gone_at_once(log):
    from af_pipeline.interfaces.memory import Memory

    memory = Memory(log.home, clock=lambda: day_bounds(DAY2, TZ)[0] + 12 * HOUR)
    before = memory.search("wikipedia", start=DAY1, end=DAY2)
    assert before["total"] > 0 and before["results"]
    assert any(_host(s.url) == "en.wikipedia.org" for s in memory.day_capture(DAY1).snapshots)
    EventLog(log.home).forget(Selection(site="wikipedia.org"))  # another process, in effect
    assert not any((_host(s.url) or "").endswith("wikipedia.org")
                   for d in (DAY1, DAY2) for s in memory.day_capture(d).snapshots)
    after = memory.search("wikipedia", start=DAY1, end=DAY2)
    assert after["total"] == 0 and after["results"] == []
