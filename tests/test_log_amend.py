"""Late and second sources for sealed days: amendments, not refusals (docs/event-log.md).

A sealed day stays immutable; new capture for it lands as a further sealed segment chained after
the earlier ones. Re-importing lands nothing; the same ref with different content is a conflict.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_log import HOUR, after, batch

from capture.home import Home
from capture.log import EventLog
from capture.model import CaptureBatch
from capture.timeutil import day_bounds

DAY = "2026-03-15"


def _rows(cap):
    return (cap.snapshots, cap.inputs, cap.elements, cap.presence, cap.streams)


def test_second_source_for_a_sealed_day_lands_as_an_amendment(home):
    log = EventLog(home)
    first = batch(source="screenpipe:a")
    log.append(first, now_us=after(DAY))
    sealed_bytes = {p.name: p.read_bytes() for p in (log.sealed_dir / DAY).iterdir()}
    second = batch(source="activitywatch:b", n=5)
    r = log.append(second, now_us=after(DAY))
    assert r.landed == {"snapshots": 5, "inputs": 5, "elements": 5, "presence": 1, "streams": 1}
    assert r.quarantined == 0 and r.days_amended == [DAY]
    # the first segment is untouched, byte for byte; the amendment is its own folder and entry
    assert {p.name: p.read_bytes() for p in (log.sealed_dir / DAY).iterdir()} == sealed_bytes
    assert (log.sealed_dir / f"{DAY}+1" / "snapshots.parquet").is_file()
    entries = log.day_entries(DAY)
    assert [e.get("amendment", 0) for e in entries] == [0, 1]
    assert entries[1]["prev"] == entries[0]["hash"]
    cap = log.read_day(DAY)
    assert cap.sealed and len(cap.snapshots) == 25
    assert [(s.ts_us, s.stream, s.ref) for s in cap.snapshots] == sorted((s.ts_us, s.stream, s.ref) for s in cap.snapshots)
    assert {k.split("/")[1] for k in cap.segment_hashes} == {DAY, f"{DAY}+1"}
    assert log.verify().ok
    status = {d.day: d for d in log.days()}[DAY]
    assert status.amendments == 1 and status.counts["snapshots"] == 25
    # re-importing either source lands nothing and creates no further amendment
    for b in (first, second):
        again = log.append(b, now_us=after(DAY))
        assert sum(again.landed.values()) == 0 and again.quarantined == 0 and again.skipped == b.count()
    assert len(log.day_entries(DAY)) == 2


def test_late_rows_of_the_same_source_amend_and_lazy_reads_agree(home):
    log = EventLog(home)
    log.append(batch(n=10), now_us=after(DAY))
    log.append(batch(n=14), now_us=after(DAY))  # the first 10 again plus 4 late rows per kind
    full = log.read_day(DAY)
    lazy = log.read_day(DAY, lazy_elements=True)
    assert len(full.snapshots) == 14 and len(full.elements) == 14
    ids = [s.source_frame_id for s in lazy.snapshots]
    assert lazy.element_source is not None and lazy.element_source.count == 14
    assert lazy.element_source.of_snapshots(ids) == full.elements


def test_same_ref_with_other_content_is_a_conflict_quarantined(home):
    log = EventLog(home)
    b = batch(n=3)
    log.append(b, now_us=after(DAY))
    changed = CaptureBatch(b.source_id, b.recorder)
    changed.snapshots = [replace(b.snapshots[0], window="edited title"), b.snapshots[1]]
    r = log.append(changed, now_us=after(DAY))
    assert sum(r.landed.values()) == 0 and r.skipped == 1 and r.quarantined == 1
    (reason,) = r.quarantine_reasons
    assert "conflicts with the snapshots row of the same ref" in reason and "window" in reason
    assert log.read_day(DAY).snapshots[0].window == "w"  # the logged row is kept
    assert len(log.day_entries(DAY)) == 1


def test_conflicts_are_found_in_open_days_too(home):
    log = EventLog(home)
    b = batch(n=2)
    log.append(b, now_us=day_bounds(DAY, "Europe/Paris")[0] + 12 * HOUR)
    changed = CaptureBatch(b.source_id, b.recorder, inputs=[replace(b.inputs[1], x=999)])
    r = log.append(changed, now_us=day_bounds(DAY, "Europe/Paris")[0] + 12 * HOUR)
    assert r.quarantined == 1 and "differs in x" in next(iter(r.quarantine_reasons))


def test_removing_or_forging_an_amendment_is_caught(home):
    log = EventLog(home)
    log.append(batch(n=4), now_us=after(DAY))
    log.append(batch(n=6, source="other:b"), now_us=after(DAY))
    lines = log.manifest_path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    # tamper with the amendment's file
    path = log.sealed_dir / f"{DAY}+1" / "inputs.parquet"
    saved = path.read_bytes()
    path.write_bytes(saved + b"x")
    report = log.verify()
    assert not report.ok and any(f"sealed/{DAY}+1/inputs.parquet was changed" in p for p in report.problems)
    path.write_bytes(saved)
    # drop the amendment's entry: its folder is now unaccounted for
    log.manifest_path.write_bytes(lines[0])
    report = EventLog(log.home).verify()
    assert not report.ok and any(f"sealed/{DAY}+1 is not in the manifest" in p for p in report.problems)


def test_an_amendment_killed_before_its_entry_is_undone_and_lands_again(home):
    log = EventLog(home)
    log.append(batch(n=4), now_us=after(DAY))
    late = batch(n=6, source="other:b")
    log.append(late, now_us=after(DAY))
    # what a kill between the folder's rename and the manifest line leaves behind
    lines = log.manifest_path.read_bytes().splitlines(keepends=True)
    log.manifest_path.write_bytes(lines[0])
    (log.dir / f".{DAY}+1.direct").write_bytes(b"sealing from an import\n")
    fresh = EventLog(log.home)
    assert fresh.verify().ok  # an interrupted seal is a note, not tampering
    r = fresh.append(late, now_us=after(DAY))
    assert any("undid a amendment 1" in n or "amendment 1" in n for n in r.recovered)
    assert sum(r.landed.values()) == late.count() and fresh.verify().ok
    assert len(fresh.read_day(DAY).snapshots) == 10


def _world(n_sources: int, sizes: list[int]) -> list[CaptureBatch]:
    out = []
    for k, n in enumerate(sizes[:n_sources]):
        src = f"src{k}:x"
        b = batch(source=src, n=n)
        # a second day for some sources, so seals of one day interleave with rows of the next
        nxt = batch(day="2026-03-16", source=src, n=max(1, n // 2))
        for kind in ("snapshots", "inputs", "elements", "presence", "streams"):
            b.rows(kind).extend(nxt.rows(kind))
        out.append(b)
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_sources=st.integers(1, 3),
    sizes=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    plan=st.lists(st.tuples(st.integers(0, 2), st.booleans(), st.integers(0, 2)), min_size=1, max_size=8),
)
def test_any_interleaving_of_sources_and_seals_reads_as_one_import(tmp_path_factory, n_sources, sizes, plan):
    """Importing sources in any order, with seals (by request or by the clock) in between, and some
    sources imported twice, reads every day exactly as importing everything before sealing."""
    sources = _world(n_sources, sizes)
    base = tmp_path_factory.mktemp("world")
    ref = Home(base / "ref")
    ref.init(tz="Europe/Paris")
    ref_log = EventLog(ref)
    early = day_bounds(DAY, "Europe/Paris")[0] + 12 * HOUR
    for b in sources:
        ref_log.append(b, now_us=early)
    ref_log.seal_due(after("2026-03-16"))
    h = Home(base / "mixed")
    h.init(tz="Europe/Paris")
    log = EventLog(h)
    done: set[int] = set()
    for i, seal_now, what in plan:
        b = sources[i % len(sources)]
        log.append(b, now_us=early if not seal_now else after(DAY, 1))
        done.add(i % len(sources))
        if what == 1 and DAY not in {d.day for d in log.days() if d.sealed}:
            log.seal(DAY)
    for i, b in enumerate(sources):
        if i not in done:
            log.append(b, now_us=early)
    log.seal_due(after("2026-03-16"))
    for day in (DAY, "2026-03-16"):
        assert _rows(log.read_day(day)) == _rows(ref_log.read_day(day))
    assert log.verify().ok
    shutil.rmtree(base)


def test_amended_day_compiles_to_the_same_document_as_one_import(home, tmp_path):
    """The day document of an amended day equals that of importing everything before sealing,
    apart from provenance (which segments were read), computed in another process and zone."""
    from af_pipeline.compiler.compile import compile_day

    a, b = batch(source="screenpipe:a", n=12), batch(source="aw:b", n=7)
    log = EventLog(home)
    log.append(a, now_us=after(DAY))
    log.append(b, now_us=after(DAY))
    other = Home(tmp_path / "other")
    other.init(tz="Europe/Paris")
    one = EventLog(other)
    early = day_bounds(DAY, "Europe/Paris")[0] + 12 * HOUR
    one.append(a, now_us=early)
    one.append(b, now_us=early)
    one.seal(DAY)

    def doc(root):
        code = (
            "import json, sys; from capture.home import Home; from capture.log import EventLog; "
            "from af_pipeline.compiler.compile import compile_day; "
            f"d = compile_day(EventLog(Home({str(root)!r})).read_day({DAY!r})); "
            "d['provenance'].pop('segments', None); print(json.dumps(d, sort_keys=True))"
        )
        env = {**os.environ, "TZ": "Asia/Tokyo", "PYTHONHASHSEED": "7"}
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                              check=True).stdout

    assert doc(home.root) == doc(other.root)
    assert len(compile_day(log.read_day(DAY))["provenance"]["segments"]) > len(
        compile_day(one.read_day(DAY))["provenance"]["segments"])


def test_an_import_holds_the_writer_lock_across_its_day_batches(home):
    """While one import lands its source day by day, no other writer can take the log between
    two batches (it is told who holds the lock), and the import itself is not broken off."""
    import pytest

    from capture.errors import UserError

    log = EventLog(home)
    other = EventLog(home)
    with log.writing():
        log.append(batch(n=2), now_us=after(DAY))
        with pytest.raises(UserError, match="being written by"):
            other.append(batch(day="2026-03-16", n=2, source="rec:x"), now_us=after(DAY))
        log.append(batch(day="2026-03-16", n=3), now_us=after("2026-03-16"))
    assert other.append(batch(day="2026-03-16", n=2, source="rec:x"), now_us=after("2026-03-16")).days_amended
