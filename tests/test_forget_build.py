"""Forgetting on a built, certified folder (issue 41): after `af forget` no file under the data
folder holds the forgotten rows, read through each file's format (Parquet, DuckDB, SQLite with
its WAL, gzip, text); `af build` builds the affected days again and `af certify` passes."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from dagster_support import TZ, corpus, new_home

from af_pipeline.interfaces import cli
from af_pipeline.warehouse import publish
from capture.log import EventLog
from capture.timeutil import day_bounds

DAYS = ("2026-06-01", "2026-06-02")


def _duckdb_text(path: Path) -> str:
    con = duckdb.connect(str(path), read_only=True)
    try:
        out = []
        for schema, table in con.execute("SELECT table_schema, table_name FROM information_schema.tables "
                                         "WHERE table_type = 'BASE TABLE'").fetchall():
            out.append(str(con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()))
        return "\n".join(out)
    finally:
        con.close()


def _tables(path: Path) -> set[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    finally:
        con.close()


def _sqlite_text(path: Path) -> str:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)  # reads the WAL beside it too
    try:
        out = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            out.append(str(con.execute(f'SELECT * FROM "{table}"').fetchall()))
        return "\n".join(out)
    finally:
        con.close()


def text_of(path: Path) -> str:
    """What a file holds, read through its format."""
    data = path.read_bytes()
    if path.suffix == ".parquet":
        return str(pq.read_table(path).to_pylist())
    if path.suffix == ".duckdb":
        return _duckdb_text(path)
    if data.startswith(b"SQLite format 3"):
        return _sqlite_text(path)
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace") + "\n" + json.dumps(data.decode("utf-8", "replace"))


def holders(root: Path, values: set[str]) -> dict[str, list[str]]:
    out = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix in (".wal", ".lock") or path.name.endswith(("-wal", "-shm")):
            continue
        text = text_of(path)
        found = sorted(v for v in values if v in text)
        if found:
            out[str(path.relative_to(root))] = found
    return out


def test_forget_an_app_on_a_built_certified_folder(tmp_path, capsys):
    home = new_home(tmp_path)
    log = EventLog(home)
    log.append(corpus(), now_us=day_bounds(DAYS[1], TZ)[1] + 48 * 3_600_000_000)
    assert cli.main(["build", "--home", str(home.root)]) == 0
    import dagster as dg

    from assets.definitions import build_definitions

    mined = build_definitions(home).resolve_job_def("routines").execute_in_process(instance=dg.DagsterInstance.get())
    assert mined.success and "routine_table" in _tables(home.warehouse_path)
    # titles only Slack showed: whatever else remains never names them
    b = corpus()
    frames = {s.source_frame_id for s in b.snapshots if s.app == "Slack"}

    def gone(r) -> bool:
        return getattr(r, "app", None) == "Slack" or (getattr(r, "snapshot_frame_id", None) or
                                                      getattr(r, "source_frame_id", None)) in frames

    others = {str(v) for kind in ("snapshots", "inputs", "elements") for r in b.rows(kind) if not gone(r)
              for v in (getattr(r, "window", None), getattr(r, "text", None)) if v}
    secret = {s.window for s in b.snapshots if s.app == "Slack" and s.window} - others
    secret = {w for w in secret if not any(w in o for o in others)}
    assert secret and holders(home.root, secret)  # the build copied them around

    assert cli.main(["forget", "--app", "Slack", "--yes", "--home", str(home.root)]) == 0
    assert holders(home.root, secret) == {}
    # mined from every day at once: removed, for the routines job to mine again
    assert "routine_table" not in _tables(home.warehouse_path) and not (home.published_dir / "routines").exists()
    # and a grep of the raw bytes finds nothing either (the warehouse file was rewritten, not
    # only updated: DuckDB keeps freed blocks)
    raw = [p for p in home.root.rglob("*") if p.is_file() and any(w.encode() in p.read_bytes() for w in secret)]
    assert raw == []
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 0
    # stale: the days are built again from the rewritten log
    assert cli.main(["build", "--home", str(home.root)]) == 0
    assert all((home.published_dir / d / "document.json").is_file() for d in DAYS)
    assert holders(home.root, secret) == {}
    capsys.readouterr()
    assert cli.main(["certify", "--home", str(home.root), "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    assert cert["verdict"] == "pass" and cert["log"]["redacted_days"] == list(DAYS)
    assert cli.main(["certify", "--home", str(home.root)]) == 0
    assert f"2 day(s) carry a redaction (af forget): {', '.join(DAYS)}" in capsys.readouterr().out


def test_the_nightly_retention_job_forgets_days_older_than_the_setting(tmp_path):
    import dagster as dg

    from assets.definitions import build_definitions

    home = new_home(tmp_path)
    EventLog(home).append(corpus(), now_us=day_bounds(DAYS[1], TZ)[1] + 48 * 3_600_000_000)
    assert cli.main(["build", "--home", str(home.root)]) == 0
    job = build_definitions(home).resolve_job_def("retention")
    assert job.execute_in_process(instance=dg.DagsterInstance.get()).success  # no setting: nothing
    assert not EventLog(home).redactions()
    settings = json.loads(home.settings_path.read_text())
    home.settings_path.write_text(json.dumps({**settings, "retention_days": 30}))  # the corpus is older
    assert job.execute_in_process(instance=dg.DagsterInstance.get()).success
    log = EventLog(home)
    assert [r["redaction"]["selection"] for r in log.redactions()] == ["retention"]
    assert all(sum(d.counts.values()) == 0 for d in log.days()) and log.verify().ok
    assert not any((home.published_dir / d).exists() for d in DAYS)
    # nor does the list the pages link from (published/days.js) name them
    assert (home.published_dir / publish.DAYS_JS).read_bytes() == publish.days_list_bytes([])


def test_the_sealed_day_sensor_and_af_build_rebuild_exactly_the_days_a_forget_touched(tmp_path, capsys):
    """Built the way `af ui` builds (the sensor asks, the daemon runs each request under its run
    key): after `af forget` the sensor asks for the touched day alone, under a run key no run has
    used (the daemon skips a used one: the day would stay unbuilt), and nothing after that run; a
    later forget is rebuilt by `af build` alone, the other day skipped; af certify names each
    redacted day."""
    import dagster as dg

    from assets import unchanged
    from assets.definitions import build_definitions
    from assets.sensors import RUN_KEY_TAG

    home = new_home(tmp_path)
    EventLog(home).append(corpus(), now_us=day_bounds(DAYS[1], TZ)[1] + 48 * 3_600_000_000)
    defs = build_definitions(home)
    instance = dg.DagsterInstance.get()
    repo = defs.get_repository_def()
    sensor, job = defs.resolve_sensor_def("newly_sealed_days"), defs.resolve_job_def("build")

    def requests() -> list:
        with dg.partition_loading_context(dynamic_partitions_store=instance):
            return list(sensor.evaluate_tick(dg.build_sensor_context(instance=instance, repository_def=repo)).run_requests)

    def run(reqs: list) -> None:
        for r in reqs:
            assert not instance.get_runs(dg.RunsFilter(tags={RUN_KEY_TAG: r.run_key}))  # the daemon runs it
            assert job.execute_in_process(instance=instance, partition_key=r.partition_key,
                                          tags={RUN_KEY_TAG: r.run_key}).success

    def files(day: str) -> dict[str, tuple[bytes, int]]:
        return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (home.published_dir / day).iterdir()}

    def built_from_the_log(day: str) -> bool:
        return publish.read_manifest(home.published_dir, day)["segments"] == unchanged.log_segments(EventLog(home), day)

    def certified_redacted() -> list[str]:
        capsys.readouterr()
        assert cli.main(["certify", "--home", str(home.root), "--json"]) == 0
        cert = json.loads(capsys.readouterr().out)
        assert cert["verdict"] == "pass"
        return cert["log"]["redacted_days"]

    first = requests()
    assert sorted(r.partition_key for r in first) == list(DAYS)
    run(first)
    assert requests() == []
    kept = files(DAYS[1])

    assert cli.main(["forget", "--from", f"{DAYS[0]} 09:10", "--to", f"{DAYS[0]} 09:20", "--yes",
                     "--home", str(home.root)]) == 0
    again = requests()
    assert [r.partition_key for r in again] == [DAYS[0]]
    run(again)
    assert requests() == [] and built_from_the_log(DAYS[0])
    assert files(DAYS[1]) == kept  # not rebuilt, not rewritten
    assert certified_redacted() == [DAYS[0]]

    kept = files(DAYS[0])
    assert cli.main(["forget", "--from", f"{DAYS[1]} 09:40", "--to", f"{DAYS[1]} 09:50", "--yes",
                     "--home", str(home.root)]) == 0
    capsys.readouterr()
    assert cli.main(["build", "--home", str(home.root), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # (days: the range asked for; the one not skipped is the one built)
    assert out["ok"] and out["days"] == list(DAYS) and out["skipped_unchanged"] == [DAYS[0]]
    assert built_from_the_log(DAYS[1]) and files(DAYS[0]) == kept
    assert requests() == []  # published sealed from the rewritten segments: nothing for the sensor
    assert certified_redacted() == list(DAYS)


@pytest.mark.parametrize("kind", ["site", "range", "typed-text"])
def test_forget_a_site_a_range_and_typed_text_on_a_built_certified_folder(tmp_path, capsys, kind):
    """The other selections people use, on a folder built and certified first: the rows' titles
    and URLs are in no file under the home afterwards (read through each format, and as raw
    bytes), `af log verify` passes, `af build` builds the days again and `af certify` passes and
    names them as redacted. Typed text is kept in the log alone unless a build opts in: what is
    checked there is that no key event keeps its text and an opted-in day document has none."""
    from urllib.parse import urlsplit

    home = new_home(tmp_path)
    log = EventLog(home)
    b = corpus()
    log.append(b, now_us=day_bounds(DAYS[1], TZ)[1] + 48 * 3_600_000_000)
    assert cli.main(["build", "--home", str(home.root)]) == 0
    assert cli.main(["certify", "--home", str(home.root)]) == 0
    lo = day_bounds(DAYS[0], TZ)[0] + 9 * 3_600_000_000 + 20 * 60_000_000  # 09:20 .. 09:40 local
    hi = lo + 20 * 60_000_000
    if kind == "site":
        argv = ["--site", "en.wikipedia.org"]

        def gone(s) -> bool:
            return bool(s.url) and (urlsplit(s.url).hostname or "").endswith("wikipedia.org")
    elif kind == "range":
        argv = ["--from", f"{DAYS[0]} 09:20", "--to", f"{DAYS[0]} 09:40"]

        def gone(s) -> bool:
            return lo <= s.ts_us < hi
    else:
        argv = ["--typed-text"]

        def gone(s) -> bool:
            return False
    kept = [s for s in b.snapshots if not gone(s)]
    others = {v for s in kept for v in (s.window, s.url) if v}
    secret = {v for s in b.snapshots if gone(s) for v in (s.window, s.url) if v} - others
    secret = {w for w in secret if len(w) > 8 and not any(w in o for o in others)}
    if kind != "typed-text":
        assert secret and holders(home.root, secret), "the build copied them around"
    else:
        assert any(i.text for d in DAYS for i in log.read_day(d).inputs)
        assert _typed_in_document(log), "an opted-in document shows what was typed"

    assert cli.main(["forget", *argv, "--yes", "--home", str(home.root)]) == 0
    assert holders(home.root, secret) == {}
    raw = [p for p in home.root.rglob("*") if p.is_file() and any(w.encode() in p.read_bytes() for w in secret)]
    assert raw == []
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 0
    assert cli.main(["build", "--home", str(home.root)]) == 0
    capsys.readouterr()
    assert cli.main(["certify", "--home", str(home.root), "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    assert cert["verdict"] == "pass" and cert["log"]["redacted_days"]
    if kind == "range":
        assert cert["log"]["redacted_days"] == [DAYS[0]]
    if kind == "typed-text":
        fresh = EventLog(home)
        assert not [i for d in DAYS for i in fresh.read_day(d).inputs if i.text]
        assert not _typed_in_document(fresh)


def _typed_in_document(log: EventLog) -> list[str]:
    """The typed text an opted-in compile of the days shows (frames' ``typed_text``)."""
    from af_pipeline.compiler.compile import CompileOptions, compile_day

    out = []
    for day in DAYS:
        text = json.dumps(compile_day(log.read_day(day), CompileOptions(include_typed_text=True)))
        out += [m for m in text.split('"typed_text": ')[1:] if not m.startswith('"excluded"')
                and not m.startswith('"included"')]
    return out
