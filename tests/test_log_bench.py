"""Event-log throughput on a 61-day corpus the size of the issue's benchmark (opt-in, no timing asserts).

Run:  AF_LOG_BENCH=1 .venv/bin/pytest -s -q tests/test_log_bench.py

It builds ~140k snapshots, ~350k input events and ~2M element rows in memory (what an importer
hands over), appends them to an empty log (every day is past, so every day seals), appends them
again (idempotence: everything skipped), verifies the chain and reads days back. It prints a table:
wall and CPU time, rows per second, and the peak memory the log added on top of the batch.
"""

from __future__ import annotations

import os
import resource
import statistics
import time

import pytest

from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch, Element, InputEvent, Snapshot
from capture.timeutil import day_bounds, days_between, local_day

pytestmark = pytest.mark.skipif(not os.environ.get("AF_LOG_BENCH"), reason="benchmark: set AF_LOG_BENCH=1")

TZ = "Europe/Paris"
DAYS = days_between("2026-01-01", "2026-03-02")  # 61 days
PER_DAY = 2_300  # snapshots a day


def _corpus() -> CaptureBatch:
    b = CaptureBatch("bench:screenpipe.sqlite", "screenpipe")
    for day in DAYS:
        start = day_bounds(day, TZ)[0] + 8 * 3_600_000_000
        for i in range(PER_DAY):
            ts = start + i * 6_000_000
            fid = f"{day}:{i}"
            b.snapshots.append(
                Snapshot(f"sp:frames:{fid}", ts, f"monitor_{i % 2}", "Google Chrome", f"Pull request {i} - Chrome",
                         f"https://github.com/org/repo/pull/{i}", True, "click", i % 5 == 0, fid)
            )
            for j in range(3 if i % 2 else 2):
                b.inputs.append(
                    InputEvent(f"sp:ui:{fid}:{j}", ts + j * 1000, "click", f"monitor_{i % 2}", 100 + j, 200, "left",
                               app="Google Chrome", window="Pull request", element_role="AXButton",
                               element_name="Merge", source_frame_id=fid)
                )
            for j in range(14 if i % 4 else 15):
                b.elements.append(
                    Element(f"sp:el:{fid}:{j}", ts, fid, "accessibility", "AXStaticText", f"element text {j}",
                            None, 2, 0.1, 0.02 * j, 0.3, 0.04)
                )
    return b


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_bench_append_seal_reimport_verify_read(tmp_path):
    batch = _corpus()
    rows = batch.count()
    home = Home(tmp_path / "home")
    home.init(tz=TZ)
    log = EventLog(home)
    now = day_bounds("2026-03-10", TZ)[0]
    results = []

    rss_before = _rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    first = log.append(batch, now_us=now)
    results.append(("append + seal 61 days", time.perf_counter() - wall, time.process_time() - cpu, rows))
    rss_added = _rss_mb() - rss_before
    assert sum(first.landed.values()) == rows and len(first.days_sealed) == len(DAYS)

    wall, cpu = time.perf_counter(), time.process_time()
    again = log.append(batch, now_us=now)
    results.append(("re-import (all skipped)", time.perf_counter() - wall, time.process_time() - cpu, rows))
    assert sum(again.landed.values()) == 0 and again.skipped == rows

    wall, cpu = time.perf_counter(), time.process_time()
    report = log.verify()
    results.append(("verify chain + sha256", time.perf_counter() - wall, time.process_time() - cpu, rows))
    assert report.ok and report.entries == len(DAYS)

    # The screenpipe importer appends one local day at a time: the same corpus, 61 appends.
    per_day: dict[str, CaptureBatch] = {}
    for kind in ("snapshots", "inputs", "elements"):
        for row in batch.rows(kind):
            day = local_day(row.ts_us, TZ)
            per_day.setdefault(day, CaptureBatch(batch.source_id, batch.recorder)).rows(kind).append(row)
    home2 = Home(tmp_path / "home-per-day")
    home2.init(tz=TZ)
    log2 = EventLog(home2)
    wall, cpu = time.perf_counter(), time.process_time()
    for day in sorted(per_day):
        log2.append(per_day[day], now_us=now)
    results.append(("append + seal, day by day", time.perf_counter() - wall, time.process_time() - cpu, rows))
    assert len(log2.days()) == len(DAYS) and log2.chain_head() and log2.verify().ok

    walls, cpus = [], []
    for day in DAYS[:15]:
        wall, cpu = time.perf_counter(), time.process_time()
        cap = log.read_day(day)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    day_rows = len(cap.snapshots) + len(cap.inputs) + len(cap.elements)

    print()
    print(f"corpus: {len(batch.snapshots):,} snapshots, {len(batch.inputs):,} inputs, "
          f"{len(batch.elements):,} elements over {len(DAYS)} days ({os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f})")
    print(f"| {'step':<26} | {'wall s':>7} | {'cpu s':>7} | {'rows/s (wall)':>14} |")
    print(f"|{'-' * 28}|{'-' * 9}|{'-' * 9}|{'-' * 16}|")
    for name, w, c, n in results:
        print(f"| {name:<26} | {w:7.2f} | {c:7.2f} | {n / w:14,.0f} |")
    print(f"| {'read_day (median of 15)':<26} | {statistics.median(walls) * 1000:5.0f}ms | "
          f"{statistics.median(cpus) * 1000:5.0f}ms | {day_rows:>9,} rows |")
    print(f"peak memory added by the log during append: {rss_added:.0f} MB "
          f"(process peak {_rss_mb():.0f} MB, the batch itself included)")
