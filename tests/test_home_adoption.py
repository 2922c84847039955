"""Nobody else's folder (issue 36): `--home`, `AF_HOME` and `af team add --create` make a data folder
only at a new path or in an empty folder. A non-empty folder without af.json is refused in one
sentence (exit 2) and left exactly as it was: same contents, same mode. A path `af build` would
refuse (a '?' DuckDB cannot write under) is refused up front, in the sentence the build says."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from af_pipeline.interfaces import cli
from capture.home import Home

ENTRIES = ("--home", "AF_HOME", "team add --create")


@pytest.fixture()
def capture_file(tmp_path: Path) -> Path:
    """The smallest capture an import lands: one ActivityWatch afk event."""
    path = tmp_path / "aw.json"
    path.write_text(json.dumps({"buckets": {"aw-watcher-afk_h": {"type": "afkstatus", "hostname": "h", "events": [
        {"timestamp": "2026-03-15T09:00:00Z", "duration": 60, "data": {"status": "afk"}}]}}}))
    return path


def _make(entry: str, folder: Path, capture: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Make ``folder`` a data folder through one entry; the exit code."""
    monkeypatch.delenv("AF_HOME", raising=False)
    if entry == "--home":
        return cli.main(["import", "activitywatch", str(capture), "--home", str(folder), "--quiet"])
    if entry == "AF_HOME":
        monkeypatch.setenv("AF_HOME", str(folder))
        return cli.main(["import", "activitywatch", str(capture), "--quiet"])
    team = capture.parent / "team"
    if not team.exists():
        assert cli.main(["team", "init", str(team)]) == 0
    return cli.main(["team", "add", "bob", str(folder), "--create", "--tz", "UTC", "--team", str(team)])


def _snapshot(root: Path) -> dict[str, tuple[int, int, bytes | None]]:
    """Every path under ``root`` (and root itself): mode, owner and bytes."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_mode, st.st_uid, p.read_bytes() if p.is_file() else None)
    return out


def _foreign(tmp_path: Path) -> Path:
    """Somebody else's folder: shared (0755), holding a file and a folder, no af.json."""
    root = tmp_path / "shared"
    (root / "projects").mkdir(parents=True)
    (root / "notes.txt").write_text("not ours\n")
    (root / "projects" / "plan.md").write_text("# plan\n")
    for p in (root, root / "projects"):
        p.chmod(0o755)
    return root


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_non_empty_folder_without_af_json_is_refused_and_left_untouched(tmp_path, capture_file, monkeypatch,
                                                                        capsys, entry):
    root = _foreign(tmp_path)
    before = _snapshot(root)
    capsys.readouterr()
    assert _make(entry, root, capture_file, monkeypatch) == 2
    err = capsys.readouterr().err
    assert f"{root} is not empty and holds no af.json" in err and "new or empty folder" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert _snapshot(root) == before  # nothing written, nothing chmod-ed
    assert stat.S_IMODE(root.stat().st_mode) == 0o755


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("where", ["new", "empty"])
def test_a_new_path_or_an_empty_folder_becomes_a_private_data_folder(tmp_path, capture_file, monkeypatch, capsys,
                                                                   entry, where):
    root = tmp_path / "data" / "home"
    if where == "empty":
        root.mkdir(parents=True)
        root.chmod(0o755)
    assert _make(entry, root, capture_file, monkeypatch) == 0, capsys.readouterr().err
    assert Home(root).exists()
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


@pytest.mark.parametrize("entry", ENTRIES)
def test_an_existing_data_folder_still_works(tmp_path, capture_file, monkeypatch, capsys, entry):
    home = Home(tmp_path / "mine")
    home.init(tz="UTC")
    (home.root / "log").mkdir(exist_ok=True)
    if entry == "team add --create":  # an existing folder joins without --create
        team = tmp_path / "team"
        assert cli.main(["team", "init", str(team)]) == 0
        assert cli.main(["team", "add", "bob", str(home.root), "--team", str(team)]) == 0
    else:
        assert _make(entry, home.root, capture_file, monkeypatch) == 0, capsys.readouterr().err
    assert home.settings().tz == "UTC"


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_path_af_build_would_refuse_is_refused_before_anything_is_made(tmp_path, capture_file, monkeypatch,
                                                                        capsys, entry):
    root = tmp_path / "what?" / "home"
    capsys.readouterr()
    assert _make(entry, root, capture_file, monkeypatch) == 2
    err = capsys.readouterr().err
    assert f"{root} contains '?', which DuckDB cannot write to; use a data folder (--home / AF_HOME) whose path " \
           "has no '?'" in err
    assert not (tmp_path / "what?").exists()


def test_a_team_root_is_not_made_in_somebody_elses_folder(tmp_path, capsys):
    root = _foreign(tmp_path)
    before = _snapshot(root)
    assert cli.main(["team", "init", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"{root} is not empty and holds no team.json" in err
    assert _snapshot(root) == before
    empty = tmp_path / "empty-team"
    empty.mkdir()
    assert cli.main(["team", "init", str(empty)]) == 0
    assert (empty / "team.json").is_file() and stat.S_IMODE(empty.stat().st_mode) == 0o700


def test_a_file_is_no_data_folder(tmp_path, capture_file, monkeypatch, capsys):
    path = tmp_path / "a-file"
    path.write_text("x")
    assert _make("--home", path, capture_file, monkeypatch) == 2
    assert f"{path} exists and is not a folder" in capsys.readouterr().err
    assert path.read_text() == "x" and not os.path.isdir(path)
