"""Routine assets over every built day: routine_table, recurrence, replay_plans, overhead_ratio.

One multi-asset, because all four are views of one mining pass (mining and the holdout are the
expensive part; doing them once per run is the point). The day assets stay as they are: these
read the raw rows of every day in the warehouse and hand their action streams to
af_pipeline.routines.report, the same report `af routines` prints. Nothing here mines or prices
anything itself.

Deterministic by construction: no wall-clock value is stored or hashed (the report's timings
are not used), tables are replaced whole in one transaction, and plan files are written
atomically from canonical JSON. The tables have no ``seq`` column on purpose: they are not per
day, so the per-day rebuild comparison of the certification (store.digests) skips them.
"""


from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.compiler.actions import Action
from af_pipeline.routines import miner, plans, report
from af_pipeline.routines.report import INDEX
from af_pipeline.warehouse import store
from af_pipeline.warehouse.version import code_version
from assets.day_assets import ENRICH_KINDS
from assets.instance import WAREHOUSE_POOL
from assets.resources import DataFolder
from capture.files import sha256_file

GROUP = "routines"
ROUTINE_TABLE = "routine_table"
RECURRENCE = "recurrence"
REPLAY_PLANS = "replay_plans"
OVERHEAD = "overhead_ratio"
THREE_ARM = "three_arm"
PLANS_SUBDIR = "routines"  # <published>/routines/: not a day folder, so day readers skip it
PREVIEW_ROWS = 10

ROUTINE_COLUMNS = {
    "rank": "BIGINT",  # 1 = most frequent (the miner's order: count, then length)
    "routine": "VARCHAR",
    "k": "BIGINT",
    "count": "BIGINT",
    "raw_count": "BIGINT",
    "symbols": "VARCHAR",  # JSON list
    "targets": "VARCHAR",  # JSON list
    "days": "VARCHAR",  # JSON list
    "steps": "VARCHAR",  # JSON list of step records
    "occurrences": "VARCHAR",  # JSON list: day, stream, session, start_us, end_us, input refs
}
RECURRENCE_COLUMNS = {
    "scope": "VARCHAR",  # overall | day | holdout_train | holdout_test | holdout_test_day
    "on_day": "VARCHAR",  # the day for per-day rows, else NULL
    "steps": "BIGINT",
    "h_raw": "DOUBLE",  # NULL for holdout rows (the holdout measures routine hits only)
    "h_specific": "DOUBLE",  # holdout rows: the share of steps inside a known routine
}
OVERHEAD_COLUMNS = {
    "metric": "VARCHAR",  # r_inject | r_info | plan_tokens | script_tokens
    "resolution": "VARCHAR",  # NULL for token counts
    "median": "DOUBLE",
    "q1": "DOUBLE",
    "q3": "DOUBLE",
    "label": "VARCHAR",
}
THREE_ARM_COLUMNS = {
    "arm": "VARCHAR",
    "tokens": "BIGINT",
    "usd": "DOUBLE",
    "saving_vs_a": "DOUBLE",
    "reduction_x": "DOUBLE",
    "label": "VARCHAR",
}


class RoutinesConfig(dg.Config):
    top: int = 20  # routines compiled into plans and priced on the R ladder
    train_fraction: float = miner.PAPER_TRAIN_FRACTION  # holdout: share of active days fitted on


def action_days(con: Any, log: dg.DagsterLogManager | None = None) -> list[list[Action]]:
    """Every warehouse day's action stream (oldest first), days without actions left out."""
    if store.RAW_DAYS not in store.tables(con):
        return []
    days = [str(d) for (d,) in con.execute(f"SELECT day FROM {store.RAW_DAYS} ORDER BY day").fetchall()]
    out = []
    for i, day in enumerate(days):
        acts = report.day_actions(store.load_capture(con, day, ENRICH_KINDS, lazy_elements=True))
        if acts:
            out.append(acts)
        if log is not None and (i % 10 == 0 or i == len(days) - 1):
            log.info(f"routines: read day {i + 1}/{len(days)} ({day})")
    return out


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> dg.MetadataValue:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return dg.MetadataValue.md("\n".join(lines))


def _symbols(symbols: Sequence[str], width: int = 100) -> str:
    text = " > ".join(symbols)
    return text if len(text) <= width else text[: width - 1] + "…"


