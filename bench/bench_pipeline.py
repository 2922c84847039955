"""Benchmark: the Dagster pipeline on a synthetic corpus.

    .venv/bin/python bench/bench_pipeline.py [--days 61] [--certify-days 51] [--corpus-days N] [--seed 7]

Writes a sample capture of --corpus-days calendar days with `af synth` (capture/synth.py) into
.bench/pipeline/ (kept between runs; long enough to hold --certify-days days with capture, as
the synthetic user takes most weekends off), lands it in a fresh data folder there, then
measures, wall time:

1. full rebuild: the first --days calendar days through Dagster (`build` job, one run,
   in-process executor), i.e. what `af build` does on a fresh warehouse; the rest of the corpus
   is then built in a second run, not timed;
2. nightly: one more run of the build job for the last day alone (the nightly schedule's run);
3. growth: compile time per day (af_pipeline.compiler.compile.compile_day on the day's rows, best of 3)
   in log order; the ratio of the mean over the second half of the days to the mean over the
   first half. Near 1 means a day's cost does not grow with the history before it;
4. certify: `af certify` over the first --certify-days days with capture (one Dagster run over
   their partition range, the independent rebuild in other processes, every check).

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
    p.add_argument("--days", type=int, default=61, help="calendar days in the timed full rebuild")
    p.add_argument("--certify-days", type=int, default=51, help="days with capture to certify")
    p.add_argument("--corpus-days", type=int, default=None,
                   help="calendar days of synthetic capture (default: enough for --certify-days with capture)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / ".bench" / "pipeline"))
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")

    from assets import certify as harness
    from assets.instance import use_home
    from capture.home import Home
    from capture.importers.screenpipe import read_screenpipe
    from capture.log import EventLog
    from capture.synth import generate

    out = Path(args.out)
    # weekends are mostly off: 7/5 calendar days per captured day, and a week to spare
    corpus_days = max(args.corpus_days or args.certify_days * 7 // 5 + 7, args.days)
    sample = out / f"synth-{corpus_days}d-seed{args.seed}"
    if not (sample / "screenpipe.sqlite").exists():
        _say(f"generating {corpus_days} days of synthetic capture into {sample}")
        generate(corpus_days, args.seed, sample)
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
    from capture.timeutil import days_between

    all_days = harness.select_days(home, None, None)
    calendar = days_between(all_days[0], all_days[-1])
    first_part = calendar[: args.days]
    days = [d for d in all_days if d <= first_part[-1]]

    _say(f"full rebuild: {len(first_part)} calendar days ({len(days)} with capture) in one Dagster run")
    build = harness.run_build(home, first_part, _say)
    rest = calendar[args.days:]
    if build.ok and rest:
        _say(f"building the other {len(rest)} days of the corpus (not timed)")
        more = harness.run_build(home, rest, _say)
        build.failures += more.failures
        build.ok = build.ok and more.ok
    if not build.ok:
        print(json.dumps({"error": "build failed", "failures": build.failures}), file=sys.stderr)
        return 1
    days = all_days
    _say("nightly: the last day alone")
    nightly = harness.run_build(home, days[-1:], _say)

    _say("growth: per-day compile time in log order")
    from af_pipeline.compiler.compile import compile_day

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
    _say(f"certify: {len(cdays)} days with capture, {cdays[0]} .. {cdays[-1]}")
    t = time.perf_counter()
    cert = harness.run_certify(home, cdays, _say)
    certify_s = time.perf_counter() - t

    result = {
        "days_with_capture": len([d for d in days if d <= first_part[-1]]),
        "partitions_in_run": len(build.days),  # days with capture: the others are no partitions
        "land_seconds": round(land_s, 2),
        "full_rebuild_seconds": round(build.seconds, 2),
        "full_rebuild_per_captured_day_ms": round(1000 * build.seconds / max(1, len([d for d in days if d <= first_part[-1]])), 1),
        "nightly_day_seconds": round(nightly.seconds, 2),
        "compile_ms_median": round(1000 * statistics.median(per_day), 1),
        "compile_growth_ratio_second_half_over_first": round(ratio, 3) if ratio else None,
        "certify_days": len(cdays),
        "certify_partitions": len(cert["days"]),  # the day partitions of the run: days with capture
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
