"""The package as a user installs it: a wheel built from this checkout, installed into a fresh
environment and used from a folder outside the repository (no checkout on the path, no
workspace.yaml, no working directory in the repo)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from af_pipeline.about import DISTRIBUTION, __version__
from af_pipeline.warehouse.version import code_version

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("af_pipeline", "capture", "assets", "checks", "certification")
DAY = "2026-06-01"


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, af, run folder, environment) of a fresh venv holding only the built wheel.

    The dependencies come from this venv's site-packages through a plain path line (a .pth
    entry), which does not run that folder's own .pth files: the editable install of the
    checkout stays out, so every import of ours must come from the wheel."""
    work = tmp_path_factory.mktemp("pkg")
    src = work / "src"  # build from a copy: an in-tree build would write build/ and *.egg-info here
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
    dist = work / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", str(src), "-w", str(dist)], work, dict(os.environ))
    wheels = sorted(dist.glob("*.whl"))
    # a wheel for this Python and platform: it holds the C module of emit.to_yaml (optional: pure
    # Python where no compiler built it)
    assert len(wheels) == 1 and wheels[0].name.startswith(f"{DISTRIBUTION.replace('-', '_')}-{__version__}-"), wheels

    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], work, dict(os.environ))
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "_project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    _run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheels[0])], work, dict(os.environ))

    run = work / "run"
    run.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AF_HOME", "DAGSTER_HOME", "VIRTUAL_ENV")}
    env.update(XDG_CACHE_HOME=str(work / "cache"), DAGSTER_TELEMETRY_DISABLED="1", TZ="UTC")
    # Every file of the packages is in the wheel, not only the Python: a data file added later
    # without a package-data line in pyproject.toml fails here, not on a user's machine.
    def files(top: Path) -> set[str]:
        return {p.relative_to(top).as_posix() for pkg in PACKAGES for p in (top / pkg).rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}

    installed_files = files(Path(purelib))
    missing = files(src) - installed_files
    assert not missing, f"in the checkout but not in the wheel: {sorted(missing)}"
    if Path(sysconfig.get_paths()["include"], "Python.h").is_file() and (shutil.which("cc") or shutil.which("gcc")):
        assert any(f.startswith("af_pipeline/compiler/_speedups.") and f.endswith(".so") for f in installed_files)
    yield python, venv / "bin" / "af", run, env
    shutil.rmtree(work, ignore_errors=True)


@pytest.mark.slow
def test_the_built_wheel_works_outside_the_repository(installed):
    python, af, run, env = installed
    assert not (run / "pyproject.toml").exists() and ROOT not in run.parents

    assert _run([str(af), "--version"], run, env).stdout.strip() == f"af {__version__} ({DISTRIBUTION})"

    _run([str(af), "synth", "--days", "1", "--seed", "3", "--start-day", DAY, "--out", "synth"], run, env)
    landed = _run([str(af), "import", "screenpipe", "synth/screenpipe.sqlite", "--home", "home", "--json"], run, env)
    assert '"landed"' in landed.stdout
    md = _run([str(af), "day", DAY, "-f", "md", "--home", "home"], run, env).stdout
    assert md.startswith(f"# Activity on {DAY}") and "## Frames" in md

    # Imports resolve to the wheel, the package data is there (schema, keyboard layouts, the
    # bundled sample), the read model works, and the code version is the checkout's: the same
    # source gives the same certificate wherever it is installed.
    probe = _run([str(python), "-c", """
import json, af_pipeline, capture, assets, checks, certification
from af_pipeline import Memory
from af_pipeline.compiler import document, layouts
from af_pipeline.warehouse.version import code_version
from af_pipeline.interfaces.commands.ui import prepare
from capture.home import Home
from capture.synth import bundled_sample
m = Memory("home")
print(json.dumps({
    "files": [p.__file__ for p in (af_pipeline, capture, assets, checks, certification)],
    "days": m.days(), "block": m.context_block(m.days()[0])[:40],
    "schema": sorted(document.schema())[:1], "layouts": layouts.available(),
    "sample": sorted(p.name for p in bundled_sample().iterdir()),
    "code_version": code_version(), "workspace": str(prepare(Home("home"))),
}))
"""], run, env).stdout
    import json

    got = json.loads(probe)
    venv = python.parent.parent
    assert all(Path(f).is_relative_to(venv) for f in got["files"]), got["files"]
    assert got["days"] == [DAY] and got["block"]
    assert got["schema"] and got["layouts"] == ["azerty", "identity"]
    assert {"screenpipe.sqlite", "truth.json"} <= set(got["sample"])
    assert got["code_version"] == code_version()

    # The Dagster code location `af ui` serves loads from site-packages, without the checkout's
    # workspace.yaml.
    workspace = got["workspace"]
    assert Path(workspace) == (run / "home" / "dagster" / "workspace.yaml").resolve()
    valid = _run([str(python), "-m", "dagster", "definitions", "validate", "-w", workspace], run,
                 env | {"AF_HOME": str(run / "home"), "DAGSTER_HOME": str(Path(workspace).parent)})
    assert "Validation successful for code location activity_frames" in valid.stdout + valid.stderr


