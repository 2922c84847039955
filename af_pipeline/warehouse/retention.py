"""Retention: days older than ``retention_days`` (af.json) forgotten, with the same record as
``af forget`` (docs/privacy.md). Applied by ``af forget --older-than`` and the nightly
``retention`` schedule; Dagster-free, so both run the same code."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

from af_pipeline.warehouse.purge import Purged, purge_days
from capture.errors import UserError
from capture.home import Home
from capture.log import EventLog, ForgetPlan, Selection
from capture.timeutil import day_bounds, local_day


def retention_days(root: Path) -> int | None:
    """af.json's ``retention_days`` (None when unset)."""
    try:
        doc = json.loads((root / "af.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = doc.get("retention_days") if isinstance(doc, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"af.json: \"retention_days\" must be a whole number of days (1 or more), found {value!r}")
    return value


def older_than(log: EventLog, days: int, now_us: int) -> list[str]:
    """The log's days that ended before the local day ``days`` days before today began."""
    cutoff = (date.fromisoformat(local_day(now_us, log.tz)) - timedelta(days=days)).isoformat()
    start = day_bounds(cutoff, log.tz)[0]
    return [d for d in log.day_names() if day_bounds(d, log.tz)[1] <= start]


def apply_retention(home: Home, now_us: int, say: Callable[[str], None] = lambda _m: None,
                    days: int | None = None) -> tuple[ForgetPlan | None, Purged | None]:
    """Forget every day older than ``days`` (default: af.json's retention_days) and remove them
    from the warehouse and published files. (None, None) when there is nothing to do."""
    keep = retention_days(home.root) if days is None else days
    if keep is None:
        return None, None
    log = EventLog(home)
    old = older_than(log, keep, now_us)
    if not old:
        return None, None
    done = log.forget(Selection(days=tuple(old), retention=True), progress=say)
    return done, purge_days(home, done.days, say)
