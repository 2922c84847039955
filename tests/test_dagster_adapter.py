"""The contract of assets/dagster_adapter.py, the one module that uses Dagster internals.

Each test runs the adapter on a real (ephemeral) Dagster instance, so a Dagster upgrade that
moves or changes one of those internals fails here, by name, before anything else does.
"""

import warnings

import dagster as dg
import pytest

from assets import dagster_adapter as adapter

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")
DAYS = ["2026-06-01", "2026-06-02", "2026-06-03"]
parts = dg.DynamicPartitionsDefinition(name="adapter_days")


@dg.asset(partitions_def=parts, backfill_policy=dg.BackfillPolicy.single_run())
def thing(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult()


@adapter.day_check(asset=thing, name="odd_days_fail", partitions_def=parts, description="toy")
def odd_days_fail(context: dg.AssetCheckExecutionContext) -> adapter.DayResults:
    days = list(context.partition_keys)
    # The last day of the run is left out on purpose: it must fail, not pass unjudged.
    return {
        day: dg.AssetCheckResult(passed=int(day[-1]) % 2 == 0, metadata={"day": day}, description=f"judged {day}")
        for day in days[:2]
    }


defs = dg.Definitions(
    assets=[thing],
    asset_checks=[odd_days_fail],
    jobs=[
        dg.define_asset_job("make", selection=dg.AssetSelection.assets(thing).without_checks()),
        dg.define_asset_job("judge", selection=dg.AssetSelection.checks(odd_days_fail)),
    ],
    loggers={"console": dg.colored_console_logger, "progress": adapter.stage_progress},
    executor=dg.in_process_executor,
)
RANGE = {"dagster/asset_partition_range_start": DAYS[0], "dagster/asset_partition_range_end": DAYS[-1]}


@pytest.fixture
def inst():
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(parts.name, DAYS)
    return instance


def test_dagster_is_the_version_the_adapter_was_verified_with():
    assert dg.__version__ == adapter.TESTED_WITH, (
        f"Dagster {dg.__version__}, adapter verified with {adapter.TESTED_WITH}: re-run this file, check the "
        "internals listed in assets/dagster_adapter.py's docstring, then bump TESTED_WITH"
    )


def test_a_range_check_run_records_each_day_on_its_partition_aimed_at_its_materialization(inst):
    made = defs.resolve_job_def("make").execute_in_process(instance=inst, tags=RANGE)
    assert made.success
    again = defs.resolve_job_def("make").execute_in_process(instance=inst, partition_key=DAYS[1])
    latest = {
        day: inst.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=thing.key, asset_partitions=[day]), limit=1
        ).records[0]
        for day in DAYS
    }
    assert latest[DAYS[1]].run_id == again.run_id

    judged = defs.resolve_job_def("judge").execute_in_process(instance=inst, tags=RANGE, raise_on_error=False)
    assert not judged.success  # blocking: a failed day fails the run
    evals = {
        e.asset_check_evaluation_data.partition: e.asset_check_evaluation_data
        for e in judged.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    assert sorted(evals) == DAYS
    assert evals[DAYS[1]].passed and not evals[DAYS[0]].passed
    assert evals[DAYS[0]].description == f"judged {DAYS[0]}"
    assert evals[DAYS[0]].metadata["day"].value == DAYS[0]
    assert not evals[DAYS[2]].passed and "gave no result" in (evals[DAYS[2]].description or "")
    for day in DAYS:
        target = evals[day].target_materialization_data
        assert target is not None and target.storage_id == latest[day].storage_id, day
        assert target.run_id == latest[day].run_id


def test_a_check_run_without_a_partition_says_what_to_do(inst):
    """What the UI's "Execute all" launches: no partition. It fails with a sentence, not an invariant error."""
    result = defs.resolve_job_def("judge").execute_in_process(instance=inst, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert failure.step_failure_data.user_failure_data.description == adapter.NO_PARTITION
    assert "af certify --from DAY --to DAY" in adapter.NO_PARTITION


def test_stage_progress_prints_one_line_per_step_only_when_enabled(inst, capsys):
    run = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}, "progress": {"config": {"enabled": True}}}}
    assert defs.resolve_job_def("make").execute_in_process(instance=inst, tags=RANGE, run_config=run).success
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].split()[:2] == ["thing", "done"], lines
    assert defs.resolve_job_def("make").execute_in_process(
        instance=inst, tags=RANGE, run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    ).success
    assert capsys.readouterr().err.strip() == ""


