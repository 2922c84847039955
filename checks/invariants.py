"""The three certification invariants as blocking asset checks on published_day.

Small by design: each check gathers what it needs from the resources, asks certification/
whether the invariant holds, and returns one AssetCheckResult per day of its run
(assets.dagster_adapter.day_check records each on its day partition, also when one run covers
a day range). A failure names the day and what differs; being blocking, it fails the run.
"""


from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.warehouse import day_work, quality, store
from af_pipeline.warehouse.quality import quiet
from assets.dagster_adapter import DayResults, day_check
from assets.resources import DataFolder
from certification import appendonly, rebuild, recompile

MAX_LISTED = 20  # problems shown in the UI; the count is always complete
CONSEQUENCE_OF = "consequence of"  # metadata: the check whose failure caused this one's

RECOMPILE = "byte_identical_recompile"
REBUILD = "rebuild_equals_incremental"
APPEND_ONLY = "append_only"
INVARIANTS = (RECOMPILE, REBUILD, APPEND_ONLY)
# Checks that need no independent rebuild run first in a certify run, while the rebuild is still
# going; the two that wait for it come last (Dagster runs higher priorities first), and of those
# rebuild_equals_incremental first: its own side (a scan of every table, ~0.6 s for 51 days) is
# then read while the rebuild still runs, and byte_identical_recompile finds the rebuild done.
RUN_FIRST = {"dagster/priority": "2"}
OWN_SIDE_FIRST = {"dagster/priority": "1"}


def day_result(problems: Sequence[str], days_in_run: int, extra: Mapping[str, Any] | None = None) -> dg.AssetCheckResult:
    """One day's verdict: passed without problems; the first problem is the description."""
    meta: dict[str, Any] = {"problems": len(problems), "days in run": days_in_run}
    if problems:
        meta["details"] = dg.MetadataValue.md("\n".join(f"- {p}" for p in problems[:MAX_LISTED]))
    meta.update(extra or {})
    return dg.AssetCheckResult(passed=not problems, metadata=meta, description=problems[0] if problems else None)


def consequence(day: str, failing: quality.Failing, found: Sequence[str], days_in_run: int,
                extra: Mapping[str, Any]) -> dg.AssetCheckResult:
    """A check that could not judge a day's published files because a data-quality rule kept
    the day from being published: it fails, saying so first and naming the check that holds the
    cause, then lists what it found in what it could compare."""
    problem = f"{day}: not published, a consequence of {failing.check} failing ({failing.reason})"
    return day_result([problem, *found], days_in_run, {**extra, CONSEQUENCE_OF: failing.check})


def build_checks(published_day: dg.AssetKey, partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    @day_check(
        asset=published_day,
        name=RECOMPILE,
        partitions_def=partitions,
        description="The day compiled from the event log in a separate process with another TZ and "
        "PYTHONHASHSEED: its canonical bytes and renderings must equal the published files and the warehouse.",
    )
    def byte_identical_recompile(
        context: dg.AssetCheckExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> DayResults:
        days = list(context.partition_keys)
        fresh = rebuild.fresh_build(data_folder.home, data_folder.include_typed_text, days)
        env = {"other process TZ": fresh.env.get("TZ", ""), "other process PYTHONHASHSEED": fresh.env.get("PYTHONHASHSEED", "")}
        with warehouse.get_connection() as con:
            stored = day_work.document_hashes(con, days)  # the files as they are, not the recorded hashes
            withheld = quality.failing_days(con, days)
        out = {}
        for day in days:
            failing = withheld.get(day)
            if failing is None:
                problems = recompile.compare(data_folder.published_dir, fresh.published, day, stored.get(day, "missing"))
                out[day] = day_result(problems, len(days), env)
            else:  # kept back by a quality rule: no published files to compare, the warehouse still is
                found = recompile.compare_warehouse(fresh.published, day, stored.get(day, "missing"))
                out[day] = consequence(day, failing, found, len(days), env)
        return out

    @day_check(
        asset=published_day,
        name=REBUILD,
        op_tags=OWN_SIDE_FIRST,
        partitions_def=partitions,
        description="A fresh warehouse rebuilt from the log (the run's days, every step of each) must hold the "
        "same rows for the day, in every table, as the warehouse built day by day.",
    )
    def rebuild_equals_incremental(
        context: dg.AssetCheckExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> DayResults:
        days = list(context.partition_keys)
        # Our side first (one scan per table), while the other process may still be building.
        with warehouse.get_connection() as con:
            quiet(con)
            live = store.digests(con, days)
        fresh = rebuild.fresh_build(data_folder.home, data_folder.include_typed_text, days)
        extra = {"fresh days": len(fresh.digests)}
        return {day: day_result(rebuild.compare_tables(live[day], fresh, day), len(days), extra) for day in days}

    @day_check(
        asset=published_day,
        name=APPEND_ONLY,
        op_tags=RUN_FIRST,
        partitions_def=partitions,
        description="Sealed segments match the log's hash-chained manifest, and the published files of this "
        "and every earlier sealed day match their manifests and the segments they came from.",
    )
    def append_only(context: dg.AssetCheckExecutionContext, data_folder: DataFolder) -> DayResults:
        days = list(context.partition_keys)
        log = data_folder.log()
        memo: dict[str, list[str] | None] = {}  # each earlier published day verified once per run
        extra = {"chain head": log.chain_head() or "-"}
        return {
            day: day_result(appendonly.check_day(log, data_folder.published_dir, day, memo), len(days), extra)
            for day in days
        }

    return [byte_identical_recompile, rebuild_equals_incremental, append_only]
