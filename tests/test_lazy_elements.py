"""Element trees read on demand give exactly the documents and enrichment of reading them all.

Element rows are most of a day's capture, and only the trees under anonymous clicks are ever
looked at, so the log (sealed days) and the warehouse can hand the compiler an element source
instead of the rows. These tests hold both readers to the full read, on a corpus whose clicks
really are resolved against element trees.
"""

from __future__ import annotations

import duckdb
import pytest
from dagster_support import corpus, days_of, new_home
from hypothesis import given
from hypothesis import strategies as st

from af_pipeline.compiler.compile import CompileOptions, compile_day
from af_pipeline.compiler.emit import canonical_bytes
from af_pipeline.compiler.enrich import enrich
from af_pipeline.warehouse import store
from capture.log import EventLog
from capture.log.rows import ElementColumns
from capture.model import (
    CaptureBatch,
    DayCapture,
    Element,
    ElementHit,
    InputEvent,
    Snapshot,
    names_no_element,
)


@pytest.fixture(scope="module")
def sealed_log(tmp_path_factory):
    home = new_home(tmp_path_factory.mktemp("lazy"))
    batch = corpus(2)
    log = EventLog(home)
    log.append(batch)
    days = days_of(batch)
    for day in days:
        if day not in {d.day for d in log.days() if d.sealed}:
            log.seal(day)
    assert all(d.sealed for d in log.days())
    return log, days


def test_a_compile_decodes_only_the_columns_it_reads(sealed_log):
    """A lazy read decodes the snapshots' and input events' columns the compiler reads
    (read.FIRST_COLUMNS); a compile asks for no other, and the rows, when asked for, are whole."""
    from capture.log.read import FIRST_COLUMNS

    log, days = sealed_log
    for day, typed in ((d, t) for d in days for t in (False, True)):
        lazy = log.read_day(day, lazy_elements=True)
        compile_day(lazy, CompileOptions(include_typed_text=typed))
        # typed text in time order asks for the events' refs too (the order's last key)
        read = {"snapshots": [*FIRST_COLUMNS["snapshots"]], "inputs": [*FIRST_COLUMNS["inputs"], *["ref"] * typed]}
        for kind in ("snapshots", "inputs"):
            held = lazy.row_columns(kind)
            assert held is not None and held._table.column_names == read[kind]
        full = log.read_day(day)
        assert lazy.snapshots == full.snapshots and lazy.inputs == full.inputs  # the other columns read now


def _resolved_by_trees(events) -> int:
    return sum(1 for e in events if e.resolution in ("exact", "tolerance"))


def _warehouse_days(log, days, folder):
    """(connection, day) for each day, loaded into a fresh warehouse; closed at the end."""
    con = duckdb.connect(str(folder / "w.duckdb"))
    try:
        for day in days:
            store.load_raw_day(con, log, day)
            yield con, day
    finally:
        con.close()


def test_sealed_day_read_lazily_compiles_to_the_same_bytes(sealed_log):
    log, days = sealed_log
    for day in days:
        full = log.read_day(day)
        lazy = log.read_day(day, lazy_elements=True)
        assert full.elements and not lazy.elements
        assert lazy.element_count() == len(full.elements)
        for typed in (False, True):
            opts = CompileOptions(include_typed_text=typed)
            assert canonical_bytes(compile_day(lazy, opts)) == canonical_bytes(compile_day(full, opts))
        full_events, lazy_events = enrich(full), enrich(lazy)
        assert lazy_events == full_events
        # not vacuous: clicks of this day were named from their element trees
        assert _resolved_by_trees(full_events) > 0


def test_sealed_elements_by_snapshot_are_the_trees_in_log_order(sealed_log):
    log, days = sealed_log
    full = log.read_day(days[0])
    lazy = log.read_day(days[0], lazy_elements=True)
    assert lazy.element_source is not None
    ids = sorted({e.snapshot_frame_id for e in full.elements})[::7]
    wanted = set(ids)
    assert lazy.element_source.of_snapshots(ids) == [e for e in full.elements if e.snapshot_frame_id in wanted]
    assert lazy.element_source.of_snapshots(reversed(ids)) == lazy.element_source.of_snapshots(ids)
    assert lazy.element_source.of_snapshots([]) == []
    assert lazy.element_source.of_snapshots(["no-such-snapshot"]) == []



def test_one_segment_day_gives_its_element_rows_as_columns(sealed_log):
    # the columnar path of click resolution (enrich.ring_candidates) is the one a sealed day
    # of one segment takes, and its rows are the rows of the full read
    log, days = sealed_log
    full = log.read_day(days[0])
    lazy = log.read_day(days[0], lazy_elements=True)
    columns = lazy.element_source.columns()
    assert columns is not None
    picks = list(range(0, len(full.elements), 97))[::-1]
    # each as an ElementHit: the fields click resolution reads, and the row; refs one by one
    assert columns.hits(picks) == [ElementHit.of(full.elements[i], i) for i in picks]
    assert [columns.ref(h) for h in columns.hits(picks)] == [full.elements[i].ref for i in picks]
    assert columns.ts_us.tolist() == [e.ts_us for e in full.elements]


