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


def test_quick_run_storage_keeps_connections_and_stores_every_event(tmp_path):
    """Inside the block a run opens a handful of SQLite connections instead of one per event and
    read, every event still reaches the files (another instance on the folder reads them), and
    afterwards the storages are Dagster's own again."""
    import sqlite3
    from collections import Counter

    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    on_disk = dg.DagsterInstance.local_temp(str(tmp_path))
    on_disk.add_dynamic_partitions(parts.name, DAYS)
    opened: list[object] = []

    def count(dbapi_connection, _record):
        if isinstance(dbapi_connection, sqlite3.Connection):
            opened.append(dbapi_connection)

    event.listen(Pool, "connect", count)
    try:
        plain = defs.resolve_job_def("make").execute_in_process(instance=on_disk, tags=RANGE)
        plain_opened = len(opened)
        opened.clear()
        with adapter.quick_run_storage(on_disk):
            pooled = defs.resolve_job_def("make").execute_in_process(instance=on_disk, tags=RANGE)
            judged = defs.resolve_job_def("judge").execute_in_process(instance=on_disk, tags=RANGE,
                                                                       raise_on_error=False)
            pooled_opened = len(opened)
            # partition keys are remembered for the block, but a key this instance removes is gone
            assert on_disk.has_dynamic_partition(parts.name, DAYS[-1])
            on_disk.delete_dynamic_partition(parts.name, DAYS[-1])
            assert not on_disk.has_dynamic_partition(parts.name, DAYS[-1])
            on_disk.add_dynamic_partitions(parts.name, [DAYS[-1]])
            assert on_disk.has_dynamic_partition(parts.name, DAYS[-1])
    finally:
        event.remove(Pool, "connect", count)
    assert plain.success and pooled.success and not judged.success
    assert pooled_opened < 15 < plain_opened, (pooled_opened, plain_opened)
    assert "_connect" not in vars(on_disk.event_log_storage) and "connect" not in vars(on_disk.run_storage)

    other = dg.DagsterInstance.from_ref(on_disk.get_ref())  # a second instance: only the files speak
    for result in (plain, pooled, judged):
        stored = Counter(e.dagster_event.event_type_value for e in other.all_logs(result.run_id) if e.dagster_event)
        assert Counter(e.event_type_value for e in result.all_events) <= stored  # (the run stores a few more)
    assert other.get_run_by_id(pooled.run_id).is_success
    checks = other.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(thing.key, "odd_days_fail")]
    )
    assert checks, "the check's evaluations reached the index shard"


def _planned_by_day(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return sorted(
        e.dagster_event.event_specific_data.partition
        for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED)
    )


