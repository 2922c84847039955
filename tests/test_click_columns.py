"""Anonymous clicks resolved from a sealed day's element columns answer as the element-tree rule.

A sealed day's element trees are read as columns (capture.log.rows.ElementColumns) and numpy
keeps, for each click, the elements whose ring-widened bounds contain it (enrich.ring_candidates);
resolve_click then runs on those alone. These tests hold that to resolve_click over the whole
tree of the snapshot, on random trees and clicks whose coordinates sit on the ring's and the
boxes' edges (test_lazy_elements holds whole sealed days read this way to the full read).
"""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import enrich
from af_pipeline.compiler.enrich import (
    RING_PX,
    ElementIndex,
    resolve_click,
    resolve_in_columns,
    ring_candidates,
)
from capture.log.rows import ElementColumns
from capture.log.schema import COLUMNS, NAMES, sort_key
from capture.model import Element, ElementHit

_ARROW = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_()}
# powers of two divide exactly, so clicks land on ring and box edges to the last bit
SIZES = [(1024, 512), (2048, 1024), (1024, 512), (1920, 1080)]
# snapshot frame id -> its time; two snapshots share a time (two monitors captured at once)
SNAPS = {"1": 1_000, "2": 2_000, "3": 2_000, "4": 3_000}


def _write(elements: list[Element], path: Path) -> Path:
    schema = pa.schema([(n, _ARROW[t]) for n, t in COLUMNS["elements"].items()])
    table = pa.table({n: [getattr(e, n) for e in elements] for n in NAMES["elements"]}, schema=schema)
    pq.write_table(table, path)
    return path


# bounds on a grid of screen pixels, so ring and box edges fall exactly on click coordinates
_px = st.integers(min_value=-60, max_value=1100)
_maybe = st.one_of(st.none(), st.integers(min_value=-5, max_value=400), st.integers(min_value=-5, max_value=-1))


@st.composite
def trees(draw):
    w, h = draw(st.sampled_from(SIZES))
    n = draw(st.integers(min_value=0, max_value=30))
    out = []
    for i in range(n):
        fid = draw(st.sampled_from(sorted(SNAPS)))
        left, top = draw(st.one_of(st.none(), _px)), draw(st.one_of(st.none(), _px))
        width, height = draw(_maybe), draw(_maybe)
        out.append(Element(
            ref=f"e:{i:03d}", ts_us=SNAPS[fid], snapshot_frame_id=fid,
            source=draw(st.sampled_from(["accessibility", "ocr"])),
            role=draw(st.sampled_from([None, "AXButton", "AXLink"])),
            text=draw(st.sampled_from([None, "", "  ", "Save", "Open  file", "Save"])),
            parent_ref=None, depth=draw(st.one_of(st.none(), st.integers(0, 4))),
            left=None if left is None else left / w, top=None if top is None else top / h,
            width=None if width is None else width / w, height=None if height is None else height / h,
        ))
    out.sort(key=sort_key("elements"))  # the log's order
    clicks = []
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        size = draw(st.sampled_from([(w, h), (w, h), (w, h), None]))
        fid = draw(st.sampled_from([None, *sorted(SNAPS), *sorted(SNAPS)]))
        x, y = draw(st.integers(-20, w + 20)), draw(st.integers(-20, h + 20))
        boxed = [e for e in out if e.left is not None and e.top is not None]
        if boxed and draw(st.booleans()):
            # on or next to an edge of an element's box or ring
            e = draw(st.sampled_from(boxed))
            edge = st.sampled_from([-RING_PX - 1, -RING_PX, -RING_PX + 1, -1, 0, 1])
            x = round(e.left * w) + draw(st.one_of(edge, st.just(round((e.width or 0) * w) + RING_PX)))
            y = round(e.top * h) + draw(st.one_of(edge, st.just(round((e.height or 0) * h) + RING_PX)))
            fid = draw(st.sampled_from([e.snapshot_frame_id, e.snapshot_frame_id, fid]))
        clicks.append((draw(st.one_of(st.just(x), st.none())) if draw(st.integers(0, 9)) == 0 else x, y, size, fid))
    return out, clicks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=trees())
def test_columns_resolve_every_click_as_the_element_tree_rule(case, tmp_path):
    elements, clicks = case
    columns = ElementColumns.read(_write(elements, tmp_path / "elements.parquet"))
    assert columns is not None
    boxes = ElementIndex(elements)
    requests = [(x, y, size, fid, SNAPS.get(fid or "", 0)) for x, y, size, fid in clicks]
    near = ring_candidates(columns, requests)
    row = {id(e): i for i, e in enumerate(elements)}  # the file holds the elements in this order
    for (x, y, size, fid, ts), got in zip(requests, near, strict=True):
        tree = list(boxes.of(fid, ts))
        assert resolve_click(x, y, size, got, fid, columns.ref) == resolve_click(x, y, size, tree, fid)
        # the candidates are the tree's elements in reach of the ring, in log order
        if x is not None and y is not None and size is not None and fid is not None \
                and 0 <= x / size[0] <= 1 and 0 <= y / size[1] <= 1:
            nx, ny, rx, ry = x / size[0], y / size[1], RING_PX / size[0], RING_PX / size[1]
            assert got == [ElementHit.of(e, row[id(e)]) for e in tree if e.left is not None and e.width is not None and e.top is not None
                           and e.height is not None and e.left - rx <= nx <= e.left + e.width + rx
                           and e.top - ry <= ny <= e.top + e.height + ry and e.width >= 0 and e.height >= 0]
        else:
            assert got == []



