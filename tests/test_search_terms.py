"""Search with exact semantics (issue 38): identifiers match whole, every word of the query before
some of them, hosts as fields, the first and the last visit, the days something appeared.

The rules are properties of af_pipeline/interfaces/memory/terms.py (hypothesis, no log); the
answers are Memory.search over a real event log of two days (one sealed, one open)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from af_pipeline.interfaces.memory import Memory, terms
from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch, InputEvent, Snapshot
from capture.timeutil import parse_ts

TZ = "Europe/Paris"
DAY1, DAY2 = "2026-06-01", "2026-06-02"
NOW = parse_ts(f"{DAY2}T18:00:00+02:00")

# (day, HH:MM, app, window title, url): a frame each (apps alternate, so no two merge)
ROWS: list[tuple[str, str, str, str, str | None]] = [
    (DAY1, "09:00", "Firefox", "ENG-603 deploy the cache · Jira", "https://jira.example.com/browse/ENG-603"),
    (DAY1, "09:05", "Editor", "notes.md", None),
    (DAY1, "09:10", "Firefox", "ENG-60 fix the login · Jira", "https://jira.example.com/browse/ENG-60"),
    (DAY1, "09:15", "Editor", "plan.md", None),
    (DAY1, "09:20", "Firefox", "Hacker News", "https://news.ycombinator.com/item?id=1"),
    (DAY1, "09:25", "Editor", "todo.md", None),
    (DAY1, "09:30", "Firefox", "Pull request 216 · hollow-org/engine", "https://github.com/hollow-org/engine/pull/216"),
    (DAY1, "09:35", "Editor", "x.md", None),
    (DAY2, "10:00", "Firefox", "Fix cache · Pull Request #215 · hollow-org/engine",
     "https://github.com/hollow-org/engine/pull/215"),
    (DAY2, "10:05", "Editor", "y.md", None),
    (DAY2, "10:10", "Firefox", "Y Combinator", "https://www.ycombinator.com/companies"),
    (DAY2, "10:15", "Editor", "z.md", None),
    (DAY2, "10:20", "Firefox", "Expenses report · Reimbursements", "https://expenses.hollow-internal.com/new"),
    (DAY2, "10:25", "Editor", "w.md", None),
    (DAY2, "10:30", "Firefox", "ENG-60 review · Jira", "https://jira.example.com/browse/ENG-60"),
    (DAY2, "10:35", "Editor", "v.md", None),
]


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    home = Home(Path(tmp_path_factory.mktemp("search")) / "home")
    home.init(tz=TZ)
    log = EventLog(home)
    for day in (DAY1, DAY2):
        b = CaptureBatch(source_id="search-test", recorder="recorder")
        for i, (d, hm, app, title, url) in enumerate(ROWS):
            if d != day:
                continue
            for k in range(3):  # three snapshots a minute apart: a frame of about three minutes
                ts = parse_ts(f"{d}T{hm}:00+02:00") + k * 60_000_000
                b.snapshots.append(Snapshot(ref=f"search-test:frames:{i}-{k}", ts_us=ts, stream="monitor_1", app=app,
                                            window=title, url=url, source_frame_id=f"{i}-{k}"))
            if title == "z.md":  # a button named like day 1's file, clicked: named on day 2, never shown
                b.inputs.append(InputEvent(ref=f"search-test:ui:{i}", ts_us=parse_ts(f"{d}T{hm}:10+02:00"),
                                           kind="click", stream="monitor_1", x=10, y=10, button="left", app=app,
                                           element_role="AXButton", element_name="todo.md"))
        # day 1 lands after its end (sealed), day 2 while it is still going (open)
        log.append(b, now_us=NOW if day == DAY2 else parse_ts(f"{DAY2}T12:00:00+02:00"))
    assert [d.sealed for d in log.days()] == [True, False]
    return Memory(home, clock=lambda: NOW)


def _first_titles(answer: dict[str, Any]) -> list[str]:
    """The results' window titles, best first."""
    return [r.get("window", "") for r in answer["results"]]


def test_an_identifier_finds_itself_and_never_a_longer_one(mem: Memory) -> None:
    found = _first_titles(mem.search("ENG-60"))
    assert found and all("ENG-60 " in t for t in found), found  # ENG-603 is not found at all
    assert _first_titles(mem.search("eng-603")) == ["ENG-603 deploy the cache · Jira"]
    assert mem.search("ENG-6")["total"] == 0


