"""The read model on a real capture: the vendored RPM UI log (StudentRecord.csv), whose one
Chrome frame folds 343 interruptions. Every answer stays under the cap, search finds the
workbook in a log years older than "now", and ids resolve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from af_pipeline import Memory
from af_pipeline.compiler import tokens
from af_pipeline.interfaces.memory import DEFAULT_MAX_TOKENS
from capture.files import canonical_json
from capture.home import Home
from capture.log import EventLog
from capture.timeutil import parse_ts

STUDENT = Path(__file__).resolve().parent / "data" / "rpm" / "StudentRecord.csv"
DAY = "2019-10-21"


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    from capture.importers.rpm import read_rpm

    home = Home(tmp_path_factory.mktemp("rpm") / "home")
    home.init(tz="UTC")
    EventLog(home).append(read_rpm(STUDENT))
    return Memory(home, clock=lambda: parse_ts("2026-12-01T12:00:00Z"))


def _size(payload: object) -> int:
    return tokens.count(payload if isinstance(payload, str) else canonical_json(payload))


def test_a_frame_with_hundreds_of_interruptions_fits_the_cap(mem: Memory) -> None:
    raw = mem.document(DAY)["frames"]
    big = max(raw, key=lambda f: len(f.get("interruptions") or []))
    assert len(big["interruptions"]) > 300 and _size(big) > DEFAULT_MAX_TOKENS  # the real shape
    page = mem.activity(mem.period(day=DAY))
    assert _size(page) <= DEFAULT_MAX_TOKENS and page["next_cursor"] is None
    served = next(f for f in page["frames"] if f["id"] == f"{DAY}/{big['id']}")
    assert served["interruptions_not_listed"] == len(big["interruptions"]) - len(served["interruptions"])
    assert served["interruption_s"] == big["interruption_s"]  # the total still counts them all
    longest = sorted((float(i["seconds"]) for i in big["interruptions"]), reverse=True)
    assert sorted((float(i["seconds"]) for i in served["interruptions"]), reverse=True) == longest[:20]


def test_every_answer_on_the_real_log_is_under_the_cap(mem: Memory) -> None:
    p = mem.period(day=DAY)
    fid = f"{DAY}/f-0002"
    answers = [
        mem.context(p)[0], mem.summary(p), mem.activity_at(f"{DAY}T00:30:00"), mem.search("StudentRecords"),
        mem.steps(None, fid, None, 500), mem.communications(p), mem.patterns(p, 50), mem.routines(p, 50),
    ]
    for a in answers:
        assert _size(a) <= DEFAULT_MAX_TOKENS
    steps = mem.steps(None, fid, None, 500)
    seen, cursor = len(steps["steps"]), steps["next_cursor"]
    while cursor:  # the pages cover every step once
        nxt = mem.steps(None, fid, None, 500, cursor=cursor)
        assert _size(nxt) <= DEFAULT_MAX_TOKENS
        seen += len(nxt["steps"])
        cursor = nxt["next_cursor"]
    assert seen == steps["total"] > 500


def test_search_defaults_to_the_newest_year_of_the_log(mem: Memory) -> None:
    found = mem.search("StudentRecords")  # the log is years older than "now"
    assert found["results"] and found["results"][0]["day"] == DAY
    assert "title: StudentRecords.xlsx - Sheet1" in found["results"][0]["matched"]
    none = mem.search("no-such-workbook-anywhere")
    assert none["total"] == 0 and f"the log holds {DAY} to {DAY}" in none["note"]
    at = mem.activity_at(f"{DAY}T00:10:30")
    assert json.dumps(at).count(f"{DAY}/f-0001") == 1 and at["streams"][0]["at"]["app"] == "Excel"


def test_inboxes_and_search_results_are_not_mail_threads(tmp_path):
    """A Gmail inbox, Gmail's search results and a web search for "gmail" are views of many
    threads (or none): communications lists the thread that was read, under Gmail's own surface."""
    from af_pipeline import Memory
    from capture.home import Home
    from capture.log import EventLog
    from capture.model import CaptureBatch, Snapshot
    from capture.timeutil import parse_ts

    home = Home(tmp_path / "h")
    home.init(tz="UTC")
    t = parse_ts("2026-03-10T09:00:00Z")
    rows = [
        ("Inbox (3) - jane@acme.test - Gmail", "https://mail.google.com/mail/u/0/#inbox"),
        ("Re: Q3 budget - jane@acme.test - Gmail", "https://mail.google.com/mail/u/0/#inbox/FMfcgzQVxyz"),
        ("Search results - jane@acme.test - Gmail", "https://mail.google.com/mail/u/0/#search/budget"),
        ("gmail login - Google Search", "https://www.google.com/search?q=gmail+login"),
    ]
    b = CaptureBatch("test:gmail", "synth")
    for i in range(40):
        title, url = rows[(i // 10) % 4]
        b.snapshots.append(Snapshot(f"test:gmail:{i}", t + i * 30_000_000, "monitor_1", "Google Chrome", title, url))
    EventLog(home).append(b, now_us=t + 3600_000_000)
    mem = Memory(home)
    out = mem.communications(mem.period(day="2026-03-10"))
    text = json.dumps(out)
    assert "Re: Q3 budget" in text
    assert "Inbox (3)" not in text and "Search results" not in text and "Google Search" not in text
    subjects = [t["subject"] for s in out["surfaces"] for t in s["threads"]]
    assert subjects and not [x for x in subjects if "inbox" in x.casefold()], subjects
    assert {s["site"] for s in out["surfaces"]} == {"mail.google.com"}
