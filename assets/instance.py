"""The Dagster instance of a data folder: ``<home>/dagster``, telemetry off, one warehouse writer.

Every ``af`` command and test that runs Dagster goes through :func:`use_home`, so run history,
schedules and sensors live next to the data they describe and nothing phones home.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from af_pipeline.warehouse.days import log_days
from assets.dagster_adapter import EVENT_BATCH_SIZE, free_run_slots, pool_holders, run_pids
from assets.partitions import register_days
from capture.files import atomic_write
from capture.home import Home

WAREHOUSE_POOL = "af_warehouse"

# Why each setting: telemetry is off because the pipeline is local-only; pools default to one
# slot so two runs never write one DuckDB file at once (DuckDB allows one writer process). The
# team's instance (assets/team.py) uses the same settings.
POOLS_YAML = """\
telemetry:
  enabled: false
concurrency:
  pools:
    default_limit: 1
    granularity: op
"""
# Run monitoring (the daemon of `af ui`): a run launched but never started (its code server
# stopped with `af ui`) is failed after start_timeout_seconds instead of staying STARTING, and a
# run whose cancellation never ends is marked canceled. The default run launcher cannot check a
# STARTED run's process, so runs cut short while STARTED are settled by af (reap_dead_runs).
def run_monitoring_yaml(comment: str, max_runtime_seconds: int | None = None) -> str:
    """The ``run_monitoring`` section of a dagster.yaml of ours (a team's adds a max runtime)."""
    return (f"# {comment}\nrun_monitoring:\n  enabled: true\n  start_timeout_seconds: 180\n"
            "  cancel_timeout_seconds: 180\n  max_resume_run_attempts: 0\n  poll_interval_seconds: 60\n"
            + (f"  max_runtime_seconds: {max_runtime_seconds}\n" if max_runtime_seconds else ""))


RUN_MONITORING_YAML = run_monitoring_yaml(
    "A run cut short when af ui stopped never stays STARTING (docs/orchestration.md).")
# The instance's SQLite run and event log storages: Dagster's own, subclassed in
# assets/dagster_adapter.py (kept engines, synchronous=NORMAL, run shards from a template, event
# batches in one transaction per shard; docs/architecture.md). Named here, Dagster's pluggable
# storage, so every process of the instance (af, the webserver, the daemon, runs) uses them. The
# same files as Dagster's default layout (history/runs.db, history/runs/*.db). The block between
# the two marker lines is af's: `af` writes base_dir again when the folder moved.
STORAGE_BEGIN = "# >>> af storage (rewritten by af when this folder moves; delete the block for Dagster's own)"
STORAGE_END = "# <<< af storage"
STORAGE_KEYS = ("storage", "run_storage", "event_log_storage", "schedule_storage")


def storage_yaml(dagster_home: Path) -> str:
    history = Path(os.path.abspath(dagster_home)) / "history"
    return (
        f"{STORAGE_BEGIN}\n"
        "run_storage:\n  module: assets.dagster_adapter\n  class: TunedSqliteRunStorage\n"
        f"  config:\n    base_dir: {json.dumps(str(history))}\n"
        "event_log_storage:\n  module: assets.dagster_adapter\n  class: TunedSqliteEventLogStorage\n"
        f"  config:\n    base_dir: {json.dumps(str(history / 'runs'))}\n"
        f"{STORAGE_END}\n"
    )


def dagster_yaml(dagster_home: Path) -> str:
    return (
        "# Written by activity-frames. Safe to edit; `af` writes it when it is missing, adds a section a\n"
        "# newer release needs, and keeps the storage block's folder current.\n" + POOLS_YAML
        + f"# The warehouse pool is {WAREHOUSE_POOL}; with default_limit 1 only one step writes DuckDB at a time.\n"
        + RUN_MONITORING_YAML + storage_yaml(dagster_home)
    )


def prepare(home: Home) -> Path:
    """Create ``<home>/dagster`` with its dagster.yaml (if missing) and return the folder.

    A dagster.yaml written by an older release (or by hand) without a ``run_monitoring`` section
    gets :data:`RUN_MONITORING_YAML` appended, and one that names no storage at all gets af's
    storage block (:func:`storage_yaml`); af's storage block naming another folder (the data
    folder moved) gets this one. Everything else in it is kept as it is."""
    folder = home.dagster_home
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "dagster.yaml"
    # the folder as Dagster opens it: SQLite through unquoted sqlite:/// URLs (capture.home.url_safe)
    reached = home.safe_root / folder.name
    if not config.exists():
        atomic_write(config, dagster_yaml(reached).encode("utf-8"))
    else:
        _upgrade(config, reached)
    return folder


def _upgrade(config: Path, reached: Path) -> None:
    import yaml

    text = config.read_text(encoding="utf-8")
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return  # not ours to repair: Dagster names the error
    if parsed is not None and not isinstance(parsed, dict):
        return
    new = text
    if "run_monitoring" not in text:  # present (or named in a comment) is left alone
        new = appended(new, RUN_MONITORING_YAML)
    block = storage_yaml(reached)
    if STORAGE_BEGIN in new and STORAGE_END in new:
        start = new.index(STORAGE_BEGIN)
        end = new.index(STORAGE_END, start) + len(STORAGE_END)
        end += 1 if new[end:end + 1] == "\n" else 0
        new = new[:start] + block + new[end:]
    elif not any(key in (parsed or {}) for key in STORAGE_KEYS):
        new = appended(new, block)
    if new != text:
        atomic_write(config, new.encode("utf-8"), mode=config.stat().st_mode & 0o777)


def appended(text: str, section: str) -> str:
    """``text`` with ``section`` after it, on a line of its own (a dagster.yaml section added)."""
    sep = "" if not text or text.endswith("\n") else "\n"
    return text + sep + section


def use_home(home: Home) -> Path:
    """Point this process's Dagster at the data folder (DAGSTER_HOME, AF_HOME) and return DAGSTER_HOME."""
    prepare(home)
    # Dagster opens its SQLite files through unquoted sqlite:/// URLs: reach the folder by a path
    # without ?, % or # (capture.home.url_safe).
    folder = home.safe_root / home.dagster_home.name
    os.environ["DAGSTER_HOME"] = str(folder)
    os.environ["AF_HOME"] = str(home.root)
    os.environ["DAGSTER_TELEMETRY_DISABLED"] = "1"
    # Run events Dagster sends as a batch are stored in one transaction per shard by the tuned
    # event log storage (assets/dagster_adapter.py); Dagster batches only when this is set. Every
    # process af starts inherits it (the webserver, daemon and code server of `af ui`).
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)
    return folder


