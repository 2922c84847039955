"""Benchmark: how long `af synth` takes to write a corpus, and how big it is.

    .venv/bin/python bench/bench_synth.py [--days 61] [--seed 1] [--out DIR]

Prints one Markdown table row per run: wall and CPU seconds, rows per table, rows written per
wall second, database size and peak memory. The target is a 61-day corpus (about 140k frames,
350k input events, 2M element rows) in under a minute. Wall time depends on what else the
machine runs; CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capture.synth import generate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=61)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="output folder (default: a temporary folder, removed afterwards)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        r = generate(args.days, args.seed, out,
                     progress=lambda i, n, day, _c: print(f"\r  day {i}/{n} {day}", end="", file=sys.stderr))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        print(file=sys.stderr)
        size_mb = r.db_path.stat().st_size / 1e6
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = r.frames + r.ui_events + r.elements
    print("| days | seed | wall s | CPU s | frames | ui_events | elements | rows/s (wall) | DB MB | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {r.days} | {args.seed} | {wall:.1f} | {cpu:.1f} | {r.frames:,} | {r.ui_events:,} | {r.elements:,} "
          f"| {rows / wall:,.0f} | {size_mb:.0f} | {peak_mb:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
