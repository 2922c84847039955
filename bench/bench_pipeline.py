"""Benchmark: the Dagster pipeline on a synthetic corpus.

    .venv/bin/python bench/bench_pipeline.py [--days 61] [--certify-days 51] [--corpus-days N] [--seed 7]

Writes a sample capture of --corpus-days calendar days with `af synth` (capture/synth.py) into
.bench/pipeline/ (kept between runs; long enough to hold --certify-days days with capture, as
the synthetic user takes most weekends off), lands it in a fresh data folder there, then
measures, wall time:

1. full rebuild: the first --days calendar days through Dagster (`build` job, one run,
   in-process executor), i.e. what `af build` does on a fresh warehouse (wall, CPU, and each
   step's own time in the run: the rest is the run's start and Dagster's bookkeeping); the rest of the corpus
   but its last day is then built in a second run, not timed;
   unchanged rebuild: `af build` over the same days again (every day is skipped, no run);
2. nightly: the nightly schedule's tick for the day after the last day, and the run of the
   build job it requests (its tags: the last day's partition), as the daemon launches it but in
   this process: the time is the run's, from start to end; the process start and the imports
   (Dagster, Great Expectations: already loaded by the first run) are not in it;
3. growth: compile time per day (af_pipeline.compiler.compile.compile_day on the day's rows, best of 3
   rounds over all days) in log order; the ratio of the mean over the second half of the days to the mean over the
   first half. Near 1 means a day's cost does not grow with the history before it;
4. certify: `af certify` over the first --certify-days days with capture (one Dagster run over
   their partition range, the independent rebuild in other processes, every check).

``--nightly-only`` measures row 2 alone on the data folder an earlier run left in
.bench/pipeline/home (nothing generated, landed or rebuilt first): one untimed run to load
what the first build would have loaded, then --rounds timed runs of the build job for the
log's last day with the tags the schedule's RunRequest gives it, plus ``af/force`` (that day was
built by the earlier run's nightly, and its steps would skip it unchanged); the best is reported.
Run it with ``--code DIR`` from another checkout's bench to compare (see bench/bench_certify.py).

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
    p.add_argument("--nightly-only", action="store_true",
                   help="only the nightly run, on the data folder an earlier run built (see above)")
    p.add_argument("--rounds", type=int, default=3, help="timed nightly runs with --nightly-only (best reported)")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.nightly_only:
        return _nightly_only(Path(args.out), args.rounds)

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
    if first_part[-1] >= all_days[-1]:  # the nightly run builds the last day: never before
        first_part = [d for d in first_part if d < all_days[-1]]
    days = [d for d in all_days if d <= first_part[-1]]

    _say(f"full rebuild: {len(first_part)} calendar days ({len(days)} with capture) in one Dagster run")
    t = time.process_time()
    build = harness.run_build(home, first_part, _say)
    build_cpu = time.process_time() - t
    from bench.bench_growth import _step_ms

    build_steps = _step_ms(home, build.run_id) if build.run_id else {}  # each step's own time in the run
    t = time.perf_counter()
    again = harness.run_build(home, first_part, _say)
    unchanged_s = time.perf_counter() - t
    rest = [d for d in calendar[len(first_part):] if d < all_days[-1]]
    if build.ok and rest:
        _say(f"building the other {len(rest)} days of the corpus (not timed)")
        more = harness.run_build(home, rest, _say)
        build.failures += more.failures
        build.ok = build.ok and more.ok
    if not build.ok:
        print(json.dumps({"error": "build failed", "failures": build.failures}), file=sys.stderr)
        return 1
    days = all_days
    _say("nightly: the schedule's run for the last day")
    nightly_s, nightly_cpu, nightly_ok = _nightly(home, days[-1], tz)

    _say("growth: per-day compile time in log order")
    from af_pipeline.compiler.compile import compile_day

    log = EventLog(home)
    # Three rounds over every day, not three runs of one day after another: a slow spell of the
    # machine (a minute on a shared VM) then costs every day alike instead of the days it fell
    # on, which alone moved this ratio from 1.07 to 1.15 between two runs of the same code.
    # One day's rows are held at a time (all of them would be gigabytes), so each round reads
    # each day again, untimed.
    compile_day(log.read_day(days[0]))  # warm-up: first-use costs fall on no day
    per_day = [float("inf")] * len(days)
    rows = [0] * len(days)
    for _round in range(3):
        for i, day in enumerate(days):
            cap = log.read_day(day)
            rows[i] = len(cap.snapshots) + len(cap.inputs)
            per_day[i] = min(per_day[i], _timed(compile_day, cap))
            del cap
    half = len(per_day) // 2
    first, second = per_day[:half], per_day[len(per_day) - half:]
    ratio = statistics.mean(second) / statistics.mean(first) if first and statistics.mean(first) > 0 else None
    # the same ratio of the days' snapshot and input rows: how much of it is the days' content
    rows_ratio = statistics.mean(rows[len(rows) - half:]) / statistics.mean(rows[:half]) if half and sum(rows[:half]) else None

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
        "full_rebuild_cpu_seconds": round(build_cpu, 2),
        "full_rebuild_steps_seconds": {k: round(v / 1000, 2) for k, v in sorted(build_steps.items())},
        "unchanged_rebuild_seconds": round(unchanged_s, 2),
        "unchanged_rebuild_skipped_days": len(again.skipped),
        "nightly_day_seconds": round(nightly_s, 2),
        "nightly_day_cpu_seconds": round(nightly_cpu, 2),
        "compile_ms_median": round(1000 * statistics.median(per_day), 1),
        "compile_growth_ratio_second_half_over_first": round(ratio, 3) if ratio else None,
        "rows_growth_ratio_second_half_over_first": round(rows_ratio, 3) if rows_ratio else None,
        "certify_days": len(cdays),
        "certify_partitions": len(cert["days"]),  # the day partitions of the run: days with capture
        "certify_seconds": round(certify_s, 2),
        "certify_verdict": cert["verdict"],
    }
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if cert["verdict"] == "pass" and nightly_ok else 1


def _nightly_only(out: Path, rounds: int) -> int:
    """Row 2 alone, on the folder an earlier full run left (see the module docstring)."""
    from assets import certify as harness
    from assets.unchanged import FORCE_TAG
    from capture.home import Home

    home = Home(out / "home")
    if not home.warehouse_path.exists():
        print(json.dumps({"error": f"no built data folder at {home.root}: run bench/bench_pipeline.py first"}),
              file=sys.stderr)
        return 2
    day = harness.select_days(home, None, None)[-1]
    runs = []
    for i in range(rounds + 1):  # the first only loads what the first build of a process loads
        wall, cpu, ok = _nightly(home, day, home.settings().tz, extra_tags={FORCE_TAG: "true"}, skipped_ok=True)
        if not ok:
            print(json.dumps({"error": "the nightly run failed"}), file=sys.stderr)
            return 1
        if i:
            runs.append({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)})
            _say(f"nightly {day}: {wall:.2f} s wall, {cpu:.2f} s CPU")
    best = min(runs, key=lambda r: r["wall_s"])
    result = {"nightly_day": day, "nightly_day_seconds": best["wall_s"], "nightly_day_cpu_seconds": best["cpu_s"],
              "nightly_runs": runs}
    (out / "result-nightly.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


def _nightly(home, day: str, tz: str, extra_tags: dict[str, str] | None = None,  # type: ignore[no-untyped-def]
             skipped_ok: bool = False) -> tuple[float, float, bool]:
    """The nightly schedule's tick for ``day``, then the run it requests, timed (wall, CPU).
    ``skipped_ok``: the day is already published (--nightly-only), so the tick skips it; the run
    is then the one its RunRequest would have launched."""
    from datetime import date, datetime, timedelta

    import dagster as dg

    from assets.definitions import BUILD_JOB, build_definitions
    from assets.instance import instance
    from capture.timeutil import zone

    inst = instance(home)
    defs = build_definitions(home)
    when = datetime.combine(date.fromisoformat(day) + timedelta(days=1), datetime.min.time().replace(hour=12),
                            tzinfo=zone(tz))
    ctx = dg.build_schedule_context(instance=inst, scheduled_execution_time=when, repository_def=defs.get_repository_def())
    with dg.partition_loading_context(dynamic_partitions_store=inst):
        requests = defs.resolve_schedule_def("nightly_compile").evaluate_tick(ctx).run_requests or []
    if skipped_ok and not requests:
        requests = [dg.RunRequest(run_key=f"nightly-{day}", partition_key=day)]
    if not requests or requests[0].partition_key != day:
        raise SystemExit(f"the nightly schedule did not request {day}: {requests}")
    req = requests[0]
    tags = {**req.tags, "dagster/partition": str(req.partition_key), **(extra_tags or {})}
    wall, cpu = time.perf_counter(), time.process_time()
    result = defs.resolve_job_def(BUILD_JOB).execute_in_process(instance=inst, tags=tags, raise_on_error=False)
    return time.perf_counter() - wall, time.process_time() - cpu, bool(result.success)


def _timed(fn, *a) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn(*a)
    return time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())
