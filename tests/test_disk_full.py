"""A full disk under `af build` and `af certify` is one sentence naming the full folder and a
non-zero exit: no SQLAlchemy sentence, no traceback. The data folder lives on a small tmpfs
filled up to a few bytes (mounting needs root, as the tests run in CI; skipped otherwise)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster_support import corpus, new_home

from capture.home import Home
from capture.log import EventLog

ROOT = Path(__file__).resolve().parent.parent
SIZE_MB = 40

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"),
                                reason="mounting a small tmpfs to fill up needs root")


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """A data folder with two days in its log, nothing built."""
    home = new_home(tmp_path_factory.mktemp("full-disk"))
    EventLog(home).append(corpus())
    return home


def _fill(mnt: Path, leave_bytes: int) -> None:
    """Fill the file system of mnt until leave_bytes are free (or fewer)."""
    free = shutil.disk_usage(mnt).free
    with open(mnt / "filler", "wb") as fh:
        left = max(0, free - leave_bytes)
        chunk = b"\0" * (1 << 20)
        while left > 0:
            n = min(left, len(chunk))
            try:
                fh.write(chunk[:n])
                fh.flush()
            except OSError:
                break
            left -= n


def _copy(logged: Home, mnt: Path) -> Home:
    home = Home(mnt / "home")
    home.root.mkdir()
    shutil.copytree(logged.log_dir, home.log_dir)
    shutil.copy2(logged.settings_path, home.settings_path)
    return home


def _af(home: Home, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("DAGSTER_HOME", None)
    return subprocess.run([sys.executable, "-m", "af_pipeline.interfaces.cli", *args, "--home", str(home.root)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _one_sentence(done: subprocess.CompletedProcess, home: Home, command: str) -> None:
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "Traceback" not in said and "sqlalche" not in said and "OperationalError" not in said, said
    errors = [line for line in done.stderr.splitlines() if line.startswith(f"af {command}:")]
    assert len(errors) == 1, said
    assert errors[0].startswith(f"af {command}: no space left on device: the file system holding {home.root}"), said
    assert "FAILED" not in done.stdout, said


@pytest.mark.parametrize("leave", [0, 256 << 10, 1 << 20, 3 << 20])
def test_af_build_on_a_full_disk_says_so_in_one_sentence(logged, small_disk, leave):
    home = _copy(logged, small_disk)
    _fill(small_disk, leave)
    _one_sentence(_af(home, "build"), home, "build")


@pytest.mark.parametrize("leave", [0, 256 << 10, 1 << 20])
def test_af_certify_on_a_full_disk_says_so_in_one_sentence(logged, small_disk, leave):
    home = _copy(logged, small_disk)
    built = _af(home, "build")
    assert built.returncode == 0, built.stderr
    _fill(small_disk, leave)
    _one_sentence(_af(home, "certify"), home, "certify")
