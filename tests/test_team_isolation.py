"""Isolation between a team's users: one user's MCP server answers from that user's folder only,
and the team routine table carries no window title of anybody (issue 15)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
import team_support
from mcp import ClientSession, StdioServerParameters, stdio_client

from capture.log import EventLog
from capture.team import Team

REPO = Path(__file__).resolve().parents[1]
SEEDS = [101, 102]


def _titles(home) -> set[str]:
    log = EventLog(home)
    out: set[str] = set()
    for d in log.days():
        out |= {s.window for s in log.read_day(d.day).snapshots if s.window}
    return out


async def _search(home: Path, query: str) -> dict:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "af_pipeline.interfaces.cli", "mcp", "--home", str(home)],
        cwd=str(REPO), env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""),
                            "XDG_CACHE_HOME": str(home.parent / "cache")},
    )
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                res = await s.call_tool("search_activity", {"query": query, "limit": 100})
                assert not res.is_error, res.content[0].text
                return json.loads(res.content[0].text)


@pytest.fixture(scope="module")
def team(tmp_path_factory) -> Team:
    return team_support.two_user_team(tmp_path_factory.mktemp("team"), SEEDS)


def test_a_users_mcp_server_never_answers_from_another_users_folder(team):
    alice, bob = (m.home for m in team.members())
    mine = _titles(alice)
    # a title of bob's that no title of alice's contains, so a hit could only come from bob's folder
    only_bob = sorted((t for t in _titles(bob) - mine if not any(t in a for a in mine)), key=lambda t: (-len(t), t))
    assert only_bob, "the two seeds should give each user some window titles of their own"
    title = only_bob[0]
    from_alice = anyio.run(_search, alice.root, title)
    from_bob = anyio.run(_search, bob.root, title)
    assert from_bob["results"], f"bob's own server finds his window {title!r}"
    # (the answer echoes the query; nothing else of it may hold the title)
    echoed = {k: v for k, v in from_alice.items() if k not in ("query", "words")}
    assert title not in json.dumps(echoed, ensure_ascii=False)
    assert all(title not in json.dumps(r, ensure_ascii=False) for r in from_alice["results"])


def test_the_team_routine_table_has_no_window_title_and_no_typed_text(team):
    from af_pipeline.routines.team import mine_team
    from af_pipeline.warehouse import team as team_work

    for m in team.members():
        team_work.build_user(m.home)
    streams = {m.user: team_work.user_action_days(m.home) for m in team.members()}
    table = mine_team(streams)
    assert table["routines"], "the planted routines recur across the two users"
    text = json.dumps(table, ensure_ascii=False)
    titles = set().union(*(_titles(m.home) for m in team.members()))
    assert not [t for t in titles if len(t) > 12 and t in text]
    typed = {e.text for m in team.members() for d in EventLog(m.home).days()
             for e in EventLog(m.home).read_day(d.day).inputs if e.text and len(e.text) > 12}
    assert not [t for t in typed if t in text]
