"""Faults in the event log itself: an amendment chained twice (correctly, so the chain alone
cannot tell), and an open segment with lines no reader may choke on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from test_log import after, batch

from af_pipeline.interfaces import cli
from af_pipeline.interfaces.memory import Memory
from capture.home import Home
from capture.log import EventLog
from capture.log.opensegments import INCOMPLETE
from capture.log.rows import checked_columns
from capture.model import CAPTURE_SCHEMA_VERSION, ROW_KINDS, SkippedLine
from capture.timeutil import day_bounds

DAY = "2026-03-15"
REPO = Path(__file__).resolve().parents[1]


# -- an amendment chained twice ------------------------------------------------------------------


def _amend_again(log: EventLog, rows: dict[str, list]) -> int:
    """Seal these rows as the day's next amendment with the log's own writer, as a buggy or
    hostile writer would: the entry is hashed and chained like any other."""
    fresh = {kind: checked_columns(kind, rows[kind])[0] for kind in ROW_KINDS}
    with log.writing():
        return log._seal_columns(DAY, fresh, [("other:b", "synth")], amend=True)


def test_the_same_amendment_chained_twice_fails_verify_naming_day_and_entry(home, capsys):
    log = EventLog(home)
    log.append(batch(n=4), now_us=after(DAY))
    late = batch(n=6, source="other:b")
    log.append(late, now_us=after(DAY))
    assert log.verify().ok
    assert _amend_again(log, {kind: late.rows(kind) for kind in ROW_KINDS}) == 2
    fresh = EventLog(home)
    entries = fresh.day_entries(DAY)
    assert [e.get("amendment", 0) for e in entries] == [0, 1, 2] and entries[2]["prev"] == entries[1]["hash"]
    report = fresh.verify()
    assert not report.ok
    (problem,) = report.problems
    assert problem.startswith(f"manifest.jsonl line 3 (entry 2, day {DAY}): amendment 2 of day {DAY} ")
    assert "amendment 1" in problem and "chained twice" in problem
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 1
    out = capsys.readouterr()
    assert f"entry 2, day {DAY}" in out.out and "chained twice" in out.out and "Traceback" not in out.err


def test_an_amendment_repeating_some_logged_rows_fails_verify(home, capsys):
    log = EventLog(home)
    first = batch(n=4)
    log.append(first, now_us=after(DAY))
    # two rows of the first segment again, beside new ones: a later amendment that re-lands rows
    late = batch(n=3, source="other:b")
    rows = {kind: late.rows(kind) + first.rows(kind)[:2] for kind in ROW_KINDS}
    assert _amend_again(log, rows) == 1
    report = EventLog(home).verify()
    assert not report.ok
    assert any(p.startswith(f"manifest.jsonl line 2 (entry 1, day {DAY}): amendment 1 of day {DAY} repeats 2 "
                            "snapshots row(s) already in the day's first segment") for p in report.problems), \
        report.problems
    assert all("rows landed twice" in p for p in report.problems)
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 1
    assert "Traceback" not in capsys.readouterr().err


# -- an open segment with lines no reader may choke on -------------------------------------------
# A good line, a line that is not JSON, a line of the wrong types, a line written by a newer
# capture schema, and a last line cut short: every path answers with the good rows and names
# the others (file, line, reason); none prints a traceback or fails a tool.

NOON = day_bounds(DAY, "Europe/Paris")[0] + 12 * 3_600_000_000
SNAPS = f"log/open/{DAY}/snapshots.jsonl"
INPUTS = f"log/open/{DAY}/inputs.jsonl"


def _damaged_day(home: Home) -> dict[tuple[str, int], str]:
    """An open day of 6 snapshots and 6 inputs, then bad lines; the lines each reader must name."""
    log = EventLog(home)
    log.append(batch(n=6), now_us=NOON)  # the day stays open
    snaps = log.open_dir / DAY / "snapshots.jsonl"
    good = snaps.read_bytes()
    newer = json.loads(good.splitlines()[0])
    newer.update(ref="test:a:frames:newer", capture_schema=CAPTURE_SCHEMA_VERSION + 1)
    torn = json.dumps(dict(newer, ref="test:a:frames:torn")).encode()[:40]
    snaps.write_bytes(good + b"garbage, not a row\n" + json.dumps(newer).encode() + b"\n" + torn)
    inputs = log.open_dir / DAY / "inputs.jsonl"
    wrong = json.loads(inputs.read_bytes().splitlines()[0])
    wrong.update(ref="test:a:ui:wrong", ts_us="noon")
    inputs.write_bytes(inputs.read_bytes() + json.dumps(wrong).encode() + b"\n")
    return {(SNAPS, 7): "is not valid JSON", (SNAPS, 8): f"capture schema v{CAPTURE_SCHEMA_VERSION + 1}",
            (SNAPS, 9): "is incomplete", (INPUTS, 7): "ts_us of type str"}


def _names_every_line(skipped: list[SkippedLine], expected: dict[tuple[str, int], str]) -> None:
    got = {(s.file, s.line): s.reason for s in skipped}
    assert got.keys() == expected.keys(), got
    for key, words in expected.items():
        assert words in got[key], (key, got[key])


def test_every_log_path_serves_the_good_rows_and_names_the_bad_lines(home, capsys):
    expected = _damaged_day(home)
    log = EventLog(home)
    cap = log.read_day(DAY)
    assert len(cap.snapshots) == 6 and len(cap.inputs) == 6 and not cap.sealed
    _names_every_line(cap.skipped, expected)
    end = day_bounds(DAY, "Europe/Paris")[1]
    _names_every_line(log.read_range(NOON - 12 * 3_600_000_000, end).skipped, expected)
    # verify names the damaged complete lines; the cut-short last line is a writer's to finish
    report = log.verify()
    assert sorted(p.split(" line ")[0] for p in report.problems) == [f"open/{DAY}/inputs.jsonl"] + \
        [f"open/{DAY}/snapshots.jsonl"] * 2
    assert report.notes == [f"open/{DAY}/snapshots.jsonl line 9 {INCOMPLETE}"]
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_the_read_model_answers_and_notes_the_skipped_lines(home):
    expected = _damaged_day(home)
    mem = Memory(home, clock=lambda: NOON + 3_600_000_000)
    with mem.noting_skipped() as skipped:
        doc = mem.document(DAY)
        summary = mem.summary(DAY)
    assert doc["frames"] and summary["apps"][0]["app"] == "Firefox"
    _names_every_line(skipped, expected)
    cap = mem.day_capture(DAY)
    assert [s.ref for s in cap.snapshots] == [s.ref for s in EventLog(home).read_day(DAY).snapshots]
    # the day's files grow: only the new lines are read, numbered on from where they stopped
    snaps = home.log_dir / "open" / DAY / "snapshots.jsonl"
    data = snaps.read_bytes()
    row = json.loads(data.splitlines()[0])
    snaps.write_bytes(data[: data.rfind(b"\n") + 1] + json.dumps(dict(row, ref="test:a:frames:late")).encode()
                      + b"\n[1, 2]\n")
    with mem.noting_skipped() as again:
        mem.document(DAY)
    assert len(mem.day_capture(DAY).snapshots) == 7
    _names_every_line(again, {k: v for k, v in expected.items() if k != (SNAPS, 9)}
                      | {(SNAPS, 10): "is not a JSON object"})
    # a sealed day, or a published one, has nothing to note
    with mem.noting_skipped() as none:
        mem.capabilities()
    assert none == []


@pytest.mark.parametrize("argv", [["context", "--day", DAY], ["day", DAY], ["day", DAY, "-f", "context"]])
def test_af_context_and_day_print_the_day_and_one_warning_sentence(home, capsys, argv):
    expected = _damaged_day(home)
    assert cli.main([*argv, "--home", str(home.root)]) == 0
    out = capsys.readouterr()
    assert "Firefox" in out.out and "Traceback" not in out.err
    (line,) = out.err.strip().splitlines()  # one sentence
    assert line.startswith(f"af {argv[0]}: warning: 4 line(s) of the log's open segments could not be read")
    assert f"{SNAPS} line 7 is not valid JSON" in line and "1 more" in line
    assert "Traceback" not in out.out and len(expected) == 4


async def _ask(home: Home, now: str, calls: list[tuple[str, dict]], errlog: Path) -> list[tuple[bool, str]]:
    """Each tool call's (is_error, text), through the official MCP client over stdio."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "af_pipeline.interfaces.cli", "mcp", "--home", str(home.root),
                                      "--now", now],
        cwd=str(REPO), env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""),
                            "XDG_CACHE_HOME": str(home.root.parent / "cache")},
    )
    answers = []
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            for name, args in calls:
                res = await s.call_tool(name, args)
                answers.append((bool(res.is_error), res.content[0].text if res.content else ""))
    return answers