@pytest.mark.slow
def test_the_team_image_serves_its_code_location_from_the_wheel(installed, tmp_path):
    """deploy/Dockerfile (no image is built here): it copies every package into the wheel it
    builds, and its start command, run from the wheel in the fresh venv with a team root, serves
    the team's code location over gRPC."""
    import json
    import re
    import signal

    from wait_support import free_port, listening, until

    python, af, run, env = installed
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert set(re.findall(r"^COPY (\w+) \1$", dockerfile, re.M)) == set(PACKAGES)
    cmd = json.loads(re.findall(r"^CMD (\[.*\])$", dockerfile, re.M)[-1])
    assert cmd[:2] == ["dagster", "code-server"] and cmd[cmd.index("-p") + 1] == "3030"

    team = tmp_path / "team"
    _run([str(af), "team", "init", str(team)], run, env)
    _run([str(af), "team", "add", "alice", str(tmp_path / "alice"), "--create", "--tz", "UTC", "--team", str(team)],
         run, env)
    port = free_port()
    cmd[cmd.index("-h") + 1], cmd[cmd.index("-p") + 1] = "127.0.0.1", str(port)
    served = env | {"AF_TEAM": str(team), "DAGSTER_HOME": str(team / "dagster")}
    (team / "dagster").mkdir(exist_ok=True)
    server = subprocess.Popen([str(python), "-m", *cmd], cwd=run, env=served, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        until(lambda: listening(port), 120, "the code server listening", server)
        _run([str(python), "-m", "dagster", "api", "grpc-health-check", "-p", str(port)], run, served)
        # what the server serves loads: its definitions, read from it over gRPC
        valid = _run([str(python), "-m", "dagster", "definitions", "validate", "--grpc-host", "127.0.0.1",
                      "--grpc-port", str(port)], run, served)
        assert "Validation successful" in valid.stdout + valid.stderr
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


def test_the_version_is_written_once():
    """pyproject.toml takes its version from af_pipeline/about.py, and names the distribution
    as `af --version` does."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["name"] == DISTRIBUTION
    assert "version" in meta["project"]["dynamic"] and "version" not in meta["project"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "af_pipeline.about.__version__"}
    from af_pipeline.interfaces import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0


def test_af_ui_needs_a_data_folder(tmp_path, capsys):
    """`af ui` on a folder that holds no capture says so (exit 2) instead of starting Dagster."""
    from af_pipeline.interfaces import cli

    assert cli.main(["ui", "--home", str(tmp_path / "nothing")]) == 2
    assert "is not an activity-frames data folder yet" in capsys.readouterr().err
    assert not (tmp_path / "nothing").exists()
