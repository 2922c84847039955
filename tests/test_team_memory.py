"""The team's per-user partitioned asset and its code location (issue 15): materializing one
user's partition builds and certifies that user's folder alone; the team location loads with a
fixed set of steps whatever the number of users."""

from __future__ import annotations

import json

import dagster as dg
import pytest
import team_support

from capture.team import Team

SEEDS = [101, 102]  # the isolation tests' users: their folders are cached once for both files


@pytest.fixture()
def team(tmp_path, monkeypatch) -> Team:
    team = team_support.two_user_team(tmp_path, SEEDS)
    monkeypatch.setenv("AF_TEAM", str(team.root))
    return team


def _tree(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _tick(team, instance) -> dg.SensorResult:
    from assets.team import build_team_sensor

    return build_team_sensor(team)(dg.build_sensor_context(instance=instance))


def test_materializing_one_users_partition_builds_and_certifies_that_user_only(team):
    from assets.team import team_assets

    parts = team_assets(str(team.root))
    alice, bob = (team.member("alice"), team.member("bob"))
    bob_before = _tree(bob.home.root)
    instance = dg.DagsterInstance.ephemeral()
    # the sensor's first tick makes both registered users partitions and asks to build both
    first = _tick(team, instance)
    assert [r.partition_keys for r in first.dynamic_partitions_requests] == [["alice", "bob"]]
    assert [(r.partition_key, r.tags["af/user"]) for r in first.run_requests] == [("alice", "alice"), ("bob", "bob")]
    instance.add_dynamic_partitions(parts.partitions.name, list(first.dynamic_partitions_requests[0].partition_keys))

    result = dg.materialize([parts.user_memory], partition_key="alice", instance=instance)

    assert result.success
    meta = result.asset_materializations_for_node(parts.user_memory.node_def.name)[0].metadata
    assert meta["verdict"].value == "pass"
    days = [d.name for d in sorted(alice.home.published_dir.iterdir()) if d.is_dir()]
    assert meta["days"].value == len(days) >= 5
    cert = json.loads((alice.home.root / "certificate.json").read_text())
    assert cert["verdict"] == "pass" and len(cert["days"]) == len(days)
    assert _tree(bob.home.root) == bob_before, "bob's folder is not touched by alice's partition"
    # the next tick adds no partition and asks only for bob, whose days are still unpublished
    second = _tick(team, instance)
    assert second.dynamic_partitions_requests == [] and [r.partition_key for r in second.run_requests] == ["bob"]
    assert second.run_requests[0].run_key == first.run_requests[1].run_key, "one sealing, one run key"
    # alice's partition again with nothing new: no day built or certified again, the same verdict
    again = dg.materialize([parts.user_memory], partition_key="alice", instance=instance)
    meta = again.asset_materializations_for_node(parts.user_memory.node_def.name)[0].metadata
    assert again.success and meta["verdict"].value == "pass" and meta["days"].value == len(days)
    assert meta["days built"].value == 0 and meta["days certified now"].value == 0


def test_an_unregistered_user_is_no_partition(team):
    from assets.team import register_users, team_assets

    instance = dg.DagsterInstance.ephemeral()
    register_users(instance, team)
    with pytest.raises(dg.DagsterError):
        dg.materialize([team_assets(str(team.root)).user_memory], partition_key="mallory", instance=instance)


def test_two_runs_registering_the_same_new_users_at_once_both_go_on(team):
    """Two runs of a new team starting together: both find alice and bob missing and both add
    them; the storage's unique index refuses the later insert (IntegrityError). That run goes on,
    since every user is a partition; a refused add that leaves a user missing still fails."""
    import sqlalchemy.exc

    from assets.team import register_users, team_assets

    instance = dg.DagsterInstance.ephemeral()
    name = team_assets(str(team.root)).partitions.name

    class RacedBy:
        """This run's view of the instance, with another run's insert landing just before its own."""

        def __init__(self, other_adds: list[str]) -> None:
            self.other_adds = other_adds

        def get_dynamic_partitions(self, partitions: str) -> list[str]:
            return list(instance.get_dynamic_partitions(partitions))

        def add_dynamic_partitions(self, partitions: str, keys: list[str]) -> None:
            instance.add_dynamic_partitions(partitions, self.other_adds)
            raise sqlalchemy.exc.IntegrityError("INSERT INTO dynamic_partitions ...", {}, Exception("UNIQUE"))

    register_users(RacedBy(["alice", "bob"]), team)
    assert instance.get_dynamic_partitions(name) == ["alice", "bob"]

    instance = dg.DagsterInstance.ephemeral()  # a new team again
    with pytest.raises(sqlalchemy.exc.IntegrityError):
        register_users(RacedBy(["alice"]), team)  # bob is still missing: that is a failure


def test_the_team_code_location_does_not_grow_with_the_users(team, tmp_path):
    """The team jobs have the same four steps for two users and for three (issue 39: a static graph
    of two ops per user made the location 30,012 op nodes at 5,000 users), and no step is named
    after a user."""
    from assets.team import build_team_definitions

    def steps() -> dict[str, set[str]]:
        defs = build_team_definitions(team)
        return {name: {node.name for node in defs.resolve_job_def(name).graph.nodes}
                for name in ("team_build", "team_build_only")}

    two = steps()
    team.add("carol", tmp_path / "carol", create_tz="UTC")
    assert steps() == two == {
        "team_build": {"build_and_certify_users", "team_certificate", "team_routines", "team_verdict"},
        "team_build_only": {"build_users", "all_built", "team_routines"},
    }


def test_the_team_code_location_loads_in_dagster(team, tmp_path):
    """`dagster definitions validate` on workspace-team.yaml (the location `dagster dev`, the
    webserver and a code server load): every job of every executor in one repository, with one
    definition per op name (issue 39: the dask and multiprocess jobs defined build_<user> twice)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    home = tmp_path / "dagster-home"
    home.mkdir()
    env = dict(os.environ, AF_TEAM=str(team.root), DAGSTER_HOME=str(home), DAGSTER_TELEMETRY_DISABLED="1")
    dagster = str(Path(sys.executable).with_name("dagster"))
    done = subprocess.run([dagster, "definitions", "validate", "-w", "workspace-team.yaml"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert "Validation successful for code location activity_frames_team" in said


def test_a_removed_user_leaves_the_registry_and_the_partitions_but_keeps_their_folder(team, capsys):
    from af_pipeline.interfaces import cli
    from assets.team import register_users, team_assets, team_instance

    inst = team_instance(team)
    register_users(inst, team)
    inst.dispose()
    bob = team.member("bob")
    before = _tree(bob.home.root)

    code = cli.main(["team", "remove", "bob", "--team", str(team.root), "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out) == {
        "user": "bob", "path": str(bob.path), "partition_removed": True}
    assert [m.user for m in team.members()] == ["alice"]
    inst = team_instance(team)
    try:
        assert inst.get_dynamic_partitions(team_assets(str(team.root)).partitions.name) == ["alice"]
    finally:
        inst.dispose()
    assert _tree(bob.home.root) == before, "bob's folder is his: nothing in it changes"

    assert cli.main(["team", "remove", "bob", "--team", str(team.root)]) == 2
    assert "no user 'bob' in the team" in capsys.readouterr().err
