"""The routine assets on a real Dagster instance and a real DuckDB file: the day assets are built
first (the `build` job), then routine_table, recurrence, replay_plans and overhead_ratio over
every built day. The corpus is the trimmed synthetic capture of dagster_support with one
hand-planted routine (four named clicks, four times a day, each in its own session)."""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import replace

import dagster as dg
import duckdb
import pytest
from dagster_support import TZ, corpus, days_of, new_home

from af_pipeline.routines import report
from assets import routines as RA
from assets.definitions import ROUTINES_JOB, build_definitions
from assets.resources import resources_for
from capture.log import EventLog
from capture.model import CaptureBatch, InputEvent
from capture.timeutil import day_bounds

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")

PLANTED = (("Open Ledger", "AXButton"), ("Reconcile", "AXButton"), ("Export CSV", "AXMenuItem"), ("Mark Done", "AXButton"))
PLANTED_SYMBOLS = [f"click:{name} [{role}]" for name, role in PLANTED]
PER_DAY = 4


def with_planted_routine(batch: CaptureBatch) -> CaptureBatch:
    """The batch plus PER_DAY occurrences a day of the planted routine at 12:00 local, 5 min apart
    (more than the 90 s session gap, so the occurrences never run into each other)."""
    stream = batch.snapshots[0].stream
    rows = []
    for day in days_of(batch):
        lo, _ = day_bounds(day, TZ)
        for occ in range(PER_DAY):
            t0 = lo + (12 * 3600 + occ * 300) * 1_000_000
            for i, (name, role) in enumerate(PLANTED):
                rows.append(
                    InputEvent(
                        ref=f"plant:inputs:{day}:{occ}:{i}",
                        ts_us=t0 + i * 4_000_000,
                        kind="click",
                        stream=stream,
                        x=100,
                        y=100,
                        button="left",
                        app="Ledger",
                        element_name=name,
                        element_role=role,
                    )
                )
    out = replace(batch)
    out.inputs = sorted([*batch.inputs, *rows], key=lambda r: (r.ts_us, r.ref))
    return out