def instance(home: Home):  # -> dg.DagsterInstance (imported lazily: Dagster is slow to import)
    """The persistent Dagster instance stored under the data folder."""
    import dagster as dg

    use_home(home)
    return dg.DagsterInstance.get()


def announce_days(home: Home, days: list[str] | None = None) -> None:
    """Make the log's days (or ``days``) partitions of the folder's Dagster instance, if it has one.

    ``af import`` and ``af sync`` call this after landing rows, so an open UI shows a new day at
    once (the sensor would add it on its next tick, ``af build`` before its run). A folder no
    Dagster command has used yet has no instance: nothing is created and Dagster is not imported.
    """
    if not (home.dagster_home / "dagster.yaml").exists():
        return

    inst = instance(home)
    try:
        register_days(inst, days if days is not None else log_days(home))
    finally:
        inst.dispose()  # its storages' kept connections closed now, not at some later collection


# --- One run at a time, and runs whose process is gone never keep the warehouse ------------------
#
# Dagster's pool slots live in the instance's SQLite and are freed only when the run that claimed
# them records its end. A run killed by SIGKILL, the OOM killer or a power cut never does, so its
# slot stayed claimed and every later run waited on it forever (inside Dagster, where Ctrl-C and
# SIGTERM only set a flag nobody read). Two parts fix that:
# - a file lock the kernel releases when the holder dies, taken by every run before its steps
#   (the CLI takes it first so its wait is ours: it says who holds it and Ctrl-C stops it);
# - under it, runs left unfinished by a process that is gone are marked failed and their slots
#   freed, so the pool only ever serializes live runs.

