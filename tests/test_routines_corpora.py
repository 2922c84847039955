"""The miner on real and sample corpora: the RPM StudentRecord log and the `af synth` sample."""

from __future__ import annotations

import json
from bisect import bisect_right
from pathlib import Path

import pytest

from af_pipeline.compiler.actions import Action, actions_for_day
from af_pipeline.compiler.enrich import enrich
from af_pipeline.routines import miner, plans, replay
from capture.model import DayCapture
from capture.timeutil import day_bounds, days_between, local_day

RPM = Path(__file__).resolve().parent / "data" / "rpm" / "StudentRecord.csv"  # vendored real RPM log (Apache-2.0, see its README)


def day_actions(batch, tz: str = "UTC") -> list[list[Action]]:  # type: ignore[no-untyped-def]
    """A capture batch split into local days, enriched, reduced to actions."""
    stamps = [r.ts_us for r in batch.inputs] + [r.ts_us for r in batch.snapshots]
    names = days_between(local_day(min(stamps), tz), local_day(max(stamps), tz))
    starts = [day_bounds(d, tz)[0] for d in names]
    days = {d: DayCapture(day=d, tz=tz) for d in names}
    for kind in ("snapshots", "inputs", "elements", "streams"):
        for row in getattr(batch, kind):
            day = names[max(bisect_right(starts, row.ts_us) - 1, 0)]
            getattr(days[day], kind).append(row)
    out = [actions_for_day(d, enrich(days[d])) for d in names]
    return [a for a in out if a]


@pytest.fixture(scope="module")
def rpm_days() -> list[list[Action]]:
    from capture.importers.rpm import read_rpm

    return day_actions(read_rpm(RPM))


def test_rpm_copy_from_sheet_paste_into_form_routine_is_found(rpm_days):
    res = miner.mine_days(rpm_days)
    # The task: copy a cell of the sheet (the copy names its column), click a form field, paste
    # into that same field.
    def copy_paste(r: miner.Routine) -> bool:
        s = r.symbols
        for i in range(len(s) - 2):
            if s[i].startswith("copy:column ") and s[i].endswith(" [cell]") and s[i + 1].startswith("click:") \
                    and s[i + 2] == "paste:" + s[i + 1].split(":", 1)[1].rsplit(" [", 1)[0]:
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
    h = miner.recurrence(res)
    assert h.h_specific > 0.9  # a log of one task repeated: almost every step is routine
    # Routines are as long as the work that repeats (no 60-step cap), and reported maximal.
    assert max(r.k for r in res.routines) > 60
    assert plans.describe(top).startswith("copy column ")


def test_rpm_routine_compiles_to_a_browser_replayable_plan(rpm_days):
    res = miner.mine_days(rpm_days)
    plan = plans.compile_plan(res.routines[0])
    surfaces = [(s["source_op"], s["surface"]) for s in plan["steps"]]
    assert ("copy", "desktop") in surfaces or ("copy", "web") in surfaces
    # The copy's source is a parameter of the plan, and says which slot it fills.
    [copy] = [s for s in plan["steps"] if s["source_op"] == "copy"]
    [source] = plan["sources"]
    assert copy["source"] == source["name"] == "from_" + copy["target"].replace(" ", "_").lower()
    assert source["role"] == "cell" and source["fills"] == [s["name"] for s in plan["slots"]]
    slot = plan["slots"][0]["name"]
    # The sheet click and the copy only fetch the value the slot now carries.
    assert replay.preflight(plan, {slot: "x@y.z"}, execute=False, allow_destructive=False) is None
    cost = plans.plan_cost(plan)
    assert cost.plan_tokens > cost.script_tokens > 0


# ------------------------------------------------------------------------------ the synth sample


def _sample_dir(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    synth = pytest.importorskip("capture.synth")
    try:
        return Path(synth.bundled_sample())
    except Exception:  # no bundled sample in this checkout: generate the same small corpus
        out = tmp_path_factory.mktemp("synth")
        synth.generate(days=5, seed=7, out_dir=out)
        return out


@pytest.fixture(scope="module")
def sample(tmp_path_factory):  # type: ignore[no-untyped-def]
    from capture.importers.screenpipe import read_screenpipe

    folder = _sample_dir(tmp_path_factory)
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    batch = read_screenpipe(folder / "screenpipe.sqlite")
    return truth, day_actions(batch, truth["tz"])


def _event_id(ref: str) -> int | None:
    head, _, tail = ref.rpartition(":")
    return int(tail) if head.endswith(":ui_events") and tail.isdigit() else None


def covered(planted: list[dict], routine: miner.Routine, share: float = 0.6) -> int:
    """Planted occurrences with at least ``share`` of their events inside one mined occurrence."""
    mined = [{_event_id(r) for r in o.refs} for o in routine.occurrences]
    hits = 0
    for occ in planted:
        ids = set(occ["event_ids"])
        if any(len(ids & m) >= share * len(ids) for m in mined):
            hits += 1
    return hits


def test_planted_routines_of_the_sample_corpus_are_found(sample):
    truth, days = sample
    res = miner.mine_days(days)
    assert res.routines
    for name, spec in sorted(truth["routines"].items()):
        planted = spec["occurrences"]
        if len(planted) < 3:
            continue
        best = max(res.routines, key=lambda r, p=planted: covered(p, r))
        assert covered(planted, best) >= 3, f"planted routine {name} not found"
        # ...and the routine found is specific work, naming the planted targets.
        assert len(best.targets) >= 2
    h = miner.recurrence(res)
    assert 0 < h.h_specific <= h.h_raw < 1
