"""A certify run over a day range records each check's result on each day partition, as the
Dagster UI reads it: every day its own pass/fail and problems, a tampered day failing alone."""

from __future__ import annotations

import json
import shutil
import warnings

import dagster as dg
import pytest
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import (
    AssetCheckExecutionRecordStatus,
    AssetCheckExecutionResolvedStatus,
)
from dagster_support import corpus, days_of, new_home, only_days

from af_pipeline.warehouse import quality as rules
from assets import certify as harness
from assets.definitions import build_definitions
from assets.instance import instance, use_home
from capture.home import Home
from capture.log import EventLog
from certification import rebuild
from checks import invariants, quality

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")
CHECKS = {
    **{name: dg.AssetKey("published_day") for name in invariants.INVARIANTS},
    quality.RAW_QUALITY: dg.AssetKey("raw_day"),
    quality.FRAMES_QUALITY: dg.AssetKey("frames"),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two days in the log, built in one range run."""
    home = new_home(tmp_path_factory.mktemp("check-partitions"))
    batch = corpus()
    days = days_of(batch)[:2]
    EventLog(home).append(only_days(batch, set(days)))
    out = harness.run_build(home, days)
    assert out.ok, out.failures
    yield home, days
    rebuild.clear()


@pytest.fixture
def folder(built, tmp_path):
    home, days = built
    copy = Home(tmp_path / "home")
    shutil.copytree(home.root, copy.root)
    use_home(copy)
    return copy, days


def latest_on(home: Home, check: str, day: str):
    """The latest execution record of a check on one day partition."""
    key = dg.AssetCheckKey(CHECKS[check], check)
    inst = instance(home)  # kept alive: its storage refers back to it weakly
    records = inst.event_log_storage.get_asset_check_execution_history(
        key, limit=1, partition_filter=PartitionKeyFilter(key=day)
    )
    return records[0] if records else None


def ui_status(home: Home, check: str) -> dict[str, AssetCheckExecutionResolvedStatus]:
    """Day -> the check status the UI shows for it (Dagster's partition status of the check)."""
    key = dg.AssetCheckKey(CHECKS[check], check)
    partitions = build_definitions(home).resolve_assets_def(CHECKS[check]).partitions_def
    inst = instance(home)
    with dg.partition_loading_context(dynamic_partitions_store=inst):  # the day partitions live in the instance
        state = inst.event_log_storage.get_asset_check_state([(key, partitions)])[key]
        return {day: status for status, subset in state.subsets.items() for day in subset.subset_value.get_partition_keys()}


def test_range_certify_records_every_check_on_every_day(folder):
    home, days = folder
    cert = harness.run_certify(home, days)
    assert cert["verdict"] == "pass", {d: v for d, v in cert["days"].items() if not v["passed"]}
    run_id = cert["days"][days[0]]["run_id"]
    for check in CHECKS:
        for day in days:
            record = latest_on(home, check, day)
            assert record is not None, (check, day)
            assert record.run_id == run_id and record.status == AssetCheckExecutionRecordStatus.SUCCEEDED
        assert ui_status(home, check) == dict.fromkeys(days, AssetCheckExecutionResolvedStatus.SUCCEEDED), check

    # A later single-day run still lands on its own partition and leaves the other day alone.
    job = build_definitions(home).resolve_job_def("certify")
    single = job.execute_in_process(instance=instance(home), tags={"dagster/partition": days[1]})
    assert single.success
    for check in CHECKS:
        assert latest_on(home, check, days[1]).run_id == single.run_id
        assert latest_on(home, check, days[0]).run_id == run_id


def test_tampered_day_fails_on_its_own_partition_only(folder):
    home, days = folder
    tampered, honest = days
    # A forged rendering with its manifest updated to match: only the recompile can tell.
    published = home.published_dir / tampered
    md = published / "document.md"
    md.write_text(md.read_text().replace("|", "/", 1))
    manifest = json.loads((published / "manifest.json").read_text())
    manifest["files"]["document.md"]["sha256"] = __import__("hashlib").sha256(md.read_bytes()).hexdigest()
    (published / "manifest.json").write_text(json.dumps(manifest))

    cert = harness.run_certify(home, days)
    run = instance(home).get_run_by_id(cert["days"][tampered]["run_id"])
    assert run is not None and run.status == dg.DagsterRunStatus.FAILURE  # blocking: a failed day fails the run

    failed = latest_on(home, invariants.RECOMPILE, tampered)
    assert failed.status == AssetCheckExecutionRecordStatus.FAILED
    evaluation = failed.evaluation
    assert evaluation.partition == tampered and "document.md" in (evaluation.description or "")
    assert latest_on(home, invariants.RECOMPILE, honest).status == AssetCheckExecutionRecordStatus.SUCCEEDED
    assert ui_status(home, invariants.RECOMPILE) == {
        tampered: AssetCheckExecutionResolvedStatus.FAILED,
        honest: AssetCheckExecutionResolvedStatus.SUCCEEDED,
    }
    for check in set(CHECKS) - {invariants.RECOMPILE}:  # a consistent forgery: everything else holds
        assert set(ui_status(home, check).values()) == {AssetCheckExecutionResolvedStatus.SUCCEEDED}, check

    # The certificate reads the same per-day evaluations.
    assert not cert["days"][tampered]["passed"] and cert["days"][honest]["passed"]
    assert cert["days"][tampered]["checks"][invariants.RECOMPILE]["problem"] == evaluation.description


def test_a_failure_no_single_day_shows_fails_every_day_of_the_range():
    """One frame id on two days: each day alone is clean, the range is not, so both days fail."""
    import pandas as pd

    def frame(day: str) -> dict:
        return {"day": day, "frame_id": "f-1", "stream": "s", "app": "a", "start_us": 0, "end_us": 10,
                "wall_us": 10, "active_us": 5, "snapshots": 1, "earn_cap_us": rules.DWELL_CAP_US, "prev_end_us": None}

    days = ["2026-06-01", "2026-06-02"]
    rows = pd.DataFrame([frame(d) for d in days])
    found = quality.validate_days("frames", rows, quality.expectations(rules.FRAMES), days)
    assert set(found) == set(days)
    assert all(len(found[d]) == 1 and "frame_id" in found[d][0] for d in days), found
    clean = quality.validate_days("frames", rows.iloc[:1], quality.expectations(rules.FRAMES), days)
    assert clean == {d: [] for d in days}
