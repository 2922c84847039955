"""Data-quality checks with Great Expectations 1.x (GX Core, ephemeral context).

dagster-ge only supports GX < 1.0, so these are our own asset checks calling GX directly. Each
check validates every day of its run in one batch and records its result on each day partition
(assets.dagster_adapter.day_check).

GX costs about six seconds of CPU to import (it pulls in scipy, altair, sqlalchemy), more than
certifying a few days costs otherwise, and validating a batch about one more. So each check
first screens its rows in DuckDB, in the warehouse, with a conservative form of every
expectation (:data:`RAW_SCREEN`, :data:`FRAMES_SCREEN`): a row passes the screen only if GX
must pass it too (nulls where GX would ignore them count as failures, a column of any type but
integers and text sends the batch to GX). Days whose rows all pass are reported as passing,
without GX; if any row or day does not pass, the whole batch goes to GX exactly as before, and
GX's verdict and wording are what the check reports. tests/test_quality_screen.py checks the
screen against GX on generated frames: whatever the screen passes, GX passes.

raw_day:  ids unique, keys never null, time order per (kind, stream) in the stored order.
frames:   ids unique, keys never null, time order per stream (a frame never starts before the
          previous one ended), active time never above wall time, and never above the dwell
          cap times the frame's snapshots (each snapshot earns at most the cap).
"""


import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.compiler.sessionize import PAPER_RULES, US
from af_pipeline.warehouse import store
from assets.dagster_adapter import DayResults, day_check
from checks.invariants import RUN_FIRST, day_result, quiet

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


@dataclass(frozen=True)
class Screen:
    """The conservative form of one check's expectations (see the module docstring)."""

    unique: tuple[str, ...]  # ExpectColumnValuesToBeUnique
    not_null: tuple[str, ...]  # ExpectColumnValuesToNotBeNull
    at_least_zero: tuple[str, ...]  # ExpectColumnValuesToBeBetween(min_value=0)
    pairs: tuple[tuple[str, str], ...]  # A >= B, rows with a missing value are GX failures
    pairs_if_both: tuple[tuple[str, str], ...]  # A >= B, ignore_row_if="either_value_is_missing"

    def columns(self) -> set[str]:
        return {*self.unique, *self.not_null, *self.at_least_zero, *(c for p in self.pairs for c in p),
                *(c for p in self.pairs_if_both for c in p)}

    def row_ok(self) -> str:
        """SQL true for a row that every expectation passes (NULL counts as a failure)."""
        q = _quote
        parts = [f"{q(c)} IS NOT NULL" for c in (*self.unique, *self.not_null)]
        parts += [f"({q(c)} IS NOT NULL AND {q(c)} >= 0)" for c in self.at_least_zero]
        parts += [f"({q(a)} IS NOT NULL AND {q(b)} IS NOT NULL AND {q(a)} >= {q(b)})" for a, b in self.pairs]
        parts += [f"({q(a)} IS NULL OR {q(b)} IS NULL OR {q(a)} >= {q(b)})" for a, b in self.pairs_if_both]
        return "COALESCE(" + " AND ".join(parts) + ", FALSE)"


RAW_SCREEN = Screen(unique=("ref",), not_null=("day", "ref", "ts_us", "stream_key", "what"), at_least_zero=(),
                    pairs=(), pairs_if_both=(("ts_us", "prev_ts_us"),))
FRAMES_SCREEN = Screen(unique=("frame_id",), not_null=("frame_id", "stream", "app", "start_us", "end_us"),
                       at_least_zero=("wall_us",), pairs=(("wall_us", "active_us"), ("dwell_cap_us", "active_us")),
                       pairs_if_both=(("start_us", "prev_end_us"),))
# Types whose values compare in DuckDB exactly as GX compares them in pandas (no NaN, no rounding
# that could turn a pass into a failure): anything else is left to GX.
_SCREENABLE = ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT",
               "VARCHAR")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def screen(con: Any, select: str, spec: Screen, days: Sequence[str]) -> dict[str, int] | None:
    """Rows per day if every row of the batch passes the screen (so GX would pass every day);
    None if GX must decide (a row fails the screen, a day has no rows, a column's type is not
    screenable, or an id repeats)."""
    quiet(con)
    types = {str(r[0]): str(r[1]) for r in con.execute(f"DESCRIBE {select}").fetchall()}
    if any(types.get(c) not in _SCREENABLE for c in spec.columns() | {"day"}):
        return None
    found = con.execute(f"SELECT day, count(*), bool_and({spec.row_ok()}) FROM ({select}) GROUP BY day").fetchall()
    rows = {str(day): int(n) for day, n, _ok in found}
    if set(rows) != set(days) or not all(ok for _d, _n, ok in found):
        return None
    for col in spec.unique:  # unique over the whole batch, as GX validates it
        (dup,) = con.execute(
            f"SELECT count(*) FROM (SELECT {_quote(col)} FROM ({select}) GROUP BY 1 HAVING count(*) > 1)"
        ).fetchone()
        if dup:
            return None
    return rows


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
    """Each day's verdict from GX, with the number of rows validated for it."""
    found = validate_days(name, frame, expectations, days)
    rows = frame["day"].value_counts().to_dict() if len(frame) else {}
    extra = {"validated by": "Great Expectations"}
    return {day: day_result(found[day], len(days), {"rows": int(rows.get(day, 0)), **extra}) for day in days}


def checked(con: Any, days: Sequence[str], name: str, select: str, spec: Screen, expectations: Any) -> DayResults:
    """The screen for a batch that passes it, else GX on the batch (see the module docstring)."""
    rows = screen(con, select, spec, days)
    if rows is None:
        return results(days, name, con.execute(select).df(), expectations)
    extra = {"validated by": "DuckDB screen (every row passes; GX runs when one does not)"}
    return {day: day_result([], len(days), {"rows": rows[day], **extra}) for day in days}


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
            return checked(con, days, "raw_rows", raw_sql(days, con), RAW_SCREEN, _raw_expectations)

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
            return checked(con, days, "frames", frames_sql(days), FRAMES_SCREEN, _frames_expectations)

    return [raw_rows_quality, frames_quality]
