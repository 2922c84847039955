"""A team of 8 users x 10 days on Dagster's distributed machinery, end to end (issue 15).

The test set-up starts PostgreSQL (run and event storage of the team's instance, Debian's
postgresql 15: tests/pg_support.py) and a dask.distributed LocalCluster of two worker
processes; the team job builds and certifies every user on the cluster, writes the team
certificate and mines the team routines. Then the same users' folders, copied afresh, are built
with the multiprocess executor: every published file and the team routine table must be byte
for byte the same. That second run also proves the one-writer rule across runs: while another
run holds one user's pool slot in the Postgres instance (the test claims it, the same claim a
running step of another run makes), the team run builds the others and queues that user's step,
writing nothing of theirs until the slot is free. Servers are stopped at the end (context managers), and every wait is on a
condition (pg_ctl -w, the cluster's own start-up), never a fixed sleep.
"""

from __future__ import annotations

import json
import os
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


def _run_while_slot_held(team_defs, team: Team, inst, held_user: str):
    """The multiprocess team run (no certification) while another run holds ``held_user``'s slot."""
    storage = inst.event_log_storage
    pool = f"{team_defs.USER_POOL_PREFIX}{held_user}"
    storage.initialize_concurrency_limit_to_default(pool)
    assert storage.get_concurrency_info(pool).slot_count == 1, "the team's dagster.yaml gives each user one slot"
    assert storage.claim_concurrency_slot(pool, HOLDER, "build").slot_status.value == "CLAIMED"
    outcome: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["run"] = team_defs.run_team(team, "multiprocess", {"max_concurrent": 2}, instance=inst,
                                                certify=False)
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        def queued() -> str | None:
            waiting = [p.run_id for p in storage.get_concurrency_info(pool).pending_steps if p.run_id != HOLDER]
            return waiting[0] if waiting else None

        run_id = str(_wait_for(f"step of {held_user} queued behind the other run's slot", queued, done))

        def others_built() -> bool:
            ok = {e.step_key for e in inst.all_logs(run_id, of_type=team_defs.dg.DagsterEventType.STEP_SUCCESS)}
            return all(f"build_{team_defs.step_name(m.user)}" in ok for m in team.members() if m.user != held_user)

        _wait_for("build of every user whose pool is free", others_built, done)
        assert not (team.member(held_user).home.published_dir).exists() or not any(
            team.member(held_user).home.published_dir.iterdir()), f"{held_user}'s folder is written while another run holds the slot"
        assert not done.is_set(), "the run waits for the slot instead of finishing without that user"
    finally:
        storage.free_concurrency_slots_for_run(HOLDER)
    thread.join(WAIT_S)
    assert done.is_set(), "the team run finishes once the slot is free"
    return outcome["run"]


@pytest.fixture(scope="module")
def folders() -> dict[int, Path]:
    return team_support.user_folders(SEEDS, DAYS)


def test_eight_users_on_dask_with_postgres_equal_the_multiprocess_build(tmp_path, folders, monkeypatch):
    why = pg_support.available()
    if why:
        pytest.fail(f"the team test needs PostgreSQL: {why} (make setup installs it)")
    from dask.distributed import LocalCluster

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
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            out = team_defs.run_team(dask_team, "dask", {"cluster": {"existing": {"address": cluster.scheduler_address}}},
                                     instance=inst)
        assert out.ok, out.failures
        # the steps ran in two or more worker processes, recorded in Postgres
        pids = {e.dagster_event.pid for e in inst.all_logs(out.run_id)
                if e.dagster_event is not None and e.dagster_event.event_type_value == "STEP_START"}
        assert len(pids) >= 2
        assert set(inst.get_dynamic_partitions(team_defs.USERS.name)) == {f"user-{s}" for s in SEEDS}

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
        out2 = _run_while_slot_held(team_defs, multi_team, team_defs.team_instance(multi_team), "user-203")
        assert out2.ok, out2.failures
    for a, b in zip(dask_team.members(), multi_team.members(), strict=True):
        assert a.user == b.user
        left, right = _published(a.path), _published(b.path)
        assert left and left == right, f"{a.user}: published files differ between executors"
    assert dask_team.routines_path.read_bytes() == multi_team.routines_path.read_bytes()
    assert not os.environ.get("AF_TEAM")  # nothing here relied on the environment's team root
