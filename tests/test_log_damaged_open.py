"""A damaged or newer-schema line in an open segment: served around, reported, quarantined at seal."""

from __future__ import annotations

import json

from test_log import after, batch

from af_pipeline.interfaces import cli
from capture.log import EventLog
from capture.timeutil import day_bounds

DAY = "2026-03-15"


def _damage(log: EventLog) -> None:
    path = log.open_dir / DAY / "inputs.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    row = json.loads(lines[0])
    row["ref"] = "test:a:ui:newer"
    row["pressure"] = 0.5  # a field a newer capture schema might add
    lines.insert(2, b'{"ref": "test:a:ui:broken", "ts_us": 17\n')  # a torn-then-appended write, say
    lines.insert(4, json.dumps(row).encode() + b"\n")
    path.write_bytes(b"".join(lines))


def test_bad_lines_are_served_around_reported_and_quarantined_at_seal(home, capsys):
    log = EventLog(home)
    log.append(batch(n=5), now_us=day_bounds(DAY, "Europe/Paris")[0] + 12 * 3_600_000_000)
    _damage(log)
    fresh = EventLog(home)
    cap = fresh.read_day(DAY)
    assert len(cap.inputs) == 5 and len(cap.snapshots) == 5  # everything else is served
    report = fresh.verify()
    assert not report.ok
    assert any("open/2026-03-15/inputs.jsonl line 3 is not valid JSON" in p for p in report.problems)
    assert any("line 5 has fields capture schema v1 does not know (pressure" in p for p in report.problems)
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 1
    assert "inputs.jsonl line 3" in capsys.readouterr().out
    # appending more capture to the damaged day still works
    more = batch(n=7)
    r = fresh.append(more, now_us=day_bounds(DAY, "Europe/Paris")[0] + 12 * 3_600_000_000)
    assert r.landed["inputs"] == 2
    # sealing quarantines the two lines with their file and line, and seals the rest
    assert cli.main(["log", "seal", DAY, "--home", str(home.root)]) == 0
    sealed = EventLog(home)
    assert len(sealed.read_day(DAY).inputs) == 7 and sealed.verify().ok
    q = [row for row in sealed.quarantine_rows() if row.get("source") == f"log/open/{DAY}/inputs.jsonl"]
    assert sorted(row["row"] for row in q) == ["line 3", "line 5"]
    # sealing again or re-importing adds nothing
    sealed.append(more, now_us=after(DAY))
    assert len(sealed.quarantine_rows()) == len(q)


def test_segments_written_before_a_column_existed_still_read(home):
    """A day sealed (and a day left open) by a version whose capture schema lacked the newer
    optional columns (Snapshot.end_us, Presence.stream) reads with those columns as None."""
    import duckdb

    from capture.log import entry_hash
    from capture.timeutil import day_bounds

    log = EventLog(home)
    log.append(batch(n=4), now_us=after(DAY))
    # rewrite the sealed day as the older version wrote it: no end_us / stream columns
    folder = log.sealed_dir / DAY
    con = duckdb.connect()
    for kind, drop in (("snapshots", "end_us"), ("presence", "stream")):
        path = folder / f"{kind}.parquet"
        tmp = folder / f"{kind}.old.parquet"
        con.execute(f"COPY (SELECT * EXCLUDE ({drop}) FROM read_parquet('{path}')) TO '{tmp}' (FORMAT parquet)")
        tmp.replace(path)
    entry = json.loads(log.manifest_path.read_text())
    import hashlib

    for name in ("snapshots.parquet", "presence.parquet"):
        entry["files"][name]["sha256"] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    entry["hash"] = entry_hash(entry)
    log.manifest_path.write_text(json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n")
    # and an open day whose lines lack the new fields
    nxt = "2026-03-16"
    log.append(batch(day=nxt, n=3), now_us=day_bounds(nxt, "Europe/Paris")[0] + 12 * 3_600_000_000)
    path = log.open_dir / nxt / "snapshots.jsonl"
    lines = [json.loads(ln) for ln in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "end_us"}) + "\n" for r in lines))
    fresh = EventLog(home)
    assert fresh.verify().ok
    cap = fresh.read_day(DAY)
    assert len(cap.snapshots) == 4 and all(s.end_us is None for s in cap.snapshots)
    assert all(p.stream is None for p in cap.presence)
    assert len(fresh.read_day(nxt).snapshots) == 3
    from af_pipeline.warehouse import store

    wh = duckdb.connect()
    assert store.load_raw_day(wh, fresh, DAY)["counts"]["snapshots"] == 4


def test_open_row_chunks_give_parse_opens_rows_whatever_the_chunk_size(home):
    """The sync pass reads an open day's refs a chunk at a time (its memory stays flat as the day
    grows): the rows must be exactly parse_open's, damaged, newer-schema and torn lines included."""
    from capture.log.opensegments import open_row_chunks, parse_open

    log = EventLog(home)
    log.append(batch(n=9), now_us=day_bounds(DAY, "Europe/Paris")[0] + 12 * 3_600_000_000)
    _damage(log)
    path = log.open_dir / DAY / "inputs.jsonl"
    with path.open("ab") as fh:
        fh.write(b'{"ref": "test:a:ui:torn"')  # a write under way: no line end, not a row yet
    whole = parse_open(path, "inputs")[0]
    assert len(whole) == 9
    for size in (1, 7, 64, 1 << 20):  # a line cut by a block boundary, several lines a block, one block
        chunks = list(open_row_chunks(path, "inputs", size))
        assert [r for rows in chunks for r in rows] == whole
    assert len(list(open_row_chunks(path, "inputs", 64))) > 1  # really in chunks
    assert list(open_row_chunks(log.open_dir / DAY / "absent.jsonl", "inputs")) == []


def test_repeated_text_values_are_one_object_and_the_rows_unchanged(home):
    """A reader following a busy open day holds every row: equal app, window, stream, role...
    values are one string object (a third less memory per row), the ref is left alone."""
    from capture.log.opensegments import parse_open

    log = EventLog(home)
    log.append(batch(n=6), now_us=day_bounds(DAY, "Europe/Paris")[0] + 12 * 3_600_000_000)
    rows = parse_open(log.open_dir / DAY / "snapshots.jsonl", "snapshots")[0]
    lines = (log.open_dir / DAY / "snapshots.jsonl").read_bytes().splitlines()
    assert [r.app for r in rows] == [json.loads(ln)["app"] for ln in lines]  # the same values
    for name in ("stream", "app", "window"):
        values = [getattr(r, name) for r in rows]
        assert len({id(v) for v in values}) == len(set(values)) < len(values)  # one object per value
    assert len({id(r.ref) for r in rows}) == len(rows)
