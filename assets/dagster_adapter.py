"""Every use of a Dagster internal, in one place (Dagster 1.13; see TESTED_WITH).

The rest of assets/ and checks/ speaks public Dagster only. What is here has no public form yet:

- per-day check results in a range run: Dagster's AssetCheckResult has no partition, so a check
  run over several day partitions would record one result for the whole run and none on the
  days. :func:`day_check` turns a check's ``{day: AssetCheckResult}`` into one evaluation per
  day partition, each aimed at that day's latest materialization (the UI shows a partition's
  check status only then), which needs the event log storage's latest-storage-id lookup, the
  non-exported AssetCheckEvaluationTargetMaterializationData, the check op's output name and a
  hand-made Output event;
- the Dagster event behind a log record, read by the ``stage_progress`` logger that prints one
  line per stage for ``af build`` (the record's ``dagster_meta`` attribute);
- the interrupt flag Dagster sets when it swallows SIGINT/SIGTERM inside a run;
- per-day metadata in a range run without three instance queries per day (:func:`add_day_metadata`);
- the run's SQLite writes without an fsync per event, over kept connections (:func:`quick_run_storage`);
- Alembic's head revision asked once, new run shards copied from a template, event batches in one
  transaction per shard (installed on import, every process: :func:`_install_sqlite_speedups`);
- run and pool-slot bookkeeping used to settle runs killed mid-step (assets/instance.py).

tests/test_dagster_adapter.py exercises each on a real instance and pins TESTED_WITH, so an
upgrade fails there first, with the list of what to re-verify.
"""

from __future__ import annotations

import atexit
import functools
import logging
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import dagster as dg

# Not re-exported by `dagster`; the record Dagster itself fills in for a single-partition run.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._utils.interrupts import check_captured_interrupt

TESTED_WITH = "1.13.27"

# A run started with no partition (the UI's "Execute all" on a partitioned check) cannot say
# which days to judge; this is what the run's failure says instead of Dagster's invariant error.
NO_PARTITION = (
    "certification judges day partitions: launch the certify job for a day or a range (Jobs > certify > "
    "Launchpad, pick the partition(s); or select days in the asset's Partitions tab and 'Materialize' with "
    "checks), or run `af certify --from DAY --to DAY`"
)

DayResults = Mapping[str, dg.AssetCheckResult]
_Events = Iterator[dg.Output | dg.AssetCheckEvaluation]

__all__ = [
    "NO_PARTITION",
    "TESTED_WITH",
    "DayResults",
    "add_day_metadata",
    "check_captured_interrupt",
    "day_check",
    "free_run_slots",
    "latest_materializations",
    "pool_holders",
    "quick_run_storage",
    "run_pids",
    "stage_progress",
]


def add_day_metadata(context: dg.AssetExecutionContext, per_day: Mapping[str, Mapping[str, Any]]) -> None:
    """Each day's metadata on its own partition of this step's materialization.

    What ``context.add_asset_metadata(meta, partition_key=day)`` does for each day, but the days
    are checked against the run's partitions once: Dagster checks each call with three instance
    queries (a dynamic partition's existence, twice, and the key list), seconds over a range."""
    targeted = set(context.partition_keys)
    stray = sorted(set(per_day) - targeted)
    if stray:
        raise dg.DagsterInvariantViolationError(
            f"metadata for partition(s) {', '.join(stray)} that this run does not target"
        )
    step = context.op_execution_context._step_execution_context
    key = context.asset_key
    acc = step._metadata_accumulator
    for day in sorted(per_day):
        acc = acc.with_additional_asset_metadata(asset_key=key, partition_key=day, metadata=per_day[day])
    step._metadata_accumulator = acc


# --- the run's SQLite writes ----------------------------------------------------------------------
#
# Dagster's SQLite storages open a new connection for every event they store and close it after;
# with WAL and synchronous=FULL (SQLite's default) each commit syncs the WAL to disk, and each close
# of the last connection checkpoints the WAL into the database and syncs again: several fsyncs per
# event, 300+ events for a range run. Connections to the instance's databases (DAGSTER_HOME, and
# the instance of a quick_run_storage block) use synchronous=NORMAL (WAL stays consistent after a
# crash or power cut; the last commits may be lost on a power cut, never the database), and one
# idle connection per database file stays open so each event's close is not the last one: the WAL
# is checkpointed when it grows (SQLite's auto-checkpoint), and when the block ends or the process
# exits. Outside a block (a run's creation and its first and last events, a run the daemon's
# worker executes) the HOME_KEEP files last opened keep theirs.
#
# Opening is the other cost: for every event and every read (partition keys, latest
# materializations) Dagster's SQLite run and event log storages build a new SQLAlchemy engine,
# connect, and throw both away, so SQLAlchemy also compiles each statement anew (its statement
# cache lives in the engine). A one-day run does that ~370 times, over a second of CPU. During the
# block the instance's own storages keep one engine per database file (the runs database, the
# index shard, the run's shard), with its connections pooled: same transactions, same files.

