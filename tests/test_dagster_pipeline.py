"""The Dagster layer on a real instance and a real DuckDB file: partitions, the asset graph,
idempotent per-day writes, published artifacts, schedule, sensor, the definitions snapshot and
the webserver loading workspace.yaml."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster_support import corpus, days_of, new_home, only_days

from af_pipeline.warehouse import publish, store
from assets.definitions import build_definitions
from assets.partitions import DAYS, register_days, registered_days
from assets.resources import resources_for
from capture.errors import CheckFailed
from capture.home import Home
from capture.log import EventLog

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")
ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = Path(__file__).with_name("test_dagster_definitions.json")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A home with the whole (trimmed) corpus landed and built in one Dagster run."""
    from assets import certify as harness

    home = new_home(tmp_path_factory.mktemp("built"))
    EventLog(home).append(corpus())
    days = harness.select_days(home, None, None)
    store.LOADS.clear()
    out = harness.run_build(home, days)
    assert out.ok, out.failures
    _LOADS_IN_BUILD.update(store.LOADS)
    return home, days, out


_LOADS_IN_BUILD: dict[str, int] = {}


def test_a_range_build_reads_each_days_capture_from_the_warehouse_once(built):
    home, days, out = built
    assert days and _LOADS_IN_BUILD == dict.fromkeys(days, 1)


def test_range_build_is_one_run_and_publishes_every_day(built):
    home, days, out = built
    instance = dg.DagsterInstance.get()
    assert len(instance.get_run_records()) == 1  # the whole range was a single run
    for day in days:
        folder = home.published_dir / day
        manifest = json.loads((folder / "manifest.json").read_text())
        assert sorted(manifest["files"]) == sorted(publish.ARTIFACTS)
        for name, meta in manifest["files"].items():
            assert publish.sha256_file(folder / name) == meta["sha256"]
        assert manifest["sealed"] is True
        doc = json.loads((folder / "document.json").read_text())
        # a function of the capture and the code: no wall-clock stamp in the published bytes
        assert "generated_at" not in doc and doc["day"] == day
        assert (folder / "context.txt").read_text().startswith("AF-CONTEXT")
        assert publish.verify_day(home.published_dir, day) == []


def test_warehouse_holds_every_table_per_day(built):
    home, days, _ = built
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        for table in ("raw_snapshots", "raw_inputs", "frames", "enriched_input", "page_refs", "day_document", "context_block"):
            per_day = dict(con.execute(f"SELECT day, count(*) FROM {table} GROUP BY day").fetchall())
            assert set(per_day) == set(days), table
            assert all(n > 0 for n in per_day.values()), table
        # frames never claim more time than wall time, and typed text stays out by default
        assert con.execute("SELECT count(*) FROM frames WHERE active_us > wall_us").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM enriched_input WHERE key_text IS NOT NULL").fetchone() == (0,)
    finally:
        con.close()