def _full_key_rule(x, y, size, tree, fid):
    """The click rule written as one ordering of whole keys, ref included (what resolve_click
    computes while asking for a ref only to break a tie)."""
    if x is None or y is None or size is None:
        return "unresolved", None, None
    w, h = size
    nx, ny, rx, ry = x / w, y / h, RING_PX / w, RING_PX / h
    if not (0 <= nx <= 1 and 0 <= ny <= 1):
        return "unresolved", None, None
    inside, near = [], []
    for e in tree:
        if None in (e.left, e.top, e.width, e.height) or e.width < 0 or e.height < 0:
            continue
        if not (e.left - rx <= nx <= e.left + e.width + rx and e.top - ry <= ny <= e.top + e.height + ry):
            continue
        if (fid is not None and e.snapshot_frame_id != fid) or not e.text or e.text.isspace():
            continue
        r, b = e.left + e.width, e.top + e.height
        if e.left <= nx <= r and e.top <= ny <= b:
            inside.append(((e.source == "ocr", e.width * e.height, -(e.depth or 0), e.ref), e))
        else:
            dx = (e.left - nx if nx < e.left else (nx - r if nx > r else 0.0)) * w
            dy = (e.top - ny if ny < e.top else (ny - b if ny > b else 0.0)) * h
            near.append(((e.source == "ocr", dx * dx + dy * dy, e.width * e.height, e.ref), e))
    for resolution, found in (("exact", inside), ("tolerance", near)):
        if found:
            e = min(found, key=lambda t: t[0])[1]
            return resolution, " ".join((e.text or "").split()), e.role
    return "zone", None, None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=trees(), flip=st.booleans())
def test_ties_between_equal_elements_go_to_the_smallest_ref(case, flip, tmp_path):
    # two elements as good as each other (same kind, box and depth) are told apart by their refs
    # alone: resolve_click asks for a ref only then, and must answer as the whole-key ordering
    elements, clicks = case
    tree = list(reversed(elements)) if flip else elements  # any order of the tree, same answer
    for x, y, size, fid in clicks:
        got = resolve_click(x, y, size, tree, fid)
        want = _full_key_rule(x, y, size, tree, fid)
        assert got[0] == want[0]
        if want[0] != "zone":
            assert got == want


def test_a_tie_is_broken_by_the_ref_read_from_the_columns(tmp_path):
    same = {"ts_us": 1_000, "snapshot_frame_id": "1", "source": "accessibility", "role": "AXButton",
            "parent_ref": None, "depth": 2, "left": 0.25, "top": 0.25, "width": 0.5, "height": 0.5}
    elements = [Element(ref="e:1", text="First", **same), Element(ref="e:2", text="Second", **same)]
    columns = ElementColumns.read(_write(elements, tmp_path / "elements.parquet"))
    assert columns is not None
    near = ring_candidates(columns, [(512, 256, (1024, 512), "1", 1_000)])[0]
    assert [h.row for h in near] == [0, 1]
    assert resolve_click(512, 256, (1024, 512), near, "1", columns.ref) == ("exact", "First", "AXButton")
    assert resolve_click(512, 256, (1024, 512), near[::-1], "1", columns.ref) == ("exact", "First", "AXButton")


# resolve_in_columns's search and ranking run in C where the package was built with a compiler
# (_speedups.c), else in numpy: the properties below hold each way
IN_C = pytest.mark.parametrize("in_c", [True, False], ids=["C", "numpy"])


@IN_C
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=trees())
def test_clicks_ranked_over_all_pairs_at_once_answer_as_the_rule(in_c, case, tmp_path):
    """resolve_in_columns ranks every click's ring pairs at once (ties left to resolve_click):
    each answer is resolve_click's over the whole tree of the click's snapshot."""
    _assert_ranked_as_the_rule(in_c, *case, tmp_path)


def _assert_ranked_as_the_rule(in_c, elements, clicks, tmp_path):
    if in_c and enrich._c is None:
        pytest.skip("the C module was not built (no C compiler)")
    columns = ElementColumns.read(_write(elements, tmp_path / "elements.parquet"))
    assert columns is not None
    boxes = ElementIndex(elements)
    requests = [(x, y, size, fid, SNAPS.get(fid or "", 0)) for x, y, size, fid in clicks]
    with patch.object(enrich, "_c", enrich._c if in_c else None):
        got = resolve_in_columns(columns, requests)
    assert got == [resolve_click(x, y, size, list(boxes.of(fid, ts)), fid) for x, y, size, fid, ts in requests]


