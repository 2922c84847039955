"""Team code locations in the topology Kubernetes runs, in miniature (issue 39): for each of two
team roots a `dagster code-server` serving `assets.team:defs` over gRPC (its own ``AF_TEAM``),
and one `dagster-webserver` and one `dagster-daemon` loading both from a workspace that names the
servers only, all on loopback with one instance (one database for both teams). The webserver
lists each team's jobs, sensor and its own user_memory asset; the daemon ticks each team's
`team_users` sensor, which makes that team's users partitions of its own and launches one run
per user through that team's code server; each run builds and certifies that user's folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import team_support
from wait_support import free_port, listening, until

from capture.team import Team

SEEDS = [101, 102]  # the isolation tests' users: their folders are cached once for all the files
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _gql(port: int, query: str) -> dict[str, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        body = json.loads(r.read())
    assert "errors" not in body, body
    return body["data"]  # type: ignore[no-any-return]


REPOS = """{ repositoriesOrError { ... on RepositoryConnection { nodes {
  name location { name } jobs { name } sensors { name sensorState { status } } } } } }"""
ASSETS = "{ assetNodes { assetKey { path } } }"
RUNS = """{ runsOrError { ... on Runs { results { runId jobName status tags { key value } } } } }"""


@pytest.fixture()
def served(tmp_path) -> Iterator[tuple[list[Team], int, Path]]:
    from assets.team import prepare_team_instance, team_instance

    east = team_support.two_user_team(tmp_path / "east", SEEDS)
    west = Team(tmp_path / "west" / "team")
    west.init()
    west.add("carol", team_support.copy_folder(team_support.user_folders(SEEDS, 10)[SEEDS[0]], tmp_path / "carol").root)
    dagster_home = prepare_team_instance(east)  # the deployment's one instance
    # its storage made once before the servers start (as `dagster instance migrate` does in a
    # deployment): a webserver and a daemon starting at once on a new SQLite instance both wrote
    # its schema version, and the webserver exited ("more than one head")
    team_instance(east).dispose()
    env = dict(os.environ, DAGSTER_HOME=str(dagster_home), DAGSTER_TELEMETRY_DISABLED="1", AF_REBUILD_PROCESSES="1")
    env.pop("AF_TEAM", None)
    ports = {"east": free_port(), "west": free_port()}
    web_port = free_port()
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text("load_from:\n" + "".join(
        f"  - grpc_server:\n      host: 127.0.0.1\n      port: {port}\n      location_name: team_{name}\n"
        for name, port in ports.items()))
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = []
    try:
        for (name, port), team in zip(ports.items(), (east, west), strict=True):
            procs.append(_start([str(BIN / "dagster"), "code-server", "start", "-m", "assets.team", "-a", "defs",
                                 "-h", "127.0.0.1", "-p", str(port)], {**env, "AF_TEAM": str(team.root)},
                                logs / f"code-server-{name}.log"))
        for proc, port in zip(procs, ports.values(), strict=True):
            until(lambda p=port: listening(p), 120, "the code servers listening", proc)
        procs.append(_start([str(BIN / "dagster-webserver"), "-w", str(workspace), "-h", "127.0.0.1",
                             "-p", str(web_port)], env, logs / "webserver.log"))
        procs.append(_start([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], env, logs / "daemon.log"))
        until(lambda: listening(web_port), 120, "the webserver listening", procs[-2])
        yield [east, west], web_port, logs
    finally:
        _stop(procs)


def test_the_daemon_builds_each_user_of_two_teams_through_their_code_servers(served):
    from assets.team import team_key

    teams, port, logs = served
    east, west = teams
    nodes = {n["location"]["name"]: n for n in _gql(port, REPOS)["repositoriesOrError"]["nodes"]}
    assert sorted(nodes) == ["team_east", "team_west"]
    for node in nodes.values():
        jobs = {j["name"] for j in node["jobs"]}
        assert {"team_build", "team_build_only", "user_memory_job"} <= jobs, jobs
        assert {(s["name"], s["sensorState"]["status"]) for s in node["sensors"]} == {("team_users", "RUNNING")}
    keys = {tuple(a["assetKey"]["path"]) for a in _gql(port, ASSETS)["assetNodes"]}
    assert keys == {(team_key(east.root), "user_memory"), (team_key(west.root), "user_memory")}

    def finished() -> dict[str, str] | None:
        runs = _gql(port, RUNS)["runsOrError"]["results"]
        users = {t["value"]: r["status"] for r in runs for t in r["tags"] if t["key"] == "af/user"}
        if set(users) == {"alice", "bob", "carol"} and all(s in ("SUCCESS", "FAILURE", "CANCELED") for s in users.values()):
            return users
        return None

    try:
        outcome = until(finished, 600, "the sensors' run of each user, finished", every=1.0)
    except AssertionError:
        said = {p.name: p.read_text(errors="replace")[-1500:] for p in sorted(logs.iterdir())}
        raise AssertionError(f"runs not finished; the servers said: {said}") from None
    assert outcome == {"alice": "SUCCESS", "bob": "SUCCESS", "carol": "SUCCESS"}, outcome
    for m in [*east.members(), *west.members()]:
        cert = json.loads(m.home.certificate_path.read_text(encoding="utf-8"))
        days = [p.name for p in m.home.published_dir.iterdir() if (p / "manifest.json").exists()]
        assert cert["verdict"] == "pass" and sorted(cert["days"]) == sorted(days) and days
    import dagster as dg

    from assets.team import team_assets

    inst = dg.DagsterInstance.from_config(str(east.root / "dagster"))
    try:
        for team, users in ((east, ["alice", "bob"]), (west, ["carol"])):
            assert inst.get_dynamic_partitions(team_assets(str(team.root)).partitions.name) == users
    finally:
        inst.dispose()
