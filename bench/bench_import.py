"""Benchmark: importing a screenpipe database the way a user does, then re-importing it.

    .venv/bin/python bench/bench_import.py [--days 61] [--seed 1] [--tz Europe/Paris] [--json]

The corpus is `af synth --days N --seed S` (capture/synth.py), written once and kept in
.bench/corpus-<N>d-seed<S>/; at 61 days it is about 140k frames, 350k input events and 2M
element rows, the size issue 2 asks for. Each step runs `af` as a child process into a fresh
data folder (.bench/import-<N>d/home, replaced every run) and is measured from outside: wall
time, CPU time (user + system) and the child's own peak memory (os.wait4; with processes of its
own, their PSS together, see bench/rusage_child.py):

1. import:    af import screenpipe DB --home H --tz ZONE   (every past day lands and seals)
2. re-import: the same command again                        (idempotent: nothing lands; the source's
              watermark says it is unchanged, so nothing is read)
3. verify:    af log verify --home H                        (rehash every sealed segment)
   reader:    the import again with --reader-process into a second folder, its log compared
              with the first file by file (then removed)
4. growth:    in this process, each active day in log order: EventLog.read_day (hash check
              and Parquet read) plus compile_day, best of 2; the ratio of the mean over the
              second half of the days to the first half. A day's cost must not grow with the
              history in front of it (target at most 1.1). --no-growth skips it.

``--code DIR`` (repeatable) measures the import side by side with other checkouts of the project
(e.g. `git worktree add /tmp/old <commit>`): each round imports the corpus once with every
checkout, in turn, into its own folder; the best CPU and the peak of each are reported with the
load average around the round, and the sealed logs are compared file by file (sha256; the
manifest apart from its `sealed_at` and the chain hashes that cover it). Nothing but the import
runs in this mode.

Rows per second count every row the step handled (landed by the import, read by the re-import:
none when the watermark answers it). Prints a table, or the results as JSON with --json. Exit 1 if a step fails or the
re-import lands anything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BENCH_DIR, ENTRY, Measured, af_command, corpus, dir_mb, run_measured, say  # noqa: E402

KINDS = ("snapshots", "inputs", "elements", "presence", "streams")


class StepFailed(RuntimeError):
    pass


def _step(name: str, cmd: list[str], timeout: float) -> tuple[Measured, dict[str, Any]]:
    say(f"{name}: {' '.join(cmd)}")
    m = run_measured(cmd, timeout=timeout)
    if m.timed_out:
        raise StepFailed(f"{name} did not finish within {timeout:.0f} s")
    try:
        report = json.loads(m.stdout)
    except json.JSONDecodeError:
        report = None
    if not isinstance(report, dict):
        raise StepFailed(f"{name} exited {m.returncode} without a JSON report: {m.tail()}")
    return m, report


def _figures(m: Measured, rows: int) -> dict[str, Any]:
    return {"wall_s": round(m.wall_s, 2), "cpu_s": round(m.cpu_s, 2), "peak_mb": round(m.peak_mb, 1),
            "rows": rows, "rows_per_s": round(rows / m.wall_s) if m.wall_s > 0 else None}


def growth(home: Path, rounds: int = 2) -> dict[str, Any]:
    """Per-day cost of reading a sealed day and compiling it, in log order (best of rounds)."""
    from af_pipeline.compiler.compile import compile_day
    from capture.home import Home
    from capture.log import EventLog

    log = EventLog(Home(home))
    days = [d.day for d in log.days() if d.sealed and d.counts.get("snapshots", 0)]
    read_s: list[float] = []
    total_s: list[float] = []
    for i, day in enumerate(days, 1):
        print(f"\r  growth: day {i}/{len(days)} {day}", end="", file=sys.stderr, flush=True)
        best_read = best_total = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter()
            cap = log.read_day(day)
            t1 = time.perf_counter()
            compile_day(cap)
            t2 = time.perf_counter()
            best_read, best_total = min(best_read, t1 - t0), min(best_total, t2 - t0)
        read_s.append(best_read)
        total_s.append(best_total)
    print(file=sys.stderr)

    def ratio(xs: list[float]) -> float | None:
        half = len(xs) // 2
        if half == 0:
            return None
        return round(statistics.mean(xs[len(xs) - half:]) / statistics.mean(xs[:half]), 3)

    return {"days": len(days), "rounds": rounds, "ratio": ratio(total_s), "read_ratio": ratio(read_s),
            "median_ms": round(1000 * statistics.median(total_s), 1) if total_s else None,
            "read_median_ms": round(1000 * statistics.median(read_s), 1) if read_s else None}


def run(days: int, seed: int = 1, tz: str = "Europe/Paris", timeout: float = 3600,
        with_growth: bool = True) -> dict[str, Any]:
    """Generate (or reuse) the corpus, import it, re-import it, verify the log; return the figures."""
    db = corpus(days, seed)
    home = BENCH_DIR / f"import-{days}d" / "home"
    if home.exists():
        shutil.rmtree(home)
    home.parent.mkdir(parents=True, exist_ok=True)
    af = af_command()
    imp = [*af, "import", "screenpipe", str(db), "--home", str(home), "--tz", tz, "--json"]

    m1, first = _step("import", imp, timeout)
    if m1.returncode != 0:
        raise StepFailed(f"import exited {m1.returncode}: {m1.tail()}")
    landed = {k: int(first["landed"].get(k, 0)) for k in KINDS}
    read = {k: int(first["read"].get(k, 0)) for k in KINDS}
    log_mb = dir_mb(home)

    m2, again = _step("re-import", imp, timeout)
    if m2.returncode != 0:
        raise StepFailed(f"re-import exited {m2.returncode}: {m2.tail()}")
    relanded = sum(int(v) for v in again["landed"].values())
    # an unchanged source is answered from its watermark: "rows_read" says how much was read (0)
    reread = int(again.get("rows_read", sum(int(v) for v in again["read"].values())))

    m3, verify = _step("verify", [*af, "log", "verify", "--home", str(home), "--json"], timeout)

    # the same import with a reader process (af import --reader-process), into its own folder
    home_r = home.parent / "home-reader"
    if home_r.exists():
        shutil.rmtree(home_r)
    m4, _ = _step("import --reader-process",
                  [*af, "import", "screenpipe", str(db), "--home", str(home_r), "--tz", tz, "--json",
                   "--reader-process"], timeout)
    if m4.returncode != 0:
        raise StepFailed(f"import --reader-process exited {m4.returncode}: {m4.tail()}")
    same_log = _log_digest(home_r) == _log_digest(home)
    shutil.rmtree(home_r)
    grown = growth(home) if with_growth else None

    return {
        "days": days, "seed": seed, "tz": tz, "db": str(db), "db_mb": round(db.stat().st_size / 1e6, 1),
        "home": str(home), "log_mb": round(log_mb, 1),
        "read": read, "landed": landed, "quarantined": int(first.get("quarantined", 0)),
        "days_sealed": len(first.get("days_sealed", [])),
        "import": _figures(m1, sum(landed.values())),
        "reimport": _figures(m2, reread) | {"landed": relanded, "skipped": int(again.get("skipped", 0)),
                                             "idempotent": relanded == 0,
                                             "unchanged": bool(again.get("unchanged", False))},
        "verify": _figures(m3, 0) | {"ok": bool(verify.get("ok")) and m3.returncode == 0,
                                     "entries": verify.get("entries")},
        "reader": _figures(m4, sum(landed.values())) | {"same_log": same_log},
        "growth": grown,
    }


def _log_digest(home: Path) -> dict[str, str]:
    """sha256 of every file of a data folder's log, the manifest without its wall-clock fields."""
    out: dict[str, str] = {}
    log = home / "log"
    for path in sorted(p for p in log.rglob("*") if p.is_file() and p.name != ".lock"):
        data = path.read_bytes()
        if path.name == "manifest.jsonl":
            entries = [json.loads(line) for line in data.splitlines()]
            for e in entries:
                for k in ("sealed_at", "hash", "prev"):  # the seal's time, and the hashes covering it
                    e.pop(k, None)
            data = json.dumps(entries, sort_keys=True).encode()
        out[str(path.relative_to(log))] = hashlib.sha256(data).hexdigest()
    return out


