"""capture.log is a package of parts behind one facade: what used to be one module must look the same
to every caller, and the tunables tests and benchmarks set on ``capture.log`` must reach the part
that reads them (else a test meant to run both dedup paths silently runs one)."""

from __future__ import annotations

import pytest

import capture.log as log_module
from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch, Snapshot
from capture.timeutil import day_bounds

TZ = "Europe/Paris"
HOUR = 3_600_000_000

# Every name callers import from capture.log (af_pipeline, certification, tests, bench).
PUBLIC = (
    "AppendReport", "COLUMNS", "DayStatus", "ElementsBySnapshot", "EventLog", "NAMES", "SELECT_SQL",
    "SORT_SQL", "TS_MAX_US", "TS_MIN_US", "UserError", "VerifyReport", "amendment_of", "build_instances",
    "column_values", "entry_hash", "local_day", "segment_name", "sort_key", "FSYNC", "INDEX_MIN_REFS",
    "OPEN_REFS_CACHED", "BULK_ROWS",
)


def test_every_name_callers_use_is_still_served_by_capture_log():
    missing = [n for n in PUBLIC if not hasattr(log_module, n)]
    assert not missing


@pytest.mark.parametrize(("name", "part", "value"), [
    ("FSYNC", log_module.files, False),
    ("INDEX_MIN_REFS", log_module.dedup, 0),
    ("OPEN_REFS_CACHED", log_module.dedup, 0),
    ("BULK_ROWS", log_module.append, 1),
])
def test_a_tunable_set_on_the_package_is_the_value_its_part_reads(monkeypatch, name, part, value):
    before = getattr(part, name)
    with monkeypatch.context() as mp:
        mp.setattr(log_module, name, value)
        assert getattr(part, name) == value and getattr(log_module, name) == value
    assert getattr(part, name) == before and getattr(log_module, name) == before


def _day(day: str, refs: range) -> CaptureBatch:
    start = day_bounds(day, TZ)[0] + 9 * HOUR
    return CaptureBatch("test:a", "synth", snapshots=[Snapshot(f"test:a:{i}", start + i, "monitor_0", "App")
                                                      for i in refs])


@pytest.mark.parametrize("index_min", [0, 10**9])
def test_index_min_refs_set_on_the_package_chooses_the_dedup_path(tmp_path, monkeypatch, index_min):
    monkeypatch.setattr(log_module, "FSYNC", False)
    monkeypatch.setattr(log_module, "INDEX_MIN_REFS", index_min)
    home = Home(tmp_path / "h")
    home.init(tz=TZ)
    log = EventLog(home)
    later = day_bounds("2026-03-11", TZ)[1] + 48 * HOUR
    log.append(_day("2026-03-10", range(3)), now_us=later)  # sealed
    report = log.append(_day("2026-03-11", range(2, 5)), now_us=later)  # ref 2 is on the sealed day
    assert report.skipped == 1 and report.landed["snapshots"] == 2
    assert (log._index is not None) == (index_min == 0)  # the hash index is only built on the index path
