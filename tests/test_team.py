"""The team root (capture/team.py, `af team`), team routines and the team certificate: no Dagster."""

from __future__ import annotations

import json
import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler.actions import Action
from af_pipeline.interfaces import cli
from af_pipeline.routines.team import PARAM, mine_team
from capture.home import Home
from capture.team import USER_NAME, Team, TeamError, check_user_name
from certification import team as team_cert


def _folder(path, tz="Europe/Paris") -> Home:
    h = Home(path)
    h.init(tz=tz)
    return h


def _tree(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_existing_folder_joins_unchanged_and_private(tmp_path):
    alice = _folder(tmp_path / "alice")
    (alice.root / "log").mkdir()
    (alice.root / "log" / "x").write_bytes(b"rows")
    alice.root.chmod(0o755)  # an older version made folders 0755
    before = _tree(alice.root)
    team = Team(tmp_path / "team")
    team.init()
    team.add("alice", alice.root)
    assert _tree(alice.root) == before  # nothing of the user is written, moved or copied
    assert stat.S_IMODE(alice.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(team.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(team.registry_path.stat().st_mode) == 0o600
    assert [(m.user, m.path) for m in team.members()] == [("alice", alice.root)]
    assert not any(p.name == "alice" for p in team.root.iterdir())


def test_two_users_never_share_or_nest_a_folder(tmp_path):
    team = Team(tmp_path / "team")
    team.init()
    a = _folder(tmp_path / "a")
    team.add("alice", a.root)
    with pytest.raises(TeamError, match="already in the team"):
        team.add("alice", _folder(tmp_path / "other").root)
    with pytest.raises(TeamError, match="overlaps the folder of user 'alice'"):
        team.add("bob", a.root)
    with pytest.raises(TeamError, match="overlaps"):
        team.add("bob", _folder(a.root / "inner").root)
    with pytest.raises(TeamError, match="holds the team root"):
        team.add("carol", tmp_path)  # checked before anything is made there
    assert [m.user for m in team.members()] == ["alice"]


PARTS = st.sampled_from(["a", "b", "ab", "a.b", "a-b", "b0"])


@settings(max_examples=300, deadline=None)
@given(registered=st.lists(st.lists(PARTS, min_size=1, max_size=4), max_size=8),
       new=st.lists(PARTS, min_size=1, max_size=4))
def test_a_folder_overlaps_exactly_the_users_folders_it_holds_or_lies_in(registered, new):
    """The registry's overlap rule, looked up by ancestors and sorted prefixes, says what comparing
    the folder with every registered folder says (names like a, ab and a.b share prefixes)."""
    from pathlib import Path

    from capture.team import _overlapping

    users = {f"u{i}": "/srv/" + "/".join(parts) for i, parts in enumerate(registered)}
    folder = Path("/srv/" + "/".join(new))
    clashes = {u for u, p in users.items() if folder.is_relative_to(p) or Path(p).is_relative_to(folder)}
    found = _overlapping(folder, users)
    assert (found in clashes) if clashes else found is None


@settings(max_examples=200, deadline=None)
@given(users=st.dictionaries(st.from_regex(USER_NAME, fullmatch=True), st.text(max_size=30), max_size=6))
def test_the_registry_text_is_jsons_own_indented_text(users):
    from capture.team import TEAM_VERSION, registry_text

    payload = {"team_version": TEAM_VERSION, "users": {u: {"path": p} for u, p in sorted(users.items())}}
    assert registry_text(users) == json.dumps(payload, indent=2, sort_keys=True) + "\n"


def test_users_added_at_once_are_all_kept(tmp_path):
    """Eight `af team add` at the same moment (a provisioning script in parallel): each user is in
    the registry after, none dropped by another's write."""
    import threading

    team = Team(tmp_path / "team")
    team.init()
    start = threading.Barrier(8)

    def add(i: int) -> None:
        start.wait()
        team.add(f"user{i}", tmp_path / f"home{i}", create_tz="UTC")

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [m.user for m in team.members()] == [f"user{i}" for i in range(8)]


def test_a_path_without_a_data_folder_is_refused_unless_created(tmp_path):
    team = Team(tmp_path / "team")
    team.init()
    with pytest.raises(TeamError, match="not an activity-frames data folder"):
        team.add("bob", tmp_path / "bob")
    assert not (tmp_path / "bob").exists()
    m = team.add("bob", tmp_path / "bob", create_tz="Asia/Tokyo")
    assert m.home.settings().tz == "Asia/Tokyo"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=70))
def test_user_names_are_accepted_exactly_when_safe(name):
    safe = bool(USER_NAME.match(name)) and not name.endswith(".")
    if safe:
        assert check_user_name(name) == name
        assert "/" not in name and name not in (".", "..") and name == name.lower()
    else:
        with pytest.raises(TeamError, match="is not valid"):
            check_user_name(name)


def test_cli_init_add_list(tmp_path, capsys):
    root = tmp_path / "team"
    _folder(tmp_path / "alice")
    assert cli.main(["team", "init", str(root)]) == 0
    assert cli.main(["team", "add", "alice", str(tmp_path / "alice"), "--team", str(root)]) == 0
    assert cli.main(["team", "add", "Bad/Name", str(tmp_path / "alice"), "--team", str(root)]) == 2
    assert "user name 'Bad/Name' is not valid" in capsys.readouterr().err
    assert cli.main(["team", "add", "bob", str(tmp_path / "nobody"), "--team", str(root)]) == 2
    assert "not an activity-frames data folder" in capsys.readouterr().err
    assert cli.main(["team", "list", "--team", str(root), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == {"users": [{"user": "alice", "path": str((tmp_path / "alice").resolve()), "tz": "Europe/Paris"}]}
    os.environ.pop("AF_TEAM", None)
    assert cli.main(["team", "list"]) == 2
    assert "no team root" in capsys.readouterr().err


def test_team_build_refuses_an_incomplete_executor_configuration(tmp_path, capsys):
    root = tmp_path / "team"
    assert cli.main(["team", "init", str(root)]) == 0
    assert cli.main(["team", "build", "--team", str(root), "--executor", "dask"]) == 2
    assert "needs --dask-address" in capsys.readouterr().err
    assert cli.main(["team", "build", "--team", str(root), "--workers", "0"]) == 2
    assert cli.main(["team", "build", "--team", str(root)]) == 2
    assert "has no users yet" in capsys.readouterr().err


def test_a_broken_registry_is_an_error_naming_the_file(tmp_path):
    team = Team(tmp_path / "team")
    team.init()
    team.registry_path.write_text('{"team_version": 1, "users": {"x": 3}}')
    with pytest.raises(TeamError, match=r"team\.json: user 'x'"):
        team.members()


# --- routines across users ------------------------------------------------------------------


def _act(symbol_target: str, day: str, i: int, session: int, op: str = "click", role: str | None = "button",
         app: str = "Firefox") -> Action:
    sym = f"{op}:{symbol_target} [{role}]" if op == "click" and role else f"{op}:{symbol_target}"
    return Action(symbol=sym, op=op, target=symbol_target, role=role if op == "click" else None, named=True,
                  app=app, url="https://x.test/secret", url_template="x.test/secret", day=day, stream="s",
                  ts_us=i * 1_000_000, end_us=i * 1_000_000 + 1, session=session, refs=(f"ref{i}",))


def _routine_days(private: str, n_days: int, day0: int = 1) -> list[list[Action]]:
    days = []
    for d in range(n_days):
        day = f"2026-06-{day0 + d:02d}"
        acts, i = [], 0
        for rep in range(3):  # one session each: a routine never spans two
            for t in ("Open", private, "Save", "Close"):
                acts.append(_act(t, day, i, rep))
                i += 1
        days.append(acts)
    return days


def test_team_routines_count_users_and_days_and_name_nothing_only_one_user_saw():
    streams = {
        "alice": _routine_days("Customer Alice Ltd", 2),
        "bob": _routine_days("Ticket 4711 of Bob", 3),
        "carol": _routine_days("Customer Carol GmbH", 1),
    }
    table = mine_team(streams)
    text = json.dumps(table)
    for private in ("Alice Ltd", "4711", "Carol GmbH", "secret", "ref0"):
        assert private not in text
    top = table["routines"][0]
    # generalised over each user's own record: one routine done by all three
    assert top["symbols"] == ["click:Open [button]", f"click:{PARAM} [button]", "click:Save [button]",
                              "click:Close [button]"]
    assert top["users"] == 3 and top["user_days"] == 6
    assert top["per_user"] == {"alice": 6, "bob": 9, "carol": 3}
    assert table["users"] == 3 and table["user_days"] == 6


def test_a_target_two_users_share_stays_named():
    streams = {"alice": _routine_days("Shared Form", 1), "bob": _routine_days("Shared Form", 1),
               "carol": _routine_days("Carol Only", 1)}
    rows = {tuple(r["symbols"]): r for r in mine_team(streams)["routines"]}
    shared = rows[("click:Open [button]", "click:Shared Form [button]", "click:Save [button]", "click:Close [button]")]
    assert shared["per_user"] == {"alice": 3, "bob": 3}


def test_team_routines_do_not_depend_on_registry_order():
    a, b = _routine_days("A thing", 2), _routine_days("B thing", 2)
    assert mine_team({"alice": a, "bob": b}) == mine_team(dict([("bob", b), ("alice", a)]))


def test_team_certificate_fails_when_a_user_fails_or_was_not_certified(tmp_path):
    team = Team(tmp_path / "team")
    team.init()
    for u in ("alice", "bob", "carol"):
        team.add(u, _folder(tmp_path / u).root)
    ok = {"verdict": "pass", "days": {"2026-06-01": {"passed": True}}, "log": {"chain_head": "h"}, "code_version": "v"}
    bad = dict(ok, verdict="fail", days={"2026-06-01": {"passed": False, "problem": "title: Secret Doc"}})
    cert = team_cert.write(team, [team_cert.summary("alice", ok), team_cert.summary("bob", bad)])
    assert cert["verdict"] == "fail" and cert["users"] == 3 and cert["passed"] == 1
    assert cert["per_user"]["bob"]["verdict"] == "fail" and cert["per_user"]["bob"]["days_passed"] == 0
    assert cert["per_user"]["carol"]["problem"] == "not certified in this run"
    assert "Secret Doc" not in team.certificate_path.read_text()
    all_ok = team_cert.write(team, [team_cert.summary(u, ok) for u in ("alice", "bob", "carol")])
    assert all_ok["verdict"] == "pass"
