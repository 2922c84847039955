"""Enrichment (paper 4.3): re-attribution, click resolution, keyboard layout map."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import layouts
from af_pipeline.compiler.compile import CompileOptions, compile_day
from af_pipeline.compiler.enrich import enrich, enrich_columns
from capture.errors import UserError
from capture.model import DayCapture, Element, InputEvent, Snapshot, StreamInfo
from capture.timeutil import parse_ts

T0 = parse_ts("2026-03-16T08:00:00Z")
US = 1_000_000


def snap(i, sec, app, stream="m1", fid=None):
    return Snapshot(ref=f"t:frames:{i}", ts_us=T0 + int(sec * US), stream=stream, app=app,
                    window=f"{app} w", source_frame_id=fid or str(i))


def ev(i, sec, kind, stream="m1", **kw):
    return InputEvent(ref=f"t:ui:{i}", ts_us=T0 + int(sec * US), kind=kind, stream=stream, **kw)


def box(i, fid, text, left, top, width, height, role="button", depth=3):
    return Element(ref=f"t:el:{i}", ts_us=T0, snapshot_frame_id=fid, source="accessibility",
                   role=role, text=text, left=left, top=top, width=width, height=height, depth=depth)


def day(snaps, inputs, elements=(), streams=()):
    return DayCapture(day="2026-03-16", tz="Europe/Paris", snapshots=list(snaps), inputs=list(inputs),
                      elements=list(elements), streams=list(streams))


def test_nearest_snapshot_of_the_events_own_stream_is_authoritative():
    cap = day(
        [snap(1, 0, "Editor", "m1"), snap(2, 9, "Mail", "m2"), snap(3, 30, "Editor", "m1")],
        # the recorder believed Slack was focused; m2's Mail row is nearer in time but on another monitor
        [ev(1, 10, "key", "m1", app="Slack", text="x")],
    )
    (e,) = enrich(cap)
    assert (e.snapshot_ref, e.app, e.stream, e.distance_ms) == ("t:frames:1", "Editor", "m1", 10_000)
    assert e.resolution == "none"


def test_event_without_stream_uses_all_streams_and_ties_go_earlier():
    cap = day([snap(1, 0, "A", "m1"), snap(2, 10, "B", "m2")], [ev(1, 5, "scroll", None)])
    (e,) = enrich(cap)
    assert (e.snapshot_ref, e.distance_ms) == ("t:frames:1", 5000)


def test_event_without_stream_takes_the_stream_of_its_logged_frame():
    """A click logged without a stream (an earlier sync release read it before its frame) but
    with its frame id goes to its own frame's monitor, not to the nearer row of another."""
    snaps = [snap(1, 0, "Editor", "m1"), snap(2, 4, "Mail", "m2"), snap(3, 30, "Editor", "m1")]
    cap = day(snaps, [ev(1, 5, "click", None, source_frame_id="1", x=1, y=1)])
    (e,) = enrich(cap)
    assert (e.snapshot_ref, e.stream) == ("t:frames:1", "m1")
    # without a frame the log holds, all streams are searched (as before)
    (e,) = enrich(day(snaps, [ev(1, 5, "click", None, source_frame_id="99", x=1, y=1)]))
    assert (e.snapshot_ref, e.stream) == ("t:frames:2", "m2")
    doc = compile_day(day(snaps, [ev(1, 5, "click", None, source_frame_id="1", x=1, y=1)]))
    assert [f["input"]["clicks"] for f in doc["frames"] if f["stream"] == "m1"] == [1]


def test_no_snapshot_means_no_attribution():
    (e,) = enrich(day([], [ev(1, 5, "click", x=1, y=1)]))
    assert (e.snapshot_ref, e.app, e.resolution) == (None, None, "unresolved")


SCREEN = [StreamInfo(ref="t:s:1", ts_us=T0, stream="m1", width_px=2000, height_px=1000)]


