"""Day partitions that mirror the event log: one partition per day the log holds, nothing else.

A ``DynamicPartitionsDefinition``: the keys live in the Dagster instance, not in the code, so
the definitions load without reading the log, the UI shows no "Missing" days that were never
captured, and a day that lands appears without reloading the code location. Days are added by
whoever sees them first: ``af import`` / ``af sync`` (when the folder has a Dagster instance),
``af build`` before it launches its run, and the ``newly_sealed_days`` sensor and the nightly
schedule on each tick.

Keys are kept in calendar order: Dagster orders dynamic keys by insertion, and a range run
(``af build --from --to``, a backfill) selects every key between its two ends in that order, so
a day imported later than newer ones must still sit before them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import dagster as dg

DAYS = "days"
day_partitions = dg.DynamicPartitionsDefinition(name=DAYS)


def registered_days(instance: Any) -> list[str]:
    """The day partitions the instance knows, in their (calendar) order."""
    return list(instance.get_dynamic_partitions(DAYS))


def register_days(instance: Any, days: Iterable[str]) -> list[str]:
    """Add the days that are not partitions yet, keeping calendar order; return those added.

    New days after the last known one are appended. An older day is placed by re-adding the
    keys after it: deleting a dynamic key forgets no materialization or check result (those are
    stored by key), so re-adding it shows the day exactly as before.
    """
    known = registered_days(instance)
    new = sorted(set(days) - set(known))
    if not new:
        return []
    tail = [k for k in known if k > new[0]]
    for key in tail:
        instance.delete_dynamic_partition(DAYS, key)
    instance.add_dynamic_partitions(DAYS, sorted([*new, *tail]))
    return new


def keys_in_range(instance: Any, first: str, last: str) -> list[str]:
    """The day partitions between two days (inclusive)."""
    return [k for k in registered_days(instance) if first <= k <= last]