def test_metadata_people_read_in_the_ui(tmp_path):
    home = new_home(tmp_path)
    batch = corpus()
    day = days_of(batch)[0]
    EventLog(home).append(only_days(batch, {day}))
    defs = build_definitions(home)
    instance = dg.DagsterInstance.ephemeral()
    register_days(instance, [day])
    result = defs.resolve_job_def("build").execute_in_process(instance=instance, partition_key=day)
    meta = {}
    for m in result.get_asset_materialization_events():
        mat = m.step_materialization_data.materialization
        meta[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    assert meta["raw_day"]["rows_snapshots"] > 0 and meta["raw_day"]["sealed"] is True
    assert meta["frames"]["frames"] > 0 and meta["frames"]["active_minutes"] > 0
    assert meta["day_document"]["document_tokens"] > meta["context_block"]["context_tokens"] > 0
    assert "preview" not in meta["context_block"]  # Dagster's storage holds no capture text (issue 41)
    manifest = json.loads((home.published_dir / day / "manifest.json").read_text())
    assert meta["published_day"]["sha256 context.txt"] == manifest["files"]["context.txt"]["sha256"]


def test_materializing_a_day_again_replaces_it_and_keeps_sealed_files(tmp_path):
    home = new_home(tmp_path)
    batch = corpus()
    day = days_of(batch)[1]
    EventLog(home).append(only_days(batch, {day}))
    defs = build_definitions(home)
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
    instance = dg.DagsterInstance.ephemeral()
    register_days(instance, [day])
    dg.materialize(assets, instance=instance, resources=resources_for(home), partition_key=day)
    folder = home.published_dir / day
    first = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    counts = con.execute("SELECT count(*) FROM frames").fetchone()
    con.close()
    # forced (af build --force): an unchanged day is otherwise skipped (tests/test_dagster_unchanged.py)
    again = dg.materialize(assets, instance=instance, resources=resources_for(home), partition_key=day,
                           tags={"af/force": "true"})
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    assert con.execute("SELECT count(*) FROM frames").fetchone() == counts  # replaced, not appended
    con.close()
    # nothing changed, so nothing was written: same bytes, same mtimes, and the step says so
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == first
    (published,) = [m for m in again.asset_materializations_for_node("day_work")
                    if m.asset_key == dg.AssetKey("published_day")]  # one step, seven keys
    assert published.metadata["written"].value is False


def test_sealed_publication_refuses_different_content(tmp_path):
    files = {name: b"x" for name in publish.ARTIFACTS}
    kw = {"sealed": True, "segments": {"sealed/2026-06-01/snapshots.parquet": "ab"}, "code_version": "t"}
    publish.publish_day(tmp_path, "2026-06-01", files, canonical_sha256="1" * 64, **kw)
    assert not publish.publish_day(tmp_path, "2026-06-01", files, canonical_sha256="1" * 64, **kw).written
    with pytest.raises(CheckFailed, match="sealed day and would change"):
        publish.publish_day(tmp_path, "2026-06-01", files, canonical_sha256="2" * 64, **kw)


def _tick(definition, context):
    # The daemon evaluates ticks with the instance loading dynamic partitions; a test context does not.
    with dg.partition_loading_context(dynamic_partitions_store=context.instance):
        return definition.evaluate_tick(context)


def _keys(defs: dg.Definitions, instance: dg.DagsterInstance) -> list[str]:
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        return list(defs.resolve_assets_def("raw_day").partitions_def.get_partition_keys())


def test_partitions_are_the_logs_days_and_a_new_day_appears_without_reloading(tmp_path):
    """No partition for a day without capture; a day imported later shows up in the same loaded
    definitions on the sensor's next tick, in calendar order, and keeps what was materialized."""
    home = new_home(tmp_path)
    batch = corpus()
    defs = build_definitions(home)  # loaded once, before any capture: reads no log
    instance = dg.DagsterInstance.get()  # persistent (new_home): a sensor resolves partitions through it
    repo = defs.get_repository_def()
    sensor = defs.resolve_sensor_def("newly_sealed_days")
    assert _keys(defs, instance) == []
    EventLog(home).append(only_days(batch, {"2026-06-02"}))
    _tick(sensor, dg.build_sensor_context(instance=instance, repository_def=repo))
    assert _keys(defs, instance) == ["2026-06-02"]
    dg.materialize([defs.resolve_assets_def("raw_day")], instance=instance, partition_key="2026-06-02")
    EventLog(home).append(only_days(batch, {"2026-06-01"}))  # an older day, imported later
    _tick(sensor, dg.build_sensor_context(instance=instance, repository_def=repo))
    assert _keys(defs, instance) == ["2026-06-01", "2026-06-02"] == registered_days(instance)
    assert instance.get_materialized_partitions(dg.AssetKey("raw_day")) == {"2026-06-02"}
    assert register_days(instance, ["2026-06-01", "2026-06-02"]) == []  # idempotent


def test_a_partition_without_capture_is_refused_with_a_sentence(tmp_path, capsys):
    from af_pipeline.interfaces import cli

    home = new_home(tmp_path)
    EventLog(home).append(only_days(corpus(), {"2026-06-01"}))
    assert cli.main(["build", "--home", str(home.root), "--from", "2026-06-05", "--to", "2026-06-05"]) == 2
    assert "no days between 2026-06-05 and 2026-06-05" in capsys.readouterr().err
    # A partition added by hand in the UI for a day the log does not hold: nothing is published.
    defs = build_definitions(home)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(DAYS, ["2026-06-05"])
    result = defs.resolve_job_def("build").execute_in_process(
        instance=instance, partition_key="2026-06-05", raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "no capture for 2026-06-05 in the event log" in failure.step_failure_data.user_failure_data.description
    assert not (home.published_dir / "2026-06-05").exists()


def test_a_range_gives_each_day_partition_its_own_numbers(built):
    from assets.instance import instance as folder_instance

    home, days, _ = built
    instance = folder_instance(home)  # the folder's own instance (later tests point DAGSTER_HOME elsewhere)
    tokens = {}
    for day in days:
        rec = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("day_document"), asset_partitions=[day]), limit=1
        ).records[0]
        meta = {k: v.value for k, v in rec.asset_materialization.metadata.items()}
        assert "days" not in meta  # not the run's totals
        con = duckdb.connect(str(home.warehouse_path), read_only=True)
        stored = con.execute("SELECT tokens FROM day_document WHERE day = ?", [day]).fetchone()
        con.close()
        tokens[day] = meta["document_tokens"]
        assert stored == (meta["document_tokens"],)
    assert len(set(tokens.values())) == len(days), tokens


