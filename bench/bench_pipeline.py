"""Benchmark: the Dagster pipeline on a synthetic corpus.

    .venv/bin/python bench/bench_pipeline.py [--days 61] [--certify-days 51] [--seed 7]

Writes a sample capture with `af synth` (capture/synth.py) into .bench/pipeline/ (kept between
runs), lands it in a fresh data folder there, then measures, wall time:

1. full rebuild: every day through Dagster (`build` job, one run, in-process executor), i.e.
   what `af build` does on a fresh warehouse;
2. nightly: one more run of the build job for the last day alone (the nightly schedule's run);
3. growth: compile time per day (af_pipeline.compile.compile_day on the day's rows, best of 3)
   in log order; the ratio of the mean over the second half of the days to the mean over the
   first half. Near 1 means a day's cost does not grow with the history before it;
4. certify: `af certify` over the first --certify-days days (one Dagster run over the range, the
   independent rebuild in another process, every check).

Prints a JSON summary (also written to .bench/pipeline/result.json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _say(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--days", type=int, default=61)
    p.add_argument("--certify-days", type=int, default=51)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / ".bench" / "pipeline"))
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")

    from assets.instance import use_home
    from capture.home import Home
    from capture.importers.screenpipe import read_screenpipe
    from capture.log import EventLog
    from capture.synth import generate
    from certification import harness

    out = Path(args.out)
    sample = out / f"synth-{args.days}d-seed{args.seed}"
    if not (sample / "screenpipe.sqlite").exists():
        _say(f"generating {args.days} days of synthetic capture into {sample}")
        generate(args.days, args.seed, sample)
    home = Home(out / "home")
    if home.root.exists():
        shutil.rmtree(home.root)
    tz = json.loads((sample / "truth.json").read_text()).get("tz", "UTC")
    home.init(tz=tz)
    use_home(home)
    _say("landing the capture in the event log")
    t = time.perf_counter()
    EventLog(home).append(read_screenpipe(sample / "screenpipe.sqlite"))
    land_s = time.perf_counter() - t
    days = harness.select_days(home, None, None)

    _say(f"full rebuild: {len(days)} days in one Dagster run")
    build = harness.run_build(home, days, _say)
    if not build.ok:
        print(json.dumps({"error": "build failed", "failures": build.failures}), file=sys.stderr)
        return 1
    _say("nightly: the last day alone")
    nightly = harness.run_build(home, days[-1:], _say)

    _say("growth: per-day compile time in log order")
    from af_pipeline.compile import compile_day

    log = EventLog(home)
    per_day = []
    for day in days:
        cap = log.read_day(day)
        best = min(_timed(compile_day, cap) for _ in range(3))
        per_day.append(best)
    half = len(per_day) // 2
    first, second = per_day[:half], per_day[len(per_day) - half:]
    ratio = statistics.mean(second) / statistics.mean(first) if first and statistics.mean(first) > 0 else None

    cdays = days[: args.certify_days]
    _say(f"certify: {len(cdays)} days")
    t = time.perf_counter()
    cert = harness.run_certify(home, cdays, _say)
    certify_s = time.perf_counter() - t

    from capture.timeutil import days_between

    result = {
        "days_with_capture": len(days),
        "partitions_in_run": len(days_between(days[0], days[-1])),
        "land_seconds": round(land_s, 2),
        "full_rebuild_seconds": round(build.seconds, 2),
        "full_rebuild_per_captured_day_ms": round(1000 * build.seconds / len(days), 1),
        "nightly_day_seconds": round(nightly.seconds, 2),
        "compile_ms_median": round(1000 * statistics.median(per_day), 1),
        "compile_growth_ratio_second_half_over_first": round(ratio, 3) if ratio else None,
        "certify_days": len(cdays),
        "certify_seconds": round(certify_s, 2),
        "certify_verdict": cert["verdict"],
    }
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if cert["verdict"] == "pass" and nightly.ok else 1


def _timed(fn, *a) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn(*a)
    return time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())
