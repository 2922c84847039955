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
- the instance's SQLite storages, tuned: :class:`TunedSqliteRunStorage` and
  :class:`TunedSqliteEventLogStorage` subclass Dagster's SQLite run and event log storages and
  override their methods (kept engines, synchronous=NORMAL, run shards from a template, event
  batches in one transaction per shard, partitions remembered within :func:`quick_run_storage`);
  the data folder's dagster.yaml names them (assets/instance.py). Importing this module replaces
  no attribute of Dagster, SQLAlchemy or any other library (tests/test_dagster_no_patches.py);
- run and pool-slot bookkeeping used to settle runs killed mid-step (assets/instance.py);
- the dask executor for day partitions (:func:`dask_day_executor`): dagster-dask hands the run
  record to dask, which walks it, and the record of a run over day partitions holds a partition
  subset that refuses iteration; the executor here is dagster-dask's own with that subset left
  out of the record it ships (Dagster ignores such a subset and reads the run's partition tags).

tests/test_dagster_adapter.py exercises each on a real instance and pins TESTED_WITH, so an
upgrade fails there first, with the list of what to re-verify.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, cast

import dagster as dg
import sqlalchemy
import sqlalchemy.event

# Not re-exported by `dagster`; the record Dagster itself fills in for a single-partition run.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

# Dagster's SQLite storages, subclassed (TunedSqlite*Storage) and named in the instance's dagster.yaml.
from dagster._core.storage.event_log.sqlite import sqlite_event_log as sqlite_event_log_module
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.sql import get_alembic_config
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData
from dagster._utils.interrupts import check_captured_interrupt
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool, QueuePool
from watchdog.events import FileSystemEvent
from watchdog.observers import Observer

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
    "EVENT_BATCH_SIZE",
    "SHARD_TEMPLATE_DIR",
    "TunedSqliteEventLogStorage",
    "TunedSqliteRunStorage",
    "DayResults",
    "add_day_metadata",
    "check_captured_interrupt",
    "dask_day_executor",
    "day_check",
    "free_run_slots",
    "latest_materializations",
    "pool_holders",
    "quick_run_storage",
    "run_pids",
    "stage_progress",
]


