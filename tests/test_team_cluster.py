"""A team of 8 users x 10 days on Dagster's distributed machinery, end to end (issue 15).

The test set-up starts PostgreSQL (run and event storage of the team's instance, Debian's
postgresql 15: tests/pg_support.py) and a dask.distributed LocalCluster of two worker
processes; the team job builds and certifies every user on the cluster (one worker is killed in
the middle of a user's work: another does that user), writes the team certificate and mines the
team routines. Then the same users' folders, copied afresh, are built
with the multiprocess executor: every published file and the team routine table must be byte
for byte the same, and one user's published files the same as their own `af build` makes. That second run also proves the one-writer rule across runs: while another
process holds one user's warehouse lock (as `af build`, a user_memory run or another team run
does while it writes), the team run builds the others and waits for that user, writing nothing
of theirs until the lock is free. Servers are stopped at the end (context managers), and every wait is on a
condition (pg_ctl -w, the cluster's own start-up), never a fixed sleep.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import threading
import time
from pathlib import Path

import pg_support
import pytest
import team_support

from capture.team import Team

SEEDS = list(range(201, 209))  # 8 users, one af synth seed each
DAYS = 10

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
HOLDER = "another-run-holding-the-slot"
WAIT_S = 600.0  # a bound for a stuck run, not a pace: each wait returns as soon as its condition holds


def _published(home: Path) -> dict[str, bytes]:
    pub = home / "published"
    return {str(p.relative_to(pub)): p.read_bytes() for p in sorted(pub.rglob("*")) if p.is_file()}


def _team(root: Path, folders: dict[int, Path]) -> Team:
    team = Team(root / "team")
    team.init()
    for seed, src in folders.items():
        home = team_support.copy_folder(src, root / "users" / f"u{seed}")
        team.add(f"user-{seed}", home.root)
    return team


def _wait_for(what: str, condition, done: threading.Event) -> object:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if done.is_set():
            pytest.fail(f"the team run ended before {what}")
        time.sleep(0.05)
    pytest.fail(f"no {what} within {WAIT_S:.0f} s")


def _run_while_user_locked(team_defs, team: Team, inst, held_user: str):
    """The multiprocess team run (no certification) while another process holds ``held_user``'s
    warehouse lock (what `af build`, a user_memory run or another team run holds while it writes)."""
    import fcntl

    from af_pipeline.warehouse.days import log_days
    from assets.instance import LOCK_FILE

    held = team.member(held_user).home
    others = [m for m in team.members() if m.user != held_user]
    fd = os.open(held.root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    outcome: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["run"] = team_defs.run_team(team, "multiprocess", workers=2, instance=inst, certify=False)
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        def others_built() -> bool:
            return all({p.parent.name for p in m.home.published_dir.glob("*/manifest.json")} == set(log_days(m.home))
                       for m in others)

        _wait_for("build of every user whose folder is free", others_built, done)
        assert not held.published_dir.exists() or not any(held.published_dir.iterdir()), \
            f"{held_user}'s folder is written while another process holds its lock"
        assert not done.is_set(), "the run waits for the lock instead of finishing without that user"
    finally:
        os.close(fd)
    thread.join(WAIT_S)
    assert done.is_set(), "the team run finishes once the lock is free"
    return outcome["run"]


def _working(team: Team, client) -> tuple[str, str] | None:
    """(user, worker address) of a user whose work holds their warehouse lock now, on the worker
    whose task it is."""
    from assets.instance import LOCK_FILE
    from assets.team import step_name

    for m in team.members():
        if not team_support.lock_held(m.home.root / LOCK_FILE):
            continue  # nobody is building this user now
        for worker, keys in client.processing().items():
            if any(str(k).endswith(f"-{step_name(m.user)}") for k in keys):
                return m.user, worker
    return None


@pytest.fixture(scope="module")
def folders() -> dict[int, Path]:
    return team_support.user_folders(SEEDS, DAYS)


def test_eight_users_on_dask_with_postgres_equal_the_multiprocess_build(tmp_path, folders, monkeypatch):
    why = pg_support.available()
    if why:
        pytest.fail(f"the team test needs PostgreSQL: {why} (make setup installs it)")
    from dask.distributed import Client, LocalCluster

    from assets import team as team_defs

    monkeypatch.setenv("AF_REBUILD_PROCESSES", "1")  # two workers already fill both cores
    monkeypatch.setenv("DAGSTER_TELEMETRY_DISABLED", "1")
    with pg_support.postgres() as url:
        monkeypatch.setenv(team_defs.PG_URL_ENV, url)
        dask_team = _team(tmp_path / "dask", folders)
        team_defs.prepare_team_instance(dask_team, postgres=True)
        inst = team_defs.team_instance(dask_team)
        assert type(inst.run_storage).__name__ == "PostgresRunStorage"
        assert type(inst.event_log_storage).__name__ == "PostgresEventLogStorage"
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            pids = set(client.run(os.getpid).values())
            done = threading.Event()
            outcome: dict = {}

            def run() -> None:
                try:
                    outcome["run"] = team_defs.run_team(dask_team, "dask", dask_address=cluster.scheduler_address,
                                                        instance=inst)
                finally:
                    done.set()

            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            # a worker killed in the middle of a user's work: the cluster gives that user's task to
            # a worker again (the nanny starts a new one), and the user is built and certified once
            user, worker = _wait_for("a worker in the middle of a user's work", lambda: _working(dask_team, client), done)
            killed = client.run(os.getpid, workers=[worker])[worker]
            os.kill(killed, signal.SIGKILL)
            thread.join(WAIT_S)
            assert done.is_set(), "the team run finishes after its worker was killed"
            pids |= set(client.run(os.getpid).values())
        out = outcome["run"]
        assert out.ok, out.failures
        # the users' work ran in two or more worker processes of the cluster, as the run's log in
        # Postgres says, and the user whose worker was killed was done by another
        said = {m.group(1): m.group(2) for e in inst.all_logs(out.run_id)
                if (m := re.search(r"^(\S+): built .*\(worker (\S+)\)$", e.user_message or ""))}
        assert set(said) == {m.user for m in dask_team.members()}, said
        assert len(set(said.values())) >= 2 and set(said.values()) <= {f"{socket.gethostname()}:{p}" for p in pids}
        assert said[user] != f"{socket.gethostname()}:{killed}", (user, said[user])
        assert set(inst.get_dynamic_partitions(team_defs.team_assets(str(dask_team.root)).partitions.name)) == {f"user-{s}" for s in SEEDS}

        cert = json.loads(dask_team.certificate_path.read_text())
        assert cert["verdict"] == "pass" and cert["users"] == 8 and cert["passed"] == 8
        for m in dask_team.members():
            own = json.loads(m.home.certificate_path.read_text())  # one certificate in each user's folder
            assert own["verdict"] == "pass" and cert["per_user"][m.user]["days"] == len(own["days"]) > 0
            assert stat.S_IMODE(m.home.root.stat().st_mode) == 0o700
        table = json.loads(dask_team.routines_path.read_text())
        assert table["users"] == 8 and table["user_days"] >= 8 * 6
        assert any(r["users"] >= 2 for r in table["routines"])

        multi_team = _team(tmp_path / "multi", folders)
        team_defs.prepare_team_instance(multi_team, postgres=True)
        out2 = _run_while_user_locked(team_defs, multi_team, team_defs.team_instance(multi_team), "user-203")
        assert out2.ok, out2.failures
    for a, b in zip(dask_team.members(), multi_team.members(), strict=True):
        assert a.user == b.user
        left, right = _published(a.path), _published(b.path)
        assert left and left == right, f"{a.user}: published files differ between executors"
    assert dask_team.routines_path.read_bytes() == multi_team.routines_path.read_bytes()
    # and what the team built for a user is what that user's own `af build` makes of their folder
    from af_pipeline.interfaces import cli

    single = team_support.copy_folder(folders[SEEDS[0]], tmp_path / "single")
    assert cli.main(["build", "--home", str(single.root), "--json"]) == 0
    assert _published(single.root) == _published(dask_team.member(f"user-{SEEDS[0]}").path)
    assert not os.environ.get("AF_TEAM")  # nothing here relied on the environment's team root
