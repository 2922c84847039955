"""The capture event log: landing, idempotence, sealing, quarantine, verification, reading."""

from __future__ import annotations

import json

import pytest

from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.log import EventLog
from capture.model import CaptureBatch, Element, InputEvent, Presence, Quarantined, Snapshot, StreamInfo
from capture.timeutil import day_bounds, parse_ts

MIN = 60_000_000
HOUR = 60 * MIN


def batch(day: str = "2026-03-15", n: int = 20, source: str = "test:a", tz: str = "Europe/Paris") -> CaptureBatch:
    """n snapshots spread through the local day, each with one input and one element."""
    start, _ = day_bounds(day, tz)
    b = CaptureBatch(source_id=source, recorder="synth")
    for i in range(n):
        ts = start + 8 * HOUR + i * MIN
        b.snapshots.append(
            Snapshot(f"{source}:frames:{day}:{i}", ts, f"monitor_{i % 2}", "Firefox", "w", f"https://x/{i}",
                     source_frame_id=f"{day}:{i}")
        )
        b.inputs.append(InputEvent(f"{source}:ui:{day}:{i}", ts + 1, "click", stream=f"monitor_{i % 2}", x=i, y=i))
        b.elements.append(Element(f"{source}:el:{day}:{i}", ts, f"{day}:{i}", "accessibility", "button", "OK",
                                  left=0.25, top=0, width=0.5, height=0.125))
    b.presence.append(Presence(f"{source}:afk:{day}", start + 8 * HOUR, start + 9 * HOUR, "not-afk"))
    b.streams.append(StreamInfo(f"{source}:stream:{day}", start + 8 * HOUR, "monitor_0", 1920, 1080))
    return b


def after(day: str, hours: float = 48, tz: str = "Europe/Paris") -> int:
    return day_bounds(day, tz)[1] + int(hours * HOUR)


def test_append_then_read_open_day(home):
    log = EventLog(home)
    r = log.append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z"))
    assert r.landed == {"snapshots": 20, "inputs": 20, "elements": 20, "presence": 1, "streams": 1}
    assert r.skipped == 0 and r.days_touched == ["2026-03-15"] and r.days_sealed == []
    cap = log.read_day("2026-03-15")
    assert not cap.sealed and cap.recorders == ["synth"] and cap.segment_hashes == {}
    assert [s.ts_us for s in cap.snapshots] == sorted(s.ts_us for s in cap.snapshots)
    assert cap.elements[0].left == 0.25 and cap.elements[0].top == 0.0


def test_past_days_seal_at_import_and_read_the_same(home):
    log = EventLog(home)
    b = batch()
    log.append(b, now_us=parse_ts("2026-03-15T12:00:00Z"))
    before = log.read_day("2026-03-15")
    r = log.append(CaptureBatch("test:b", "synth"), now_us=after("2026-03-15"))
    assert r.days_sealed == ["2026-03-15"]
    sealed = log.read_day("2026-03-15")
    assert sealed.sealed
    assert (sealed.snapshots, sealed.inputs, sealed.elements, sealed.presence, sealed.streams) == (
        before.snapshots, before.inputs, before.elements, before.presence, before.streams)
    assert set(sealed.segment_hashes) >= {"sealed/2026-03-15/snapshots.parquet"}
    assert sealed.recorders == ["synth"]
    assert set(log.segment_paths("2026-03-15")) == {"snapshots", "inputs", "elements", "presence", "streams"}
    assert log.verify().ok


def test_reimport_adds_nothing(home):
    log = EventLog(home)
    b = batch()
    b.quarantined.append(Quarantined("db.sqlite", "frames id 7", "timestamp is not a time", "x"))
    log.append(b, now_us=parse_ts("2026-03-15T12:00:00Z"))
    r = log.append(b, now_us=parse_ts("2026-03-15T12:00:00Z"))
    assert sum(r.landed.values()) == 0 and r.skipped == b.count()
    assert len(log.quarantine_rows()) == 1


def test_seal_on_request(home):
    log = EventLog(home)
    log.append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z"))
    assert log.seal("2026-03-15") is True
    assert log.seal("2026-03-15") is False
    with pytest.raises(UserError, match="no capture for 2026-03-16"):
        log.seal("2026-03-16")
    with pytest.raises(UserError, match="not a day"):
        log.seal("15/03/2026")


