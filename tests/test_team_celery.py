"""A team's users' work on Celery workers, on Postgres (issue 39): the test starts PostgreSQL (the
team's runs and events), a Redis server (the broker and result backend, Debian's redis-server)
and a Celery worker of two processes (`celery -A assets.team_celery worker`), then runs `af team
build --executor celery` on a team of two users, one whose log is damaged and one with no capture
yet. One worker process is killed in the middle of a user's work: the task goes back to the queue
(acks_late, reject on a lost worker), another process does that user. The two healthy users pass,
the damaged one fails with a certificate saying why, the empty one is pending, and the team
certificate and routines are written before the run fails. Every wait is on a condition."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pg_support
import psutil
import pytest
import team_support
from wait_support import free_port, listening, until

from capture.team import Team

SEEDS = [101, 102]  # the isolation tests' users: their folders are cached once for all the files
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _redis_server() -> str | None:
    return shutil.which("redis-server") or next((p for p in ("/usr/bin/redis-server",) if Path(p).exists()), None)


@pytest.fixture()
def broker(tmp_path) -> Iterator[str]:
    exe = _redis_server()
    if exe is None:
        pytest.fail("the Celery test needs redis-server (make setup installs it: apt-get install redis-server)")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        until(lambda: listening(port), 60, "redis-server listening", proc)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture()
def worker(broker, tmp_path) -> Iterator[subprocess.Popen[bytes]]:
    env = dict(os.environ, AF_CELERY_BROKER=broker, AF_REBUILD_PROCESSES="1", DAGSTER_TELEMETRY_DISABLED="1")
    env.pop("AF_TEAM", None)
    with (tmp_path / "worker.log").open("wb") as log:
        proc = subprocess.Popen([str(BIN / "celery"), "-A", "assets.team_celery", "worker", "--concurrency", "2",
                                 "--pool", "prefork", "--loglevel", "INFO", "--without-gossip", "--without-mingle",
                                 "-n", "af-test@%h"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        until(lambda: len(_pool(proc)) == 2 and "ready" in (tmp_path / "worker.log").read_text(errors="replace"),
              120, "the Celery worker ready", proc)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _pool(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        return psutil.Process(proc.pid).children()
    except psutil.Error:
        return []


def _holding(team: Team, users: list[str], procs: list[psutil.Process]) -> tuple[str, psutil.Process] | None:
    """(user, worker process) of one of ``users`` whose work holds their warehouse lock now (the
    lock file's owner in /proc/locks), if any."""
    from assets.instance import LOCK_FILE

    inodes = {}
    for m in team.members():
        if m.user not in users:
            continue
        path = m.home.root / LOCK_FILE
        if team_support.lock_held(path):
            inodes[os.stat(path).st_ino] = m.user
    if not inodes:
        return None
    owners = {}
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK" and int(parts[5].split(":")[-1]) in inodes:
            owners[int(parts[4])] = inodes[int(parts[5].split(":")[-1])]
    return next(((owners[p.pid], p) for p in procs if p.pid in owners), None)


def test_celery_workers_build_the_team_a_killed_one_costs_a_retry_and_failures_stay_local(tmp_path, broker, worker, monkeypatch):
    why = pg_support.available()
    if why:
        pytest.fail(f"the team test needs PostgreSQL: {why} (make setup installs it)")
    from assets.team import PG_URL_ENV, prepare_team_instance, team_instance

    team = team_support.two_user_team(tmp_path, SEEDS)
    # carol's log is damaged (her sealed segments overwritten); dave was added with no capture yet
    carol = team_support.copy_folder(team_support.user_folders(SEEDS, 10)[SEEDS[1]], tmp_path / "carol")
    for segment in sorted((carol.root / "log" / "sealed").rglob("*.parquet")):
        segment.write_bytes(b"not a segment\n")
    team.add("carol", carol.root)
    team.add("dave", tmp_path / "dave", create_tz="UTC")
    with pg_support.postgres() as url:
        monkeypatch.setenv(PG_URL_ENV, url)
        prepare_team_instance(team, postgres=True)
        env = dict(os.environ, DAGSTER_TELEMETRY_DISABLED="1")
        env.pop("AF_TEAM", None)
        build = subprocess.Popen([str(BIN / "af"), "team", "build", "--team", str(team.root), "--executor", "celery",
                                  "--broker", broker, "--json"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            killed_user, victim = until(lambda: _holding(team, ["alice", "bob"], _pool(worker)), 300,
                                        "a Celery worker process in a user's work", build)
            os.kill(victim.pid, signal.SIGKILL)
            out, err = build.communicate(timeout=600)
        finally:
            if build.poll() is None:
                build.kill()
                build.wait()
        said = json.loads(out)
        # the run fails because carol does, after every certificate and the routines are written
        assert build.returncode == 1 and said["team_verdict"] == "fail", (said, err[-2000:])
        assert said["failed_users"] == ["carol"] and said["pending_users"] == ["dave"], said
        inst = team_instance(team)
        try:
            lines = [e.user_message or "" for e in inst.all_logs(said["run_id"])]
        finally:
            inst.dispose()
    workers = {m.group(1): m.group(2) for line in lines if (m := re.search(r"^(\S+): built .*\(worker (\S+)\)$", line))}
    assert {"alice", "bob"} <= set(workers), lines[-20:]
    assert workers[killed_user] != f"{socket.gethostname()}:{victim.pid}", "the killed process's user was redone"
    assert {int(w.split(":")[1]) for w in workers.values()} <= {p.pid for p in _pool(worker)} | {victim.pid}
    for user in ("alice", "bob"):
        own = json.loads(team.member(user).home.certificate_path.read_text(encoding="utf-8"))
        assert own["verdict"] == "pass" and own["days"], user
    carols = json.loads(carol.certificate_path.read_text(encoding="utf-8"))
    assert carols["verdict"] == "fail" and "failed" in carols["problem"], carols
    cert = json.loads(team.certificate_path.read_text(encoding="utf-8"))
    assert {u: v["verdict"] for u, v in cert["per_user"].items()} == {
        "alice": "pass", "bob": "pass", "carol": "fail", "dave": "pending"}
    assert json.loads(team.routines_path.read_text(encoding="utf-8"))["users"] == 2, "mined over those that built"