def test_every_word_of_the_query_ranks_before_some_of_them(mem: Memory) -> None:
    # "pull request 215": the frame with all three words first, though "216" has as many fields
    assert _first_titles(mem.search("pull request 215"))[0].startswith("Fix cache · Pull Request #215")


def test_a_host_finds_its_pages_and_the_domain_finds_every_host(mem: Memory) -> None:
    assert _first_titles(mem.search("news.ycombinator.com")) == ["Hacker News"]
    assert mem.search("news.ycombinator.com")["results"][0]["day"] == DAY1
    assert sorted(_first_titles(mem.search("ycombinator.com"))) == ["Hacker News", "Y Combinator"]
    assert _first_titles(mem.search("expenses.hollow-internal.com")) == ["Expenses report · Reimbursements"]


def test_a_plain_word_finds_the_start_of_a_word_below_exact_matches(mem: Memory) -> None:
    assert _first_titles(mem.search("expense")) == ["Expenses report · Reimbursements"]
    assert mem.search("xpense")["total"] == 0  # the middle of a word is not a match


def test_first_and_last_visit_and_the_days_it_appeared(mem: Memory) -> None:
    oldest, recent = mem.search("ENG-60", order="oldest"), mem.search("ENG-60", order="recent")
    assert [r["day"] for r in oldest["results"]] == [DAY1, DAY2]
    assert [r["day"] for r in recent["results"]] == [DAY2, DAY1]
    days = mem.search("ENG-60", group_by="day")
    assert [(d["day"], d["frames"]) for d in days["by_day"]] == [(DAY1, 1), (DAY2, 1)]
    assert days["by_day"][0]["first"].startswith("09:1") and days["by_day"][1]["first"].startswith("10:3")
    assert mem.search("hollow-org/engine", group_by="day", order="recent")["by_day"][0]["day"] == DAY2


def test_the_days_something_was_shown_apart_from_the_days_it_was_only_clicked(mem: Memory) -> None:
    """"On which days did I open todo.md": day 1 showed it as a window title; on day 2 only a
    button of that name was clicked. The days list the first; the second is named apart."""
    assert any(r["matched"] == ["clicked: todo.md"] for r in mem.search("todo.md")["results"])
    days = mem.search("todo.md", group_by="day")
    assert [d["day"] for d in days["by_day"]] == [DAY1] and days["frames"] == 1
    assert days["named_only"] == [{"day": DAY2, "frames": 1, "in": ["clicked"]}]
    assert "named_only" not in mem.search("ENG-60", group_by="day")


def test_a_repository_finds_its_pull_requests_and_a_pull_request_only_itself() -> None:
    text = "review hollow-org/engine#364 and hollow-org/engine#36".casefold()
    toks = terms.tokens(text)
    assert {"hollow-org/engine", "hollow-org/engine#36", "hollow-org/engine#364", "engine"} <= toks
    other = "review hollow-org/engine#364".casefold()
    assert terms.match("hollow-org/engine#36", other, terms.tokens(other)) == terms.NONE


IDS = st.builds(lambda key, n: f"{key}-{n}", st.sampled_from(["ENG", "PROJ", "person", "abc"]),
                st.integers(min_value=0, max_value=99999))


@given(st.lists(IDS, min_size=2, max_size=6, unique=True), st.data())
@example(["ENG-60", "ENG-603"], None)
@example(["person-4", "person-42"], None)
def test_no_other_id_matches_an_id_query(ids: list[str], data: Any) -> None:
    """For generated ticket keys, an id query matches the title holding that id exactly and no
    title holding another (a prefix, an extension or a neighbour)."""
    asked = ids[0] if data is None else data.draw(st.sampled_from(ids))
    for other in ids:
        text = f"{other}: some work · tracker".casefold()
        got = [terms.match(t, text, terms.tokens(text)) for t in terms.terms(asked)]
        assert all(got) == (other == asked), (asked, other, got)


@given(st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,8}){1,3}", fullmatch=True), st.from_regex(r"/[a-z0-9/]{0,12}", fullmatch=True))
def test_a_host_is_one_token_of_its_url(host: str, path: str) -> None:
    url = f"https://{host}{path}"
    assert host in terms.tokens(url)  # a URL typed in a title is found by its host
    assert all(terms.match(t, url, terms.tokens(url)) == terms.EXACT for t in terms.terms(host))

