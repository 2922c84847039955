"""Fault injection: `af build` and `af certify` killed with SIGKILL, and a build waiting for another.

A killed run used to keep its `af_warehouse` pool slot, so every later build waited forever (and
ignored Ctrl-C). Here each build is SIGKILLed the moment the run's log says a given step started
(its slot is claimed by then), each at the next step of the graph: every build after a kill must
get past all the steps the previous one finished, the last must finish, and certification
afterwards (rebuild equals incremental, byte-identical recompile) must pass.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster_support import corpus, days_of, new_home, only_days

from af_pipeline.warehouse import publish
from assets.instance import LOCK_FILE, reap_dead_runs
from capture.log import EventLog

AF = str(Path(sys.executable).with_name("af"))
# Every step of the build job, in the order one build runs them: the day assets' one step (a
# multi-asset: every day asset of every day), then the two quality checks.
BUILD_STEPS = (
    "day_work",
    "frames_frames_quality",
    "raw_day_raw_rows_quality",
)
WAIT_S = 300  # a generous bound for a loaded machine; every wait ends as soon as its condition holds


class _Af:
    """An `af` process: the real executable, or (``forked``) the same `af` main forked from this
    already-imported test process, which spares each of the many killed builds Dagster's import."""

    def __init__(self, args: list[str], forked: bool = False):
        if forked:
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: exactly what the `af` entry point runs
                code = 1
                try:
                    os.dup2(write, 2)
                    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
                    # pytest's capture replaced sys.stdout/err; the child writes to the real fds
                    sys.stderr = open(2, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
                    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    from af_pipeline.interfaces import cli

                    code = cli.main(args)
                finally:
                    sys.stderr.flush()
                    os._exit(code)
            os.close(write)
            self.pid, self.stderr = pid, os.fdopen(read, "r", encoding="utf-8")
            self.proc: subprocess.Popen[str] | None = None
        else:
            self.proc = subprocess.Popen([AF, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
            assert self.proc.stderr is not None
            self.pid, self.stderr = self.proc.pid, self.proc.stderr

    def send(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait(self) -> int:
        if self.proc is not None:
            return self.proc.wait(timeout=WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.02)
        pytest.fail(f"af (pid {self.pid}) did not end within {WAIT_S} s")

    def running(self) -> bool:
        return self.proc.poll() is None if self.proc is not None else os.waitpid(self.pid, os.WNOHANG) == (0, 0)

    def read_until(self, needle: str) -> list[str]:
        """stderr lines up to and including the first containing ``needle`` (fails if it ends first)."""
        seen: list[str] = []
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            line = self.stderr.readline()
            if not line:
                pytest.fail(f"`af` ended (rc {self.wait()}) before {needle!r}; stderr tail:\n{''.join(seen[-20:])}")
            seen.append(line)
            if needle in line:
                return seen
        pytest.fail(f"no {needle!r} within {WAIT_S} s")

    def kill(self) -> None:
        self.send(signal.SIGKILL)
        assert self.wait() == -signal.SIGKILL
        self.stderr.close()


def _pool(inst: dg.DagsterInstance) -> tuple[list[str], list[str]]:
    info = inst.event_log_storage.get_concurrency_info("af_warehouse")
    return [s.run_id for s in info.claimed_slots], [s.run_id for s in info.pending_steps]


def _warm_imports() -> None:
    """Import once here what each forked `af build` would import again (GX alone takes seconds)."""
    from af_pipeline.interfaces import cli
    from assets import certify as harness
    from assets.definitions import build_definitions
    from checks import quality

    cli.build_parser()
    quality._gx()
    assert build_definitions and harness


@pytest.fixture(scope="module")
def one_day(tmp_path_factory):
    batch = corpus()
    day = days_of(batch)[0]
    home = new_home(tmp_path_factory.mktemp("faults"))
    EventLog(home).append(only_days(batch, {day}))
    return home, day


@pytest.fixture(scope="module")
def killed_then_built(one_day):
    """A build SIGKILLed at each step in turn, then one left to finish."""
    home, day = one_day
    inst = dg.DagsterInstance.get()
    _warm_imports()
    for step in BUILD_STEPS:
        # --force: once a killed run's day_work step has finished, its day is complete and a build
        # without it would skip the day (no run, nothing to kill)
        proc = _Af(["build", "--home", str(home.root), "--verbose", "--force"], forked=True)  # Dagster's step lines
        lines = proc.read_until(f'Started execution of step "{step}"')
        proc.kill()
        # the kill left the run unfinished and, at an asset step, its claimed slot behind (what
        # used to wedge every later build); the quality checks take no slot
        assert inst.get_run_records(limit=1)[0].dagster_run.status == dg.DagsterRunStatus.STARTED
        claimed, _ = _pool(inst)
        assert bool(claimed) == (not step.endswith("_quality")), (step, claimed)
        started = [ln for ln in lines if "STEP_START" in ln]
        assert len(started) == BUILD_STEPS.index(step) + 1, "".join(started)
    done = subprocess.run([AF, "build", "--home", str(home.root), "--force"], capture_output=True, text=True,
                          timeout=WAIT_S)
    return home, day, inst, done


def test_a_build_after_sigkill_at_every_step_finishes(killed_then_built):
    home, day, inst, done = killed_then_built
    assert done.returncode == 0, done.stderr[-3000:]
    # it said which dead run it settled, once per killed build
    settled = [ln for ln in done.stderr.splitlines() if "which is gone: marked failed" in ln]
    assert len(settled) == 1, done.stderr[-3000:]
    assert publish.verify_day(home.published_dir, day) == []
    assert json.loads((home.published_dir / day / "manifest.json").read_text())["sealed"] is True
    runs = inst.get_run_records()
    assert len(runs) == len(BUILD_STEPS) + 1
    assert sorted(r.dagster_run.status.value for r in runs) == ["FAILURE"] * len(BUILD_STEPS) + ["SUCCESS"]
    assert _pool(inst) == ([], [])
    assert reap_dead_runs(inst) == []  # nothing left to settle


def test_certify_after_sigkill_passes(killed_then_built):
    home, day, inst, _ = killed_then_built
    before = {r.dagster_run.run_id for r in inst.get_run_records()}
    proc = _Af(["certify", "--home", str(home.root)])
    deadline = time.monotonic() + WAIT_S
    # wait until the certify run has a check step running (and so a claimed slot), then kill it
    while True:
        assert proc.running(), proc.stderr.read()
        assert time.monotonic() < deadline, "certify never started a check"
        new = [r for r in inst.get_run_records() if r.dagster_run.run_id not in before]
        if new and inst.all_logs(new[0].dagster_run.run_id, of_type=dg.DagsterEventType.STEP_START):
            break
        time.sleep(0.05)
    killed = proc.pid
    killed_at = time.time()
    proc.kill()
    # its independent-rebuild children end with it instead of rebuilding for nobody
    deadline = time.monotonic() + WAIT_S
    while _rebuild_children(killed):
        assert time.monotonic() < deadline, f"rebuild children of {killed} outlived it"
        time.sleep(0.1)
    from certification.rebuild import DIGESTS, scratch_dir
    mine = [f for f in Path(scratch_dir()).glob("af-fresh-*")
            if (f / "owner.pid").exists() and (f / "owner.pid").read_text() == str(killed)]
    # A child may finish before the kill (the rebuild no longer imports Dagster and can be done
    # before the first check starts); one that writes its digests after its parent is gone
    # rebuilt for nobody. The second of slack covers a write already under way at the kill.
    late = [p for f in mine for p in f.glob(f"part-*/{DIGESTS}") if p.stat().st_mtime > killed_at + 1.0]
    assert not late, "a rebuild child finished for nobody"
    again = subprocess.run([AF, "certify", "--home", str(home.root), "--json"], capture_output=True, text=True,
                           timeout=WAIT_S)
    assert again.returncode == 0, again.stderr[-3000:]
    cert = json.loads(again.stdout)
    assert cert["verdict"] == "pass" and cert["days"][day]["passed"], cert
    assert "which is gone: marked failed" in again.stderr
    assert _pool(inst) == ([], [])
    # and the killed run's throwaway folder was swept by the next certify
    owners = [f for f in Path(scratch_dir()).glob("af-fresh-*")
              if (f / "owner.pid").exists() and (f / "owner.pid").read_text() == str(killed)]
    assert not owners


def _rebuild_children(parent: int) -> list[int]:
    """Live processes started as rebuild children of ``parent`` (found by their environment)."""
    out = []
    mark = f"AF_REBUILD_PARENT={parent}".encode()
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark in env.read_bytes().split(b"\0"):
                state = (env.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    out.append(int(env.parent.name))
        except OSError:
            continue
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_waiting_build_says_why_and_stops_on_a_signal(one_day, sig):
    home, _ = one_day
    # this test process holds the warehouse lock as a live build would
    with open(home.root / LOCK_FILE, "a+", encoding="utf-8") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        held.truncate(0)
        held.write(json.dumps({"pid": os.getpid(), "what": "af build", "since": "now"}))
        held.flush()
        proc = _Af(["build", "--home", str(home.root)], forked=True)
        lines = proc.read_until("waiting for the warehouse")
        assert f"in use by pid {os.getpid()} (af build" in lines[-1]
        proc.send(sig)
        rc = proc.wait()
        err = proc.stderr.read()
    assert rc in ((130,) if sig == signal.SIGINT else (130, -signal.SIGTERM)), err
    if sig == signal.SIGINT:
        assert "interrupted" in err


def test_a_pid_is_the_runs_process_only_if_it_is_alive_and_older_than_the_run():
    from assets.instance import _process_started_unix, run_process_alive

    now = time.time()
    assert run_process_alive(os.getpid(), now)
    mine = _process_started_unix(os.getpid())
    assert mine is not None and mine <= now
    # the same pid, but the run started well before this process: the pid was reused
    assert not run_process_alive(os.getpid(), mine - 60)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not run_process_alive(child.pid, now)  # gone
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + WAIT_S
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not run_process_alive(zombie.pid, now)  # finished, not yet reaped by its parent
    zombie.wait()
