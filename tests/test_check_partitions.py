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


def test_af_certify_records_gx_validation_results_with_failing_row_ids(folder):
    """af certify over two real days, one frame of the second made longer than its wall time:
    each day's quality checks carry GX's own validation result (every expectation, the rows it
    checked, and on the failing day the failing row's id), and no capture text."""
    import duckdb

    home, days = folder
    honest, tampered = days
    con = duckdb.connect(str(home.warehouse_path))
    (frame_id,) = con.execute("SELECT frame_id FROM frames WHERE day = ? AND seq = 0", [tampered]).fetchone()
    con.execute("UPDATE frames SET active_us = wall_us + 1 WHERE day = ? AND seq = 0", [tampered])
    frames_on = dict(con.execute("SELECT day, count(*) FROM frames GROUP BY day").fetchall())
    texts = {str(v) for row in con.execute('SELECT "window", url FROM raw_snapshots').fetchall() for v in row
             if v and len(str(v)) >= 6}  # window titles and URLs: capture text
    assert texts
    con.close()
    cert = harness.run_certify(home, days)
    assert not cert["days"][tampered]["passed"] and cert["days"][honest]["passed"]

    def gx(check: str, day: str) -> dict:
        meta = latest_on(home, check, day).evaluation.metadata
        assert meta["validated by"].value == quality.CHECKED_BY_GX, (check, day)  # GX ran, screen or not
        for value in meta.values():  # counts, row ids and rule names only
            assert not any(t in json.dumps(value.value, default=str) for t in texts), (check, day)
        return meta[quality.GX_RESULT].value

    expected = {quality.RAW_QUALITY: len(rules.RAW.rules), quality.FRAMES_QUALITY: len(rules.FRAMES.rules)}
    for check, n in expected.items():
        for day in days:
            result = gx(check, day)
            assert result["suite"] == check and len(result["expectations"]) == n, result
            assert all(e["expectation"].startswith("expect_") and e["rows checked"] == result["rows checked"]
                       for e in result["expectations"]), result
    assert gx(quality.FRAMES_QUALITY, honest)["rows checked"] == frames_on[honest]
    assert gx(quality.FRAMES_QUALITY, honest)["success"] is True
    bad = gx(quality.FRAMES_QUALITY, tampered)
    assert bad["success"] is False and bad["rows checked"] == frames_on[tampered]
    failed = [e for e in bad["expectations"] if not e["success"]]
    assert [(e["expectation"], e["columns"], e["failing rows"], e["failing row ids"]) for e in failed] == [
        ("expect_column_pair_values_a_to_be_greater_than_b", ["wall_us", "active_us"], 1, [frame_id])
    ], failed
    assert gx(quality.RAW_QUALITY, tampered)["success"] is True


def test_a_failure_across_days_fails_the_days_holding_its_rows():
    """One frame id on two days of three: each day alone is clean, the batch is not; GX names the
    two rows, so those two days fail and the third passes."""
    import pandas as pd

    def frame(day: str, frame_id: str) -> dict:
        return {"day": day, "frame_id": frame_id, "stream": "s", "app": "a", "start_us": 0, "end_us": 10,
                "wall_us": 10, "active_us": 5, "snapshots": 1, "earn_cap_us": rules.DWELL_CAP_US, "prev_end_us": None}

    days = ["2026-06-01", "2026-06-02", "2026-06-03"]
    rows = pd.DataFrame([frame(days[0], "f-1"), frame(days[1], "f-1"), frame(days[2], "f-2")])
    found = quality.validate_days("frames", rows, quality.expectations(rules.FRAMES), days)
    assert found[days[2]] == [], found
    assert all(len(found[d]) == 1 and "frame_id" in found[d][0] and "f-1" in found[d][0] for d in days[:2]), found
    clean = quality.validate_days("frames", rows.iloc[[0, 2]], quality.expectations(rules.FRAMES), days)
    assert clean == {d: [] for d in days}