def test_mcp_tools_answer_and_name_the_skipped_lines(home, tmp_path):
    # a sealed day beside the damaged open one: search covers both, and notes only the open one
    # (written first: a writer cuts an open segment's incomplete last line)
    EventLog(home).append(batch(day="2026-03-10", n=4, source="other:b"), now_us=NOON)
    expected = _damaged_day(home)
    calls = [("search_activity", {"query": "Firefox"}), ("get_context", {"day": DAY}),
             ("get_activity", {"day": DAY}), ("get_day_summary", {"day": DAY}),
             ("get_activity_at", {"time": f"{DAY}T08:03"}), ("get_communications", {"day": DAY}),
             ("get_context", {"day": "2026-03-10"})]
    errlog = tmp_path / "server-stderr.txt"
    answers = anyio.run(lambda: _ask(home, f"{DAY}T13:00:00+01:00", calls, errlog))
    assert all(not err for err, _ in answers), answers
    search, context, activity, summary, at, comms, sealed = answers
    hits = json.loads(search[1])
    assert {r["day"] for r in hits["results"]} == {"2026-03-10", DAY}
    for _, text in (search, activity, summary, at, comms):
        body = json.loads(text)
        _names_every_line([SkippedLine(**s) for s in body["skipped_lines"]], expected)
        assert body["log_warning"].startswith("warning: 4 line(s)")
    assert json.loads(activity[1])["frames"] and json.loads(summary[1])["apps"][0]["app"] == "Firefox"
    assert context[1].startswith("AF-CONTEXT") and context[1].rstrip().endswith("`af log verify` lists them")
    assert f"{SNAPS} line 7 is not valid JSON" in context[1]
    assert "warning" not in sealed[1]  # a sealed day's answer has nothing to note
    assert "Traceback" not in errlog.read_text()


