"""The day-partitioned assets: one multi-asset, ``day_work``, that builds each day of its run once.

    raw_day -> frames, enriched_input, page_refs -> day_document -> context_block -> published_day

Seven asset keys, one step: the days of the run are built by one call of
af_pipeline/warehouse/day_work.py's ``build_days`` (the steps' order is written once, in its
``day_parts``), which reads each day's rows once and hands each part to the next in its own
local variables, so
the graph the UI draws is the flow that runs, on any executor (in-process, multiprocess, dask:
tests/test_executors_bytes.py). Nothing is carried between steps or runs in module state. The
specs keep the deps between the keys (the UI's lineage), and each key gets one materialization
per day partition with that day's own numbers (assets.dagster_adapter.add_day_metadata), also in
a range run; the run's totals per key go to its log. A range of at least
parallel_days.MIN_DAYS sealed days has its days computed ahead on the other cores
(parallel_days.RunParts, made and closed by this call).

The rows of a few days at a time (day_work.JUDGE_EVERY) are committed together (raw and derived
tables, one transaction), then those days' data-quality rules are judged on what they wrote and
each day's files are published, or withheld when a rule is broken (published_day's metadata
says which rule and rows; the data-quality checks of checks/quality.py fail for that day with
the same reason); the other days of a range are published. A failure ends the step: days
committed before it keep what they wrote, and Dagster records no materialization of the run.

A day whose published files already come from the segments the log holds and from this code
version is skipped (assets/unchanged.py): its tables and files stay as they are, and its
partition's new materialization keeps the numbers of the one before (they still hold) with a
separate field, ``unchanged``, saying why it was not built again; the run tag ``af/force``
(``af build --force``) builds it.

A partition is a day of the event log (assets/partitions.py); the step refuses a partition the
log has no capture for (one added by hand in the UI), so no empty document is ever published.
"""


import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.compiler.categories import rules_in
from af_pipeline.warehouse import day_work as steps
from af_pipeline.warehouse import parallel_days
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
OP_NAME = "day_work"  # the one step of a build (what `af build` prints a line for)
__all__ = ["CONTEXT_BUDGET_TOKENS", "ENRICH_KINDS", "OP_NAME", "SNAPSHOTS_ONLY", "build_assets"]

# The seven keys in the steps' order, each with what it reads (the UI's lineage), what it holds
# and how a range's totals are summed in the run log.
SPECS: dict[str, dict[str, Any]] = {
    steps.RAW: {
        "deps": [],
        "kinds": {"duckdb"},
        "description": "The day's rows from the event log (sealed Parquet segments or the open day), "
        "in the raw_* tables of the warehouse.",
    },
    steps.FRAMES: {
        "deps": [steps.RAW],
        "kinds": {"duckdb"},
        "description": "Activity frames per monitor stream: dwell 90 s, session gap 300 s, flicker merge 20 s "
        "(paper 4.2), keyed by (app, site).",
    },
    steps.ENRICHED: {
        "deps": [steps.FRAMES],  # the attribution builds on the frames' timeline of the day's rows
        "kinds": {"duckdb"},
        "description": "Input events re-attributed to the nearest snapshot, clicks resolved against the element "
        "tree, keyboard layout applied (paper 4.3). Typed text stays out unless opted in.",
    },
    steps.PAGE_REFS: {
        "deps": [steps.RAW],
        "kinds": {"duckdb"},
        "description": "Typed page references for every URL of the day (paper 3.3 / 4.4): pure URL parsing.",
    },
    steps.DOCUMENTS: {
        "deps": [steps.FRAMES, steps.ENRICHED, steps.PAGE_REFS],
        "kinds": {"duckdb"},
        "description": "The schema v1 day document (af_pipeline.compiler.compile.compile_day), stored as canonical JSON.",
    },
    steps.CONTEXTS: {
        "deps": [steps.DOCUMENTS],
        "kinds": {"duckdb"},
        "description": f"The compact context block for system prompts (at most {CONTEXT_BUDGET_TOKENS} cl100k tokens).",
    },
    steps.PUBLISHED: {
        "deps": [steps.CONTEXTS],
        "kinds": {"file"},
        "description": "Files for agents under <home>/published/<day>/: document.json/.yaml/.md, context.txt and a "
        "manifest with the sha256 of each, written atomically; append-only once the day is sealed. A day whose "
        "rows break a data-quality rule is not published (its metadata says which rule and rows).",
    },
}


def _sum(key: str) -> Callable[[list[dict]], dict]:
    return lambda rows: {key: sum(int(r.get(key, 0)) for r in rows)}


TOTALS: dict[str, Callable[[list[dict]], dict]] = {
    steps.RAW: _sum("rows_total"),
    steps.FRAMES: lambda r: {
        "frames": sum(x["frames"] for x in r),
        "active_minutes": round(sum(x["active_minutes"] for x in r), 2),
    },
    steps.ENRICHED: _sum("events"),
    steps.PAGE_REFS: _sum("urls"),
    steps.DOCUMENTS: _sum("document_tokens"),
    steps.CONTEXTS: _sum("context_tokens"),
    steps.PUBLISHED: lambda r: {"written": sum(1 for x in r if x["written"]),
                                "withheld": sum(1 for x in r if x.get("withheld"))},
}


