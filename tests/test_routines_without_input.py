"""`af routines --json` answers in JSON on every capture, with the reason when there is no routine
(issue 35: on ActivityWatch-only data it printed nothing on stdout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from af_pipeline.compiler.actions import Action
from af_pipeline.interfaces import cli
from af_pipeline.interfaces.commands import routines as routines_cmd


def _aw_export(path: Path) -> Path:
    events = [
        {"timestamp": f"2026-03-15T09:{m:02d}:00+00:00", "duration": 55.0,
         "data": {"app": app, "title": title}}
        for m, (app, title) in enumerate([("Code", "main.py - proj"), ("Google-chrome", "GitHub"),
                                          ("gnome-terminal-server", "bash")] * 10)
    ]  # fmt: skip
    doc = {"buckets": {
        "aw-watcher-window_laptop": {"id": "aw-watcher-window_laptop", "type": "currentwindow",
                                     "client": "aw-watcher-window", "hostname": "laptop", "events": events[::-1]},
        "aw-watcher-afk_laptop": {"type": "afkstatus", "client": "aw-watcher-afk", "hostname": "laptop",
                                  "events": [{"timestamp": "2026-03-15T09:00:00+00:00", "duration": 1800.0,
                                              "data": {"status": "not-afk"}}]},
    }}  # fmt: skip
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def aw_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("aw")
    home = tmp / "home"
    export = _aw_export(tmp / "aw.json")
    assert cli.main(["import", "activitywatch", str(export), "--home", str(home), "--tz", "UTC"]) == 0
    return home


def test_json_on_activitywatch_only_data_says_why(aw_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert cli.main(["routines", "--home", str(aw_home), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)  # the whole of stdout is one JSON document
    assert out["routines"]["routines"] == [] and out["routines"]["routines_total"] == 0
    assert out["days"] == 0 and out["steps"] == 0 and out["holdout"] is None
    assert "input events" in out["reason"] and "activitywatch" in out["reason"]


def test_json_is_the_same_bytes_every_time(aw_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = []
    for _ in range(2):
        capsys.readouterr()
        assert cli.main(["routines", "--home", str(aw_home), "--json"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]


def test_text_output_still_explains_and_fails(aw_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert cli.main(["routines", "--home", str(aw_home)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "ActivityWatch records windows only" in captured.err


def _action(i: int, symbol: str) -> Action:
    op, _, target = symbol.partition(":")
    return Action(symbol=symbol, op=op, target=target, role=None, named=True, app="Chrome", url=None,
                  url_template=None, day="2026-03-15", stream="monitor_1", ts_us=i, end_us=i, session=0,
                  refs=(f"r:{i}",))  # fmt: skip


def test_json_with_input_but_no_routine_says_why(
    aw_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    days = [[_action(i, f"click:{c}") for i, c in enumerate("abcdef")]]  # nothing repeats
    monkeypatch.setattr(routines_cmd, "load_actions", lambda home, last: (days, "UTC"))
    capsys.readouterr()
    assert cli.main(["routines", "--home", str(aw_home), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["routines"]["routines"] == [] and out["steps"] == 6
    assert out["reason"].startswith("no routine in 1 active day(s), 6 action steps")
    capsys.readouterr()
    assert cli.main(["routines", "--home", str(aw_home)]) == 0
    assert "no routine in 1 active day(s)" in capsys.readouterr().out