_quick_lock = threading.Lock()
_quick: dict[str, Any] = {"depth": 0, "root": (), "keep": {}, "home_keep": {}}
HOME_KEEP = 8  # idle connections kept to DAGSTER_HOME's files: the runs, index and newest run shard


def _home_roots() -> tuple[str, ...]:
    """DAGSTER_HOME as Dagster names it and resolved: the instance every process of ours uses."""
    import os

    home = os.environ.get("DAGSTER_HOME", "")
    if not home:
        return ()
    if _quick.get("home_env") != home:
        _quick["home_env"] = home
        _quick["home_roots"] = (str(Path(home).absolute()) + "/", str(Path(home).resolve()) + "/")
    return cast(tuple[str, ...], _quick["home_roots"])


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Listens to every SQLAlchemy connection of the process (installed once, below): those to
    # the instance's files get synchronous=NORMAL always, from the run's creation to its last
    # event (before, the events stored before and after the run's resources came up synced each
    # commit); the kept idle connection only within quick_run_storage.
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    rows = dbapi_connection.execute("PRAGMA database_list").fetchall()
    path = next((str(r[2]) for r in rows if r[1] == "main"), "")
    roots = (*_quick["root"], *_home_roots())
    if not path or not any(path.startswith(root) for root in roots):
        return
    # Only a speed-up: where it cannot be had (a full disk answers "disk I/O error" here), the
    # connection stays as Dagster made it, and Dagster's own write reports the real cause.
    try:
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")
        with _quick_lock:
            kept = _quick["home_keep"]
            if path in _quick["keep"] or path in kept:
                return
            if _quick["depth"] and any(path.startswith(root) for root in _quick["root"]):
                _quick["keep"][path] = _idle_reader(path)
                return
            # Outside the block (a run's creation, its first and last events, a run the daemon
            # launched): the few files last used stay open, so a connection's close is not the
            # last one and does not checkpoint and sync the file each time.
            kept[path] = _idle_reader(path)
            while len(kept) > HOME_KEEP:
                kept.pop(next(iter(kept))).close()
    except sqlite3.Error:
        return


def _idle_reader(path: str) -> sqlite3.Connection:
    """A connection that has read once: only then does it hold the shared lock on the WAL index
    that tells another connection's close it is not the last one."""
    con = sqlite3.connect(path, timeout=30, check_same_thread=False)
    con.execute("SELECT count(*) FROM sqlite_master").fetchall()
    return con


def _close_kept() -> None:
    with _quick_lock:
        kept = list(_quick["home_keep"].values())
        _quick["home_keep"].clear()
    for con in kept:
        con.close()  # the last connection: SQLite checkpoints the file's WAL into it


@contextmanager
def quick_run_storage(instance: dg.DagsterInstance | None) -> Iterator[None]:
    """For the block: the instance's SQLite files written without an fsync per event (see above).
    Re-entrant; a no-op for an instance without a folder on disk."""
    root = getattr(instance, "root_directory", None) if instance is not None else None
    if not root or not Path(root).is_dir():
        yield
        return
    with _quick_lock:
        _quick["depth"] += 1
        first = _quick["depth"] == 1
        if first:
            # the folder as Dagster names it, and resolved (it may be reached through a symlink)
            _quick["root"] = (str(Path(root).absolute()) + "/", str(Path(root).resolve()) + "/")
    unpool = _pool_connections(instance)
    try:
        yield
    finally:
        unpool()
        with _quick_lock:
            _quick["depth"] -= 1
            last = _quick["depth"] == 0
            kept = list(_quick["keep"].values()) if last else []
            if last:
                _quick["keep"] = {}
                _quick["root"] = ()
        if last:
            for con in kept:
                con.close()


_POOLED = "_af_pooled_engines"  # set on a storage object while its connections are pooled


