"""Data-quality checks with Great Expectations 1.x (GX Core, ephemeral context).

dagster-ge only supports GX < 1.0, so these are our own asset checks calling GX directly. The
rules are af_pipeline/warehouse/quality.py's (one home: each stated for what a source measures);
here each rule becomes its GX expectation. Each check validates every day of its run in one
batch and records its result on each day partition (assets.dagster_adapter.day_check). They are
not blocking: a day that breaks a rule is kept from being published by the build itself
(day_work.published_day), and the other days of a range are published; `af build` exits 1
naming the day, the check and the reason.

GX costs about six seconds of CPU to import (it pulls in scipy, altair, sqlalchemy), more than
certifying a few days costs otherwise, and validating a batch about one more. So each check
first screens its rows in DuckDB with every rule (quality.screen): a batch passes the screen only
if GX must pass it too (nulls where GX would ignore them count as failures, a column of any type
but integers and text sends the batch to GX). Days whose rows all pass are reported as passing,
without GX; otherwise the whole batch goes to GX, and GX's verdict is what the check reports,
with the failing row ids of each broken rule (quality.violations). tests/test_quality_screen.py
checks the screen against GX on generated rows.
"""


import os
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.warehouse import quality as rules
from af_pipeline.warehouse.quality import FRAMES_QUALITY, RAW_QUALITY
from assets.dagster_adapter import DayResults, day_check
from checks.invariants import RUN_FIRST, day_result

__all__ = ["FRAMES_QUALITY", "RAW_QUALITY", "build_checks", "expectations", "validate", "validate_days"]


def expectations(spec: rules.Spec) -> Callable[[Any], list[Any]]:
    """The GX expectations of a rule set (given the gx module, imported only when needed)."""

    def make(gx: Any) -> list[Any]:
        E = gx.expectations
        out = []
        for r in spec.rules:
            if r.kind == "unique":
                out.append(E.ExpectColumnValuesToBeUnique(column=r.columns[0]))
            elif r.kind == "not_null":
                out.append(E.ExpectColumnValuesToNotBeNull(column=r.columns[0]))
            elif r.kind == "at_least_zero":
                out.append(E.ExpectColumnValuesToBeBetween(column=r.columns[0], min_value=0))
            elif r.kind == "pair":
                out.append(E.ExpectColumnPairValuesAToBeGreaterThanB(
                    column_A=r.columns[0], column_B=r.columns[1], or_equal=True))
            else:
                out.append(E.ExpectColumnPairValuesAToBeGreaterThanB(
                    column_A=r.columns[0], column_B=r.columns[1], or_equal=True,
                    ignore_row_if="either_value_is_missing"))
        return out

    return make


@lru_cache(maxsize=1)
def _gx() -> Any:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx  # Great Expectations (~2 s): only when a quality check runs

    return gx


@lru_cache(maxsize=1)
def _context() -> Any:
    gx = _gx()
    ctx = gx.get_context(mode="ephemeral")
    try:  # progress bars would flood the run log
        ctx.variables.progress_bars = {"globally": False, "metric_calculations": False}
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    return ctx


def validate(name: str, frame: Any, expectations: list[Any]) -> list[str]:
    """Run expectations on a pandas frame; one sentence per failed expectation."""
    gx = _gx()
    ctx = _context()
    try:
        source = ctx.data_sources.get(name)
    except (KeyError, ValueError):
        source = ctx.data_sources.add_pandas(name)
    try:
        asset = source.get_asset(name)
    except (LookupError, ValueError):
        asset = source.add_dataframe_asset(name)
    try:
        batch_def = asset.get_batch_definition("run")
    except (KeyError, LookupError, ValueError):
        batch_def = asset.add_batch_definition_whole_dataframe("run")
    batch = batch_def.get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name=name)
    for e in expectations:
        suite.add_expectation(e)
    result = batch.validate(suite)
    problems = []
    for r in result.results:
        if r.success:
            continue
        cfg = r.expectation_config
        kwargs = {k: v for k, v in cfg.kwargs.items() if k in ("column", "column_A", "column_B", "or_equal")}
        count = (r.result or {}).get("unexpected_count", "?")
        problems.append(f"{name}: {cfg.type} {kwargs} failed on {count} rows")
    return problems


def validate_days(name: str, frame: Any, expectations: Any, days: Sequence[str]) -> dict[str, list[str]]:
    """Validate all the days in one GX batch; on failure, find which days fail: {day: problems}.

    The lag columns are computed per day, so each day's rows validate on their own; the per-day
    pass only runs when the batch failed, so a clean range costs one validation per check. A
    failure no single day shows (an id repeated across two days) belongs to the whole range:
    every day gets it.
    """
    problems = validate(name, frame, expectations(_gx()))
    if not problems:
        return {day: [] for day in days}
    if len(days) == 1:
        return {days[0]: problems}
    by_day = {day: validate(name, frame[frame["day"] == day], expectations(_gx())) for day in days}
    if not any(by_day.values()):
        return {day: problems for day in days}
    return by_day


def checked(con: Any, days: Sequence[str], spec: rules.Spec) -> DayResults:
    """The screen for a batch that passes it, else GX on the batch (see the module docstring).
    A failing day's description is the broken rule with its row ids, GX's wording in details."""
    select = rules.select(spec, days, con)
    rows = rules.screen(con, select, spec, days)
    if rows is not None:
        screened = {"validated by": "DuckDB screen (every row passes; GX runs when one does not)"}
        return {day: day_result([], len(days), {"rows": rows[day], **screened}) for day in days}
    frame = con.execute(select).df()
    found = validate_days(spec.check, frame, expectations(spec), days)
    named = rules.violations(con, select, spec)
    counts = frame["day"].value_counts().to_dict() if len(frame) else {}
    out = {}
    for day in days:
        gx_says = found[day]
        # GX decides; the rule sentences with row ids come first when GX fails the day
        problems = [*named.get(day, []), *gx_says] if gx_says else []
        extra: dict[str, Any] = {"rows": int(counts.get(day, 0)), "validated by": "Great Expectations"}
        if gx_says:
            extra["withheld"] = "the day is not published until its rows pass"
        out[day] = day_result(problems, len(days), extra)
    return out


def build_checks(raw_day: dg.AssetsDefinition, frames: dg.AssetsDefinition, partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    @day_check(
        asset=raw_day,
        name=RAW_QUALITY,
        op_tags=RUN_FIRST,
        partitions_def=partitions,
        blocking=False,
        description="GX: raw row ids unique, keys not null, snapshots and inputs in time order per stream, "
        "spans and presence intervals never ending before they start.",
    )
    def raw_rows_quality(context: dg.AssetCheckExecutionContext, warehouse: DuckDBResource) -> DayResults:
        days = list(context.partition_keys)
        with warehouse.get_connection() as con:
            return checked(con, days, rules.RAW)

    @day_check(
        asset=frames,
        name=FRAMES_QUALITY,
        op_tags=RUN_FIRST,
        partitions_def=partitions,
        blocking=False,
        description="GX: frame ids unique, keys not null, no overlap per stream, active <= wall, "
        "active <= what the frame's snapshots can earn (90 s per instant snapshot, its span per measured one).",
    )
    def frames_quality(context: dg.AssetCheckExecutionContext, warehouse: DuckDBResource) -> DayResults:
        days = list(context.partition_keys)
        with warehouse.get_connection() as con:
            return checked(con, days, rules.FRAMES)

    return [raw_rows_quality, frames_quality]
