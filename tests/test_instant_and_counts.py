"""Counts named both ways and the instant exactly (issue 38): a short detour folded into a frame is
named by get_activity_at at an instant inside it, and get_day_summary tells "how often was I
interrupted in X" (was_interrupted) from "how often did X interrupt something" (interrupted_others),
with app switches per hour. Over a real event log."""

from __future__ import annotations

from pathlib import Path

import pytest

from af_pipeline.interfaces.memory import Memory
from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch, Snapshot
from capture.timeutil import parse_ts

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

