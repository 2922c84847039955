"""The day assets build the same bytes on every executor (issue 37: compute a day once).

The day work is one multi-asset (assets/day_assets.py) whose one call builds each day of its
run, with nothing carried in module state, so it may run in the run's own process (in-process
executor), in a step process of its own (multiprocess) or on a dask worker (dask, a
LocalCluster the executor starts). The same capture, landed in three data folders, is built by
the `build` job on each executor, each folder with its own Dagster instance; every published
file and every warehouse table must be the same, byte for byte and row for row. The capture is
built once per module and copied (tests within budget: a multiprocess step costs seconds).
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import duckdb
import pytest
from dagster_support import corpus, days_of, new_home

from af_pipeline.warehouse import store
from capture.home import Home
from capture.log import EventLog

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")
pytestmark = [pytest.mark.timeout(900)]

EXECUTORS = ("in_process", "multiprocess", "dask")
DAY_KEYS = ("raw_day", "frames", "enriched_input", "page_refs", "day_document", "context_block", "published_day")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _tables(home: Home, days: list[str]) -> dict[str, list[tuple]]:
    """Every table of the warehouse that has a day column: its rows for the days, in order."""
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        tables = [t for (t,) in con.execute(
            "SELECT DISTINCT table_name FROM duckdb_columns() WHERE column_name = 'day' AND schema_name = 'main' "
            "ORDER BY table_name").fetchall()]
        out = {}
        for t in tables:
            # raw_root / raw_files name the folder itself: compared by what they name inside it
            rows = con.execute(f'SELECT * FROM "{t}" WHERE day IN (SELECT unnest(?::VARCHAR[])) ORDER BY ALL',
                               [days]).fetchall()
            out[t] = [tuple(str(v).replace(str(home.root), "<home>") for v in r) for r in rows]
        out["digests"] = sorted(store.digests(con, days).items())
        return out
    finally:
        con.close()


def _failures(result) -> list[str]:
    out = []
    for e in result.all_events:
        err = getattr(e.event_specific_data, "error", None)
        if e.is_failure or err is not None:
            out.append(f"{e.event_type_value} {e.message} {err.to_string() if err else ''}"[:4000])
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Three copies of one landed capture (3 sealed days), each built by the build job on one executor."""
    import dagster as dg
    from dask.distributed import LocalCluster

    from assets.instance import instance, use_home
    from assets.partitions import register_days

    base = tmp_path_factory.mktemp("executors")
    batch = corpus(3)
    days = days_of(batch)[:3]
    first = new_home(base / "first")
    EventLog(first).append(batch)
    out: dict[str, tuple[Home, list]] = {}
    saved = os.environ.get("DAGSTER_HOME")
    try:
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            for kind in EXECUTORS:
                root = base / kind
                shutil.copytree(first.root, root / "home", ignore=shutil.ignore_patterns("dagster"))
                home = Home(root / "home")
                use_home(home)
                inst = instance(home)
                register_days(inst, days)
                # the run's processes (a multiprocess step, the dask worker) rebuild the job from these args
                recon = dg.build_reconstructable_job("assets.definitions", "build_job_on",
                                                     reconstructable_args=(str(home.root), kind))
                config = {}
                if kind == "dask":
                    config = {"execution": {"config": {"cluster": {"existing": {"address": cluster.scheduler_address}}}}}
                tags = {"dagster/asset_partition_range_start": days[0],
                        "dagster/asset_partition_range_end": days[-1]}  # the range in one run, as `af build`
                results = [dg.execute_job(recon, instance=inst, tags=tags, run_config=config, raise_on_error=False)]
                out[kind] = (home, results)
    finally:
        if saved is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = saved
    return days, out


@pytest.mark.parametrize("kind", EXECUTORS)
def test_the_build_job_succeeds_in_one_day_step(built, kind):
    days, out = built
    home, results = out[kind]
    mats = []
    for result in results:
        assert result.success, _failures(result)
        steps = {e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"}
        assert steps == {"day_work", "raw_day_raw_rows_quality", "frames_frames_quality"}, steps
        mats += [e.event_specific_data.materialization for e in result.all_events
                 if e.event_type_value == "ASSET_MATERIALIZATION"]
    # one materialization per key and day partition, each with its day's own numbers
    assert sorted((m.asset_key.to_user_string(), m.partition) for m in mats) == sorted(
        (k, d) for k in DAY_KEYS for d in days)
    tokens = {m.partition: m.metadata["document_tokens"].value for m in mats
              if m.asset_key.to_user_string() == "day_document"}
    assert len(set(tokens.values())) == len(days), tokens
    for day in days:
        manifest = json.loads((home.published_dir / day / "manifest.json").read_text())
        assert manifest["sealed"] is True


@pytest.mark.parametrize("kind", EXECUTORS[1:])
def test_every_executor_publishes_the_same_bytes_and_tables(built, kind):
    days, out = built
    home, _result = out[kind]
    ref, _ = out["in_process"]
    files, tables = _tree(ref.published_dir), _tables(ref, days)
    assert len([f for f in files if f.endswith("document.json")]) == len(days)
    assert tables["frames"] and tables["enriched_input"] and tables["day_document"] and tables["built_days"]
    assert _tree(home.published_dir) == files
    assert _tables(home, days) == tables
