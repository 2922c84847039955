"""Issue 43, "stops when asked": a run cut short when `af ui` stops is marked as such in Dagster and
redone by the sensor's next tick.

The end-to-end case runs `af ui` for real on a one-day data folder. The test holds the warehouse
lock (as an `af build` in progress would), so the sensor's run of the sealed day is STARTED and
waiting for it, deterministically, when `af ui` gets SIGTERM. After the stop that run must be
failed as cut short (not left STARTED), the day still unbuilt; once the lock is free, a restarted
`af ui` must build the same partition in a new run on its sensor's next tick.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field

import dagster as dg
import pytest
from test_stop_on_signal import _free_port, _shm_entries, running, stop_and_check
from wait_support import listening, until

from af_pipeline.warehouse import publish
from assets import instance as af_instance
from assets import sensors
from capture.home import Home

DAY = "2026-11-02"  # a Monday, long sealed: the sensor requests a build of it at its first tick


def _runs(inst: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return list(inst.get_runs(dg.RunsFilter(tags={"dagster/partition": DAY})))


def _events(inst: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.message or "" for e in inst.all_logs(run_id)]


@pytest.mark.slow
def test_a_run_cut_short_by_af_ui_stopping_is_marked_and_redone(tmp_path):
    from af_pipeline.interfaces import cli

    sample = tmp_path / "sample"
    assert cli.main(["synth", "--days", "1", "--start-day", DAY, "--tz", "UTC", "--out", str(sample)]) == 0
    assert cli.main(["import", "screenpipe", str(sample / "screenpipe.sqlite"), "--home",
                     str(tmp_path / "home"), "--tz", "UTC"]) == 0
    home = Home(tmp_path / "home")
    # the sensor looks every 2 s instead of 5 min, so its tick after the restart comes at once
    env = {**os.environ, sensors.INTERVAL_ENV: "2"}
    argv = ["ui", "--home", str(home.root)]
    t0 = time.monotonic()

    with ExitStack() as held:
        held.enter_context(af_instance.warehouse_lock(home, "the test, as an af build in progress"))
        port = _free_port()
        before = _shm_entries()
        err = tmp_path / "ui1.err"
        with err.open("wb") as errf, running([*argv, "--port", str(port)], env=env,
                                             stdout=subprocess.DEVNULL, stderr=errf) as proc:
            until(lambda: listening(port), 150, "the Dagster webserver listening", proc)
            inst = dg.DagsterInstance.from_config(str(home.dagster_home))
            started = until(lambda: [r for r in _runs(inst) if r.status == dg.DagsterRunStatus.STARTED],
                             90, "the sensor's run of the sealed day STARTED (waiting for the warehouse)", proc)
            first = started[0]
            took = stop_and_check(proc, signal.SIGTERM, before)  # within 10 s, marking included
        # what a user sees in the UI right after the stop: failed, cut short, and why
        run = inst.get_run_by_id(first.run_id)
        assert run is not None
        assert run.status == dg.DagsterRunStatus.FAILURE, f"left {run.status.value} after af ui stopped"
        assert run.tags.get(af_instance.CUT_SHORT_TAG) == af_instance.UI_STOPPED
        assert any("cut short: af ui stopped" in m for m in _events(inst, run.run_id)), _events(inst, run.run_id)
        said = err.read_text(errors="replace")  # af ui says what it marked
        assert f"run {first.run_id[:8]} (build) was" in said and "cut short" in said, said
        assert publish.read_manifest(home.published_dir, DAY) is None  # the day is still unbuilt
    stopped_at = time.monotonic() - t0

    # the lock is free again: a restarted af ui builds the day again, in a new run
    port = _free_port()
    before = _shm_entries()
    with (tmp_path / "ui2.err").open("wb") as errf, running([*argv, "--port", str(port)], env=env,
                                                           stdout=subprocess.DEVNULL, stderr=errf) as proc:
        redone = until(lambda: [r for r in _runs(inst) if r.run_id != first.run_id
                                 and r.status == dg.DagsterRunStatus.SUCCESS], 80,
                        "a new run of the same partition succeeding after the restart", proc)
        stop_and_check(proc, signal.SIGTERM, before)
    assert redone[0].tags["dagster/run_key"] == first.tags["dagster/run_key"] + "-retry1"
    manifest = publish.read_manifest(home.published_dir, DAY)
    assert manifest is not None and manifest.get("sealed")
    assert len(_runs(inst)) == 2  # the cut-short run and its redo: nothing else was asked for
    print(f"stopped in {took:.1f} s; cut short after {stopped_at:.1f} s, redone after {time.monotonic() - t0:.1f} s")


# --- the sensor's choice of run key, on stand-in runs (no daemon) ------------------------------


@dataclass
class _Run:
    key: str
    status: dg.DagsterRunStatus
    tags: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tags = {sensors.RUN_KEY_TAG: self.key, **self.tags}


@dataclass
class _Instance:
    runs: list[_Run]

    def get_runs(self, filters: dg.RunsFilter) -> list[_Run]:
        keys = filters.tags[sensors.RUN_KEY_TAG]
        return [r for r in self.runs if r.key in keys]


def _key(runs: list[_Run]) -> str:
    return sensors.run_key(_Instance(runs), DAY, "abc-1.0")  # type: ignore[arg-type]


BASE = f"sealed-{DAY}-abc-1.0"
FAILED = dg.DagsterRunStatus.FAILURE
CUT = {af_instance.CUT_SHORT_TAG: af_instance.UI_STOPPED}


def test_the_sensor_asks_again_only_for_runs_cut_short_and_not_forever():
    assert _key([]) == BASE
    assert _key([_Run(BASE, dg.DagsterRunStatus.STARTED)]) == BASE  # in progress: Dagster skips the key
    assert _key([_Run(BASE, dg.DagsterRunStatus.SUCCESS)]) == BASE
    # failed in its own steps: not asked for again (the same key, which Dagster skips)
    assert _key([_Run(BASE, FAILED, {af_instance.FAILURE_REASON_TAG: "STEP_FAILURE"})]) == BASE
    assert _key([_Run(BASE, dg.DagsterRunStatus.CANCELED)]) == BASE  # canceled by a user: their call
    # cut short (af ui stopped, or Dagster's own interrupt): a new key
    assert _key([_Run(BASE, FAILED, CUT)]) == BASE + "-retry1"
    assert _key([_Run(BASE, FAILED, {af_instance.FAILURE_REASON_TAG: "UNEXPECTED_TERMINATION"})]) == BASE + "-retry1"
    assert _key([_Run(BASE, FAILED, CUT), _Run(BASE + "-retry1", FAILED, CUT)]) == BASE + "-retry2"
    every = [_Run(BASE, FAILED, CUT)] + [_Run(f"{BASE}-retry{n}", FAILED, CUT)
                                         for n in range(1, sensors.MAX_CUT_SHORT_RETRIES + 1)]
    assert _key(every) == f"{BASE}-retry{sensors.MAX_CUT_SHORT_RETRIES}"  # bounded: no new key


# --- an instance written by an older release gets run monitoring ------------------------------

OLD_YAML = """\
# Written by activity-frames. Safe to edit; `af` only rewrites it when it is missing.
telemetry:
  enabled: false
