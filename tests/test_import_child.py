"""`af import screenpipe --reader-process`: a reader process reads the source while the importer
lands each day (capture/importers/child.py). The same log, the same errors, no reader left behind."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_import_cli import screenpipe_db
from test_import_screenpipe import _event_era, _video_era

from af_pipeline.interfaces.cli import main
from capture.importers import child
from capture.synth import generate

TESTS = Path(__file__).resolve().parent
IN_CHILD = child.in_child


def _sealed(home: Path) -> dict[str, str]:
    root = home / "log" / "sealed"
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.parquet"))}


def _import(capsys, db: Path, home: Path, monkeypatch, *, reader: bool) -> tuple[dict, list[str]]:
    calls: list[str] = []

    def spy(target, kwargs, progress=None):
        calls.append(target)
        return IN_CHILD(target, kwargs, progress)

    monkeypatch.setattr(child, "in_child", spy)
    flag = ["--reader-process"] if reader else []
    assert main(["import", "screenpipe", str(db), "--home", str(home), "--tz", "Europe/Paris", "--json", *flag]) == 0
    out = json.loads(capsys.readouterr().out)
    out.pop("home")
    return out, calls


@pytest.mark.parametrize("source", ["synth", "quarantine", "2024-08", "current"])
def test_a_reader_process_lands_what_an_inline_read_lands(tmp_path: Path, capsys, monkeypatch, source: str) -> None:
    if source == "synth":
        generate(2, 3, tmp_path / "src")
        db = tmp_path / "src" / "screenpipe.sqlite"
    elif source == "quarantine":
        db = screenpipe_db(tmp_path / "db.sqlite")  # a row that goes to the quarantine, three days
    else:  # built from screenpipe's own migration chain (tests/screenpipe_eras.py)
        db = (_video_era if source == "2024-08" else _event_era)(tmp_path, source)
    inline, none = _import(capsys, db, tmp_path / "a", monkeypatch, reader=False)
    read, used = _import(capsys, db, tmp_path / "b", monkeypatch, reader=True)
    assert none == [] and used == ["capture.importers.screenpipe:iter_screenpipe"]
    assert read == inline
    assert sum(read["landed"].values()) > 0
    assert _sealed(tmp_path / "b") == _sealed(tmp_path / "a") != {}


def test_a_source_that_cannot_be_read_is_the_same_user_error(tmp_path: Path, capsys) -> None:
    db = screenpipe_db(tmp_path / "db.sqlite")
    bad = tmp_path / "cut.sqlite"
    bad.write_bytes(db.read_bytes()[: 3 * 4096])
    messages = []
    for flag in ("--reader-process", "--quiet"):
        assert main(["import", "screenpipe", str(bad), "--home", str(tmp_path / flag), flag]) == 2
        messages.append(capsys.readouterr().err.strip().splitlines()[-1])
    assert messages[0] == messages[1] and str(bad) in messages[0]
    assert not (tmp_path / "--reader-process").exists()  # nothing of the source landed: no data folder either


def test_items_progress_and_errors_come_back_in_order() -> None:
    lines: list[str] = []
    got = []
    for n in child.in_child("child_targets:numbers", {"count": 3}, lines.append):
        got.append(n)
        lines.append(f"took {n}")
    assert got == [0, 1, 2]
    assert lines == ["at 0", "took 0", "at 1", "took 1", "at 2", "took 2"]
    with pytest.raises(ValueError, match="row 7 of the source is unreadable"):
        list(child.in_child("child_targets:fails", {"kind": "value"}))
    with pytest.raises(RuntimeError, match="Opaque: an error holding something"):
        list(child.in_child("child_targets:fails", {"kind": "opaque"}))
    assert multiprocessing.active_children() == []


def test_a_reader_that_dies_is_an_error_not_a_short_source() -> None:
    items = child.in_child("child_targets:dies", {})
    assert next(items) == 1
    with pytest.raises(child.ReaderStopped, match="exit code -9 .killed.*importing again lands the rest"):
        next(items)


def test_stopping_early_stops_the_reader() -> None:
    items = child.in_child("child_targets:forever", {})
    pid = next(items)
    assert next(items) == 1
    items.close()  # the importer broke off (an error while landing)
    assert multiprocessing.active_children() == []
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie has ended; only its exit status is left to collect


PARENT = """
import sys
sys.path.insert(0, {tests!r})
from capture.importers import child
items = child.in_child("child_targets:forever", {{}})
print(next(items), flush=True)
sys.stdin.readline()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_import_leaves_no_reader() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT.format(tests=str(TESTS))], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert parent.stdout is not None
    reader = int(parent.stdout.readline())
    assert _alive(reader)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 60
    while _alive(reader) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling for the condition, with a deadline
    assert not _alive(reader)
