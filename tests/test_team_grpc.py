"""The team code location in the topology Kubernetes runs, in miniature (issue 39): a `dagster
code-server` serving `assets.team:defs` over gRPC, a `dagster-webserver` and a `dagster-daemon`
loading it from a workspace that names that server only, all on loopback with the team's
instance. The webserver lists the team's jobs and sensor; the daemon ticks the `team_users`
sensor, which makes the registered users partitions and launches one run per user through the
code server; each run builds and certifies that user's folder."""

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
RUNS = """{ runsOrError { ... on Runs { results { runId jobName status tags { key value } } } } }"""


@pytest.fixture()
def served(tmp_path) -> Iterator[tuple[Team, int, Path]]:
    from assets.team import prepare_team_instance

    team = team_support.two_user_team(tmp_path, SEEDS)
    dagster_home = prepare_team_instance(team)
    env = dict(os.environ, AF_TEAM=str(team.root), DAGSTER_HOME=str(dagster_home), DAGSTER_TELEMETRY_DISABLED="1",
               AF_REBUILD_PROCESSES="1")
    grpc_port, web_port = free_port(), free_port()
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text("load_from:\n  - grpc_server:\n      host: 127.0.0.1\n"
                         f"      port: {grpc_port}\n      location_name: activity_frames_team\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = [_start([str(BIN / "dagster"), "code-server", "start", "-m", "assets.team", "-a", "defs",
                     "-h", "127.0.0.1", "-p", str(grpc_port)], env, logs / "code-server.log")]
    try:
        until(lambda: listening(grpc_port), 120, "the code server listening", procs[0])
        procs.append(_start([str(BIN / "dagster-webserver"), "-w", str(workspace), "-h", "127.0.0.1",
                             "-p", str(web_port)], env, logs / "webserver.log"))
        procs.append(_start([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], env, logs / "daemon.log"))
        until(lambda: listening(web_port), 120, "the webserver listening", procs[1])
        yield team, web_port, logs
    finally:
        _stop(procs)


def test_the_daemon_builds_each_user_through_the_code_server(served):
    team, port, logs = served
    nodes = _gql(port, REPOS)["repositoriesOrError"]["nodes"]
    assert [n["location"]["name"] for n in nodes] == ["activity_frames_team"]
    jobs = {j["name"] for j in nodes[0]["jobs"]}
    assert {"team_build", "team_build_only", "user_memory_job"} <= jobs, jobs
    assert {(s["name"], s["sensorState"]["status"]) for s in nodes[0]["sensors"]} == {("team_users", "RUNNING")}

    def finished() -> dict[str, str] | None:
        runs = _gql(port, RUNS)["runsOrError"]["results"]
        users = {t["value"]: r["status"] for r in runs for t in r["tags"] if t["key"] == "af/user"}
        if set(users) == {"alice", "bob"} and all(s in ("SUCCESS", "FAILURE", "CANCELED") for s in users.values()):
            return users
        return None

    try:
        outcome = until(finished, 600, "the sensor's run of each user, finished", every=1.0)
    except AssertionError:
        said = {p.name: p.read_text(errors="replace")[-1500:] for p in sorted(logs.iterdir())}
        raise AssertionError(f"runs not finished; the servers said: {said}") from None
    assert outcome == {"alice": "SUCCESS", "bob": "SUCCESS"}, outcome
    for m in team.members():
        cert = json.loads(m.home.certificate_path.read_text(encoding="utf-8"))
        days = [p.name for p in m.home.published_dir.iterdir() if (p / "manifest.json").exists()]
        assert cert["verdict"] == "pass" and sorted(cert["days"]) == sorted(days) and days
