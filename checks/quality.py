"""Data-quality checks with Great Expectations 1.x (GX Core, ephemeral context).

dagster-ge only supports GX < 1.0, so these are our own asset checks calling GX directly. The
rules are af_pipeline/warehouse/quality.py's (one home: each stated for what a source measures);
here each rule becomes its GX expectation, and a check's rules are one GX expectation suite.
Each check validates every day of its run in one batch and records its result on each day
partition (assets.dagster_adapter.day_check), with GX's own validation result for that day in the
metadata (GX_RESULT: each expectation, the rows it checked, how many failed and their row ids;
never a value of a row, so never a title, URL or typed text). They are not blocking: a day that
breaks a rule is kept from being published by the build itself (day_work.published_day), and the
other days of a range are published; `af build` exits 1 naming the day, the check and the reason.

GX judges every day the certify job judges (`af certify`, a certify run from the UI). A build
(`af build`, the nightly, the sensor, a materialization from the UI) may first screen its rows in
DuckDB with every rule (quality.screen): GX costs about six seconds of CPU to import (it pulls in
scipy, altair, sqlalchemy), more than building a day costs, and a batch passes the screen only if
GX must pass it too (nulls where GX would ignore them count as failures, a column of any type but
integers and text sends the batch to GX). tests/test_quality_screen.py holds the screen to GX on
generated rows: whatever the screen passes, GX passes. A batch the screen does not pass goes to GX,
and GX's verdict is what the check reports, with the failing row ids of each broken rule
(quality.violations).
"""


import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.warehouse import quality as rules
from af_pipeline.warehouse.quality import FRAMES_QUALITY, RAW_QUALITY
from assets.dagster_adapter import DayResults, day_check
from checks.invariants import RUN_FIRST, day_result

__all__ = ["FRAMES_QUALITY", "GX_RESULT", "RAW_QUALITY", "build_checks", "expectations", "judge_days", "validate", "validate_days"]


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
    import great_expectations as gx  # Great Expectations (~5-6 s of CPU): only when a quality check runs GX

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


GX_RESULT = "great_expectations"  # metadata: GX's validation result for the day (JSON)
SHOWN_ROW_IDS = 20  # failing row ids kept per expectation and day; the counts are always complete
CHECKED_BY_GX = "Great Expectations"
CHECKED_BY_SCREEN = "DuckDB screen (every row passes; GX runs when one does not, and on every certify)"


def run_suite(name: str, frame: Any, expectations: list[Any], index_columns: Sequence[str] = ()) -> Any:
    """GX's validation result of the expectations on a pandas frame (one batch). With
    ``index_columns``, each failing row is named by those columns (GX's unexpected_index_list)."""
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
    result_format: dict[str, Any] = {"result_format": "SUMMARY"}
    if index_columns:
        result_format = {"result_format": "COMPLETE", "unexpected_index_column_names": list(index_columns),
                         "return_unexpected_index_query": False}
    return batch.validate(suite, result_format=result_format)


def _row_id(value: Any) -> str:
    try:
        missing = value is None or bool(value != value)  # None, NaN
    except TypeError:  # pandas' NA has no truth value
        missing = True
    return "(no id)" if missing else str(value)


def _columns(cfg: Any) -> list[str]:
    return [str(cfg.kwargs[k]) for k in ("column", "column_A", "column_B") if cfg.kwargs.get(k) is not None]


def _sentence(name: str, cfg: Any, count: Any) -> str:
    kwargs = {k: v for k, v in cfg.kwargs.items() if k in ("column", "column_A", "column_B", "or_equal")}
    return f"{name}: {cfg.type} {kwargs} failed on {count} rows"


def validate(name: str, frame: Any, expectations: list[Any]) -> list[str]:
    """Run expectations on a pandas frame; one sentence per failed expectation."""
    result = run_suite(name, frame, expectations)
    return [_sentence(name, r.expectation_config, (r.result or {}).get("unexpected_count", "?"))
            for r in result.results if not r.success]


@dataclass
class DayVerdict:
    """What GX says of one day of a batch: its problems (GX's wording) and the validation result
    (expectation, rows checked, failing row ids; never a value of a row) for its metadata."""

    problems: list[str]
    result: dict[str, Any]


