"""An open day held as columns (capture.log.opencolumns) serves exactly the rows it was given:
whatever rows come, in whatever chunks and order, a view gives the rows in the log's order, and
a view taken earlier keeps giving what it gave then. The read model's open-day answers compiled
from the columns equal those compiled from row objects."""

from __future__ import annotations

import json
import math
from dataclasses import fields, replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture.log.opencolumns import OpenColumns, OpenElements
from capture.log.schema import COLUMNS, NAMES, sort_key
from capture.model import Element, InputEvent, Snapshot

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ts = st.integers(min_value=1_700_000_000_000_000, max_value=1_700_000_000_000_000 + 50)
text = st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["Code", "Firefox", "a:b", ""]))
ref_tail = st.one_of(st.integers(0, 10**6).map(str), st.text(max_size=5))
refs = st.builds(lambda p, t: p + t, st.sampled_from(["", "screenpipe:db:ab12:frames:", "aw:", "x:y:"]), ref_tail)
floats = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, width=64),
                   st.integers(-3, 3), st.just(-0.0))
ints = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3))

snapshots = st.builds(Snapshot, refs, ts, st.sampled_from(["monitor_0", "monitor_1"]), st.text(max_size=4), text, text,
                      st.booleans(), text, st.booleans(), st.one_of(st.none(), st.integers(0, 30).map(str)),
                      st.one_of(st.none(), ts))
inputs = st.builds(InputEvent, refs, ts, st.sampled_from(["click", "key", "text"]),
                   st.one_of(st.none(), st.just("monitor_1")), ints, ints, text, ints, ints, text, text, text, text,
                   text, text, text, text, text, st.one_of(st.none(), st.integers(0, 30).map(str)))
elements = st.builds(Element, refs, ts, st.integers(0, 30).map(str), st.sampled_from(["accessibility", "ocr"]), text,
                     text, st.one_of(st.none(), refs), ints, floats, floats, floats, floats)
ROWS = {"snapshots": snapshots, "inputs": inputs, "elements": elements}


def normal(row: Any) -> Any:
    """A row as the log reads it back: whole numbers of DOUBLE columns as floats."""
    kind = {Snapshot: "snapshots", InputEvent: "inputs", Element: "elements"}[type(row)]
    return replace(row, **{f.name: float(getattr(row, f.name)) for f in fields(row)
                           if COLUMNS[kind][f.name] == "DOUBLE" and type(getattr(row, f.name)) is int})


def same(a: list[Any], b: list[Any]) -> bool:
    """Equal rows, -0.0 told from 0.0 (they print differently in a document)."""
    return a == b and all(repr(x) == repr(y) for x, y in zip(a, b, strict=True))


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, list[list[Any]]]:
    kind = draw(st.sampled_from(sorted(ROWS)))
    chunks = draw(st.lists(st.lists(ROWS[kind], max_size=12), max_size=6))
    return kind, chunks


