"""The team certificate: every user's own verdict, side by side (``<team>/team-certificate.json``).

Each user is certified on their own folder by the single-user path (the same checks, one
``certificate.json`` in their folder: assets/certify.run_certify). The team certificate only
gathers those verdicts, by user name, with the chain head and day count each certified, so an
auditor can see which user failed and go to that user's certificate for why. No user's days,
titles or problems are copied here (a problem text can quote a window title): only counts and
hashes.

The team certificate is written whatever a user's run did: a user whose build or certification
failed is "fail" with the reason (and their own certificate.json says so, so no earlier "pass"
stays in their folder); a user with no capture yet is "pending" (nothing to certify, and a newly
added user does not fail the team). The team passes when no user is "fail" or missing and at
least one user passed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from af_pipeline.warehouse.version import code_version
from capture.files import atomic_write
from capture.team import Team

TEAM_CERTIFICATE_VERSION = 1


def summary(user: str, cert: dict[str, Any]) -> dict[str, Any]:
    """One user's line in the team certificate, from their own certificate."""
    days = cert.get("days", {})
    return {
        "user": user,
        "verdict": cert.get("verdict", "fail"),
        "days": len(days),
        "days_passed": sum(1 for d in days.values() if d.get("passed")),
        "chain_head": cert.get("log", {}).get("chain_head"),
        "code_version": cert.get("code_version"),
    }


PENDING = "pending"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def pending(user: str) -> dict[str, Any]:
    """The line of a user whose log holds no day yet: nothing to build or certify."""
    return {"user": user, "verdict": PENDING, "days": 0, "days_passed": 0, "chain_head": None,
            "code_version": None, "problem": "no capture yet: the log holds no day"}


def failed(user: str, stage: str, kind: str, message: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A user whose build or certification (``stage``) raised an error of class ``kind`` saying
    ``message``: (the failing certificate for their own folder, naming the reason, so that a
    certificate from an earlier run does not keep saying "pass"; their line in the team
    certificate). The team's line names the stage and the error's kind only: an error's text can
    quote the capture (a file's line), which stays in the user's own folder."""
    cert = {"verdict": "fail", "run_succeeded": False, "certified_at": _now(), "code_version": code_version(),
            "problem": f"{stage} failed: {message.strip() or kind}", "days": {}}
    line = {"user": user, "verdict": "fail", "days": 0, "days_passed": 0, "chain_head": None,
            "code_version": cert["code_version"],
            "problem": f"{stage} failed ({kind}): the reason is in {user}'s certificate.json"}
    return cert, line


def team_certificate(team: Team, verdicts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    by_user = {v["user"]: v for v in verdicts}
    registered = [m.user for m in team.members()]
    missing = [u for u in registered if u not in by_user]
    users = {u: by_user[u] for u in sorted(by_user)}
    for u in missing:
        users[u] = {"user": u, "verdict": "fail", "days": 0, "days_passed": 0, "chain_head": None,
                    "code_version": None, "problem": "not certified in this run"}
    passed = sum(1 for v in users.values() if v["verdict"] == "pass")
    waiting = sum(1 for v in users.values() if v["verdict"] == PENDING)
    return {
        "team_certificate_version": TEAM_CERTIFICATE_VERSION,
        "verdict": "pass" if passed and passed + waiting == len(users) else "fail",
        "users": len(users),
        "passed": passed,
        "pending": waiting,
        "failed": sorted(u for u, v in users.items() if v["verdict"] not in ("pass", PENDING)),
        "certified_at": _now(),
        "per_user": {u: {k: v for k, v in users[u].items() if k != "user"} for u in sorted(users)},
    }


def write(team: Team, verdicts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    cert = team_certificate(team, verdicts)
    atomic_write(team.certificate_path, (json.dumps(cert, indent=2, sort_keys=True) + "\n").encode("utf-8"), mode=0o600)
    return cert