LOCK_FILE = "warehouse.lock"
LOCK_POLL_S = 0.2
_held: dict[str, list[Any]] = {}  # lock path -> [open file, depth]: re-entrant within one process


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    if not isinstance(info, dict) or "pid" not in info:
        return "another process"
    return f"pid {info.get('pid')} ({info.get('what', 'a run')}, since {info.get('since', '?')})"


@contextmanager
def warehouse_lock(
    home: Home,
    what: str,
    say: Callable[[str], None] = lambda _m: None,
    interrupted: Callable[[], bool] = lambda: False,
) -> Iterator[None]:
    """Hold ``<home>/warehouse.lock`` for the block; wait for it (saying why at once) if held.

    The wait polls a non-blocking flock, so a signal always gets through; ``interrupted`` lets a
    caller inside Dagster (which turns SIGINT/SIGTERM into a flag) stop waiting too."""
    path = home.root / LOCK_FILE
    key = str(path)
    if key in _held:
        _held[key][1] += 1
        try:
            yield
        finally:
            _held[key][1] -= 1
        return
    home.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    f = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        told = False
        while True:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if interrupted():
                    raise KeyboardInterrupt from None
                if not told:
                    say(f"waiting for the warehouse of {home.root}: in use by {_holder(path)}; "
                        "this run starts when that one ends (Ctrl-C to give up)")
                    told = True
                time.sleep(LOCK_POLL_S)
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        f.seek(0)
        f.truncate()
        f.write(json.dumps({"pid": os.getpid(), "what": what, "since": since}) + "\n")
        f.flush()
        _held[key] = [f, 1]
        try:
            yield
        finally:
            del _held[key]
            f.seek(0)
            f.truncate()  # the holder is gone; the lock itself is released by close
    finally:
        f.close()


def _process_started_unix(pid: int) -> float | None:
    """When process ``pid`` started (Linux /proc), or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        boot = next(line for line in Path("/proc/stat").read_text(encoding="ascii").splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0.0  # alive, start unknown
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # a zombie has finished; its parent just has not reaped it yet
        return None
    return int(boot.split()[1]) + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def run_process_alive(pid: int, run_started_unix: float | None) -> bool:
    """Whether ``pid`` is still the process that ran a run started at ``run_started_unix``.

    A pid can be reused (after a reboot, surely): a process that started after the run did is
    not the run's."""
    started = _process_started_unix(pid)
    if started is None:
        return False
    return run_started_unix is None or started <= run_started_unix + 2.0


# --- Runs cut short ------------------------------------------------------------------------------
#
# A run whose process ended before the run did (`af ui` stopped or killed while it ran, SIGKILL,
# a power cut) carries the tag CUT_SHORT_TAG, whose value says why; the sealed-day sensor asks for
# such a run's day again (assets/sensors.py). Dagster itself records a run its process ended on
# SIGINT/SIGTERM as failed with the failure reason UNEXPECTED_TERMINATION, which counts the same.

CUT_SHORT_TAG = "af/cut_short"
FAILURE_REASON_TAG = "dagster/failure_reason"  # set by Dagster on a failed run: why it failed
CUT_SHORT_REASONS = ("UNEXPECTED_TERMINATION", "START_TIMEOUT", "RUN_WORKER_RESTART")
PROCESS_GONE = "its process is gone (af ui, the machine or the run was killed while it ran)"
UI_STOPPED = "af ui stopped while this run was in progress"


