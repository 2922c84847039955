"""Team runs at once on one dask cluster, their runs and events in one Postgres (issue 39): dagster-dask keys each step's task by job and
step name only (dagster-io/dagster#21418), so two teams with the same user names used to be handed
each other's results: the second run reported success having built nothing. The users' tasks
are now keyed by the run's id: two teams, and two runs of one team (a nightly and a manual run),
each get their own results; the second run of one team waits for each user's lock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import team_support

from capture.team import Team

SEEDS = [101, 102]  # the isolation tests' users: their folders are cached once for all the files
pytestmark = [pytest.mark.timeout(900)]


def _published(team: Team) -> dict[str, list[str]]:
    return {m.user: sorted(p.name for p in m.home.published_dir.iterdir() if p.is_dir())
            if m.home.published_dir.is_dir() else [] for m in team.members()}


def test_three_team_runs_at_once_on_one_cluster(tmp_path):
    """Three `af team build --executor dask` processes at once against one cluster: two teams with
    the same user names (two departments) and a second run of the first (a nightly and a manual
    run). Each run passes, each team's users are built and certified in their own folders."""
    import os
    import subprocess
    import sys

    import pg_support
    from dask.distributed import LocalCluster

    from assets.team import PG_URL_ENV, prepare_team_instance

    why = pg_support.available()
    if why:
        pytest.fail(f"the team test needs PostgreSQL: {why} (make setup installs it)")
    teams = [team_support.two_user_team(tmp_path / name, SEEDS) for name in ("east", "west")]
    for team in teams:
        prepare_team_instance(team, postgres=True)  # both teams' runs and events in one database
    af = str(Path(sys.executable).with_name("af"))
    env = dict(os.environ, AF_REBUILD_PROCESSES="1", DAGSTER_TELEMETRY_DISABLED="1")
    env.pop("AF_TEAM", None)
    with pg_support.postgres() as url, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        env[PG_URL_ENV] = url
        procs = [subprocess.Popen([af, "team", "build", "--team", str(team.root), "--executor", "dask",
                                   "--dask-address", cluster.scheduler_address, "--json"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for team in [*teams, teams[0]]]
        said = [p.communicate(timeout=800) for p in procs]
    for team, proc, (out, err) in zip([*teams, teams[0]], procs, said, strict=True):
        assert proc.returncode == 0, (out, err[-2000:])
        report = json.loads(out)
        assert report["ok"] and report["team_verdict"] == "pass", report
        built = _published(team)
        assert all(built[u] for u in ("alice", "bob")), f"{team.root}: a user was not built: {built}"
        for m in team.members():
            own = json.loads(m.home.certificate_path.read_text(encoding="utf-8"))
            assert own["verdict"] == "pass" and len(own["days"]) == len(built[m.user])