def add_day_metadata(context: dg.AssetExecutionContext, per_day: Mapping[str, Mapping[str, Any]],
                     asset_key: dg.AssetKey | None = None) -> None:
    """Each day's metadata on its own partition of this step's materialization of ``asset_key``
    (the step's one asset when not given; one of a multi-asset's keys).

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
    key = asset_key or context.asset_key
    acc = step._metadata_accumulator
    for day in sorted(per_day):
        acc = acc.with_additional_asset_metadata(asset_key=key, partition_key=day, metadata=per_day[day])
    step._metadata_accumulator = acc


# --- the instance's SQLite storages, tuned: storage classes named in dagster.yaml -----------------
#
# Nothing here replaces an attribute of Dagster or SQLAlchemy. The two classes below subclass
# Dagster's own SQLite run and event log storages and override their methods; assets/instance.py
# names them in the data folder's dagster.yaml (``run_storage`` / ``event_log_storage``, Dagster's
# pluggable-storage extension point), so every process of that instance uses them: `af`, the
# webserver, the daemon, the code server and the run workers. An instance configured otherwise
# (an ephemeral or temporary one, a team's Postgres, a dagster.yaml that names its own storage)
# gets none of it. What each override buys is measured in docs/benchmarks.md ("Dagster without
# patches (issue 37)"):
#
# - kept engines: Dagster's SQLite storages build a new SQLAlchemy engine for every event and
#   every read and dispose of it after (so each statement is compiled anew and each close of the
#   last connection checkpoints the WAL into the database and syncs it); these keep one engine
#   per database file, its connections pooled, for the storage's life (disposed with it, and
#   dropped in a forked child);
# - synchronous=NORMAL on those kept connections (SQLite's default is FULL: a sync per commit).
#   WAL stays consistent after a crash or a power cut; a power cut may lose the last commits,
#   never the database;
# - a new run's event shard copied from a template: Dagster creates each shard's tables and
#   stamps its Alembic revision in dozens of commits, each synced. The first shard is made by
#   Dagster's own code into ``<runs folder>/.af-shard-template/<dagster version>-<head>.db``;
#   every later one is a copy of it (synced once). A shard or index at that head is not asked
#   for its revision again (Alembic parses its ~90 scripts to name the head);
# - event batches (DAGSTER_EVENT_BATCH_SIZE, which `af` sets for the processes it starts): the
#   events Dagster hands over as one batch (a range run's planned materializations, a step's
#   per-day materializations) are stored in one transaction per shard instead of one per event;
#   a batch that fails stores nothing and Dagster then stores its events one by one;
# - the day partitions a run's steps ask about, remembered while :func:`quick_run_storage`
#   holds (a run of these definitions): Dagster asks twice per partition-keys read.

EVENT_BATCH_SIZE = "1000"  # a 47-day range run plans 9 x 47 materializations in one batch
SHARD_TEMPLATE_DIR = ".af-shard-template"  # beside the run shards; Dagster lists only *.db there

_heads: dict[str, str] = {}  # Alembic's head revision, asked at most once per process


def _synchronous_normal(dbapi_connection: Any, _record: Any) -> None:
    # Only a speed-up: where it cannot be had (a full disk answers "disk I/O error" here), the
    # connection stays as SQLite made it, and the write itself reports the real cause.
    try:
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error:
        pass


class _KeptEngines:
    """One SQLAlchemy engine per database file, with its connections pooled, for a storage's life."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engines: dict[str, Engine] = {}
        self._pid = os.getpid()

    def engine(self, url: str) -> Engine:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's connections are not its own
                for engine in self._engines.values():
                    engine.dispose(close=False)
                self._engines, self._pid = {}, os.getpid()
            kept = self._engines.get(url)
            if kept is None:
                # a few kept (the event log asks whether a table exists while it holds a connection,
                # and other threads may use their own); more are opened, then closed, when needed
                engine = sqlalchemy.create_engine(
                    url, poolclass=QueuePool, pool_size=4, max_overflow=-1,
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
                )
                sqlalchemy.event.listen(engine, "connect", _synchronous_normal)  # this engine's only
                self._engines[url] = kept = engine
            return kept

    def dispose(self) -> None:
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.dispose()  # closing the last connection folds a file's WAL into it


