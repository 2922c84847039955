"""Event-log costs the recorder and the compiler pay on every call (not part of `python -m bench`).

    .venv/bin/python bench/bench_log.py flush [--sealed 0 5 20 40]
    .venv/bin/python bench/bench_log.py read HOME DAY [DAY ...]

flush: a data folder with N sealed past days imported from another source (2,300 snapshots,
5,000 inputs, 2,000 elements a day) and an open "today" holding 3,000 recorder rows; then the
median cost of 30 appends of 40 recorder rows each (what `af record` flushes every few seconds).
Each size runs again with yesterday sealed from the recorder's own source (recording across
midnight), the kind of sealed day such an append still has to look at.
fsync is off so the figure is the log's own work, not the disk's.

read: median wall and CPU time of EventLog.read_day on days of an existing data folder (for
example one filled by `af synth --days 3 --seed 1 --out /tmp/s3 && af import screenpipe
/tmp/s3/screenpipe.sqlite --home /tmp/h3 --tz Europe/Paris`), in a fresh log object per read and
again warm, plus the same with elements only for the snapshots that have clicks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import capture.log as log_module  # noqa: E402
from capture.home import Home  # noqa: E402
from capture.log import EventLog  # noqa: E402
from capture.model import CaptureBatch, Element, InputEvent, Snapshot  # noqa: E402
from capture.timeutil import day_bounds, days_between  # noqa: E402

TZ = "Europe/Paris"
TODAY = "2026-03-01"


def _day_batch(source: str, day: str, n: int, offset_s: int = 8 * 3_600) -> CaptureBatch:
    b = CaptureBatch(source, "screenpipe")
    start = day_bounds(day, TZ)[0] + offset_s * 1_000_000
    for i in range(n):
        ts = start + i * 6_000_000
        fid = f"{day}:{i}"
        b.snapshots.append(Snapshot(f"{source}:frames:{fid}", ts, f"monitor_{i % 2}", "Chrome", f"Page {i}",
                                    source_frame_id=fid))
        for j in range(2):
            b.inputs.append(InputEvent(f"{source}:ui:{fid}:{j}", ts + j, "click", "monitor_0", x=1, y=2))
        if i % 8 == 0:
            for j in range(7):
                b.elements.append(Element(f"{source}:el:{fid}:{j}", ts, fid, "accessibility", "button", f"b{j}"))
    return b


def _flush_cost(n_sealed: int, flushes: int = 30, same_source: bool = False) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(tmp)
        home.init(tz=TZ)
        log = EventLog(home)
        now = day_bounds(TODAY, TZ)[0] + 12 * 3_600_000_000
        past = days_between("2025-12-01", "2026-02-27")[-n_sealed:] if n_sealed else []
        for day in past:
            log.append(_day_batch("screenpipe:db.sqlite", day, 2_300), now_us=now)
        recorder = "recorder:host:20260301T000000Z-1"
        seq = 0
        if same_source:  # the recorder ran across midnight: yesterday is sealed and shares its source
            b = _day_batch(recorder, "2026-02-28", 2_300, offset_s=8 * 3_600)
            b.recorder = "recorder"
            log.append(b, now_us=now)

        def flush(n: int) -> CaptureBatch:
            nonlocal seq
            b = CaptureBatch(recorder, "recorder")
            for _ in range(n):
                seq += 1
                ts = day_bounds(TODAY, TZ)[0] + 9 * 3_600_000_000 + seq * 100_000
                b.inputs.append(InputEvent(f"{recorder}:{seq}", ts, "key", "monitor_0"))
            return b

        log.append(flush(3_000), now_us=now, seal=False)
        walls, cpus = [], []
        for _ in range(flushes):
            batch = flush(40)
            w, c = time.perf_counter(), time.process_time()
            log.append(batch, now_us=now, seal=False)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        assert len(log.read_day(TODAY).inputs) == 3_000 + 40 * flushes
        log.close()
        return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def _read_cost(home: Home, day: str, reps: int = 7) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, warm in (("cold", False), ("warm", True)):
        walls, cpus = [], []
        log = EventLog(home)
        log.read_day(day)
        for _ in range(reps):
            if not warm:
                log.close()
                log = EventLog(home)
            w, c = time.perf_counter(), time.process_time()
            cap = log.read_day(day)
            if label == "warm":
                _ = cap.elements  # force every element, whatever read_day defers
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        out[f"{label}_wall_ms"] = statistics.median(walls) * 1000
        out[f"{label}_cpu_ms"] = statistics.median(cpus) * 1000
    cap = EventLog(home).read_day(day)
    out["snapshots"], out["inputs"], out["elements"] = len(cap.snapshots), len(cap.inputs), len(cap.elements)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    f = sub.add_parser("flush")
    f.add_argument("--sealed", type=int, nargs="+", default=[0, 5, 20, 40])
    r = sub.add_parser("read")
    r.add_argument("home")
    r.add_argument("days", nargs="+")
    args = p.parse_args()
    log_module.FSYNC = False
    if args.what == "flush":
        print("| sealed days (other source) | + yesterday sealed, same source | flush wall ms (median of 30) "
              "| flush CPU ms |")
        print("|---:|---|---:|---:|")
        for n in args.sealed:
            for same in (False, True):
                wall, cpu = _flush_cost(n, same_source=same)
                print(f"| {n} | {'yes' if same else 'no'} | {wall:.1f} | {cpu:.1f} |", flush=True)
    else:
        home = Home(args.home)
        print("| day | snapshots | inputs | elements | cold wall ms | cold CPU ms | warm wall ms | warm CPU ms |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for day in args.days:
            m = _read_cost(home, day)
            print(f"| {day} | {m['snapshots']:.0f} | {m['inputs']:.0f} | {m['elements']:.0f} | "
                  f"{m['cold_wall_ms']:.1f} | {m['cold_cpu_ms']:.1f} | {m['warm_wall_ms']:.1f} | "
                  f"{m['warm_cpu_ms']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
