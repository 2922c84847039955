"""Failures stay local in a team run (issue 39): a user whose log is damaged gets a failing
certificate naming the reason (no earlier "pass" survives in their folder), a newly added user
with no capture is "pending", and the team certificate and routines are written for everyone
else; the run fails after them, naming the failing user, and `af team build --json` says so."""

from __future__ import annotations

import json

import team_support

from af_pipeline.interfaces import cli
from capture.team import Team

SEEDS = [101, 102]  # the isolation tests' users: their folders are cached once for all the files


def test_a_damaged_user_and_a_new_user_leave_the_team_artifacts_written(tmp_path, capsys, monkeypatch):
    team: Team = team_support.two_user_team(tmp_path, SEEDS)
    bob = team.member("bob").home
    # bob was certified before: a "pass" certificate in his folder, then his log is damaged
    bob.certificate_path.write_text(json.dumps({"verdict": "pass", "days": {}}) + "\n", encoding="utf-8")
    segments = sorted((bob.root / "log" / "sealed").rglob("*.parquet"))
    assert segments, "bob's log holds sealed segments"
    for path in segments:
        path.write_bytes(b"not a segment\n")
    team.add("carol", tmp_path / "carol", create_tz="Europe/Paris")  # `af team add ... --create`: no capture yet
    monkeypatch.setenv("DAGSTER_HOME", str(team.root / "dagster"))

    code = cli.main(["team", "build", "--team", str(team.root), "--workers", "2", "--json"])
    out = json.loads(capsys.readouterr().out)

    assert code == 1 and not out["ok"]
    assert out["team_verdict"] == "fail" and out["failed_users"] == ["bob"] and out["pending_users"] == ["carol"]
    assert any("bob" in f for f in out["failures"]), out["failures"]
    cert = json.loads(team.certificate_path.read_text(encoding="utf-8"))
    assert set(cert["per_user"]) == {"alice", "bob", "carol"}
    assert cert["per_user"]["alice"]["verdict"] == "pass" and cert["per_user"]["alice"]["days"] > 0
    assert cert["per_user"]["carol"]["verdict"] == "pending"
    assert cert["per_user"]["bob"]["verdict"] == "fail" and "bob's certificate.json" in cert["per_user"]["bob"]["problem"]
    bobs = json.loads(bob.certificate_path.read_text(encoding="utf-8"))
    assert bobs["verdict"] == "fail" and "failed" in bobs["problem"], bobs
    routines = json.loads(team.routines_path.read_text(encoding="utf-8"))
    assert routines["users"] == 1, "mined over the one user that built"
    assert json.loads(team.member("alice").home.certificate_path.read_text(encoding="utf-8"))["verdict"] == "pass"


def test_a_team_of_users_that_pass_and_one_pending_user_passes(tmp_path, capsys, monkeypatch):
    team: Team = team_support.two_user_team(tmp_path, SEEDS)
    team.add("carol", tmp_path / "carol", create_tz="Europe/Paris")
    monkeypatch.setenv("DAGSTER_HOME", str(team.root / "dagster"))
    code = cli.main(["team", "build", "--team", str(team.root), "--workers", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ok"] and out["team_verdict"] == "pass", out
    assert out["pending_users"] == ["carol"] and out["failed_users"] == []


def test_team_build_json_says_so_in_json_when_the_teams_postgres_is_down(tmp_path, capsys, monkeypatch):
    import socket

    from assets.team import prepare_team_instance

    team: Team = team_support.two_user_team(tmp_path, SEEDS)
    prepare_team_instance(team, postgres=True)
    with socket.socket() as s:  # a port nobody listens on: the database is down
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AF_TEAM_PG_URL", f"postgresql+psycopg2://af@127.0.0.1:{port}/af?connect_timeout=2")
    monkeypatch.setenv("DAGSTER_HOME", str(team.root / "dagster"))
    code = cli.main(["team", "build", "--team", str(team.root), "--json"])
    said = capsys.readouterr()
    out = json.loads(said.out)
    assert code == 2 and out["ok"] is False and "could not be made" in out["error"], out
    assert "Traceback" not in said.out + said.err
