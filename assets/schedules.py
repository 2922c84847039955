"""The nightly compile: yesterday's partition, shortly after the log's grace period has passed."""


from datetime import timedelta
from typing import Any

import dagster as dg

from af_pipeline.warehouse.days import log_days
from af_pipeline.warehouse.version import code_version
from assets import unchanged
from assets.partitions import register_days
from capture.home import Home
from capture.timeutil import zone


def nightly_hour(grace_hours: float) -> int:
    """First whole hour after the grace period, so yesterday is usually sealed when it runs."""
    return min(23, int(grace_hours) + 1)


def _published_unchanged(home: Home, day: str) -> bool:
    """Whether the day's published files already come from its segments and this code (read-only)."""
    if not home.warehouse_path.exists():
        return False
    import duckdb

    from capture.log import EventLog

    try:
        con = duckdb.connect(str(home.warehouse_path), read_only=True)
    except duckdb.Error:  # a run holds the file: let the run decide, its steps skip the same way
        return False
    try:
        stored = unchanged.stored_state(con, [day])
    finally:
        con.close()
    return unchanged.up_to_date(home.published_dir, EventLog(home), day, code_version(), stored)


def build_nightly(home: Home, job: Any, tz: str) -> dg.ScheduleDefinition:
    grace = home.settings().grace_hours if home.exists() else 6.0
    hour = nightly_hour(grace)

    @dg.schedule(
        name="nightly_compile",
        job=job,
        cron_schedule=f"0 {hour} * * *",
        execution_timezone=tz,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"Every day at {hour:02d}:00 ({tz}): compile and publish yesterday's partition.",
    )
    def nightly_compile(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        local = context.scheduled_execution_time.astimezone(zone(tz))
        day = (local.date() - timedelta(days=1)).isoformat()

        days = log_days(home)
        if day not in days:
            return dg.SkipReason(f"no capture for {day} in the event log")
        register_days(context.instance, days)  # the run's partition must exist before it is requested
        if _published_unchanged(home, day):
            return dg.SkipReason(f"{day} is {unchanged.REASON} ({code_version()}): nothing to build")
        return dg.RunRequest(run_key=f"nightly-{day}", partition_key=day)

    return nightly_compile


RETENTION_JOB = "retention"


def build_retention(home: Home) -> tuple[dg.JobDefinition, dg.ScheduleDefinition]:
    """The ``retention`` job (af.json's retention_days applied: af_pipeline/warehouse/retention.py)
    and its nightly schedule, half an hour after the nightly compile. Its run log holds counts
    and days only, never what was forgotten."""

    @dg.op(name="apply_retention")
    def apply_retention_op(context: dg.OpExecutionContext) -> None:
        import time

        from af_pipeline.warehouse.retention import apply_retention, retention_days

        if not home.exists() or retention_days(home.root) is None:
            context.log.info("no retention_days in af.json: nothing to forget")
            return
        done, purged = apply_retention(home, time.time_ns() // 1000)
        if done is None or purged is None:
            context.log.info("no day is older than retention_days: nothing to forget")
            return
        rows = sum(done.totals().values())
        context.log.info(f"retention: forgot {rows:,} rows of {len(done.days)} day(s) {done.days[0]} .. "
                         f"{done.days[-1]} (redaction record {done.seq}); {len(purged.published)} published "
                         f"day(s) and {sum(purged.rows.values()):,} warehouse rows removed")

    @dg.job(name=RETENTION_JOB, description="Forget the days older than af.json's retention_days (docs/privacy.md).")
    def retention_job() -> None:
        apply_retention_op()

    grace = home.settings().grace_hours if home.exists() else 6.0
    hour = nightly_hour(grace)
    tz = home.settings().tz if home.exists() else "UTC"
    schedule = dg.ScheduleDefinition(
        name="nightly_retention", job=retention_job, cron_schedule=f"30 {hour} * * *", execution_timezone=tz,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"Every day at {hour:02d}:30 ({tz}): forget the days older than retention_days, if set.")
    return retention_job, schedule