def test_every_asset_carries_the_code_version(tmp_path):
    from af_pipeline.warehouse.version import code_version

    home = Home(tmp_path / "h")
    home.init(tz="Europe/Paris")
    defs = build_definitions(home)
    versions = {
        key.to_user_string(): v
        for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition)
        for key, v in a.code_versions_by_key.items()
    }
    assert len(versions) == 11 and set(versions.values()) == {code_version()}


def test_schedule_targets_yesterday_and_sensor_finds_sealed_unpublished_days(tmp_path):
    home = new_home(tmp_path)
    batch = corpus()
    EventLog(home).append(only_days(batch, {"2026-06-01", "2026-06-02"}))
    defs = build_definitions(home)
    instance = dg.DagsterInstance.get()  # persistent (new_home): ticks resolve partitions through it
    sched = defs.resolve_schedule_def("nightly_compile")
    repo = defs.get_repository_def()
    ctx = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=datetime(2026, 6, 3, 5, 0, tzinfo=UTC), repository_def=repo
    )
    req = _tick(sched, ctx).run_requests
    assert req and req[0].partition_key == "2026-06-02"
    assert registered_days(instance) == ["2026-06-01", "2026-06-02"]  # the schedule's run has its partition
    late = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=datetime(2026, 6, 9, 5, 0, tzinfo=UTC), repository_def=repo
    )
    assert "no capture for 2026-06-08" in (_tick(sched, late).skip_message or "")
    sensor = defs.resolve_sensor_def("newly_sealed_days")
    reqs = _tick(sensor, dg.build_sensor_context(instance=instance, repository_def=repo)).run_requests
    assert sorted(r.partition_key for r in reqs) == ["2026-06-01", "2026-06-02"]
    # once published sealed, the sensor has nothing to do
    defs.resolve_job_def("build").execute_in_process(
        instance=instance,
        tags={"dagster/asset_partition_range_start": "2026-06-01", "dagster/asset_partition_range_end": "2026-06-02"},
    )
    assert not _tick(sensor, dg.build_sensor_context(instance=instance, repository_def=repo)).run_requests