def test_new_run_shards_come_from_one_template_and_dagster_accepts_them(tmp_path):
    """The first run's shard is made by Dagster and kept as the template; later shards are copies
    at Alembic's head, which Dagster opens, writes and reads like its own."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from dagster._core.storage.event_log.sqlite import sqlite_event_log
    from dagster._core.storage.sql import get_alembic_config
    from sqlalchemy import create_engine

    assert "DAGSTER_EVENT_BATCH_SIZE" in __import__("os").environ  # set by importing the adapter
    on_disk = dg.DagsterInstance.local_temp(str(tmp_path))
    on_disk.add_dynamic_partitions(parts.name, DAYS)
    runs = [defs.resolve_job_def("make").execute_in_process(instance=on_disk, tags=RANGE) for _ in range(2)]
    base = tmp_path / "history" / "runs"
    templates = list((base / adapter.SHARD_TEMPLATE_DIR).iterdir())
    assert [t.name.split("-")[0] for t in templates] == [dg.__version__]
    assert sorted(on_disk.event_log_storage.get_all_run_ids()) == sorted(r.run_id for r in runs)
    head = ScriptDirectory.from_config(get_alembic_config(sqlite_event_log.__file__)).as_revision_number("head")
    for shard in [templates[0], *(base / f"{r.run_id}.db" for r in runs)]:
        with create_engine(f"sqlite:///{shard}").connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == head, shard
    other = dg.DagsterInstance.from_ref(on_disk.get_ref())
    for r in runs:
        assert other.get_run_by_id(r.run_id).is_success
        assert _planned_by_day(other, r.run_id) == DAYS  # still one planned event per day


def test_the_cached_alembic_head_answers_as_dagster_does(tmp_path):
    from dagster._core.storage import sql
    from dagster._core.storage.event_log.sqlite import sqlite_event_log
    from sqlalchemy import create_engine

    config = sql.get_alembic_config(sqlite_event_log.__file__)
    fresh = create_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    (tmp_path / "inst").mkdir()
    dg.DagsterInstance.local_temp(str(tmp_path / "inst"))
    made = create_engine(f"sqlite:///{tmp_path / 'inst' / 'history' / 'runs' / 'index.db'}")
    for engine in (fresh, made):
        with engine.connect() as conn:
            assert adapter._check_alembic_revision(config, conn) == sql.check_alembic_revision(config, conn)
    assert sqlite_event_log.check_alembic_revision is adapter._check_alembic_revision


def test_a_batch_is_stored_in_one_transaction_per_shard_or_not_at_all(tmp_path, capfd):
    """A range run's planned events and its step's per-day materializations arrive as batches:
    each is stored with one commit per shard; a batch that fails midway stores nothing, and
    Dagster then stores its events one by one, each exactly once."""
    import sqlite3
    from collections import Counter

    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    on_disk = dg.DagsterInstance.local_temp(str(tmp_path))
    on_disk.add_dynamic_partitions(parts.name, DAYS)
    defs.resolve_job_def("make").execute_in_process(instance=on_disk, tags=RANGE)  # makes the shard template
    commits: list[int] = []

    def commit(_conn):
        commits.append(1)

    event.listen(Engine, "commit", commit)
    sizes: list[int] = []
    per_batch: list[int] = []
    batch = SqliteEventLogStorage.store_event_batch

    def counted(self, events):
        sizes.append(len(events))
        before = len(commits)
        batch(self, events)
        per_batch.append(len(commits) - before)

    SqliteEventLogStorage.store_event_batch = counted
    try:
        ok = defs.resolve_job_def("make").execute_in_process(instance=on_disk, tags=RANGE)
        assert sorted(sizes) == [len(DAYS), len(DAYS)], sizes  # planned events; materializations
        assert max(per_batch) <= 2, per_batch  # one commit per shard: the run's and the index

        real_store = SqliteEventLogStorage.store_event
        failing: list[int] = []

        def fail_third_of_a_batch(self, entry):
            if getattr(self._connect, "_af_batch", False) and len(failing) < 3:
                failing.append(1)
                if len(failing) == 3:
                    raise sqlite3.OperationalError("disk I/O error (test)")
            real_store(self, entry)

        SqliteEventLogStorage.store_event = fail_third_of_a_batch
        try:
            fell_back = defs.resolve_job_def("make").execute_in_process(instance=on_disk, tags=RANGE)
        finally:
            SqliteEventLogStorage.store_event = real_store
    finally:
        SqliteEventLogStorage.store_event_batch = batch
        event.remove(Engine, "commit", commit)
    assert "Falling back to storing multiple single-event" in capfd.readouterr().err
    other = dg.DagsterInstance.from_ref(on_disk.get_ref())
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


def test_outside_the_block_dagster_home_files_are_written_without_a_sync_per_event(tmp_path, monkeypatch):
    """A run outside quick_run_storage (as the daemon's run worker starts it: run creation, the
    first and last events) on DAGSTER_HOME: each connection at synchronous=NORMAL and a kept reader
    per file, so a close does not checkpoint (the WAL stays until the process lets go), and
    another instance still reads every event."""
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    on_disk = dg.DagsterInstance.local_temp(str(tmp_path))
    on_disk.add_dynamic_partitions(parts.name, DAYS)
    modes: list[int] = []

    def mode(dbapi_connection, _record):  # runs after the adapter's listener (installed first)
        modes.append(dbapi_connection.execute("PRAGMA synchronous").fetchone()[0])

    event.listen(Pool, "connect", mode)
    try:
        run = defs.resolve_job_def("make").execute_in_process(instance=on_disk, tags=RANGE)
    finally:
        event.remove(Pool, "connect", mode)
    assert run.success and modes and set(modes) == {1}, modes  # 1: NORMAL (Dagster's default is FULL, 2)
    shard = tmp_path / "history" / "runs" / f"{run.run_id}.db"
    assert shard.with_name(shard.name + "-wal").exists()  # not checkpointed away at each close
    other = dg.DagsterInstance.from_ref(on_disk.get_ref())
    assert other.get_run_by_id(run.run_id).is_success
    assert _planned_by_day(other, run.run_id) == DAYS
    adapter._close_kept()  # what the process does at exit: the WALs are folded into their files
    assert not shard.with_name(shard.name + "-wal").exists()
