"""The small hand-built day behind the golden files (tests/golden/golden-day.*).

Two monitors, a browser with typed pages, a 12-second Slack detour, a long silence, heartbeat
rows without input, clicks resolved every way, clipboard use and typed text. Regenerate the
golden files after an intended output change with:

    AF_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_emit_golden.py
"""

from __future__ import annotations

from capture.model import DayCapture, Element, InputEvent, Snapshot, StreamInfo
from capture.timeutil import parse_ts

T0 = parse_ts("2026-03-16T07:58:00Z")  # 08:58 in Europe/Paris
US = 1_000_000
SRC = "synth:golden"


def _t(sec: float) -> int:
    return T0 + int(sec * US)


def golden_day() -> DayCapture:
    snaps: list[Snapshot] = []
    n = 0

    def add(sec: float, app: str, window: str, url: str | None = None, stream: str = "monitor_1",
            heartbeat: bool = False) -> None:
        nonlocal n
        n += 1
        snaps.append(Snapshot(ref=f"{SRC}:frames:{n}", ts_us=_t(sec), stream=stream, app=app, window=window,
                              url=url, heartbeat=heartbeat, source_frame_id=str(n)))

    pr = "https://github.com/acme/widgets/pull/42"
    search = "https://www.google.com/search?q=activity+frames"
    # monitor 1: editor, a 12 s Slack detour, editor again
    for k in range(8):
        add(k * 10, "Code", "compile.py - widgets")
    add(80, "Slack", "#dev - Acme - Slack")
    add(86, "Slack", "#dev - Acme - Slack")
    for k in range(6):
        add(92 + k * 15, "Code", "compile.py - widgets")
    # reading the pull request: heartbeat rows without input
    add(180, "Google Chrome", "Fix parser by jd - Pull Request #42", pr)
    for k in range(1, 5):
        add(180 + k * 30, "Google Chrome", "Fix parser by jd - Pull Request #42", pr, heartbeat=True)
    add(330, "Google Chrome", "activity frames - Google Search", search)
    add(345, "Google Chrome", "Fix parser by jd - Pull Request #42", pr)
    add(360, "Google Chrome", "Fix parser by jd - Pull Request #42", pr)
    # a long silence (coffee), then the terminal
    add(1400, "Terminal", "zsh", None)
    add(1460, "Terminal", "zsh", None)
    add(1500, "Terminal", "zsh", None)
    # monitor 2: a mail client open alongside
    for k in range(5):
        add(20 + k * 20, "Mail", "Inbox (3) - jane@acme.test", None, stream="monitor_2")

    inputs: list[InputEvent] = []
    m = 0

    def ev(sec: float, kind: str, stream: str | None = "monitor_1", **kw) -> None:
        nonlocal m
        m += 1
        inputs.append(InputEvent(ref=f"{SRC}:ui_events:{m}", ts_us=_t(sec), kind=kind, stream=stream, **kw))

    for k, ch in enumerate("fix qa"):
        ev(12 + k, "key", text=ch, app="Slack")  # stale app: re-attributed to Code
    ev(20, "key", text="Return")
    ev(30, "text", text="hello world")
    ev(40, "click", x=300, y=200)  # exact: the Save button, smaller than the toolbar around it
    ev(41, "click", x=300, y=270)  # 30 px below it, outside the toolbar: tolerance
    ev(42, "click", x=1800, y=1000)  # zone
    ev(50, "click", x=10, y=10, element_name="Run", element_role="button")  # recorded
    ev(82, "text", text="lgtm")  # during the Slack detour
    ev(83, "clipboard", clipboard_op="copy")
    ev(95, "clipboard", clipboard_op="paste")
    ev(100, "scroll")
    ev(101, "move", x=5, y=5)
    ev(331, "text", text="activity frames")
    ev(60, "click", stream="monitor_2", x=50, y=50)  # monitor 2 has no known size: unresolved
    ev(1405, "key", stream=None, text="l")
    ev(1406, "key", stream=None, text="s")

    elements = [
        Element(ref=f"{SRC}:elements:1", ts_us=_t(40), snapshot_frame_id="5", source="accessibility",
                role="AXGroup", text="Toolbar", depth=1, left=0.0, top=0.0, width=1.0, height=0.15),
        Element(ref=f"{SRC}:elements:2", ts_us=_t(40), snapshot_frame_id="5", source="accessibility",
                role="AXButton", text="Save", depth=2, left=0.1, top=0.1, width=0.1, height=0.06),
    ]
    streams = [StreamInfo(ref=f"{SRC}:streams:monitor_1", ts_us=T0, stream="monitor_1", width_px=2000,
                          height_px=1500)]
    return DayCapture(day="2026-03-16", tz="Europe/Paris", snapshots=snaps, inputs=inputs, elements=elements,
                      streams=streams, sealed=True, recorders=["synth"],
                      segment_hashes={"sealed/2026-03-16/snapshots.parquet": "ab" * 32})
