"""Forgetting in a team's user (issue 41): the team's routine table, which counts every user's
actions, is mined again at once when `af forget` runs for a folder of the team named by AF_TEAM,
and never names a routine from the forgotten rows."""

from __future__ import annotations

import json

import team_support

from af_pipeline.interfaces import cli
from af_pipeline.routines.team import mine_team
from af_pipeline.warehouse import team as team_work
from af_pipeline.warehouse.days import log_days

SEEDS = [101, 102]  # the isolation tests' users: their folders are cached once for all the files


def _mined_now(team) -> dict:
    return mine_team({m.user: team_work.user_action_days(m.home) for m in team.members()}, top=50)


def test_af_forget_mines_the_teams_routines_again_without_the_forgotten_day(tmp_path, capsys, monkeypatch):
    from assets.team import build_due_days, write_team_routines

    team = team_support.two_user_team(tmp_path, SEEDS)
    for m in team.members():
        build_due_days(m)
    write_team_routines(team)
    before = json.loads(team.routines_path.read_text(encoding="utf-8"))
    alice = team.member("alice").home
    alice_days = len(team_work.user_action_days(alice))
    assert alice_days > 1 and before["user_days"] == alice_days + len(team_work.user_action_days(team.member("bob").home))

    monkeypatch.setenv("AF_TEAM", str(team.root))
    day = log_days(alice)[0]
    code = cli.main(["forget", "--home", str(alice.root), "--day", day, "--yes", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["team_routines_rewritten"] == str(team.routines_path), out

    after = json.loads(team.routines_path.read_text(encoding="utf-8"))
    assert len(team_work.user_action_days(alice)) == alice_days - 1, "the forgotten day has no actions left"
    assert after == json.loads(json.dumps(_mined_now(team))), "the table is what the users' warehouses hold now"
    assert after["user_days"] == before["user_days"] - 1


def test_a_folder_outside_the_team_leaves_the_teams_table_alone(tmp_path, capsys, monkeypatch):
    from assets.team import write_team_routines

    team = team_support.two_user_team(tmp_path, SEEDS)
    write_team_routines(team)
    table = team.routines_path.read_bytes()
    outsider = team_support.copy_folder(team_support.user_folders(SEEDS, 10)[SEEDS[0]], tmp_path / "outsider")
    monkeypatch.setenv("AF_TEAM", str(team.root))
    code = cli.main(["forget", "--home", str(outsider.root), "--day", log_days(outsider)[0], "--yes", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["team_routines_rewritten"] is None
    assert team.routines_path.read_bytes() == table