def build_assets(raw_day: dg.AssetKey) -> list[dg.AssetsDefinition]:
    """The routine assets; they depend on every partition of raw_day (the rows they read)."""
    common: dict[str, Any] = {"group_name": GROUP, "code_version": code_version()}
    specs = [
        dg.AssetSpec(
            ROUTINE_TABLE,
            deps=[raw_day],
            kinds={"duckdb"},
            description="Maximal routines mined over every day in the warehouse (>= 3 actions, >= 3 "
            "non-overlapping occurrences, >= 2 named targets), with every occurrence as evidence.",
            **common,
        ),
        dg.AssetSpec(
            RECURRENCE,
            deps=[ROUTINE_TABLE],
            kinds={"duckdb"},
            description="Recurrence h_raw and h_specific per day and overall, and the temporal holdout "
            "(in-sample on the first days vs out-of-sample on the rest).",
            **common,
        ),
        dg.AssetSpec(
            REPLAY_PLANS,
            deps=[ROUTINE_TABLE],
            kinds={"file"},
            description="Guarded skill plans (.json) and minimal replay scripts (.txt) of the top routines, "
            "written atomically under <published>/routines/ with an index of their sha256.",
            **common,
        ),
        dg.AssetSpec(
            OVERHEAD,
            deps=[REPLAY_PLANS],
            kinds={"duckdb"},
            description="The R ladder (R_inject, R_info: medians and IQRs per screen size) of the top routines' "
            "plans and the three-arm cost comparison. MODELED: priced from artifacts, not billed.",
            **common,
        ),
    ]

    @dg.multi_asset(specs=specs, pool=WAREHOUSE_POOL, name="mine_routines")
    def mine_routines(
        context: dg.AssetExecutionContext, config: RoutinesConfig, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> Iterator[dg.MaterializeResult]:
        if config.top < 1:
            raise dg.Failure(f"routines config: top must be at least 1, not {config.top}")
        if not 0.0 < config.train_fraction < 1.0:
            raise dg.Failure(f"routines config: train_fraction must be between 0 and 1, not {config.train_fraction}")
        with warehouse.get_connection() as con:
            days = action_days(con, context.log)
            context.log.info(f"routines: mining {sum(len(d) for d in days):,} actions over {len(days)} days")
            built = report.build(days, config.top, config.train_fraction)
            h, ho, costs = built.recurrence, built.holdout, built.costs
            table = built.mined.to_dict(evidence=True)
            n = store.replace_table(con, ROUTINE_TABLE, ROUTINE_COLUMNS, routine_rows(table["routines"]))
            store.replace_table(con, RECURRENCE, RECURRENCE_COLUMNS, recurrence_rows(h.to_dict(), ho.to_dict() if ho else None))
            lad, arms = built.ladder, built.three_arm
            store.replace_table(con, OVERHEAD, OVERHEAD_COLUMNS, overhead_rows(lad))
            store.replace_table(con, THREE_ARM, THREE_ARM_COLUMNS, three_arm_rows(arms))
        folder = data_folder.published_dir / PLANS_SUBDIR
        index = report.publish_plans(folder, built.plans)

        yield dg.MaterializeResult(asset_key=ROUTINE_TABLE, metadata=routine_meta(table, n))
        yield dg.MaterializeResult(asset_key=RECURRENCE, metadata=recurrence_meta(h, ho))
        yield dg.MaterializeResult(asset_key=REPLAY_PLANS, metadata=plans_meta(folder, index, costs))
        yield dg.MaterializeResult(asset_key=OVERHEAD, metadata=overhead_meta(lad, arms))

    return [mine_routines]


# ------------------------------------------------------------------------------ rows and metadata


def routine_rows(routines: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (i, r["id"], r["k"], r["count"], r["raw_count"], r["symbols"], r["targets"], r["days"], r["steps"], r["occurrences"])
        for i, r in enumerate(routines, start=1)
    ]


def recurrence_rows(h: dict[str, Any], ho: dict[str, Any] | None) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = [("overall", None, h["steps"], h["h_raw"], h["h_specific"])]
    rows += [("day", d["day"], d["steps"], d["h_raw"], d["h_specific"]) for d in h["per_day"]]
    if ho:
        rows.append(("holdout_train", None, ho["train_steps"], None, ho["in_sample_h"]))
        rows.append(("holdout_test", None, ho["test_steps"], None, ho["out_of_sample_h"]))
        rows += [("holdout_test_day", d["day"], d["steps"], None, d["hit_rate"]) for d in ho["per_test_day"]]
    return rows


def overhead_rows(lad: dict[str, Any]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for metric in ("r_inject", "r_info"):
        for res, s in lad[metric].items():
            rows.append((metric, res, s["median"], s["q1"], s["q3"], "MODELED"))
    for metric in ("plan_tokens", "script_tokens"):
        s = lad[metric]
        rows.append((metric, None, s["median"], s["q1"], s["q3"], "measured"))
    return rows


_ARMS = (("arm_a_rederive", "A re-derive"), ("arm_b_plan_injected", "B plan injected"), ("arm_c_local_replay", "C local replay"))


def three_arm_rows(arms: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (label, arms[key]["tokens"], arms[key]["usd"], arms[key]["saving_vs_a"], arms[key]["reduction_x"], arms["label"])
        for key, label in _ARMS
    ]


def routine_meta(table: dict[str, Any], stored: int) -> dict[str, Any]:
    top = table["routines"][:PREVIEW_ROWS]
    return {
        "table": ROUTINE_TABLE,
        "routines": stored,
        "days": len(table["days"]),
        "steps": table["steps"],
        "frequent_grams": table["frequent_grams"],
        "routine_signatures": table["routine_signatures"],
        "occurrences": sum(r["count"] for r in table["routines"]),
        "top_routines": _md_table(
            ["#", "count", "k", "days", "routine", "actions"],
            [(i, r["count"], r["k"], len(r["days"]), r["id"], _symbols(r["symbols"])) for i, r in enumerate(top, 1)],
        ),
    }


def recurrence_meta(h: miner.Recurrence, ho: miner.Holdout | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "table": RECURRENCE,
        "steps": h.steps,
        "h_raw": h.h_raw,
        "h_specific": h.h_specific,
        "per_day": _md_table(
            ["day", "steps", "h_raw", "h_specific"], [(d.day, d.steps, d.to_dict()["h_raw"], d.to_dict()["h_specific"]) for d in h.per_day]
        ),
    }
    if ho is None:
        meta["holdout"] = "needs at least 2 active days"
    else:
        meta |= {
            "holdout_train_days": len(ho.train_days),
            "holdout_test_days": len(ho.test_days),
            "holdout_in_sample_h": ho.in_sample,
            "holdout_out_of_sample_h": ho.out_of_sample,
        }
    return meta


def plans_meta(folder: Path, index: dict[str, Any], costs: Sequence[plans.PlanCost]) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "path": dg.MetadataValue.path(str(folder)),
        "plans": len(index["plans"]),
        "index_sha256": sha256_file(folder / INDEX),
        "top_plans": _md_table(
            ["#", "routine", "k", "occurrences", "plan tokens", "script tokens", "guard coverage", "name"],
            [
                (p["rank"], p["routine"], p["k"], p["occurrences"], c.plan_tokens, c.script_tokens, c.guard_coverage, p["name"])
                for p, c in zip(index["plans"][:PREVIEW_ROWS], costs, strict=False)
            ],
        ),
    }
    for p in index["plans"]:
        for ext, sha in p["files"].items():
            meta[f"sha256 {p['routine']}.{ext}"] = sha
    return meta


def overhead_meta(lad: dict[str, Any], arms: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"label": arms["label"], "numerator": lad["numerator"], "routines": lad["routines"]}
    rows = []
    for res in lad["r_inject"]:
        a, b = lad["r_inject"][res], lad["r_info"][res]
        meta[f"r_inject_median {res}"] = a["median"]
        meta[f"r_info_median {res}"] = b["median"]
        rows.append((res, a["median"], f"{a['q1']}-{a['q3']}", b["median"], f"{b['q1']}-{b['q3']}"))
    meta["ladder"] = _md_table(["screen", "R_inject median", "R_inject IQR", "R_info median", "R_info IQR"], rows)
    meta["three_arm (MODELED)"] = _md_table(
        ["arm", "tokens", "USD", "saving vs A"],
        [(label, arms[key]["tokens"], arms[key]["usd"], arms[key]["saving_vs_a"]) for key, label in _ARMS],
    )
    return meta
