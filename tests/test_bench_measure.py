"""The benchmarks' child-process measurement reports the child's own peak memory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is not installed

from bench.common import run_measured  # noqa: E402

CHILD = "x = bytearray(30 * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\nprint('done')"


def test_a_child_peak_is_its_own_not_the_parents() -> None:
    # Linux carries a parent's high-water mark into the child it starts; a benchmark that grew
    # (it generated a corpus) reported that for every later step, re-imports included.
    ballast = bytearray(300 * 2**20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    m = run_measured([sys.executable, "-c", CHILD])
    del ballast
    assert m.returncode == 0 and m.stdout.strip() == "done"
    assert 30 <= m.peak_mb < 150, m.peak_mb
    assert m.cpu_s > 0


def test_exit_code_and_timeout_are_reported() -> None:
    assert run_measured([sys.executable, "-c", "raise SystemExit(3)"]).returncode == 3
    m = run_measured([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert m.timed_out and m.wall_s < 30


TREE = """
import subprocess, sys
x = bytearray(60 * 2**20)
for i in range(0, len(x), 4096): x[i] = 1
kid = subprocess.Popen([sys.executable, "-c", {kid!r}], stdout=subprocess.PIPE, text=True)
assert kid.stdout.readline().strip() == "ready"
print("ready", flush=True)
sys.stdin.readline()
kid.kill()
"""
KID = "x = bytearray(60 * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\nprint('ready', flush=True)\nimport sys; sys.stdin.readline()"


def test_the_process_tree_is_counted_together() -> None:
    # the import's reader process holds memory beside the importer: ru_maxrss shows only the
    # larger of the two, so the benchmark sums the tree
    import subprocess

    from bench.rusage_child import tree_memory_bytes

    proc = subprocess.Popen([sys.executable, "-c", TREE.format(kid=KID)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        both = tree_memory_bytes(proc.pid) / 2**20
        assert both >= 120, both
        alone = int(Path(f"/proc/{proc.pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        assert alone < 100, alone  # neither process alone holds what the two hold together
    finally:
        proc.kill()
        proc.wait()