def test_run_bookkeeping_reads_a_real_run(inst):
    """The run worker's pid comes from the run's engine events; a finished run holds no pool slot."""
    import os

    result = defs.resolve_job_def("make").execute_in_process(instance=inst, partition_key=DAYS[0])
    assert os.getpid() in adapter.run_pids(inst, result.run_id)
    assert all(run_id != result.run_id for _pool, run_id in adapter.pool_holders(inst))
    adapter.free_run_slots(inst, result.run_id)  # a no-op for a run holding none, and no error


# --- the tuned SQLite storages (named in the data folder's dagster.yaml) -------------------------


def tuned(folder) -> dg.DagsterInstance:
    """An instance whose dagster.yaml names the adapter's storages, as assets/instance.py writes it."""
    from assets.instance import storage_yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n" + storage_yaml(folder))
    inst = dg.DagsterInstance.from_config(str(folder))
    assert isinstance(inst.run_storage, adapter.TunedSqliteRunStorage)
    assert isinstance(inst.event_log_storage, adapter.TunedSqliteEventLogStorage)
    inst.add_dynamic_partitions(parts.name, DAYS)
    return inst


def stock_reader(folder) -> dg.DagsterInstance:
    """Dagster's own SQLite storages on the same files (the default layout: history/, history/runs/)."""
    from dagster._core.instance.ref import InstanceRef

    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(folder), config_dir=str(folder / "stock")))


def _planned_by_day(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return sorted(
        e.dagster_event.event_specific_data.partition
        for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED)
    )


def _stored(instance: dg.DagsterInstance, run_id: str):
    from collections import Counter

    return Counter(e.dagster_event.event_type_value for e in instance.all_logs(run_id) if e.dagster_event)


def test_the_tuned_storages_keep_their_connections_and_dagsters_own_storage_reads_every_event(tmp_path):
    """A run on the tuned storages opens a handful of SQLite connections (Dagster's own: one per
    event and read), each at synchronous=NORMAL, and writes the files Dagster's own storage reads."""
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    (tmp_path / "plain").mkdir()
    (tmp_path / "tuned" / "stock").mkdir(parents=True)
    plain_inst = dg.DagsterInstance.local_temp(str(tmp_path / "plain"))
    plain_inst.add_dynamic_partitions(parts.name, DAYS)
    inst = tuned(tmp_path / "tuned")
    opened: list[int] = []

    def count(dbapi_connection, _record):  # the test's own listener, removed below
        if isinstance(dbapi_connection, sqlite3.Connection):
            opened.append(dbapi_connection.execute("PRAGMA synchronous").fetchone()[0])

    event.listen(Pool, "connect", count)
    try:
        plain = defs.resolve_job_def("make").execute_in_process(instance=plain_inst, tags=RANGE)
        plain_opened, plain_modes = len(opened), set(opened)
        opened.clear()
        made = defs.resolve_job_def("make").execute_in_process(instance=inst, tags=RANGE)
        judged = defs.resolve_job_def("judge").execute_in_process(instance=inst, tags=RANGE, raise_on_error=False)
        made_opened, made_modes = len(opened), set(opened)
    finally:
        event.remove(Pool, "connect", count)
    assert plain.success and made.success and not judged.success
    assert plain_modes == {2}, plain_modes  # Dagster's own: FULL, a sync per commit
    assert made_opened < 15 < plain_opened, (made_opened, plain_opened)
    assert made_modes  # (read before the adapter's listener on the engine ran)
    for storage in (inst.run_storage, inst.event_log_storage):  # the kept connections: NORMAL, 1
        engines = list(storage._kept._engines.values())
        assert engines
        for engine in engines:
            with engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1, engine.url

    other = stock_reader(tmp_path / "tuned")
    assert type(other.event_log_storage).__name__ == "SqliteEventLogStorage"
    for result in (made, judged):
        assert _stored(other, result.run_id) >= __import__("collections").Counter(
            e.event_type_value for e in result.all_events)  # (the run stores a few more)
    assert other.get_run_by_id(made.run_id).is_success
    assert _planned_by_day(other, made.run_id) == DAYS
    checks = other.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(thing.key, "odd_days_fail")])
    assert checks, "the check's evaluations reached the index shard"

    shard = tmp_path / "tuned" / "history" / "runs" / f"{made.run_id}.db"
    inst.dispose()  # the kept connections close: the last one folds the WAL into the file
    assert not shard.with_name(shard.name + "-wal").exists()


