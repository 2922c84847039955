"""Benchmark: does day N cost more when there are N-1 days of history before it?

    .venv/bin/python bench/bench_growth.py [--days 365] [--sample 20] [--repeat 2] [--seed 1] [--out DIR] [--profile]
                                           [--history-days N [--history-only] [--rounds R]]

DESIGN anchor: "day N compile cost vs history length: second-half / first-half ratio at most 1.1
at 365 days". What a user pays every night is not the pure compile alone, so this measures three
things, each in log order over the days that have capture:

(a) read:    EventLog.read_day(day) on the sealed log (best of 2), every day;
(b) compile: af_pipeline.compiler.compile.compile_day on that day's rows (best of 3), every day;
(c) nightly: one run of the Dagster `build` job for the day alone (raw_day -> frames ->
             enriched_input -> page_refs -> day_document -> context_block -> published_day), on a
             warehouse and Dagster instance that already hold every earlier day, in a process of
             its own (Dagster imported before the timer starts), i.e. what the nightly schedule
             does. Building all days one run at a time would take hours, so the first day is
             built once (untimed, a warm-up), the next --sample days one run each (timed), the
             days between them and the last --sample days in ONE range run (not timed), then
             the last --sample days one run each (timed). Then --repeat - 1 more rounds
             (default 1): every sample day built again (forced, as `af build --force`: the
             same work), a first-sample day in a copy of the folder as the first sample left
             it and a last-sample day in the folder now, by turns, each in a fresh process;
             per day its best wall and each step's best are kept.

(d) (--history-days N): each warehouse step of one nightly day (the day work of every asset
             and the checkpoint the run's connection makes when it closes), without Dagster, on a
             warehouse holding --sample days and on one holding N days of history (the --sample
             days built, then copied under earlier day keys, document files included, and flushed to
             disk before each round), best CPU of --rounds interleaved rounds (default 21: with
             5, a 50 ms step's ratio swung 0.85-1.30 from run to run on a 2-core VM), and the
             median ratio beside it: the ratio per step says whether a step's cost follows
             the history in the warehouse. --history-only measures (d) alone, on a corpus of
             --sample + 1 days with capture or more.

Ratios: (a) and (b) mean of the second half of the days over the mean of the first half; (c) the
mean of the last sample over the mean of the first sample (each day's best run). The same ratio of (b) on just the
sample days is printed beside (c): it says how much of (c)'s ratio is the days' content (later
days can simply be busier) rather than history. The target for each ratio is at most 1.1.

The corpus (`af synth --days D --seed S`) and a pristine copy of the data folder it lands in are
kept under --out (default .bench/growth/), so a rerun skips generation and import. Every run
builds in a fresh copy (DIR/home). --profile also builds each timed sample day again (forced,
untimed) under cProfile, writes DIR/first.prof and DIR/last.prof and lists the functions whose cumulative time
grew most from the first sample to the last.

Progress goes to stderr; stdout gets a table and then the JSON summary, which is also written to
DIR/result.json. Exit 1 if a build failed, else 0 (a ratio over target is reported, not an error).
Wall times depend on what else runs: the load average before and after is recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import BENCH_DIR, dir_mb, run_measured, say  # noqa: E402

TARGET = 1.1
# In the past, so every day of a 365-day corpus is sealed on landing, as a year of real history
# is (af synth's default start runs into the future: those days would stay open, read from JSONL).
DEFAULT_START = "2025-06-01"
DEFAULT_OUT = BENCH_DIR / "growth"


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def halves_ratio(xs: Sequence[float]) -> float | None:
    """Mean of the second half over the mean of the first half (the middle item of an odd count
    belongs to neither)."""
    half = len(xs) // 2
    if half == 0:
        return None
    first = statistics.mean(xs[:half])
    return statistics.mean(xs[len(xs) - half:]) / first if first > 0 else None


def ratio(first: Sequence[float], last: Sequence[float]) -> float | None:
    if not first or not last or statistics.mean(first) <= 0:
        return None
    return statistics.mean(last) / statistics.mean(first)


def _ms(xs: Sequence[float]) -> float | None:
    return round(1000 * statistics.median(xs), 1) if xs else None


def _r(x: float | None) -> float | None:
    return round(x, 3) if x is not None else None


def _best(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(runs):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


# ------------------------------------------------------------------ corpus and data folder

def corpus(out: Path, days: int, seed: int, start: str) -> Path:
    """The synthetic screenpipe database, generated once (generation is deterministic)."""
    folder = out / f"synth-{days}d-seed{seed}-from{start}"
    if not ((folder / "screenpipe.sqlite").exists() and (folder / "truth.json").exists()):
        from capture.synth import generate

        say(f"generating {days} days of synthetic capture (seed {seed}, from {start}) into {folder}")
        generate(days, seed, folder, start_day=start,
                 progress=lambda i, n, day, _c: print(f"\r  day {i}/{n} {day}", end="", file=sys.stderr, flush=True))
        print(file=sys.stderr)
    return folder


def landed_home(out: Path, sample: Path) -> Path:
    """A data folder holding the whole corpus in its event log and nothing else, kept as a
    template: each run copies it, so a rerun does not import 365 days again."""
    from capture.home import Home
    from capture.importers.screenpipe import read_screenpipe
    from capture.log import EventLog

    template = out / f"landed-{sample.name}"
    if (template / ".complete").exists():
        return template
    if template.exists():
        shutil.rmtree(template)  # an interrupted landing: start again
    home = Home(template)
    home.init(tz=json.loads((sample / "truth.json").read_text()).get("tz", "UTC"))
    say(f"landing {sample.name} in the event log of {template} (once; later runs copy it)")
    t = time.perf_counter()
    report = EventLog(home).append(read_screenpipe(sample / "screenpipe.sqlite"), progress=lambda m: say(f"  {m}"))
    say(f"  landed in {time.perf_counter() - t:.0f} s: {report}"[:300])
    (template / ".complete").write_text("ok\n")
    return template


# ------------------------------------------------------------------ (a) and (b)

def read_and_compile(home: Any, days: list[str]) -> dict[str, list[float]]:
    from af_pipeline.compiler.compile import compile_day
    from capture.log import EventLog

    log = EventLog(home)
    read_s: list[float] = []
    compile_s: list[float] = []
    for i, day in enumerate(days, 1):
        print(f"\r  read + compile: day {i}/{len(days)} {day}", end="", file=sys.stderr, flush=True)
        r, cap = _best(lambda d=day: log.read_day(d), 2)  # type: ignore[misc]
        c, _ = _best(lambda cap=cap: compile_day(cap), 3)  # type: ignore[misc]
        read_s.append(r)
        compile_s.append(c)
    print(file=sys.stderr)
    log.close()
    return {"read_s": read_s, "compile_s": compile_s}


# ------------------------------------------------------------------ (c) the nightly Dagster path

def _step_ms(home: Any, run_id: str) -> dict[str, float]:
    """Each step's own duration in one run, from the run's STEP_SUCCESS events."""
    from dagster import DagsterEventType

    from assets.instance import instance

    out: dict[str, float] = {}
    for entry in instance(home).all_logs(run_id, of_type=DagsterEventType.STEP_SUCCESS):
        ev = entry.dagster_event
        if ev is not None and ev.step_key:
            out[ev.step_key] = float(ev.step_success_data.duration_ms)
    return out


def _build_timed(home: Any, day: str, prof: cProfile.Profile | None = None, force: bool = False) -> dict[str, Any]:
    """One nightly run for one day in this process, timed as the user pays it (definitions + run).
    ``force``: the day is built again although it is built already (af/force), as `af build
    --force` does; else a day built already is skipped as unchanged."""
    from assets import certify as harness

    t = time.perf_counter()
    if prof is not None:
        prof.enable()
    try:
        outcome = harness.run_build(home, [day], force=force)
    finally:
        if prof is not None:
            prof.disable()
    wall = time.perf_counter() - t
    if not outcome.ok:
        raise RuntimeError(f"the build of {day} failed: {'; '.join(outcome.failures)[:300]}")
    return {"day": day, "wall_s": wall, "run_s": outcome.seconds, "steps_ms": _step_ms(home, outcome.run_id)}


def _one_build_child(home_dir: Path, day: str, profile_out: Path | None, force: bool = False) -> int:
    """--one-build: a fresh process's nightly run (Dagster imported first, untimed, as a run
    process has it before its run starts); the timings as JSON on stdout."""
    from assets import definitions  # noqa: F401
    from assets.instance import use_home
    from capture.home import Home

    home = Home(home_dir)
    use_home(home)
    prof = cProfile.Profile() if profile_out is not None else None
    result = _build_timed(home, day, prof, force)
    if prof is not None and profile_out is not None:
        prof.dump_stats(str(profile_out))
    print(json.dumps(result))
    return 0


def build_one(home: Any, day: str, profile_out: Path | None = None, force: bool = False) -> dict[str, Any]:
    """One nightly run for one day, in a process of its own, as the schedule launches it. Run in
    this process, after the others and the range run, the last sample measured 1.08-1.33x per
    step where fresh processes measure 0.82-1.09x (docs/benchmarks.md, session 28). ``force``:
    build the day again although it is built (see _build_timed)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one-build", day, "--home", str(home.root)]
    if profile_out is not None:
        cmd += ["--profile-out", str(profile_out)]
    if force:
        cmd.append("--force")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT))
    if proc.returncode != 0:
        raise RuntimeError(f"the nightly run of {day} failed (exit {proc.returncode}): {proc.stderr[-600:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def build_sample(home: Any, days: list[str], label: str, profile_to: Path | None) -> list[dict[str, Any]]:
    """Each day's nightly run, in a fresh process (the runs of again_interleaved join them later)."""
    runs = []
    for i, day in enumerate(days, 1):
        runs.append(_best_run([build_one(home, day)]))
        say(f"  {label}: day {i}/{len(days)} {day}: {runs[-1]['wall_s']:.2f} s")
    if profile_to is not None:
        parts = []
        for i, day in enumerate(days, 1):
            say(f"  {label}: profiling day {i}/{len(days)} {day} (built again, untimed)")
            parts.append(profile_to.with_suffix(f".{i}.prof"))
            build_one(home, day, parts[-1], force=True)  # not forced, the run would only skip the day
        pstats.Stats(*map(str, parts)).dump_stats(str(profile_to))
        for part in parts:
            part.unlink()
    return runs


def _best_run(tries: list[dict[str, Any]]) -> dict[str, Any]:
    """A day's runs as one: the best wall, each step's best, every try kept."""
    best = min(tries, key=lambda r: r["wall_s"])
    steps = {n: min(r["steps_ms"][n] for r in tries if n in r["steps_ms"]) for n in best["steps_ms"]}
    return {**best, "steps_ms": steps, "tries": tries}


def again_interleaved(small: Any, first: list[dict[str, Any]], home: Any, last: list[dict[str, Any]],
                      rounds: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``rounds`` more runs of every sample day, forced (the same work as its nightly run: 885-908
    ms against about 900 ms), a first-sample day in ``small`` (the data folder as it was when the
    first sample was built) and a last-sample day in ``home`` by turns, each in a fresh process.

    Why: the two samples are minutes apart, and on a shared 2-core VM a slow spell of a minute
    (runs of 1.1-2.3 s among 0.8-1.0 s) lands on one sample only; with one run a day the same
    code measured 0.92, 1.04, 1.105 and 1.16. By turns, a slow spell costs both samples alike,
    and the best of a day's runs drops it."""
    tries_f = [list(r["tries"]) for r in first]
    tries_l = [list(r["tries"]) for r in last]
    for r in range(rounds):
        say(f"(c): both samples again, by turns, round {r + 1}/{rounds}")
        for f, g, tf, tl in zip(first, last, tries_f, tries_l, strict=True):  # both samples are --sample days
            tf.append(build_one(small, f["day"], force=True))
            tl.append(build_one(home, g["day"], force=True))
    return [_best_run(t) for t in tries_f], [_best_run(t) for t in tries_l]


def profile_growth(first: Path, last: Path, top: int = 20, key: str = "cum") -> list[dict[str, Any]]:
    """Functions ordered by how much their cumulative (key "cum") or own ("own") time grew from the
    first sample's runs to the last's (both over the same number of runs, so totals compare)."""
    def table(path: Path) -> dict[str, tuple[float, float, int]]:
        stats: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
        return {f"{Path(f).name}:{line}({fn})": (tt, ct, nc) for (f, line, fn), (_cc, nc, tt, ct, _callers)
                in stats.items()}

    a, b = table(first), table(last)
    rows: list[dict[str, Any]] = []
    for name in set(a) | set(b):
        ta, ca, na = a.get(name, (0.0, 0.0, 0))
        tb, cb, nb = b.get(name, (0.0, 0.0, 0))
        rows.append({"function": name, "cum_first_s": round(ca, 3), "cum_last_s": round(cb, 3),
                     "cum_growth_s": round(cb - ca, 3), "own_first_s": round(ta, 3), "own_last_s": round(tb, 3),
                     "own_growth_s": round(tb - ta, 3),
                     "calls_first": na, "calls_last": nb})
    rows.sort(key=lambda r: (-r[f"{key}_growth_s"], r["function"]))
    return rows[:top]


def history_size(home: Any) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        (elements,) = con.execute("SELECT count(*) FROM raw_elements").fetchone() or (0,)
        (days,) = con.execute("SELECT count(DISTINCT day) FROM raw_days").fetchone() or (0,)
    finally:
        con.close()
    return {"warehouse_mb": round(home.warehouse_path.stat().st_size / 1e6, 1), "warehouse_days": int(days),
            "raw_elements_rows": int(elements), "dagster_mb": round(dir_mb(home.dagster_home), 1),
            "log_mb": round(dir_mb(home.log_dir), 1), "published_mb": round(dir_mb(home.published_dir), 1)}


# ------------------------------------------------------------------ (d) each warehouse step at two history lengths

STEPS = ("raw_day", "frames", "enriched_input", "page_refs", "day_document", "context_block", "published_day",
         "checkpoint")
_NOT_PER_DAY = {"raw_root"}


def _inflate(con: Any, real_days: list[str], total: int) -> None:
    """Grow a warehouse built over ``real_days`` to ``total`` days of history: every table's rows
    (and document files) of the real days again under earlier, made-up day keys, round robin."""
    import datetime as dt

    from af_pipeline.warehouse import store

    first = dt.date.fromisoformat(real_days[0])
    fake = [(first - dt.timedelta(days=i + 1)).isoformat() for i in range(total - len(real_days))]
    docs = store.documents_dir(con) if hasattr(store, "documents_dir") else None  # None: code before document files
    per_day = [t for (t,) in con.execute(
        "SELECT table_name FROM duckdb_columns() WHERE column_name = 'day' AND schema_name = 'main' "
        "AND table_name IN (SELECT table_name FROM duckdb_tables())").fetchall() if t not in _NOT_PER_DAY]
    pairs = [(day, real_days[i % len(real_days)]) for i, day in enumerate(fake)]
    con.execute("CREATE TEMP TABLE _fake (fake VARCHAR, src VARCHAR)")
    con.executemany("INSERT INTO _fake VALUES (?, ?)", pairs)
    for table in per_day:  # one INSERT per table for all the made-up days
        cols = [c for (c,) in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND schema_name = 'main' "
            "ORDER BY column_index", [table]).fetchall()]
        picked = ", ".join("f.fake" if c == "day" else f't."{c}"' for c in cols)
        con.execute(f'INSERT INTO "{table}" SELECT {picked} FROM "{table}" t JOIN _fake f ON t.day = f.src '
                    "ORDER BY f.fake, t.seq")
    for day, src in pairs:
        for f in docs.glob(f"{src}.*{store.DOCUMENT_SUFFIX}") if docs is not None else ():
            shutil.copyfile(f, docs / f.name.replace(src, day, 1))
    store.refresh_views(con)
    con.execute("CHECKPOINT")


def _copy_warehouse(src: Path, dst: Path) -> None:
    for suffix in (".duckdb", ".documents"):
        a, b = src.with_suffix(suffix), dst.with_suffix(suffix)
        if b.is_dir():
            shutil.rmtree(b)
        elif b.exists():
            b.unlink()
        if a.exists():
            (shutil.copytree if a.is_dir() else shutil.copyfile)(a, b)


def _steps_once(home: Any, path: Path, day: str, published: Path) -> dict[str, tuple[float, float]]:
    """Every step of one day on the warehouse at ``path`` as the nightly run does them (one
    connection, the resource's checkpoint threshold), then the checkpoint its close makes:
    step -> (wall s, CPU s)."""
    import duckdb

    from af_pipeline.compiler.categories import rules_in
    from af_pipeline.warehouse import day_work as steps
    from af_pipeline.warehouse import quality, store
    from af_pipeline.warehouse.version import code_version
    from capture.log import EventLog

    log = EventLog(home)
    steps._RECENT_DOCS.clear()
    con = duckdb.connect(str(path), config={"checkpoint_threshold": "1GB"})
    out = {}

    def took(name: str, since: tuple[float, float]) -> tuple[float, float]:
        out[name] = (time.perf_counter() - since[0], time.process_time() - since[1])
        return time.perf_counter(), time.process_time()

    try:
        t = took("start", (time.perf_counter(), time.process_time()))
        steps.raw_day(con, log, day)
        t = took("raw_day", t)
        # each step's time: its part computed (day_parts computes a part when asked for it) and written
        capture = store.load_capture(con, day, lazy_elements=True)
        for name, part in steps.day_parts(capture, False, rules_in(home.root)):
            if name == steps.PUBLISHED:
                failing = quality.failing_days(con, [day]).get(day)
                steps.published_day(day, published, code_version(), part, failing.reason if failing else None)
            else:
                steps.WRITERS[name](con, day, part)
            t = took(name, t)
        con.execute("CHECKPOINT")
        con.close()
        took("checkpoint", t)
        out.pop("start")
    finally:
        with contextlib.suppress(Exception):
            con.close()
        log.close()
    return out


def warehouse_history(home: Any, days: list[str], small: int, big: int, rounds: int, out: Path) -> dict[str, Any]:
    """(d): each step of the busiest of the 5 days after the first ``small`` days, on a warehouse holding ``small``
    days of history and on one holding ``big`` (the same built days copied under earlier day
    keys), interleaved for ``rounds`` rounds; best wall and CPU per step, and their ratios."""
    import duckdb

    from af_pipeline.compiler.categories import rules_in
    from af_pipeline.warehouse import day_work as steps
    from af_pipeline.warehouse.version import code_version
    from capture.log import EventLog

    work = out / "history"
    built = days[:small]
    # the busiest of the next few days: a light day's steps are a few ms, all noise
    rows = {d.day: d.counts.get("snapshots", 0) + d.counts.get("inputs", 0) for d in EventLog(home).days()}
    day = max(days[small:small + 5], key=lambda d: (rows.get(d, 0), d))
    base = work / "base.duckdb"
    stamp = work / f"base-{small}-{code_version()}"  # the built history is kept for the same code and days
    if not stamp.exists():
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        say(f"(d): building {len(built)} days without Dagster (the history)")
        con = duckdb.connect(str(base), config={"checkpoint_threshold": "1GB"})
        log = EventLog(home)
        try:
            for d in built:
                steps.build_day(con, log, d, work / "published-base", False, code_version(), rules_in(home.root))
            con.execute("CHECKPOINT")
        finally:
            con.close()
            log.close()
        stamp.write_text("ok\n")
    say(f"(d): copying the {len(built)} days to {big} days of history")
    _copy_warehouse(base, work / "small.duckdb")
    _copy_warehouse(base, work / "big.duckdb")
    con = duckdb.connect(str(work / "big.duckdb"))
    try:
        _inflate(con, built, big)
    finally:
        con.close()
    best: dict[str, dict[str, list[float]]] = {k: {s: [] for s in STEPS} for k in ("small", "big")}
    for r in range(rounds):
        for label in ("small", "big") if r % 2 == 0 else ("big", "small"):
            # each round starts from the history alone: the measured day is new to it, as at night
            _copy_warehouse(work / f"{label}.duckdb", work / "run.duckdb")
            # The copy leaves its pages to be written back while the steps run: 100 MB for the big
            # warehouse, 8 MB for the small one. That writeback slowed every step after the big
            # copy alike (context_block 1.21x, which reads no history); flushed first, it does not.
            os.sync()
            pub = work / f"published-{label}-{r}"
            for name, (_wall, cpu) in _steps_once(home, work / "run.duckdb", day, pub).items():
                best[label][name].append(cpu)
        say(f"  round {r + 1}/{rounds} done")
    per_step = {}
    for name in STEPS:
        a, b = min(best["small"][name]), min(best["big"][name])
        ma, mb = statistics.median(best["small"][name]), statistics.median(best["big"][name])
        # The median beside the best: on a shared machine a step's best of 5 swings +-20 % run to run.
        per_step[name] = {"small_cpu_ms": round(1000 * a, 1), "big_cpu_ms": round(1000 * b, 1),
                          "ratio": _r(b / a) if a > 0 else None,
                          "median_ratio": _r(mb / ma) if ma > 0 else None}
    total_a = sum(min(v) for v in best["small"].values())
    total_b = sum(min(v) for v in best["big"].values())
    return {"day": day, "small_days": small, "big_days": big, "rounds": rounds, "steps": per_step,
            "total_ratio": _r(total_b / total_a) if total_a else None,
            "met": all(v["ratio"] is not None and v["ratio"] <= TARGET for v in per_step.values())}


def render_history(h: dict[str, Any]) -> str:
    lines = [f"(d) each warehouse step of {h['day']} at {h['big_days']} vs {h['small_days']} days of history "
             f"(best CPU of {h['rounds']} interleaved rounds; total ratio {h['total_ratio']}):", "",
             f"| step | {h['small_days']} days (ms CPU) | {h['big_days']} days (ms CPU) | ratio | median ratio "
             "| target | met? |",
             "|---|---|---|---|---|---|---|"]
    for name, s in h["steps"].items():
        met = "-" if s["ratio"] is None else ("yes" if s["ratio"] <= TARGET else "**no**")
        lines.append(f"| {name} | {s['small_cpu_ms']:.1f} | {s['big_cpu_ms']:.1f} | {s['ratio']} "
                     f"| {s.get('median_ratio', '-')} | <= {TARGET} | {met} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ report

def _row(name: str, n: str, first: float | None, last: float | None, r: float | None, note: str = "") -> str:
    def f(x: float | None) -> str:
        return f"{x:.1f}" if x is not None else "-"

    met = "-" if r is None else ("yes" if r <= TARGET else "**no**")
    return f"| {name} | {n} | {f(first)} | {f(last)} | {'-' if r is None else f'{r:.3f}'} | <= {TARGET} | {met} | {note} |"


def render(res: dict[str, Any]) -> str:
    a, b, c = res["read"], res["compile"], res["nightly"]
    k = c["sample"]
    lines = [
        f"Growth with history: {res['days_with_capture']} days with capture ({res['days']}-day corpus, seed "
        f"{res['seed']}); load average before {res['load_before'][:1]} / after {res['load_after'][:1]}",
        "",
        "| measure | days compared | first (median ms) | last (median ms) | ratio | target | met? | note |",
        "|---|---|---|---|---|---|---|---|",
        _row("(a) EventLog.read_day", f"{a['days']} (2nd half / 1st)", a["first_half_median_ms"],
             a["second_half_median_ms"], a["ratio"]),
        _row("(b) compile_day", f"{b['days']} (2nd half / 1st)", b["first_half_median_ms"], b["second_half_median_ms"],
             b["ratio"]),
        _row("(c) nightly build, one day through Dagster", f"last {k} / first {k}", c["first_median_ms"],
             c["last_median_ms"], c["ratio"],
             f"compile_day on the same days: {c['content_ratio']:.3f}" if c["content_ratio"] else ""),
    ]
    lines += ["", f"(c) ratio of the medians instead of the means: {c['median_ratio']:.3f}. Outside the steps "
              f"(definitions, run start and bookkeeping): {c['outside_steps']['first_median_ms']:.0f} -> "
              f"{c['outside_steps']['last_median_ms']:.0f} ms median."]
    steps = c.get("steps", {})
    if steps:
        lines += ["", "Nightly run, per step (median ms over each sample; the rest of a run is Dagster's own work):",
                  "", "| step | first | last | ratio |", "|---|---|---|---|"]
        for name, s in steps.items():
            lines.append(f"| {name} | {s['first_median_ms']:.1f} | {s['last_median_ms']:.1f} | "
                         f"{s['ratio']:.3f} |" if s["ratio"] is not None else f"| {name} | - | - | - |")
    h = c["history_at_last"]
    lines += ["", f"History when the last {k} days were built: warehouse {h['warehouse_mb']} MB "
              f"({h['warehouse_days']} days, {h['raw_elements_rows']:,} raw_elements rows), Dagster instance "
              f"{h['dagster_mb']} MB, event log {h['log_mb']} MB, published/ {h['published_mb']} MB."]
    return "\n".join(lines)


def summarize(days: list[str], ab: dict[str, list[float]], first: list[dict[str, Any]], last: list[dict[str, Any]],
              history: dict[str, Any], sample: int) -> dict[str, Any]:
    half = len(days) // 2

    def series(xs: list[float]) -> dict[str, Any]:
        return {"days": len(xs), "ratio": _r(halves_ratio(xs)), "median_ms": _ms(xs),
                "first_half_median_ms": _ms(xs[:half]), "second_half_median_ms": _ms(xs[len(xs) - half:])}

    by_day = dict(zip(days, ab["compile_s"], strict=True))
    fw, lw = [r["wall_s"] for r in first], [r["wall_s"] for r in last]
    steps: dict[str, Any] = {}
    for name in sorted({s for r in first + last for s in r["steps_ms"]}):
        f = [r["steps_ms"][name] for r in first if name in r["steps_ms"]]
        g = [r["steps_ms"][name] for r in last if name in r["steps_ms"]]
        steps[name] = {"first_median_ms": round(statistics.median(f), 1) if f else None,
                       "last_median_ms": round(statistics.median(g), 1) if g else None, "ratio": _r(ratio(f, g))}
    overhead = {"first_median_ms": _ms([r["wall_s"] - sum(r["steps_ms"].values()) / 1000 for r in first]),
                "last_median_ms": _ms([r["wall_s"] - sum(r["steps_ms"].values()) / 1000 for r in last])}
    return {
        "read": series(ab["read_s"]),
        "compile": series(ab["compile_s"]),
        "nightly": {
            "sample": sample, "first_days": [r["day"] for r in first], "last_days": [r["day"] for r in last],
            "ratio": _r(ratio(fw, lw)), "median_ratio": _r(statistics.median(lw) / statistics.median(fw)),
            "first_median_ms": _ms(fw), "last_median_ms": _ms(lw),
            "first_mean_ms": round(1000 * statistics.mean(fw), 1), "last_mean_ms": round(1000 * statistics.mean(lw), 1),
            "run_only_ratio": _r(ratio([r["run_s"] for r in first], [r["run_s"] for r in last])),
            "content_ratio": _r(ratio([by_day[r["day"]] for r in first], [by_day[r["day"]] for r in last])),
            "steps": steps, "outside_steps": overhead, "history_at_last": history,
            "per_day": [{"day": r["day"], "wall_ms": round(1000 * r["wall_s"], 1),
                         "walls_ms": [round(1000 * t["wall_s"], 1) for t in r["tries"]]} for r in first + last],
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_growth.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=365, help="days in the synthetic corpus (default 365)")
    ap.add_argument("--sample", type=int, default=20, metavar="K",
                    help="days built one Dagster run each at the start and at the end (default 20)")
    ap.add_argument("--seed", type=int, default=1, help="synthetic corpus seed (default 1)")
    ap.add_argument("--start", default=DEFAULT_START, metavar="DAY",
                    help=f"first day of the corpus (default {DEFAULT_START}; the whole corpus must lie in the past)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"cache and results folder (default {DEFAULT_OUT})")
    ap.add_argument("--profile", action="store_true",
                    help="also profile each sample day's run (an untimed forced re-run) and list what grew")
    ap.add_argument("--repeat", type=int, default=2, metavar="R",
                    help="(c): runs per sample day: its nightly run, then R - 1 forced again, both samples by "
                    "turns, best kept (default 2)")
    ap.add_argument("--history-days", type=int, default=None, metavar="N",
                    help="(d): also time each warehouse step of one day at N vs --sample days of history, the "
                    "history made by copying the first --sample days built (needs --sample + 1 days with capture)")
    ap.add_argument("--history-only", action="store_true", help="measure (d) alone, not (a)-(c)")
    ap.add_argument("--rounds", type=int, default=21, help="interleaved rounds of (d) (default 21)")
    ap.add_argument("--one-build", metavar="DAY", help=argparse.SUPPRESS)  # (c)'s run process
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--profile-out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--force", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_build:
        warnings.filterwarnings("ignore")
        return _one_build_child(args.home, args.one_build, args.profile_out, args.force)
    if args.history_only and not args.history_days:
        ap.error("--history-only needs --history-days")
    if args.days < 4 or args.sample < 1 or args.repeat < 1:
        ap.error("--days must be at least 4, --sample and --repeat at least 1")
    warnings.filterwarnings("ignore")

    from assets import certify as harness
    from assets.instance import use_home
    from capture.home import Home
    from capture.log import EventLog

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    load_before = _load()
    started = time.time()
    template = landed_home(out, corpus(out, args.days, args.seed, args.start))
    home = Home(out / "home")
    if home.root.exists():
        shutil.rmtree(home.root)
    shutil.copytree(template, home.root)
    (home.root / ".complete").unlink()
    use_home(home)

    status = EventLog(home).days()
    days = [d.day for d in status if d.counts.get("snapshots", 0)]
    still_open = [d.day for d in status if not d.sealed]
    if still_open:  # a history is sealed days; open ones are read from JSONL and would skew every ratio
        say(f"warning: {len(still_open)} day(s) are still open ({still_open[0]} ..); use an earlier --start")
    if args.history_only:
        if len(days) <= args.sample:
            ap.error(f"(d) needs more than --sample {args.sample} days with capture; the corpus has {len(days)}")
        h = warehouse_history(home, days, args.sample, args.history_days, args.rounds, out)
        res = {"days": args.days, "seed": args.seed, "history": h, "load_before": load_before, "load_after": _load(),
               "wall_s": round(time.time() - started, 1)}
        (out / "result.json").write_text(json.dumps(res, indent=2) + "\n")
        print(render_history(h))
        print(json.dumps(res, indent=2))
        return 0
    k = min(args.sample, (len(days) - 1) // 2)  # the first day is the warm-up's, in no sample
    say(f"(a)+(b): reading and compiling {len(days)} days with capture, in log order")
    ab = read_and_compile(home, days)

    # Each timed run is a process of its own; the first day is built once untimed all the same, so
    # the first sample does not pay for the files the system has not cached yet.
    say(f"(c): warm-up build of {days[0]} (untimed)")
    build_one(home, days[0])
    say(f"(c): the first {k} days, one Dagster run each")
    # (not the warm-up's day: built already, its run would only skip it as unchanged)
    first = build_sample(home, days[1:k + 1], "first", out / "first.prof" if args.profile else None)
    small = None
    if args.repeat > 1:  # the folder as the first sample left it, for the runs by turns
        small = Home(out / "home-first")
        if small.root.exists():
            shutil.rmtree(small.root)
        shutil.copytree(home.root, small.root)
    middle = [d for d in harness.select_days(home, None, None) if days[k] < d < days[len(days) - k]]
    if middle:
        say(f"(c): the {len(middle)} days between in one range run (untimed)")
        bulk = harness.run_build(home, middle, lambda m: say(f"  {m}"))
        if not bulk.ok:
            say(f"the range build failed: {'; '.join(bulk.failures)[:300]}")
            return 1
        say(f"  done in {bulk.seconds:.0f} s")
    history = history_size(home)
    say(f"(c): the last {k} days, one Dagster run each")
    last = build_sample(home, days[len(days) - k:], "last", out / "last.prof" if args.profile else None)
    if small is not None:
        first, last = again_interleaved(small, first, home, last, args.repeat - 1)
        shutil.rmtree(small.root)

    res: dict[str, Any] = {"days": args.days, "seed": args.seed, "days_with_capture": len(days),
                           "first_day": days[0], "last_day": days[-1], "open_days": len(still_open),
                           "target": TARGET}
    res |= summarize(days, ab, first, last, history, k)
    res["met"] = {m: (res[m]["ratio"] is not None and res[m]["ratio"] <= TARGET) for m in ("read", "compile", "nightly")}
    # the target is per step: every step of the nightly run at most 1.1x
    res["met"]["nightly_steps"] = all(s["ratio"] is not None and s["ratio"] <= TARGET
                                      for s in res["nightly"]["steps"].values())
    if args.history_days:
        res["history"] = warehouse_history(home, days, k, args.history_days, args.rounds, out)
        res["met"]["history_steps"] = res["history"]["met"]
    if args.profile:
        res["profile_growth"] = profile_growth(out / "first.prof", out / "last.prof")
        res["profile_growth_own"] = profile_growth(out / "first.prof", out / "last.prof", key="own")
    res |= {"load_before": load_before, "load_after": _load(), "cpus": os.cpu_count(),
            "wall_s": round(time.time() - started, 1)}
    (out / "result.json").write_text(json.dumps(res, indent=2) + "\n")
    print(render(res))
    if "history" in res:
        print()
        print(render_history(res["history"]))
    if args.profile:
        print("\nWhat grew most from the first sample's runs to the last's (cumulative s over all runs):\n")
        for p in res["profile_growth"][:12]:
            print(f"  +{p['cum_growth_s']:7.3f} s  {p['function']}  ({p['cum_first_s']} -> {p['cum_last_s']}, "
                  f"calls {p['calls_first']} -> {p['calls_last']})")
        print("\nThe same by each function's own time (excluding what it calls):\n")
        for p in res["profile_growth_own"][:12]:
            print(f"  +{p['own_growth_s']:7.3f} s  {p['function']}  ({p['own_first_s']} -> {p['own_last_s']}, "
                  f"calls {p['calls_first']} -> {p['calls_last']})")
    print()
    print(json.dumps({key: v for key, v in res.items() if not key.startswith("profile_growth")}, indent=2))
    say(f"wrote {out / 'result.json'}")
    return 0


# ------------------------------------------------------------------ the bench runner (python -m bench)

def runner(sizes: Any, timeout: float, _done: dict[str, Any]) -> dict[str, Any]:
    """For bench/__main__.py: the 365-day run in full mode, 20 days in quick mode; a child process."""
    quick = 365 not in sizes.routine_days
    out = BENCH_DIR / "runner-growth"
    (out / "result.json").unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--days", "20" if quick else "365",
           "--sample", "3" if quick else "20", "--out", str(out), "--history-days", "30" if quick else "365"]
    say(f"[bench] growth: {' '.join(cmd[1:])}")
    m = run_measured(cmd, timeout=timeout)
    if m.timed_out or not (out / "result.json").exists():
        raise RuntimeError(f"bench_growth {'timed out' if m.timed_out else f'exited {m.returncode}'}: {m.tail(300)}")
    result: dict[str, Any] = json.loads((out / "result.json").read_text())
    return result


def table_row(r: dict[str, Any]) -> tuple[str, str]:
    """The runner's 'ours' and 'met?' cells."""
    a, b, c = r["read"], r["compile"], r["nightly"]
    steps = ", ".join(f"{n} {s['ratio']:.2f}" for n, s in c.get("steps", {}).items() if s["ratio"] is not None)
    text = (f"at {r['days']} days: read {a['ratio']:.3f}, compile {b['ratio']:.3f} ({b['days']} days with capture, "
            f"2nd half / 1st); nightly Dagster "
            f"run {c['ratio']:.3f} (last {c['sample']} / first {c['sample']}, {c['first_median_ms']:.0f} -> "
            f"{c['last_median_ms']:.0f} ms; per step, wall: {steps or '-'})")
    h = r.get("history")
    if h:
        text += (f"; each warehouse step at {h['big_days']} vs {h['small_days']} days, CPU: "
                 + ", ".join(f"{n} {s['ratio']:.2f}" for n, s in h["steps"].items() if s["ratio"] is not None))
    return text, "yes" if all(r["met"].values()) else "**no**"


if __name__ == "__main__":
    raise SystemExit(main())
