"""Per-(user, day) cost of a team build, for docs/scale.md.

    python -m bench.team_cost --days 3 [--full]

Makes one user's data folder from `af synth` (seed 1; --full keeps whole days, else one hour a
day as the team test does), imports it through `af import screenpipe`, then times the user's
build (af_pipeline.warehouse.team.build_user: every day of the log, the team step's work) and
reports wall and CPU seconds per day and the bytes per day of the log, the warehouse and
published/. CPU time is this process's user+system time (the build runs here).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.team_cost")
    p.add_argument("--days", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--full", action="store_true", help="whole synthetic days (default: one hour a day)")
    args = p.parse_args(argv)

    from af_pipeline.interfaces import cli
    from af_pipeline.warehouse.team import build_user
    from capture.home import Home
    from capture.synth import DB_NAME, generate

    work = Path(tempfile.mkdtemp(prefix="af-team-cost-"))
    try:
        generate(args.days, args.seed, work / "synth", tz="Europe/Paris")
        db = work / "synth" / DB_NAME
        if not args.full:
            con = sqlite3.connect(db)
            con.execute("DELETE FROM frames WHERE strftime('%H', timestamp) != '07'")
            con.execute("DELETE FROM ui_events WHERE strftime('%H', timestamp) != '07'")
            con.execute("DELETE FROM elements WHERE frame_id NOT IN (SELECT id FROM frames)")
            con.commit()
            con.close()
        home = Home(work / "user")
        home.init(tz="Europe/Paris")
        t, c = time.perf_counter(), _cpu()
        assert cli.main(["import", "screenpipe", str(db), "--home", str(home.root), "--quiet"]) == 0
        import_wall, import_cpu = time.perf_counter() - t, _cpu() - c
        t, c = time.perf_counter(), _cpu()
        built = build_user(home)
        wall, cpu = time.perf_counter() - t, _cpu() - c
        n = len(built["days"])
        out = {
            "days_built": n,
            "full_days": args.full,
            "import_s_per_day": {"wall": round(import_wall / n, 3), "cpu": round(import_cpu / n, 3)},
            "build_s_per_day": {"wall": round(wall / n, 3), "cpu": round(cpu / n, 3)},
            "bytes_per_day": {
                "log": _size(home.log_dir) // n,
                "warehouse": _size(home.warehouse_path) // n,
                "published": _size(home.published_dir) // n,
            },
        }
        print(json.dumps(out, indent=2, sort_keys=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
