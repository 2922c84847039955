"""One user's share of a team build, without Dagster: every day of their log into their warehouse.

The team's Dagster job (assets/team.py) runs one step per user on whichever executor it is
configured with; the step calls :func:`build_user`, which runs the same per-day steps as the
single-user assets (day_work.build_day, the function certification's rebuild also uses) into
the user's own ``warehouse.duckdb`` and ``published/``. Nothing is written outside the user's
folder, so a user's memory stays theirs. The caller holds the user's warehouse lock (one
writer per DuckDB file).

:func:`user_action_days` reads a user's built days back as action streams, the input of the
cross-user routine miner (af_pipeline/routines/team.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb

from af_pipeline.compiler.actions import Action
from af_pipeline.compiler.categories import rules_in
from af_pipeline.routines import report
from af_pipeline.warehouse import day_work, store
from af_pipeline.warehouse.days import log_days
from af_pipeline.warehouse.version import code_version
from capture.errors import UserError
from capture.home import Home, check_buildable
from capture.log import EventLog


def connect(home: Home) -> duckdb.DuckDBPyConnection:
    check_buildable(home.root)
    return duckdb.connect(str(home.warehouse_path), config={"checkpoint_threshold": "1GB"})


def build_user(home: Home, days: list[str] | None = None,
               on_built: Callable[[Any, str, str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Build the user's log days (all, or ``days``) into their folder; each day's canonical sha256.
    ``on_built(con, day, code_version, published_day numbers)`` runs after each day, on the
    build's connection (the caller's bookkeeping: which days a later run may skip)."""
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder (no af.json)")
    logged = log_days(home)
    chosen = logged if days is None else [d for d in logged if d in set(days)]
    log = EventLog(home)
    version = code_version()
    rules = rules_in(home.root)
    out: dict[str, str] = {}
    con = connect(home)
    try:
        for day, numbers in day_work.build_days(con, log, chosen, home.published_dir, False, version, rules):
            if on_built is not None:
                on_built(con, day, version, numbers[day_work.PUBLISHED])
            row = con.execute(f"SELECT sha256 FROM {day_work.DOCUMENTS} WHERE day = ?", [day]).fetchone()
            out[day] = str(row[0]) if row else ""
    finally:
        con.close()
    return {"days": out, "code_version": version}


def user_action_days(home: Home) -> list[list[Action]]:
    """The action stream of every built day of the user's warehouse (days without actions left out)."""
    if not home.warehouse_path.exists():
        return []
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        if store.RAW_DAYS not in store.tables(con):
            return []
        days = [str(d) for (d,) in con.execute(f"SELECT day FROM {store.RAW_DAYS} ORDER BY day").fetchall()]
        out = []
        for day in days:
            acts = report.day_actions(store.load_capture(con, day, day_work.ENRICH_KINDS, lazy_elements=True))
            if acts:
                out.append(acts)
        return out
    finally:
        con.close()