def side_by_side(days: int, codes: dict[str, Path], seed: int = 1, tz: str = "Europe/Paris",
                 rounds: int = 1, timeout: float = 3600) -> dict[str, Any]:
    """The import of the same corpus by each checkout, in turn, ``rounds`` times."""
    db = corpus(days, seed)
    env = {k: v for k, v in os.environ.items() if k not in ("AF_HOME", "DAGSTER_HOME", "PYTHONPATH")}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    digests: dict[str, dict[str, str]] = {}
    for i in range(rounds):
        for name, code in codes.items():
            home = BENCH_DIR / f"import-{days}d-{name}" / "home"
            if home.exists():
                shutil.rmtree(home)
            home.parent.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, "-c", ENTRY,
                   "import", "screenpipe", str(db), "--home", str(home), "--tz", tz, "--json"]
            say(f"round {i + 1}/{rounds}: import with {name} ({code})")
            load = os.getloadavg()[0]
            m = run_measured(cmd, cwd=code, env=env | {"PYTHONPATH": str(code)}, timeout=timeout)
            if m.returncode != 0:
                raise StepFailed(f"import with {name} exited {m.returncode}: {m.tail()}")
            report = json.loads(m.stdout)
            rows = sum(int(v) for v in report["landed"].values())
            runs[name].append(_figures(m, rows) | {"load_before": round(load, 1),
                                                   "load_after": round(os.getloadavg()[0], 1),
                                                   "quarantined": int(report.get("quarantined", 0))})
            digests[name] = _log_digest(home)
    first = next(iter(codes))
    out: dict[str, Any] = {"days": days, "seed": seed, "rounds": rounds, "runs": runs,
                           "identical_to_" + first: {n: digests[n] == digests[first] for n in codes},
                           "files": len(digests[first])}
    out["best"] = {n: {"cpu_s": min(r["cpu_s"] for r in rs), "wall_s": min(r["wall_s"] for r in rs),
                       "peak_mb": max(r["peak_mb"] for r in rs)} for n, rs in runs.items()}
    return out


