"""Benchmark: the raw layer's cost per day as the history grows (raw_day, then the day's capture read back).

    .venv/bin/python bench/bench_raw_layer.py DATA_FOLDER [--days N] [--code DIR] [--out DIR]

DATA_FOLDER is a landed data folder (bench_growth keeps one: .bench/growth/landed-*). Each day
with capture, in log order, gets ``day_work.raw_day`` then ``store.load_capture(lazy_elements)``
with the elements of 50 snapshots, on one warehouse file that holds every earlier day; wall and
CPU time of each are recorded. ``--code DIR`` imports the pipeline from another checkout (e.g.
``git archive <commit> | tar -x -C DIR``) so two layouts can be compared side by side on the
same folder: run it once per checkout, alternating. Prints JSON: per-day times, the medians of
the first and last 10 days, and the warehouse size.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_raw_layer.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--days", type=int, default=0, help="only the first N days with capture (default all)")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout to import the pipeline from")
    ap.add_argument("--out", type=Path, default=ROOT / ".bench" / "raw-layer")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.code.resolve()))
    import duckdb

    from af_pipeline.warehouse import day_work, store
    from capture.home import Home
    from capture.log import EventLog

    log = EventLog(Home(args.folder))
    days = [d.day for d in log.days() if d.counts.get("snapshots", 0)]
    days = days[: args.days] if args.days else days
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    con = duckdb.connect(str(args.out / "w.duckdb"))
    rows = []
    for day in days:
        w, c = time.perf_counter(), time.process_time()
        day_work.raw_day(con, log, day)
        w1, c1 = time.perf_counter(), time.process_time()
        cap = store.load_capture(con, day, lazy_elements=True)
        if cap.element_source is not None:
            cap.element_source.of_snapshots([s.source_frame_id for s in cap.snapshots[:50] if s.source_frame_id])
        w2, c2 = time.perf_counter(), time.process_time()
        rows.append({"day": day, "raw_day_s": w1 - w, "raw_day_cpu_s": c1 - c, "load_s": w2 - w1, "load_cpu_s": c2 - c1})
    con.close()
    k = min(10, len(rows) // 2)

    def med(key: str, part: list[dict[str, object]]) -> float:
        return round(1000 * statistics.median(float(r[key]) for r in part), 1)  # type: ignore[arg-type]

    summary = {key: {"first_ms": med(key, rows[:k]), "last_ms": med(key, rows[-k:])}
               for key in ("raw_day_s", "raw_day_cpu_s", "load_s", "load_cpu_s")}
    print(json.dumps({"code": str(args.code), "days": len(rows), "summary": summary,
                      "raw_day_cpu_total_s": round(sum(r["raw_day_cpu_s"] for r in rows), 2),
                      "warehouse_mb": round((args.out / "w.duckdb").stat().st_size / 1e6, 1), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