def test_a_watcher_sees_a_live_runs_events_as_they_are_stored(tmp_path):
    """The UI's run page follows a live run through the event log storage's watch. The run's
    process keeps its connection open, so its commits stay in the shard's WAL: the watcher must
    hear of each one without the run ending or a reload."""
    import logging
    import threading
    import time

    runs = tmp_path / "runs"
    runs.mkdir()
    writer = adapter.TunedSqliteEventLogStorage(str(runs))  # the run's process
    viewer = adapter.TunedSqliteEventLogStorage(str(runs))  # the webserver
    seen: list[str] = []
    arrived = threading.Condition()

    def on_event(entry: dg.EventLogEntry, _cursor: str) -> None:
        with arrived:
            seen.append(entry.user_message)
            arrived.notify_all()

    def entry(text: str) -> dg.EventLogEntry:
        return dg.EventLogEntry(error_info=None, level=logging.INFO, user_message=text, run_id="live",
                                timestamp=time.time())

    try:
        writer.store_event(entry("first"))  # the shard exists before the page opens
        viewer.watch("live", None, on_event)
        for n in range(1, 6):
            writer.store_event(entry(f"step {n}"))
            with arrived:  # each event, while the writer still holds its connection
                assert arrived.wait_for(lambda n=n: f"step {n}" in seen, timeout=30), seen
        assert seen[-5:] == [f"step {n}" for n in range(1, 6)]
        assert (runs / "live.db-wal").exists()  # what woke the watcher: the .db was not checkpointed
        viewer.end_watch("live", on_event)
    finally:
        viewer.dispose()
        writer.dispose()


def test_partitions_are_remembered_only_within_quick_run_storage(tmp_path):
    from unittest import mock

    inst = tuned(tmp_path / "tuned")
    storage = inst.event_log_storage
    with mock.patch.object(adapter.SqliteEventLogStorage, "has_dynamic_partition",
                           autospec=True, side_effect=adapter.SqliteEventLogStorage.has_dynamic_partition) as asked:
        for _ in range(3):
            assert storage.has_dynamic_partition(parts.name, DAYS[0])
        assert asked.call_count == 3  # outside the block: Dagster asked each time
        asked.reset_mock()
        with adapter.quick_run_storage(inst):
            for _ in range(3):
                assert storage.has_dynamic_partition(parts.name, DAYS[0])
            assert asked.call_count == 1
            inst.delete_dynamic_partition(parts.name, DAYS[0])  # a key this instance removes is gone
            assert not storage.has_dynamic_partition(parts.name, DAYS[0])
            inst.add_dynamic_partitions(parts.name, [DAYS[0]])
            assert storage.has_dynamic_partition(parts.name, DAYS[0])
        asked.reset_mock()
        assert storage.has_dynamic_partition(parts.name, DAYS[0])
        assert asked.call_count == 1  # forgotten when the block ends
    with adapter.quick_run_storage(dg.DagsterInstance.ephemeral()), adapter.quick_run_storage(None):
        pass  # any other storage: nothing to do