def _pool_connections(instance: dg.DagsterInstance | None) -> Callable[[], None]:
    """Give the instance's SQLite run and event log storages one kept engine per database file;
    return what undoes it (a no-op where nothing was changed: another storage, or already pooled).

    Replaces, on those two objects only, the methods through which Dagster 1.13 opens every
    connection (SqliteEventLogStorage._connect and has_table, SqliteRunStorage.connect) by the
    same code with the engine kept instead of created and disposed each time, and remembers the
    dynamic partitions found to exist (see below)."""
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
    from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool, QueuePool

    if instance is None:
        return lambda: None
    events, runs = instance.event_log_storage, instance.run_storage
    if type(events) is not SqliteEventLogStorage or type(runs) is not SqliteRunStorage:
        return lambda: None
    if hasattr(events, _POOLED) or hasattr(runs, _POOLED):
        return lambda: None
    engines: dict[str, Any] = {}
    engines_lock = threading.Lock()

    def engine_for(url: str) -> Any:
        with engines_lock:
            if url not in engines:
                # a few kept: Dagster's lock serializes the event log's connections, but it asks
                # whether a table exists while it holds one, and another thread may use its own
                engines[url] = create_engine(
                    url, poolclass=QueuePool, pool_size=4, max_overflow=8,
                    connect_args={"timeout": 30, "check_same_thread": False},
                )
            return engines[url]

    @contextmanager
    def events_connect(shard: str) -> Iterator[Any]:
        with events._db_lock:
            url = events.conn_string_for_shard(shard)
            if shard not in events._initialized_dbs:  # a new run's shard: created as Dagster does
                fresh = create_engine(url, poolclass=NullPool, connect_args={"timeout": 30})
                try:
                    events._initdb(fresh)
                finally:
                    fresh.dispose()
                events._initialized_dbs.add(shard)
            with engine_for(url).connect() as conn, conn.begin():
                yield conn

    def events_has_table(table_name: str) -> bool:
        engine = engine_for(events.conn_string_for_shard("index"))
        with engine.connect() as conn:
            return bool(engine.dialect.has_table(conn, table_name))

    @contextmanager
    def runs_connect() -> Iterator[Any]:
        with engine_for(runs._conn_string).connect() as conn, conn.begin():
            yield conn

    # A step asks whether its run's day partitions exist each time it reads its partition keys
    # (two queries a call, ~70 in a one-day run): a key once seen stays known for the block,
    # unless this instance itself removes keys (assets/partitions.register_days re-adds later ones).
    known: set[tuple[str, str]] = set()
    has_partition, delete_partition = events.has_dynamic_partition, events.delete_dynamic_partition

    def events_has_partition(partitions_def_name: str, partition_key: str) -> bool:
        if (partitions_def_name, partition_key) in known:
            return True
        found = has_partition(partitions_def_name, partition_key)
        if found:
            known.add((partitions_def_name, partition_key))
        return found

    def events_delete_partition(partitions_def_name: str, partition_key: str) -> None:
        known.clear()
        delete_partition(partitions_def_name, partition_key)

    events._connect = events_connect  # type: ignore[method-assign]
    events.has_table = events_has_table  # type: ignore[method-assign]
    events.has_dynamic_partition = events_has_partition  # type: ignore[method-assign]
    events.delete_dynamic_partition = events_delete_partition  # type: ignore[method-assign]
    runs.connect = runs_connect  # type: ignore[method-assign]
    setattr(events, _POOLED, engines)
    setattr(runs, _POOLED, engines)

    def undo() -> None:
        for name in ("_connect", "has_table", "has_dynamic_partition", "delete_dynamic_partition", _POOLED):
            events.__dict__.pop(name, None)
        for name in ("connect", _POOLED):
            runs.__dict__.pop(name, None)
        with engines_lock:
            kept = list(engines.values())
            engines.clear()
        for engine in kept:
            engine.dispose()

    return undo


def latest_materializations(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, days: Sequence[str]
) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
    """Each day's latest materialization of an asset (two queries for the whole range)."""
    latest = instance.event_log_storage.get_latest_storage_id_by_partition(
        asset_key, dg.DagsterEventType.ASSET_MATERIALIZATION, set(days)
    )
    if not latest:
        return {}
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, storage_ids=sorted(latest.values())), limit=len(latest)
    ).records
    by_id = {r.storage_id: r for r in records}
    return {
        day: AssetCheckEvaluationTargetMaterializationData(
            storage_id=sid, run_id=by_id[sid].run_id, timestamp=by_id[sid].timestamp
        )
        for day, sid in latest.items()
        if sid in by_id
    }


