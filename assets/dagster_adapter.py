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
- run and pool-slot bookkeeping used to settle runs killed mid-step (assets/instance.py).

tests/test_dagster_adapter.py exercises each on a real instance and pins TESTED_WITH, so an
upgrade fails there first, with the list of what to re-verify.
"""

from __future__ import annotations

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
# event, 300+ events for a range run. During a run, connections to the instance's databases use
# synchronous=NORMAL (WAL stays consistent after a crash or power cut; the last commits may be
# lost on a power cut, never the database), and one idle connection per database file stays open
# so each event's close is not the last one: the WAL is checkpointed when it grows (SQLite's
# auto-checkpoint) and once when the run ends.
#
# Opening is the other cost: for every event and every read (partition keys, latest
# materializations) Dagster's SQLite run and event log storages build a new SQLAlchemy engine,
# connect, and throw both away, so SQLAlchemy also compiles each statement anew (its statement
# cache lives in the engine). A one-day run does that ~370 times, over a second of CPU. During the
# block the instance's own storages keep one engine per database file (the runs database, the
# index shard, the run's shard), with its connections pooled: same transactions, same files.

_quick_lock = threading.Lock()
_quick: dict[str, Any] = {"depth": 0, "root": (), "keep": {}}


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    rows = dbapi_connection.execute("PRAGMA database_list").fetchall()
    path = next((str(r[2]) for r in rows if r[1] == "main"), "")
    if not path or not any(path.startswith(root) for root in _quick["root"]):
        return
    # Only a speed-up: where it cannot be had (a full disk answers "disk I/O error" here), the
    # connection stays as Dagster made it, and Dagster's own write reports the real cause.
    try:
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")
        with _quick_lock:
            if path not in _quick["keep"] and _quick["depth"]:
                _quick["keep"][path] = sqlite3.connect(path, timeout=30, check_same_thread=False)
    except sqlite3.Error:
        return


@contextmanager
def quick_run_storage(instance: dg.DagsterInstance | None) -> Iterator[None]:
    """For the block: the instance's SQLite files written without an fsync per event (see above).
    Re-entrant; a no-op for an instance without a folder on disk."""
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

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
    if first:
        event.listen(Pool, "connect", _on_sqlite_connect)
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
            event.remove(Pool, "connect", _on_sqlite_connect)
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
