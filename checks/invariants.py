"""The three certification invariants as blocking asset checks on published_day.

Thin: each check gathers what it needs from the resources and asks certification/ whether the
invariant holds for each day of the run. A failure names the day and what differs; being
blocking, it fails the run (Dagster leaves a run green on a failed non-blocking check).
Every check records one evaluation per day partition, also when one run covers a day range.
"""


from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import dagster as dg

# Not re-exported by `dagster`; the same record Dagster fills in for a single-partition run.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster_duckdb import DuckDBResource

from af_pipeline.warehouse import store
from assets.resources import DataFolder
from certification import appendonly, rebuild, recompile

MAX_LISTED = 20  # problems shown in the UI; the count is always complete

RECOMPILE = "byte_identical_recompile"
REBUILD = "rebuild_equals_incremental"
APPEND_ONLY = "append_only"
INVARIANTS = (RECOMPILE, REBUILD, APPEND_ONLY)
# Checks that need no independent rebuild run first in a certify run, while the rebuild is still
# going; the two that wait for it come last (Dagster runs higher priorities first).
RUN_FIRST = {"dagster/priority": "1"}

# What a check returns: its (valueless) output, then one evaluation per day partition. Dagster
# runs such a check function, but types @asset_check functions as returning one AssetCheckResult,
# hence the type: ignore on each decorator.
CheckEvents = Iterator[dg.Output | dg.AssetCheckEvaluation]


def _days(context: dg.AssetCheckExecutionContext) -> list[str]:
    return list(context.partition_keys)


def _latest_materializations(
    context: dg.AssetCheckExecutionContext, asset_key: dg.AssetKey, days: Sequence[str]
) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
    """Each day's latest materialization of the checked asset (two queries for the whole range).

    Dagster shows a partition's check status only while the evaluation targets the partition's
    latest materialization; without a target the UI would show no status for a built day.
    """
    instance = context.instance
    latest = instance.event_log_storage.get_latest_storage_id_by_partition(
        asset_key, dg.DagsterEventType.ASSET_MATERIALIZATION, set(days)
    )
    if not latest:
        return {}
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, storage_ids=sorted(latest.values())), limit=len(latest)
    ).records
    by_id = {r.storage_id: r for r in records}
    return {
        day: AssetCheckEvaluationTargetMaterializationData(
            storage_id=sid, run_id=by_id[sid].run_id, timestamp=by_id[sid].timestamp
        )
        for day, sid in latest.items()
        if sid in by_id
    }


def verdict(
    context: dg.AssetCheckExecutionContext,
    days: Sequence[str],
    problems_of: Callable[[str], list[str]],
    extra: Mapping[str, Any] | None = None,
    extra_of: Callable[[str], Mapping[str, Any]] | None = None,
) -> CheckEvents:
    """The check's result on each day of the run: one evaluation per day partition.

    A run over a day range would otherwise record one result for the whole run and none on the
    days, so the UI could not show a day's status. Each evaluation carries that day's problems
    (``extra`` is the same for every day, ``extra_of(day)`` is the day's own). Every day is
    judged here, before returning, because ``problems_of`` may use a connection the caller closes
    on return. Any failed day fails the step (the evaluations are blocking), hence the run.
    """
    found = {day: problems_of(day) for day in days}
    spec = context.check_specs[0]  # each of our check ops evaluates exactly one check
    targets = _latest_materializations(context, spec.asset_key, days)
    # The check's output carries no value, but Dagster only yields it for us from an
    # AssetCheckResult; with evaluations it has to be yielded here.
    output_name = context.op_def.output_defs[0].name

    def events() -> CheckEvents:
        yield dg.Output(None, output_name=output_name)
        for day in days:
            problems = found[day]
            meta: dict[str, Any] = {"problems": len(problems), "days in run": len(days)}
            if problems:
                meta["details"] = dg.MetadataValue.md("\n".join(f"- {p}" for p in problems[:MAX_LISTED]))
            meta.update(extra or {})
            meta.update(extra_of(day) if extra_of else {})
            yield dg.AssetCheckEvaluation(
                asset_key=spec.asset_key,
                check_name=spec.name,
                passed=not problems,
                metadata=meta,
                target_materialization_data=targets.get(day),
                description=problems[0] if problems else None,
                blocking=spec.blocking,
                partition=day,
            )

    return events()


def build_checks(published_day: dg.AssetsDefinition, partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    @dg.asset_check(  # type: ignore[arg-type]  # see CheckEvents
        asset=published_day,
        name=RECOMPILE,
        blocking=True,
        partitions_def=partitions,
        description="The day compiled from the event log in a separate process with another TZ and "
        "PYTHONHASHSEED: its canonical bytes and renderings must equal the published files and the warehouse.",
    )
    def byte_identical_recompile(
        context: dg.AssetCheckExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> CheckEvents:
        fresh = rebuild.fresh_build(data_folder.home, data_folder.include_typed_text)
        with warehouse.get_connection() as con:

            def problems(day: str) -> list[str]:
                row = con.execute("SELECT sha256 FROM day_document WHERE day = ?", [day]).fetchone()
                return recompile.compare(data_folder.published_dir, fresh.published, day, row[0] if row else "missing")

            return verdict(
                context,
                _days(context),
                problems,
                {"other process TZ": fresh.env.get("TZ", ""), "other process PYTHONHASHSEED": fresh.env.get("PYTHONHASHSEED", "")},
            )

    @dg.asset_check(  # type: ignore[arg-type]  # see CheckEvents
        asset=published_day,
        name=REBUILD,
        blocking=True,
        partitions_def=partitions,
        description="A fresh warehouse rebuilt from the whole log in one run must hold the same rows for the "
        "day, in every table, as the warehouse built day by day.",
    )
    def rebuild_equals_incremental(
        context: dg.AssetCheckExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> CheckEvents:
        days = _days(context)
        # Our side first (one scan per table), while the other process may still be building.
        with warehouse.get_connection() as con:
            live = store.digests(con, days)
        fresh = rebuild.fresh_build(data_folder.home, data_folder.include_typed_text)
        return verdict(context, days, lambda day: rebuild.compare_tables(live[day], fresh, day), {"fresh days": len(fresh.digests)})

    @dg.asset_check(  # type: ignore[arg-type]  # see CheckEvents
        asset=published_day,
        name=APPEND_ONLY,
        op_tags=RUN_FIRST,
        blocking=True,
        partitions_def=partitions,
        description="Sealed segments match the log's hash-chained manifest, and the published files of this "
        "and every earlier sealed day match their manifests and the segments they came from.",
    )
    def append_only(context: dg.AssetCheckExecutionContext, data_folder: DataFolder) -> CheckEvents:
        log = data_folder.log()
        memo: dict[str, list[str] | None] = {}  # each earlier published day verified once per run
        return verdict(
            context,
            _days(context),
            lambda day: appendonly.check_day(log, data_folder.published_dir, day, memo),
            {"chain head": log.chain_head() or "-"},
        )

    return [byte_identical_recompile, rebuild_equals_incremental, append_only]
