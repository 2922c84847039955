"""Compiled parts of a day (a period that cuts a day) are kept only while they can be asked
again: a rolling "last N hours" ends at a new now on every call, and the soak's MCP server held
17 of them, each a compiled document of a busy open day (docs/benchmarks.md, issue 43)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from af_pipeline import Memory
from af_pipeline.interfaces.memory import CACHED_PIECES
from capture.home import Home
from capture.log import EventLog
from capture.timeutil import parse_ts

STUDENT = Path(__file__).resolve().parent / "data" / "rpm" / "StudentRecord.csv"
DAY = "2019-10-21"


def test_pieces_kept_are_few_and_a_repeat_still_hits(tmp_path):
    from capture.importers.rpm import read_rpm

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    EventLog(home).append(read_rpm(STUDENT))
    mem = Memory(home, clock=lambda: parse_ts("2026-12-01T12:00:00Z"))
    first = datetime.fromisoformat(f"{DAY}T{mem.document(DAY)['frames'][0]['start']}")
    periods = [mem.period(start=f"{first:%Y-%m-%dT%H:%M:%S}", end=f"{first + timedelta(minutes=k):%Y-%m-%dT%H:%M:%S}")
               for k in range(1, 3 * CACHED_PIECES + 2)]
    answers = [mem.context(p)[0] for p in periods]
    assert 1 <= len(mem._slices) <= CACHED_PIECES  # not one per period asked
    held = {id(v) for v in mem._slices.values()}
    assert mem.context(periods[-1])[0] == answers[-1]
    assert {id(v) for v in mem._slices.values()} == held  # the newest piece was reused, not compiled again
    fresh = Memory(home, clock=lambda: parse_ts("2026-12-01T12:00:00Z"))
    assert [fresh.context(p)[0] for p in periods] == answers  # the same answers as without evictions


def test_days_held_in_memory_stay_under_a_row_budget(tmp_path, monkeypatch):
    """A long-lived reader keeps other days' rows only up to CACHED_ROWS (issue 43: the soak's MCP
    server held eight sealed busy days nobody asked about again); answers do not change."""
    from af_pipeline.interfaces.memory import captures
    from capture.importers.screenpipe import read_screenpipe
    from capture.synth import generate

    synth = generate(3, 5, tmp_path / "synth", start_day="2026-06-01", tz="UTC")
    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    EventLog(home).append(read_screenpipe(synth.db_path, tz="UTC"))
    clock = lambda: parse_ts("2026-12-01T12:00:00Z")  # noqa: E731
    mem = Memory(home, clock=clock)
    days = [d for d in mem.days()]
    rows = {d: sum(mem.day_capture(d).count(k) for k in ("snapshots", "inputs", "presence")) for d in days}
    assert len(mem._captures) == len(days)  # within the default budget: all held
    monkeypatch.setattr(captures, "CACHED_ROWS", max(rows.values()) + 1)
    small = Memory(home, clock=clock)
    answers = [small.summary(d) for d in days]
    assert list(small._captures) == [days[-1]]  # one busy day's rows at most: the last read
    assert answers == [Memory(home, clock=clock).summary(d) for d in days]


def test_a_reader_that_never_writes_the_cache_keeps_no_text_copy_of_the_live_day(tmp_path):
    """The MCP server compiles the open day to answer and never writes the open-day cache, so it
    keeps no canonical JSON of that document beside the document itself; `af context`
    (write_cache) still writes the cache, which a fresh reader then answers from."""
    from af_pipeline.interfaces import open_cache
    from capture.importers.rpm import read_rpm

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    EventLog(home).append(read_rpm(STUDENT), seal=False)  # the day stays open
    clock = lambda: parse_ts("2026-12-01T12:00:00Z")  # noqa: E731
    server = Memory(home, clock=clock)
    answer = server.context(DAY)[0]
    assert server._disk_docs == {} and not open_cache.cache_path(home.root, DAY).exists()
    writer = Memory(home, clock=clock, write_cache=True)
    assert writer.context(DAY)[0] == answer
    assert writer._disk_docs and open_cache.cache_path(home.root, DAY).exists()
    assert Memory(home, clock=clock).context(DAY)[0] == answer
