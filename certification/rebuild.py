"""The independent rebuild both invariant checks compare against.

A fresh build of the whole event log runs in a separate Python process with a different ``TZ``
and ``PYTHONHASHSEED`` (``python -m certification.rebuild --home DIR --out DIR``). It runs the
same Dagster assets over every day of the log in one run, into its own warehouse and published
folder, and writes the per-day digest of every warehouse table. Then:

- byte-identical recompile: the published bytes of a day (canonical document, YAML, Markdown,
  context block) must equal what the other process produced from the log;
- rebuild equals incremental: every warehouse table's rows for the day must equal the fresh
  warehouse's, although ours was built day by day as capture arrived.

The build is kept for the rest of the process, keyed by the log's state and the code version,
so certifying many days pays for it once.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assets import store
from capture.errors import CheckFailed
from capture.home import Home

# Zones with odd offsets far from usual machine zones (+12:45, -03:30, +05:45).
ALTERNATE_ZONES = ("Pacific/Chatham", "America/St_Johns", "Asia/Kathmandu")
ALTERNATE_SEEDS = ("4242", "2718")
DIGESTS = "digests.json"


def alternate_environment(user_tz: str) -> dict[str, str]:
    """TZ and PYTHONHASHSEED that differ from this process's and from the user's zone."""
    current_tz = os.environ.get("TZ", "").lstrip(":")
    tz = next(z for z in ALTERNATE_ZONES if z not in (current_tz, user_tz))
    current_seed = os.environ.get("PYTHONHASHSEED", "")
    seed = next(s for s in ALTERNATE_SEEDS if s != current_seed)
    return {"TZ": tz, "PYTHONHASHSEED": seed}


@dataclass
class FreshBuild:
    folder: Path
    digests: dict[str, dict[str, str]]  # day -> table -> "rows:sha256"
    published: Path
    env: dict[str, str]  # the other process's TZ and PYTHONHASHSEED


_CACHE: dict[tuple, FreshBuild] = {}
_PENDING: dict[tuple, tuple[subprocess.Popen, Path]] = {}  # started, not yet waited for
CHILD_LOG = "child.log"
atexit.register(lambda: clear())  # the temporary build folders go when the process ends


def log_state(home: Home) -> tuple:
    """What a fresh build depends on: the chain head and the open days' segment sizes."""
    from capture.log import EventLog

    log = EventLog(home)
    sizes = []
    if log.open_dir.exists():
        for path in sorted(log.open_dir.rglob("*.jsonl")):
            sizes.append((path.relative_to(log.dir).as_posix(), path.stat().st_size))
    return (log.chain_head(), tuple(sizes))


def _key(home: Home, include_typed_text: bool) -> tuple:
    from assets.version import code_version

    # Not keyed by the folder's path: the same chain head, open days and code give the same
    # build wherever the folder lives (certifying a copy reuses it).
    return (include_typed_text, log_state(home), code_version())


def start(home: Home, include_typed_text: bool = False) -> None:
    """Start the independent rebuild in the background, so it runs while other checks do.

    ``af certify`` calls this before its Dagster run: the rebuild (the longest part of
    certification) then overlaps the append-only and data-quality checks on the second core.
    ``fresh_build`` waits for it, or starts it itself if nobody did.
    """
    key = _key(home, include_typed_text)
    if key in _CACHE or key in _PENDING:
        return
    for stale in list(_PENDING):  # started for a log state that has moved on since
        proc, folder = _PENDING.pop(stale)
        proc.kill()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix="af-fresh-"))
    env = alternate_environment(home.settings().tz)
    root = str(Path(__file__).resolve().parent.parent)
    child_env = dict(os.environ, **env)
    child_env["PYTHONPATH"] = root + (os.pathsep + child_env["PYTHONPATH"] if child_env.get("PYTHONPATH") else "")
    child_env.pop("DAGSTER_HOME", None)  # the child uses an ephemeral instance
    cmd = [sys.executable, "-m", "certification.rebuild", "--home", str(home.root), "--out", str(folder)]
    if include_typed_text:
        cmd.append("--typed-text")
    with open(folder / CHILD_LOG, "wb") as out:  # a file, not a pipe: nobody reads while it runs
        proc = subprocess.Popen(cmd, env=child_env, cwd=root, stdout=out, stderr=subprocess.STDOUT)
    _PENDING[key] = (proc, folder)


