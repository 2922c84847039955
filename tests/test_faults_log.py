"""Faults in the event log itself: an amendment chained twice (correctly, so the chain alone
cannot tell), and an open segment with lines no reader may choke on."""

from __future__ import annotations

from test_log import after, batch

from af_pipeline.interfaces import cli
from capture.log import EventLog
from capture.log.rows import checked_columns
from capture.model import ROW_KINDS

DAY = "2026-03-15"


# -- an amendment chained twice ------------------------------------------------------------------


def _amend_again(log: EventLog, rows: dict[str, list]) -> int:
    """Seal these rows as the day's next amendment with the log's own writer, as a buggy or
    hostile writer would: the entry is hashed and chained like any other."""
    fresh = {kind: checked_columns(kind, rows[kind])[0] for kind in ROW_KINDS}
    with log.writing():
        return log._seal_columns(DAY, fresh, [("other:b", "synth")], amend=True)


def test_the_same_amendment_chained_twice_fails_verify_naming_day_and_entry(home, capsys):
    log = EventLog(home)
    log.append(batch(n=4), now_us=after(DAY))
    late = batch(n=6, source="other:b")
    log.append(late, now_us=after(DAY))
    assert log.verify().ok
    assert _amend_again(log, {kind: late.rows(kind) for kind in ROW_KINDS}) == 2
    fresh = EventLog(home)
    entries = fresh.day_entries(DAY)
    assert [e.get("amendment", 0) for e in entries] == [0, 1, 2] and entries[2]["prev"] == entries[1]["hash"]
    report = fresh.verify()
    assert not report.ok
    (problem,) = report.problems
    assert problem.startswith(f"manifest.jsonl line 3 (entry 2, day {DAY}): amendment 2 of day {DAY} ")
    assert "amendment 1" in problem and "chained twice" in problem
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 1
    out = capsys.readouterr()
    assert f"entry 2, day {DAY}" in out.out and "chained twice" in out.out and "Traceback" not in out.err


def test_an_amendment_repeating_some_logged_rows_fails_verify(home, capsys):
    log = EventLog(home)
    first = batch(n=4)
    log.append(first, now_us=after(DAY))
    # two rows of the first segment again, beside new ones: a later amendment that re-lands rows
    late = batch(n=3, source="other:b")
    rows = {kind: late.rows(kind) + first.rows(kind)[:2] for kind in ROW_KINDS}
    assert _amend_again(log, rows) == 1
    report = EventLog(home).verify()
    assert not report.ok
    assert any(p.startswith(f"manifest.jsonl line 2 (entry 1, day {DAY}): amendment 1 of day {DAY} repeats 2 "
                            "snapshots row(s) already in the day's first segment") for p in report.problems), \
        report.problems
    assert all("rows landed twice" in p for p in report.problems)
    assert cli.main(["log", "verify", "--home", str(home.root)]) == 1
    assert "Traceback" not in capsys.readouterr().err
