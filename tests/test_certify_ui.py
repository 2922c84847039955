"""Certification from the Dagster UI: the certify job has the day partitions, and a run launched
the way the Launchpad launches it (GraphQL: the job's partition set, the picked partition's tags
and run config, then launchPipelineExecution) judges that day with every check.

One real instance for the module: the data folder's own (<home>/dagster), its code location
loaded from workspace.yaml by a gRPC code server (as `dagster dev` loads it), runs launched by
Dagster's default run launcher in their own processes. The instance's run coordinator is the
default (immediate) one, so no daemon is needed to dequeue them.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql
from dagster_support import corpus, days_of, new_home, only_days

from assets import certify as harness
from assets.instance import instance
from capture.log import EventLog
from certification import rebuild
from checks import invariants, quality

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")
ROOT = Path(__file__).resolve().parent.parent
LOCATION = "activity_frames"  # workspace.yaml
REPOSITORY = "__repository__"  # the repository Dagster makes of a Definitions object
PARTITION_SET = "certify_partition_set"
CHECKS = {
    **{name: dg.AssetKey("published_day") for name in invariants.INVARIANTS},
    quality.RAW_QUALITY: dg.AssetKey("raw_day"),
    quality.FRAMES_QUALITY: dg.AssetKey("frames"),
}
RUN_TIMEOUT_S = 300  # a run's own process imports Dagster, GX and the definitions on a shared machine

PARTITIONS = """
query ($repo: RepositorySelector!, $set: String!, $day: String!) {
  partitionSetOrError(repositorySelector: $repo, partitionSetName: $set) {
    __typename
    ... on PartitionSet {
      pipelineName
      partitionsOrError { ... on Partitions { results { name } } }
      partition(partitionName: $day) {
        tagsOrError { ... on PartitionTags { results { key value } } }
        runConfigOrError { ... on PartitionRunConfig { yaml } }
      }
    }
  }
}
"""

LAUNCH = """
mutation ($params: ExecutionParams!) {
  launchPipelineExecution(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId tags { key value } } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
  }
}
"""


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """Two days built in one range run; the instance with the default run coordinator; the
    code location served from workspace.yaml, as the webserver loads it."""
    home = new_home(tmp_path_factory.mktemp("certify-ui"))
    batch = corpus()
    days = days_of(batch)[:2]
    EventLog(home).append(only_days(batch, set(days)))
    out = harness.run_build(home, days)
    assert out.ok, out.failures
    config = home.dagster_home / "dagster.yaml"
    config.write_text(config.read_text() + "run_coordinator:\n  module: dagster.core.run_coordinator\n"
                      "  class: DefaultRunCoordinator\n")
    inst = instance(home)  # sets DAGSTER_HOME and AF_HOME for the code server and the runs it launches
    with define_out_of_process_context(str(ROOT / "workspace.yaml"), None, inst) as context:
        yield home, days, inst, context
    rebuild.clear()


def _gql(context: Any, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    result = execute_dagster_graphql(context, query, variables)
    assert not result.errors, result.errors
    return dict(result.data)


def _repo() -> dict[str, str]:
    return {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}


def _launch(context: Any, tags: dict[str, str], run_config: dict[str, Any]) -> str:
    params = {
        "selector": {**_repo(), "pipelineName": "certify"},
        "runConfigData": run_config,
        "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
    }
    launched = _gql(context, LAUNCH, {"params": params})["launchPipelineExecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return str(launched["run"]["runId"])


def _finished(inst: dg.DagsterInstance, run_id: str) -> dg.DagsterRun:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        run = inst.get_run_by_id(run_id)
        if run is not None and run.is_finished:
            return run
        time.sleep(0.5)  # polling the run's status until it ends (or the deadline)
    raise AssertionError(f"run {run_id} did not finish within {RUN_TIMEOUT_S} s")


def _latest(inst: dg.DagsterInstance, check: str, day: str) -> Any:
    key = dg.AssetCheckKey(CHECKS[check], check)
    records = inst.event_log_storage.get_asset_check_execution_history(
        key, limit=1, partition_filter=PartitionKeyFilter(key=day)
    )
    return records[0] if records else None


def test_the_launchpad_certifies_a_picked_day(ui):
    home, days, inst, context = ui
    day, other = days[1], days[0]
    found = _gql(context, PARTITIONS, {"repo": _repo(), "set": PARTITION_SET, "day": day})["partitionSetOrError"]
    # The Launchpad's partition picker: the certify job's partitions are the log's days.
    assert found["__typename"] == "PartitionSet" and found["pipelineName"] == "certify", found
    assert [p["name"] for p in found["partitionsOrError"]["results"]] == days
    tags = {t["key"]: t["value"] for t in found["partition"]["tagsOrError"]["results"]}
    assert tags.get("dagster/partition") == day, tags
    run_config = yaml.safe_load(found["partition"]["runConfigOrError"]["yaml"]) or {}

    run_id = _launch(context, tags, run_config)
    run = _finished(inst, run_id)
    assert run.status == dg.DagsterRunStatus.SUCCESS, run.status
    for check in CHECKS:  # every check judged the picked day, and only that day
        record = _latest(inst, check, day)
        assert record is not None and record.run_id == run_id, (check, record)
        assert record.status == AssetCheckExecutionRecordStatus.SUCCEEDED, (check, record.evaluation)
        earlier = _latest(inst, check, other)
        assert earlier is None or earlier.run_id != run_id, check
    # GX judged the day (a certify run never stops at the SQL screen)
    for check in (quality.RAW_QUALITY, quality.FRAMES_QUALITY):
        meta = _latest(inst, check, day).evaluation.metadata
        assert meta["validated by"].value == quality.CHECKED_BY_GX, check
        result = meta[quality.GX_RESULT].value
        assert result["success"] is True and result["rows checked"] > 0, result


def test_a_day_range_from_the_launchpad_is_one_run_judging_each_day(ui):
    home, days, inst, context = ui
    tags = {"dagster/asset_partition_range_start": days[0], "dagster/asset_partition_range_end": days[-1]}
    run_id = _launch(context, tags, {})
    run = _finished(inst, run_id)
    assert run.status == dg.DagsterRunStatus.SUCCESS, run.status
    for check in CHECKS:
        for day in days:
            record = _latest(inst, check, day)
            assert record is not None and record.run_id == run_id, (check, day)
            assert record.status == AssetCheckExecutionRecordStatus.SUCCEEDED, (check, day, record.evaluation)


BACKFILL = """
mutation ($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId launchedRunIds }
    ... on PythonError { message }
    ... on PartitionSetNotFoundError { message }
  }
}
"""


def test_a_backfill_from_the_partitions_tab_certifies_each_picked_day(ui):
    """The job's Partitions tab: select days, launch a backfill (one run per day; submitted at
    once here instead of by the daemon's next tick)."""
    home, days, inst, context = ui
    params = {
        "selector": {"partitionSetName": PARTITION_SET, "repositorySelector": _repo()},
        "partitionNames": days,
        "forceSynchronousSubmission": True,
    }
    launched = _gql(context, BACKFILL, {"params": params})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    runs = {}
    for run_id in launched["launchedRunIds"]:
        run = _finished(inst, run_id)
        assert run.status == dg.DagsterRunStatus.SUCCESS, run.status
        runs[run.tags["dagster/partition"]] = run_id
    assert sorted(runs) == days
    for check in CHECKS:
        for day in days:
            record = _latest(inst, check, day)
            assert record.run_id == runs[day] and record.status == AssetCheckExecutionRecordStatus.SUCCEEDED, (
                check, day)
