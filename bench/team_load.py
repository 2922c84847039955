"""Benchmark: loading the team code location as Dagster does, for teams of many users.

    .venv/bin/python -m bench.team_load [--users 1,200,5000] [--rounds 2] [--adds 5000]

For each size, writes a team root under .bench/team_load/ whose registry names that many users
(the registry written directly: `af team add` checks each folder, and the location never opens
them), then times `dagster definitions validate -w workspace-team.yaml` with ``AF_TEAM`` naming
it, a fresh process each round (wall, CPU and peak memory). ``--adds N`` also times registering N
users one `Team.add` at a time (each with a new data folder, as `af team add --create` makes), in
this process: seconds after 200, 1,000 and N users. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import BENCH_DIR, run_measured, say  # noqa: E402


def team_root(users: int) -> Path:
    from capture.team import TEAM_FILE, TEAM_VERSION

    root = BENCH_DIR / "team_load" / f"users-{users}"
    shutil.rmtree(root, ignore_errors=True)
    (root / "dagster").mkdir(parents=True)
    registry = {f"user{i:05d}": {"path": str(root / "homes" / f"user{i:05d}")} for i in range(users)}
    (root / TEAM_FILE).write_text(json.dumps({"team_version": TEAM_VERSION, "users": registry}), encoding="utf-8")
    return root


def time_adds(n: int) -> dict[str, float]:
    """Seconds to register the first 200, 1,000 and ``n`` users of a new team."""
    import time

    from capture.team import Team

    root = BENCH_DIR / "team_load" / "adds"
    shutil.rmtree(root, ignore_errors=True)
    team = Team(root / "team")
    team.init()
    marks: dict[str, float] = {}
    t0 = time.perf_counter()
    for i in range(n):
        team.add(f"user{i:05d}", root / "homes" / f"user{i:05d}", create_tz="UTC")
        if i + 1 in (200, 1000, n):
            marks[str(i + 1)] = round(time.perf_counter() - t0, 1)
            say(f"{i + 1} users added: {marks[str(i + 1)]} s")
    shutil.rmtree(root, ignore_errors=True)
    return marks


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.team_load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", default="1,200,5000", help="team sizes, comma-separated (default 1,200,5000)")
    p.add_argument("--rounds", type=int, default=2, help="fresh processes per size (default 2)")
    p.add_argument("--adds", type=int, default=0, metavar="N", help="also time N Team.add calls (default: none)")
    args = p.parse_args(argv)
    dagster = str(Path(sys.executable).with_name("dagster"))
    out: dict[str, list[dict[str, float]]] = {}
    for users in (int(n) for n in args.users.split(",")):
        root = team_root(users)
        env = dict(os.environ, AF_TEAM=str(root), DAGSTER_HOME=str(root / "dagster"), DAGSTER_TELEMETRY_DISABLED="1")
        runs = []
        for r in range(args.rounds):
            m = run_measured([dagster, "definitions", "validate", "-w", "workspace-team.yaml"], env=env, cwd=ROOT)
            if m.returncode != 0 or "Validation successful" not in m.stdout + m.stderr:
                raise SystemExit(f"{users} users: the location did not load: {(m.stdout + m.stderr)[-500:]}")
            runs.append({"wall_s": round(m.wall_s, 2), "cpu_s": round(m.cpu_s, 2), "peak_mb": round(m.peak_mb)})
            say(f"{users} users, round {r + 1}: {m.wall_s:.2f} s wall, {m.cpu_s:.2f} s CPU, {m.peak_mb:.0f} MB")
        out[str(users)] = runs
    result: dict[str, object] = {"load": out}
    if args.adds:
        result["adds"] = time_adds(args.adds)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
