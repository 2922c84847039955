"""The day-partitioned assets: thin loops over af_pipeline/warehouse/day_work.py, which does each day's work.

    raw_day -> frames, enriched_input, page_refs -> day_document -> context_block -> published_day

Each asset reads its inputs from the warehouse, calls a pure af_pipeline function (through its
step), writes one table (replacing the day) and records what happened. A step's writes for all
its days are one transaction (store.batch): committed together, or none if the step fails (then
Dagster records none of its partitions either); published_day commits day by day, as its files
are written. A run may cover one day
(the UI, the nightly schedule) or a range (``af build``: one run, the in-process executor, every
asset called once with all its days). Each day partition's materialization carries that day's
own numbers, also in a range run; the run's totals go to its log.

A day whose published files already come from the segments the log holds and from this code
version is skipped by every step (assets/unchanged.py): its tables and files stay as they are,
and its partition's new materialization keeps the numbers of the one before (they still hold)
with a separate field, ``unchanged``, saying why it was not built again; the run tag
``af/force`` (``af build --force``) builds it.

A partition is a day of the event log (assets/partitions.py); raw_day refuses a partition the
log has no capture for (one added by hand in the UI), so no empty document is ever published.
"""


import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.compiler.categories import rules_in
from af_pipeline.warehouse import day_work as steps
from af_pipeline.warehouse import publish, quality, store
from af_pipeline.warehouse.day_work import CONTEXT_BUDGET_TOKENS, ENRICH_KINDS, SNAPSHOTS_ONLY
from af_pipeline.warehouse.version import code_version
from assets import unchanged
from assets.dagster_adapter import add_day_metadata
from assets.instance import WAREHOUSE_POOL
from assets.resources import DataFolder

# Single-run backfills and partitioned checks are flagged beta/preview by Dagster 1.13; we pin
# the version and test both, so the warnings only add noise to every command.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)

GROUP = "day"
__all__ = ["CONTEXT_BUDGET_TOKENS", "ENRICH_KINDS", "SNAPSHOTS_ONLY", "build_assets"]


def _days(context: dg.AssetExecutionContext) -> list[str]:
    return list(context.partition_keys)


def _run(context: dg.AssetExecutionContext) -> steps.RunParts:
    """What this run's earlier steps computed for its days (day_work.RunParts: one read per day)."""
    return steps.run_parts(context.run.run_id)


def _split(context: dg.AssetExecutionContext, data_folder: DataFolder, con: Any) -> tuple[list[str], list[str]]:
    """(days to build, days skipped as unchanged) of this run, decided once for all its steps."""
    days = _days(context)
    if context.run.tags.get(unchanged.FORCE_TAG):
        return days, []

    def decide() -> list[str]:
        stored = unchanged.stored_state(con, days)
        return unchanged.split(data_folder.published_dir, data_folder.log(), days, code_version(), stored)[1]

    skip = unchanged.skipped_in_run(context.run.run_id, decide)
    if skip:
        context.log.info(f"{context.asset_key.to_user_string()}: {len(skip)} day(s) skipped, {unchanged.REASON}")
    return [d for d in days if d not in skip], [d for d in days if d in skip]


def _kept(context: dg.AssetExecutionContext, days: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The metadata an unchanged day keeps: its latest materialization's numbers, the UNCHANGED
    field saying why they still hold, and the run that computed them (NUMBERS_FROM)."""
    previous = unchanged.latest_metadata(context.instance, context.asset_key, days)
    out: dict[str, dict[str, Any]] = {}
    for day in days:
        meta, run_id = previous.get(day, ({}, ""))
        kept = {k: v for k, v in meta.items() if k not in unchanged.NOT_KEPT}
        kept[unchanged.UNCHANGED] = unchanged.REASON
        numbers_from = meta.get(unchanged.NUMBERS_FROM, run_id)
        kept[unchanged.NUMBERS_FROM] = getattr(numbers_from, "value", numbers_from) or "-"
        out[day] = kept
    return out


def _result(
    context: dg.AssetExecutionContext, per_day: dict[str, dict[str, Any]], totals: Callable[[list[dict]], dict],
    skipped: Sequence[str] = (),
) -> dg.MaterializeResult:
    """Each day's metadata on its own partition (an unchanged day's from its previous build, see
    _kept); a range's totals in the run log only."""
    add_day_metadata(context, {**_kept(context, skipped), **per_day})
    if len(per_day) > 1:
        sums = ", ".join(f"{k} {v}" for k, v in totals(list(per_day.values())).items())
        context.log.info(f"{context.asset_key.to_user_string()}: {len(per_day)} days {min(per_day)} .. {max(per_day)}, {sums}")
    return dg.MaterializeResult()


