"""Our processes end without the interpreter's last garbage collection (capture/process.py), and
what they leave is whole: `af build` over a range (its day workers), then `af certify` (its
rebuild children), each a real process started as a user starts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from dagster_support import TZ, corpus, days_of

from capture.home import Home
from capture.log import EventLog

ROOT = Path(__file__).resolve().parent.parent

# Imported at start-up by every Python process that has this folder on its path (children
# inherit PYTHONPATH): at exit, after every atexit handler of ours and before the interpreter's
# own finalization, it notes which module the process ran and whether its heap was frozen.
SITECUSTOMIZE = """\
import atexit, gc, os, sys

def _note():
    argv = sys.orig_argv
    ran = "-m " + argv[argv.index("-m") + 1] if "-m" in argv else "-c" if "-c" in argv else " ".join(argv[1:2])
    with open(os.environ["AF_END_LOG"], "a", encoding="utf-8") as f:
        f.write(f"{ran}\\t{gc.get_freeze_count() > 0}\\n")

atexit.register(_note)
"""


def test_the_af_script_is_the_entry_that_freezes():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["af"] == "af_pipeline.interfaces.cli:entry"


def test_af_and_its_children_end_frozen_and_leave_their_work_whole(tmp_path):
    home = Home(tmp_path / "home")
    home.init(tz=TZ)
    batch = corpus(4)
    EventLog(home).append(batch)
    days = days_of(batch)
    assert len(days) >= 4  # a range of 4 days or more gets day workers (parallel_days.MIN_DAYS)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / "ends.log"
    env = {k: v for k, v in os.environ.items() if k not in ("AF_HOME", "DAGSTER_HOME")}
    env |= {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "AF_END_LOG": str(log), "AF_DAY_WORKERS": "1"}
    entry = "import sys; from af_pipeline.interfaces import cli; sys.argv[0] = 'af'; cli.entry()"

    def af(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", entry, *args, "--home", str(home.root)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=600)

    built = af("build", "--from", days[0], "--to", days[-1])
    assert built.returncode == 0, built.stderr[-3000:]
    for day in days:
        manifest = json.loads((home.published_dir / day / "manifest.json").read_text(encoding="utf-8"))
        assert set(manifest["files"]) >= {"document.json", "context.txt"}
    certified = af("certify", "--from", days[0], "--to", days[-1], "--json")
    assert certified.returncode == 0, certified.stderr[-3000:]
    cert = json.loads(certified.stdout)  # stdout reached the reader whole before the process ended
    assert cert["verdict"] == "pass" and sorted(cert["days"]) == days
    assert json.loads(home.certificate_path.read_text(encoding="utf-8")) == cert

    ends = [line.split("\t") for line in log.read_text(encoding="utf-8").splitlines()]
    kinds = {ran for ran, _frozen in ends}
    assert "-c" in kinds, kinds  # af itself
    assert "-m af_pipeline.warehouse.parallel_days" in kinds, kinds  # the build's day worker
    assert "-m certification.rebuild" in kinds, kinds  # the certification's rebuild child
    ours = [(ran, frozen) for ran, frozen in ends if ran.startswith("-")]  # Dagster's helper scripts aside
    assert ours and all(frozen == "True" for _ran, frozen in ours), ends
