"""Day partitions in the user's zone, from the first day in the event log.

The zone is the one recorded in the data folder (never the machine's TZ). Partitions start at
the log's first day; with an empty log (or no data folder yet) they start today in that zone,
so the code location still loads and the UI shows a single partition until capture lands. The
last partition is today, or the log's last day if the capture runs ahead of the clock (a sample
corpus dated in the future), so every captured day can be materialized.
"""

from __future__ import annotations

from datetime import datetime

import dagster as dg

from af_pipeline.warehouse.days import home_zone, log_days, today
from capture.home import Home
from capture.timeutil import parse_day


def daily_partitions(home: Home, now: datetime | None = None) -> dg.DailyPartitionsDefinition:
    """DailyPartitionsDefinition for the folder's days (see the module docstring for the bounds)."""
    tz = home_zone(home)
    days = log_days(home)
    now_day = today(tz, now)
    first = parse_day(days[0]) if days else now_day
    last = max(parse_day(days[-1]) if days else now_day, now_day)
    # end_offset counts partitions past the last complete day (yesterday): 1 makes today
    # selectable; more reach a log that runs ahead of the clock.
    end_offset = (last - now_day).days + 1
    return dg.DailyPartitionsDefinition(
        start_date=first.isoformat(), timezone=tz, end_offset=end_offset, fmt="%Y-%m-%d"
    )