def test_af_log_status_counts_the_rows_read_and_names_the_lines_left_out_apart(home, capsys):
    expected = _damaged_day(home)  # 6 snapshots and 6 inputs, then 4 lines that are not rows
    assert cli.main(["log", "status", "--home", str(home.root)]) == 0
    out = capsys.readouterr()
    header, row = (line.split() for line in out.out.splitlines() if line.startswith(("day ", DAY)))
    served = EventLog(home).read_day(DAY)  # the rows every reader serves: the count of each kind
    assert dict(zip(header, row, strict=True)) == {"day": DAY, "state": "open",
                                                   **{k: str(len(getattr(served, k))) for k in ROW_KINDS}}
    assert row[2 + ROW_KINDS.index("snapshots")] == "6" and row[2 + ROW_KINDS.index("inputs")] == "6"
    (line,) = out.err.strip().splitlines()
    assert line.startswith("af log status: warning: 4 line(s) of the log's open segments could not be read")
    assert f"{SNAPS} line 7 is not valid JSON" in line and "Traceback" not in out.err
    assert cli.main(["log", "status", "--json", "--home", str(home.root)]) == 0
    (day,) = json.loads(capsys.readouterr().out)["days"]
    assert day["counts"]["snapshots"] == 6 and day["counts"]["inputs"] == 6
    _names_every_line([SkippedLine(**s) for s in day["skipped_lines"]], expected)
