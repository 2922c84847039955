"""Rows given to the log as columns (RowColumns, what the screenpipe importer hands over) land
exactly as the same rows given as objects: same report, same quarantine, same bytes on disk."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import capture.log as log_module
from capture.home import Home
from capture.log import EventLog
from capture.log.columns import RowColumns
from capture.model import CaptureBatch, Element, InputEvent
from capture.timeutil import day_bounds

TZ = "Europe/Paris"
HOUR = 3_600_000_000
DAYS = ("2026-03-10", "2026-03-11")
LATER = day_bounds(DAYS[1], TZ)[1] - HOUR  # the first day is due to seal (grace 1 h), the second not yet

bound = st.one_of(st.none(), st.sampled_from([0, 1, 0.0, 0.25, 1.5, -0.5]))
element = st.tuples(st.integers(0, 40), st.sampled_from(DAYS), st.integers(0, 5 * HOUR),
                    st.sampled_from([None, "", "OK", "Save as…"]), st.one_of(st.none(), st.integers(0, 3)),
                    bound, bound)
event = st.tuples(st.integers(0, 40), st.sampled_from(DAYS), st.integers(0, 5 * HOUR),
                  st.sampled_from(["click", "key"]), st.one_of(st.none(), st.integers(-5, 2**40)),
                  st.sampled_from([None, "Firefox"]))


def _batch(elements: list[tuple], events: list[tuple], columns: bool) -> CaptureBatch:
    els = [Element(f"t:el:{i}", day_bounds(d, TZ)[0] + 8 * HOUR + dt, f"{d}:{dt % 7}", "accessibility", None, text,
                   None if i % 3 else f"t:el:{i + 1}", depth, left, width=width)
           for i, d, dt, text, depth, left, width in elements]
    evs = [InputEvent(f"t:ui:{i}", day_bounds(d, TZ)[0] + 8 * HOUR + dt, kind, "monitor_1", x=x, app=app)
           for i, d, dt, kind, x, app in events]
    b = CaptureBatch("t", "synth")
    b.elements = RowColumns.from_rows("elements", els) if columns else els  # type: ignore[assignment]
    b.inputs = RowColumns.from_rows("inputs", evs) if columns else evs  # type: ignore[assignment]
    return b


def _files(home: Home) -> dict[str, object]:
    out: dict[str, object] = {}
    for p in sorted(home.log_dir.rglob("*")):
        if not p.is_file() or p.name == ".lock":
            continue
        if p.name == "manifest.jsonl":  # its time stamp and the chain hashes that cover it differ
            out[p.name] = [{k: v for k, v in json.loads(ln).items() if k not in ("sealed_at", "hash", "prev")}
                           for ln in p.read_bytes().splitlines()]
        else:
            out[str(p.relative_to(home.log_dir))] = p.read_bytes()
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(element, max_size=30), again=st.lists(element, max_size=10),
       events=st.lists(event, max_size=20), bulk=st.booleans(), bad=st.sampled_from([None, math.nan, math.inf]))
def test_rows_as_columns_land_as_rows_do(tmp_path_factory, monkeypatch, first, again, events, bulk, bad):
    """Duplicates within a batch, NaN/Inf bounds (refused), ints in float fields, two days (one
    sealed straight from memory, one open), then a second batch overlapping the first (skipped
    or refused as a conflict): the columnar path gives the same reports and files."""
    monkeypatch.setattr(log_module, "FSYNC", False)
    monkeypatch.setattr(log_module, "BULK_ROWS", 1 if bulk else 10**9)  # open segments via DuckDB, or by line
    if bad is not None and first:  # one row the log refuses (a bound that is no number)
        first = [(*first[0][:5], bad, first[0][6]), *first[1:]]
    results = []
    for columns in (False, True):
        home = Home(tmp_path_factory.mktemp("h") / "home")
        home.init(tz=TZ, grace_hours=1)
        log = EventLog(home)
        reports = [log.append(_batch(first, events, columns), now_us=LATER),
                   log.append(_batch(again + first[:3], events[:2], columns), now_us=LATER)]
        results.append(([r.__dict__ for r in reports], _files(home)))
    assert results[0] == results[1]


def test_row_columns_read_as_their_rows(tmp_path: Path) -> None:
    rows = [Element(f"t:el:{i}", 10**15 + i, "f", "ocr", text=str(i), left=0.5) for i in range(5)]
    block = RowColumns.from_rows("elements", rows)
    assert list(block) == rows and len(block) == 5 and block[2] == rows[2]
    assert list(block.take([4, 0])) == [rows[4], rows[0]]
    assert list(block.where([True, False, True, False, False])) == [rows[0], rows[2]]
    assert list(RowColumns.concat("elements", [block.slice(0, 2), block.slice(2, 5)])) == rows


def test_a_seal_from_memory_leaves_duckdb_returning_what_it_freed(tmp_path: Path) -> None:
    # A bulk import seals day after day on one connection; DuckDB's default keeps up to 128 MiB a
    # query freed, which the 61-day import's peak paid for (docs/benchmarks.md).
    home = Home(tmp_path / "home")
    home.init(tz=TZ, grace_hours=1)
    log = EventLog(home)
    report = log.append(_batch([(1, DAYS[0], 0, "OK", 0, 0.5, 0.25)], [], True), now_us=LATER)
    assert report.days_sealed == [DAYS[0]]
    with log._db() as con:
        for name in ("allocator_flush_threshold", "allocator_bulk_deallocation_flush_threshold"):
            (value,) = con.execute(f"SELECT current_setting('{name}')").fetchone()
            assert value in ("0MB", "0 bytes", "0B", "0"), (name, value)  # (as DuckDB spells it)


one_day_element = st.tuples(st.integers(0, 12), st.integers(0, 5 * HOUR), st.sampled_from(["OK", "Save as…"]),
                            st.one_of(st.none(), st.integers(0, 3)),
                            st.one_of(st.none(), st.sampled_from([0.0, 0.25, 1.5])))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(one_day_element, min_size=1, max_size=25), due=st.booleans(), again=st.booleans())
def test_a_checked_day_out_of_time_order_lands_as_its_sorted_rows_do(tmp_path_factory, monkeypatch, rows, due, again):
    """An importer's day of checked (verified) columns is landed without being put in time order
    first. Its files, report and quarantine are those of the same rows given as objects (which the
    log sorts), also when a ref repeats at other times (the first in time order is kept), when the
    day stays open, and when the same day arrives again."""
    monkeypatch.setattr(log_module, "FSYNC", False)
    day = DAYS[0]
    start = day_bounds(day, TZ)[0] + 8 * HOUR
    els = [Element(f"t:el:{i}", start + dt, f"{day}:{dt % 5}", "accessibility", None, text, None, depth, left)
           for i, dt, text, depth, left in rows]
    results = []
    for columns in (False, True):
        home = Home(tmp_path_factory.mktemp("h") / "home")
        home.init(tz=TZ, grace_hours=1)
        log = EventLog(home)
        reports = []
        for _ in range(2 if again else 1):
            b = CaptureBatch("t", "synth")
            b.elements = RowColumns("elements", RowColumns.from_rows("elements", els).cols,  # type: ignore[assignment]
                                    verified=True) if columns else list(els)
            reports.append(log.append(b, now_us=LATER if due else start))
        results.append(([r.__dict__ for r in reports], _files(home), log.read_day(day).elements))
    assert results[0] == results[1]
    kept = {e.ref: e for e in sorted(els, key=lambda e: e.ts_us)[::-1]}  # the earliest of each ref wins
    assert sorted(results[1][2], key=lambda e: e.ref) == sorted(kept.values(), key=lambda e: e.ref)