@SETTINGS
@given(chunked())
def test_views_give_the_rows_in_log_order_and_keep_them(case: tuple[str, list[list[Any]]]) -> None:
    kind, chunks = case
    key = sort_key(kind)
    store = OpenColumns(kind)
    held: list[Any] = []
    taken = []
    for chunk in chunks:
        chunk = sorted(chunk, key=key)  # a follower hands over a parse's rows sorted
        store.extend(chunk)
        held = sorted(held + [normal(r) for r in chunk], key=key)
        taken.append((store.view(), list(held)))
    restored = OpenColumns.restore(kind, store.dump())  # the open-day cache's form, restored
    taken.append((restored.view(), list(held)))
    restored.extend([])
    for view, rows in taken:  # every view still gives exactly what it gave when taken
        assert view.count == len(rows)
        assert same(view.rows(), rows)
        for name in NAMES[kind]:
            values = [getattr(r, name) for r in rows]
            assert same(view.values(name), values), name
            codes = view.codes(name)
            if codes is not None:
                c, distinct = codes
                assert [None if i < 0 else distinct[i] for i in c.tolist()] == values, name
            arr = view.array(name)
            if arr is not None:
                assert None not in values and arr.tolist() == values, name
            elif COLUMNS[kind][name] == "BIGINT" and rows:
                assert None in values, name
        if rows:
            positions = list(range(len(rows)))[::-2]
            assert same(view.take(positions).rows(), [rows[i] for i in positions])
            assert view.values_at("ref", positions) == [rows[i].ref for i in positions]
            lo, hi = rows[len(rows) // 3].ts_us, rows[-1].ts_us
            assert same(view.between(lo, hi).rows(), [r for r in rows if lo <= r.ts_us < hi])


@SETTINGS
@given(st.lists(elements, max_size=30), st.lists(st.integers(0, 30).map(str), max_size=5))
def test_open_elements_by_snapshot_and_as_geometry(rows: list[Element], frames: list[str]) -> None:
    store = OpenColumns("elements")
    rows = sorted(rows, key=sort_key("elements"))
    store.extend(rows)
    rows = [normal(r) for r in rows]
    source = OpenElements(store.view())
    assert source.count == len(rows)
    assert same(source.of_snapshots(frames), [r for r in rows if r.snapshot_frame_id in set(frames)])
    geometry = source.columns()
    assert geometry.ts_us.tolist() == [r.ts_us for r in rows]
    for name in ("left", "top", "width", "height"):
        got = getattr(geometry, name).tolist()
        assert [None if math.isnan(v) else v for v in got] == [getattr(r, name) for r in rows]
    picks = list(range(len(rows)))[::3]
    for hit, i in zip(geometry.hits(picks), picks, strict=True):
        assert (hit.row, hit.snapshot_frame_id, hit.text, hit.depth, hit.left) == \
            (i, rows[i].snapshot_frame_id, rows[i].text, rows[i].depth, rows[i].left)
        assert geometry.ref(hit) == rows[i].ref
    if rows:
        lo = rows[len(rows) // 2].ts_us
        part = source.between(lo, lo + 10)
        assert same(part.of_snapshots(frames),
                    [r for r in rows if r.snapshot_frame_id in set(frames) and lo <= r.ts_us < lo + 10])


def test_a_damaged_dump_is_refused() -> None:
    store = OpenColumns("snapshots")
    store.extend([Snapshot(f"s:{i}", 10 + i, "m", "App", f"w{i}") for i in range(5)])
    good = store.dump()
    for name, damage in (("window", lambda e: [e[0], e[1], e[2][:2]]),  # codes past the dictionary
                         ("ref", lambda e: [*e[:5], e[5][:3]]),  # refs past their bytes
                         ("ts_us", lambda e: [e[0][:8], e[1]])):  # fewer numbers than rows
        bad = dict(good, **{name: damage(good[name])})
        with pytest.raises((ValueError, KeyError, TypeError)):
            OpenColumns.restore("snapshots", bad)
    again = OpenColumns.restore("snapshots", good)
    again.extend([Snapshot("s:9", 9, "m", "App", "w0")])  # sorts first: the restored store grows and reorders
    assert [r.ref for r in again.view().rows()] == ["s:9", *(f"s:{i}" for i in range(5))]


def test_codes_widen_past_a_byte_and_old_views_keep_theirs() -> None:
    store = OpenColumns("snapshots")
    first = [Snapshot(f"s:{i}", 10 + i, "m", "App", f"w{i}") for i in range(100)]
    store.extend(first)
    early = store.view()
    store.extend([Snapshot(f"s:{i}", 10 + i, "m", "App", f"w{i}") for i in range(100, 70_000)])
    assert store.column("window").codes.dtype == np.int32
    assert early.values("window") == [f"w{i}" for i in range(100)]
    assert store.view().values("window")[-1] == "w69999"


# ---------------------------------------------------------------------- the read model


def test_open_day_answers_equal_those_compiled_from_rows(tmp_path: Any) -> None:
    """The open day's document and a part of it (the last hours), compiled by the read model from
    its columns, are byte for byte what the same compile gives from the log's row objects; and
    clicks that name no element are resolved through the trees in both."""
    from bisect import bisect_left

    from af_pipeline.compiler.categories import rules_in
    from af_pipeline.compiler.compile import CompileOptions, compile_day, window_context
    from af_pipeline.interfaces.memory import Memory
    from capture.home import Home
    from capture.log import EventLog
    from capture.model import CaptureBatch, DayCapture
    from capture.timeutil import day_bounds, parse_ts

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    day, t0 = "2026-06-03", parse_ts("2026-06-03T09:00:00Z")
    apps = ["Code", "Firefox", "Slack"]
    batch = CaptureBatch("test", "synth")
    for n in range(300):
        at, fid = t0 + n * 2_000_000, str(n)
        app = apps[(n // 20) % 3]
        batch.snapshots.append(Snapshot(f"t:frames:{n}", at, "monitor_1", app, f"{app} window {n // 20}",
                                        source_frame_id=fid))
        batch.inputs.append(InputEvent(f"t:ui:{n}", at + 1, "click", "monitor_1", x=100 + n % 7, y=120,
                                       source_frame_id=fid))
        for k in range(3):
            batch.elements.append(Element(f"t:el:{n}:{k}", at, fid, "accessibility", "AXButton", f"Button {k}",
                                          None, k, 0.0 + k * 0.05, 0.05, 0.05, 0.05))
    log = EventLog(home)
    log.append(batch, now_us=t0 + 3600 * 10**6)
    now = t0 + 700 * 10**6
    memory = Memory(home, clock=lambda: now)
    rows = log.read_day(day)
    options = {"categories": rules_in(home.root)}

    doc = compile_day(rows, CompileOptions(**options))
    assert json.dumps(memory.document(day), sort_keys=True) == json.dumps(doc, sort_keys=True)
    assert any(p.get("kind") for f in doc["frames"] for p in f.get("pages", [])) or doc["frames"]

    lo, hi = now - 300 * 10**6, now  # the last five minutes: a part of the day
    assert (lo, hi) != day_bounds(day, "UTC")
    part = DayCapture(day=day, tz="UTC", sealed=False)
    for kind in ("snapshots", "inputs", "elements"):
        setattr(part, kind, [r for r in getattr(rows, kind) if lo <= r.ts_us < hi])
    part.streams, part.recorders = rows.streams, rows.recorders
    keys = [s.ts_us for s in rows.snapshots]
    before, after = window_context(rows.snapshots, bisect_left(keys, lo), bisect_left(keys, hi), lo, hi)
    part.snapshots = [rows.snapshots[i] for i in before] + part.snapshots + [rows.snapshots[i] for i in after]
    piece = compile_day(part, CompileOptions(window=(lo, hi), **options))
    got = memory._piece(day, lo, hi, 0.0)
    assert got is not None
    assert json.dumps(got[0], sort_keys=True) == json.dumps(piece, sort_keys=True)


def test_a_sealed_day_answer_does_not_load_pandas(tmp_path: Any) -> None:
    """pyarrow's to_numpy and pa.array import pandas (48 MB resident) on first use; the sealed
    read goes around them, so a long-lived server's first answer from a sealed day does not pay
    for pandas (fresh interpreter: another test may have imported it here)."""
    import subprocess
    import sys

    from capture.home import Home
    from capture.log import EventLog
    from capture.model import CaptureBatch
    from capture.timeutil import parse_ts

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    t0 = parse_ts("2026-06-03T09:00:00Z")
    batch = CaptureBatch("test", "synth")
    for n in range(50):
        batch.snapshots.append(Snapshot(f"t:frames:{n}", t0 + n * 10**6, "monitor_1", "Code", "w", source_frame_id=str(n)))
        batch.inputs.append(InputEvent(f"t:ui:{n}", t0 + n * 10**6 + 1, "click", "monitor_1", x=5, y=5,
                                       source_frame_id=str(n)))
        batch.elements.append(Element(f"t:el:{n}", t0 + n * 10**6, str(n), "accessibility", "AXButton", "OK",
                                      None, 0, 0.0, 0.0, 0.5, 0.5))
    log = EventLog(home)
    log.append(batch, now_us=parse_ts("2026-06-05T12:00:00Z"))
    assert log.segment_paths("2026-06-03")
    code = ("import sys\nfrom af_pipeline.interfaces.memory import Memory\n"
            f"m = Memory({str(home.root)!r})\n"
            "assert m.context(m.period(day='2026-06-03'))[0]\n"
            "assert m.document('2026-06-03')['frames']\n"
            "print(sorted(n for n in sys.modules if n.split('.')[0] == 'pandas')[:3])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_followed_open_day_costs_the_read_model_little_per_row(tmp_path: Any) -> None:
    """What a long-lived reader holds for each row of a growing open day (the MCP server's
    memory grew with it): under 200 bytes (row objects held about 340, bench/soak_rows.py)."""
    import gc
    import shutil
    import tracemalloc

    from af_pipeline.interfaces.memory import Memory
    from capture.home import Home
    from capture.log import EventLog
    from capture.model import CaptureBatch
    from capture.timeutil import parse_ts

    home = Home(tmp_path / "home")
    home.init(tz="UTC")
    t0, day = parse_ts("2026-06-03T09:00:00Z"), "2026-06-03"
    apps = ["Code", "Firefox", "Slack", "Terminal", "Figma"]
    batch = CaptureBatch("screenpipe:db.sqlite:6ce82004e1", "screenpipe")
    for n in range(2000):  # the soak's writer: a frame, two clicks and a 5-element tree
        at, fid = t0 + n * 333_000, str(n)
        app = apps[(n // 30) % 5]
        batch.snapshots.append(Snapshot(f"screenpipe:db.sqlite:6ce82004e1:frames:{n}", at, "monitor_1", app,
                                        f"{app} window {n // 30 % 40}", trigger="click", source_frame_id=fid))
        for k in (1, 2):
            batch.inputs.append(InputEvent(f"screenpipe:db.sqlite:6ce82004e1:ui_events:{2 * n + k}", at, "click",
                                           "monitor_1", x=10 * k, y=20, button="left", source_frame_id=fid))
        for k in range(5):
            batch.elements.append(Element(f"screenpipe:db.sqlite:6ce82004e1:elements:{5 * n + k}", at, fid,
                                          "accessibility", "AXButton", f"t{n % 200}", None, k, 0.0, 0.0, 1.0, 1.0))
    EventLog(home).append(batch, now_us=t0 + 3600 * 10**6)
    del batch
    folder = home.log_dir / "open" / day
    full = {p.name: p.read_bytes() for p in folder.glob("*.jsonl")}
    shutil.rmtree(home.root / "cache", ignore_errors=True)

    def grow(part: int) -> None:  # the open segment as a sync pass leaves it: a quarter more lines
        for name, data in full.items():
            lines = data.splitlines(keepends=True)
            (folder / name).write_bytes(b"".join(lines[: len(lines) * part // 4]))

    import capture.log.opencolumns  # noqa: F401 (numpy's import is not the rows)

    grow(1)
    memory = Memory(home, clock=lambda: t0 + 3600 * 10**6)
    memory.day_capture(day)  # the log opened, the reader's one-time costs paid
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for part in (2, 3, 4):
        grow(part)
        memory.day_capture(day)
    cap = memory.day_capture(day)
    rows = cap.count("snapshots") + cap.count("inputs") + cap.element_count()
    del cap
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert rows == 2000 * 8
    per_row = held / (rows * 3 / 4)  # the rows that came while traced
    assert per_row < 200, f"{per_row:.0f} bytes held per open-day row"
