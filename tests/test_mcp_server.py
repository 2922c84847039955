"""The MCP server through the official SDK's stdio client, plus its period and argument rules."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters, stdio_client

from af_pipeline.mcp_server import MAX_HOURS, BadArgument, Memory
from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch, InputEvent, Snapshot
from capture.timeutil import day_bounds, parse_ts

DAY = "2026-06-01"
NOW_IN_DAY = "2026-06-01T17:00:00+02:00"  # replay the synthetic day as "today"
REPO = Path(__file__).resolve().parents[1]
TOOLS = {"get_context", "get_activity", "get_steps", "get_day_summary", "get_patterns", "get_communications"}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """One sealed synthetic day, published, plus a few minutes of live capture right now."""
    from af_pipeline.compile import CompileOptions, compile_day
    from af_pipeline.emit import canonical_bytes, context_block, to_json
    from assets.publish import publish_day
    from capture.importers.screenpipe import read_screenpipe
    from capture.synth import generate

    root = tmp_path_factory.mktemp("mcp")
    synth = generate(1, 7, root / "synth", start_day=DAY, tz="Europe/Paris")
    h = Home(root / "home")
    h.init(tz="Europe/Paris")
    log = EventLog(h)
    log.append(read_screenpipe(synth.db_path, tz="Europe/Paris"))
    assert log.segment_paths(DAY), "the synthetic day should be sealed"
    doc = compile_day(log.read_day(DAY), CompileOptions(min_minutes=0.5))
    publish_day(
        h.published_dir, DAY,
        {"document.json": to_json(dict(doc, generated_at="2026-06-02T00:00:00Z")).encode(),
         # a smaller budget than the server's own, so serving the file is visible
         "context.txt": context_block(doc, budget_tokens=1000).encode()},
        canonical_sha256=hashlib.sha256(canonical_bytes(doc)).hexdigest(), sealed=True,
        segments={}, code_version="test",
    )
    # live capture: the last 40 minutes, still open (unsealed) in the log
    now = time.time_ns() // 1000
    batch = CaptureBatch(source_id="live-test", recorder="recorder")
    for i in range(40):
        ts = now - (40 - i) * 60_000_000
        app, url = ("Live Editor", None) if i < 25 else ("Firefox", "https://docs.example.org/guide")
        batch.snapshots.append(Snapshot(ref=f"live-test:frames:{i}", ts_us=ts, stream="monitor_1", app=app,
                                        window=f"{app} window", url=url, source_frame_id=str(i)))
        batch.inputs.append(InputEvent(ref=f"live-test:ui:{i}", ts_us=ts + 5_000_000, kind="text",
                                       stream="monitor_1", text="secret words", app=app))
    log.append(batch)
    return h


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


async def _session(home: Home, *extra: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "af_pipeline.cli", "mcp", "--home", str(home.root), *extra],
        cwd=str(REPO), env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "")},
    )
    out: dict[str, Any] = {"results": []}
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as s:
                out["init"] = await s.initialize()
                out["tools"] = (await s.list_tools()).tools
                out["resources"] = (await s.list_resources()).resources
                out["templates"] = (await s.list_resource_templates()).resource_templates
                out["capabilities"] = (await s.read_resource("activity://capabilities")).contents[0]
                out["context_resource"] = (await s.read_resource(f"activity://day/{DAY}/context.txt")).contents[0]
                for name, args in calls:
                    res = await s.call_tool(name, args)
                    text = res.content[0].text if res.content else ""
                    out["results"].append((name, args, res.is_error, text, res.structured_content))
    return out


@pytest.fixture(scope="module")
def replay(home: Home) -> dict[str, Any]:
    """A session that treats the synthetic day as today."""
    calls = [
        ("get_context", {}),
        ("get_context", {"day": DAY}),
        ("get_context", {"hours": 2}),
        ("get_activity", {"day": "today", "min_minutes": 1}),
        ("get_day_summary", {"day": DAY, "top": 5}),
        ("get_steps", {"frame_id": "f-0001"}),
        ("get_steps", {"query": "chrome"}),
        ("get_communications", {"day": DAY}),
        ("get_patterns", {"days": 3, "top": 3}),
        # errors
        ("get_context", {"day": "2026-06-02"}),  # after "now"
        ("get_context", {"day": "last tuesday"}),
        ("get_context", {"hours": 500}),
        ("get_context", {"hours": 0}),
        ("get_context", {"day": DAY, "hours": 1}),
        ("get_context", {"day": "2025-01-01"}),
        ("get_steps", {"frame_id": "f-9999"}),
        ("get_steps", {"frame_id": "12"}),
        ("get_steps", {}),
        ("get_activity", {"min_minutes": -1}),
        ("get_patterns", {"days": 1000}),
        ("get_context", {"hours": "soon"}),
    ]
    return anyio.run(lambda: _session(home, "--now", NOW_IN_DAY, calls=calls))


def _result(r: dict[str, Any], name: str, args: dict[str, Any]) -> tuple[bool, str, Any]:
    for n, a, err, text, structured in r["results"]:
        if n == name and a == args:
            return err, text, structured
    raise KeyError((name, args))


def test_lists_six_read_only_tools(replay: dict[str, Any]) -> None:
    assert replay["init"].server_info.name == "activity-frames"
    assert {t.name for t in replay["tools"]} == TOOLS
    for t in replay["tools"]:
        a = t.annotations
        assert a.read_only_hint is True and a.idempotent_hint is True and a.open_world_hint is False, t.name
        assert t.description and len(t.description) > 60


def test_context_for_today_yesterday_and_hours(replay: dict[str, Any]) -> None:
    err, today, _ = _result(replay, "get_context", {})
    assert not err and today.startswith("AF-CONTEXT v1\nday 2026-06-01 ")
    err, day, _ = _result(replay, "get_context", {"day": DAY})
    assert not err and day == today and "| budget 1000" in day  # the published block
    err, hours, _ = _result(replay, "get_context", {"hours": 2})
    assert not err and "summary: start 15:" in hours and "end 16:" in hours  # 15:00-17:00 local


def test_published_day_is_served_from_its_files(home: Home, replay: dict[str, Any]) -> None:
    published = (home.published_dir / DAY / "context.txt").read_text()
    assert _result(replay, "get_context", {"day": DAY})[1] == published
    assert replay["context_resource"].text == published
    uris = {str(r.uri) for r in replay["resources"]}
    assert {f"activity://day/{DAY}/{n}" for n in ("document.json", "context.txt", "manifest.json")} <= uris
    assert "activity://capabilities" in uris
    assert "Europe/Paris" in replay["capabilities"].text
    assert {t.uri_template for t in replay["templates"]} >= {"activity://day/{day}/document.json"}


def test_activity_document_and_summary(replay: dict[str, Any]) -> None:
    err, text, _ = _result(replay, "get_activity", {"day": "today", "min_minutes": 1})
    doc = json.loads(text)
    assert not err and doc["schema_version"] == 1 and doc["day"] == DAY
    assert doc["omitted"]["min_minutes"] == 1.0
    assert doc["served"]["source"].startswith("compiled")  # published with another floor
    err, _, summary = _result(replay, "get_day_summary", {"day": DAY, "top": 5})
    assert not err and len(summary["apps"]) == 5
    first = summary["apps"][0]
    assert {"minutes", "timeline_minutes", "sessions", "longest_session_min", "top_windows"} <= set(first)
    # one merged timeline never credits more than the per-monitor streams together
    assert all(a["timeline_minutes"] <= a["minutes"] + 0.05 for a in summary["apps"])
    assert summary["timeline_min"] is not None
    assert summary["source"] == f"published/{DAY}/document.json"


def test_steps_communications_patterns(replay: dict[str, Any]) -> None:
    err, _, steps = _result(replay, "get_steps", {"frame_id": "f-0001"})
    assert not err and steps["frame"]["id"] == "f-0001"
    for s in steps["steps"]:
        assert s["op"] in {"click", "type", "paste", "copy", "cut", "focus", "nav"}
        assert "typed_text" not in s and s["evidence"]
    err, _, found = _result(replay, "get_steps", {"query": "chrome"})
    assert not err and found["frame"]["app"] == "Google Chrome" and found["steps"]
    err, _, comms = _result(replay, "get_communications", {"day": DAY})
    assert not err and comms["surfaces"]
    assert {s["kind"] for s in comms["surfaces"]} <= {"mail", "messaging"}
    assert "bodies are never read" in comms["note"]
    err, _, patterns = _result(replay, "get_patterns", {"days": 3, "top": 3})
    assert not err and patterns["days"] == [DAY] and patterns["daily_habits"]
    assert patterns["app_switches"] and "routines" in patterns["routines"]


def test_a_tampered_published_file_is_not_served(home: Home) -> None:
    m = Memory(home, clock=lambda: parse_ts(NOW_IN_DAY))
    w = m.resolve(day=DAY)
    path = home.published_dir / DAY / "context.txt"
    original = path.read_bytes()
    assert m.context(w)[1] == f"published/{DAY}/context.txt"
    try:
        path.write_bytes(original.replace(b"AF-CONTEXT v1", b"AF-CONTEXT v1\ninjected line"))
        text, source = m.context(w)
        assert source != f"published/{DAY}/context.txt" and "injected" not in text
    finally:
        path.write_bytes(original)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("get_context", {"day": "2026-06-02"}), "in the future"),
        (("get_context", {"day": "last tuesday"}), "'today', 'yesterday' or a date"),
        (("get_context", {"hours": 500}), f"at most {MAX_HOURS:g}"),
        (("get_context", {"hours": 0}), "more than 0"),
        (("get_context", {"day": DAY, "hours": 1}), "either day or hours"),
        (("get_context", {"day": "2025-01-01"}), "no capture for 2025-01-01"),
        (("get_steps", {"frame_id": "f-9999"}), "no frame f-9999"),
        (("get_steps", {"frame_id": "12"}), "must look like f-0012"),
        (("get_steps", {}), "exactly one of frame_id"),
        (("get_activity", {"min_minutes": -1}), "min_minutes must be between"),
        (("get_patterns", {"days": 1000}), "days must be between"),
        (("get_context", {"hours": "soon"}), "hours"),
    ],
)
def test_bad_arguments_get_clear_errors(replay: dict[str, Any], args: tuple[str, dict[str, Any]], message: str) -> None:
    err, text, _ = _result(replay, *args)
    assert err and message in text and "Traceback" not in text


def test_live_last_hour_sees_unsealed_capture_and_writes_nothing(home: Home) -> None:
    before = _tree(home.root)
    calls = [("get_context", {"hours": 1}), ("get_activity", {"hours": 1}),
             ("get_steps", {"query": "live editor", "hours": 1})]
    r = anyio.run(lambda: _session(home, calls=calls))
    err, block, _ = _result(r, "get_context", {"hours": 1})
    assert not err and "Live Editor |" in block and "example.org" in block
    err, text, _ = _result(r, "get_activity", {"hours": 1})
    doc = json.loads(text)
    start, end = (parse_ts(doc["window"][k]) for k in ("start", "end"))
    assert not err and end - start == 3600 * 1_000_000 and doc["served"]["window"]["kind"] == "hours"
    err, _, steps = _result(r, "get_steps", {"query": "live editor", "hours": 1})
    assert not err and all("typed_text" not in s for s in steps["steps"])
    assert "excluded" in steps["typed_text"]
    assert _tree(home.root) == before  # nothing written: no lock, no cache, no published file


def test_typed_text_only_when_the_operator_enables_it(home: Home) -> None:
    now = lambda: time.time_ns() // 1000  # noqa: E731
    off = Memory(home, clock=now)
    on = Memory(home, include_typed_text=True, clock=now)
    w_off, w_on = off.resolve(hours=1), on.resolve(hours=1)
    plain = off.steps(w_off, None, "live editor", 200)
    typed = on.steps(w_on, None, "live editor", 200)
    assert "secret" not in json.dumps(plain)
    assert any("secret words" in s.get("typed_text", "") for s in typed["steps"])
    assert "secret" not in off.context(w_off)[0]


@given(st.floats(min_value=0.01, max_value=MAX_HOURS))
@settings(max_examples=25, deadline=None)
def test_hours_window_ends_now_and_lasts_hours(hours: float) -> None:
    m = _memory_at(NOW_IN_DAY)
    w = m.resolve(hours=hours)
    assert w.end_us == parse_ts(NOW_IN_DAY)
    assert abs((w.end_us - w.start_us) - hours * 3600e6) <= 1


@given(st.text(max_size=12).filter(lambda t: t.strip().lower() not in ("today", "yesterday", "")))
@settings(max_examples=40, deadline=None)
def test_anything_but_a_period_is_refused(text: str) -> None:
    m = _memory_at(NOW_IN_DAY)
    try:
        w = m.resolve(day=text)
    except BadArgument:
        return
    assert w.day == text.strip()  # only real past dates get through


def test_natural_periods_follow_the_user_zone() -> None:
    # 23:30 UTC on June 1st is already June 2nd in Paris
    m = _memory_at("2026-06-01T23:30:00Z")
    assert m.resolve().day == "2026-06-02"
    assert m.resolve(day="yesterday").day == "2026-06-01"
    start, end = day_bounds("2026-06-02", "Europe/Paris")
    w = m.resolve(day="today")
    assert (w.start_us, w.end_us) == (start, end)


_HOME_FOR_RULES: list[Home] = []


def _memory_at(now: str) -> Memory:
    if not _HOME_FOR_RULES:
        import tempfile

        h = Home(Path(tempfile.mkdtemp(prefix="af-mcp-rules-")) / "home")
        h.init(tz="Europe/Paris")
        _HOME_FOR_RULES.append(h)
    fixed = parse_ts(now)
    return Memory(_HOME_FOR_RULES[0], clock=lambda: fixed)


def test_live_reads_follow_appends_and_equal_the_log(home: Home) -> None:
    from capture.timeutil import local_day

    m = Memory(home, clock=lambda: time.time_ns() // 1000)
    now = time.time_ns() // 1000
    today = local_day(now, "Europe/Paris")
    before = m.day_capture(today)
    batch = CaptureBatch(source_id="live-test-2", recorder="recorder")
    # one row earlier than rows already read: the merge must keep the log's order
    for i, ts in enumerate((now - 1_000_000, now - 30 * 60_000_000)):
        batch.snapshots.append(Snapshot(ref=f"live-test-2:frames:{i}", ts_us=ts, stream="monitor_1",
                                        app="Late Arrival", source_frame_id=f"late{i}"))
    EventLog(home).append(batch)
    after = m.day_capture(today)
    assert len(after.snapshots) == len(before.snapshots) + 2
    fresh = EventLog(home).read_day(today)
    for kind in ("snapshots", "inputs", "elements", "presence", "streams"):
        assert getattr(after, kind) == getattr(fresh, kind), kind
    assert "Late Arrival |" in m.context(m.resolve(hours=1))[0]


def test_af_mcp_refuses_a_folder_that_is_not_a_data_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from af_pipeline import cli

    assert cli.main(["mcp", "--home", str(tmp_path / "nothing")]) == 2
    assert "not an activity-frames data folder" in capsys.readouterr().err
    assert not (tmp_path / "nothing").exists()
