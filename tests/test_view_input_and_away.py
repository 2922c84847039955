"""Day pages of input-free sources (issue 35): ActivityWatch records no keys or clicks, so its
frames say "input not recorded", never "0 keys"; and time away from the screen (the afk watcher)
is a visible "away" span on the timeline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import emit, view
from af_pipeline.compiler.away import away_spans
from af_pipeline.compiler.compile import compile_day
from af_pipeline.interfaces import cli
from capture.model import DayCapture, Presence, Snapshot
from capture.timeutil import parse_ts

DAY = "2026-03-15"
T0 = parse_ts("2026-03-15T09:00:00+00:00")
MIN = 60_000_000


def _aw_export(path: Path) -> Path:
    apps = [("Code", "main.py - proj"), ("Google-chrome", "GitHub"), ("gnome-terminal-server", "bash")]
    events = [{"timestamp": f"2026-03-15T09:{m:02d}:00+00:00", "duration": 55.0,
               "data": {"app": apps[m % 3][0], "title": apps[m % 3][1]}} for m in range(60)]
    afk = [("09:00", 1800, "not-afk"), ("09:30", 600, "afk"), ("09:40", 1200, "not-afk")]
    doc = {"buckets": {
        "aw-watcher-window_laptop": {"id": "aw-watcher-window_laptop", "type": "currentwindow",
                                     "client": "aw-watcher-window", "hostname": "laptop", "events": events[::-1]},
        "aw-watcher-afk_laptop": {"type": "afkstatus", "client": "aw-watcher-afk", "hostname": "laptop",
                                  "events": [{"timestamp": f"2026-03-15T{t}:00+00:00", "duration": float(d),
                                              "data": {"status": s}} for t, d, s in afk]},
    }}  # fmt: skip
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def aw_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("aw")
    home = tmp / "home"
    assert cli.main(["import", "activitywatch", str(_aw_export(tmp / "aw.json")), "--home", str(home),
                     "--tz", "UTC"]) == 0  # fmt: skip
    return home


@pytest.fixture(scope="module")
def page(aw_home: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("page") / "day.html"
    assert cli.main(["view", DAY, "--home", str(aw_home), "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_frames_of_an_input_free_source_say_input_not_recorded(page: str) -> None:
    details = re.findall(r"<dt>input</dt><dd>([^<]*)</dd>", page)
    assert len(details) == 50  # every frame's evidence panel
    assert set(details) == {emit.NO_INPUT}
    assert "0 keys" not in page
    assert f"· {emit.NO_INPUT}" in page  # and the day's summary line says it


def test_away_time_is_a_visible_span_on_the_timeline(page: str) -> None:
    spans = re.findall(r'<div class="away" style="left:([0-9.]+)%;width:([0-9.]+)%" title="away ([0-9:]+)–([0-9]{2}:[0-9]{2}:[0-9]{2})', page)
    assert [(a, b) for _l, _w, a, b in spans] == [("09:30:00", "09:40:00")]
    left, width = float(spans[0][0]), float(spans[0][1])
    assert (left, width) == (50.0, pytest.approx(16.667, abs=0.001))  # 09:30-09:40 on a 09:00-10:00 axis
    assert ">away</div>" in page and "away (not at the screen; not active time)" in page
    assert "away 9.2 min" in page


def test_the_page_is_the_same_bytes_every_time(aw_home: Path, page: str, tmp_path: Path) -> None:
    out = tmp_path / "again.html"
    assert cli.main(["view", DAY, "--home", str(aw_home), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == page


def test_the_published_page_draws_the_same_away_spans(aw_home: Path, page: str) -> None:
    """`af build` publishes view.html from the document alone: the away spans are in the
    document (coverage.streams[].away), so the published page shows them as `af view` does."""
    assert cli.main(["build", "--home", str(aw_home)]) == 0
    published = aw_home / "published" / DAY
    doc = json.loads((published / "document.json").read_text(encoding="utf-8"))
    assert [s.get("away") for s in doc["coverage"]["streams"]] == [[["09:30:00", "09:40:00"]]]
    assert (published / "view.html").read_text(encoding="utf-8") == page


def test_a_source_that_records_input_keeps_its_counts() -> None:
    f = {"input": {"keys": 3, "clicks": 1, "scrolls": 0, "text": 0, "chars": 0, "copies": 0, "pastes": 0}}
    assert view._volume(f).startswith("3 keys, 1 clicks")
    assert view._volume({**f, "input_recorded": False}) == emit.NO_INPUT  # a frame of a mixed day
    assert view._volume(f, recorded=False) == emit.NO_INPUT  # a day whose sources record none


def _capture(windows: list[tuple[int, int]], present: list[tuple[int, int]], away: list[tuple[int, int]]) -> DayCapture:
    """Window spans and not-afk / afk intervals, in minutes after 09:00, on one stream."""
    snaps = [Snapshot(ref=f"t:s:{i}", ts_us=T0 + a * MIN, stream="aw:h", app=f"App{i % 3}", window="w",
                      end_us=T0 + b * MIN) for i, (a, b) in enumerate(windows)]  # fmt: skip
    pres = [Presence(ref=f"t:p:{i}", ts_us=T0 + a * MIN, end_us=T0 + b * MIN, status=s, stream="aw:h")
            for i, (a, b, s) in enumerate([(a, b, "not-afk") for a, b in present] + [(a, b, "afk") for a, b in away])]  # fmt: skip
    return DayCapture(day=DAY, tz="UTC", snapshots=snaps, presence=sorted(pres, key=lambda p: (p.ts_us, p.ref)),
                      recorders=["activitywatch"])  # fmt: skip


def _intervals(draw: st.DrawFn, n: int) -> list[tuple[int, int]]:
    cuts = sorted(draw(st.lists(st.integers(0, 600), min_size=2 * n, max_size=2 * n, unique=True)))
    return [(cuts[2 * i], cuts[2 * i + 1]) for i in range(n)]


@st.composite
def days(draw: st.DrawFn) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    windows = _intervals(draw, draw(st.integers(1, 6)))
    present = _intervals(draw, draw(st.integers(0, 4)))
    away = _intervals(draw, draw(st.integers(0, 2)))
    return windows, present, away


def _sec(hms: str) -> int:
    h, m, s = map(int, hms.split(":"))
    return h * 3600 + m * 60 + s


@given(days())
@settings(max_examples=60, deadline=None)
def test_away_spans_are_the_compilers_away_time(drawn) -> None:  # type: ignore[no-untyped-def]
    windows, present, away = drawn
    capture = _capture(windows, present, away)
    spans = away_spans(capture, "UTC", bridge_s=0).get("aw:h", [])
    secs = [(_sec(a), _sec(b)) for a, b in spans]
    assert secs == sorted(secs) and all(a < b for a, b in secs)
    assert all(b1 < a2 for (_a1, b1), (a2, _b2) in zip(secs, secs[1:], strict=False))  # disjoint, merged
    base = 9 * 3600
    for a, b in secs:  # inside window time, outside every not-afk interval
        assert any(base + w0 * 60 <= a and b <= base + w1 * 60 for w0, w1 in windows)
        assert not any(a < base + p1 * 60 and base + p0 * 60 < b for p0, p1 in present)
    doc = compile_day(capture)
    if doc["coverage"].get("presence"):
        assert abs(sum(b - a for a, b in secs) - doc["coverage"]["presence"]["away_min"] * 60) <= 1
    else:
        assert secs == []
