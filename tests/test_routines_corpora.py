"""The miner on real and sample corpora: the RPM StudentRecord log and the `af synth` sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from af_pipeline import plans, replay
from af_pipeline import routines as R
from af_pipeline.actions import Action, actions_for_day
from af_pipeline.enrich import enrich
from capture.model import DayCapture
from capture.timeutil import local_day

RPM = Path(__file__).resolve().parents[2] / "shared" / "data" / "rpm" / "StudentRecord.csv"


def day_actions(batch, tz: str = "UTC") -> list[list[Action]]:  # type: ignore[no-untyped-def]
    """A capture batch split into local days, enriched, reduced to actions."""
    days: dict[str, DayCapture] = {}
    for kind in ("snapshots", "inputs", "elements", "streams"):
        for row in getattr(batch, kind):
            day = local_day(row.ts_us, tz)
            getattr(days.setdefault(day, DayCapture(day=day, tz=tz)), kind).append(row)
    return [actions_for_day(d, enrich(days[d])) for d in sorted(days)]


@pytest.fixture(scope="module")
def rpm_days() -> list[list[Action]]:
    if not RPM.exists():
        pytest.skip(f"{RPM} is not present")
    from capture.importers.rpm import read_rpm

    return day_actions(read_rpm(RPM))


def test_rpm_copy_from_sheet_paste_into_form_routine_is_found(rpm_days):
    res = R.mine_days(rpm_days)
    # The task: click a cell in the sheet, copy, click a form field, paste into that same field.
    def copy_paste(r: R.Routine) -> bool:
        s = r.symbols
        for i in range(len(s) - 3):
            if s[i].startswith("click:column ") and s[i + 1] == "copy" and s[i + 2].startswith("click:") \
                    and s[i + 3] == "paste:" + s[i + 2].split(":", 1)[1].rsplit(" [", 1)[0]:
                return True
        return False

    found = [r for r in res.routines if copy_paste(r)]
    assert found, [r.symbols for r in res.routines[:5]]
    top = found[0]
    assert top is res.routines[0]  # it is also the most frequent routine of the log
    assert top.count >= 45  # the log fills about 50 records
    apps = {s.app for s in top.steps}
    assert {"Excel", "Chrome"} <= apps
    # Every occurrence is evidence: RPM rows by line, in time order, one per record.
    starts = [o.start_us for o in top.occurrences]
    assert starts == sorted(starts) and len(set(starts)) == top.count
    assert all(ref.split(":")[-3] == "line" for o in top.occurrences for ref in o.refs)
    h = R.recurrence(res)
    assert h.h_specific > 0.9  # a log of one task repeated: almost every step is routine


def test_rpm_routine_compiles_to_a_browser_replayable_plan(rpm_days):
    res = R.mine_days(rpm_days)
    plan = plans.compile_plan(res.routines[0])
    surfaces = [(s["source_op"], s["surface"]) for s in plan["steps"]]
    assert ("copy", "desktop") in surfaces or ("copy", "web") in surfaces
    assert [s["name"] for s in plan["slots"]] == ["email"]
    # The sheet click and the copy only fetch the value the slot now carries.
    assert replay.preflight(plan, {"email": "x@y.z"}, execute=False, allow_destructive=False) is None
    cost = plans.plan_cost(plan)
    assert cost.plan_tokens > cost.script_tokens > 0
