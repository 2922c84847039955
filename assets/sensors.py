"""A sensor that rebuilds days the log has sealed since they were last published.

State lives in the data folder, not in a cursor: a sealed day whose published manifest is
missing, or was written while the day was still open, needs a run. The run key names the
manifest entry, so one sealing never launches two runs.
"""


from typing import Any

import dagster as dg

from assets import publish
from capture.home import Home

MAX_RUNS_PER_TICK = 31


def days_needing_publish(home: Home) -> list[tuple[str, str]]:
    """(day, manifest entry hash) of sealed days without a sealed publication."""
    if not home.exists():
        return []
    from capture.log import EventLog

    out = []
    for entry in EventLog(home).manifest():
        day = str(entry.get("day"))
        published = publish.read_manifest(home.published_dir, day)
        if published is None or not published.get("sealed"):
            out.append((day, str(entry.get("hash", ""))[:16]))
    return out


def build_sealed_sensor(
    home: Home, job: Any, partitions: dg.PartitionsDefinition
) -> dg.SensorDefinition:
    @dg.sensor(
        name="newly_sealed_days",
        job=job,
        minimum_interval_seconds=300,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Compiles and publishes each day once the event log seals it.",
    )
    def newly_sealed_days(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        keys = set(partitions.get_partition_keys())
        due = [(d, h) for d, h in days_needing_publish(home) if d in keys]
        requests = [dg.RunRequest(run_key=f"sealed-{d}-{h}", partition_key=d) for d, h in due[:MAX_RUNS_PER_TICK]]
        if not requests:
            return dg.SensorResult(skip_reason="every sealed day is published")
        return dg.SensorResult(run_requests=requests)

    return newly_sealed_days