def _sum(key: str) -> Callable[[list[dict]], dict]:
    return lambda rows: {key: sum(int(r.get(key, 0)) for r in rows)}


PROGRESS_EVERY_S = 15.0
_last_progress: dict[str, float] = {}


def _progress(context: dg.AssetExecutionContext, name: str, days: Sequence[str], i: int) -> None:
    """A line in the run's log when a long step has been quiet for PROGRESS_EVERY_S: each line is
    an event Dagster stores (a SQLite write), so not one every few days of a range."""
    key = f"{context.run.run_id} {name}"
    now = time.monotonic()
    if i == 0:
        _last_progress[key] = now
    elif len(days) > 1 and now - _last_progress.get(key, now) >= PROGRESS_EVERY_S:
        _last_progress[key] = now
        context.log.info(f"{name}: day {i + 1}/{len(days)} ({days[i]})")
    if i == len(days) - 1:
        _last_progress.pop(key, None)


def build_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    """The asset graph over the given day partitions (partitions depend on the data folder)."""
    common: dict[str, Any] = {
        "partitions_def": partitions,
        "backfill_policy": dg.BackfillPolicy.single_run(),
        "group_name": GROUP,
        "pool": WAREHOUSE_POOL,
        # What decides the bytes (af_pipeline/warehouse/version.py): a compiler change marks every
        # day stale in the UI.
        "code_version": code_version(),
    }

    @dg.asset(
        **common,
        kinds={"duckdb"},
        description="The day's rows from the event log (sealed Parquet segments or the open day), "
        "in the raw_* tables of the warehouse.",
    )
    def raw_day(context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource) -> dg.MaterializeResult:
        log = data_folder.log()
        days = _days(context)
        statuses = log.days()
        captured = {d.day for d in statuses}
        absent = [d for d in days if d not in captured]
        if absent:
            raise dg.Failure(
                description=f"no capture for {', '.join(absent)} in the event log of {data_folder.root}: a day "
                "partition is a day of the log; import a capture for it (`af import`), or delete the partition"
            )
        per_day: dict[str, dict[str, Any]] = {}
        with warehouse.get_connection() as con:
            days, skip = _split(context, data_folder, con)
            # a range's day work starts now on the other cores (parallel_days): sealed days only,
            # an open day may still grow between a worker's read and this step's
            sealed = {d.day for d in statuses if d.sealed}
            _run(context).start_prefetch(data_folder.root, [d for d in days if d in sealed],
                                         data_folder.include_typed_text, rules_in(data_folder.root))
            with store.batch(con):
                for i, day in enumerate(days):
                    per_day[day] = steps.raw_day(con, log, day, _run(context), data_folder.include_typed_text)
                    _progress(context, "raw_day", days, i)
        return _result(context, per_day, _sum("rows_total"), skip)

    @dg.asset(
        **common,
        deps=[raw_day],
        kinds={"duckdb"},
        description="Activity frames per monitor stream: dwell 90 s, session gap 300 s, flicker merge 20 s "
        "(paper 4.2), keyed by (app, site).",
    )
    def frames(context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource) -> dg.MaterializeResult:
        with warehouse.get_connection() as con:
            days, skip = _split(context, data_folder, con)
            with store.batch(con):
                per_day = {day: steps.frames(con, day, _run(context)) for day in days}
        return _result(
            context,
            per_day,
            lambda r: {
                "frames": sum(x["frames"] for x in r),
                "active_minutes": round(sum(x["active_minutes"] for x in r), 2),
            },
            skip,
        )

    @dg.asset(
        **common,
        deps=[frames],  # the attribution builds on the frames' timeline of the day's rows
        kinds={"duckdb"},
        description="Input events re-attributed to the nearest snapshot, clicks resolved against the element "
        "tree, keyboard layout applied (paper 4.3). Typed text stays out unless opted in.",
    )
    def enriched_input(
        context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> dg.MaterializeResult:
        typed = data_folder.include_typed_text
        with warehouse.get_connection() as con:
            days, skip = _split(context, data_folder, con)
            with store.batch(con):
                per_day = {day: steps.enriched_input(con, day, typed, _run(context)) for day in days}
        return _result(context, per_day, _sum("events"), skip)

    @dg.asset(
        **common,
        deps=[raw_day],
        kinds={"duckdb"},
        description="Typed page references for every URL of the day (paper 3.3 / 4.4): pure URL parsing.",
    )
    def page_refs(context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource) -> dg.MaterializeResult:
        with warehouse.get_connection() as con:
            days, skip = _split(context, data_folder, con)
            with store.batch(con):
                per_day = {day: steps.page_refs(con, day, _run(context)) for day in days}
        return _result(context, per_day, _sum("urls"), skip)

    @dg.asset(
        **common,
        deps=[frames, enriched_input, page_refs],
        kinds={"duckdb"},
        description="The schema v1 day document (af_pipeline.compiler.compile.compile_day), stored as canonical JSON.",
    )
    def day_document(
        context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> dg.MaterializeResult:
        typed = data_folder.include_typed_text
        per_day: dict[str, dict[str, Any]] = {}
        with warehouse.get_connection() as con:
            days, skip = _split(context, data_folder, con)
            categories = rules_in(data_folder.root)  # once for the step's days
            with store.batch(con):
                for i, day in enumerate(days):
                    per_day[day] = steps.day_document(con, day, typed, _run(context), categories=categories)
                    _progress(context, "day_document", days, i)
        return _result(context, per_day, _sum("document_tokens"), skip)

    @dg.asset(
        **common,
        deps=[day_document],
        kinds={"duckdb"},
        description=f"The compact context block for system prompts (at most {CONTEXT_BUDGET_TOKENS} cl100k tokens).",
    )
    def context_block(context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource) -> dg.MaterializeResult:
        per_day: dict[str, dict[str, Any]] = {}
        with warehouse.get_connection() as con:
            days, skip = _split(context, data_folder, con)
            with store.batch(con):
                for day in days:
                    meta = steps.context_block(con, day, _run(context))
                    per_day[day] = meta | {"preview": dg.MetadataValue.md(meta["preview"])}
        return _result(context, per_day, _sum("context_tokens"), skip)

    @dg.asset(
        **common,
        deps=[context_block],
        kinds={"file"},
        description="Files for agents under <home>/published/<day>/: document.json/.yaml/.md, context.txt and a "
        "manifest with the sha256 of each, written atomically; append-only once the day is sealed. A day whose "
        "rows break a data-quality rule is not published (its metadata says which rule and rows).",
    )
    def published_day(
        context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> dg.MaterializeResult:
        per_day: dict[str, dict[str, Any]] = {}
        version = code_version()
        with warehouse.get_connection() as con:
            days, skip = _split(context, data_folder, con)
            # the day's quality rules, judged on what this run wrote: a day that breaks one is not
            # published (its data-quality check fails with the same reason), the others are
            withheld = quality.failing_days(con, days)
            for day in days:
                failing = withheld.get(day)
                meta = steps.published_day(con, day, data_folder.published_dir, version, _run(context),
                                           failing.reason if failing else None)
                if meta.get("withheld"):
                    context.log.warning(f"published_day: {day} not published: {meta['withheld']}")
                elif meta["sealed"]:  # what a later build compares to skip the day (assets/unchanged.py)
                    manifest = publish.read_manifest(data_folder.published_dir, day) or {}
                    unchanged.record_built(con, day, version, manifest.get("segments") or {})
                per_day[day] = meta | {"path": dg.MetadataValue.path(meta["path"])}
        return _result(context, per_day, lambda r: {"written": sum(1 for x in r if x["written"]),
                                                    "withheld": sum(1 for x in r if x.get("withheld"))}, skip)

    return [raw_day, frames, enriched_input, page_refs, day_document, context_block, published_day]