def fresh_build(home: Home, include_typed_text: bool = False) -> FreshBuild:
    """The independent rebuild of the whole log (run once per log state and code version)."""
    key = _key(home, include_typed_text)
    if key in _CACHE:
        return _CACHE[key]
    if key not in _PENDING:
        start(home, include_typed_text)
    proc, folder = _PENDING.pop(key)
    returncode = proc.wait()
    if returncode != 0:
        tail = (folder / CHILD_LOG).read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        shutil.rmtree(folder, ignore_errors=True)
        raise CheckFailed("the independent rebuild of the log failed: " + " | ".join(tail))
    data = json.loads((folder / DIGESTS).read_text(encoding="utf-8"))
    build = FreshBuild(folder, data["days"], folder / "published", data["env"])
    for old in _CACHE.values():  # one build kept: the newest log state
        shutil.rmtree(old.folder, ignore_errors=True)
    _CACHE.clear()
    _CACHE[key] = build
    return build


def clear() -> None:
    for proc, folder in _PENDING.values():
        proc.kill()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
    _PENDING.clear()
    for old in _CACHE.values():
        shutil.rmtree(old.folder, ignore_errors=True)
    _CACHE.clear()


def _build_here(home: Home, out: Path, include_typed_text: bool) -> dict[str, Any]:
    """Materialize every day of the log into ``out`` (runs in the child process)."""
    import warnings

    import dagster as dg
    import duckdb

    from assets import derive
    from assets.partitions import daily_partitions, log_days
    from assets.resources import resources_for

    warnings.filterwarnings("ignore", category=Warning, module="dagster")
    out.mkdir(parents=True, exist_ok=True)
    warehouse = out / "warehouse.duckdb"
    days = log_days(home)
    digests: dict[str, dict[str, str]] = {}
    if days:
        result = dg.materialize(
            derive.build_assets(daily_partitions(home)),
            instance=dg.DagsterInstance.ephemeral(),
            resources=resources_for(home, warehouse, out / "published", include_typed_text),
            tags={"dagster/asset_partition_range_start": days[0], "dagster/asset_partition_range_end": days[-1]},
            raise_on_error=True,
        )
        assert result.success
        con = duckdb.connect(str(warehouse), read_only=True)
        try:
            for day in days:
                digests[day] = store.day_digests(con, day)
        finally:
            con.close()
    env = {"TZ": os.environ.get("TZ", ""), "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "")}
    return {"env": env, "days": digests}


def compare_tables(live_con: Any, fresh: FreshBuild, day: str) -> list[str]:
    """Warehouse tables of one day that differ from the fresh rebuild."""
    want = fresh.digests.get(day)
    if want is None:
        return [f"{day}: the fresh rebuild from the log has no such day"]
    have = store.day_digests(live_con, day)
    problems = []
    for table in sorted(set(want) | set(have)):
        w, h = want.get(table, "0:-"), have.get(table, "0:-")
        if w != h:
            problems.append(
                f"{day}: table {table} differs from a fresh rebuild of the log "
                f"(incremental: {h.split(':')[0]} rows, {h.split(':')[-1][:12]}; fresh: {w.split(':')[0]} rows, "
                f"{w.split(':')[-1][:12]})"
            )
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m certification.rebuild", description=__doc__)
    p.add_argument("--home", required=True, help="data folder whose event log is rebuilt")
    p.add_argument("--out", required=True, help="empty folder for the fresh warehouse and published/")
    p.add_argument("--typed-text", action="store_true", help="build with the typed-text opt-in")
    args = p.parse_args(argv)
    out = Path(args.out)
    data = _build_here(Home(args.home), out, args.typed_text)
    (out / DIGESTS).write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