def test_sealed_read_leaves_input_events_as_columns_until_asked(sealed_log):
    # the compile reads the columns it needs and makes no event object; anything that reads
    # capture.inputs gets the same rows as ever, and copies carry rows, not the reader's columns
    import copy
    import pickle

    log, days = sealed_log
    full = log.read_day(days[0])
    lazy = log.read_day(days[0], lazy_elements=True)
    assert lazy.row_columns("inputs") is not None and "inputs" not in vars(lazy)
    doc = compile_day(lazy, CompileOptions(include_typed_text=True))
    assert lazy.row_columns("inputs") is not None  # still not made into objects
    assert canonical_bytes(doc) == canonical_bytes(compile_day(full, CompileOptions(include_typed_text=True)))
    again = pickle.loads(pickle.dumps(log.read_day(days[0])))
    assert again.row_columns("inputs") is None and again.inputs == full.inputs
    assert copy.copy(log.read_day(days[0])).inputs == full.inputs
    assert lazy.inputs == full.inputs and lazy.row_columns("inputs") is None
    assert log.read_day(days[0]) == full
    # the columns the compile reads are read with the day, the others when first asked for
    cols = log.read_day(days[0]).row_columns("inputs")
    assert cols is not None
    assert cols.values("window") == [e.window for e in full.inputs]
    assert cols.values("element_bounds") == [e.element_bounds for e in full.inputs]
    with pytest.raises(KeyError):
        cols.values("no_such_column")


def test_compile_makes_no_snapshot_or_event_object_from_a_sealed_or_warehouse_read(sealed_log, tmp_path):
    # snapshots and input events stay the reader's columns through the whole compile (the
    # SnapIndex and DayCapture.values read them), and give the same document as their rows
    log, days = sealed_log
    for con, day in _warehouse_days(log, days, tmp_path):
        rows = log.read_day(day)
        want = canonical_bytes(compile_day(rows, CompileOptions(include_typed_text=True)))
        from_rows = DayCapture(day=day, tz=rows.tz, snapshots=list(rows.snapshots), inputs=list(rows.inputs),
                               elements=list(rows.elements), presence=rows.presence, streams=rows.streams,
                               sealed=rows.sealed, recorders=rows.recorders, segment_hashes=rows.segment_hashes)
        for cap in (log.read_day(day, lazy_elements=True), store.load_capture(con, day, lazy_elements=True)):
            assert cap.row_columns("snapshots") is not None and cap.row_columns("inputs") is not None
            assert canonical_bytes(compile_day(cap, CompileOptions(include_typed_text=True))) == want
            assert cap.row_columns("snapshots") is not None and cap.row_columns("inputs") is not None
            assert "snapshots" not in vars(cap) and "inputs" not in vars(cap)
            assert cap.count("snapshots") == len(rows.snapshots) and cap.count("inputs") == len(rows.inputs)
            assert cap.values("snapshots", ("ref", "end_us")) == [[s.ref for s in rows.snapshots],
                                                                  [s.end_us for s in rows.snapshots]]
            assert cap.snapshots == rows.snapshots and cap.inputs == rows.inputs  # asked for: the rows
            assert cap.row_columns("snapshots") is None
        assert canonical_bytes(compile_day(from_rows, CompileOptions(include_typed_text=True))) == want


def test_warehouse_capture_with_lazy_elements_compiles_to_the_same_bytes(sealed_log, tmp_path):
    log, days = sealed_log
    for con, day in _warehouse_days(log, days, tmp_path):
        full = store.load_capture(con, day)
        lazy = store.load_capture(con, day, lazy_elements=True)
        assert full.elements == log.read_day(day).elements  # the warehouse keeps the log's rows
        assert not lazy.elements and lazy.element_count() == len(full.elements)
        assert canonical_bytes(compile_day(lazy, CompileOptions())) == canonical_bytes(
            compile_day(full, CompileOptions())
        )
        assert enrich(lazy) == enrich(full)


