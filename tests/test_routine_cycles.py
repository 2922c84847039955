"""Rotations of one cyclic task are one routine (issue 35): a -> b -> c on one day, b -> c -> a on
the next, c -> a -> b on the third is the same work started at a different step."""

from __future__ import annotations

import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler.actions import Action
from af_pipeline.routines import miner, plans

T0 = 1_772_438_400_000_000  # 2026-03-02T08:00:00Z
SEC = 1_000_000


def day_of(symbols: list[str], day: str, sessions_of: int | None = None) -> list[Action]:
    """One day's actions; with ``sessions_of`` every that many steps start a new session."""
    out = []
    for i, s in enumerate(symbols):
        op, _, target = s.partition(":")
        out.append(Action(
            symbol=s, op=op, target=target, role=None, named=True, app=f"App-{target}", url=None,
            url_template=None, day=day, stream="monitor_1", ts_us=T0 + i * SEC, end_us=T0 + i * SEC,
            session=i // sessions_of if sessions_of else 0, refs=(f"{day}:{i}",),
        ))  # fmt: skip
    return out


def rotate(cycle: list[str], r: int) -> list[str]:
    return cycle[r:] + cycle[:r]


def mine(cycle: list[str], plan: list[tuple[int, int]], separate: bool) -> miner.MiningResult:
    """Day i does the cycle plan[i][1] times, starting at step plan[i][0], either back to back in
    one session or one session per repetition."""
    days = [
        day_of(rotate(cycle, r % len(cycle)) * reps, f"2026-03-{i + 2:02d}", len(cycle) if separate else None)
        for i, (r, reps) in enumerate(plan)
    ]
    return miner.mine_days(days)


CYCLE = ["click:Open", "click:Fill", "click:Save"]


def test_one_routine_for_the_cycle_started_at_three_different_steps() -> None:
    for separate in (False, True):
        res = mine(CYCLE, [(0, 3), (1, 3), (2, 4)], separate)
        table = res.to_dict()["routines"]
        # Not three routines (one per starting step), nor the cycle done twice and a step more.
        assert [(r["symbols"], r["count"]) for r in table] == [(rotate(CYCLE, 2), 10)]
        (r,) = table
        # Steps start where most repetitions started (day 3's Save), and each occurrence says
        # at which step it started; its evidence stays in time order.
        assert [o.get("starts_at_step", 1) for o in r["occurrences"]] == [2] * 3 + [3] * 3 + [1] * 4
        first = r["occurrences"][0]
        assert first["day"] == "2026-03-02" and first["refs"] == ["2026-03-02:0", "2026-03-02:1", "2026-03-02:2"]
        # Each step's app is that of the step's own action in every occurrence.
        assert [(s["symbol"], s["app"], s["app_agreement"]) for s in r["steps"]] == [
            ("click:Save", "App-Save", 1.0), ("click:Open", "App-Open", 1.0), ("click:Fill", "App-Fill", 1.0)]
        assert r["id"] == miner.routine_id(r["symbols"])
        plan = plans.compile_plan(res.routines[0])
        assert plan["occurrences"] == 10 and plan["k"] == 3


def test_equal_starts_choose_the_least_symbols() -> None:
    res = mine(CYCLE, [(1, 3), (2, 3)], separate=True)
    # Fill and Save each started 3 times: the tie goes to the smaller symbols, "click:Fill ...".
    assert [(r.symbols, r.count) for r in res.routines] == [(tuple(rotate(CYCLE, 1)), 6)]


def test_a_sequence_that_is_no_rotation_stays_its_own_routine() -> None:
    other = ["click:Open", "click:Save", "click:Fill"]  # same steps, another order: not a rotation
    days = [day_of(CYCLE * 3, "2026-03-02", 3), day_of(other * 3, "2026-03-03", 3)]
    res = miner.mine_days(days)
    assert sorted((r.symbols, r.count) for r in res.routines) == [(tuple(CYCLE), 3), (tuple(other), 3)]
    assert not any(r.cyclic for r in res.routines)


@st.composite
def cycles(draw: st.DrawFn) -> tuple[list[str], list[int], list[int], bool]:
    k = draw(st.integers(3, 6))
    names = draw(st.lists(st.sampled_from("ABCDEFGHIJ"), min_size=k, max_size=k, unique=True))
    n_days = draw(st.integers(1, 4))
    rotations = draw(st.lists(st.integers(0, k - 1), min_size=n_days, max_size=n_days))
    reps = draw(st.lists(st.integers(3, 5), min_size=n_days, max_size=n_days))
    return [f"click:{c}" for c in names], rotations, reps, draw(st.booleans())


def _as_cycles(res: miner.MiningResult) -> list[tuple[frozenset[tuple[str, ...]], int]]:
    out = []
    for r in res.routines:
        s = r.symbols
        out.append((frozenset(s[i:] + s[:i] for i in range(len(s))), r.count))
    return sorted(out, key=repr)


@given(cycles())
@settings(max_examples=80, deadline=None)
def test_any_rotation_of_a_cycle_yields_the_same_routine_set(drawn) -> None:  # type: ignore[no-untyped-def]
    cycle, rotations, reps, separate = drawn
    res = mine(cycle, list(zip(rotations, reps, strict=True)), separate)
    unrotated = mine(cycle, [(0, n) for n in reps], separate)
    assert _as_cycles(res) == _as_cycles(unrotated) == [(frozenset(tuple(rotate(cycle, i)) for i in range(len(cycle))), sum(reps))]
    # The routine starts at the step most repetitions started at, ties to the least symbols.
    starts: Counter[int] = Counter()
    for r, n in zip(rotations, reps, strict=True):
        starts[r] += n
    best = min(starts, key=lambda r: (-starts[r], rotate(cycle, r)))
    assert list(res.routines[0].symbols) == rotate(cycle, best)
    # Byte-identical output from a second run.
    again = mine(cycle, list(zip(rotations, reps, strict=True)), separate)
    assert json.dumps(res.to_dict(), sort_keys=True) == json.dumps(again.to_dict(), sort_keys=True)