def _meta(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    out = {}
    for m in result.get_asset_materialization_events():
        mat = m.step_materialization_data.materialization
        out[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    return out


def _plan_bytes(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    """A home built by the `build` job, then the routine assets materialized twice."""
    from assets import certify as harness

    home = new_home(tmp_path_factory.mktemp("routines"))
    EventLog(home).append(with_planted_routine(corpus()))
    days = harness.select_days(home, None, None)
    assert harness.run_build(home, days).ok
    defs = build_definitions(home)
    routine_assets = [
        a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and dg.AssetKey(RA.ROUTINE_TABLE) in a.keys
    ]
    instance = dg.DagsterInstance.get()  # the data folder's persistent instance (new_home set it up)
    first = dg.materialize(routine_assets, instance=instance, resources=resources_for(home))
    folder = home.published_dir / RA.PLANS_SUBDIR
    first_files = _plan_bytes(folder)
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    first_rows = con.execute(f"SELECT * FROM {RA.ROUTINE_TABLE} ORDER BY rank").fetchall()
    con.close()
    # The second time through the `routines` job, as the UI or a schedule would launch it.
    second = defs.resolve_job_def(ROUTINES_JOB).execute_in_process(instance=instance)
    return home, days, first, second, first_files, first_rows


def test_routine_table_holds_the_planted_routine_with_its_evidence(mined):
    home, days, first, _, _, _ = mined
    assert first.success
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        rows = con.execute(f"SELECT rank, symbols, count, days, occurrences FROM {RA.ROUTINE_TABLE} ORDER BY rank").fetchall()
    finally:
        con.close()
    planted = [r for r in rows if json.loads(r[1]) == PLANTED_SYMBOLS]
    assert len(planted) == 1, [json.loads(r[1]) for r in rows]
    rank, _, count, on_days, occurrences = planted[0]
    assert count == PER_DAY * len(days) and json.loads(on_days) == days
    refs = sorted(ref for occ in json.loads(occurrences) for ref in occ["refs"])
    assert refs == sorted(f"plant:inputs:{d}:{o}:{i}" for d in days for o in range(PER_DAY) for i in range(len(PLANTED)))
    meta = _meta(first)[RA.ROUTINE_TABLE]
    assert meta["routines"] == len(rows) and meta["days"] == len(days)
    assert "Open Ledger" in meta["top_routines"] and meta["top_routines"].startswith("| # |")


def test_recurrence_per_day_overall_and_holdout(mined):
    home, days, first, _, _, _ = mined
    meta = _meta(first)[RA.RECURRENCE]
    assert 0 < meta["h_specific"] <= meta["h_raw"] <= 1
    assert meta["holdout_train_days"] == 1 and meta["holdout_test_days"] == 1
    # the planted routine recurs on the held-out day, so the fitted table predicts some of it
    assert meta["holdout_out_of_sample_h"] > 0
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        per_day = con.execute("SELECT on_day FROM recurrence WHERE scope = 'day' ORDER BY on_day").fetchall()
        overall = con.execute("SELECT h_specific FROM recurrence WHERE scope = 'overall'").fetchone()
    finally:
        con.close()
    assert [d for (d,) in per_day] == days
    assert overall == (meta["h_specific"],)


def test_plan_files_match_their_sha256_and_carry_no_wall_clock(mined):
    home, _, first, _, _, _ = mined
    folder = home.published_dir / RA.PLANS_SUBDIR
    meta = _meta(first)[RA.REPLAY_PLANS]
    index = json.loads((folder / RA.INDEX).read_text())
    assert meta["plans"] == len(index["plans"]) > 0
    assert hashlib.sha256((folder / RA.INDEX).read_bytes()).hexdigest() == meta["index_sha256"]
    for p in index["plans"]:
        for ext in ("json", "txt"):
            data = (folder / f"{p['routine']}.{ext}").read_bytes()
            assert hashlib.sha256(data).hexdigest() == p["files"][ext] == meta[f"sha256 {p['routine']}.{ext}"]
    top = json.loads((folder / f"{index['plans'][0]['routine']}.json").read_text())
    assert [s["target"] for s in top["steps"]] == [name for name, _ in PLANTED]
    assert all("guard" in s for s in top["steps"])
    # the published day scanners must not take the plans folder for a day
    assert not (folder / "manifest.json").exists()


def test_overhead_ratio_is_positive_and_labelled_modeled(mined):
    home, _, first, _, _, _ = mined
    meta = _meta(first)[RA.OVERHEAD]
    assert meta["label"].startswith("MODELED")
    assert "MODELED" in meta["numerator"]
    for res in ("1280x800", "1512x982", "1728x1117"):
        assert meta[f"r_inject_median {res}"] > 0 and meta[f"r_info_median {res}"] >= meta[f"r_inject_median {res}"]
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        r = con.execute("SELECT count(*), min(q1), max(label), min(label) FROM overhead_ratio WHERE metric LIKE 'r_%'").fetchone()
        arms = con.execute("SELECT arm, tokens, label FROM three_arm ORDER BY arm").fetchall()
    finally:
        con.close()
    assert r is not None and r[0] == 6 and r[1] > 0 and r[2] == r[3] == "MODELED"
    tokens = {arm: t for arm, t, _ in arms}
    assert all(label.startswith("MODELED") for _, _, label in arms)
    # guard-matched steps replay for free, so local replay never costs more than re-deriving
    assert tokens["A re-derive"] > tokens["B plan injected"] > 0 and tokens["C local replay"] <= tokens["A re-derive"]


def test_materializing_again_gives_identical_plans_and_rows(mined):
    home, _, _, second, first_files, first_rows = mined
    assert second.success
    assert _plan_bytes(home.published_dir / RA.PLANS_SUBDIR) == first_files
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        assert con.execute(f"SELECT * FROM {RA.ROUTINE_TABLE} ORDER BY rank").fetchall() == first_rows
    finally:
        con.close()
    assert set(_meta(second)) == {RA.ROUTINE_TABLE, RA.RECURRENCE, RA.REPLAY_PLANS, RA.OVERHEAD}


def test_stale_plans_are_removed_when_a_routine_leaves_the_top(tmp_path):
    folder = tmp_path / "routines"
    folder.mkdir()
    (folder / "r-000000000000.json").write_text("{}")
    (folder / "notes.txt").write_text("mine")  # not a plan file: left alone
    plan = {"routine": "r-abcdefabcdef", "name": "x", "k": 1, "occurrences": 3, "steps": [{"source_op": "click", "target": "Go"}]}
    index = report.publish_plans(folder, [plan])
    assert sorted(p.name for p in folder.iterdir()) == ["index.json", "notes.txt", "r-abcdefabcdef.json", "r-abcdefabcdef.txt"]
    assert index["plans"][0]["rank"] == 1


def test_no_built_day_gives_empty_results_not_an_error(tmp_path):
    home = new_home(tmp_path)
    defs = build_definitions(home)
    result = defs.resolve_job_def(ROUTINES_JOB).execute_in_process(instance=dg.DagsterInstance.ephemeral())
    assert result.success
    meta = _meta(result)
    assert meta[RA.ROUTINE_TABLE]["routines"] == 0 and meta[RA.REPLAY_PLANS]["plans"] == 0
    assert meta[RA.RECURRENCE]["holdout"] == "needs at least 2 active days"
    assert json.loads((home.published_dir / RA.PLANS_SUBDIR / RA.INDEX).read_text()) == {"plans": []}


def test_af_routines_the_assets_and_get_plan_give_the_same_plans(mined, tmp_path):
    """One routine report: `af routines --plans-dir` (the log), the replay_plans asset (the
    warehouse) and the MCP server's get_plan (a period) write the same plan bytes."""
    from af_pipeline import Memory
    from af_pipeline.interfaces import cli

    home, days, _, _, first_files, _ = mined
    published = {name: data for name, data in first_files.items() if name != RA.INDEX}
    assert published, "the planted routine gives at least one plan"
    out = tmp_path / "plans"
    assert cli.main(["routines", "--home", str(home.root), "--top", str(RA.RoutinesConfig().top),
                     "--plans-dir", str(out)]) == 0
    assert _plan_bytes(out) == published
    memory = Memory(home)
    period = memory.period(start=days[0], end=days[-1])
    for name, data in published.items():
        if name.endswith(".json"):
            answer = memory.plan(name.removesuffix(".json"), period)
            assert report.plan_files([answer["plan"]])[name] == data
