"""Day after day in one process: does anything stay behind when an open day seals?

    .venv/bin/python -m bench.soak_rollover [--days 12] [--snapshots 900]

One data folder (UTC, grace 0 h), one Memory as the MCP server holds it, and for each day: its
capture lands in the open segment, get_context(hours=3) is asked 3 times late in the day, the
day seals (as the first sync pass after midnight does), and get_context(hours=3) is asked 3 times
just after midnight (the window still covers the sealed day). After each day: RSS and the Python
memory tracemalloc sees held. The soak (bench/soak.py) runs across one real midnight; this runs
across many in minutes, with an explicit clock for the reader (never for the log's own checks).
Prints one JSON line per day (stdout).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import tracemalloc
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the row builder the log's tests use


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.soak_rollover", description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=12)
    ap.add_argument("--snapshots", type=int, default=900, help="snapshots a day (each with an input and an element)")
    args = ap.parse_args(argv)
    import psutil
    from test_log import batch

    from af_pipeline.interfaces.memory import Memory
    from capture.home import Home
    from capture.log import EventLog
    from capture.timeutil import day_bounds

    hour = 3_600_000_000
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        home.init(tz="UTC", grace_hours=0)
        clock = [0]
        m = Memory(home, clock=lambda: clock[0])
        proc = psutil.Process()
        tracemalloc.start()
        first = date(2026, 3, 2)
        for k in range(args.days):
            day = (first + timedelta(days=k)).isoformat()
            start = day_bounds(day, "UTC")[0]
            log = EventLog(home)  # a sync pass makes its own
            log.append(batch(day, n=args.snapshots, tz="UTC"), now_us=start + 23 * hour)
            for i in range(3):
                clock[0] = start + 23 * hour + i * 10_000_000
                m.context(m.period(hours=3))
            EventLog(home).seal_due(start + 24 * hour + 60_000_000)
            for i in range(3):
                clock[0] = start + 24 * hour + 30 * 60_000_000 + i * 10_000_000
                m.context(m.period(hours=3))
            gc.collect()
            print(json.dumps({"day": day, "rss_mb": round(proc.memory_info().rss / 2**20, 1),
                              "python_held_mb": round(tracemalloc.get_traced_memory()[0] / 2**20, 2),
                              "captures": len(m._captures), "docs": len(m._docs), "pieces": len(m._slices)}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
