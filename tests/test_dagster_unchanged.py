"""A build that changes nothing writes nothing: unchanged days are skipped, files and mtimes kept;
late capture for one day rebuilds that day only; a code version change (or --force) rebuilds all."""

from __future__ import annotations

import json
import warnings

import dagster as dg
import pytest
from dagster_support import corpus, days_of, new_home, only_days

from af_pipeline.interfaces import cli
from capture.log import EventLog

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")


def _files(home, days):
    return {
        (day, p.name): (p.read_bytes(), p.stat().st_mtime_ns)
        for day in days for p in sorted((home.published_dir / day).iterdir())
    }


def _runs(home) -> int:
    from assets.instance import instance

    return len(instance(home).get_run_records())


@pytest.fixture
def built_early(tmp_path):
    """Two sealed days built once; the second day's last quarter hour held back (late capture)."""
    from assets import certify as harness

    batch = corpus()
    day1, day2 = days_of(batch)[:2]
    cut = max(s.ts_us for s in only_days(batch, {day2}).snapshots) - 15 * 60_000_000
    home = new_home(tmp_path)
    EventLog(home).append(only_days(batch, {day1}))
    EventLog(home).append(only_days(batch, {day2}, before_us=cut))
    out = harness.run_build(home, [day1, day2])
    assert out.ok and out.run_id and out.skipped == [], out.failures
    return home, batch, day1, day2


def test_a_second_build_skips_every_day_and_touches_no_file(built_early, capsys):
    home, _batch, day1, day2 = built_early
    before, runs = _files(home, [day1, day2]), _runs(home)
    assert cli.main(["build", "--home", str(home.root)]) == 0
    out = capsys.readouterr()
    assert "skipping 2 unchanged day(s)" in out.err and "nothing to build: 2 day(s)" in out.out
    assert _runs(home) == runs  # not even a Dagster run
    assert _files(home, [day1, day2]) == before  # bytes and mtimes


def test_late_capture_for_one_day_rebuilds_that_day_only(built_early):
    from assets import certify as harness

    home, batch, day1, day2 = built_early
    before = _files(home, [day1])
    EventLog(home).append(only_days(batch, {day2}))  # the held-back rows land as an amendment
    out = harness.run_build(home, [day1, day2])
    assert out.ok and out.skipped == [day1], out.failures
    assert _files(home, [day1]) == before
    segments = json.loads((home.published_dir / day2 / "manifest.json").read_text())["segments"]
    assert len({k.split("/")[1] for k in segments}) == 2  # built from the first segment and the amendment
    again = harness.run_build(home, [day1, day2])
    assert again.run_id == "" and again.skipped == [day1, day2]


def test_a_code_version_change_or_force_rebuilds_every_day(built_early, monkeypatch):
    from assets import certify as harness
    from assets import day_assets

    home, _batch, day1, day2 = built_early
    forced = harness.run_build(home, [day1, day2], force=True)
    assert forced.ok and forced.run_id and forced.skipped == []
    run = dg.DagsterInstance.get().get_run_by_id(forced.run_id)
    assert run is not None and run.tags.get("af/force") == "true"
    # New code (another version) with the same output: every day is built again, once.
    for module in (harness, day_assets):
        monkeypatch.setattr(module, "code_version", lambda: "9.9.9+other")
    before = _files(home, [day1, day2])
    out = harness.run_build(home, [day1, day2])
    assert out.ok and out.run_id and out.skipped == [], out.failures
    assert _files(home, [day1, day2]) == before  # same bytes: sealed files are not rewritten
    assert harness.run_build(home, [day1, day2]).skipped == [day1, day2]


def _latest_materialization(inst, asset: str, day: str):
    records = inst.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day]), limit=1, ascending=False
    ).records
    assert records, (asset, day)
    return records[0]


DAY_ASSETS = ("raw_day", "frames", "enriched_input", "page_refs", "day_document", "context_block", "published_day")


def test_an_unchanged_day_materialized_again_keeps_its_numbers(built_early):
    """The UI's Materialize of one day (a run of the asset job with its partition tag) on a day
    that is unchanged: each asset's new materialization has the numbers of the build before, and
    a separate field saying it was unchanged (and which run computed the numbers)."""
    from assets.definitions import BUILD_JOB, build_definitions
    from assets.instance import instance
    from assets.unchanged import NUMBERS_FROM, REASON, UNCHANGED

    home, _batch, day1, _day2 = built_early
    inst = instance(home)
    built = {a: _latest_materialization(inst, a, day1) for a in DAY_ASSETS}
    numbers = {a: {k: v.value for k, v in r.asset_materialization.metadata.items()} for a, r in built.items()}
    assert numbers["raw_day"]["rows_total"] > 0 and numbers["frames"]["frames"] > 0, numbers
    job = build_definitions(home).resolve_job_def(BUILD_JOB)
    for _again in range(2):  # the second time, the kept numbers are kept again, from the same run
        result = job.execute_in_process(instance=inst, tags={"dagster/partition": day1}, raise_on_error=False)
        assert result.success
        for asset in DAY_ASSETS:
            record = _latest_materialization(inst, asset, day1)
            assert record.run_id == result.run_id, asset
            meta = {k: v.value for k, v in record.asset_materialization.metadata.items()}
            assert meta.pop(UNCHANGED) == REASON, (asset, meta)
            assert meta.pop(NUMBERS_FROM) == built[asset].run_id, (asset, meta)
            assert meta == numbers[asset], asset
