"""`af routines` end to end: a capture in the event log -> routine table, h, holdout, plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from af_pipeline.interfaces import cli
from af_pipeline.routines.replay import load_plan

RPM = Path(__file__).resolve().parent / "data" / "rpm" / "StudentRecord.csv"  # vendored real RPM log (Apache-2.0, see its README)


@pytest.fixture(scope="module")
def rpm_home(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    home = tmp_path_factory.mktemp("home")
    assert cli.main(["import", "rpm", str(RPM), "--home", str(home)]) == 0
    return home


def test_af_routines_json_and_plans(rpm_home: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    plans_dir = tmp_path / "plans"
    code = cli.main(["routines", "--home", str(rpm_home), "--top", "3", "--json", "--plans-dir", str(plans_dir)])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    table = out["routines"]
    assert len(table["routines"]) == 3
    top = table["routines"][0]
    assert any(s.startswith("copy:column ") for s in top["symbols"]) and any(s.startswith("paste:") for s in top["symbols"])
    assert top["plan"]["plan_tokens"] > top["plan"]["script_tokens"]
    assert set(top["plan"]["r_inject"]) == {"1280x800", "1512x982", "1728x1117"}
    assert 0 < out["recurrence"]["h_specific"] <= out["recurrence"]["h_raw"] <= 1
    assert out["holdout"] is None  # one active day: nothing to hold out
    assert out["three_arm"]["label"].startswith("MODELED")
    # The plans on disk load as replay plans, and none holds a value typed during capture.
    files = sorted(plans_dir.glob("*.json"))
    assert len(files) == 3 and len(sorted(plans_dir.glob("*.txt"))) == 3
    plan = load_plan(files[0])
    assert plan["slots"]
    text = "".join(f.read_text(encoding="utf-8") for f in plans_dir.iterdir())
    assert "jdoe@gmail.com" not in text and "Albert" not in text


def test_af_routines_table(rpm_home: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    assert cli.main(["routines", "--home", str(rpm_home), "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "h_specific" in out and "R_inject" in out and "MODELED" in out
    assert "holdout: needs at least 2 active days" in out


def test_af_routines_bad_usage(tmp_path: Path, rpm_home: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert cli.main(["routines", "--home", str(rpm_home), "--top", "0"]) == 2
    assert "--top must be at least 1" in capsys.readouterr().err
    assert cli.main(["routines", "--home", str(rpm_home), "--train-fraction", "1.5"]) == 2
    assert cli.main(["routines", "--home", str(tmp_path / "nothing-here")]) == 2
    assert "not an activity-frames data folder" in capsys.readouterr().err