concurrency:
  pools:
    default_limit: 1
    granularity: op
# my own note
"""


def test_an_existing_dagster_yaml_gets_run_monitoring_and_keeps_the_rest(tmp_path):
    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    home.dagster_home.mkdir(parents=True)
    config = home.dagster_home / "dagster.yaml"
    config.write_text(OLD_YAML)
    config.chmod(0o600)
    af_instance.prepare(home)
    text = config.read_text()
    assert text.startswith(OLD_YAML)
    assert (config.stat().st_mode & 0o777) == 0o600
    af_instance.prepare(home)
    assert config.read_text() == text  # once
    inst = dg.DagsterInstance.from_config(str(home.dagster_home))
    assert inst.run_monitoring_enabled
    assert inst.run_monitoring_start_timeout_seconds == 180
    assert inst.get_settings("concurrency")["pools"]["default_limit"] == 1
    fresh = Home(tmp_path / "fresh")
    fresh.init(tz="UTC")
    af_instance.prepare(fresh)
    assert dg.DagsterInstance.from_config(str(fresh.dagster_home)).run_monitoring_enabled


# --- a run whose process was SIGKILLed (it never recorded its end) ------------------------------

STUCK = r"""
import pathlib, sys, time
import dagster as dg

@dg.op
def wait_here():
    pathlib.Path(sys.argv[2]).write_text("in the step")
    while True:  # until SIGKILLed, as a run of af ui's group that ignored SIGTERM would be
        time.sleep(0.05)

@dg.job
def stuck():
    wait_here()

stuck.execute_in_process(instance=dg.DagsterInstance.from_config(sys.argv[1]))
"""


def test_a_run_killed_with_af_ui_is_failed_as_cut_short_not_left_started(tmp_path):
    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    folder = af_instance.prepare(home)
    inst = dg.DagsterInstance.from_config(str(folder))
    since = time.time()
    mark = tmp_path / "in-step"
    proc = subprocess.Popen([sys.executable, "-c", STUCK, str(folder), str(mark)])
    try:
        until(mark.exists, 60, "the run in its step", proc)
    finally:
        proc.kill()
        proc.wait()
    (run,) = inst.get_runs()
    assert run.status == dg.DagsterRunStatus.STARTED  # what a killed run leaves in Dagster's storage
    said = af_instance.settle_stopped(inst, {proc.pid}, since)
    run = inst.get_run_by_id(run.run_id)
    assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
    assert run.tags[af_instance.CUT_SHORT_TAG] == af_instance.UI_STOPPED
    failure = inst.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    assert len(failure) == 1 and (failure[0].message or "").startswith(f"cut short: af ui stopped while this run was in progress (pid {proc.pid})")
    assert len(said) == 1 and run.run_id[:8] in said[0]
    assert af_instance.settle_stopped(inst, {proc.pid}, since) == []  # once
