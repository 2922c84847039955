"""Data-quality checks with Great Expectations 1.x (GX Core, ephemeral context).

dagster-ge only supports GX < 1.0, so these are our own asset checks calling GX directly. GX
takes about five seconds to import: it is imported on the first validation, never when the code
location loads. Each check validates every day of its run in one batch and records its result on
each day partition (assets.dagster_adapter.day_check).

raw_day:  ids unique, keys never null, time order per (kind, stream) in the stored order.
frames:   ids unique, keys never null, time order per stream (a frame never starts before the
          previous one ended), active time never above wall time, and never above the dwell
          cap times the frame's snapshots (each snapshot earns at most the cap).
"""


import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.compiler.sessionize import PAPER_RULES, US
from af_pipeline.warehouse import store
from assets.dagster_adapter import DayResults, day_check
from checks.invariants import RUN_FIRST, day_result

RAW_QUALITY = "raw_rows_quality"
FRAMES_QUALITY = "frames_quality"
DWELL_CAP_US = PAPER_RULES.dwell_s * US


def _in_days(days: Sequence[str]) -> str:
    return ", ".join("'" + d.replace("'", "''") + "'" for d in days)


def raw_sql(days: Sequence[str], con: Any = None) -> str:
    """Snapshots and input events of the days, with each row's predecessor in its (kind, stream).
    With the warehouse connection, only the days' own files are read (store.days_relation)."""
    inside = _in_days(days)
    snapshots, inputs = (
        (store.days_relation(con, "snapshots", days), store.days_relation(con, "inputs", days)) if con is not None
        else ("raw_snapshots", "raw_inputs")
    )
    return f"""
        SELECT day, 'snapshots' AS kind, seq, ref, ts_us, stream AS stream_key, app AS what,
               lag(ts_us) OVER (PARTITION BY day, stream ORDER BY seq) AS prev_ts_us
        FROM {snapshots} WHERE day IN ({inside})
        UNION ALL
        SELECT day, 'inputs' AS kind, seq, ref, ts_us, COALESCE(stream, '') AS stream_key, kind AS what,
               lag(ts_us) OVER (PARTITION BY day, COALESCE(stream, '') ORDER BY seq) AS prev_ts_us
        FROM {inputs} WHERE day IN ({inside})
    """


def frames_sql(days: Sequence[str]) -> str:
    return f"""
        SELECT day, frame_id, stream, app, start_us, end_us, wall_us, active_us, snapshots,
               snapshots * {DWELL_CAP_US} AS dwell_cap_us,
               lag(end_us) OVER (PARTITION BY day, stream ORDER BY start_us, seq) AS prev_end_us
        FROM frames WHERE day IN ({_in_days(days)})
    """


def _raw_expectations(gx: Any) -> list[Any]:
    E = gx.expectations
    return [
        E.ExpectColumnValuesToBeUnique(column="ref"),
        *(E.ExpectColumnValuesToNotBeNull(column=c) for c in ("day", "ref", "ts_us", "stream_key", "what")),
        E.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="ts_us", column_B="prev_ts_us", or_equal=True, ignore_row_if="either_value_is_missing"
        ),
    ]


def _frames_expectations(gx: Any) -> list[Any]:
    E = gx.expectations
    return [
        E.ExpectColumnValuesToBeUnique(column="frame_id"),
        *(E.ExpectColumnValuesToNotBeNull(column=c) for c in ("frame_id", "stream", "app", "start_us", "end_us")),
        E.ExpectColumnValuesToBeBetween(column="wall_us", min_value=0),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="wall_us", column_B="active_us", or_equal=True),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="dwell_cap_us", column_B="active_us", or_equal=True),
        E.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="start_us", column_B="prev_end_us", or_equal=True, ignore_row_if="either_value_is_missing"
        ),
    ]


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
        sample = (r.result or {}).get("partial_unexpected_list", [])[:3]
        count = (r.result or {}).get("unexpected_count", "?")
        problems.append(f"{name}: {cfg.type} {kwargs} failed on {count} rows (e.g. {sample})")
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


def results(days: Sequence[str], name: str, frame: Any, expectations: Any) -> DayResults:
    """Each day's verdict, with the number of rows validated for it."""
    found = validate_days(name, frame, expectations, days)
    rows = frame["day"].value_counts().to_dict() if len(frame) else {}
    return {day: day_result(found[day], len(days), {"rows": int(rows.get(day, 0))}) for day in days}


def build_checks(raw_day: dg.AssetsDefinition, frames: dg.AssetsDefinition, partitions: dg.PartitionsDefinition) -> list[dg.AssetChecksDefinition]:
    @day_check(
        asset=raw_day,
        name=RAW_QUALITY,
        op_tags=RUN_FIRST,
        partitions_def=partitions,
        description="GX: raw snapshot and input ids unique, keys not null, time order per stream.",
    )
    def raw_rows_quality(context: dg.AssetCheckExecutionContext, warehouse: DuckDBResource) -> DayResults:
        days = list(context.partition_keys)
        with warehouse.get_connection() as con:
            frame = con.execute(raw_sql(days, con)).df()
        return results(days, "raw_rows", frame, _raw_expectations)

    @day_check(
        asset=frames,
        name=FRAMES_QUALITY,
        op_tags=RUN_FIRST,
        partitions_def=partitions,
        description="GX: frame ids unique, keys not null, no overlap per stream, active <= wall, "
        "active <= dwell cap x snapshots.",
    )
    def frames_quality(context: dg.AssetCheckExecutionContext, warehouse: DuckDBResource) -> DayResults:
        days = list(context.partition_keys)
        with warehouse.get_connection() as con:
            frame = con.execute(frames_sql(days)).df()
        return results(days, "frames", frame, _frames_expectations)

    return [raw_rows_quality, frames_quality]
