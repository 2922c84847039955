"""Routines across users: one mining pass over every user's action streams (docs/scale.md).

The single-user miner (miner.py) runs unchanged on a team corpus built here:

- every user's days, users in name order, each day labelled by the user's position in that
  order (``u00003/2026-06-01``), so two users' same calendar day stay two days and a routine's
  day count is a count of user-days;
- steps generalised over user-specific parameters: a target (element name, field, URL template,
  app) that fewer than ``min_users`` users have is replaced by ``{param}`` before mining. The
  same routine done by two people on their own records (their own customer, their own ticket
  page) is then the same gram, and, just as much the point, nothing only one user has seen (a
  name on their screen, a page of theirs) can reach the team table or anybody else.

The table holds symbols and counts only: no occurrence evidence (refs of another user's rows),
no URLs, no window titles, never typed text (an action never carries it: actions.py). Each
routine says in how many users and user-days it occurs, and how often for each user.

Deterministic: users sorted by name, days in order, the miner's own total order on routines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from af_pipeline.compiler.actions import Action, symbol_of
from af_pipeline.routines import miner

PARAM = "{param}"
MIN_USERS = 2  # a target must be seen by this many users to be named in the team table
TEAM_TABLE_VERSION = 1


def _targets(a: Action) -> list[str]:
    return [t for t in (a.target, a.app) if t is not None]


def shared_targets(streams: Mapping[str, Sequence[Sequence[Action]]], min_users: int = MIN_USERS) -> set[str]:
    """Targets and apps that at least ``min_users`` users have."""
    users_of: Counter[str] = Counter()
    for days in streams.values():
        users_of.update({t for day in days for a in day for t in _targets(a)})
    return {t for t, n in users_of.items() if n >= min_users}


def generalise(a: Action, shared: set[str], label: str) -> Action:
    """The action with user-specific targets replaced by {param} and its day relabelled."""
    target = a.target if a.target is None or a.target in shared else PARAM
    app = a.app if a.app is None or a.app in shared else PARAM
    return replace(
        a, symbol=symbol_of(a.op, target, a.role, app), target=target, app=app,
        url=None, url_template=None, day=label, refs=(),
    )


def team_corpus(streams: Mapping[str, Sequence[Sequence[Action]]], min_users: int = MIN_USERS
                ) -> tuple[list[str], list[list[Action]], list[int]]:
    """(users in order, the generalised days of all users, the user index of each day)."""
    users = sorted(streams)
    shared = shared_targets(streams, min_users)
    days: list[list[Action]] = []
    owner: list[int] = []
    for i, user in enumerate(users):
        for day in streams[user]:
            if not day:
                continue
            label = f"u{i:05d}/{day[0].day}"
            days.append([generalise(a, shared, label) for a in day])
            owner.append(i)
    return users, days, owner


def mine_team(streams: Mapping[str, Sequence[Sequence[Action]]], top: int | None = None,
              min_users: int = MIN_USERS) -> dict[str, Any]:
    """The team routine table: routines over every user's days, with users and user-days each.

    ``streams``: user -> that user's action stream per day (oldest first), as the single-user
    routine assets read them (assets/routines.action_days)."""
    users, days, _owner = team_corpus(streams, min_users)
    index = {f"u{i:05d}": u for i, u in enumerate(users)}
    mined = miner.mine_days(days)
    rows = []
    for rank, r in enumerate(mined.routines if top is None else mined.routines[:top], start=1):
        per_user: Counter[str] = Counter(index[o.day.split("/", 1)[0]] for o in r.occurrences)
        rows.append({
            "rank": rank,
            "id": r.id,
            "k": r.k,
            "count": r.count,
            "symbols": list(r.symbols),
            "users": len(per_user),
            "user_days": len(r.days),
            "per_user": dict(sorted(per_user.items())),
        })
    return {
        "team_table_version": TEAM_TABLE_VERSION,
        "users": len(users),
        "user_days": len(days),
        "steps": mined.corpus.n_steps,
        "min_users_for_a_named_target": min_users,
        "routines_total": len(mined.routines),
        "routines": rows,
    }
