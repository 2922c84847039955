"""The layers hold at run time, not only in the import graph: the certification rebuild (its
parent side and its child processes), `af day` and the compiler run without importing Dagster
or Great Expectations. lint-imports checks the static imports; this catches the lazy ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster_support import TZ, corpus, days_of

from capture.home import Home
from capture.log import EventLog

FORBIDDEN = ("dagster", "dagster_duckdb", "dagster_webserver", "great_expectations")

# In a process whose path starts with the guard folder, importing one of FORBIDDEN records its
# name in $AF_IMPORT_GUARD_LOG and fails. Child processes inherit PYTHONPATH, so the rebuild's
# own workers are guarded too, and a caught ImportError still leaves its line.
GUARD = """\
import os
with open(os.environ["AF_IMPORT_GUARD_LOG"], "a", encoding="utf-8") as f:
    f.write(__name__ + "\\n")
raise ImportError(f"{__name__} imported by a layer that must run without it")
"""

SCRIPT = """\
import io, json, sys
from contextlib import redirect_stdout
from pathlib import Path
from af_pipeline.interfaces import cli
from af_pipeline.compiler.compile import compile_day
from af_pipeline.compiler.emit import context_block
from capture.home import Home
from capture.log import EventLog
from certification import rebuild

home, day, out = Home(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
md = io.StringIO()
with redirect_stdout(md):
    code = cli.main(["day", day, "-f", "md", "--home", str(home.root)])
doc = compile_day(EventLog(home).read_day(day))
fresh = rebuild.fresh_build(home)          # the parent side: starts and waits for the workers
child = rebuild.main(["--home", str(home.root), "--out", str(out), "--from", day, "--to", day])  # a worker
loaded = sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[4].split(","))
print(json.dumps({"day_exit": code, "md": md.getvalue()[:60], "frames": len(doc["frames"]),
                  "block": len(context_block(doc, 1500)), "fresh_days": sorted(fresh.digests),
                  "child_exit": child, "loaded": loaded}))
"""


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    root = tmp_path_factory.mktemp("guard")
    for name in FORBIDDEN:
        (root / "path" / name).mkdir(parents=True)
        (root / "path" / name / "__init__.py").write_text(GUARD, encoding="utf-8")
    home = Home(root / "home")
    home.init(tz=TZ)
    batch = corpus()
    EventLog(home).append(batch)
    env = {k: v for k, v in os.environ.items() if k not in ("AF_HOME", "DAGSTER_HOME")}
    env["PYTHONPATH"] = str(root / "path") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["AF_IMPORT_GUARD_LOG"] = str(root / "imports.log")
    return root, home, days_of(batch)[0], env


def _run(guarded, code: str, *args: str) -> subprocess.CompletedProcess:
    root, _home, _day, env = guarded
    (root / "imports.log").unlink(missing_ok=True)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_guard_catches_dagster(guarded):
    """The guard is real: the Dagster layer itself trips it (else the next test proves nothing)."""
    root = guarded[0]
    out = _run(guarded, "import assets.definitions")
    assert out.returncode != 0 and "must run without it" in out.stderr
    assert (root / "imports.log").read_text(encoding="utf-8").split() == ["dagster"]


def test_rebuild_af_day_and_the_compiler_run_without_dagster(guarded):
    root, home, day, _env = guarded
    out = _run(guarded, SCRIPT, str(home.root), day, str(root / "fresh"), ",".join(FORBIDDEN))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["day_exit"] == 0 and got["md"].startswith(f"# Activity on {day}")
    assert got["frames"] > 0 and got["block"] > 0
    assert day in got["fresh_days"] and got["child_exit"] == 0
    assert got["loaded"] == []
    log = root / "imports.log"
    assert not log.exists(), f"imported in a guarded process: {log.read_text(encoding='utf-8')}"
    assert json.loads((Path(root / "fresh") / "digests.json").read_text(encoding="utf-8"))["days"]


CERTIFY_FIRST = """\
import json, sys
from assets import certify
from capture.home import Home
from certification import rebuild

home = Home(sys.argv[1])
try:
    certify.run_certify(home, [sys.argv[2]])
except ImportError as exc:  # the guard: Dagster is wanted only now
    stopped = str(exc)
started = [list(days) for _procs, _folder, days in rebuild._PENDING.values()]
fresh = rebuild.fresh_build(home, False, [sys.argv[2]])  # the children that had started finish
print(json.dumps({"stopped": stopped, "started": started, "fresh_days": sorted(fresh.digests)}))
"""


def test_af_certify_starts_its_rebuild_before_it_imports_dagster(guarded):
    """The rebuild children run while the certify process imports Dagster (~1.5 s of CPU),
    instead of after it: the harness itself must not import Dagster before it starts them."""
    root, home, day, _env = guarded
    out = _run(guarded, CERTIFY_FIRST, str(home.root), day)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert "must run without it" in got["stopped"]
    assert got["started"] == [[day]]
    assert got["fresh_days"] == [day]
    assert (root / "imports.log").read_text(encoding="utf-8").split()[0] == "dagster"