class TunedSqliteRunStorage(SqliteRunStorage):
    """Dagster's SQLite run storage over a kept engine (``runs.db``; same file, same schema)."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._kept = _KeptEngines()
        super().__init__(conn_string, inst_data)

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> TunedSqliteRunStorage:
        return cls.from_local(inst_data=inst_data, **config_value)  # Dagster's names its own class

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._kept.engine(self._conn_string).connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._kept.dispose()


class _RunShardWatchdog(sqlite_event_log_module.SqliteEventLogStorageWatchdog):
    """Dagster's watcher of a run's event shard (what the UI's run page follows), woken by the
    shard's WAL as well as by the shard. Dagster's storage disposes its engine after each event,
    and closing the last connection checkpoints the WAL into the ``.db`` its watcher waits on;
    over kept connections a commit only grows ``<shard>.db-wal``, so a live run's page showed no
    event after the first until it was reloaded."""

    def dispatch(self, event: FileSystemEvent) -> None:
        if event.event_type == "modified" and not event.is_directory:
            if os.fsdecode(event.src_path) in (self._log_path, f"{self._log_path}-wal"):
                self._process_log()  # reads the records after its cursor: a second wake reads none


class TunedSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log storage (the index shard and one shard per run, same files and
    schema) over kept engines, with run shards from a template, batches in one transaction per
    shard, and partitions remembered within :func:`quick_run_storage`."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._kept = _KeptEngines()
        self._batch = threading.local()
        self._known_partitions: set[tuple[str, str]] = set()
        self._remembering = 0
        self._partitions_lock = threading.Lock()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> TunedSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def dispose(self) -> None:
        super().dispose()
        self._kept.dispose()

    # -- connections --

    def _ready(self, shard: str, url: str) -> None:
        if shard not in self._initialized_dbs:  # the shard's first use in this process
            engine = sqlalchemy.create_engine(url, poolclass=NullPool,
                                              connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
            try:
                self._initdb(engine)
            finally:
                engine.dispose()
            self._initialized_dbs.add(shard)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        conns = getattr(self._batch, "conns", None)
        if conns is not None:  # within store_event_batch, on its thread (which holds the lock)
            yield self._batch_connection(conns, shard)
            return
        with self._db_lock:
            url = self.conn_string_for_shard(shard)
            self._ready(shard, url)
            with self._kept.engine(url).connect() as conn, conn.begin():
                yield conn

    def watch(self, run_id: str, cursor: str | None, callback: Any) -> None:
        # Dagster's watch, with a watcher that the shard's WAL wakes too (_RunShardWatchdog)
        obs: Any = self._obs
        if not obs:
            self._obs = obs = Observer()  # type: ignore[assignment]  # Dagster types it as None until then
            obs.start()
        handler = _RunShardWatchdog(self, run_id, callback, cursor)
        self._watchers[run_id][callback] = (handler, obs.schedule(handler, self._base_dir, recursive=True))

    def has_table(self, table_name: str) -> bool:
        engine = self._kept.engine(self.conn_string_for_shard(INDEX_SHARD_NAME))
        with engine.connect() as conn:
            return bool(engine.dialect.has_table(conn, table_name))

    # -- new shards --

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        path = engine.url.database
        if path and Path(path).parent == Path(self._base_dir):
            try:
                if self._at_head(Path(path), for_index_shard):
                    return  # what Dagster's _initdb would find, and then leave as it is
            except (OSError, sqlite3.Error):
                pass  # only a speed-up: Dagster's own initialisation below
        super()._initdb(engine, for_index_shard)

    def _at_head(self, path: Path, for_index_shard: bool) -> bool:
        """Whether the shard at ``path`` is (now) at the template's Alembic head: an existing
        file is read; a run's new shard is copied from the template."""
        template = self._template(make=not for_index_shard and not path.exists())
        if template is None:
            return False
        head = template.stem.split("-", 1)[1]
        if path.exists():
            return _revision(path) == head
        if for_index_shard or path.stem == INDEX_SHARD_NAME:
            return False
        tmp = path.with_name(f"{path.name}.af-{os.getpid()}-{threading.get_ident()}.tmp")  # not *.db
        try:
            shutil.copyfile(template, tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)  # never over a shard another process made meanwhile
            except FileExistsError:
                return _revision(path) == head
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def _template(self, make: bool) -> Path | None:
        """This Dagster version's shard template, made by Dagster's own _initdb if ``make``."""
        folder = Path(self._base_dir) / SHARD_TEMPLATE_DIR
        found = sorted(folder.glob(f"{dg.__version__}-*.db")) if folder.is_dir() else []
        if found or not make:
            return found[0] if found else None
        head = _alembic_head()
        folder.mkdir(exist_ok=True)
        template = folder / f"{dg.__version__}-{head}.db"
        making = folder / f".{template.name}.{os.getpid()}-{threading.get_ident()}.tmp"
        engine = sqlalchemy.create_engine(f"sqlite:///{making}", poolclass=NullPool)
        try:
            super()._initdb(engine)
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

    # -- event batches --

    def store_event_batch(self, events: Sequence[dg.EventLogEntry]) -> None:
        """store_event for each event, in one transaction per shard (or nothing stored)."""
        if len(events) < 2 or getattr(self._batch, "conns", None) is not None:
            for event in events:
                self.store_event(event)
            return
        with self._db_lock, ExitStack() as stack:
            self._batch.conns = {}
            self._batch.stack = stack
            try:
                for event in events:
                    self.store_event(event)
            finally:
                self._batch.conns = None
                self._batch.stack = None

    def _batch_connection(self, conns: dict[str, Connection], shard: str) -> Connection:
        if shard not in conns:
            url = self.conn_string_for_shard(shard)
            self._ready(shard, url)
            stack: ExitStack = self._batch.stack
            conn = stack.enter_context(self._kept.engine(url).connect())
            stack.enter_context(conn.begin())
            conns[shard] = conn
        return conns[shard]

    # -- day partitions, remembered while a run of ours holds quick_run_storage --

    @contextmanager
    def remembering_partitions(self) -> Iterator[None]:
        with self._partitions_lock:
            self._remembering += 1
        try:
            yield
        finally:
            with self._partitions_lock:
                self._remembering -= 1
                if not self._remembering:
                    self._known_partitions.clear()

    def has_dynamic_partition(self, partitions_def_name: str, partition_key: str) -> bool:
        key = (partitions_def_name, partition_key)
        if self._remembering and key in self._known_partitions:
            return True
        found = super().has_dynamic_partition(partitions_def_name, partition_key)
        if found and self._remembering:
            self._known_partitions.add(key)
        return found

    def delete_dynamic_partition(self, partitions_def_name: str, partition_key: str) -> None:
        self._known_partitions.clear()
        super().delete_dynamic_partition(partitions_def_name, partition_key)


def _alembic_head() -> str:
    """The head revision of Dagster's SQLite migrations (one script folder for every storage)."""
    from alembic.script import ScriptDirectory

    config = get_alembic_config(sqlite_event_log_module.__file__)
    where = str(config.get_main_option("script_location"))
    if where not in _heads:
        _heads[where] = str(ScriptDirectory.from_config(config).as_revision_number("head"))
    return _heads[where]


def _revision(path: Path) -> str | None:
    """The Alembic revision stamped in a SQLite file (read only; None if it has none)."""
    con = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_SECONDS)  # an existing file: read only
    try:
        rows = con.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.OperationalError:
        return None
    finally:
        con.close()
    return str(rows[0][0]) if len(rows) == 1 else None


