"""Shared set-up for the Dagster and certification tests (no tests here).

A real synthetic capture (capture.synth, screenpipe format, through the real importer), trimmed
to one hour per day so the whole graph runs in seconds, landed day by day in a real event log.
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from capture.home import Home
from capture.model import ROW_KINDS, CaptureBatch
from capture.timeutil import day_bounds, local_day

TZ = "Europe/Paris"
START = "2026-06-01"
KEEP_HOURS = (9, 10)  # local hours kept per day


@lru_cache(maxsize=1)
def corpus(days: int = 2, start: str = START) -> CaptureBatch:
    """The synthetic capture of ``days`` days from ``start``, trimmed to KEEP_HOURS each day."""
    import tempfile

    from capture.importers.screenpipe import read_screenpipe
    from capture.synth import generate

    out = Path(tempfile.mkdtemp(prefix="af-test-corpus-"))
    generate(days, 11, out, start_day=start, tz=TZ)
    full = read_screenpipe(out / "screenpipe.sqlite")
    keep = replace(full, quarantined=[])
    for kind in ROW_KINDS:
        rows = []
        for r in full.rows(kind):
            day = local_day(r.ts_us, TZ)
            lo, _ = day_bounds(day, TZ)
            hour = (r.ts_us - lo) // 3_600_000_000
            if KEEP_HOURS[0] <= hour < KEEP_HOURS[1] or kind == "streams":
                rows.append(r)
        setattr(keep, kind, rows)
    return keep


def days_of(batch: CaptureBatch) -> list[str]:
    return sorted({local_day(s.ts_us, TZ) for s in batch.snapshots})


def only_days(batch: CaptureBatch, days: set[str], before_us: int | None = None) -> CaptureBatch:
    """The rows of some days (optionally only those before an instant)."""
    out = replace(batch)
    for kind in ROW_KINDS:
        setattr(
            out,
            kind,
            [r for r in batch.rows(kind) if local_day(r.ts_us, TZ) in days and (before_us is None or r.ts_us < before_us)],
        )
    return out


def new_home(root: Path) -> Home:
    from assets.instance import use_home

    home = Home(root / "home")
    home.init(tz=TZ)
    use_home(home)
    os.environ["DAGSTER_TELEMETRY_DISABLED"] = "1"
    return home


def check_results(result) -> dict[str, tuple[bool, str | None]]:
    """check name -> (passed, description) from a Dagster run result."""
    out = {}
    for ev in result.all_events:
        if ev.event_type_value == "ASSET_CHECK_EVALUATION":
            data = ev.asset_check_evaluation_data
            out[data.check_name] = (bool(data.passed), data.description)
    return out
