"""Loading the code location changes nothing of Dagster or SQLAlchemy (issue 37).

A fresh interpreter records every attribute of Dagster's storage classes and modules, of
SQLAlchemy's pool, engine and event modules and classes, the SQLAlchemy event registry and the
DAGSTER_* / SQLALCHEMY* environment variables; then loads ``assets.definitions`` the way Dagster's
code server does for the webserver and the daemon (the workspace's python_module through
Dagster's CodePointer, then the repository built from it); then opens a data folder's instance
(its dagster.yaml names the tuned storages of assets/dagster_adapter.py) and uses it; and records
again after each. Everything must be the same object as before (for the instance: as after the
same use of an instance on Dagster's own storage, since Dagster and SQLAlchemy fill caches of their
own on first use).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SNAPSHOT = r'''
import json, os, sys, types
import dagster
import sqlalchemy, sqlalchemy.engine, sqlalchemy.engine.base, sqlalchemy.engine.create, sqlalchemy.event
import sqlalchemy.event.registry, sqlalchemy.pool, sqlalchemy.pool.base, sqlalchemy.pool.impl
import dagster._core.storage.sql
import dagster._core.storage.sqlite
import dagster._core.storage.event_log.base
import dagster._core.storage.event_log.sql_event_log
import dagster._core.storage.event_log.sqlite.sqlite_event_log
import dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log
import dagster._core.storage.runs.base
import dagster._core.storage.runs.sql_run_storage
import dagster._core.storage.runs.sqlite.sqlite_run_storage
import dagster._core.storage.schedules.sqlite.sqlite_schedule_storage
import dagster._core.storage.legacy_storage
import dagster._core.instance
import dagster._core.instance.utils

MODULES = [m for name, m in sorted(sys.modules.items())
           if m is not None and name.split(".")[0] in ("dagster", "sqlalchemy")
           and (name.startswith(("dagster._core.storage", "dagster._core.instance", "sqlalchemy.pool",
                                 "sqlalchemy.engine", "sqlalchemy.event")) or name in ("dagster", "sqlalchemy"))]

def snapshot():
    """name -> identity of every attribute of those modules and of the classes they define."""
    seen = {}
    for mod in MODULES:
        for name, value in list(vars(mod).items()):
            if isinstance(value, types.ModuleType) and sys.modules.get(f"{mod.__name__}.{name}") is value:
                continue  # a submodule imported since: its package names it, nothing is replaced
            seen[f"{mod.__name__}.{name}"] = id(value)
            if isinstance(value, type) and value.__module__ == mod.__name__:
                for attr, inner in list(vars(value).items()):
                    seen[f"{mod.__name__}.{name}.{attr}"] = id(inner)
                # class-level event listeners (sqlalchemy.event.listen(Pool, ...)) live in the dispatch
                dispatch = vars(value).get("dispatch")
                for event_name in getattr(dispatch, "_event_names", ()):
                    listeners = getattr(dispatch, event_name)
                    for cls, fns in getattr(listeners, "_clslevel", {}).items():
                        if fns:  # SQLAlchemy adds empty entries as classes first dispatch: no listener
                                seen[f"{mod.__name__}.{name}.dispatch.{event_name}[{cls.__name__}]"] = [id(f) for f in fns]
    # listeners on a class (a listener on one engine object of ours changes no class)
    classes = {id(v): f"{m.__name__}.{k}" for m in MODULES for k, v in list(vars(m).items()) if isinstance(v, type)}
    seen["sqlalchemy.event.registry"] = sorted(
        f"{classes[key[0]]} {key[1:]}" for key in sqlalchemy.event.registry._key_to_collection if key[0] in classes)
    seen["os.environ"] = {k: v for k, v in os.environ.items() if k.startswith(("DAGSTER", "SQLALCHEMY"))}
    return seen

def changed(before, after):
    return sorted(k for k in set(before) | set(after) if before.get(k, "absent") != after.get(k, "absent"))

before = snapshot()
from dagster._core.code_pointer import CodePointer
target = CodePointer.from_module("assets.definitions", "defs", working_directory=sys.argv[1]).load_target()
defs = target() if callable(target) and not isinstance(target, dagster.Definitions) else target
repo = defs.get_repository_def()
assert repo.get_job("build") and repo.get_job("certify")
loaded = snapshot()

def use(inst):
    inst.add_dynamic_partitions("days", ["2026-06-01"])
    assert inst.has_dynamic_partition("days", "2026-06-01")
    inst.get_runs()
    job = repo.get_job("build")
    run = inst.create_run_for_job(job, tags={"dagster/partition": "2026-06-01"})
    inst.report_engine_event("a test event", run)
    assert inst.all_logs(run.run_id)
    inst.dispose()
    return type(inst.run_storage).__name__, type(inst.event_log_storage).__name__

# Dagster and SQLAlchemy fill some caches of their own on first use (e.g. a record class's
# constructor): Dagster's own storage is used first, and the tuned one must change nothing more.
os.makedirs(sys.argv[3])
stock_kinds = use(dagster.DagsterInstance.local_temp(sys.argv[3]))
stock = snapshot()
from assets.instance import prepare
from capture.home import Home
home = Home(sys.argv[2])
home.init(tz="UTC")
kinds = use(dagster.DagsterInstance.from_config(str(prepare(home))))
used = snapshot()
print(json.dumps({"loaded": changed(before, loaded), "used": changed(stock, used), "kinds": kinds,
                  "stock_kinds": stock_kinds, "checked": len(before)}))
'''


def _fresh(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "AF_"))}
    env["DAGSTER_HOME"] = str(tmp_path / "dagster-home")  # what `af ui` gives the code server
    env["DAGSTER_TELEMETRY_DISABLED"] = "1"
    env["AF_HOME"] = str(tmp_path / "af-home")
    (tmp_path / "dagster-home").mkdir()
    out = subprocess.run([sys.executable, "-c", SNAPSHOT, str(ROOT), str(tmp_path / "home"), str(tmp_path / "stock")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_loading_the_code_location_and_using_the_instance_changes_no_dagster_or_sqlalchemy_attribute(tmp_path):
    seen = _fresh(tmp_path)
    assert seen["checked"] > 5000, seen["checked"]  # the snapshot did look at the classes and modules
    assert seen["loaded"] == [], seen["loaded"]
    assert seen["used"] == [], seen["used"]
    assert seen["kinds"] == ["TunedSqliteRunStorage", "TunedSqliteEventLogStorage"]
    assert seen["stock_kinds"] == ["SqliteRunStorage", "SqliteEventLogStorage"]


def test_the_snapshot_sees_a_patch(tmp_path):
    """The comparison can fail: the same script, with what the adapter used to do at import."""
    script = SNAPSHOT.replace(
        "before = snapshot()\n",
        "before = snapshot()\n"
        "from sqlalchemy.pool import Pool\n"
        "sqlalchemy.event.listen(Pool, 'connect', lambda *a: None)\n"
        "from dagster._core.storage.event_log.sqlite import sqlite_event_log as m\n"
        "m.check_alembic_revision = lambda *a, _was=m.check_alembic_revision: _was(*a)\n"
        "m.SqliteEventLogStorage.store_event_batch = lambda self, events: [self.store_event(e) for e in events]\n"
        "os.environ['DAGSTER_EVENT_BATCH_SIZE'] = '1000'\n",
    )
    assert script != SNAPSHOT
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "AF_"))}
    env["DAGSTER_HOME"] = str(tmp_path)
    env["DAGSTER_TELEMETRY_DISABLED"] = "1"
    out = subprocess.run([sys.executable, "-c", script, str(ROOT), str(tmp_path / "home"), str(tmp_path / "stock")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])["loaded"]
    assert "dagster._core.storage.event_log.sqlite.sqlite_event_log.check_alembic_revision" in loaded
    assert "dagster._core.storage.event_log.sqlite.sqlite_event_log.SqliteEventLogStorage.store_event_batch" in loaded
    assert "sqlalchemy.event.registry" in loaded and "os.environ" in loaded
    assert any(k.startswith("sqlalchemy.pool.events.PoolEvents.dispatch.connect[") for k in loaded), loaded


def test_no_dagster_internal_outside_the_adapter():
    """`dagster._` is imported only in assets/dagster_adapter.py (docs/architecture.md)."""
    import re

    pattern = re.compile(r"^\s*(from|import)\s+dagster\._", re.M)
    found = [str(p.relative_to(ROOT)) for top in ("assets", "checks", "certification", "af_pipeline", "capture")
             for p in sorted((ROOT / top).rglob("*.py")) if pattern.search(p.read_text(encoding="utf-8"))]
    assert found == ["assets/dagster_adapter.py"], found


# --- the data folder's dagster.yaml names the tuned storages (assets/instance.py) ----------------

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


def _one_run(inst) -> str:
    import dagster as dg

    @dg.op
    def noop() -> None:
        return None

    @dg.job
    def one() -> None:
        noop()

    result = one.execute_in_process(instance=inst)
    assert result.success
    return result.run_id


def _instance(folder: Path):
    import dagster as dg

    return dg.DagsterInstance.from_config(str(folder))


def test_a_new_folder_uses_the_tuned_storages_in_dagsters_own_layout(tmp_path):
    from assets import dagster_adapter as adapter
    from assets.instance import prepare
    from capture.home import Home

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    inst = _instance(prepare(home))
    assert type(inst.run_storage) is adapter.TunedSqliteRunStorage
    assert type(inst.event_log_storage) is adapter.TunedSqliteEventLogStorage
    run_id = _one_run(inst)
    history = home.dagster_home / "history"
    assert (history / "runs.db").is_file() and (history / "runs" / f"{run_id}.db").is_file()
    assert inst.get_settings("concurrency")["pools"]["default_limit"] == 1 and inst.run_monitoring_enabled


def test_an_older_folder_gets_the_storage_block_and_keeps_its_runs(tmp_path):
    import dagster as dg

    from assets import dagster_adapter as adapter
    from assets.instance import STORAGE_BEGIN, prepare
    from capture.home import Home

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    home.dagster_home.mkdir(parents=True)
    config = home.dagster_home / "dagster.yaml"
    config.write_text(OLD_YAML)
    config.chmod(0o600)
    old = _instance(home.dagster_home)  # what the older release ran on: Dagster's own storage
    assert type(old.run_storage) is not adapter.TunedSqliteRunStorage
    old_run = _one_run(old)
    old.dispose()

    prepare(home)
    text = config.read_text()
    assert text.startswith(OLD_YAML) and text.count(STORAGE_BEGIN) == 1 and "run_monitoring" in text
    assert (config.stat().st_mode & 0o777) == 0o600
    prepare(home)
    assert config.read_text() == text  # once
    inst = _instance(home.dagster_home)
    assert type(inst.event_log_storage) is adapter.TunedSqliteEventLogStorage
    assert inst.get_run_by_id(old_run).is_success  # the same files
    logs = inst.all_logs(old_run)
    assert any(e.dagster_event and e.dagster_event.event_type == dg.DagsterEventType.RUN_SUCCESS for e in logs)
    new_run = _one_run(inst)
    assert {r.run_id for r in inst.get_runs()} == {old_run, new_run}
    assert dg.DagsterRunStatus.SUCCESS == inst.get_run_by_id(new_run).status


def test_a_folder_naming_its_own_storage_is_left_on_it(tmp_path):
    from assets.instance import STORAGE_BEGIN, prepare
    from capture.home import Home

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    home.dagster_home.mkdir(parents=True)
    config = home.dagster_home / "dagster.yaml"
    own = OLD_YAML + "storage:\n  sqlite:\n    base_dir: " + json.dumps(str(tmp_path / "elsewhere")) + "\n"
    config.write_text(own)
    prepare(home)
    assert STORAGE_BEGIN not in config.read_text()
    inst = _instance(home.dagster_home)
    assert type(inst.run_storage).__name__ == "SqliteRunStorage"
    _one_run(inst)
    assert (tmp_path / "elsewhere" / "history" / "runs.db").is_file()


def test_a_moved_folder_gets_its_storage_folder_written_again(tmp_path):
    import shutil

    from assets.instance import prepare
    from capture.home import Home

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    run_id = _one_run(_instance(prepare(home)))
    shutil.move(str(home.root), str(tmp_path / "moved"))
    moved = Home(tmp_path / "moved")
    config = moved.dagster_home / "dagster.yaml"
    assert str(tmp_path / "home") in config.read_text()  # still the old folder, until af opens it
    prepare(moved)
    text = config.read_text()
    assert str(tmp_path / "home") not in text and str(tmp_path / "moved" / "dagster" / "history") in text
    inst = _instance(moved.dagster_home)
    assert inst.get_run_by_id(run_id).is_success
    assert not (tmp_path / "home").exists()


def test_announcing_days_again_and_again_keeps_no_connection_open(tmp_path):
    """`af sync --watch` announces new days on every pass that lands some: the instance it opens
    each time (whose storages keep their connections) is disposed, not left to the collector."""
    import gc

    from assets.instance import announce_days, prepare
    from capture.home import Home

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    prepare(home)

    def open_files() -> int:
        return len(os.listdir("/proc/self/fd"))

    announce_days(home, ["2026-06-01"])
    gc.disable()
    try:
        before = open_files()
        for _ in range(10):
            announce_days(home, ["2026-06-01"])
        assert open_files() <= before, (before, open_files())
    finally:
        gc.enable()