def test_column_views_of_every_reader_agree_with_the_rows(sealed_log, tmp_path):
    # DayCapture.codes, .values_at and .array give the rows' own values, whichever reader holds
    # them (the sealed file's columns, the warehouse's fetched columns, or objects)
    import numpy as np

    log, days = sealed_log
    for con, day in _warehouse_days(log, days, tmp_path):
        rows = log.read_day(day)
        objects = DayCapture(day=day, tz=rows.tz, snapshots=list(rows.snapshots), inputs=list(rows.inputs))
        for cap in (log.read_day(day, lazy_elements=True), store.load_capture(con, day, lazy_elements=True),
                    objects):
            for kind, names in (("inputs", ("kind", "stream", "clipboard_op", "element_name", "text", "x")),
                                ("snapshots", ("app", "url", "stream", "window"))):
                want = {n: [getattr(r, n) for r in getattr(rows, kind)] for n in names}
                picks = list(range(0, len(want[names[0]]), 7))[::-1]
                for n in names:
                    codes, values = cap.codes(kind, n)
                    assert [None if c < 0 else values[c] for c in codes.tolist()] == want[n]
                    assert cap.values_at(kind, (n,), picks) == [[want[n][i] for i in picks]]
                assert np.array_equal(cap.array(kind, "ts_us"), [r.ts_us for r in getattr(rows, kind)])
            if cap is not objects:
                assert cap.row_columns("inputs") is not None  # read as columns, no object made


_NAMES = st.sampled_from([None, "", "  ", "\t", "Save", " Open "])


@given(name=_NAMES)
def test_a_click_names_no_element_as_click_resolution_tells_it(name):
    # the reader's early start and attribute_input share this rule: a blank name is none, and
    # only a click that names none is looked for in the element trees
    (e,) = enrich(DayCapture(day="2026-03-16", tz="UTC", snapshots=[
        Snapshot(ref="s:1", ts_us=1_773_648_000_000_000, stream="m0", app="Editor")], inputs=[
        InputEvent(ref="i:1", ts_us=1_773_648_000_000_010, kind="click", x=5, y=5, stream="m0", element_name=name)]))
    assert names_no_element(name) == (e.resolution != "recorded")
    assert e.target_name == (None if names_no_element(name) else " ".join(name.split()))


@pytest.mark.parametrize(("clicks", "trees", "early"), [
    ([None], True, True),
    (["Save", "  "], True, True),
    (["Save", " Open "], True, False),  # every click named: the trees are never looked at
    ([], True, False),
    ([None], False, False),  # a day without element rows has nothing to read
])
def test_a_lazy_read_starts_reading_the_trees_when_a_click_names_no_element(clicks, trees, early, tmp_path):
    home = new_home(tmp_path)
    day, t0 = "2026-06-01", 1_780_300_800_000_000  # 2026-06-01 08:00 UTC
    batch = CaptureBatch(source_id="test:early", recorder="synth",
                         snapshots=[Snapshot(ref=f"s:{k}", ts_us=t0 + k * 1_000_000, stream="m0", app="Editor",
                                             source_frame_id=str(k)) for k in range(4)],
                         inputs=[InputEvent(ref=f"i:{k}", ts_us=t0 + k * 1_000_000 + 10, kind="click", x=5, y=5,
                                            stream="m0", element_name=name) for k, name in enumerate(clicks)]
                         + [InputEvent(ref="i:key", ts_us=t0 + 5, kind="key", stream="m0", key_code=30)],
                         elements=[Element(ref=f"e:{k}", ts_us=t0 + k * 1_000_000, snapshot_frame_id=str(k),
                                           source="accessibility", role="AXButton", text="OK", left=0.0, top=0.0,
                                           width=0.5, height=0.5) for k in range(4)] if trees else [])
    log = EventLog(home)
    log.append(batch)
    if day not in {d.day for d in log.days() if d.sealed}:
        log.seal(day)
    cap = log.read_day(day, lazy_elements=True)
    assert cap.element_source.prefetching == early
    full = log.read_day(day)
    assert canonical_bytes(compile_day(cap)) == canonical_bytes(compile_day(full))


def test_columns_read_in_the_background_are_the_columns_read_in_place(sealed_log):
    log, days = sealed_log
    early = log.read_day(days[0], lazy_elements=True)
    assert early.element_source.prefetching  # this corpus's days have anonymous clicks
    a = early.element_source.columns()
    b = ElementColumns.read(log.segment_paths(days[0])["elements"])
    assert a is not None and b is not None and not early.element_source.prefetching
    for name in ("ts_us", "left", "top", "width", "height"):
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes()  # NaN for a NULL bound
    picks = list(range(0, len(a.ts_us), 53))
    assert a.hits(picks) == b.hits(picks)


def _read_in_child(log, day, out):
    out.put(log.read_day(day, lazy_elements=True).count("inputs"))


def test_a_forked_process_reads_with_its_own_reader_threads(sealed_log):
    # the parent's reader threads do not exist in a forked child: a child that used the
    # parent's executor would wait for them forever
    import multiprocessing

    log, days = sealed_log
    want = log.read_day(days[0], lazy_elements=True).count("inputs")  # the parent's threads now exist
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_read_in_child, args=(log, days[0], out))
    child.start()
    try:
        assert out.get(timeout=60) == want
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
