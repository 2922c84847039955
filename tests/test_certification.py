"""Certification: each invariant passes on an honest build and fails (and fails the run) when
something is tampered with: a sealed byte, a published file, one warehouse row, a stale day."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster_support import check_results, corpus, days_of, new_home, only_days

from af_pipeline.interfaces import cli
from af_pipeline.warehouse import store
from assets import certify as harness
from assets.definitions import build_definitions
from assets.instance import use_home
from capture.home import Home
from capture.log import EventLog
from capture.timeutil import day_bounds
from certification import rebuild

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")
ROOT = Path(__file__).resolve().parent.parent
INVARIANTS = {"byte_identical_recompile", "rebuild_equals_incremental", "append_only"}


def certify(home, day):
    """One certify run for one day: (run succeeded, {check: (passed, description)})."""
    job = build_definitions(home).resolve_job_def("certify")
    result = job.execute_in_process(
        instance=dg.DagsterInstance.get(), tags={"dagster/partition": day}, raise_on_error=False
    )
    return result.success, check_results(result)


@pytest.fixture(scope="module")
def built_incrementally(tmp_path_factory):
    """Two days that arrived one at a time, each built as it arrived (appends between builds)."""
    home = new_home(tmp_path_factory.mktemp("incremental"))
    batch = corpus()
    days = days_of(batch)[:2]
    log = EventLog(home)
    for day in days:
        log.append(only_days(batch, {day}))
        out = harness.run_build(home, [day])
        assert out.ok, out.failures
    yield home, days
    rebuild.clear()


@pytest.fixture
def incremental(built_incrementally, tmp_path):
    """A private copy of that folder, free to tamper with."""
    home, days = built_incrementally
    copy = Home(tmp_path / "home")
    shutil.copytree(home.root, copy.root)
    use_home(copy)
    return copy, days


def test_honest_incremental_build_certifies_and_writes_the_certificate(incremental):
    home, days = incremental
    assert cli.main(["certify", "--home", str(home.root)]) == 0
    cert = json.loads(home.certificate_path.read_text())
    assert cert["verdict"] == "pass"
    assert cert["log"]["chain_head"] == EventLog(home).chain_head()
    assert cert["code_version"].startswith("0.")
    assert cert["other_process"]["TZ"] not in ("", "Europe/Paris", os.environ.get("TZ"))
    assert cert["other_process"]["PYTHONHASHSEED"] != os.environ.get("PYTHONHASHSEED")
    for day in days:
        entry = cert["days"][day]
        assert set(entry["checks"]) == INVARIANTS | {"raw_rows_quality", "frames_quality"}
        assert all(c["passed"] for c in entry["checks"].values())
        manifest = json.loads((home.published_dir / day / "manifest.json").read_text())
        assert entry["artifacts"]["files"] == {k: v["sha256"] for k, v in manifest["files"].items()}


def _flip_a_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_rewritten_sealed_byte_fails_append_only(incremental):
    home, days = incremental
    _flip_a_byte(home.log_dir / "sealed" / days[0] / "inputs.parquet")
    ok, checks = certify(home, days[1])  # a later day's check still sees the earlier day's change
    assert not ok
    assert checks["append_only"][0] is False
    assert "inputs.parquet" in (checks["append_only"][1] or "")


def test_a_rewritten_sealed_byte_fails_append_only_on_every_day_of_a_range_run(incremental):
    """The log is verified once per run, and every day of the run still reports what it found."""
    home, days = incremental
    _flip_a_byte(home.log_dir / "sealed" / days[0] / "inputs.parquet")
    cert = harness.run_certify(home, days)
    assert cert["verdict"] == "fail"
    for day in days:
        check = cert["days"][day]["checks"]["append_only"]
        assert check["passed"] is False, day
        assert "event log" in check["details"] and "inputs.parquet" in check["details"], check


def test_altered_published_file_fails_append_only_and_recompile(incremental):
    home, days = incremental
    ctx = home.published_dir / days[0] / "context.txt"
    ctx.write_text(ctx.read_text() + "the user also visited evil.example\n")
    ok, checks = certify(home, days[0])
    assert not ok
    assert checks["append_only"][0] is False and "context.txt was changed" in checks["append_only"][1]
    assert checks["byte_identical_recompile"][0] is False


def test_published_file_altered_with_its_manifest_still_fails_recompile(incremental):
    home, days = incremental
    folder = home.published_dir / days[0]
    md = folder / "document.md"
    md.write_text(md.read_text().replace("|", "/", 1))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["document.md"]["sha256"] = __import__("hashlib").sha256(md.read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))
    ok, checks = certify(home, days[0])
    assert not ok
    assert checks["append_only"][0] is True  # consistent forgery: the manifests agree with the files
    assert checks["byte_identical_recompile"][0] is False
    assert "document.md" in checks["byte_identical_recompile"][1]


def _republish_document(folder, text):
    """document.json rewritten as ``text`` with its manifest made to agree (a consistent forgery)."""
    import hashlib

    (folder / "document.json").write_text(text)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["document.json"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_document_json_is_compared_by_its_content_not_its_bytes(incremental):
    """The recompile compares document.json canonically: the same content written another way
    (indented, keys in another order) passes; one changed minute fails, naming the file."""
    home, days = incremental
    folder = home.published_dir / days[0]
    doc = json.loads((folder / "document.json").read_text())
    _republish_document(folder, json.dumps(dict(reversed(list(doc.items()))), indent=2))
    ok, checks = certify(home, days[0])
    assert ok and checks["byte_identical_recompile"][0] is True, checks
    doc["apps"][0]["minutes"] += 1
    _republish_document(folder, json.dumps(doc, sort_keys=True, separators=(",", ":")))
    ok, checks = certify(home, days[0])
    assert not ok
    assert checks["byte_identical_recompile"][0] is False
    assert "published document.json is canonically" in checks["byte_identical_recompile"][1]


def test_altered_warehouse_document_file_fails_recompile(incremental):
    """The warehouse keeps each day's document in a file named by its sha256: a file changed
    after it was written (its recorded hash left as it was) fails the recompile check."""
    import gzip

    home, days = incremental
    (path,) = (home.root / "warehouse.documents").glob(f"{days[0]}.*.json.gz")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    doc["frames"] = doc["frames"][1:]
    path.write_bytes(gzip.compress(json.dumps(doc, sort_keys=True).encode()))
    ok, checks = certify(home, days[0])
    assert not ok
    assert checks["byte_identical_recompile"][0] is False
    assert "warehouse document hashes to" in checks["byte_identical_recompile"][1]
    assert checks["append_only"][0] is True  # the published files were not touched


def test_perturbed_frame_row_fails_quality_and_rebuild(incremental):
    home, days = incremental
    con = duckdb.connect(str(home.warehouse_path))
    con.execute("UPDATE frames SET active_us = wall_us + 1 WHERE day = ? AND seq = 0", [days[1]])
    con.close()
    ok, checks = certify(home, days[1])
    assert not ok
    assert checks["frames_quality"][0] is False
    assert "active_us" in checks["frames_quality"][1]
    assert checks["rebuild_equals_incremental"][0] is False
    assert "frames" in checks["rebuild_equals_incremental"][1]


def test_perturbed_raw_order_fails_raw_quality(incremental):
    """A sealed day's raw rows are its registered files; rows copied in their place, one out of
    order, are what the quality check and the rebuild must see."""
    home, days = incremental
    con = duckdb.connect(str(home.warehouse_path))
    con.execute("INSERT INTO raw_copied_snapshots SELECT * FROM raw_snapshots WHERE day = ?", [days[0]])
    con.execute("DELETE FROM raw_files WHERE day = ? AND kind = 'snapshots'", [days[0]])
    store.refresh_views(con)
    con.execute("UPDATE raw_copied_snapshots SET ts_us = ts_us - 3600000000 WHERE day = ? AND seq = 5", [days[0]])
    con.close()
    ok, checks = certify(home, days[0])
    assert not ok
    assert checks["raw_rows_quality"][0] is False and "prev_ts_us" in checks["raw_rows_quality"][1]
    assert checks["rebuild_equals_incremental"][0] is False
    assert "raw_snapshots" in checks["rebuild_equals_incremental"][1]


def test_a_day_registered_with_another_days_file_fails_rebuild(incremental):
    home, days = incremental
    con = duckdb.connect(str(home.warehouse_path))
    con.execute("UPDATE raw_files SET file = replace(file, ?, ?) WHERE day = ? AND kind = 'inputs'",
                [days[0], days[1], days[0]])
    store.refresh_views(con)
    con.close()
    ok, checks = certify(home, days[0])
    assert not ok and checks["rebuild_equals_incremental"][0] is False
    assert "raw_inputs" in checks["rebuild_equals_incremental"][1]


def test_open_day_built_before_more_capture_arrived_fails_rebuild(tmp_path):
    home = new_home(tmp_path)
    batch = corpus()
    day = days_of(batch)[0]
    start, end = day_bounds(day, "Europe/Paris")
    half = start + 9 * 3_600_000_000 + 1_800_000_000  # 09:30 local: half of the kept hour
    log = EventLog(home)
    log.append(only_days(batch, {day}, before_us=half), now_us=end - 1)  # the day stays open
    assert harness.run_build(home, [day]).ok
    log.append(only_days(batch, {day}), now_us=end - 1)  # the rest of the day lands, no rebuild
    ok, checks = certify(home, day)
    assert not ok and checks["rebuild_equals_incremental"][0] is False
    assert harness.run_build(home, [day]).ok  # building it again brings it back in line
    ok, checks = certify(home, day)
    assert ok, checks


def test_af_certify_fails_with_exit_1_and_a_fail_certificate(incremental, capsys):
    home, days = incremental
    (home.published_dir / days[1] / "document.yaml").write_text("tampered: true\n")
    assert cli.main(["certify", "--home", str(home.root), "--from", days[1], "--to", days[1]]) == 1
    cert = json.loads(home.certificate_path.read_text())
    assert cert["verdict"] == "fail" and list(cert["days"]) == [days[1]]
    said = capsys.readouterr()
    assert f"{days[1]} append_only: published/{days[1]}/document.yaml" in said.out  # the day, the check, the reason
    assert "Traceback" not in said.err and "- ERROR -" not in said.err  # Dagster's own lines stay in the run log


def test_one_run_over_a_range_still_gives_each_day_its_own_verdict(incremental):
    """af certify evaluates a range in one Dagster run; a tampered day fails, an earlier one passes."""
    home, days = incremental
    con = duckdb.connect(str(home.warehouse_path))
    con.execute("UPDATE frames SET active_us = wall_us + 1 WHERE day = ? AND seq = 0", [days[1]])
    con.close()
    cert = harness.run_certify(home, days)
    assert cert["verdict"] == "fail"
    assert len({cert["days"][d]["run_id"] for d in days}) == 1
    first, second = cert["days"][days[0]], cert["days"][days[1]]
    assert first["passed"] and all(c["passed"] for c in first["checks"].values()), first
    assert not second["passed"]
    assert second["checks"]["frames_quality"]["passed"] is False
    assert "active_us" in second["checks"]["frames_quality"]["problem"]
    assert second["checks"]["rebuild_equals_incremental"]["passed"] is False
    assert second["checks"]["append_only"]["passed"] is True


def test_bad_range_is_a_usage_error(incremental, capsys):
    home, _ = incremental
    assert cli.main(["certify", "--home", str(home.root), "--from", "2026-13-01"]) == 2
    assert cli.main(["build", "--home", str(home.root), "--from", "2020-01-01", "--to", "2020-01-02"]) == 2
    assert "no days between" in capsys.readouterr().err


def test_dagster_job_execute_runs_the_certify_job_and_fails_on_tampering(incremental):
    home, days = incremental
    env = dict(os.environ, AF_HOME=str(home.root), DAGSTER_HOME=str(home.dagster_home))
    exe = Path(sys.executable).with_name("dagster")
    cmd = [str(exe), "job", "execute", "-m", "assets.definitions", "-a", "defs", "-j", "certify",
           "--tags", json.dumps({"dagster/partition": days[0]})]
    (home.published_dir / days[0] / "context.txt").write_text("tampered\n")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stderr + proc.stdout
    assert proc.returncode != 0
    assert "Asset check 'append_only' on 'published_day' did not pass" in out
    assert "Asset check 'raw_rows_quality' on 'raw_day' passed" in out  # the job really ran every check


def test_an_amended_day_goes_stale_rebuilds_and_certifies(incremental):
    """A second device's capture for a day already sealed and published lands as an amendment;
    the sensor asks for the day again, the build republishes it from every segment, and the
    day certifies (earlier segments unchanged, the amendment chained)."""
    from assets.sensors import days_needing_publish
    from capture.model import CaptureBatch, Snapshot

    home, days = incremental
    day = days[0]
    start, _ = day_bounds(day, "Europe/Paris")
    late = CaptureBatch(source_id="screenpipe:laptop2", recorder="screenpipe")
    for i in range(12):  # twelve minutes in Figma at 13:00, on the second device's own monitor
        late.snapshots.append(Snapshot(f"screenpipe:laptop2:frames:{i}", start + 13 * 3_600_000_000 + i * 60_000_000,
                                       "laptop2", "Figma", window="Landing page", heartbeat=True))
    before = json.loads((home.published_dir / day / "manifest.json").read_text())
    assert days_needing_publish(home) == []
    report = EventLog(home).append(late)
    assert report.days_amended == [day] and report.quarantined == 0
    assert [d for d, _ in days_needing_publish(home)] == [day]
    out = harness.run_build(home, [day])
    assert out.ok, out.failures
    after = json.loads((home.published_dir / day / "manifest.json").read_text())
    assert {k: after["segments"][k] for k in before["segments"]} == before["segments"]
    assert any(k.startswith(f"sealed/{day}+1/") for k in after["segments"])
    doc = json.loads((home.published_dir / day / "document.json").read_text())
    assert "Figma" in json.dumps(doc["apps"])
    assert days_needing_publish(home) == []
    ok, checks = certify(home, day)
    assert ok, checks
    assert all(checks[name][0] for name in INVARIANTS)


def test_deleting_the_newest_sealed_day_after_certification_is_caught(incremental, capsys):
    """Removing the newest day (its manifest line and folder) leaves a chain that verifies on its
    own; the certification history still holds the longer certified head, so both `af log verify`
    and the next certification fail, and the day published without a sealed day is flagged."""
    from certification import history

    home, days = incremental
    assert cli.main(["certify", "--home", str(home.root)]) == 0
    records, problems = history.read(home)
    assert len(records) == 1 and not problems and records[0]["chain_head"] == EventLog(home).chain_head()
    log = EventLog(home)
    lines = log.manifest_path.read_bytes().splitlines(keepends=True)
    log.manifest_path.write_bytes(b"".join(lines[:-1]))
    shutil.rmtree(log.sealed_dir / days[-1])
    assert EventLog(home).verify().ok  # the shortened chain is consistent in itself
    capsys.readouterr()
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 1
    assert "sealed history was removed" in capsys.readouterr().out
    assert cli.main(["certify", "--home", str(home.root)]) == 1
    cert = json.loads(home.certificate_path.read_text())
    first = cert["days"][days[0]]["checks"]["append_only"]
    assert not first["passed"]
    text = json.dumps(cert)
    assert "sealed history was removed" in text
    assert f"{days[-1]}: published as sealed but the log's manifest chain has no entry for it" in text
    # the failed certificate did not become the new baseline
    assert len(history.read(home)[0]) == 1


def test_certifying_one_day_rebuilds_that_day_alone_and_still_catches_its_tampering(incremental):
    """The independent rebuild covers the days certified, not the whole log: certifying the
    second day rebuilds it alone, the certificate lists exactly that day, and a warehouse row of
    that day changed subtly enough to pass the data-quality checks still fails the rebuild."""
    home, days = incremental
    rebuild.clear()  # no build left from another test that would already cover the day
    con = duckdb.connect(str(home.warehouse_path))
    con.execute("UPDATE frames SET active_us = active_us // 2 WHERE day = ? AND seq = "
                "(SELECT min(seq) FROM frames WHERE day = ? AND active_us > 1)", [days[1], days[1]])
    con.close()
    cert = harness.run_certify(home, [days[1]])
    assert list(cert["days"]) == [days[1]]
    assert cert["verdict"] == "fail"
    checks = cert["days"][days[1]]["checks"]
    assert checks["frames_quality"]["passed"] is True  # half the active time breaks no rule of its own
    assert checks["rebuild_equals_incremental"]["passed"] is False
    assert "table frames differs" in checks["rebuild_equals_incremental"]["problem"]
    fresh = rebuild.fresh_build(home, False, [days[1]])
    assert set(fresh.digests) == {days[1]}
    assert sorted(p.name for p in fresh.published.iterdir() if p.is_dir()) == [days[1]]