def judge_days(name: str, frame: Any, expectations: Any, days: Sequence[str], id_column: str) -> dict[str, DayVerdict]:
    """Validate all the days in one GX batch and give each day GX's result for its own rows.

    Each failing row GX reports is named by (day, id), so a day fails exactly when GX names one
    of its rows. The lag columns are computed per day, so a row's verdict is its day's; a failure
    across days (an id repeated on two days) names a row of each, and fails both. An expectation
    GX fails without naming rows (an error inside GX) fails every day of the batch."""
    gx = _gx()
    result = run_suite(name, frame, expectations(gx), ("day", id_column))
    rows = frame["day"].value_counts().to_dict() if len(frame) else {}
    version = str(getattr(gx, "__version__", ""))
    per_day: dict[str, DayVerdict] = {
        day: DayVerdict([], {"suite": name, "validated by": f"{CHECKED_BY_GX} {version}".strip(),
                             "success": True, "rows checked": int(rows.get(day, 0)),
                             "batch rows": len(frame), "days in batch": len(days), "expectations": []})
        for day in days
    }
    for r in result.results:
        cfg = r.expectation_config
        out = r.result or {}
        failing: dict[str, list[str]] = {day: [] for day in days}
        named = 0
        for row in out.get("unexpected_index_list") or []:
            day = str(row.get("day"))
            if day in failing:
                failing[day].append(_row_id(row.get(id_column)))
                named += 1
        unexplained = not r.success and named == 0
        for day in days:
            ids = sorted(failing[day])
            ok = not ids and not unexplained
            entry: dict[str, Any] = {"expectation": cfg.type, "columns": _columns(cfg), "success": ok,
                                     "rows checked": int(rows.get(day, 0)), "failing rows": len(ids)}
            if ids:
                entry["failing row ids"] = ids[:SHOWN_ROW_IDS]
            if unexplained:
                entry["error"] = "GX failed this expectation on the batch without naming rows"
            verdict = per_day[day]
            verdict.result["expectations"].append(entry)
            if not ok:
                verdict.result["success"] = False
                count = len(ids) if ids else out.get("unexpected_count", "?")
                more = ", ..." if len(ids) > SHOWN_ROW_IDS else ""
                shown = f" ({id_column} {', '.join(ids[:SHOWN_ROW_IDS])}{more})" if ids else ""
                verdict.problems.append(_sentence(name, cfg, count) + shown)
    return per_day


def validate_days(name: str, frame: Any, expectations: Any, days: Sequence[str], id_column: str | None = None) -> dict[str, list[str]]:
    """{day: GX's problems} of one batch (judge_days without the validation results). The rows'
    id column defaults to the check's (``name``), else frame_id or ref, whichever the rows have."""
    if id_column is None:
        ids = {spec.check: spec.id_column for spec in (rules.RAW, rules.FRAMES)}
        id_column = ids.get(name) or ("frame_id" if "frame_id" in frame.columns else rules.RAW.id_column)
    return {day: v.problems for day, v in judge_days(name, frame, expectations, days, id_column).items()}


def checked(con: Any, days: Sequence[str], spec: rules.Spec, screen: bool = True) -> DayResults:
    """GX on the batch, or (``screen``: a build) the screen for a batch that passes it.
    A failing day's description is the broken rule with its row ids, GX's wording in details;
    GX's validation result for the day is in the metadata (GX_RESULT)."""
    rules.quiet(con)  # no DuckDB progress bar on stdout (af certify --json)
    select = rules.select(spec, days, con)
    if screen:
        rows = rules.screen(con, select, spec, days)
        if rows is not None:
            return {day: day_result([], len(days), {"rows": rows[day], "validated by": CHECKED_BY_SCREEN})
                    for day in days}
    # GX gets the rule columns and the day, nothing else (fewer Python strings to make)
    wanted = ", ".join('"' + c.replace('"', '""') + '"' for c in sorted(spec.columns() | {"day", spec.id_column}))
    frame = con.execute(f"SELECT {wanted} FROM ({select})").df()
    found = judge_days(spec.check, frame, expectations(spec), days, spec.id_column)
    named = rules.violations(con, select, spec) if any(v.problems for v in found.values()) else {}
    out = {}
    for day in days:
        verdict = found[day]
        gx_says = verdict.problems
        # GX decides; the rule sentences with row ids come first when GX fails the day
        problems = [*named.get(day, []), *gx_says] if gx_says else []
        extra: dict[str, Any] = {"rows": verdict.result["rows checked"], "validated by": CHECKED_BY_GX,
                                 GX_RESULT: dg.MetadataValue.json(verdict.result)}
        if gx_says:
            extra["withheld"] = "the day is not published until its rows pass"
        out[day] = day_result(problems, len(days), extra)
    return out


def build_checks(raw_day: dg.AssetKey, frames: dg.AssetKey, partitions: dg.PartitionsDefinition,
                 gx_always_in: Collection[str] = ()) -> list[dg.AssetChecksDefinition]:
    """The two checks; in the jobs named in ``gx_always_in`` (certify) GX judges every day, elsewhere
    (a build) the screen may pass a batch without GX."""

    def screen(context: dg.AssetCheckExecutionContext) -> bool:
        return context.run.job_name not in gx_always_in

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
            return checked(con, days, rules.RAW, screen(context))

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
            return checked(con, days, rules.FRAMES, screen(context))

    return [raw_rows_quality, frames_quality]
