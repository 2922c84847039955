"""The capture event log: landing, idempotence, sealing, quarantine, verification, reading."""

from __future__ import annotations

import json

import pytest

from af_pipeline import cli
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


def test_sealed_day_refuses_new_rows_into_quarantine(home):
    log = EventLog(home)
    log.append(batch(), now_us=after("2026-03-15"))
    late = batch(n=21)  # the same 20 refs plus one new one per kind... (new refs: index 20)
    r = log.append(late, now_us=after("2026-03-15"))
    assert sum(r.landed.values()) == 0
    assert r.quarantine_reasons == {"day 2026-03-15 is sealed": 3}
    assert len(log.read_day("2026-03-15").snapshots) == 20
    rows = log.quarantine_rows()
    assert {q["reason"] for q in rows} == {"day 2026-03-15 is sealed"} and all(q["day"] == "2026-03-15" for q in rows)


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