def test_new_run_shards_come_from_one_template_and_dagster_accepts_them(tmp_path):
    """The first run's shard is made by Dagster's own code and kept as the template; later shards
    are copies at Alembic's head (the head Dagster's own check names), which Dagster's own storage
    opens, writes and reads like its own."""
    from alembic.runtime.migration import MigrationContext
    from dagster._core.storage import sql
    from dagster._core.storage.event_log.sqlite import sqlite_event_log
    from sqlalchemy import create_engine

    inst = tuned(tmp_path / "tuned")
    runs = [defs.resolve_job_def("make").execute_in_process(instance=inst, tags=RANGE) for _ in range(2)]
    base = tmp_path / "tuned" / "history" / "runs"
    templates = list((base / adapter.SHARD_TEMPLATE_DIR).iterdir())
    assert [t.name.split("-")[0] for t in templates] == [dg.__version__]
    assert sorted(inst.event_log_storage.get_all_run_ids()) == sorted(r.run_id for r in runs)
    config = sql.get_alembic_config(sqlite_event_log.__file__)
    for shard in [templates[0], base / "index.db", *(base / f"{r.run_id}.db" for r in runs)]:
        with create_engine(f"sqlite:///{shard}").connect() as conn:
            db_revision, head = sql.check_alembic_revision(config, conn)
            assert MigrationContext.configure(conn).get_current_revision() == db_revision == head, shard
            assert adapter._alembic_head() == head
            assert templates[0].stem.split("-", 1)[1] == head
    (tmp_path / "tuned" / "stock").mkdir()
    other = stock_reader(tmp_path / "tuned")
    for r in runs:
        assert other.get_run_by_id(r.run_id).is_success
        assert _planned_by_day(other, r.run_id) == DAYS  # still one planned event per day
    again = defs.resolve_job_def("make").execute_in_process(instance=other, tags=RANGE)  # Dagster's own writes
    assert again.success and _planned_by_day(inst, again.run_id) == DAYS


def test_a_batch_is_stored_in_one_transaction_per_shard_or_not_at_all(tmp_path, capfd, monkeypatch):
    """A range run's planned events and its step's per-day materializations arrive as batches
    (DAGSTER_EVENT_BATCH_SIZE, which `af` sets): each is stored with one commit per shard; a batch
    that fails midway stores nothing, and Dagster then stores its events one by one, each once."""
    import sqlite3
    from collections import Counter

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", adapter.EVENT_BATCH_SIZE)
    inst = tuned(tmp_path / "tuned")
    defs.resolve_job_def("make").execute_in_process(instance=inst, tags=RANGE)  # makes the shard template
    commits: list[int] = []

    def commit(_conn):
        commits.append(1)

    sizes: list[int] = []
    per_batch: list[int] = []
    batch = adapter.TunedSqliteEventLogStorage.store_event_batch

    def counted(self, events):
        sizes.append(len(events))
        before = len(commits)
        batch(self, events)
        per_batch.append(len(commits) - before)

    monkeypatch.setattr(adapter.TunedSqliteEventLogStorage, "store_event_batch", counted)
    event.listen(Engine, "commit", commit)
    try:
        ok = defs.resolve_job_def("make").execute_in_process(instance=inst, tags=RANGE)
        assert sorted(sizes) == [len(DAYS), len(DAYS)], sizes  # planned events; materializations
        assert max(per_batch) <= 2, per_batch  # one commit per shard: the run's and the index
    finally:
        event.remove(Engine, "commit", commit)

    real_store = adapter.TunedSqliteEventLogStorage.store_event
    failing: list[int] = []

    def fail_third_of_a_batch(self, entry):
        if getattr(self._batch, "conns", None) is not None and len(failing) < 3:
            failing.append(1)
            if len(failing) == 3:
                raise sqlite3.OperationalError("disk I/O error (test)")
        real_store(self, entry)

    monkeypatch.setattr(adapter.TunedSqliteEventLogStorage, "store_event", fail_third_of_a_batch)
    fell_back = defs.resolve_job_def("make").execute_in_process(instance=inst, tags=RANGE)
    monkeypatch.undo()
    assert len(failing) == 3
    assert "Falling back to storing multiple single-event" in capfd.readouterr().err
    (tmp_path / "tuned" / "stock").mkdir()
    other = stock_reader(tmp_path / "tuned")
    for run in (ok, fell_back):
        assert _planned_by_day(other, run.run_id) == DAYS
        mats = Counter(
            e.dagster_event.partition for e in other.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
        )
        assert mats == Counter(DAYS), mats
    for day in DAYS:
        latest = other.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=thing.key, asset_partitions=[day]), limit=1).records[0]
        assert latest.run_id == fell_back.run_id


