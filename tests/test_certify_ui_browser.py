"""Certification from the Dagster UI, in a browser (issue 37): `af ui` on a two-day data folder, and
Chromium driven by Playwright along the path docs/certification.md describes.

Jobs > certify > Launchpad, pick one day in the partition selector, Launch Run; the run's page
says Success and lists each check's evaluation as succeeded; then each asset's Checks tab, the
check's Partitions tab, the day: Passed, by that run. The test asserts what the page shows, and the
run's status and each check's record in the instance.

It saves a screenshot at each step in its tmp folder, and into docs/img/certification/ (the
documentation's pictures) with AF_UPDATE_SCREENSHOTS=1:

    AF_UPDATE_SCREENSHOTS=1 .venv/bin/pytest tests/test_certify_ui_browser.py
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import psutil
import pytest
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster_support import corpus, days_of, new_home, only_days
from test_stop_on_signal import _free_port
from wait_support import until

from af_pipeline.routines import replay
from assets import certify as harness
from assets.instance import instance
from capture.home import Home
from capture.log import EventLog
from checks import invariants, quality

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(replay.CHROMIUM).exists(), reason="needs Debian chromium (make setup)"),
]

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "docs" / "img" / "certification"
UPDATE = os.environ.get("AF_UPDATE_SCREENSHOTS") == "1"
LOCATION = "activity_frames"
CHECKS = {  # asset -> its checks, in the order its Checks tab lists them (by name)
    "published_day": sorted(invariants.INVARIANTS),
    "raw_day": [quality.RAW_QUALITY],
    "frames": [quality.FRAMES_QUALITY],
}
START_S = 180  # `af ui` up: dagster dev, its webserver and the code location loaded, on busy cores
RUN_S = 240  # the certify run: its own process imports Dagster, GX and the definitions
UI_MS = 60_000  # any one thing the page is asked to show (the webserver answers between runs' steps)
# Wide enough for the navigation and a check's detail side by side (at 1280 the detail runs
# past the right edge, its Passed tag out of sight); high enough for the five check evaluations
# in the run's events pane.
VIEWPORT = {"width": 1440, "height": 1024}
STOP_S = 15  # `af ui` stops its process group within 7 s of SIGTERM (af_pipeline/interfaces/commands/ui.py)


@contextmanager
def af_ui(home: Home, port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`af ui` on the data folder, as a user starts it; stopped with everything it started."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "af_pipeline.interfaces.cli", "ui", "--home", str(home.root), "--port", str(port)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )
    try:
        yield proc
    finally:
        # af ui's own group, and dagster dev's (af ui runs it in a session of its own)
        groups = {proc.pid}
        for child in _children(proc):
            try:
                groups.add(os.getpgid(child.pid))
            except ProcessLookupError:
                pass
        proc.send_signal(signal.SIGTERM)  # its own stop: SIGINT to dagster dev, then its group
        try:
            proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            pass
        for group in groups:  # whatever did not stop (a failed test must not leave a webserver running)
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def _children(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        return psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        return []


def _graphql(base: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{base}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = json.load(response)
    assert not answer.get("errors"), answer["errors"]
    return dict(answer["data"])


WORKSPACE = """{ workspaceOrError { ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def _location_loaded(base: str) -> bool:
    """The webserver answers and has loaded the code location (a load error fails at once)."""
    try:
        entries = _graphql(base, WORKSPACE)["workspaceOrError"]["locationEntries"]
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False  # not listening yet
    for entry in entries:
        if entry["name"] == LOCATION and entry["loadStatus"] == "LOADED":
            loaded = entry["locationOrLoadError"]
            assert loaded["__typename"] == "RepositoryLocation", loaded
            return True
    return False


SENSOR = """query ($s: SensorSelector!) { sensorOrError(sensorSelector: $s) {
  __typename ... on Sensor { sensorState { status ticks(limit: 1) { status runIds } } } } }"""


def _sensor_settled(base: str, inst: dg.DagsterInstance) -> bool:
    """The sealed-day sensor (on by default) has ticked once, and any build it asked for ended.
    Its days were built by this code a moment ago, so it normally asks for none; were the code
    version to differ (sources edited meanwhile), a build after the certify run would clear that
    day's certification status and the page would show it missing."""
    selector = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__", "sensorName": "newly_sealed_days"}
    sensor = _graphql(base, SENSOR, {"s": selector})["sensorOrError"]
    assert sensor["__typename"] == "Sensor", sensor
    if sensor["sensorState"]["status"] != "RUNNING":
        return True  # (were it off by default) it asks for nothing
    ticks = sensor["sensorState"]["ticks"]
    if not ticks or ticks[0]["status"] == "STARTED":
        return False
    return all((run := inst.get_run_by_id(run_id)) is not None and run.is_finished for run_id in ticks[0]["runIds"])


@pytest.fixture
def folder(tmp_path: Path) -> tuple[Home, list[str]]:
    """Two days imported and built (every asset, the data-quality checks), none certified yet."""
    home = new_home(tmp_path)
    batch = corpus()
    days = days_of(batch)[:2]
    EventLog(home).append(only_days(batch, set(days)))
    out = harness.run_build(home, days)
    assert out.ok, out.failures
    return home, days


def test_a_day_certified_from_the_launchpad_shows_each_check_passed(folder, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    home, days = folder
    day = days[1]
    inst = instance(home)
    shots = tmp_path / "screenshots"
    shots.mkdir()

    def shot(page: Any, name: str) -> None:
        png = page.screenshot(path=str(shots / f"{name}.png"))
        if UPDATE:
            SHOTS.mkdir(parents=True, exist_ok=True)
            (SHOTS / f"{name}.png").write_bytes(png)

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    with af_ui(home, port, tmp_path / "af-ui.err") as proc, sync_playwright() as p:
        until(lambda: _location_loaded(base), START_S, "the webserver up with the code location loaded", proc)
        up = time.monotonic() - t0
        # The community sign-up dialog Dagster shows once per instance on 127.0.0.1 would cover the
        # page: dismissed the way its Skip button does.
        assert _graphql(base, "mutation { setNuxSeen }")["setNuxSeen"] is True
        browser = replay.launch(p)
        try:
            page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
            page.set_default_timeout(UI_MS)
            expect.set_options(timeout=UI_MS)  # Playwright's default again in the finally below

            # 1. Jobs > certify > Launchpad; the partition selector offers the log's days
            page.goto(base)
            nav = page.get_by_role("navigation")  # links are named with their icon's too: "column_lineage Jobs"
            nav.get_by_role("link", name="Jobs").click()
            page.wait_for_url(re.compile(r"/jobs$"))
            page.get_by_role("link", name="certify").click()
            page.get_by_role("tab", name="Launchpad").click()
            page.get_by_placeholder("Partition", exact=True).click()
            for d in days:
                expect(page.get_by_role("menuitem", name=d, exact=True)).to_be_visible()
            page.get_by_role("menuitem", name=day, exact=True).click()
            expect(page.get_by_text(f"partition: {day}", exact=True)).to_be_visible()  # the run's tag
            expect(page.get_by_text("No errors", exact=True)).to_be_visible()  # the config it filled in is valid
            expect(page.get_by_role("button", name="Launch Run")).to_be_enabled()
            shot(page, "1-launchpad-partition")

            until(lambda: _sensor_settled(base, inst), START_S, "the sensor's first tick and its runs done", proc)
            page.get_by_role("button", name="Launch Run").click()

            # 2. the run's page: Success, and every check's evaluation succeeded on that day
            page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}$"))
            run_id = page.url.rsplit("/", 1)[1]
            run = until(lambda: _finished(inst, run_id), RUN_S, "the certify run finished", proc)
            assert run.status == dg.DagsterRunStatus.SUCCESS, _why(inst, run_id)
            expect(page.get_by_text("Success", exact=True)).to_be_visible()
            assert run.job_name == "certify" and run.tags["dagster/partition"] == day, run.tags
            expect(page.get_by_text(f"partition: {day}", exact=True)).to_be_visible()
            # no reload: the open page is sent the run's events as they are stored (the run
            # shard's WAL wakes the storage's watcher: assets/dagster_adapter.py)
            page.get_by_role("textbox", name="Filter…").fill("type:ASSET_CHECK_EVALUATION")
            page.get_by_role("button", name="expand_arrows").last.click()  # the events pane over the step chart
            for asset, names in CHECKS.items():
                for name in names:
                    said = f"Check {name} succeeded for materialization of {asset}."
                    expect(page.get_by_text(said, exact=True)).to_be_visible()
            shot(page, "2-run-succeeded")
            ran = time.monotonic() - t0

            # 3. Catalog > asset > Checks > a check > Partitions > the day: Passed, by this run
            for asset, names in CHECKS.items():
                nav.get_by_role("link", name="Catalog").click()
                page.wait_for_url(re.compile(r"/assets/?$"))  # not a link of the page before
                # (the asset's name is written twice: the text and its measure for truncation)
                page.get_by_role("link", name=re.compile(rf"^{asset}( {asset})?$")).click()
                page.get_by_role("tab", name="Checks").click()
                for name in names:
                    page.get_by_title(name, exact=True).first.click()  # in the list of the asset's checks
                    page.get_by_role("tab", name="Partitions").last.click()  # the check's, not the asset's
                    page.get_by_title(day, exact=True).last.click()  # in the list of days
                    # the day's detail names the run that judged it, linked to this check's step:
                    # the detail shown is this check's (not the one clicked before)
                    judged_by = page.get_by_role("link", name=run_id[:8], exact=True)
                    expect(judged_by).to_have_attribute("href", re.compile(rf"selection={asset}_{name}(&|$)"))
                    expect(judged_by).to_be_in_viewport()
                    expect(page.get_by_text("Passed", exact=True)).to_be_in_viewport()  # the day's status
                    if asset == "published_day" and name == names[-1]:
                        shot(page, "3-check-passed-per-day")
                    record = _latest(inst, asset, name, day)
                    assert record is not None and record.run_id == run_id, (name, record)
                    assert record.status == AssetCheckExecutionRecordStatus.SUCCEEDED, (name, record.evaluation)
                    other = _latest(inst, asset, name, days[0])  # the other day was not judged by this run
                    assert other is None or other.run_id != run_id, (name, other)
        finally:
            browser.close()
            expect.set_options(timeout=5_000)
    print(f"af ui up in {up:.1f} s, run succeeded at {ran:.1f} s, all in {time.monotonic() - t0:.1f} s")


def _finished(inst: dg.DagsterInstance, run_id: str) -> dg.DagsterRun | None:
    run = inst.get_run_by_id(run_id)
    return run if run is not None and run.is_finished else None


def _why(inst: dg.DagsterInstance, run_id: str) -> list[str]:
    """What failed in a run: its failed checks' descriptions and its steps' errors."""
    said = []
    for entry in inst.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        if event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
            data = event.asset_check_evaluation_data
            if not data.passed:
                said.append(f"{data.check_name}: {data.description}")
        elif event.event_type in (dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE):
            said.append(f"{event.step_key or 'run'}: {entry.message}")
    return said


def _latest(inst: dg.DagsterInstance, asset: str, check: str, day: str) -> Any:
    key = dg.AssetCheckKey(dg.AssetKey(asset), check)
    records = inst.event_log_storage.get_asset_check_execution_history(
        key, limit=1, partition_filter=PartitionKeyFilter(key=day)
    )
    return records[0] if records else None