def test_exact_containment_prefers_the_smallest_box():
    els = [box(1, "1", "Toolbar", 0.0, 0.0, 0.5, 0.2, role="group", depth=1),
           box(2, "1", "Save", 0.1, 0.05, 0.05, 0.05)]
    cap = day([snap(1, 0, "Editor")], [ev(1, 1, "click", x=250, y=70)], els, SCREEN)
    (e,) = enrich(cap)
    assert (e.resolution, e.target_name, e.target_role) == ("exact", "Save", "button")


def test_tolerance_ring_is_per_axis_in_real_pixels():
    # button spans y 100..150 px on a 2000x1000 screen; a click 35 px below it is inside the
    # 40 px ring vertically (it would not be if the ring were scaled by the width on both axes)
    els = [box(1, "1", "Send", 0.5, 0.10, 0.05, 0.05)]
    below = day([snap(1, 0, "Mail")], [ev(1, 1, "click", x=1050, y=185)], els, SCREEN)
    (e,) = enrich(below)
    assert (e.resolution, e.target_name) == ("tolerance", "Send")
    farther = day([snap(1, 0, "Mail")], [ev(1, 1, "click", x=1050, y=195)], els, SCREEN)
    (e,) = enrich(farther)
    assert (e.resolution, e.target_name) == ("zone", "top-center")


def test_unknown_screen_size_leaves_anonymous_clicks_unresolved():
    els = [box(1, "1", "Send", 0.0, 0.0, 1.0, 1.0)]
    (e,) = enrich(day([snap(1, 0, "Mail")], [ev(1, 1, "click", x=5, y=5)], els))
    assert (e.resolution, e.target_name) == ("unresolved", None)


def test_recorded_element_name_wins_and_off_screen_click_is_unresolved():
    cap = day([snap(1, 0, "Mail")],
              [ev(1, 1, "click", x=5, y=5, element_name="  Archive\n", element_role="button"),
               ev(2, 2, "click", x=5000, y=5)], streams=SCREEN)
    a, b = enrich(cap)
    assert (a.resolution, a.target_name) == ("recorded", "Archive")
    assert b.resolution == "unresolved"


def test_resolved_labels_reach_the_document():
    els = [box(1, "1", "Save", 0.1, 0.05, 0.05, 0.05)]
    cap = day([snap(1, 0, "Editor"), snap(2, 30, "Editor")],
              [ev(1, 1, "click", x=250, y=70), ev(2, 2, "click", x=250, y=70), ev(3, 3, "click", x=1999, y=999)],
              els, SCREEN)
    doc = compile_day(cap)
    (f,) = doc["frames"]
    assert f["clicked"] == [{"target": "Save", "role": "button", "resolution": "exact", "count": 2},
                            {"target": "bottom-right", "resolution": "zone", "count": 1}]
    assert doc["coverage"]["clicks"]["exact"] == 2
    assert f["input"]["clicks"] == 3


def test_input_volume_follows_attribution_not_time_overlap():
    # two monitors at the same time: each event counts on its own stream's frame only
    cap = day([snap(1, 0, "Editor", "m1"), snap(2, 0, "Mail", "m2"), snap(3, 60, "Editor", "m1"),
               snap(4, 60, "Mail", "m2")],
              [ev(1, 10, "key", "m1"), ev(2, 11, "key", "m1"), ev(3, 12, "clipboard", "m2", clipboard_op="copy"),
               ev(4, 13, "clipboard", "m2", clipboard_op="paste"), ev(5, 14, "move", "m2")])
    doc = compile_day(cap)
    vols = {f["app"]: f["input"] for f in doc["frames"]}
    assert vols["Editor"]["keys"] == 2 and vols["Editor"]["copies"] == 0
    assert (vols["Mail"]["keys"], vols["Mail"]["copies"], vols["Mail"]["pastes"]) == (0, 1, 1)


