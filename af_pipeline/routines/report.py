"""The routine report, in one place: mine -> recurrence -> holdout -> plans -> price.

`af routines` (the log's days), the routine assets (the warehouse's days) and the MCP server's
get_routines / get_plan (a period's days) differ only in where a day's capture comes from. Each
turns a day into its action stream with ``day_actions``; the first two then call ``build`` and
write plan files with ``write_plans`` (the assets through ``publish_plans``, which adds the
index), so a routine gets the same plan bytes whichever way it was mined.

``build`` is a deterministic function of the action streams, except ``mining_seconds`` and
``compile_ms`` (wall-clock measurements for people), which nothing stores or hashes.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from af_pipeline.compiler.actions import Action, actions_for_day
from af_pipeline.compiler.enrich import enrich
from af_pipeline.routines import miner, plans
from af_pipeline.routines.plans import PlanCost
from capture.files import atomic_write, sha256_bytes
from capture.model import DayCapture

INDEX = "index.json"  # not manifest.json: published-day scanners look for that name
_PLAN_FILE = re.compile(r"^r-[0-9a-f]+\.(json|txt)$")


def day_actions(capture: DayCapture) -> list[Action]:
    """A day's action stream, the input of mining: the day enriched, then cut into actions."""
    return actions_for_day(capture.day, enrich(capture))


@dataclass(frozen=True)
class RoutineReport:
    days: Sequence[Sequence[Action]]  # the action stream of each active day, oldest first
    mined: miner.MiningResult
    recurrence: miner.Recurrence
    holdout: miner.Holdout | None  # None below 2 active days: nothing to hold out
    plans: list[dict[str, Any]]  # the compiled plans of the top routines, in rank order
    costs: list[PlanCost]  # one per plan
    ladder: dict[str, Any]
    three_arm: dict[str, Any]
    mining_seconds: float  # wall clock: shown, never stored
    compile_ms: list[float]  # wall clock per plan: shown, never stored


def build(days: Sequence[Sequence[Action]], top: int, train_fraction: float = miner.PAPER_TRAIN_FRACTION) -> RoutineReport:
    """Mine the days, measure recurrence and the holdout, compile and price the top routines."""
    t = time.perf_counter()
    mined = miner.mine_days(days)
    mining_seconds = time.perf_counter() - t
    compiled, compile_ms = [], []
    for routine in mined.routines[:top]:
        t = time.perf_counter()
        compiled.append(plans.compile_plan(routine))
        compile_ms.append((time.perf_counter() - t) * 1000)
    costs = [plans.plan_cost(p) for p in compiled]
    return RoutineReport(
        days=days,
        mined=mined,
        recurrence=miner.recurrence(mined),
        holdout=miner.holdout(days, train_fraction) if len(days) >= 2 else None,
        plans=compiled,
        costs=costs,
        ladder=plans.ladder(costs),
        three_arm=plans.three_arm(costs),
        mining_seconds=mining_seconds,
        compile_ms=compile_ms,
    )


def to_dict(report: RoutineReport, tz: str, top: int, evidence: bool = False) -> dict[str, Any]:
    """Everything `af routines --json` shows: the table of the top routines with each plan's
    price, recurrence, holdout, ladder, three-arm comparison and workflow patterns. Its "timing"
    entry is wall clock; a caller that stores or hashes the dict drops it."""
    table = report.mined.to_dict(top=top, evidence=evidence)
    for row, cost in zip(table["routines"], report.costs, strict=True):
        row["plan"] = cost.to_dict()
    patterns = miner.workflow_patterns(report.days, tz, result=report.mined, top=10)
    return {
        "days": len(report.days),
        "steps": report.recurrence.steps,
        "timing": {
            "mining_seconds": round(report.mining_seconds, 3),
            "compile_ms_median": round(plans.quantile(report.compile_ms, 0.5), 3) if report.compile_ms else None,
        },
        "routines": table,
        "recurrence": report.recurrence.to_dict(),
        "holdout": report.holdout.to_dict() if report.holdout else None,
        "ladder": report.ladder,
        "three_arm": report.three_arm,
        "patterns": patterns.to_dict(),
    }


def plan_files(compiled: Sequence[dict[str, Any]]) -> dict[str, bytes]:
    """The files of the plans: <routine>.json (the guarded plan, for `af replay`) and
    <routine>.txt (the minimal script)."""
    files: dict[str, bytes] = {}
    for plan in compiled:
        body = json.dumps(plan, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        files[f"{plan['routine']}.json"] = body.encode("utf-8")
        files[f"{plan['routine']}.txt"] = plans.minimal_script(plan).encode("utf-8")
    return files


def write_plans(folder: Path, compiled: Sequence[dict[str, Any]]) -> dict[str, bytes]:
    """Write each plan's files atomically (a file already holding the same bytes is left alone,
    so its modification time says when it last changed); return what the folder now holds."""
    folder.mkdir(parents=True, exist_ok=True)
    files = plan_files(compiled)
    for name, data in files.items():
        path = folder / name
        if not path.exists() or path.read_bytes() != data:
            atomic_write(path, data)
    return files


def publish_plans(folder: Path, compiled: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``write_plans``, then the index (last), then drop plan files no longer in the top.

    Returns the index: per plan its rank, name and the sha256 of both files. Only names a plan
    could have (r-<hex>.json / .txt) are ever removed."""
    files = write_plans(folder, compiled)
    index = {
        "plans": [
            {
                "rank": i,
                "routine": p["routine"],
                "name": p["name"],
                "k": p["k"],
                "occurrences": p["occurrences"],
                "files": {ext: sha256_bytes(files[f"{p['routine']}.{ext}"]) for ext in ("json", "txt")},
            }
            for i, p in enumerate(compiled, start=1)
        ],
    }
    atomic_write(folder / INDEX, (json.dumps(index, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    for path in sorted(folder.iterdir()):
        if _PLAN_FILE.match(path.name) and path.name not in files:
            path.unlink()
    return index