def _snapshot(defs: dg.Definitions) -> dict:
    repo = defs.get_repository_def()
    checks = sorted(
        f"{k.asset_key.to_user_string()}:{k.name}:{'blocking' if spec.blocking else 'advisory'}"
        for k, spec in ((s.key, s) for a in defs.asset_checks or [] for s in a.check_specs)
    )
    graph = {}
    for a in defs.assets or []:
        if isinstance(a, dg.AssetsDefinition):
            for key in a.keys:
                graph[key.to_user_string()] = sorted(d.to_user_string() for d in a.asset_deps[key])
    return {
        "assets": dict(sorted(graph.items())),
        "partitions": {
            key.to_user_string(): f"{type(a.partitions_def).__name__} {getattr(a.partitions_def, 'name', '')}"
            if a.partitions_def else "unpartitioned"
            for a in defs.assets or []
            for key in a.keys
        },
        # the steps each job runs: the day assets are one multi-asset, one step for the seven keys
        "job_steps": {
            name: sorted(repo.get_job(name).graph.node_dict) for name in ("build", "certify", "routines")
        },
        "job_checks": {
            name: sorted(k.name for k in repo.get_job(name).asset_layer.asset_graph.asset_check_keys)
            for name in ("build", "certify")
        },
        "checks": checks,
        "jobs": sorted(j.name for j in repo.get_all_jobs() if not j.name.startswith("__")),
        "job_partitions": {
            j.name: f"{type(j.partitions_def).__name__} {getattr(j.partitions_def, 'name', '')}"
            if j.partitions_def else "unpartitioned"
            for j in sorted(repo.get_all_jobs(), key=lambda j: j.name) if not j.name.startswith("__")
        },
        "schedules": sorted(s.name for s in repo.schedule_defs),
        "sensors": sorted(s.name for s in repo.sensor_defs),
        "pools": sorted({a.op.pool or "" for a in defs.assets or []}),
        "without_code_version": sorted(
            key.to_user_string() for a in defs.assets or [] for key, v in a.code_versions_by_key.items() if not v
        ),
    }