def run_days(context: dg.AssetCheckExecutionContext) -> list[str]:
    """The day partitions of the check's run; a run without any fails with NO_PARTITION."""
    if not (context.has_partition_key or context.has_partition_key_range):
        raise dg.Failure(description=NO_PARTITION)
    return list(context.partition_keys)


def day_check(
    *,
    asset: dg.AssetsDefinition,
    name: str,
    description: str,
    partitions_def: dg.PartitionsDefinition,
    blocking: bool = True,
    op_tags: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., DayResults]], dg.AssetChecksDefinition]:
    """``@asset_check`` for a check that judges each day of its run: ``fn(context, resources...)``
    returns ``{day: AssetCheckResult}`` for the days of ``context.partition_keys``.

    Each result becomes an evaluation on its day partition. A day the function leaves out fails
    ("not evaluated"), so no day of a run passes unjudged. Blocking: any failed day fails the
    step, hence the run (Dagster leaves a run green on a failed non-blocking check).
    """

    def decorate(fn: Callable[..., DayResults]) -> dg.AssetChecksDefinition:
        @functools.wraps(fn)  # Dagster reads the resources a check needs from fn's signature
        def events(context: dg.AssetCheckExecutionContext, *args: Any, **kwargs: Any) -> _Events:
            days = run_days(context)
            results = fn(context, *args, **kwargs)  # judged now: fn may close what it read from
            spec = context.check_specs[0]  # each of these ops evaluates exactly one check
            targets = latest_materializations(context.instance, spec.asset_key, days)
            # The check's output carries no value; Dagster yields it itself only for an
            # AssetCheckResult returned alone.
            yield dg.Output(None, output_name=context.op_def.output_defs[0].name)
            for day in days:
                r = results.get(day) or dg.AssetCheckResult(
                    passed=False, description=f"{name} gave no result for {day}"
                )
                yield dg.AssetCheckEvaluation(
                    asset_key=spec.asset_key,
                    check_name=spec.name,
                    passed=r.passed,
                    metadata=r.metadata,
                    target_materialization_data=targets.get(day),
                    severity=r.severity,
                    description=r.description,
                    blocking=spec.blocking,
                    partition=day,
                )

        events.__annotations__ = {**events.__annotations__, "return": _Events}
        decorator = dg.asset_check(
            asset=asset,
            name=name,
            blocking=blocking,
            partitions_def=partitions_def,
            op_tags=op_tags,
            description=description,
        )
        # Dagster runs a check op that yields events, but types @asset_check functions as
        # returning one AssetCheckResult: the one cast of the adapter.
        return decorator(cast(Callable[..., dg.AssetCheckResult], events))

    return decorate


# --- runs and pool slots (assets/instance.py settles runs whose process was killed) -------------


def run_pids(instance: dg.DagsterInstance, run_id: str) -> list[int]:
    """The process ids a run's engine events name (the run worker, each step's process)."""
    pids = []
    for rec in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        data = rec.dagster_event.engine_event_data if rec.dagster_event else None
        meta = getattr(data, "metadata", None) or {}
        if "pid" in meta:
            try:
                pids.append(int(meta["pid"].value))
            except (TypeError, ValueError):
                pass
    return pids


def free_run_slots(instance: dg.DagsterInstance, run_id: str) -> None:
    instance.event_log_storage.free_concurrency_slots_for_run(run_id)


def pool_holders(instance: dg.DagsterInstance) -> list[tuple[str, str]]:
    """(pool, run id) of every claimed or pending pool slot, sorted."""
    storage = instance.event_log_storage
    if not getattr(storage, "supports_global_concurrency_limits", False):
        return []
    out = []
    for pool in sorted(storage.get_concurrency_keys()):
        info = storage.get_concurrency_info(pool)
        holders = {s.run_id for s in info.claimed_slots} | {s.run_id for s in info.pending_steps}
        out += [(pool, run_id) for run_id in sorted(holders)]
    return out


# --- interruptions (SIGINT / Ctrl-C during a run) ----------------------------------------------

# What Dagster's in-process executor turns a SIGINT into, inside the step it interrupts.
_INTERRUPTS = ("DagsterExecutionInterruptedError", "KeyboardInterrupt")


def interruption(error: Any) -> bool:
    """Whether a step's error (Dagster's SerializableErrorInfo) is an interruption anywhere in its
    chain: the user pressed Ctrl-C (SIGINT), nothing failed."""
    seen = 0
    while error is not None and seen < 20:
        if getattr(error, "cls_name", None) in _INTERRUPTS:
            return True
        error = getattr(error, "cause", None) or getattr(error, "context", None)
        seen += 1
    return False