def _kept(context: dg.AssetExecutionContext, key: dg.AssetKey, days: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The metadata an unchanged day keeps: its latest materialization's numbers, the UNCHANGED
    field saying why they still hold, and the run that computed them (NUMBERS_FROM)."""
    previous = unchanged.latest_metadata(context.instance, key, days)
    out: dict[str, dict[str, Any]] = {}
    for day in days:
        meta, run_id = previous.get(day, ({}, ""))
        kept = {k: v for k, v in meta.items() if k not in unchanged.NOT_KEPT}
        kept[unchanged.UNCHANGED] = unchanged.REASON
        numbers_from = meta.get(unchanged.NUMBERS_FROM, run_id)
        kept[unchanged.NUMBERS_FROM] = getattr(numbers_from, "value", numbers_from) or "-"
        out[day] = kept
    return out


def _result(context: dg.AssetExecutionContext, step: str, per_day: Mapping[str, dict[str, Any]],
            skipped: Sequence[str]) -> dg.MaterializeResult:
    """Each day's metadata on its own partition of the key (an unchanged day's from its previous
    build, see _kept); a range's totals in the run log only."""
    key = dg.AssetKey(step)
    add_day_metadata(context, {**_kept(context, key, skipped), **per_day}, asset_key=key)
    if len(per_day) > 1:
        sums = ", ".join(f"{k} {v}" for k, v in TOTALS[step](list(per_day.values())).items())
        context.log.info(f"{step}: {len(per_day)} days {min(per_day)} .. {max(per_day)}, {sums}")
    return dg.MaterializeResult(asset_key=key)


PROGRESS_EVERY_S = 15.0
WORKERS_SAID = "day workers"  # the run log's line on the days parallel_days computed ahead


def _for_the_ui(step: str, meta: dict[str, Any]) -> dict[str, Any]:
    if step == steps.PUBLISHED:
        return meta | {"path": dg.MetadataValue.path(meta["path"])}
    return meta


def build_assets(partitions: dg.PartitionsDefinition, pooled: bool = True) -> list[dg.AssetsDefinition]:
    """The day assets over the given day partitions (partitions depend on the data folder): one
    multi-asset with the seven keys, in the warehouse pool unless not ``pooled`` (the dask
    executor: assets.definitions.build_job_on)."""
    version = code_version()
    specs = [
        dg.AssetSpec(
            name,
            deps=spec["deps"],
            kinds=spec["kinds"],
            description=spec["description"],
            group_name=GROUP,
            # What decides the bytes (af_pipeline/warehouse/version.py): a compiler change marks
            # every day stale in the UI.
            code_version=version,
            partitions_def=partitions,
        )
        for name, spec in SPECS.items()
    ]

    @dg.multi_asset(
        name=OP_NAME,
        specs=specs,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=WAREHOUSE_POOL if pooled else None,
        description="Every day of the run built once, in the steps' order (af_pipeline/warehouse/day_work.py: "
        "build_days): raw_day, frames, enriched_input, page_refs, day_document, context_block, published_day.",
    )
    def day_work(context: dg.AssetExecutionContext, data_folder: DataFolder,
                 warehouse: DuckDBResource) -> Iterator[dg.MaterializeResult]:
        log = data_folder.log()
        days = list(context.partition_keys)
        statuses = log.days()
        captured = {d.day for d in statuses}
        absent = [d for d in days if d not in captured]
        if absent:
            raise dg.Failure(
                description=f"no capture for {', '.join(absent)} in the event log of {data_folder.root}: a day "
                "partition is a day of the log; import a capture for it (`af import`), or delete the partition"
            )
        version = code_version()
        typed = data_folder.include_typed_text
        categories = rules_in(data_folder.root)  # once for the run's days
        per_day: dict[str, dict[str, dict[str, Any]]] = {step: {} for step in steps.STEPS}
        with warehouse.get_connection() as con:
            skip: list[str] = []
            if not context.run.tags.get(unchanged.FORCE_TAG):
                stored = unchanged.stored_state(con, days)
                skip = unchanged.split(data_folder.published_dir, log, days, version, stored)[1]
            todo = [d for d in days if d not in skip]
            if skip:
                context.log.info(f"{OP_NAME}: {len(skip)} day(s) skipped, {unchanged.REASON}")
            sealed = {d.day for d in statuses if d.sealed}
            quiet_since = time.monotonic()
            with parallel_days.RunParts() as run:
                # a range's day work starts now on the other cores: sealed days only, an open
                # day may still grow between a worker's read and its build here
                run.start_prefetch(data_folder.root, [d for d in todo if d in sealed], typed, categories)
                built_days = steps.build_days(con, log, todo, data_folder.published_dir, typed, version,
                                              categories, run=run, measure_raw=True)
                for i, (day, built) in enumerate(built_days):
                    published = built[steps.PUBLISHED]
                    if published.get("withheld"):
                        context.log.warning(f"published_day: {day} not published: {published['withheld']}")
                    # what a later build compares to skip the day (assets/unchanged.py)
                    unchanged.record_published(con, data_folder.published_dir, day, version, published)
                    for step, meta in built.items():
                        per_day[step][day] = _for_the_ui(step, meta)
                    # a line in the run's log when a long range has been quiet for a while: each
                    # line is an event Dagster stores (a SQLite write), so not one every day
                    if len(todo) > 1 and time.monotonic() - quiet_since >= PROGRESS_EVERY_S:
                        quiet_since = time.monotonic()
                        context.log.info(f"{OP_NAME}: day {i + 1}/{len(todo)} ({day})")
                if run.prefetch is not None:
                    context.log.info(f"{OP_NAME}: {sum(run.used.values())} of {len(todo)} day(s) computed ahead "
                                     f"({WORKERS_SAID}: {len(run.prefetch.pids)})")
        for step in steps.STEPS:
            yield _result(context, step, per_day[step], skip)

    return [day_work]