def table(r: dict[str, Any]) -> str:
    kinds = " | ".join(f"{k} {r['landed'][k]:,}" for k in KINDS)
    lines = [
        f"{r['days']}-day corpus (af synth --seed {r['seed']}, {r['db_mb']:.0f} MB): landed {kinds}; "
        f"quarantined {r['quarantined']:,}; {r['days_sealed']} days sealed; log on disk {r['log_mb']:.0f} MB",
        "",
        "| step | rows | wall s | CPU s | rows/s (wall) | peak MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in (("import", "import (all land)"),
                       ("reader", "import --reader-process (2 processes; memory: both, PSS)"),
                       ("reimport", "re-import (unchanged: not read)"), ("verify", "af log verify")):
        s = r[key]
        rows = f"{s['rows']:,}" if s["rows"] else "-"
        rate = f"{s['rows_per_s']:,}" if s["rows"] else "-"
        lines.append(f"| {label} | {rows} | {s['wall_s']:.1f} | {s['cpu_s']:.1f} | {rate} | {s['peak_mb']:.0f} |")
    lines.append("")
    lines.append(f"import --reader-process landed the same log, file by file: {'yes' if r['reader']['same_log'] else 'NO'}")
    lines.append(f"re-import landed {r['reimport']['landed']:,} rows (skipped {r['reimport']['skipped']:,}); "
                 f"log verify: {'ok' if r['verify']['ok'] else 'FAILED'} ({r['verify']['entries']} entries)")
    g = r.get("growth")
    if g and g["ratio"] is not None:
        lines.append(f"read_day + compile_day in log order, {g['days']} active days: second half / first half "
                     f"{g['ratio']:.3f} (read alone {g['read_ratio']:.3f}); median day {g['median_ms']:.0f} ms "
                     f"(read {g['read_median_ms']:.0f} ms)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=61, help="corpus length in days (default 61, the issue's size)")
    ap.add_argument("--seed", type=int, default=1, help="af synth seed (default 1)")
    ap.add_argument("--tz", default="Europe/Paris", help="the data folder's zone (default Europe/Paris)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds allowed per step (default 3600)")
    ap.add_argument("--no-growth", action="store_true", help="skip the read+compile growth step")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--code", action="append", default=[], help="another checkout to import with, side by side")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of the side-by-side import (default 1)")
    args = ap.parse_args(argv)
    if args.days < 1:
        ap.error("--days must be at least 1")
    if args.code:
        from bench.common import ROOT

        codes = {"this": ROOT, **{Path(c).name: Path(c).resolve() for c in args.code}}
        try:
            sbs = side_by_side(args.days, codes, args.seed, args.tz, args.rounds, args.timeout)
        except StepFailed as exc:
            say(f"bench_import: {exc}")
            return 1
        print(json.dumps(sbs, indent=2))
        return 0 if all(sbs["identical_to_this"].values()) else 1
    try:
        r = run(args.days, args.seed, args.tz, args.timeout, with_growth=not args.no_growth)
    except StepFailed as exc:
        say(f"bench_import: {exc}")
        return 1
    print(json.dumps(r, indent=2) if args.json else table(r))
    return 0 if r["reimport"]["idempotent"] and r["verify"]["ok"] and r["reader"]["same_log"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