# --- one line per stage (af build) --------------------------------------------------------------


class _StageLines(logging.Handler):
    """Prints a line when a step (an asset or a check) ends: its name, its outcome, its time."""

    def __init__(self) -> None:
        super().__init__()
        self.started: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event") if isinstance(meta, dict) else None
        step = getattr(event, "step_key", None)
        if event is None or not step:
            return
        kind = event.event_type_value
        if kind == "STEP_START":
            self.started[step] = time.monotonic()
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            took = time.monotonic() - self.started.pop(step, time.monotonic())
            outcome = "done" if kind == "STEP_SUCCESS" else "FAILED"
            if kind == "STEP_FAILURE" and interruption(getattr(event.step_failure_data, "error", None)):
                outcome = "interrupted"
            print(f"  {step:<28} {outcome} ({took:.1f} s)", file=sys.stderr, flush=True)


@dg.logger(
    config_schema={"enabled": dg.Field(bool, default_value=False)},
    description="One line per finished step on stderr (af build turns it on; off in every other run).",
)
def stage_progress(init_context: dg.InitLoggerContext) -> logging.Logger:
    out = logging.Logger("activity_frames.progress", logging.DEBUG)
    if init_context.logger_config["enabled"]:
        out.addHandler(_StageLines())
    else:
        out.disabled = True
    return out


# --- opening and creating the instance's SQLite files, and event batches (every process) ---------
#
# Installed when this module is imported, i.e. in every process that runs our runs: `af` (the CLI),
# and the code server and run workers of the UI and the daemon, which load assets.definitions.
# Each is only a speed-up of what Dagster does; none changes what is stored.
#
# - Alembic's head revision: Dagster asks for it each time it opens a storage or a run's new shard
#   (check_alembic_revision), and alembic parses every one of Dagster's ~90 migration scripts to
#   answer. The scripts of the installed Dagster do not change while a process runs: asked once.
# - A new run's event shard: Dagster creates its tables and stamps its revision with
#   synchronous=FULL, dozens of commits each synced to disk (~1 s of wall time on a busy disk,
#   more than the rest of a nightly run's bookkeeping). The first shard is made that way into
#   ``<runs folder>/.af-shard-template/<dagster version>-<head>.db``; each new shard is then a
#   copy of it, synced once. Dagster's own initialisation still runs on the copy (it finds the
#   shard at head and leaves it), so a bad template could only cost the time it was meant to save.
# - Event batches: with DAGSTER_EVENT_BATCH_SIZE set, Dagster hands a storage the events it sends
#   as one batch (a run's planned materializations, one per asset and day; the materializations of
#   a step over several days) through store_event_batch, which SqliteEventLogStorage does not
#   have: Dagster's default stores them one by one, a transaction (and connection) per event and
#   shard. Ours stores the batch in one transaction per shard. A batch that fails leaves nothing
#   (both transactions roll back) and Dagster then stores its events one by one, as before.

EVENT_BATCH_SIZE = "1000"  # a 47-day range run plans 9 x 47 materializations in one batch
SHARD_TEMPLATE_DIR = ".af-shard-template"  # beside the run shards; Dagster lists only *.db there

_heads: dict[str, Any] = {}
_installed: list[bool] = []


