"""Appends look only at the sealed days that share a source with them, and land exactly the same.

Each manifest entry records the source ids its day's refs start with ("ref_sources"). A batch whose
refs start with none of them cannot collide with that day, so the log skips reading it. These tests
check that this changes nothing a user can see (same landed / skipped / quarantined counts, same
rows, same quarantine) against a log that reads every day, including logs sealed before entries
recorded the field, and refs that do not follow the "<source id>:..." convention.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import capture.log as log_module
from capture.home import Home
from capture.log import EventLog, entry_hash
from capture.model import ROW_KINDS, CaptureBatch, InputEvent, Snapshot
from capture.timeutil import day_bounds, local_day

TZ = "Europe/Paris"
DAYS = ("2026-03-28", "2026-03-29", "2026-03-30")  # 2026-03-29 has 23 hours in Paris
HOUR = 3_600_000_000
T0 = day_bounds(DAYS[0], TZ)[0]
T_END = day_bounds(DAYS[-1], TZ)[1]
LATER = T_END + 48 * HOUR
EARLY = T0 - 48 * HOUR
# "sp" and "sp:x" overlap as prefixes on purpose; "odd" rows carry refs of other sources' shape.
SOURCES = ("sp", "sp:x", "rec:host:1", "odd")

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@st.composite
def refs(draw: st.DrawFn, source: str) -> str:
    n = draw(st.integers(0, 12))  # a small pool: repeats and collisions are common
    if source == "odd":
        return draw(st.sampled_from([f"sp:frames:{n}", f"rec:host:1:{n}", f"odd{n}", f"odd:{n}", "sp"]))
    return f"{source}:{draw(st.sampled_from(['frames', 'ui']))}:{n}"


@st.composite
def batches(draw: st.DrawFn) -> CaptureBatch:
    source = draw(st.sampled_from(SOURCES))
    ts = st.integers(T0, T_END - 1)
    snaps = draw(st.lists(st.builds(lambda r, t: Snapshot(r, t, "monitor_0", "App"), refs(source), ts), max_size=8))
    ins = draw(st.lists(st.builds(lambda r, t: InputEvent(r, t, "click"), refs(source), ts), max_size=8))
    return CaptureBatch(source, "synth", snapshots=snaps, inputs=ins)


# One step: append a batch (at a time when no day, or every day, is due), or seal a day by hand.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), batches(), st.sampled_from([EARLY, LATER]), st.booleans()),
        st.tuples(st.just("seal"), st.sampled_from(DAYS)),
    ),
    min_size=1,
    max_size=7,
)


@contextmanager
def logs() -> Iterator[tuple[EventLog, EventLog]]:
    with tempfile.TemporaryDirectory() as tmp:
        pair = []
        for name in ("filtered", "every_day"):
            home = Home(Path(tmp) / name)
            home.init(tz=TZ)
            pair.append(EventLog(home))
        yield pair[0], pair[1]


def _look_everywhere(log: EventLog) -> None:
    """Make a log behave as before sources were recorded: every sealed day may hold any ref."""
    log._day_prefixes = lambda day: None  # type: ignore[method-assign]


def _run(log: EventLog, step: tuple[Any, ...]) -> Any:
    if step[0] == "seal":
        try:
            return ("sealed", log.seal(step[1]))
        except log_module.UserError as exc:
            return ("error", str(exc).replace(str(log.dir), "LOG"))
    _, batch, now, seal = step
    r = log.append(batch, now_us=now, seal=seal)
    return (r.landed, r.skipped, r.quarantined, r.quarantine_reasons, r.days_touched, r.days_sealed)


def _state(log: EventLog) -> tuple[Any, ...]:
    days = {s.day: (s.sealed, tuple(getattr(log.read_day(s.day), k) for k in ROW_KINDS)) for s in log.days()}
    quarantine = sorted(json.dumps(q, sort_keys=True) for q in log.quarantine_rows())
    return days, quarantine


def _rewrite_as_old_format(log: EventLog) -> None:
    """Drop "ref_sources" from every manifest entry and re-chain: a log sealed by an older version."""
    prev = None
    lines = []
    for entry in log.manifest():
        entry = {k: v for k, v in entry.items() if k not in ("ref_sources", "hash")}
        entry["prev"] = prev
        entry["hash"] = prev = entry_hash(entry)
        lines.append(json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n")
    log.manifest_path.write_text("".join(lines), encoding="utf-8")


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_module, "FSYNC", False)


@SETTINGS
@given(first=steps, then=steps, index_min=st.sampled_from([1, 5_000]), open_cached=st.sampled_from([0, 1, 4]),
       old_format=st.booleans())
def test_outcome_is_the_same_as_looking_at_every_day(first, then, index_min, open_cached, old_format):
    saved = (log_module.INDEX_MIN_REFS, log_module.OPEN_REFS_CACHED)
    log_module.INDEX_MIN_REFS, log_module.OPEN_REFS_CACHED = index_min, open_cached
    try:
        with logs() as (filtered, every_day):
            _look_everywhere(every_day)
            for step in first:
                assert _run(filtered, step) == _run(every_day, step)
            if old_format:
                _rewrite_as_old_format(filtered)
                filtered = EventLog(filtered.home)  # a new process: nothing derived yet
                assert filtered.verify().ok
            for step in then:
                assert _run(filtered, step) == _run(every_day, step)
            assert _state(filtered) == _state(every_day)
            assert filtered.verify().ok
    finally:
        log_module.INDEX_MIN_REFS, log_module.OPEN_REFS_CACHED = saved


def _batch(source: str, day: str, refs: list[str], hour: int = 10) -> CaptureBatch:
    t = day_bounds(day, TZ)[0] + hour * HOUR
    return CaptureBatch(source, "synth", snapshots=[Snapshot(r, t + i, "monitor_0", "App") for i, r in enumerate(refs)])


def test_manifest_records_the_sources_of_a_days_refs(home):
    log = EventLog(home)
    log.append(_batch("sp", DAYS[0], ["sp:frames:1", "sp:frames:2"]), now_us=LATER)
    log.append(_batch("rec:a", DAYS[1], ["rec:a:1"]), now_us=EARLY)
    log.append(_batch("rpm:x", DAYS[1], ["rpm:x:line:3"]), now_us=EARLY)
    log.append(_batch("aw", DAYS[2], ["aw:1", "not-from-aw"]), now_us=LATER)
    entries = {e["day"]: e for e in log.manifest()}
    assert entries[DAYS[0]]["ref_sources"] == ["sp"]
    assert entries[DAYS[1]]["ref_sources"] == ["rec:a", "rpm:x"]
    assert entries[DAYS[2]]["ref_sources"] is None  # one ref starts with no source: always looked at
    assert log.verify().ok


def test_an_append_from_another_source_reads_no_sealed_day(home, monkeypatch):
    log = EventLog(home)
    for day in DAYS[:2]:
        log.append(_batch("sp", day, [f"sp:frames:{day}"]), now_us=LATER)
    scanned: list[list[str]] = []
    real_scan, real_sealed = log._scan_refs, log._sealed_refs
    monkeypatch.setattr(log, "_scan_refs", lambda refs, sealed, opened: scanned.append(sealed) or real_scan(refs, sealed, opened))
    monkeypatch.setattr(log, "_sealed_refs", lambda day: scanned.append([day]) or real_sealed(day))
    report = log.append(_batch("rec:a", DAYS[2], ["rec:a:1"]), now_us=EARLY)
    assert report.landed["snapshots"] == 1
    assert all(not days for days in scanned)
    # The same source again, with a ref that moved to another day: it is found and skipped.
    report = log.append(_batch("sp", DAYS[2], [f"sp:frames:{DAYS[0]}"]), now_us=EARLY)
    assert report.skipped == 1 and report.landed["snapshots"] == 0
    assert [DAYS[0], DAYS[1]] in scanned


def test_a_sealed_day_of_the_same_source_takes_its_new_rows_as_an_amendment(home):
    log = EventLog(home)
    log.append(_batch("sp", DAYS[0], ["sp:frames:1"]), now_us=LATER)
    log.append(_batch("other", DAYS[1], ["other:1"]), now_us=LATER)
    report = log.append(_batch("sp", DAYS[0], ["sp:frames:1", "sp:frames:2"]), now_us=LATER)
    assert (report.skipped, report.quarantined, report.landed["snapshots"]) == (1, 0, 1)
    assert report.days_amended == [DAYS[0]]


ZONES = sorted(__import__("zoneinfo").available_timezones())


@settings(max_examples=300, deadline=None)
@given(tz=st.sampled_from(ZONES), ts=st.integers(log_module.TS_MIN_US, log_module.TS_MAX_US - 1))
def test_the_screenpipe_importer_files_rows_under_the_logs_day(tz, ts):
    """The importer hands over one local day per batch and the log seals past days as they land:
    if its (cached) day of a row ever differed from the log's, that row would go to another batch
    and be refused as "day ... is sealed". The two must agree in every zone, near midnight too."""
    from capture.importers.common import DaySeen

    days = DaySeen(tz)
    midnight = day_bounds(local_day(ts, tz), tz)[0]
    for t in (ts, midnight, midnight - 1):
        if log_module.TS_MIN_US <= t:
            assert days.day(t) == local_day(t, tz)
    # The cache fills per quarter hour: ask the same quarter hours again, now from the cache.
    assert days.day(midnight - 1) == local_day(midnight - 1, tz)
    assert days.day(ts) == local_day(ts, tz)