@IN_C
@pytest.mark.parametrize("file_order", ["log", "refs reversed"])
def test_a_tie_in_the_columns_goes_to_the_smallest_ref(in_c, file_order, tmp_path):
    # a file of one time out of ref order (sealed under another order) still answers by the ref
    if in_c and enrich._c is None:
        pytest.skip("the C module was not built (no C compiler)")
    same = {"ts_us": 1_000, "snapshot_frame_id": "1", "source": "accessibility", "role": "AXButton",
            "parent_ref": None, "depth": 2, "left": 0.25, "top": 0.25, "width": 0.5, "height": 0.5}
    elements = [Element(ref="e:1", text="First", **same), Element(ref="e:2", text="Second", **same)]
    columns = ElementColumns.read(_write(elements if file_order == "log" else elements[::-1],
                                         tmp_path / "elements.parquet"))
    with patch.object(enrich, "_c", enrich._c if in_c else None):
        got = resolve_in_columns(columns, [(512, 256, (1024, 512), "1", 1_000), (1000, 500, (1024, 512), "1", 1_000),
                                           (512, 256, None, "1", 1_000), (300, 110, (1024, 512), "1", 1_000)])
    assert got == [("exact", "First", "AXButton"), ("zone", "bottom-right", None), ("unresolved", None, None),
                   ("tolerance", "First", "AXButton")]


@IN_C
def test_each_key_of_the_rankings_decides_in_its_turn(in_c, tmp_path):
    """Inside boxes: a control before an OCR word, then the smaller box, then the deeper element;
    near boxes: a control before an OCR word, then the nearer, then the smaller."""
    if in_c and enrich._c is None:
        pytest.skip("the C module was not built (no C compiler)")
    size = (1000, 1000)

    def el(ref, fid, text, left, top, width, height, source="accessibility", depth=0):
        return Element(ref=ref, ts_us=SNAPS[fid], snapshot_frame_id=fid, source=source, role="AXButton", text=text,
                       parent_ref=None, depth=depth, left=left, top=top, width=width, height=height)

    elements = sorted([
        # snapshot 1: boxes around (500, 500)
        el("a:1", "1", "OCR word", 0.45, 0.45, 0.02, 0.2, source="ocr"),
        el("a:2", "1", "Big", 0.3, 0.3, 0.4, 0.4),
        el("a:3", "1", "Shallow", 0.4, 0.4, 0.2, 0.2, depth=1),
        el("a:4", "1", "Deep", 0.4, 0.4, 0.2, 0.2, depth=3),
        # snapshot 2: nothing holds (500, 500); boxes 10 px and 20 px away
        el("b:1", "2", "Near OCR", 0.51, 0.49, 0.01, 0.01, source="ocr"),
        el("b:2", "2", "Far", 0.52, 0.49, 0.01, 0.01),
        el("b:3", "2", "Near big", 0.51, 0.40, 0.05, 0.2),
        el("b:4", "2", "Near small", 0.51, 0.45, 0.01, 0.1),
    ], key=sort_key("elements"))
    columns = ElementColumns.read(_write(elements, tmp_path / "elements.parquet"))
    with patch.object(enrich, "_c", enrich._c if in_c else None):
        got = resolve_in_columns(columns, [(500, 500, size, "1", SNAPS["1"]), (500, 500, size, "2", SNAPS["2"])])
    assert got == [("exact", "Deep", "AXButton"), ("tolerance", "Near small", "AXButton")]
    assert got == [resolve_click(500, 500, size, [e for e in elements if e.snapshot_frame_id == fid], fid)
                   for fid in ("1", "2")]


@st.composite
def crowded(draw):
    """Many elements around one point of one snapshot (boxes nested, overlapping, next to each
    other), and clicks at and near that point: the rule's rankings decide between many pairs."""
    w, h = draw(st.sampled_from(SIZES))
    cx, cy = draw(st.integers(100, w - 100)), draw(st.integers(100, h - 100))
    out = []
    for i in range(draw(st.integers(1, 12))):
        x0, y0 = cx + draw(st.integers(-90, 10)), cy + draw(st.integers(-90, 10))
        bw, bh = draw(st.sampled_from([0, 5, 20, 40, 80, 100])), draw(st.sampled_from([0, 5, 20, 40, 80, 100]))
        out.append(Element(
            ref=f"e:{i:03d}", ts_us=SNAPS["1"], snapshot_frame_id=draw(st.sampled_from(["1", "1", "1", "9"])),
            source=draw(st.sampled_from(["accessibility", "ocr"])), role=draw(st.sampled_from([None, "AXButton"])),
            text=draw(st.sampled_from(["Save", "Open", " ", None, "Save as"])), parent_ref=None,
            depth=draw(st.one_of(st.none(), st.integers(0, 3))),
            left=x0 / w, top=y0 / h, width=bw / w, height=bh / h))
    out.sort(key=sort_key("elements"))
    clicks = [(cx + draw(st.integers(-60, 60)), cy + draw(st.integers(-60, 60)), (w, h), "1")
              for _ in range(draw(st.integers(1, 6)))]
    return out, clicks


@IN_C
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=crowded())
def test_crowded_clicks_ranked_at_once_answer_as_the_rule(in_c, case, tmp_path):
    _assert_ranked_as_the_rule(in_c, *case, tmp_path)
