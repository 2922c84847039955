"""The independent rebuild both invariant checks compare against.

A fresh build of the days being certified (by default every day of the log) runs in separate
Python processes with a different ``TZ`` and ``PYTHONHASHSEED`` (``python -m certification.rebuild
--home DIR --out DIR [--days D,D,...]``). They run the same per-day steps as the Dagster assets
(af_pipeline/warehouse/day_work.py) over those days, into a new warehouse and published folder,
and write the per-day digest of every warehouse table. A day's steps read only that day's
segments, so certifying two days of a long log rebuilds two days. Then:

- byte-identical recompile: the published bytes of a day (canonical document, YAML, Markdown,
  context block) must equal what the other process produced from the log;
- rebuild equals incremental: every warehouse table's rows for the day must equal the fresh
  warehouse's, although ours was built by Dagster runs as capture arrived (a day at a time, or
  asset by asset over a range), and the fresh one day after day, every step of a day in turn.

The rebuild goes without Dagster: its start-up and per-event bookkeeping would cost more than
the days (Dagster's own execution of the assets is what the warehouse being certified came
from). The days are split into contiguous parts of about equal work, one process per core
(``AF_REBUILD_PROCESSES`` overrides), each with its own warehouse, publishing into one shared
folder. Days share no state (each step is a function of that day's rows and its earlier steps),
so the parts together are the same fresh build, in parallel.

The build is kept for the rest of the process, keyed by the log's state and the code version
(a build of more days serves a request for fewer), so the two checks that use it pay for it once.
It lives on the memory file system when there is one (scratch_dir): it is thrown away once its
digests are read, so publishing's fsyncs into it would be pure cost.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from af_pipeline.compiler.categories import rules_in
from af_pipeline.warehouse import day_work, store
from af_pipeline.warehouse.days import log_days
from af_pipeline.warehouse.version import code_version
from capture.errors import CheckFailed
from capture.home import Home
from capture.log import EventLog
from capture.process import end
from capture.timeutil import days_between

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
    days: frozenset[str]  # the days built (digests has a key for each)


_CACHE: dict[tuple, FreshBuild] = {}
FRESH_PREFIX = "af-fresh-"
# DuckDB's spill folders of the rebuild processes (on disk, in the temporary folder): made here,
# before the children start, so that this process removes them however the children end (a
# child killed mid-build never runs its own clean-up). Keyed by the build's folder.
SPILL_PREFIX = "af-rebuild-spill-"
_SPILLS: dict[Path, Path] = {}
OWNER = "owner.pid"  # the certify process that made a throwaway folder
PARENT_ENV = "AF_REBUILD_PARENT"
_PENDING: dict[tuple, tuple[list[subprocess.Popen], Path, frozenset[str]]] = {}  # started, not yet waited for
CHILD_LOG = "child.log"
PROCESSES_ENV = "AF_REBUILD_PROCESSES"
MIN_ROWS_PER_PROCESS = 40_000  # snapshots + inputs: a busy day or two
MEMORY_LIMIT = "2GB"  # per rebuild process; DuckDB spills what is beyond it to disk
SCRATCH = "/dev/shm"  # noqa: S108 - a throwaway folder made with mkdtemp, see scratch_dir
atexit.register(lambda: clear())  # the temporary build folders go when the process ends


def log_state(home: Home) -> tuple:
    """What a fresh build depends on: the chain head and the open days' segment sizes."""
    log = EventLog(home)
    sizes = []
    if log.open_dir.exists():
        for path in sorted(log.open_dir.rglob("*.jsonl")):
            sizes.append((path.relative_to(log.dir).as_posix(), path.stat().st_size))
    return (log.chain_head(), tuple(sizes))


def _key(home: Home, include_typed_text: bool) -> tuple:
    # Not keyed by the folder's path: the same chain head, open days and code give the same
    # build wherever the folder lives (certifying a copy reuses it).
    # the category rules are an input of every document: a changed categories.json is a new build
    return (include_typed_text, log_state(home), code_version(), rules_in(home.root).sha256)


def split_days(work: list[tuple[str, int]], parts: int) -> list[list[str]]:
    """Contiguous runs of days with about equal total work (rows), at most ``parts`` of them."""
    days = [d for d, _ in work]
    parts = max(1, min(parts, len(days)))
    total = sum(max(1, w) for _, w in work)
    out: list[list[str]] = [[]]
    done = 0
    for day, w in work:
        # start the next part once this one holds its share of the work
        if out[-1] and len(out) < parts and done >= total * len(out) / parts:
            out.append([])
        out[-1].append(day)
        done += max(1, w)
    return [p for p in out if p]


