"""Benchmark: `af certify` as a user runs it (one process), over many days and over two.

    .venv/bin/python bench/bench_certify.py [--days 51] [--few 2] [--rounds 1] [--code DIR ...]

Works on a copy of the pipeline benchmark's data folder (.bench/pipeline/home: the 78-day
synthetic corpus, seed 7, built by bench/bench_pipeline.py), made once under .bench/certify/. It
does not generate or build anything itself: run bench/bench_pipeline.py once first (or copy its
folder there).

Two rows, each a fresh `af certify` process (nothing cached from an earlier run), every check:

- ``many``: the first --days days with capture (`af certify --from FIRST --to LAST`);
- ``few``: the last --few days of the log (cost must follow the days certified, not the log).

Wall time, and CPU time of the process and every child it waited for (the independent rebuild
runs in child processes). ``--code DIR`` adds another checkout of the project (e.g. an older
commit unpacked with `git archive`) measured the same way in the same rounds, interleaved, so
that a shared machine's load falls on both alike; each certificate's content (verdicts, checks,
problems, days: everything but its run ids, timings and code version) is compared across the
checkouts.

Prints a JSON summary (also written to .bench/certify/result.json).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import BENCH_DIR, ENTRY, run_measured, say  # noqa: E402

# What differs between two certifications of the same folder by the same code: when and how long.
# Two checkouts also differ in code_version (a hash of their sources) whenever a file it covers
# changed: that is not the certificate's content either.
NOT_CONTENT = ("certified_at", "seconds", "code_version")


def certificate_content(cert: dict[str, Any]) -> dict[str, Any]:
    """The certificate without its timing fields, run ids and code version."""
    out = {k: v for k, v in cert.items() if k not in NOT_CONTENT}
    out["days"] = {day: {k: v for k, v in entry.items() if k != "run_id"} for day, entry in cert["days"].items()}
    return out


def content_sha(cert: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(certificate_content(cert), sort_keys=True).encode("utf-8")).hexdigest()


def _log_days(home: Path) -> list[str]:
    from af_pipeline.warehouse.days import log_days
    from capture.home import Home

    return log_days(Home(home))


def certify_once(code: Path, home: Path, first: str, last: str) -> dict[str, Any]:
    """One `af certify --from first --to last` process of the checkout in ``code``."""
    env = {k: v for k, v in os.environ.items() if k not in ("AF_HOME", "DAGSTER_HOME", "PYTHONPATH")}
    env["PYTHONPATH"] = str(code)  # that checkout's packages before the venv's (editable) ones
    cmd = [sys.executable, "-c", ENTRY,
           "certify", "--home", str(home), "--from", first, "--to", last, "--json"]
    m = run_measured(cmd, cwd=code, env=env)
    if m.returncode not in (0, 1):
        raise RuntimeError(f"af certify ({code}) exited {m.returncode}: {m.tail()}")
    start = 0 if m.stdout.startswith("{") else m.stdout.find("\n{") + 1  # the JSON after any stray line
    if start:
        say(f"  (af certify printed before its JSON: {m.stdout[:start].strip()[:300]!r})")
    cert = json.loads(m.stdout[start:])
    return {"wall_s": round(m.wall_s, 2), "cpu_s": round(m.cpu_s, 2), "peak_mb": round(m.peak_mb),
            "verdict": cert["verdict"], "days": len(cert["days"]), "content_sha256": content_sha(cert)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--days", type=int, default=51, help="days with capture in the long row")
    p.add_argument("--few", type=int, default=2, help="days (the log's last) in the short row")
    p.add_argument("--rounds", type=int, default=1, help="interleaved rounds; the best of them is reported")
    p.add_argument("--code", action="append", default=[], help="another checkout to measure side by side")
    p.add_argument("--source", default=str(BENCH_DIR / "pipeline" / "home"), help="the built data folder to copy")
    p.add_argument("--out", default=str(BENCH_DIR / "certify"))
    p.add_argument("--only", choices=("many", "few"), action="append", help="rows to run (default both)")
    p.add_argument("--fresh", action="store_true", help="copy the source folder again even if a copy exists")
    args = p.parse_args(argv)

    out = Path(args.out)
    home = out / "home"
    source = Path(args.source)
    if args.fresh and home.exists():
        shutil.rmtree(home)
    if not home.exists():
        if not (source / "warehouse.duckdb").exists():
            say(f"no built data folder at {source}: run bench/bench_pipeline.py first")
            return 2
        say(f"copying {source} to {home}")
        shutil.copytree(source, home)
    days = _log_days(home)
    rows = {"many": days[: args.days], "few": days[-args.few:]}
    chosen = args.only or ["many", "few"]
    codes = {"this": ROOT, **{Path(c).name: Path(c).resolve() for c in args.code}}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {row: {name: [] for name in codes} for row in chosen}
    for i in range(args.rounds):
        for row in chosen:
            for name, code in codes.items():
                first, last = rows[row][0], rows[row][-1]
                say(f"round {i + 1}: {row} ({len(rows[row])} days, {first} .. {last}) with {name}")
                r = certify_once(code, home, first, last)
                say(f"  {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, verdict {r['verdict']}")
                runs[row][name].append(r)
    result: dict[str, Any] = {"log_days": len(days), "log_first": days[0], "log_last": days[-1], "rows": {}}
    for row in chosen:
        best = {name: min(rs, key=lambda r: r["wall_s"]) for name, rs in runs[row].items()}
        shas = {r["content_sha256"] for rs in runs[row].values() for r in rs}
        result["rows"][row] = {"days": len(rows[row]), "first": rows[row][0], "last": rows[row][-1],
                               "best": best, "runs": runs[row], "same_certificate_content": len(shas) == 1}
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ok = all(r["same_certificate_content"] and all(b["verdict"] == "pass" for b in r["best"].values())
             for r in result["rows"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
