"""A captured window title holding bidirectional controls (U+202E shows the text after it
reversed, U+2066 opens an isolate) never reaches an MCP client raw: every tool answer, over the
official SDK's stdio client, writes them as \\uXXXX escapes, and its JSON reads back the title
as captured. The structured content (which the SDK writes as UTF-8, unescaped) holds the same
escapes as text, never a raw control."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from test_mcp_server import Call, _session

from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch, InputEvent, Snapshot
from capture.timeutil import parse_ts

DAY = "2026-06-02"
NOW = "2026-06-02T17:00:00+02:00"
TITLE = "Inbox \u2066PROJ-42\u2069 invoice\u202etxt.exe"
BIDI = {"\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    root = tmp_path_factory.mktemp("mcp-bidi")
    h = Home(root / "home")
    h.init(tz="Europe/Paris")
    start = parse_ts(f"{DAY}T09:00:00+02:00")
    batch = CaptureBatch(source_id="bidi-test", recorder="recorder")
    for i in range(60):
        ts = start + i * 60_000_000
        app, title = ("Mail", TITLE) if i % 3 else ("Editor", f"notes {i // 10}.md")
        batch.snapshots.append(Snapshot(ref=f"bidi-test:frames:{i}", ts_us=ts, stream="monitor_1", app=app,
                                        window=title, source_frame_id=str(i)))
        batch.inputs.append(InputEvent(ref=f"bidi-test:ui:{i}", ts_us=ts + 5_000_000, kind="click",
                                       stream="monitor_1", x=10, y=10, button="left", app=app))
    EventLog(h).append(batch)
    return h


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_every_tool_answer_escapes_the_bidi_controls_of_a_captured_title(home: Home) -> None:
    calls: list[Call] = [
        ("get_capabilities", {}),
        ("get_context", {"day": DAY}),
        ("get_activity", {"day": DAY}),
        ("get_activity", {"day": DAY, "evidence": "none", "max_tokens": 5000}),
        ("get_activity_at", {"time": f"{DAY}T09:31"}),
        ("search_activity", {"query": "invoice"}),
        ("search_activity", {"query": "PROJ-42", "order": "recent"}),
        ("get_steps", {"query": "invoice", "day": DAY}),
        ("get_day_summary", {"day": DAY}),
        ("get_communications", {"day": DAY}),
        ("get_patterns", {"day": DAY}),
        ("get_routines", {"day": DAY}),
        ("get_steps", {"frame_id": f"{DAY}/f-9999"}),  # an error answer
    ]
    r = anyio.run(lambda: _session(home, "--now", NOW, calls=calls, probe=False))
    assert len(r["results"]) == len(calls)
    titled = set()
    structured_titled = set()
    escaped = "Inbox \\u2066PROJ-42\\u2069 invoice\\u202etxt.exe"  # the escapes as text
    for (name, args, is_error, text), structured in zip(r["results"], r["structured"], strict=True):
        assert not BIDI & set(text), (name, args, sorted(BIDI & set(text)))
        raw = BIDI & {c for s in _strings(structured) for c in s}
        assert not raw, (name, args, sorted(raw))  # the structured content: no raw control either
        if escaped in _strings(structured):
            structured_titled.add(name)
        if is_error or text.startswith("AF-CONTEXT"):
            continue
        decoded = json.loads(text)
        if TITLE in _strings(decoded):  # the escapes read back as the captured title
            titled.add(name)
            assert "\\u2066PROJ-42\\u2069 invoice\\u202etxt.exe" in text, (name, args)
    # the answers that show window titles: the documents, the instant, search, the summary's top
    # windows and the mail subjects
    assert titled == {"get_activity", "get_activity_at", "search_activity", "get_day_summary",
                      "get_communications"}, titled
    assert structured_titled == titled, structured_titled  # the same answers show it, escaped
    err, block = next((e, t) for n, _, e, t in r["results"] if n == "get_context")
    assert not err and "invoice txt.exe" in block  # the context block shows a control as a space
    err, text = r["results"][-1][2:]
    assert err and "f-9999" in text


def test_the_answer_is_the_json_text_with_only_the_controls_escaped(home: Home) -> None:
    """Escaping changes nothing but the controls: the text equals the compact JSON of the same
    value with each control written as its escape, and so does the structured content."""
    from af_pipeline.compiler.emit import escape_bidi
    from capture.files import canonical_json

    r = anyio.run(lambda: _session(home, "--now", NOW, calls=[("get_activity_at", {"time": f"{DAY}T09:31"})],
                                   probe=False))
    _, _, err, text = r["results"][0]
    assert not err
    assert text == escape_bidi(canonical_json(json.loads(text)))
    assert TITLE in _strings(json.loads(text))
    # the structured content is the same value with each control's escape as text, nothing else changed
    from af_pipeline.interfaces.mcp_server import escaped_strings

    assert r["structured"][0] == escaped_strings(json.loads(text)) != json.loads(text)
