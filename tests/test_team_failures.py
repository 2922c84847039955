"""Failures stay local in a team run (issue 39): a user whose log is damaged gets a failing
certificate naming the reason (no earlier "pass" survives in their folder), a newly added user
with no capture is "pending", and the team certificate and routines are written for everyone
else; the run fails after them, naming the failing user, and `af team build --json` says so."""

from __future__ import annotations

import json

import pytest
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

    # the UI's user_memory partitions: each user the run built and certified is materialized
    import dagster as dg

    from assets.team import team_assets, team_instance

    def materialized() -> dict[str, dict]:
        found = team_instance(team).fetch_materializations(dg.AssetRecordsFilter(asset_key=team_assets(str(team.root)).user_memory.key), limit=100)
        out: dict[str, dict] = {}
        for r in found.records:  # newest first
            mat = r.asset_materialization
            if mat is not None and mat.partition not in out:
                out[mat.partition] = {k: v.value for k, v in mat.metadata.items()}
        return out

    first = materialized()
    assert set(first) == {"alice", "bob"} and first["alice"]["days built"] > 0

    # a second run with nothing new builds no day (the single-user unchanged-day rule)
    alice_doc = team.member("alice").home.published_dir
    mtimes = {p: p.stat().st_mtime_ns for p in alice_doc.rglob("*") if p.is_file()}
    mined = team.routines_path.stat().st_mtime_ns
    code = cli.main(["team", "build", "--team", str(team.root), "--workers", "2", "--json"])
    again = json.loads(capsys.readouterr().out)
    assert code == 0 and again["team_verdict"] == "pass", again
    second = materialized()
    assert second["alice"]["days built"] == 0 and second["alice"]["days unchanged"] == first["alice"]["days built"]
    assert second["alice"]["days certified now"] == 0, "an unchanged user's certificate stands"
    assert {p: p.stat().st_mtime_ns for p in alice_doc.rglob("*") if p.is_file()} == mtimes, "nothing rewritten"
    assert team.routines_path.stat().st_mtime_ns == mined, "no user built a day: the routines are not mined again"

    # one due day (its published manifest gone): that day alone is built and judged again, the
    # other days' entries are carried into alice's new certificate, which passes
    alice = team.member("alice").home
    days = sorted(json.loads(alice.certificate_path.read_text(encoding="utf-8"))["days"])
    (alice.published_dir / days[2] / "manifest.json").unlink()
    code = cli.main(["team", "build", "--team", str(team.root), "--workers", "2", "--json"])
    third_out = json.loads(capsys.readouterr().out)
    assert code == 0 and third_out["team_verdict"] == "pass", third_out
    third = materialized()
    assert third["alice"]["days built"] == 1 and third["alice"]["days certified now"] == 1
    assert team.routines_path.stat().st_mtime_ns != mined, "a day was built: the routines are mined again"
    cert = json.loads(alice.certificate_path.read_text(encoding="utf-8"))
    assert cert["verdict"] == "pass" and sorted(cert["days"]) == days
    assert [d for d, e in cert["days"].items() if not e.get("carried")] == [days[2]]


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


