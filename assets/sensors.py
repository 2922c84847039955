"""A sensor that keeps the day partitions in step with the log and rebuilds what the log sealed.

Each tick first adds every day the log holds that is not a partition yet (assets/partitions.py),
so a day imported or synced while the UI is open appears within one tick, without reloading
the code location. Then it asks for the days the log has sealed (or amended) since they were
last published.

State lives in the data folder, not in a cursor: a sealed day whose published manifest is
missing, was written while the day was still open, lists other segments than the log now holds
for the day (an amendment landed since) or another code version, needs a run; a day published
from its segments by this code is left alone (assets/unchanged.py). The run key names the
manifest entry and the code version, so one sealing never launches two runs.
"""


from typing import Any

import dagster as dg

from af_pipeline.warehouse import publish
from af_pipeline.warehouse.days import log_days
from af_pipeline.warehouse.version import code_version
from assets import unchanged
from assets.partitions import register_days
from capture.home import Home
from capture.log import EventLog

MAX_RUNS_PER_TICK = 31


def days_needing_publish(home: Home) -> list[tuple[str, str]]:
    """(day, manifest entry hash) of sealed days without a sealed publication."""
    if not home.exists():
        return []

    log = EventLog(home)
    latest: dict[str, dict[str, Any]] = {}
    for entry in log.manifest():
        latest[str(entry.get("day"))] = entry  # the newest segment's entry names the run: an amendment is a new run
    version = code_version()
    out = []
    for day, entry in latest.items():
        published = publish.read_manifest(home.published_dir, day)
        # (the warehouse is not asked here: the run's own steps skip a day it still holds)
        stale = (
            published is None
            or not published.get("sealed")
            or published.get("code_version") != version
            or published.get("segments") != unchanged.log_segments(log, day)
        )
        if stale:
            out.append((day, f"{str(entry.get('hash', ''))[:16]}-{version}"))
    return out


def build_sealed_sensor(home: Home, job: Any) -> dg.SensorDefinition:
    @dg.sensor(
        name="newly_sealed_days",
        job=job,
        minimum_interval_seconds=300,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Adds each day the event log holds as a partition; compiles and publishes each day once "
        "the event log seals it.",
    )
    def newly_sealed_days(context: dg.SensorEvaluationContext) -> dg.SensorResult:

        added = register_days(context.instance, log_days(home))
        due = days_needing_publish(home)
        requests = [dg.RunRequest(run_key=f"sealed-{d}-{h}", partition_key=d) for d, h in due[:MAX_RUNS_PER_TICK]]
        if not requests:
            told = f"added {len(added)} day partition(s); " if added else ""
            return dg.SensorResult(skip_reason=f"{told}every sealed day is published")
        return dg.SensorResult(run_requests=requests)

    return newly_sealed_days