def _check_alembic_revision(alembic_config: Any, conn: Any) -> tuple[Any, Any]:
    """Dagster's check_alembic_revision, the head revision computed once per script location."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from dagster._core.storage import sql

    with sql._alembic_lock:
        db_revision = MigrationContext.configure(conn).get_current_revision()
        where = str(alembic_config.get_main_option("script_location"))
        if where not in _heads:
            _heads[where] = ScriptDirectory.from_config(alembic_config).as_revision_number("head")
    return db_revision, _heads[where]


def _template_for(storage: Any, original: Callable[..., None]) -> Path | None:
    """The run-shard template of this storage's folder (made by Dagster's own code), or None."""
    import os

    from alembic.script import ScriptDirectory
    from dagster._core.storage.event_log.sqlite import sqlite_event_log
    from dagster._core.storage.sql import get_alembic_config
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    config = get_alembic_config(sqlite_event_log.__file__)
    where = str(config.get_main_option("script_location"))
    if where not in _heads:
        _heads[where] = ScriptDirectory.from_config(config).as_revision_number("head")
    folder = Path(storage._base_dir) / SHARD_TEMPLATE_DIR
    template = folder / f"{dg.__version__}-{_heads[where]}.db"
    if template.is_file():
        return template
    folder.mkdir(exist_ok=True)
    making = folder / f".{template.name}.{os.getpid()}-{threading.get_ident()}.tmp"
    engine = create_engine(f"sqlite:///{making}", poolclass=NullPool)
    try:
        original(storage, engine)
    finally:
        engine.dispose()
    con = sqlite3.connect(making)
    try:  # the template is one file: its WAL folded in
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    for extra in ("-wal", "-shm"):
        Path(f"{making}{extra}").unlink(missing_ok=True)
    with open(making, "rb+") as f:  # made once, copied into every new shard: on disk for good
        os.fsync(f.fileno())
    making.replace(template)
    return template


def _shard_from_template(storage: Any, path: str, original: Callable[..., None]) -> None:
    import os
    import shutil

    template = _template_for(storage, original)
    if template is None:
        return
    tmp = Path(f"{path}.af-{os.getpid()}-{threading.get_ident()}.tmp")  # not *.db: never taken for a run's shard
    try:
        shutil.copyfile(template, tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # never over a shard another process made meanwhile
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)


def _install_sqlite_speedups() -> None:
    import os

    from dagster._core.storage.event_log.sqlite import consolidated_sqlite_event_log, sqlite_event_log
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
        INDEX_SHARD_NAME,
        SqliteEventLogStorage,
    )
    from dagster._core.storage.runs.sqlite import sqlite_run_storage
    from dagster._core.storage.schedules.sqlite import sqlite_schedule_storage
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    if _installed:
        return
    _installed.append(True)
    event.listen(Pool, "connect", _on_sqlite_connect)
    atexit.register(_close_kept)
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)
    for module in (sqlite_event_log, consolidated_sqlite_event_log, sqlite_run_storage, sqlite_schedule_storage):
        module.check_alembic_revision = _check_alembic_revision  # type: ignore[attr-defined]

    original_initdb = SqliteEventLogStorage._initdb

    def initdb(self: Any, engine: Any, for_index_shard: bool = False) -> None:
        path = engine.url.database
        if (not for_index_shard and path and not Path(path).exists()
                and Path(path).parent.resolve() == Path(self._base_dir).resolve() and Path(path).stem != INDEX_SHARD_NAME):
            try:
                _shard_from_template(self, path, original_initdb)
            except (OSError, sqlite3.Error):
                pass  # only a speed-up: Dagster creates the shard itself below
        original_initdb(self, engine, for_index_shard)

    SqliteEventLogStorage._initdb = initdb  # type: ignore[method-assign]
    SqliteEventLogStorage.store_event_batch = _store_event_batch  # type: ignore[method-assign]


def _store_event_batch(self: Any, events: Sequence[Any]) -> None:
    """SqliteEventLogStorage.store_event for each event, in one transaction per shard."""
    from contextlib import ExitStack

    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    if len(events) < 2 or "_connect" in vars(self) and getattr(self._connect, "_af_batch", False):
        for event in events:
            self.store_event(event)
        return
    owner = threading.get_ident()
    before = vars(self).get("_connect")
    plain = self._connect  # Dagster's (or quick_run_storage's) for other threads meanwhile
    kept = getattr(self, _POOLED, None)
    with self._db_lock, ExitStack() as stack:
        conns: dict[str, Any] = {}

        def shard_connection(shard: str) -> Any:
            if shard not in conns:
                url = self.conn_string_for_shard(shard)
                engine = kept.get(url) if kept else None
                if engine is None:
                    engine = create_engine(url, poolclass=NullPool, connect_args={"timeout": 30})
                    stack.callback(engine.dispose)
                if shard not in self._initialized_dbs:
                    self._initdb(engine)
                    self._initialized_dbs.add(shard)
                conn = stack.enter_context(engine.connect())
                stack.enter_context(conn.begin())
                conns[shard] = conn
            return conns[shard]

        @contextmanager
        def batch_connect(shard: str) -> Iterator[Any]:
            if threading.get_ident() != owner:  # waits for the batch, as Dagster's lock makes it
                with plain(shard) as conn:
                    yield conn
                return
            yield shard_connection(shard)

        batch_connect._af_batch = True  # type: ignore[attr-defined]
        self._connect = batch_connect
        try:
            for event in events:
                self.store_event(event)
        finally:
            if before is None:
                vars(self).pop("_connect", None)
            else:
                self._connect = before


_install_sqlite_speedups()