def test_rows_the_log_cannot_store_are_quarantined(home):
    log = EventLog(home)
    b = batch(n=1)
    b.snapshots.append(Snapshot("bad:1", parse_ts("2026-03-15T10:00:00Z"), "m", "App", window="\ud800"))
    b.snapshots.append(Snapshot("bad:2", "2026-03-15", "m", "App"))  # type: ignore[arg-type]
    r = log.append(b, now_us=parse_ts("2026-03-15T12:00:00Z"))
    assert r.landed["snapshots"] == 1 and r.quarantined == 2
    assert {q["row"] for q in log.quarantine_rows()} == {"bad:1", "bad:2"}


def test_cli_status_seal_verify(home, capsys):
    log = EventLog(home)
    log.append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z"))
    assert cli.main(["log", "seal", "2026-03-15", "--home", str(home.root)]) == 0
    assert cli.main(["log", "status", "--home", str(home.root), "--json"]) == 0
    out = capsys.readouterr().out
    status = json.loads(out[out.index("{"):])
    assert status["days"][0]["sealed"] and status["days"][0]["counts"]["snapshots"] == 20
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 0
    seg = log.segment_paths("2026-03-15")["inputs"]
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    capsys.readouterr()
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 1
    assert "sealed/2026-03-15/inputs.parquet" in capsys.readouterr().out
    assert cli.main(["log", "seal", "2026-03-16", "--home", str(home.root)]) == 2


# ---------------------------------------------------------------------- local days and DST


def test_rows_land_on_the_local_day_across_dst_changes(home):
    log = EventLog(home)  # Europe/Paris: clocks go forward on 2026-03-29 and back on 2026-10-25
    b = CaptureBatch("test:dst", "synth")
    stamps = {
        "2026-03-28T22:59:59Z": "2026-03-28",  # 23:59:59 CET
        "2026-03-28T23:00:00Z": "2026-03-29",  # 00:00 CET
        "2026-03-29T21:59:59Z": "2026-03-29",  # 23:59:59 CEST: a 23-hour day
        "2026-03-29T22:00:00Z": "2026-03-30",
        "2026-10-24T22:00:00Z": "2026-10-25",  # 00:00 CEST
        "2026-10-25T22:59:59Z": "2026-10-25",  # 23:59:59 CET: a 25-hour day
        "2026-10-25T23:00:00Z": "2026-10-26",
    }
    for i, text in enumerate(stamps):
        b.snapshots.append(Snapshot(f"dst:{i}", parse_ts(text), "m", "App"))
    log.append(b, now_us=parse_ts("2026-01-01T00:00:00Z"))
    got = {s.ref: d.day for d in log.days() for s in log.read_day(d.day).snapshots}
    assert got == {f"dst:{i}": day for i, day in enumerate(stamps.values())}


def test_machine_zone_does_not_move_days(home, monkeypatch):
    monkeypatch.setenv("TZ", "Pacific/Auckland")
    log = EventLog(home)
    log.append(CaptureBatch("t", "synth", snapshots=[Snapshot("a", parse_ts("2026-03-15T23:30:00Z"), "m", "A")]),
               now_us=parse_ts("2026-03-15T23:31:00Z"))
    assert [d.day for d in log.days()] == ["2026-03-16"] and log.tz == "Europe/Paris"


def test_seal_waits_for_day_end_plus_grace(home):
    log = EventLog(home)  # grace: 6 hours by default
    log.append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z"))
    end = day_bounds("2026-03-15", "Europe/Paris")[1]
    assert log.seal_due(end + 6 * HOUR - 1) == []
    assert log.seal_due(end + 6 * HOUR + 1) == ["2026-03-15"]


# ---------------------------------------------------------------------- reading


def test_read_range_spans_days_and_is_half_open(home):
    log = EventLog(home)
    for day in ("2026-03-15", "2026-03-16"):
        log.append(batch(day), now_us=parse_ts("2026-03-14T00:00:00Z"))
    log.seal("2026-03-15")
    start = day_bounds("2026-03-15", "Europe/Paris")[0] + 8 * HOUR + 10 * MIN
    end = day_bounds("2026-03-16", "Europe/Paris")[0] + 8 * HOUR + 5 * MIN
    cap = log.read_range(start, end)
    assert cap.day == "2026-03-15"
    assert len(cap.snapshots) == 10 + 5 and all(start <= s.ts_us < end for s in cap.snapshots)
    assert [s.ts_us for s in cap.snapshots] == sorted(s.ts_us for s in cap.snapshots)
    assert not cap.sealed  # one of the two days is still open
    assert set(cap.segment_hashes) >= {"sealed/2026-03-15/snapshots.parquet"}


