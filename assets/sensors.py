"""A sensor that keeps the day partitions in step with the log and rebuilds what the log sealed.

Each tick first adds every day the log holds that is not a partition yet (assets/partitions.py),
so a day imported or synced while the UI is open appears within one tick, without reloading
the code location. Then it asks for the days the log has sealed (or amended) since they were
last published.

State lives in the data folder, not in a cursor: a sealed day whose published manifest is
missing, was written while the day was still open, lists other segments than the log now holds
for the day (an amendment landed since) or another code version, needs a run; a day published
from its segments by this code is left alone (assets/unchanged.py). The run key names the
manifest entry, the code version and the newest redaction record (af forget) that rewrote the
day, so one sealing never launches two runs and a forget launches one, but for a run
cut short (af ui stopped or was killed while it ran, assets/instance.py): the next tick asks for
its day again under a new key, at most MAX_CUT_SHORT_RETRIES times per sealing.
"""

import os
from typing import Any

import dagster as dg

from af_pipeline.warehouse import publish
from af_pipeline.warehouse.days import log_days
from af_pipeline.warehouse.version import code_version
from assets import unchanged
from assets.instance import cut_short
from assets.partitions import register_days
from capture.home import Home
from capture.log import EventLog

MAX_RUNS_PER_TICK = 31
MAX_CUT_SHORT_RETRIES = 3  # runs of one sealing cut short in a row (af ui stopped, killed) asked for again
RUN_KEY_TAG = "dagster/run_key"
DEFAULT_INTERVAL_S = 300
INTERVAL_ENV = "AF_SENSOR_INTERVAL_S"


def days_needing_publish(home: Home) -> list[tuple[str, str]]:
    """(day, manifest entry hash) of sealed days without a sealed publication."""
    if not home.exists():
        return []

    log = EventLog(home)
    latest: dict[str, dict[str, Any]] = {}
    redacted: dict[str, int] = {}  # day -> the newest redaction record (af forget) that rewrote one of its segments
    for entry in log.manifest():
        day = str(entry.get("day"))
        latest[day] = entry  # the newest segment's entry names the run: an amendment is a new run
        seqs = [s for s in entry.get("redacted_by", ()) if isinstance(s, int)]
        if seqs:
            redacted[day] = max(redacted.get(day, 0), *seqs)
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
            # a forget rewrites the day's segments without a new segment entry: the record names a
            # new sealing, or the run key of the run that first built the day would be asked for
            # again and Dagster would skip it (the day would stay unbuilt)
            forgot = f"-redaction{redacted[day]}" if day in redacted else ""
            out.append((day, f"{str(entry.get('hash', ''))[:16]}-{version}{forgot}"))
    return out


def run_key(instance: dg.DagsterInstance, day: str, sealing: str) -> str:
    """The run key to request for ``day`` sealed as ``sealing``: ``sealed-DAY-SEALING`` the first
    time; ``...-retryN`` when the run of the previous key was cut short (assets/instance.py:
    af ui stopped or killed while it ran) and fewer than MAX_CUT_SHORT_RETRIES were; otherwise the
    previous key again, which Dagster skips (a run is in progress, succeeded, or failed in its own
    steps: a failure for a reason of the day's own is not asked for again and again)."""
    keys = [f"sealed-{day}-{sealing}"] + [f"sealed-{day}-{sealing}-retry{n}" for n in range(1, MAX_CUT_SHORT_RETRIES + 1)]
    runs = {r.tags.get(RUN_KEY_TAG): r for r in instance.get_runs(dg.RunsFilter(tags={RUN_KEY_TAG: keys}))}
    last = max((n for n, k in enumerate(keys) if k in runs), default=None)
    if last is None:
        return keys[0]
    run = runs[keys[last]]
    if run.status == dg.DagsterRunStatus.FAILURE and cut_short(run.tags) and last + 1 < len(keys):
        return keys[last + 1]
    return keys[last]


def interval_seconds() -> int:
    """How often the sensor looks: every 5 minutes, or ``AF_SENSOR_INTERVAL_S`` seconds (at least 1)."""
    raw = os.environ.get(INTERVAL_ENV, "")
    try:
        return max(1, int(raw)) if raw else DEFAULT_INTERVAL_S
    except ValueError:
        return DEFAULT_INTERVAL_S


def build_sealed_sensor(home: Home, job: Any) -> dg.SensorDefinition:
    @dg.sensor(
        name="newly_sealed_days",
        job=job,
        minimum_interval_seconds=interval_seconds(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Adds each day the event log holds as a partition; compiles and publishes each day once "
        "the event log seals it.",
    )
    def newly_sealed_days(context: dg.SensorEvaluationContext) -> dg.SensorResult:

        added = register_days(context.instance, log_days(home))
        due = days_needing_publish(home)
        requests = [dg.RunRequest(run_key=run_key(context.instance, d, h), partition_key=d)
                    for d, h in due[:MAX_RUNS_PER_TICK]]
        if not requests:
            told = f"added {len(added)} day partition(s); " if added else ""
            return dg.SensorResult(skip_reason=f"{told}every sealed day is published")
        return dg.SensorResult(run_requests=requests)

    return newly_sealed_days