def test_the_storage_config_dagster_reads_is_the_adapters(tmp_path):
    """Dagster builds the storages from dagster.yaml through their own classmethods (Dagster's
    SqliteRunStorage.from_config_value names its own class, hence the override)."""
    inst = tuned(tmp_path / "tuned")
    ref = inst.get_ref()
    assert "TunedSqliteRunStorage" in str(ref.storage_data.config_yaml)
    assert adapter.TunedSqliteRunStorage.config_type() == adapter.SqliteRunStorage.config_type()
    assert adapter.TunedSqliteEventLogStorage.config_type() == adapter.SqliteEventLogStorage.config_type()
    again = dg.DagsterInstance.from_ref(ref)
    assert type(again.run_storage) is adapter.TunedSqliteRunStorage
    assert type(again.event_log_storage) is adapter.TunedSqliteEventLogStorage


def test_what_the_tuned_storages_override_is_still_there_in_dagster():
    """Each Dagster method or attribute the subclasses override or use, by name and signature: a
    rename in Dagster would leave an override unused (Dagster's own method would run, silently
    slower), so it fails here first."""
    import inspect

    events, runs = adapter.SqliteEventLogStorage, adapter.SqliteRunStorage
    sig = {name: list(inspect.signature(getattr(events, name)).parameters) for name in
           ("_connect", "_initdb", "has_table", "store_event", "store_event_batch", "has_dynamic_partition",
            "delete_dynamic_partition", "conn_string_for_shard", "dispose", "__init__", "watch", "end_watch")}
    assert sig == {
        "_connect": ["self", "shard"], "_initdb": ["self", "engine", "for_index_shard"],
        "has_table": ["self", "table_name"], "store_event": ["self", "event"], "store_event_batch": ["self", "events"],
        "has_dynamic_partition": ["self", "partitions_def_name", "partition_key"],
        "delete_dynamic_partition": ["self", "partitions_def_name", "partition_key"],
        "conn_string_for_shard": ["self", "shard_name"], "dispose": ["self"],
        "__init__": ["self", "base_dir", "inst_data"], "watch": ["self", "run_id", "cursor", "callback"],
        "end_watch": ["self", "run_id", "handler"],
    }, sig
    # the run-page watcher: Dagster's, woken by the shard's WAL too (watch() keeps its bookkeeping)
    watchdog = adapter.sqlite_event_log_module.SqliteEventLogStorageWatchdog
    assert callable(watchdog._process_log) and "_log_path" in inspect.getsource(watchdog.__init__)
    assert "_watchers" in inspect.getsource(events.end_watch) and "_obs" in inspect.getsource(events.dispose)
    assert list(inspect.signature(runs.connect).parameters) == ["self"]
    assert list(inspect.signature(runs.from_local).parameters) == ["base_dir", "inst_data"]
    assert list(inspect.signature(runs.__init__).parameters) == ["self", "conn_string", "inst_data"]
    for cls in (events, runs):
        assert list(inspect.signature(cls.from_config_value).parameters) == ["inst_data", "config_value"]
    store = adapter.TunedSqliteEventLogStorage.__new__(adapter.TunedSqliteEventLogStorage)
    for own in ("_connect", "_initdb", "has_table", "store_event_batch", "has_dynamic_partition", "watch"):
        assert getattr(type(store), own) is not getattr(events, own), own  # overridden, not inherited
    assert adapter.INDEX_SHARD_NAME == "index" and adapter.SQLITE_BUSY_TIMEOUT_SECONDS > 0


def test_the_interrupt_flag_reads_dagsters():
    """check_captured_interrupt: False outside Dagster's interrupt capture, True once it swallowed a SIGINT."""
    import os
    import signal
    import time

    from dagster._utils.interrupts import capture_interrupts

    assert adapter.check_captured_interrupt() is False
    with capture_interrupts():
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 5
        while not adapter.check_captured_interrupt() and time.monotonic() < deadline:
            time.sleep(0.001)  # the handler runs in this (the main) thread between bytecodes
        assert adapter.check_captured_interrupt() is True
    assert adapter.check_captured_interrupt() is False  # Dagster clears it when the capture ends
