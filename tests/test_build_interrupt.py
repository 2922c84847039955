"""Ctrl-C (SIGINT) during `af build` is an interruption, not a failure: `af build: interrupted`,
exit 130, and the next `af build` builds what the interrupted one did not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dagster_support import corpus, new_home

from capture.log import EventLog

ROOT = Path(__file__).resolve().parent.parent


def _af(home, *args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "af_pipeline.interfaces.cli", *args, "--home", str(home.root)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_sigint_during_af_build_says_interrupted_exits_130_and_the_next_build_succeeds(tmp_path):
    home = new_home(tmp_path)
    EventLog(home).append(corpus())
    proc = _af(home, "build")
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 300
    for line in proc.stdout:  # the run is under way (its one day step builds every day, then the checks)
        seen.append(line)
        if line.strip().startswith("building 2 day(s)"):
            proc.send_signal(signal.SIGINT)
            break
        assert time.monotonic() < deadline, "".join(seen)
    else:
        raise AssertionError("the build never reached its first stage:\n" + "".join(seen))
    rest, _ = proc.communicate(timeout=300)
    out = "".join(seen) + rest
    assert proc.returncode == 130, out
    assert "af build: interrupted" in out, out
    assert "FAILED" not in out and "failed" not in out, out

    again = _af(home, "build")
    rest, _ = again.communicate(timeout=300)
    assert again.returncode == 0, rest
    # what the interrupted run did not finish is built now (the days it published, if the signal
    # came after its day step, are unchanged and skipped)
    assert "built 2 day(s)" in rest or "unchanged" in rest, rest
    assert sorted(p.name for p in home.published_dir.iterdir() if p.is_dir()) == ["2026-06-01", "2026-06-02"]
