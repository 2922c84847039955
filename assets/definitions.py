"""The code location: the Definitions object workspace.yaml loads.

Thin by design: it wires partitions, assets, checks, jobs, the schedule and the sensor for one
data folder ($AF_HOME, else ~/.activity-frames). Loading reads the folder's settings (zone,
grace period), never the event log: the day partitions live in the instance (assets/partitions.py). Everything that computes lives in af_pipeline;
everything that stores lives in af_pipeline/warehouse/store.py and af_pipeline/warehouse/publish.py.
"""

from __future__ import annotations

import dagster as dg

from af_pipeline.warehouse.days import home_zone
from assets import day_assets as derive
from assets import routines
from assets.dagster_adapter import stage_progress
from assets.partitions import day_partitions
from assets.resources import resources_for
from assets.schedules import build_nightly, build_retention
from assets.sensors import build_sealed_sensor
from capture.home import Home, private_files, resolve_home
from checks import invariants, quality

BUILD_JOB = "build"
CERTIFY_JOB = "certify"
ROUTINES_JOB = "routines"


def _same_config(_day: str) -> dict[str, object]:
    return {}


def build_definitions(home: Home | None = None, executor: dg.ExecutorDefinition | None = None,
                      pooled: bool = True) -> dg.Definitions:
    """The code location of a data folder; ``executor``: the jobs' executor (the in-process one
    unless told: see build_job_on); ``pooled``: the day assets in the warehouse pool (dask cannot
    ship a run that names a pool)."""
    # The webserver, daemon and run workers load the code here, not through `af`: their files in
    # the data folder (warehouse, run history, published/) must be as private as the CLI's.
    private_files()
    home = home or resolve_home(None)
    partitions = day_partitions
    day_assets = derive.build_assets(partitions, pooled=pooled)
    by_name = {key.to_user_string(): key for a in day_assets for key in a.keys}  # one multi-asset, seven keys
    # Great Expectations judges every day the certify job judges; a build may use the SQL screen
    # that tests/test_quality_screen.py holds to GX (checks/quality.py).
    quality_checks = quality.build_checks(by_name["raw_day"], by_name["frames"], partitions, gx_always_in={CERTIFY_JOB})
    invariant_checks = invariants.build_checks(by_name["published_day"], partitions)
    all_checks = [*quality_checks, *invariant_checks]
    routine_assets = routines.build_assets(by_name["raw_day"])

    # build: every asset plus the data-quality checks (cheap, and they guard what is derived next);
    # certify: every check and nothing else, one day per run or a day range in one run. It has the
    # day partitions itself (a checks-only selection gives a job none), so the UI's Launchpad and
    # the job's Partitions tab offer the days to certify.
    build = dg.define_asset_job(
        BUILD_JOB,
        selection=dg.AssetSelection.assets(*day_assets).without_checks() | dg.AssetSelection.checks(*quality_checks),
        description="Materialize day partitions: log -> warehouse -> documents -> published/.",
    )
    certify = dg.define_asset_job(
        CERTIFY_JOB,
        selection=dg.AssetSelection.checks(*all_checks),
        # The day partitions through its config (a PartitionedConfig giving every day the same run
        # config): Dagster infers a job's partitions from its assets only, and this job has none.
        config=dg.PartitionedConfig(partitions_def=partitions, run_config_for_partition_key_fn=_same_config),
        description="Run every certification and data-quality check (Great Expectations included) for a day or "
        "a day range (checks only, nothing is rebuilt): pick the day(s) in the Launchpad's partition selector.",
    )
    # Its own job: the routine assets span every day (unpartitioned), so the per-day build keeps
    # its shape and a nightly or sensor build of one day does not re-mine the whole history.
    mine = dg.define_asset_job(
        ROUTINES_JOB,
        selection=dg.AssetSelection.assets(*routine_assets),
        description="Mine routines over every built day: routine table, recurrence, replay plans, R ladder.",
    )
    retention, nightly_retention = build_retention(home)
    return dg.Definitions(
        assets=[*day_assets, *routine_assets],
        asset_checks=all_checks,
        jobs=[build, certify, mine, retention],
        schedules=[build_nightly(home, build, home_zone(home)), nightly_retention],
        sensors=[build_sealed_sensor(home, build)],
        resources=resources_for(home),
        # Dagster's console log as usual, plus the stage lines `af build` turns on (off by default).
        loggers={"console": dg.colored_console_logger, "progress": stage_progress},
        executor=executor or dg.in_process_executor,
    )


EXECUTORS = ("in_process", "multiprocess", "dask")


def build_job_on(root: str, executor: str) -> dg.JobDefinition:
    """The build job of the data folder at ``root`` on one of EXECUTORS. Module level, so the
    processes of a multiprocess or dask run rebuild it from its arguments:
    ``dg.build_reconstructable_job("assets.definitions", "build_job_on", reconstructable_args=(root, executor))``.

    The day work is one step whatever the executor (the day assets' one multi-asset), so each
    builds the same bytes (tests/test_executors_bytes.py); the in-process one is the default
    because a step process costs seconds here. On dask, which enforces no pools and cannot ship
    a run that names one (dagster-dask walks the run record, and Dagster's op-concurrency record
    refuses iteration), the day step names no pool: the warehouse lock every run holds
    (assets/instance.py, through the data_folder resource) keeps the one writer."""
    if executor == "dask":
        from assets.dagster_adapter import dask_day_executor

        chosen: dg.ExecutorDefinition = dask_day_executor()  # dagster-dask's, for partitioned runs
    elif executor in EXECUTORS:
        chosen = dg.multiprocess_executor if executor == "multiprocess" else dg.in_process_executor
    else:
        raise ValueError(f"unknown executor {executor!r} (one of {', '.join(EXECUTORS)})")
    return build_definitions(Home(root), executor=chosen, pooled=executor != "dask").resolve_job_def(BUILD_JOB)


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions()