def _processes(rows: int) -> int:
    raw = os.environ.get(PROCESSES_ENV, "")
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            raise CheckFailed(f"{PROCESSES_ENV}={raw!r} is not a number of processes") from None
    # A second process pays its own start-up (imports, about a second of CPU): only worth it
    # when there are more rows than one process builds in about that time.
    return max(1, min(2, os.cpu_count() or 1, 1 + rows // MIN_ROWS_PER_PROCESS))


def _wanted(home: Home, days: Iterable[str] | None) -> frozenset[str]:
    """The log's days among ``days`` (None: every day of the log): a day the log no longer holds
    cannot be rebuilt, and the checks report it as missing from the fresh build."""
    logged = {d.day for d in EventLog(home).days()}
    return frozenset(logged if days is None else logged & set(days))


def _covers(built: frozenset[str], wanted: frozenset[str]) -> bool:
    return wanted <= built


def start(home: Home, include_typed_text: bool = False, days: Iterable[str] | None = None) -> None:
    """Start the independent rebuild of ``days`` (default: every day of the log) in the
    background, so it runs while other checks do.

    ``af certify`` calls this before its Dagster run with the days it certifies: the rebuild
    (the longest part of certification) then overlaps the append-only and data-quality checks,
    and its cost follows the days certified, not the length of the log. ``fresh_build`` waits
    for it, or starts it itself if nobody did.
    """
    key = _key(home, include_typed_text)
    wanted = _wanted(home, days)
    if key in _CACHE and _covers(_CACHE[key].days, wanted):
        return
    if key in _PENDING and _covers(_PENDING[key][2], wanted):
        return
    for stale in list(_PENDING):  # started for a log state (or days) that has moved on since
        procs, folder, _days = _PENDING.pop(stale)
        _stop(procs, folder)
    _sweep_orphans()
    folder = Path(tempfile.mkdtemp(prefix=FRESH_PREFIX, dir=scratch_dir()))
    (folder / OWNER).write_text(str(os.getpid()), encoding="utf-8")
    spill = _SPILLS[folder] = Path(tempfile.mkdtemp(prefix=SPILL_PREFIX))
    (spill / OWNER).write_text(str(os.getpid()), encoding="utf-8")
    env = alternate_environment(home.settings().tz)
    root = str(Path(__file__).resolve().parent.parent)
    child_env = dict(os.environ, **env)
    child_env["PYTHONPATH"] = root + (os.pathsep + child_env["PYTHONPATH"] if child_env.get("PYTHONPATH") else "")
    child_env.pop("DAGSTER_HOME", None)  # the child uses an ephemeral instance
    child_env[PARENT_ENV] = str(os.getpid())
    # The wanted days only (the day partitions are the log's days; a day's steps read that day's
    # segments alone). Elements weigh little now that only clicked trees are read.
    rows = {d.day: d.counts.get("snapshots", 0) + d.counts.get("inputs", 0) for d in EventLog(home).days()}
    work = [(day, rows.get(day, 0)) for day in sorted(wanted)]
    parts = split_days(work, _processes(sum(w for _, w in work))) or [[]]
    procs = []
    for i, part in enumerate(parts):
        out = folder / f"part-{i}"
        out.mkdir()
        cmd = [sys.executable, "-m", "certification.rebuild", "--home", str(home.root), "--out", str(out),
               "--published", str(folder / "published"), "--days", ",".join(part), "--spill", str(spill / f"part-{i}")]
        if include_typed_text:
            cmd.append("--typed-text")
        with open(out / CHILD_LOG, "wb") as log_file:  # a file, not a pipe: nobody reads while it runs
            procs.append(subprocess.Popen(cmd, env=child_env, cwd=root, stdout=log_file, stderr=subprocess.STDOUT))
    _PENDING[key] = (procs, folder, wanted)


def scratch_dir() -> str:
    """Where the throwaway build goes: a memory file system when there is one. Publishing
    writes each file atomically with an fsync, about 14 ms each on this machine's disk (six
    files a day), which a build thrown away after its digests are read does not need."""
    shm = Path(SCRATCH)
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return str(shm)
    return tempfile.gettempdir()


def _sweep_orphans() -> None:
    """Remove the throwaway folders of earlier certify runs that were killed (their owner is gone)."""
    places = {Path(tempfile.gettempdir()), Path(scratch_dir())}
    for folder in [f for place in sorted(places) for prefix in (FRESH_PREFIX, SPILL_PREFIX)
                   for f in place.glob(f"{prefix}*")]:
        try:
            owner = int((folder / OWNER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not ours, or still being set up
        if owner != os.getpid() and not _alive(owner):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die_with_parent() -> None:
    """In a rebuild child: end when the certify process that started it ends (even by SIGKILL),
    instead of rebuilding for nobody."""
    parent = os.environ.get(PARENT_ENV)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if parent and os.getppid() != int(parent):  # the parent died before the line above took effect
        raise SystemExit(3)


def _stop(procs: list[subprocess.Popen], folder: Path) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()
    shutil.rmtree(folder, ignore_errors=True)
    _drop_spill(folder)


def _drop_spill(folder: Path) -> None:
    """Remove the spill folder of the build in ``folder`` (its processes have ended)."""
    spill = _SPILLS.pop(folder, None)
    if spill is not None:
        shutil.rmtree(spill, ignore_errors=True)


def fresh_build(home: Home, include_typed_text: bool = False, days: Iterable[str] | None = None) -> FreshBuild:
    """The independent rebuild of ``days`` (default: every day of the log), run once per log
    state and code version; a build already made or started for more days serves fewer."""
    key = _key(home, include_typed_text)
    wanted = _wanted(home, days)
    if key in _CACHE and _covers(_CACHE[key].days, wanted):
        return _CACHE[key]
    start(home, include_typed_text, wanted)  # a no-op if a build of these days is under way
    procs, folder, built_days = _PENDING.pop(key)
    digests: dict[str, dict[str, str]] = {}
    env: dict[str, str] = {}
    for i, proc in enumerate(procs):
        part = folder / f"part-{i}"
        if proc.wait() != 0:
            tail = (part / CHILD_LOG).read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
            _stop(procs, folder)
            raise CheckFailed("the independent rebuild of the log failed: " + " | ".join(tail))
        data = json.loads((part / DIGESTS).read_text(encoding="utf-8"))
        digests.update(data["days"])
        env = data["env"]
    _drop_spill(folder)  # every process has ended
    build = FreshBuild(folder, digests, folder / "published", env, built_days)
    for old in _CACHE.values():  # one build kept: the newest log state
        shutil.rmtree(old.folder, ignore_errors=True)
    _CACHE.clear()
    _CACHE[key] = build
    return build


def clear() -> None:
    for procs, folder, _days in _PENDING.values():
        _stop(procs, folder)
    _PENDING.clear()
    for old in _CACHE.values():
        shutil.rmtree(old.folder, ignore_errors=True)
    _CACHE.clear()


def _build_here(home: Home, out: Path, include_typed_text: bool, published: Path | None = None,
                first: str | None = None, last: str | None = None, progress: bool = False,
                only: Sequence[str] | None = None, spill: Path | None = None) -> dict[str, Any]:
    """Build the days ``only`` (else the calendar days in [first, last], default all) into
    ``out`` (runs in the child).

    The same per-day steps the Dagster assets run (af_pipeline/warehouse/day_work.py), day by day on a fresh
    warehouse, without Dagster: its start-up and per-event bookkeeping would cost more than the
    days themselves, and nothing here is for the UI."""
    out.mkdir(parents=True, exist_ok=True)
    logged = log_days(home)
    if only is not None:
        days = sorted(set(only))
    else:
        days = days_between(first or logged[0], last or logged[-1]) if logged else []
    published_dir = published or out / "published"
    log = EventLog(home)
    version = code_version()
    # In memory: this warehouse lives only until its digests are taken, so its write-ahead log,
    # fsyncs and checkpoints would be pure cost (a third of loading a day). Past the memory limit
    # DuckDB spills to a folder on disk (not to the memory file system the build may be in),
    # so a year of days still fits (``spill``, made by the certify process, which removes it
    # however this process ends). One thread: the parts already keep every core busy, and
    # DuckDB's own threads would only contend with them.
    if spill is None:
        spill = Path(tempfile.mkdtemp(prefix=SPILL_PREFIX))
    else:
        spill.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(":memory:", config={"threads": 1, "memory_limit": MEMORY_LIMIT,
                                             "temp_directory": str(spill)})
    store.use_documents_dir(con, out / "documents")  # thrown away with the build, like the warehouse
    try:
        started = time.monotonic()
        rules = rules_in(home.root)
        # Days in the build's own batches (day_work.JUDGE_EVERY a commit and a data-quality
        # verdict): each day's steps still run in turn on a fresh warehouse, as `af build` runs them.
        built = day_work.build_days(con, log, days, published_dir, include_typed_text, version, rules)
        for i, (day, _numbers) in enumerate(built):
            if progress:
                print(f"rebuilt {day} ({i + 1}/{len(days)}, {time.monotonic() - started:.1f} s)", flush=True)
        digests = store.digests(con, days)
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    env = {"TZ": os.environ.get("TZ", ""), "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "")}
    return {"env": env, "days": digests}


def compare_tables(live: dict[str, str], fresh: FreshBuild, day: str) -> list[str]:
    """Warehouse tables of one day that differ from the fresh rebuild (``live``: the day's
    digests in the warehouse being certified, from store.digests)."""
    want = fresh.digests.get(day)
    if want is None:
        return [f"{day}: the fresh rebuild from the log has no such day"]
    have = live
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
    p.add_argument("--published", help="folder to publish the days into (default OUT/published)")
    p.add_argument("--from", dest="first", metavar="DAY", help="first day to build (default: the log's first)")
    p.add_argument("--to", dest="last", metavar="DAY", help="last day to build (default: the log's last)")
    p.add_argument("--days", metavar="DAY,DAY,...", help="exactly these days (instead of --from/--to)")
    p.add_argument("--spill", metavar="DIR", help="folder DuckDB spills into (default: a new temporary one)")
    args = p.parse_args(argv)
    _die_with_parent()
    out = Path(args.out)
    data = _build_here(Home(args.home), out, args.typed_text, Path(args.published) if args.published else None,
                       args.first, args.last, progress=True,
                       only=None if args.days is None else [d for d in args.days.split(",") if d],
                       spill=Path(args.spill) if args.spill else None)
    (out / DIGESTS).write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    end(main())  # without the interpreter's last collection (capture/process.py): the certify process waits for it