@contextmanager
def quick_run_storage(instance: dg.DagsterInstance | None) -> Iterator[None]:
    """For the block (a run of these definitions, `af build`, `af certify`): the instance's tuned
    event log storage remembers the day partitions it found to exist. A no-op on any other storage.
    Re-entrant."""
    storage = getattr(instance, "event_log_storage", None) if instance is not None else None
    if not isinstance(storage, TunedSqliteEventLogStorage):
        yield
        return
    with storage.remembering_partitions():
        yield


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
    asset: dg.AssetsDefinition | dg.AssetKey,
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


# --- the dask executor for day partitions (assets.definitions.build_job_on) ---------------------


def dask_day_executor() -> dg.ExecutorDefinition:
    """dagster-dask's executor (the same name and config), for runs over day partitions. dask
    walks every tuple it is given, and the record of a run over dynamic partitions (a tuple)
    carries a KeyRangesPartitionsSubset, a Dagster record that refuses iteration, so dagster-dask
    0.29 fails every partitioned run ("Iteration is not allowed on `@record`
    KeyRangesPartitionsSubset"). This executor ships the run record without that subset: Dagster
    itself ignores a key-range subset and reads the run's partitions from its tags
    (DagsterRun.get_resolved_partitions_subset_for_events), which stay. Imported when asked for:
    dask is slow to import and no `af` command needs it."""
    from dagster._core.execution.context.system import PlanOrchestrationContext
    from dagster._record import copy as record_copy
    from dagster_dask import dask_executor
    from dagster_dask.executor import DaskExecutor

    class DayDaskExecutor(DaskExecutor):
        def execute(self, plan_context: PlanOrchestrationContext, execution_plan: Any) -> Any:
            run = plan_context.dagster_run
            if run.partitions_subset is not None:
                # this run's own orchestration context, made for this call
                plan_context._plan_data = plan_context.plan_data._replace(
                    dagster_run=record_copy(run, partitions_subset=None))
            return super().execute(plan_context, execution_plan)

    @dg.executor(name=dask_executor.name, config_schema=dask_executor.config_schema.as_field(),
                 requirements=dg.multiple_process_executor_requirements())
    def day_dask_executor(init_context: dg.InitExecutorContext) -> dg.Executor:
        cluster = cast(Mapping[str, Any], init_context.executor_config["cluster"])
        ((cluster_type, cluster_configuration),) = cluster.items()
        return DayDaskExecutor(cluster_type, cluster_configuration)

    return day_dask_executor


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
