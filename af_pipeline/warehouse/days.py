"""The days a data folder holds and the zone they are counted in (no Dagster).

The zone is the one recorded in the data folder, never the machine's TZ; a folder that does not
exist yet counts in UTC so that the code location still loads before any capture lands.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from capture.home import Home
from capture.log import EventLog
from capture.timeutil import zone

FALLBACK_TZ = "UTC"


def home_zone(home: Home) -> str:
    """The recorded zone, or UTC for a folder that does not exist yet."""
    return home.settings().tz if home.exists() else FALLBACK_TZ


def log_days(home: Home) -> list[str]:
    """Days present in the log (sealed or open), oldest first; empty without a log."""
    if not home.exists():
        return []
    return EventLog(home).day_names()


def today(tz: str, now: datetime | None = None) -> date:
    return (now or datetime.now(UTC)).astimezone(zone(tz)).date()