def test_azerty_covers_the_whole_keyboard():
    tbl = layouts.table("azerty")
    assert layouts.translate("q", "key", tbl) == "a"
    assert layouts.translate("a", "key", tbl) == "q"
    assert layouts.translate("1", "key", tbl) == "&"  # number row, unshifted
    assert layouts.translate("!", "key", tbl) == "1"  # number row, shifted
    assert layouts.translate(";", "key", tbl) == "m"
    assert layouts.translate("Return", "key", tbl) == "Return"  # named keys are not text
    assert layouts.translate("wqzq", "text", tbl) == "zawa"
    assert layouts.translate("hello", "text", layouts.table("identity")) == "hello"
    assert {"identity", "azerty"} <= set(layouts.available())
    cap = day([snap(1, 0, "Editor")], [ev(1, 1, "text", text="qzerty")])
    assert enrich(cap, "azerty")[0].key_text == "awerty"


def test_bad_layouts_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="unknown keyboard layout"):
        layouts.table("dvorak-ish")
    bad = tmp_path / "bad.json"
    bad.write_text('{"map": {"ab": "c"}}', encoding="utf-8")
    with pytest.raises(UserError, match="one character"):
        layouts.table(str(bad))


opt_text = st.none() | st.text(max_size=8)
opt_int = st.none() | st.integers(-10_000, 10_000)
events = st.builds(
    InputEvent, ref=st.text(min_size=1, max_size=6), ts_us=st.integers(T0 - 10**9, T0 + 10**9),
    kind=st.sampled_from(["click", "key", "text", "scroll", "clipboard", "move", "app_switch", "bogus"]),
    stream=st.none() | st.sampled_from(["m1", "m2", "m9"]), x=opt_int, y=opt_int, text=opt_text,
    element_name=opt_text, clipboard_op=st.none() | st.sampled_from(["copy", "paste", "cut", "odd"]),
)
fl = st.none() | st.floats(allow_nan=True, allow_infinity=True, width=32)
elements = st.builds(Element, ref=st.text(min_size=1, max_size=5), ts_us=st.just(T0),
                     snapshot_frame_id=st.sampled_from(["1", "2"]), source=st.just("accessibility"),
                     text=opt_text, left=fl, top=fl, width=fl, height=fl, depth=st.none() | st.integers(-3, 9))
sizes = st.lists(st.builds(StreamInfo, ref=st.just("s"), ts_us=st.just(T0), stream=st.sampled_from(["m1", "m2"]),
                           width_px=st.none() | st.integers(-5, 4000), height_px=st.none() | st.integers(-5, 4000)),
                 max_size=3)


@settings(max_examples=150, deadline=None)
@given(st.lists(events, max_size=25), st.lists(elements, max_size=10), sizes)
def test_enrichment_never_raises(inputs, els, streams):
    snaps = [snap(1, 0, "A", "m1", "1"), snap(2, 20, "B", "m2", "2")]
    cap = day(snaps, inputs, els, streams)
    out = enrich(cap, "azerty")
    assert len(out) == len(inputs)
    for e in out:
        assert e.resolution in ("recorded", "exact", "tolerance", "zone", "unresolved", "none")
        assert (e.resolution == "none") == (e.event.kind != "click")
    compile_day(cap, CompileOptions(layout="azerty", include_typed_text=True))


@pytest.mark.parametrize("in_c", [True, False], ids=["C", "numpy"])
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.sampled_from(["m1", "m2", "m3"])), max_size=20),
       st.lists(st.tuples(st.integers(-10, 110), st.none() | st.sampled_from(["m1", "m2", "m9"])), max_size=20))
