"""Minutes of a part of a day clipped at its edges exactly (issue 38): a window's minutes are the
time inside it, per app, whatever frame or row began before it or ends after it; windows that
tile a day add up to the day; a frame crossing an edge is split. Whole days are unchanged (the
golden files hold that)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from af_pipeline.compiler.compile import CompileOptions, compile_day, window_context
from af_pipeline.interfaces.memory import Memory
from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch, DayCapture, Presence, Snapshot
from capture.timeutil import day_bounds, parse_ts

DAY = "2026-03-16"
US = 1_000_000
DAY_START, DAY_END = day_bounds(DAY, "UTC")
T0 = DAY_START + 9 * 3600 * US
DWELL, GAP = 90 * US, 300 * US


def _capture(rows: list[tuple[int, str, str]]) -> DayCapture:
    """(seconds after 09:00, stream, app) -> a day of instant rows in time order."""
    snaps = [Snapshot(ref=f"t:frames:{i}", ts_us=T0 + s * US, stream=stream, app=app, window=f"{app} window")
             for i, (s, stream, app) in enumerate(sorted(rows))]
    return DayCapture(day=DAY, tz="UTC", snapshots=snaps, recorders=["test"], sealed=True)


def _part(cap: DayCapture, lo: int, hi: int) -> DayCapture:
    """The rows of [lo, hi) and their context (window_context), as the read model slices them."""
    rows = cap.snapshots
    first = next((i for i, s in enumerate(rows) if s.ts_us >= lo), len(rows))
    stop = next((i for i, s in enumerate(rows) if s.ts_us >= hi), len(rows))
    before, after = window_context(rows, first, stop, lo, hi)
    picked = [rows[i] for i in before] + rows[first:stop] + [rows[i] for i in after]
    presence = [replace(p, ts_us=max(p.ts_us, lo), end_us=min(p.end_us, hi))
                for p in cap.presence if p.ts_us < hi and p.end_us > lo]
    return replace(cap, snapshots=picked, presence=presence)


def _minutes(doc: dict, key: str) -> dict[str, float]:
    return {a["app"]: a[key] for a in doc["apps"] if a[key]}


def _oracle(cap: DayCapture, lo: int, hi: int, timeline: bool) -> dict[str, float]:
    """Each row earns [ts, ts + min(gap to the next row, 90 s)), nothing over a 300 s gap (the next
    row of its monitor, or of any monitor on the one timeline), clipped to [lo, hi); per app."""
    out: dict[str, float] = defaultdict(float)
    lines = [sorted(cap.snapshots, key=lambda s: (s.ts_us, s.stream, s.ref))] if timeline else \
        [[s for s in cap.snapshots if s.stream == m] for m in sorted({s.stream for s in cap.snapshots})]
    for rows in lines:
        for r, n in zip(rows, rows[1:], strict=False):
            gap = n.ts_us - r.ts_us
            if gap <= GAP:
                a, b = max(r.ts_us, lo), min(r.ts_us + min(gap, DWELL), hi)
                if b > a:
                    out[r.app] += (b - a) / 60e6
    return {k: round(v, 2) for k, v in out.items() if round(v, 2)}


def _close(got: dict[str, float], want: dict[str, float]) -> bool:
    return all(abs(got.get(k, 0.0) - want.get(k, 0.0)) <= 0.011 for k in set(got) | set(want))


rows_st = st.lists(
    st.tuples(st.integers(0, 3 * 3600), st.sampled_from(["monitor_1", "monitor_2"]), st.sampled_from("ABC")),
    min_size=2, max_size=60, unique_by=lambda r: (r[0], r[1]),
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(rows=rows_st, cuts=st.lists(st.integers(0, 3 * 3600), min_size=1, max_size=4, unique=True))
@example(rows=[(0, "monitor_1", "A"), (30, "monitor_1", "A"), (60, "monitor_1", "B"), (100, "monitor_1", "B")],
         cuts=[45])
@example(rows=[(0, "monitor_1", "A"), (50, "monitor_2", "B"), (80, "monitor_1", "A"), (400, "monitor_2", "C")],
         cuts=[70, 200])
def test_window_minutes_are_the_time_inside_and_windows_tile_the_day(rows, cuts) -> None:
    cap = _capture(rows)
    day = compile_day(cap)
    edges = [DAY_START, *sorted(T0 + c * US for c in cuts), DAY_END]
    sums: dict[str, dict[str, float]] = {"timeline_minutes": defaultdict(float), "minutes": defaultdict(float)}
    for lo, hi in zip(edges, edges[1:], strict=False):
        doc = compile_day(_part(cap, lo, hi), CompileOptions(window=(lo, hi)))
        for key, timeline in (("timeline_minutes", True), ("minutes", False)):
            got = _minutes(doc, key)
            assert _close(got, _oracle(cap, lo, hi, timeline)), (key, lo, hi, got)
            for app, m in got.items():
                sums[key][app] += m
        assert abs(doc["coverage"]["timeline_min"] - sum(_minutes(doc, "timeline_minutes").values())) <= 0.011 * 3
    parts = len(edges) - 1
    for key in sums:  # each window's minutes are rounded to 0.01 on their own
        whole = _minutes(day, key)
        assert all(abs(sums[key].get(a, 0.0) - whole.get(a, 0.0)) <= 0.005 * parts + 1e-9
                   for a in set(whole) | set(sums[key])), (key, dict(sums[key]), whole)


def test_a_frame_crossing_an_edge_is_split_between_the_windows() -> None:
    # one A frame 09:00:00-09:01:30 (rows every 30 s, each earning 30 s), cut at 09:00:45
    cap = _capture([(0, "monitor_1", "A"), (30, "monitor_1", "A"), (60, "monitor_1", "A"),
                    (90, "monitor_1", "B"), (400, "monitor_1", "B")])
    cut = T0 + 45 * US
    first = compile_day(_part(cap, DAY_START, cut), CompileOptions(window=(DAY_START, cut)))
    second = compile_day(_part(cap, cut, DAY_END), CompileOptions(window=(cut, DAY_END)))
    assert _minutes(first, "minutes") == {"A": 0.75}
    assert _minutes(second, "minutes") == {"A": 0.75}  # the row at 09:00:30 earns 15 s on each side
    assert first["coverage"]["last_activity"] == "09:00:45" and second["coverage"]["first_activity"] == "09:00:45"
    assert second["provenance"]["rows"]["snapshots"] == 3  # 09:01:00, 09:01:30, 09:06:40: not the context row
    # a window inside one row's credit: that row's part only, and no other app
    mid = compile_day(_part(cap, T0 + 10 * US, T0 + 20 * US), CompileOptions(window=(T0 + 10 * US, T0 + 20 * US)))
    assert [(a["app"], a["minutes"]) for a in mid["apps"]] == [("A", 0.17)]


def test_afk_time_inside_a_window_is_away_and_outside_it_is_not_counted() -> None:
    # ActivityWatch-style presence: afk from 09:00:40; the rows earn 30 s each
    cap = _capture([(0, "monitor_1", "A"), (30, "monitor_1", "A"), (60, "monitor_1", "A"), (90, "monitor_1", "A")])
    cap.presence = [Presence(ref="t:afk:1", ts_us=T0, end_us=T0 + 40 * US, stream="monitor_1", status="not-afk"),
                    Presence(ref="t:afk:2", ts_us=T0 + 40 * US, end_us=T0 + 600 * US, stream="monitor_1",
                             status="afk")]
    lo, hi = T0 + 20 * US, T0 + 70 * US
    doc = compile_day(_part(cap, lo, hi), CompileOptions(window=(lo, hi)))
    assert _minutes(doc, "minutes") == {"A": round(20 / 60, 2)}  # 09:00:20-09:00:40
    assert doc["coverage"]["presence"]["away_min"] == 0.5  # 09:00:40-09:01:10


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    """Two monitors: the editor on monitor_1 every 40 s from 09:50 to 11:10; a browser on
    monitor_2 every 70 s from 09:55 to 10:30."""
    home = Home(Path(tmp_path_factory.mktemp("window")) / "home")
    home.init(tz="UTC")
    b = CaptureBatch(source_id="window-test", recorder="recorder")
    start = parse_ts(f"{DAY}T09:50:00Z")
    for i in range(0, 80 * 60, 40):
        b.snapshots.append(Snapshot(ref=f"window-test:frames:e{i}", ts_us=start + i * US, stream="monitor_1",
                                    app="Editor", window="main.py"))
    for i in range(300, 40 * 60, 70):
        b.snapshots.append(Snapshot(ref=f"window-test:frames:b{i}", ts_us=start + i * US, stream="monitor_2",
                                    app="Browser", window="docs"))
    EventLog(home).append(b, now_us=parse_ts(f"{DAY}T20:00:00Z"))
    return Memory(home, clock=lambda: parse_ts(f"{DAY}T20:00:00Z"))


def test_memory_period_minutes_are_clipped_and_hours_add_up_to_the_day(mem: Memory) -> None:
    cap = mem.day_capture(DAY)
    whole = {a["app"]: a["minutes"] for a in mem.summary(DAY, top=200)["apps"]}
    total: dict[str, float] = defaultdict(float)
    for h in range(9, 12):
        lo, hi = parse_ts(f"{DAY}T{h:02d}:00:00Z"), parse_ts(f"{DAY}T{h + 1:02d}:00:00Z")
        got = {a["app"]: a["minutes"] for a in mem.summary(mem.period(start=f"{DAY}T{h:02d}:00",
                                                                     end=f"{DAY}T{h + 1:02d}:00"), top=200)["apps"]}
        assert _close({k: v for k, v in got.items() if v}, _oracle(cap, lo, hi, True)), (h, got)
        for app, m in got.items():
            total[app] += m
    assert all(abs(total[a] - whole[a]) <= 0.015 for a in whole), (dict(total), whole)
    # the editor's frame runs 09:50-11:10 and is credited only its part inside each hour
    assert {a["app"]: a["minutes"] for a in mem.summary(mem.period(start=f"{DAY}T11:00", end=f"{DAY}T12:00"),
                                                        top=200)["apps"]} == {"Editor": 9.33}