@pytest.mark.slow
def test_a_run_a_postgres_outage_left_started_is_failed_by_run_monitoring(tmp_path, monkeypatch):
    """Postgres goes away during `af team build`: the command says so in JSON and exits 2, and
    the run it could not finish stays STARTED in storage. Once Postgres is back, the team
    deployment's daemon (run monitoring, from the team's dagster.yaml) marks it failed."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    import dagster as dg
    import pg_support
    from wait_support import until

    from assets.team import PG_URL_ENV, prepare_team_instance, team_instance

    why = pg_support.available()
    if why:
        pytest.fail(f"the team test needs PostgreSQL: {why} (make setup installs it)")
    team: Team = team_support.two_user_team(tmp_path, SEEDS)
    bin_dir = Path(sys.executable).parent
    with pg_support.server() as pg:
        folder = prepare_team_instance(team, postgres=True)
        config = folder / "dagster.yaml"
        # the operator's settings for this test: look every second, and a run may last 5 s
        text = re.sub(r"poll_interval_seconds: \d+", "poll_interval_seconds: 1", config.read_text())
        config.write_text(re.sub(r"max_runtime_seconds: \d+", "max_runtime_seconds: 5", text))
        env = {**os.environ, PG_URL_ENV: pg.url, "DAGSTER_HOME": str(folder), "DAGSTER_TELEMETRY_DISABLED": "1",
               "AF_REBUILD_PROCESSES": "1"}
        env.pop("AF_TEAM", None)
        monkeypatch.setenv(PG_URL_ENV, pg.url)  # this process reads the team's instance too
        build = subprocess.Popen([str(bin_dir / "af"), "team", "build", "--team", str(team.root), "--json"],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            inst = team_instance(team)
            started = dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])
            run = until(lambda: inst.get_runs(started), 120, "the team run started", build)[0]
            inst.dispose()
            pg.stop()  # the outage
            out, err = build.communicate(timeout=300)
            assert build.returncode == 2, (out, err[-2000:])
            said = json.loads(out)
            assert said["ok"] is False and "could not be made or followed" in said["error"], said
            assert "Traceback" not in out
            pg.start()
            inst = team_instance(team)
            assert inst.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTED, "left unfinished"
            workspace = tmp_path / "monitor.yaml"
            workspace.write_text("load_from: []\n")
            daemon = subprocess.Popen([str(bin_dir / "dagster-daemon"), "run", "-w", str(workspace)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                until(lambda: inst.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE, 120,
                      "run monitoring failing the run", daemon)
            finally:
                daemon.terminate()
                daemon.wait(30)
            messages = [e.dagster_event.message for e in inst.all_logs(run.run_id) if e.dagster_event is not None]
            assert any("maximum runtime" in (m or "") for m in messages), messages[-5:]
            inst.dispose()
        finally:
            if build.poll() is None:  # a failed check leaves nothing running
                build.kill()
                build.wait()


@pytest.mark.slow
def test_a_killed_worker_of_the_pool_costs_a_retry_not_a_user(tmp_path):
    """`af team build --workers 2`: one of its pool's worker processes is killed while a user's
    work holds that user's lock. The pool is started again for the users it had not finished,
    the run passes and every user's certificate passes (their published bytes equal a fresh
    rebuild of their log)."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import psutil
    from wait_support import until

    from assets.instance import LOCK_FILE

    team: Team = team_support.two_user_team(tmp_path, SEEDS)
    env = {**os.environ, "DAGSTER_HOME": str(team.root / "dagster"), "DAGSTER_TELEMETRY_DISABLED": "1",
           "AF_REBUILD_PROCESSES": "1"}
    env.pop("AF_TEAM", None)
    build = subprocess.Popen([str(Path(sys.executable).with_name("af")), "team", "build", "--team", str(team.root),
                              "--workers", "2", "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)

    def held() -> bool:
        return any(team_support.lock_held(m.home.root / LOCK_FILE) for m in team.members())

    def pool_workers() -> list[psutil.Process]:
        return [c for c in psutil.Process(build.pid).children()
                if "spawn_main" in " ".join(c.cmdline()) and "resource_tracker" not in " ".join(c.cmdline())]

    try:
        until(lambda: held() and pool_workers(), 180, "a pool worker in the middle of a user's work", build)
        victim = pool_workers()[0]
        os.kill(victim.pid, signal.SIGKILL)
        out, err = build.communicate(timeout=600)
    finally:
        if build.poll() is None:
            os.killpg(build.pid, signal.SIGKILL)
            build.wait()
    said = json.loads(out)
    assert build.returncode == 0 and said["ok"] and said["team_verdict"] == "pass", (said, err[-2000:])
    for m in team.members():
        own = json.loads(m.home.certificate_path.read_text(encoding="utf-8"))
        assert own["verdict"] == "pass" and own["days"], m.user
    from assets.team import team_instance

    inst = team_instance(team)
    try:
        said_in_run = [e.user_message for e in inst.all_logs(said["run_id"])]
    finally:
        inst.dispose()
    assert any("starting the pool again" in (m or "") for m in said_in_run), "the kill hit a user's work"