def test_vectorised_attribution_equals_binary_search(in_c, snaps, events):
    """Both ways of attributing many events at once (the C search of _speedups.c, and numpy's
    where no compiler built it) give SnapIndex.nearest's answer for each."""
    from af_pipeline.compiler import enrich
    from af_pipeline.compiler.enrich import SnapIndex

    if in_c and enrich._c is None:
        pytest.skip("the C module was not built (no C compiler)")
    index = SnapIndex([snap(i, t, "A", stream) for i, (t, stream) in enumerate(snaps)])
    for order in (events, sorted(events, key=lambda e: e[0])):  # as drawn, and in time order (as days come)
        with patch.object(enrich, "_c", enrich._c if in_c else None):
            pos, dist = index.attribute([T0 + t * US for t, _ in order], [s for _, s in order])
        expected = [index.nearest(s, T0 + t * US) for t, s in order]
        assert list(zip(pos.tolist(), dist.tolist(), strict=True)) == expected


def test_event_times_the_c_search_does_not_take_are_searched_by_numpy():
    import numpy as np

    from af_pipeline.compiler.enrich import SnapIndex

    index = SnapIndex([snap(i, t, "A", "m1") for i, t in enumerate((0, 10, 20))])
    times = np.asarray([T0 + t * US for t in (-5, 4, 5, 6, 15, 99)], dtype=np.int64)
    pos, dist = index.attribute_codes(times[::2], None)  # every other event, not one contiguous array; ties go earlier
    assert pos.tolist() == [0, 0, 1] and dist.tolist() == [5 * US, 5 * US, 5 * US]


def test_controls_name_clicks_before_ocr_words():
    els = [box(1, "1", "Send message", 0.10, 0.10, 0.30, 0.10),
           Element(ref="t:el:2", ts_us=T0, snapshot_frame_id="1", source="ocr", text="Send",
                   left=0.11, top=0.11, width=0.05, height=0.03)]
    (e,) = enrich(day([snap(1, 0, "Mail")], [ev(1, 1, "click", x=260, y=125)], els, SCREEN))
    assert (e.resolution, e.target_name) == ("exact", "Send message")
    ocr_only = [els[1]]
    (e,) = enrich(day([snap(1, 0, "Mail")], [ev(1, 1, "click", x=260, y=125)], ocr_only, SCREEN))
    assert (e.resolution, e.target_name, e.target_role) == ("exact", "Send", None)


def _enrich_as_columns(out):
    fields = ("snapshot_ref", "distance_ms", "stream", "app", "window", "url", "target_name", "target_role",
              "resolution", "key_text")
    cols = {"ref": [e.event.ref for e in out], "ts_us": [e.event.ts_us for e in out], "kind": [e.event.kind for e in out]}
    return cols | {f: [getattr(e, f) for e in out] for f in fields}


# events that tie on time, and on time and ref, with other streams: the order's every key matters
tied_events = st.builds(
    InputEvent, ref=st.sampled_from(["a", "b"]), ts_us=st.sampled_from([T0, T0 + US]),
    kind=st.sampled_from(["click", "key", "text", "scroll"]), stream=st.none() | st.sampled_from(["m1", "m2", ""]),
    x=opt_int, y=opt_int, text=opt_text,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(events | tied_events, max_size=25), st.lists(elements, max_size=10), sizes,
       st.lists(st.tuples(st.integers(-100, 100), st.sampled_from(["m1", "m2"]), st.sampled_from(["A", "B"])),
                max_size=6))
def test_enrich_columns_are_enrich_field_by_field(inputs, els, streams, snap_rows):
    """The warehouse's columns equal the objects' fields, in the same order (ties in time,
    stream and ref included), with and without the typed text."""
    snaps = [snap(i + 1, t, app, stream, str(i % 2 + 1)) for i, (t, stream, app) in enumerate(snap_rows)]
    cap = day(snaps, inputs, els, streams)
    cols = enrich_columns(cap, layout="azerty")
    assert cols == _enrich_as_columns(enrich(cap, "azerty"))
    assert enrich_columns(cap, typed_text=False) == cols | {"key_text": [None] * len(inputs)}