def cut_short(tags: Any) -> bool:
    """Whether a failed run's tags say it was cut short rather than failed by its own steps."""
    return CUT_SHORT_TAG in tags or tags.get(FAILURE_REASON_TAG) in CUT_SHORT_REASONS


def _cut_short_message(why: str, pids: list[int]) -> str:
    return (f"cut short: {why} (pid {', '.join(map(str, pids))}); a day the sealed-day sensor asked for is "
            "requested again on its next tick, a run launched by hand has to be launched again")


def reap_dead_runs(inst: Any, why: str = PROCESS_GONE) -> list[str]:
    """Fail the runs whose process is gone and free every slot such runs (or finished ones) hold.

    Each run it fails says ``cut short: <why>`` and gets the tag CUT_SHORT_TAG. Returns one
    sentence per run it settled. Runs whose process is alive, and runs that have not said which
    process runs them yet, are left alone."""
    import dagster as dg

    unfinished = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
    said = []
    for rec in inst.get_run_records(dg.RunsFilter(statuses=unfinished)):
        run = rec.dagster_run
        pids = run_pids(inst, run.run_id)
        started = rec.start_time or rec.create_timestamp.timestamp()
        if not pids or any(run_process_alive(p, started) for p in pids):
            continue
        run = inst.get_run_by_id(run.run_id)  # its process may have recorded its end before it exited
        if run is None or run.is_finished:
            continue
        inst.add_run_tags(run.run_id, {CUT_SHORT_TAG: why})
        inst.report_run_failed(run, message=_cut_short_message(why, pids) + "; its warehouse slot is freed")
        free_run_slots(inst, run.run_id)
        said.append(f"run {run.run_id[:8]} ({run.job_name}) was left unfinished by pid "
                    f"{', '.join(map(str, pids))}, which is gone: marked failed (cut short), its warehouse slot freed")
    for pool, run_id in pool_holders(inst):
        held_by = inst.get_run_by_id(run_id)
        if held_by is None or held_by.is_finished:
            free_run_slots(inst, run_id)
            said.append(f"freed the {pool} slot of finished run {run_id[:8]}")
    return said


def settle_stopped(inst: Any, pids: set[int], since: float) -> list[str]:
    """After ``af ui`` stopped its processes ``pids``: no run they ran is left unfinished.

    Runs still unfinished whose process is gone are failed as cut short (:func:`reap_dead_runs`,
    saying af ui stopped); a run Dagster itself failed as interrupted (its process got SIGTERM)
    since ``since`` (unix time) whose process was one of ``pids`` gets the same tag and says so in
    its log. One sentence per run."""
    import dagster as dg

    said = reap_dead_runs(inst, why=UI_STOPPED)
    interrupted = dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE], tags={FAILURE_REASON_TAG: "UNEXPECTED_TERMINATION"},
                                updated_after=datetime.fromtimestamp(since, UTC))
    for run in inst.get_runs(interrupted):
        ran = run_pids(inst, run.run_id)
        if CUT_SHORT_TAG in run.tags or not pids.intersection(ran):
            continue
        inst.add_run_tags(run.run_id, {CUT_SHORT_TAG: UI_STOPPED})
        inst.report_engine_event(_cut_short_message(UI_STOPPED, ran), run)
        said.append(f"run {run.run_id[:8]} ({run.job_name}) was interrupted when af ui stopped: marked cut short")
    return said


@contextmanager
def exclusive_run(
    home: Home, inst: Any, what: str, say: Callable[[str], None] = lambda _m: None,
    interrupted: Callable[[], bool] = lambda: False,
) -> Iterator[None]:
    """Hold the warehouse lock and settle dead runs first: what every run does before its steps."""
    with warehouse_lock(home, what, say, interrupted):
        for line in reap_dead_runs(inst):
            say(line)
        yield
