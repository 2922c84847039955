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