def test_enrich_columns_from_the_sealed_logs_columns(tmp_path):
    """A day read back from the log leaves its input events as columns: the same columns."""
    from dagster_support import TZ, corpus, days_of

    from capture.home import Home
    from capture.log import EventLog

    home = Home(tmp_path / "home")
    home.init(tz=TZ)
    batch = corpus()
    EventLog(home).append(batch)
    for d in days_of(batch):
        cap = EventLog(home).read_day(d, lazy_elements=True)
        assert cap.row_columns("inputs") is not None  # the path without event objects
        cols = enrich_columns(cap)
        assert len(cols["ref"]) > 100 and {"exact", "none"} <= set(cols["resolution"])
        assert cols == _enrich_as_columns(enrich(EventLog(home).read_day(d)))


class _SnapshotColumns:
    """Snapshots held as columns, as a sealed read defers them: the times as an array and the
    streams as codes of a dictionary that names one stream twice (as a reader's may)."""

    kind = "snapshots"

    def __init__(self, rows):
        self._rows = rows
        self.count = len(rows)

    def values(self, name):
        return [getattr(r, name) for r in self._rows]

    def array(self, name):
        import numpy as np

        return np.asarray(self.values(name), dtype=np.int64)

    def codes(self, name):
        import numpy as np

        # every value twice in the dictionary, rows alternating between its two codes
        distinct = list(dict.fromkeys(v for v in self.values(name) if v is not None))
        dictionary = distinct + distinct
        codes = [-1 if v is None else distinct.index(v) + (i % 2) * len(distinct)
                 for i, v in enumerate(self.values(name))]
        return np.asarray(codes, dtype=np.int64), dictionary

    def rows(self):
        return list(self._rows)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from(["m1", "m2", "m3"]), st.integers(0, 30)), max_size=25),
       st.booleans())
def test_snapshot_index_of_a_capture_is_the_index_of_its_rows(snaps, in_order):
    """SnapIndex.of reads a day's columns (times as an array, streams as codes) and must order
    and group them exactly as the index of the Snapshot rows, sorted or not, ties included."""
    from af_pipeline.compiler.enrich import SnapIndex

    rows = [Snapshot(ref=f"s{r:02d}", ts_us=T0 + t * US, stream=s, app="A") for t, s, r in snaps]
    if in_order:
        rows.sort(key=lambda x: (x.ts_us, x.stream, x.ref))
    cap = DayCapture(day="2026-03-16", tz="UTC")
    cap.defer_rows("snapshots", _SnapshotColumns(rows))
    got, want = SnapIndex.of(cap), SnapIndex(rows)
    assert got.all_ts == want.all_ts and got.by_stream == want.by_stream
    assert got.col("ref") == want.col("ref") and got.col("stream") == want.col("stream")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.sampled_from(["m1", "m2"]), st.sampled_from(["Code", "Mail"]),
                          st.sampled_from([None, "", "a", "a", "b"]),
                          st.sampled_from([None, "https://x.com/a", "https://y.org/", "https://x.com/b"])),
                min_size=2, max_size=40))
def test_a_day_compiled_from_reader_columns_is_the_day_compiled_from_rows(rows):
    """What the compile reads through the reader's columns (times as an array, codes of a
    dictionary that holds each value twice) gives the document the Snapshot rows give."""
    # seconds apart at first, then minutes apart (sessions break)
    snaps = sorted((Snapshot(ref=f"s:frames:{i}", ts_us=T0 + (t * 7 if t <= 40 else t * 400) * US, stream=s, app=a,
                             window=w, url=u,
                             heartbeat=i % 3 == 0) for i, (t, s, a, w, u) in enumerate(rows)),
                   key=lambda x: (x.ts_us, x.stream, x.ref))
    deferred = DayCapture(day="2026-03-16", tz="UTC")
    deferred.defer_rows("snapshots", _SnapshotColumns(snaps))
    options = CompileOptions(min_minutes=0)
    assert compile_day(deferred, options) == compile_day(DayCapture(day="2026-03-16", tz="UTC", snapshots=snaps), options)
