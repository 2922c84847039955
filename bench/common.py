"""Helpers shared by the benchmark scripts: the .bench/ cache, the sample corpus, and running a
command as a child process with its own wall time, CPU time and peak memory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / ".bench"  # gitignored; `make clean` removes it


def say(msg: str) -> None:
    """Progress goes to stderr so stdout stays a table or JSON."""
    print(msg, file=sys.stderr, flush=True)


# `af` as its console script runs it, for the checkout on sys.path: an older checkout (--code DIR)
# may have no cli.entry yet (session 27), and then its main is what its script called.
ENTRY = "import sys; from af_pipeline.interfaces import cli; sys.exit(getattr(cli, 'entry', cli.main)())"


def af_command() -> list[str]:
    """The `af` a user runs: the venv's console script, else the module behind it."""
    script = Path(sys.executable).parent / "af"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "af_pipeline.interfaces.cli"]


def corpus(days: int, seed: int = 1) -> Path:
    """The screenpipe database `af synth --days DAYS --seed SEED` writes, generated once and kept
    under .bench/ (generation is deterministic, so a cached copy is the same bytes)."""
    out = BENCH_DIR / f"corpus-{days}d-seed{seed}"
    db = out / "screenpipe.sqlite"
    if not (db.exists() and (out / "truth.json").exists()):
        from capture.synth import generate

        say(f"writing a {days}-day corpus (af synth --days {days} --seed {seed}) into {out} ...")
        generate(days, seed, out,
                 progress=lambda i, n, day, _c: print(f"\r  day {i}/{n} {day}", end="", file=sys.stderr))
        print(file=sys.stderr)
    return db


@dataclass
class Measured:
    """One child process: exit code, output, and what the kernel accounted to it."""

    cmd: list[str]
    returncode: int
    wall_s: float
    cpu_s: float  # user + system of the child (and its waited-for children)
    peak_mb: float  # the child's peak resident set size, its own processes' together (rusage_child.py)
    stdout: str
    stderr: str
    timed_out: bool = False

    def tail(self, chars: int = 600) -> str:
        return (self.stderr or self.stdout)[-chars:].strip()


def run_measured(cmd: list[str], *, timeout: float | None = None, env: dict[str, str] | None = None,
                 cwd: Path = ROOT, echo_stderr: bool = False) -> Measured:
    """Run cmd to completion and measure it. The command runs under bench/rusage_child.py, which
    reports the command's own CPU time and peak RSS (os.wait4). Measured directly from here, a
    child's peak would include this process's own high-water mark (Linux carries it over exec),
    and getrusage(RUSAGE_CHILDREN) is the maximum over every child so far.

    Output goes through temporary files, not pipes, so a chatty child never blocks on a full pipe
    while we wait. On timeout the child's whole process group is killed."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.TemporaryDirectory() as tmp:
        usage_file = Path(tmp) / "usage.json"
        wrapped = [sys.executable, str(Path(__file__).with_name("rusage_child.py")), str(usage_file), *cmd]
        t0 = time.perf_counter()
        proc = subprocess.Popen(wrapped, stdout=out, stderr=None if echo_stderr else err, cwd=str(cwd),
                                env=env, start_new_session=True, text=True)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            proc.wait()
        finally:
            if timer:
                timer.cancel()
        wall = time.perf_counter() - t0
        usage = json.loads(usage_file.read_text()) if usage_file.exists() else {"cpu_s": 0.0, "peak_mb": 0.0}
        out.seek(0)
        err.seek(0)
        return Measured(cmd=cmd, returncode=proc.returncode, wall_s=wall, cpu_s=usage["cpu_s"],
                        peak_mb=usage["peak_mb"], stdout=out.read(), stderr=err.read(),
                        timed_out=timed_out.is_set())


def dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