def test_sorted_with_total_keys(home):
    log = EventLog(home)
    ts = parse_ts("2026-03-15T10:00:00Z")
    b = CaptureBatch("t", "synth")
    for ref, stream in [("c", "monitor_2"), ("b", None), ("a", "monitor_2"), ("d", "monitor_1")]:
        b.snapshots.append(Snapshot(ref, ts, stream or "monitor_0", "A"))
        b.inputs.append(InputEvent("i" + ref, ts, "key", stream=stream))  # no stream sorts first
    log.append(b, now_us=ts)
    expect = ["b", "d", "a", "c"]  # (ts, stream or "", ref)
    assert [s.ref for s in log.read_day("2026-03-15").snapshots] == expect
    log.seal("2026-03-15")
    cap = log.read_day("2026-03-15")
    assert [s.ref for s in cap.snapshots] == expect and [i.ref for i in cap.inputs] == ["i" + r for r in expect]


@pytest.mark.parametrize("kind", ["snapshots", "inputs", "elements", "presence", "streams"])
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("how", ["changed", "missing"])
def test_reading_a_tampered_sealed_day_fails_loudly(home, kind, lazy, how):
    # every file is checked before the read returns, whichever thread checks it
    from capture.errors import CheckFailed

    log = EventLog(home)
    log.append(batch(), now_us=after("2026-03-15"))
    path = log.segment_paths("2026-03-15")[kind]
    if how == "changed":
        path.write_bytes(path.read_bytes() + b"\0")
    else:
        path.unlink()
    with pytest.raises(CheckFailed, match=f"{kind}.parquet (no longer matches|is missing)"):
        log.read_day("2026-03-15", lazy_elements=lazy)


# ---------------------------------------------------------------------- crash leftovers and locking


def test_torn_tail_is_ignored_by_readers_and_cut_by_the_next_writer(home):
    log = EventLog(home)
    log.append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z"))
    seg = home.log_dir / "open" / "2026-03-15" / "inputs.jsonl"
    good = seg.read_bytes()
    seg.write_bytes(good + b'{"ref":"test:a:ui:half","ts_us":17735')  # a write killed half-way
    assert len(log.read_day("2026-03-15").inputs) == 20
    assert log.days()[0].counts["inputs"] == 20
    assert log.verify().ok
    r = log.append(batch(n=21), now_us=parse_ts("2026-03-15T12:00:00Z"))
    assert any("inputs.jsonl" in note and "incomplete" in note for note in r.recovered)
    assert r.landed["inputs"] == 1 and r.skipped == 20 * 3 + 2
    assert seg.read_bytes().startswith(good) and seg.read_bytes().endswith(b"\n")
    assert len(log.read_day("2026-03-15").inputs) == 21


def test_torn_manifest_tail_is_a_note_then_repaired(home):
    log = EventLog(home)
    log.append(batch(), now_us=after("2026-03-15"))
    with open(log.manifest_path, "ab") as fh:
        fh.write(b'{"seq":1,"day":"2026-03-1')
    report = log.verify()
    assert report.ok and report.notes and report.entries == 1
    r = log.append(CaptureBatch("x", "synth"), now_us=after("2026-03-15"))
    assert any("manifest.jsonl" in n for n in r.recovered)
    assert log.manifest_path.read_bytes().endswith(b"\n") and log.verify().ok


def test_seal_interrupted_before_its_manifest_entry_is_undone_and_redone(home):
    import shutil

    log = EventLog(home)
    log.append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z"))
    open_dir = home.log_dir / "open" / "2026-03-15"
    saved = home.log_dir.parent / "saved-open"
    shutil.copytree(open_dir, saved)
    rows = log.read_day("2026-03-15")
    log.seal("2026-03-15")
    # Rebuild what a kill leaves between "sealed folder moved into place" and "manifest entry
    # written": the open segment still there, no manifest entry, plus a stale staging folder.
    log.manifest_path.write_bytes(b"")
    shutil.copytree(saved, open_dir)
    shutil.copytree(home.log_dir / "sealed" / "2026-03-15", home.log_dir / "sealed" / ".2026-03-15.staging")
    report = log.verify()
    assert report.ok and len(report.notes) == 2, report
    assert not log.read_day("2026-03-15").sealed
    r = log.append(CaptureBatch("x", "synth"), now_us=after("2026-03-15"))
    assert r.days_sealed == ["2026-03-15"] and len(r.recovered) == 2
    again = log.read_day("2026-03-15")
    assert again.sealed and again.snapshots == rows.snapshots and again.elements == rows.elements
    assert log.verify().ok and log.verify().notes == []


