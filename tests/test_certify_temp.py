"""`af certify` leaves no temporary folders behind: the rebuild processes' DuckDB spill folders
(af-rebuild-spill-*) go on success, on failure and when the certify process gives up midway
(its exit kills the rebuild processes, which then never clean up after themselves)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from dagster_support import corpus, days_of, new_home

from assets import certify as harness
from capture.log import EventLog
from certification import rebuild

ROOT = Path(__file__).resolve().parent.parent
SPILL = "af-rebuild-spill-*"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    home = new_home(tmp_path_factory.mktemp("certify-temp"))
    batch = corpus()
    EventLog(home).append(batch)
    out = harness.run_build(home, days_of(batch))
    assert out.ok, out.failures
    return home, days_of(batch)


def _af(home, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "af_pipeline.interfaces.cli", *args, "--home", str(home.root)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_a_certify_that_passes_leaves_no_spill_folder(built, tmp_path):
    home, _days = built
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = _af(home, tmp, "certify")
    assert done.returncode == 0, done.stderr
    assert not list(tmp.glob(SPILL))


def test_a_certify_that_fails_leaves_no_spill_folder(built, tmp_path):
    home, days = built
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    doc = home.published_dir / days[0] / "document.md"
    kept = doc.read_bytes()
    try:
        doc.write_bytes(kept + b"tampered\n")
        done = _af(home, tmp, "certify")
    finally:
        doc.write_bytes(kept)
    assert done.returncode == 1, done.stderr
    assert not list(tmp.glob(SPILL))


def _child_spilling(tmp: Path) -> bool:
    """A rebuild process has made its spill folder (it is building now)."""
    return any(p.is_dir() for p in tmp.glob(f"{SPILL[:-1]}*/part-*")) or any(
        p.is_dir() and not (p / rebuild.OWNER).exists() for p in tmp.glob(SPILL))


def test_a_certify_given_up_midway_leaves_no_spill_folder(built, tmp_path, monkeypatch):
    """What the certify process's exit does after an exception (atexit: rebuild.clear) while the
    rebuild processes are still building: they are killed, their spill folders still go."""
    home, days = built
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    rebuild.clear()
    rebuild.start(home, False, days)
    deadline = time.monotonic() + 120
    while not _child_spilling(tmp):
        assert time.monotonic() < deadline, "the rebuild process never started building"
        time.sleep(0.005)
    rebuild.clear()
    assert not list(tmp.glob(SPILL))
