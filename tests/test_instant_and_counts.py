"""Counts named both ways and the instant exactly (issue 38): a short detour folded into a frame is
named by get_activity_at at an instant inside it, and get_day_summary tells "how often was I
interrupted in X" (was_interrupted) from "how often did X interrupt something" (interrupted_others),
with app switches per hour. Over a real event log."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from af_pipeline.interfaces.memory import Memory
from af_pipeline.interfaces.memory.core import BadArgument
from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch, Snapshot
from capture.timeutil import day_bounds, parse_ts, to_datetime

TZ = "Europe/Paris"
DAY = "2026-06-01"
NOW = parse_ts(f"{DAY}T18:00:00+02:00")


def _at(hms: str) -> int:
    return parse_ts(f"{DAY}T{hms}+02:00")


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    """09:00-09:10 in the editor with two 20-second Slack detours (09:03:00 and 09:06:00), then
    09:10-09:20 in Firefox with one 20-second editor detour (09:14:00) and one to another site
    (09:17:00), then the editor again."""
    home = Home(Path(tmp_path_factory.mktemp("counts")) / "home")
    home.init(tz=TZ)
    b = CaptureBatch(source_id="counts-test", recorder="recorder")
    plan: list[tuple[str, str]] = []
    for minute in range(0, 30):
        for sec in (0, 20, 40):
            hms = f"09:{minute:02d}:{sec:02d}"
            app = "Editor" if minute < 10 else "Firefox" if minute < 20 else "Editor"
            if hms in ("09:03:00", "09:06:00"):
                app = "Slack"
            if hms == "09:14:00":
                app = "Editor"
            plan.append((hms, app))
    for i, (hms, app) in enumerate(plan):
        # Firefox on one site, but for 20 s at 09:17 on another: a detour inside the same app
        url = (("https://b.example.org/" if hms == "09:17:00" else "https://a.example.com/")
               if app == "Firefox" else None)
        b.snapshots.append(Snapshot(ref=f"counts-test:frames:{i}", ts_us=_at(hms), stream="monitor_1", app=app,
                                    window=f"{app} window", url=url, source_frame_id=str(i)))
    EventLog(home).append(b, now_us=NOW)
    return Memory(home, clock=lambda: NOW)


def test_a_detour_at_the_asked_instant_is_named(mem: Memory) -> None:
    inside = mem.activity_at(f"{DAY}T09:06:10")["streams"][0]
    assert inside["at"]["app"] == "Editor"
    assert inside["detour"]["app"] == "Slack" and inside["detour"]["at"] == "09:06:00"
    outside = mem.activity_at(f"{DAY}T09:07:30")["streams"][0]
    assert outside["at"]["app"] == "Editor" and "detour" not in outside


def test_interruptions_are_counted_both_ways_and_switches_per_hour(mem: Memory) -> None:
    apps = {a["app"]: a for a in mem.summary(DAY)["apps"]}
    assert apps["Editor"]["was_interrupted"] == {"times": 2, "by": {"Slack": 2}}
    assert apps["Editor"]["interrupted_others"] == {"times": 1, "in": {"Firefox": 1}}
    assert apps["Firefox"]["was_interrupted"] == {"times": 1, "by": {"Editor": 1}}
    assert "interrupted_others" not in apps["Firefox"] and "was_interrupted" not in apps["Slack"]  # none: absent
    assert apps["Slack"]["interrupted_others"] == {"times": 2, "in": {"Editor": 2}}  # the detour app is in the ledger
    switches = mem.summary(DAY)["switches"]
    # Editor -> Firefox, Firefox -> Editor, and three detours there and back
    assert switches == {"total": 8, "per_hour": {f"{DAY} 09": 8}}
    # a period of the first five minutes: one detour (09:03), no change of frame
    part = mem.summary(mem.period(start=f"{DAY}T09:00", end=f"{DAY}T09:05"))
    assert part["switches"]["total"] == 2
    # a period starting with the switch into Firefox counts it (the frame before is outside), and
    # the detour to another site inside Firefox is no switch
    firefox = mem.summary(mem.period(start=f"{DAY}T09:10", end=f"{DAY}T09:20"))
    assert firefox["switches"]["total"] == 3



def test_a_detour_across_a_period_edge_counts_its_return_in_the_period_it_happened(mem: Memory) -> None:
    # the Slack detour runs 09:03:00-09:03:20: the switch there before 09:03:10, the switch back after
    before = mem.summary(mem.period(start=f"{DAY}T09:00", end=f"{DAY}T09:03:10"))["switches"]
    after = mem.summary(mem.period(start=f"{DAY}T09:03:10", end=f"{DAY}T09:05"))["switches"]
    assert (before["total"], after["total"]) == (1, 1)


# ---- the rule: a period's switches are the changes of app between consecutive rows of one monitor,
# each counted at the later row's time, whatever frames and folded detours the rows made

RULE_DAY = "2026-03-16"
RULE_T0 = parse_ts(f"{RULE_DAY}T09:00:00Z")
US = 1_000_000


def _row_switches(rows: list[tuple[int, str, str, str]], lo: int, hi: int) -> int:
    """(seconds after 09:00, monitor, app, site): changes of app between a monitor's consecutive
    rows whose later row is in [lo, hi)."""
    n = 0
    for m in {r[1] for r in rows}:
        mine = sorted(r for r in rows if r[1] == m)
        n += sum(1 for p, q in zip(mine, mine[1:], strict=False)
                 if p[2] != q[2] and lo <= RULE_T0 + q[0] * US < hi)
    return n


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 900), st.sampled_from(["monitor_1", "monitor_2"]),
                               st.sampled_from(["A", "B", "C"]), st.sampled_from(["a.example.com", "b.example.org"])),
                     min_size=2, max_size=40, unique_by=lambda r: (r[0], r[1])),
       cuts=st.lists(st.integers(0, 900), min_size=1, max_size=3, unique=True))
@example(rows=[(0, "monitor_1", "A", "a.example.com"), (10, "monitor_1", "B", "a.example.com"),
               (15, "monitor_1", "A", "a.example.com"), (40, "monitor_1", "A", "a.example.com")], cuts=[12])
# nested detours: A at one site, B, A at another site (folded into B), B, A again; and B, A on two sites, B
@example(rows=[(0, "monitor_1", "A", "x.example.com"), (5, "monitor_1", "B", "x.example.com"),
               (8, "monitor_1", "A", "y.example.org"), (11, "monitor_1", "B", "x.example.com"),
               (14, "monitor_1", "A", "x.example.com"), (40, "monitor_1", "A", "x.example.com")], cuts=[600])
@example(rows=[(0, "monitor_1", "B", "x.example.com"), (5, "monitor_1", "A", "x.example.com"),
               (8, "monitor_1", "A", "y.example.org"), (11, "monitor_1", "A", "x.example.com"),
               (14, "monitor_1", "B", "x.example.com"), (40, "monitor_1", "B", "x.example.com")], cuts=[600])
def test_switches_of_any_period_are_the_rows_changes_of_app(tmp_path_factory: pytest.TempPathFactory,
                                                            rows: list[tuple[int, str, str, str]],
                                                            cuts: list[int]) -> None:
    home = Home(Path(tmp_path_factory.mktemp("switch-rule")) / "home")
    home.init(tz="UTC")
    b = CaptureBatch(source_id="rule", recorder="recorder")
    for i, (s, m, app, site) in enumerate(sorted(rows)):
        b.snapshots.append(Snapshot(ref=f"rule:frames:{i}", ts_us=RULE_T0 + s * US, stream=m, app=app,
                                    window=f"{app} window", url=f"https://{site}/", source_frame_id=str(i)))
    now = parse_ts(f"{RULE_DAY}T20:00:00Z")
    EventLog(home).append(b, now_us=now)
    m = Memory(home, clock=lambda: now)
    start, end = day_bounds(RULE_DAY, "UTC")
    assert m.summary(RULE_DAY, top=1)["switches"]["total"] == _row_switches(rows, start, end)
    edges = [start, *sorted(RULE_T0 + c * US for c in cuts), end]
    for lo, hi in zip(edges, edges[1:], strict=False):
        if lo == start and hi == end:
            continue
        p = m.period(start=to_datetime(lo, "UTC").isoformat(), end=to_datetime(hi, "UTC").isoformat())
        try:
            got = m.summary(p, top=1)["switches"]["total"]
        except BadArgument:  # no row in the period
            got = 0
        assert got == _row_switches(rows, lo, hi), (lo, hi)