def test_a_second_writer_gets_a_clear_error(home):
    import fcntl

    log = EventLog(home)
    log.append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z"))
    with open(home.log_dir / ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(UserError, match="being written by"):
            EventLog(home).append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z"))
        assert len(EventLog(home).read_day("2026-03-15").snapshots) == 20  # reading needs no lock
    assert EventLog(home).append(batch(), now_us=parse_ts("2026-03-15T12:00:00Z")).skipped > 0


# ---------------------------------------------------------------------- verify says exactly what and where


def _sealed_log(home, days=("2026-03-15", "2026-03-16", "2026-03-17")):
    log = EventLog(home)
    for day in days:
        log.append(batch(day), now_us=after(day))
    assert log.verify().ok
    return log


def _only_problem(log) -> str:
    report = log.verify()
    assert not report.ok and len(report.problems) >= 1
    return "\n".join(report.problems)


def test_verify_names_a_missing_file(home):
    log = _sealed_log(home)
    log.segment_paths("2026-03-16")["presence"].unlink()
    msg = _only_problem(log)
    assert "entry 1, day 2026-03-16" in msg and "sealed/2026-03-16/presence.parquet is missing" in msg


def test_verify_names_an_extra_file(home):
    log = _sealed_log(home)
    (home.log_dir / "sealed" / "2026-03-17" / "notes.txt").write_text("hi")
    assert "unexpected file sealed/2026-03-17/notes.txt" in _only_problem(log)


def test_verify_names_an_edited_entry_and_the_broken_link_after_it(home):
    log = _sealed_log(home)
    lines = log.manifest_path.read_text().splitlines()
    entry = json.loads(lines[0])
    entry["files"]["snapshots.parquet"]["rows"] = 19
    lines[0] = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    log.manifest_path.write_text("\n".join(lines) + "\n")
    msg = _only_problem(log)
    assert "manifest.jsonl line 1 (entry 0, day 2026-03-15): the entry was edited" in msg
    # Re-hashing the edited entry to hide the edit breaks the next link instead.
    from capture.log import entry_hash

    entry["hash"] = entry_hash(entry)
    lines[0] = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    log.manifest_path.write_text("\n".join(lines) + "\n")
    msg = _only_problem(log)
    assert "line 2 (entry 1, day 2026-03-16): broken chain link" in msg and "edited" not in msg


def test_verify_names_a_removed_entry(home):
    log = _sealed_log(home)
    lines = log.manifest_path.read_text().splitlines()
    log.manifest_path.write_text("\n".join([lines[0], lines[2]]) + "\n")
    msg = _only_problem(log)
    assert "seq is 2, expected 1" in msg and "broken chain link" in msg
    assert "sealed/2026-03-16 is not in the manifest" in msg


def test_verify_names_a_garbled_line(home):
    log = _sealed_log(home)
    data = log.manifest_path.read_bytes().replace(b'"day":"2026-03-16"', b'"day":"2026-03-16', 1)
    log.manifest_path.write_bytes(data)
    assert "manifest.jsonl line 2 is not a valid JSON entry" in _only_problem(log)


def test_cli_json_outputs_and_exit_codes(home, capsys):
    log = EventLog(home)
    b = batch()
    b.quarantined.append(Quarantined("db.sqlite", "ui_events id 9", "timestamp is not a time", None))
    log.append(b, now_us=after("2026-03-15"))
    root = str(home.root)

    def run(*argv: str) -> tuple[int, dict]:
        capsys.readouterr()
        code = cli.main(list(argv))
        return code, json.loads(capsys.readouterr().out)

    code, status = run("log", "status", "--home", root, "--json")
    assert code == 0 and status["quarantined"] == 1
    assert status["quarantine_reasons"] == {"timestamp is not a time": 1}
    assert status["chain_head"] == log.chain_head() and status["tz"] == "Europe/Paris"
    code, sealed = run("log", "seal", "2026-03-15", "--home", root, "--json")
    assert code == 0 and sealed == {"day": "2026-03-15", "sealed": False, "chain_head": log.chain_head()}
    code, report = run("log", "verify", "--home", root, "--json")
    assert code == 0 and report["ok"] and report["entries"] == 1
    (home.log_dir / "sealed" / "2026-03-15" / "streams.parquet").unlink()
    code, report = run("log", "verify", "--home", root, "--json")
    assert code == 1 and not report["ok"]
    assert report["problems"] == [
        "manifest.jsonl line 1 (entry 0, day 2026-03-15): file sealed/2026-03-15/streams.parquet is missing"
    ]


def test_cli_usage_errors_exit_2_with_a_sentence(tmp_path, capsys):
    assert cli.main(["log", "status", "--home", str(tmp_path / "nothing")]) == 2
    assert "not an activity-frames data folder" in capsys.readouterr().err
    assert cli.main(["log"]) == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["log", "seal"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["log", "verify", "--help"])
    assert exc.value.code == 0 and "exits 1" in capsys.readouterr().out


def test_verify_notices_the_data_folder_zone_was_edited(home):
    _sealed_log(home, days=("2026-03-15",))
    settings = json.loads(home.settings_path.read_text())
    settings["tz"] = "Asia/Tokyo"
    home.settings_path.write_text(json.dumps(settings))
    msg = _only_problem(EventLog(home))
    assert "sealed in time zone 'Europe/Paris'" in msg and "'Asia/Tokyo'" in msg


def test_a_data_folder_path_with_quotes_and_spaces(tmp_path):
    from capture.home import Home

    home = Home(tmp_path / "it's my \"home\" folder")
    home.init(tz="Europe/Paris")
    log = EventLog(home)
    log.append(batch("2026-03-15"), now_us=after("2026-03-15"))  # sealed straight from the import
    log.append(batch("2026-03-16"), now_us=parse_ts("2026-03-16T12:00:00Z"))  # open
    log.append(batch("2026-03-17", source="test:b"), now_us=parse_ts("2026-03-16T12:00:00Z"))
    assert log.seal("2026-03-16")
    assert [len(log.read_day(d).snapshots) for d in ("2026-03-15", "2026-03-16", "2026-03-17")] == [20, 20, 20]
    assert log.append(batch("2026-03-15"), now_us=after("2026-03-17")).skipped == 62
    assert log.verify().ok


def test_a_hand_made_sealed_folder_is_reported_and_never_deleted(home):
    log = EventLog(home)
    log.append(batch("2026-03-14"), now_us=after("2026-03-14"))
    stray = home.log_dir / "sealed" / "2026-03-15"
    stray.mkdir()
    (stray / "snapshots.parquet").write_bytes(b"not ours")
    with pytest.raises(UserError, match="changed by hand"):
        log.append(batch("2026-03-15"), now_us=after("2026-03-15"))
    assert "sealed/2026-03-15 is not in the manifest" in _only_problem(log)
    log.append(CaptureBatch("x", "synth"), now_us=after("2026-03-15"))  # a later write repairs nothing here
    assert (stray / "snapshots.parquet").read_bytes() == b"not ours"


@pytest.mark.parametrize("index_min", [10**9, 0])  # scan the sealed days / use the hash index
def test_a_ref_already_on_another_day_is_skipped_not_landed_twice(home, monkeypatch, index_min):
    import capture.log as log_module

    monkeypatch.setattr(log_module, "INDEX_MIN_REFS", index_min)
    log = EventLog(home)
    log.append(batch("2026-03-15", n=3), now_us=after("2026-03-15"))  # sealed
    log.append(batch("2026-03-16", n=3), now_us=parse_ts("2026-03-16T12:00:00Z"))  # open
    moved = CaptureBatch("test:a", "synth")  # same refs, clock shifted by a day (a re-parsed source)
    for day, shift in (("2026-03-15", 24), ("2026-03-16", -24)):
        for s in batch(day, n=3).snapshots:
            moved.snapshots.append(Snapshot(s.ref, s.ts_us + shift * HOUR, s.stream, s.app))
    r = EventLog(home).append(moved, now_us=parse_ts("2026-03-16T12:00:00Z"))
    assert r.skipped == 6 and sum(r.landed.values()) == 0 and r.quarantined == 0
    assert [len(log.read_day(d).snapshots) for d in ("2026-03-14", "2026-03-15", "2026-03-16", "2026-03-17")] == [
        0, 3, 3, 0]


def test_rows_of_the_wrong_kind_or_without_time_are_quarantined_not_dropped(home):
    log = EventLog(home)
    b = batch(n=2)
    b.snapshots.append(InputEvent("odd:1", parse_ts("2026-03-15T10:00:00Z"), "click"))  # type: ignore[arg-type]
    b.inputs.append(InputEvent("odd:2", 5, "click"))  # 1970: a broken clock, no day to file it under
    b.elements.append(Element("", parse_ts("2026-03-15T10:00:00Z"), "f", "ocr"))
    r = log.append(b, now_us=parse_ts("2026-03-15T12:00:00Z"))
    assert r.landed["snapshots"] == 2 and r.landed["inputs"] == 2 and r.landed["elements"] == 2
    reasons = {q["row"]: q["reason"] for q in log.quarantine_rows()}
    assert reasons == {
        "snapshots[2]": "snapshots row is of type InputEvent, not Snapshot",
        "odd:2": "inputs row has no usable ts_us (a time between 1990 and 2100)",
        "elements[2]": "elements row has no ref",
    }
