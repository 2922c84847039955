"""The three certification invariants as blocking asset checks on published_day.

Thin: each check gathers what it needs from the resources and asks certification/ whether the
invariant holds for each day of the run. A failure names the day and what differs; being
blocking, it fails the run (Dagster leaves a run green on a failed non-blocking check).
"""


from collections.abc import Callable, Sequence

import dagster as dg
from dagster_duckdb import DuckDBResource

from assets.resources import DataFolder

MAX_LISTED = 20  # problems shown in the UI; the count is always complete

RECOMPILE = "byte_identical_recompile"
REBUILD = "rebuild_equals_incremental"
APPEND_ONLY = "append_only"
INVARIANTS = (RECOMPILE, REBUILD, APPEND_ONLY)
PER_DAY = "problems by day"  # metadata key: {day: [problem, ...]} for the days that failed


def _days(context: dg.AssetCheckExecutionContext) -> list[str]:
    return list(context.partition_keys)


def verdict(days: Sequence[str], problems_of: Callable[[str], list[str]], extra: dict | None = None) -> dg.AssetCheckResult:
    problems: list[str] = []
    by_day: dict[str, list[str]] = {}
    for day in days:
        found = problems_of(day)
        problems.extend(found)
        if found:
            by_day[day] = found[:MAX_LISTED]
    meta: dict = {"days": len(days), "problems": len(problems)}
    if problems:
        meta["details"] = dg.MetadataValue.md("\n".join(f"- {p}" for p in problems[:MAX_LISTED]))
    # A run over a day range evaluates each check once; this says which days failed and why, so
    # the certificate still gives every day its own verdict per check.
    meta[PER_DAY] = dg.MetadataValue.json(by_day)
    meta.update(extra or {})
    return dg.AssetCheckResult(
        passed=not problems,
        metadata=meta,
        description=problems[0] if problems else None,
    )


def build_checks(published_day: dg.AssetsDefinition, partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    @dg.asset_check(
        asset=published_day,
        name=RECOMPILE,
        blocking=True,
        partitions_def=partitions,
        description="The day compiled from the event log in a separate process with another TZ and "
        "PYTHONHASHSEED: its canonical bytes and renderings must equal the published files and the warehouse.",
    )
    def byte_identical_recompile(
        context: dg.AssetCheckExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> dg.AssetCheckResult:
        from certification import rebuild, recompile

        fresh = rebuild.fresh_build(data_folder.home, data_folder.include_typed_text)
        with warehouse.get_connection() as con:

            def problems(day: str) -> list[str]:
                row = con.execute("SELECT sha256 FROM day_document WHERE day = ?", [day]).fetchone()
                return recompile.compare(data_folder.published_dir, fresh.published, day, row[0] if row else "missing")

            return verdict(
                _days(context),
                problems,
                {"other process TZ": fresh.env.get("TZ", ""), "other process PYTHONHASHSEED": fresh.env.get("PYTHONHASHSEED", "")},
            )

    @dg.asset_check(
        asset=published_day,
        name=REBUILD,
        blocking=True,
        partitions_def=partitions,
        description="A fresh warehouse rebuilt from the whole log in one run must hold the same rows for the "
        "day, in every table, as the warehouse built day by day.",
    )
    def rebuild_equals_incremental(
        context: dg.AssetCheckExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> dg.AssetCheckResult:
        from assets import store
        from certification import rebuild

        days = _days(context)
        # Our side first (one scan per table), while the other process may still be building.
        with warehouse.get_connection() as con:
            live = store.digests(con, days)
        fresh = rebuild.fresh_build(data_folder.home, data_folder.include_typed_text)
        return verdict(days, lambda day: rebuild.compare_tables(live[day], fresh, day), {"fresh days": len(fresh.digests)})

    @dg.asset_check(
        asset=published_day,
        name=APPEND_ONLY,
        blocking=True,
        partitions_def=partitions,
        description="Sealed segments match the log's hash-chained manifest, and the published files of this "
        "and every earlier sealed day match their manifests and the segments they came from.",
    )
    def append_only(context: dg.AssetCheckExecutionContext, data_folder: DataFolder) -> dg.AssetCheckResult:
        from certification import appendonly

        log = data_folder.log()
        memo: dict[str, list[str] | None] = {}  # each earlier published day verified once per run
        return verdict(
            _days(context),
            lambda day: appendonly.check_day(log, data_folder.published_dir, day, memo),
            {"chain head": log.chain_head() or "-"},
        )

    return [byte_identical_recompile, rebuild_equals_incremental, append_only]
