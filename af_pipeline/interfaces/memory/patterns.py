"""Workflow patterns, routines and replay plans over a period: the same miner as `af routines`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from af_pipeline.interfaces.memory.core import (
    MAX_PERIOD_DAYS,
    BadArgument,
    Period,
)
from af_pipeline.interfaces.memory.documents import Documents
from af_pipeline.interfaces.memory.paging import fit
from capture.timeutil import hhmmss, parse_day


class Patterns(Documents):
    """Patterns, routines and plans over a period."""

    # ------------------------------------------------------------------ patterns and routines (af_pipeline.routines.miner)

    def day_actions(self, day: str) -> list[Any]:
        """A day's action stream (the input of routine mining), cached while the day is."""
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.routines.report import day_actions

        with self.lock:
            key = (day, self._fingerprint(day))
            hit = self._actions.get(key)
            if hit is None:
                hit = day_actions(self.day_capture(day))
                self._actions = {k: v for k, v in self._actions.items() if k[0] != day}
                while len(self._actions) >= MAX_PERIOD_DAYS + 1:
                    self._actions.pop(next(iter(self._actions)))
                self._actions[key] = hit
            return hit

    def pattern_period(self, days: int | None, day: str | None, hours: float | None, start: str | None,
                       end: str | None) -> Period:
        """A period for patterns and routines; ``days`` = the last N local days up to today."""
        if days is not None:
            if any(v is not None for v in (day, hours, start, end)):
                raise BadArgument("give days or a period (day, hours, start/end), not both")
            if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_PERIOD_DAYS:
                raise BadArgument(f"days must be between 1 and {MAX_PERIOD_DAYS}, not {days!r}")
            first = (parse_day(self.today()) - timedelta(days=days - 1)).isoformat()
            return self.period(start=first, end=self.today())
        if all(v is None for v in (day, hours, start, end)):
            return self.pattern_period(7, None, None, None, None)
        return self.period(day, hours, start, end)

    def _mine(self, p: Period) -> tuple[list[str], list[list[Any]], Any]:
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.routines import miner

        known = set(self.days())
        chosen, per_day = [], []
        for d in p.days:
            if d not in known:
                continue
            acts = [a for a in self.day_actions(d) if p.start_us <= a.ts_us < p.end_us]
            if acts:
                chosen.append(d)
                per_day.append(acts)
        if not per_day:
            raise BadArgument(f"no input actions in {p.label}")
        return chosen, per_day, miner.mine_days(per_day)

    def patterns(self, p: Period | str, top: int = 10) -> dict[str, Any]:
        """Workflow patterns: the same algorithm and output as ``af routines`` (patterns part)."""
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.routines import miner

        p = self.as_period(p)
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 50:
            raise BadArgument(f"top must be between 1 and 50, not {top!r}")
        with self.lock:
            chosen, per_day, mined = self._mine(p)
            wp = miner.workflow_patterns(per_day, self.tz, result=mined, top=top)
        return fit({"period": p.to_json(self.tz), "active_days": chosen, **wp.to_dict()})

    def routines(self, p: Period | str, top: int = 10) -> dict[str, Any]:
        p = self.as_period(p)
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 50:
            raise BadArgument(f"top must be between 1 and 50, not {top!r}")
        with self.lock:
            chosen, _, mined = self._mine(p)
            out = []
            for r in mined.routines[:top]:
                item = {k: v for k, v in r.to_dict(evidence=False).items() if k != "steps"}
                item["examples"] = [{"day": o.day, "at": hhmmss(o.start_us, self.tz), "stream": o.stream}
                                    for o in r.occurrences[:3]]
                out.append(item)
        return fit({"period": p.to_json(self.tz), "active_days": chosen, "total": len(mined.routines),
                    "routines": out,
                    "note": "routine ids are hashes of their steps: get_plan(routine_id) with the same period"})

    def plan(self, routine_id: str, p: Period | str) -> dict[str, Any]:
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.routines import plans

        p = self.as_period(p)
        rid = (routine_id or "").strip()
        if not rid:
            raise BadArgument("routine_id is required (an id from get_routines)")
        with self.lock:
            _, _, mined = self._mine(p)
            routine = next((r for r in mined.routines if r.id == rid), None)
            if routine is None:
                raise BadArgument(f"no routine {rid} among the {len(mined.routines)} mined over {p.label}; "
                                  "call get_routines with the same period for current ids")
            plan = plans.compile_plan(routine)
        return {"routine": rid, "period": p.to_json(self.tz), "plan": plan, "script": plans.minimal_script(plan),
                "note": "a guarded plan: `af replay PLAN.json` checks every guard before acting and runs "
                        "nothing destructive without --allow-destructive"}