def test_definitions_match_the_checked_in_snapshot(tmp_path):
    """Catches accidental graph changes. After an intended change, regenerate with
    AF_UPDATE_SNAPSHOT=1 and commit tests/test_dagster_definitions.json."""
    home = Home(tmp_path / "h")
    home.init(tz="Europe/Paris")
    got = _snapshot(build_definitions(home))
    if os.environ.get("AF_UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    assert got == json.loads(SNAPSHOT.read_text())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _graphql(port: int, query: str) -> dict:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def test_webserver_loads_workspace_yaml(tmp_path):
    from assets.instance import announce_days

    home = new_home(tmp_path)
    EventLog(home).append(only_days(corpus(), {"2026-06-01"}))
    announce_days(home)
    port = _free_port()
    env = dict(os.environ, AF_HOME=str(home.root), DAGSTER_HOME=str(home.dagster_home))
    exe = Path(sys.executable).with_name("dagster-webserver")
    proc = subprocess.Popen(
        [str(exe), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        keys: list[str] = []
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                data = _graphql(port, "{ assetNodes { assetKey { path } } }")
                keys = sorted("/".join(n["assetKey"]["path"]) for n in data["data"]["assetNodes"])
                if keys:
                    break
            except OSError:
                pass
            time.sleep(1)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        assert keys == sorted(
            ["raw_day", "frames", "enriched_input", "page_refs", "day_document", "context_block", "published_day"]
            + ["routine_table", "recurrence", "replay_plans", "overhead_ratio"]
        )
        loc = _graphql(port, "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }")
        entries = loc["data"]["workspaceOrError"]["locationEntries"]
        assert [(e["name"], e["loadStatus"]) for e in entries] == [("activity_frames", "LOADED")]
        # The UI's partitions are the log's days, and a day landing later shows without a reload.
        query = '{ assetNodeOrError(assetKey: {path: ["raw_day"]}) { ... on AssetNode { partitionKeys } } }'
        assert _graphql(port, query)["data"]["assetNodeOrError"]["partitionKeys"] == ["2026-06-01"]
        EventLog(home).append(only_days(corpus(), {"2026-06-02"}))
        announce_days(home)  # what `af import` / `af sync` do after landing rows
        assert _graphql(port, query)["data"]["assetNodeOrError"]["partitionKeys"] == ["2026-06-01", "2026-06-02"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_certify_without_a_day_refuses_with_a_sentence(tmp_path):
    """The UI's "Execute all" on the partitioned checks launches the certify job with no partition."""
    from assets.dagster_adapter import NO_PARTITION

    home = new_home(tmp_path)
    EventLog(home).append(only_days(corpus(), {"2026-06-01"}))
    result = build_definitions(home).resolve_job_def("certify").execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert not result.success
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failures and {f.step_failure_data.user_failure_data.description for f in failures} == {NO_PARTITION}


def test_af_import_makes_the_new_days_partitions_of_the_folders_instance(tmp_path, capsys):
    """With the UI open on a folder (its Dagster instance exists), an import's days appear at once."""
    from af_pipeline.interfaces import cli
    from assets.instance import instance, prepare

    out = tmp_path / "corpus"
    assert cli.main(["synth", "--days", "1", "--out", str(out)]) == 0
    home = Home(tmp_path / "home")
    home.init(tz="Europe/Paris")
    prepare(home)
    defs = build_definitions(home)
    assert cli.main(["import", "screenpipe", str(out / "screenpipe.sqlite"), "--home", str(home.root), "--quiet"]) == 0
    days = [d.day for d in EventLog(home).days()]
    assert days and _keys(defs, instance(home)) == days
    # `af build` says one line per stage, not Dagster's dozens of log lines per day.
    capsys.readouterr()
    assert cli.main(["build", "--home", str(home.root)]) == 0
    err = capsys.readouterr().err.splitlines()
    stages = [line.split()[0] for line in err if " done (" in line]
    assert sorted(stages) == sorted([*build_definitions(home).resolve_job_def("build").graph.node_dict]), err
    assert len(err) == len(stages) + 1 and "building 1 day(s)" in err[0], err


def test_a_watch_tells_the_instance_of_a_day_once(tmp_path):
    """`af sync --watch` lands rows every pass; the instance hears of a day when its first rows
    land, not on every pass (each announcement opens the instance)."""
    from af_pipeline.interfaces.commands.sync import DayAnnouncer
    from assets.instance import instance, prepare
    from assets.partitions import DAYS, registered_days
    from capture.sync import PassResult

    home = new_home(tmp_path)
    prepare(home)
    landed = PassResult("screenpipe", ok=True, landed=5)
    announcer = DayAnnouncer(home)
    EventLog(home).append(only_days(corpus(), {"2026-06-01"}))
    announcer.after_pass(landed)
    inst = instance(home)
    try:
        assert registered_days(inst) == ["2026-06-01"]
        inst.delete_dynamic_partition(DAYS, "2026-06-01")  # were it asked again, it would come back
        announcer.after_pass(landed)
        assert registered_days(inst) == []
        EventLog(home).append(only_days(corpus(), {"2026-06-02"}))
        announcer.after_pass(PassResult("screenpipe", ok=True, landed=0))  # nothing landed: nothing asked
        assert registered_days(inst) == []
        announcer.after_pass(landed)  # a new day: the instance is told the log's days
        assert registered_days(inst) == ["2026-06-01", "2026-06-02"]
    finally:
        inst.dispose()


def test_the_log_names_its_days_without_reading_the_open_ones(tmp_path):
    home = new_home(tmp_path)
    log = EventLog(home)
    batch = corpus(days=3)
    log.append(batch, seal=False)
    days = days_of(batch)
    log.seal(days[0])
    assert len(days) == 3 and {d.sealed for d in log.days()} == {True, False}  # both kinds named
    assert log.day_names() == [d.day for d in log.days()] == days


def test_af_log_announce_leaves_a_folder_without_an_instance_as_it_is(tmp_path, capsys):
    from af_pipeline.interfaces import cli

    home = Home(tmp_path / "home")  # as `af import` leaves it: no Dagster command has run here
    home.init(tz="Europe/Paris")
    EventLog(home).append(only_days(corpus(), {"2026-06-01"}))
    assert cli.main(["log", "announce", "--home", str(home.root)]) == 0
    assert "no Dagster instance yet" in capsys.readouterr().err
    assert not home.dagster_home.exists() or not (home.dagster_home / "dagster.yaml").exists()
