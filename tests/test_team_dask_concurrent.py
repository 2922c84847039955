"""Two team runs at once on one dask cluster (issue 39): dagster-dask keys each step's task by
job and step name only (dagster-io/dagster#21418), so two teams with the same user names used to
be handed each other's results: the second run reported success having built nothing. Each
team's dask job now has a name of its own, and a second dask run of one team while the first is
in progress is refused with a sentence."""

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


def test_two_teams_with_the_same_user_names_at_once_on_one_cluster(tmp_path):
    """Two `af team build --executor dask` processes at once (a nightly and a manual run, or two
    departments) against one cluster: each team's users are built and certified in their own
    folders, and each team certificate passes."""
    import os
    import subprocess
    import sys

    from dask.distributed import LocalCluster

    teams = [team_support.two_user_team(tmp_path / name, SEEDS) for name in ("east", "west")]
    af = str(Path(sys.executable).with_name("af"))
    env = dict(os.environ, AF_REBUILD_PROCESSES="1", DAGSTER_TELEMETRY_DISABLED="1")
    env.pop("AF_TEAM", None)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        procs = [subprocess.Popen([af, "team", "build", "--team", str(team.root), "--executor", "dask",
                                   "--dask-address", cluster.scheduler_address, "--json"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for team in teams]
        said = [p.communicate(timeout=800) for p in procs]
    for team, proc, (out, err) in zip(teams, procs, said, strict=True):
        assert proc.returncode == 0, (out, err[-2000:])
        report = json.loads(out)
        assert report["ok"] and report["team_verdict"] == "pass", report
        built = _published(team)
        assert all(built[u] for u in ("alice", "bob")), f"{team.root}: a user was not built: {built}"
        for m in team.members():
            own = json.loads(m.home.certificate_path.read_text(encoding="utf-8"))
            assert own["verdict"] == "pass" and len(own["days"]) == len(built[m.user])


def test_a_second_dask_run_of_one_team_is_refused_while_one_runs(tmp_path):
    import fcntl
    import os

    from assets import team as team_defs
    from capture.errors import UserError

    team = team_support.two_user_team(tmp_path, SEEDS)
    fd = os.open(team.root / team_defs.DASK_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a dask run of this team holds while it runs
        with pytest.raises(UserError, match="another dask run of the team .* is in progress"):
            team_defs.run_team(team, "dask", {"cluster": {"existing": {"address": "tcp://127.0.0.1:9"}}})
    finally:
        os.close(fd)
