"""Input enrichment (paper 4.3): re-attribution, click resolution and the keyboard layout map.

1. Stale attribution: recorders tag events with the app they *believed* was focused. Each event
   is re-attributed to the temporally nearest snapshot of its own stream (all streams when the
   event names none or an unknown one), found by binary search; that snapshot's app, window and
   URL are authoritative, and the distance is kept in milliseconds.
2. Anonymous clicks (coordinates, no element name) are resolved against the nearest snapshot's
   element tree (labelled elements only; accessibility nodes before OCR words): the smallest
   element containing the point ("exact"), else the nearest element
   within a 40 px ring measured per axis in the stream's real pixels ("tolerance"), else the
   coarse screen zone ("zone", e.g. "top-left"). Element bounds are normalised 0..1, clicks are
   pixels: without the stream's real screen size nothing can be matched, and the click stays
   "unresolved" rather than being guessed.
3. Key text goes through the operator's keyboard layout map (identity by default).

``enrich_columns`` gives the warehouse's enriched_input table as columns; ``enrich`` makes one
EnrichedInput per event of the same columns for consumers (the routine miner, the MCP server).
The compiler uses the same functions on plain arrays to avoid creating objects it does not need.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import Any

import numpy as np

from af_pipeline.compiler import layouts
from af_pipeline.compiler.native import C as _c
from capture.model import (
    DayCapture,
    Element,
    ElementHit,
    InputEvent,
    Snapshot,
    StreamInfo,
    factorize,
    names_no_element,
)

RING_PX = 40
RESOLUTIONS: tuple[str, ...] = ("recorded", "exact", "tolerance", "zone", "unresolved", "none")


@dataclass(frozen=True, slots=True)
class EnrichedInput:
    event: InputEvent
    snapshot_ref: str | None
    distance_ms: int | None
    stream: str | None
    app: str | None
    window: str | None
    url: str | None
    target_name: str | None
    target_role: str | None
    resolution: str
    key_text: str | None  # typed content after the layout map: sensitive


_REF = attrgetter("ref")


class _Codes(dict[str | None, int]):
    def __missing__(self, key: str | None) -> int:
        return -1  # no stream, or one without snapshots: search all streams


class SnapIndex:
    """Snapshots ordered by (time, stream, ref), as columns, with per-stream time arrays for bisection.

    Made from a day's capture (``of``: the reader's columns when it left the snapshots as columns,
    so no Snapshot object is made) or from Snapshot rows. A "position" is a place in that order;
    ``col(name)`` gives one field of every snapshot by position."""

    __slots__ = ("n", "all_ts", "by_stream", "order", "_values", "_codes", "_cols", "_np")

    def __init__(self, snapshots: Iterable[Snapshot]):
        rows = list(snapshots)
        self._codes: Callable[[str], tuple[np.ndarray, list[Any]]] | None = None
        self._index(len(rows), lambda name: list(map(attrgetter(name), rows)))

    @classmethod
    def of(cls, capture: DayCapture) -> SnapIndex:
        """The index of a day's snapshots, read as columns."""
        self = cls.__new__(cls)
        self._codes = lambda name: capture.codes("snapshots", name)
        self._index(capture.count("snapshots"), lambda name: capture.values("snapshots", (name,))[0],
                    capture.array("snapshots", "ts_us"))
        return self

    def _index(self, n: int, values: Callable[[str], list[Any]], ts_a: Any = None) -> None:
        """``ts_a``: the times as an array, when the caller has one."""
        self.n = n
        self._values = values
        self._cols: dict[str, list[Any]] = {}
        # sort by time (cheap integer keys), then order rows sharing a timestamp by (stream, ref);
        # rows from the log arrive in time order already, which one vectorised pass confirms
        all_ts: list[int] = values("ts_us")
        ts = np.asarray(all_ts if ts_a is None else ts_a, dtype=np.int64)
        order: list[int] | None = None  # None: the rows' own order
        if n > 1 and bool((ts[1:] < ts[:-1]).any()):
            order = sorted(range(n), key=all_ts.__getitem__)  # stable, like the check's order
            all_ts = [all_ts[i] for i in order]
            ts = ts[order]
        # rows sharing a timestamp (several monitors captured at once), each run of them then
        # ordered by (stream, ref)
        same = (np.flatnonzero(ts[1:] == ts[:-1]) + 1).tolist() if n > 1 else []
        if same:
            stream, ref = values("stream"), values("ref")
            order = order if order is not None else list(range(n))
            k = 0
            while k < len(same):
                start = end = same[k]  # rows start - 1 .. end share one timestamp
                k += 1
                while k < len(same) and same[k] == end + 1:
                    end = same[k]
                    k += 1
                order[start - 1:end + 1] = sorted(order[start - 1:end + 1], key=lambda i: (stream[i], ref[i]))
        self.order = order
        self.all_ts = all_ts
        self._cols["ts_us"] = all_ts
        streams = self.col("stream")
        groups: dict[str, tuple[list[int], list[int]]] = {}
        names = set(streams)
        if len(names) == 1:
            groups[streams[0]] = (list(all_ts), list(range(n)))
        elif order is None and self._codes is not None:
            codes, dictionary = self.codes("stream")  # rows in their own order: the reader's codes
            for name in sorted(names):
                positions_a = np.flatnonzero(np.isin(codes, [k for k, v in enumerate(dictionary) if v == name]))
                groups[name] = (ts[positions_a].tolist(), positions_a.tolist())
        else:
            for name in sorted(names):  # a few monitors: one C-speed pass each
                positions = list(compress(range(n), map(name.__eq__, streams)))
                groups[name] = (list(map(all_ts.__getitem__, positions)), positions)
        self.by_stream = groups
        self._np: dict[str | None, tuple[np.ndarray, np.ndarray | None]] | None = None

    def col(self, name: str) -> list[Any]:
        """One Snapshot field of every position (made once; the list is shared: read it only)."""
        got = self._cols.get(name)
        if got is None:
            got = self._values(name)
            if self.order is not None:
                got = list(map(got.__getitem__, self.order))
            self._cols[name] = got
        return got

    def codes(self, name: str) -> tuple[np.ndarray, list[Any]]:
        """One field of every position as DayCapture.codes gives it (codes, values; -1: NULL;
        a value may have two codes): the reader's dictionary when the rows are in their own
        order, else made from col(name)."""
        if self._codes is not None and self.order is None:
            return self._codes(name)
        return factorize(self.col(name))

    def nearest(self, stream: str | None, ts: int) -> tuple[int, int]:
        """(position, |distance| us) of the nearest snapshot, -1 when there is none.

        Ties go to the earlier snapshot: it was on screen when the event happened."""
        g = self.by_stream.get(stream) if stream is not None else None
        if g is None:
            times, positions = self.all_ts, None
        else:
            times, positions = g
        n = len(times)
        if n == 0:
            return -1, 0
        i = bisect_left(times, ts)
        if i == n:
            j = n - 1
        elif i == 0 or times[i] == ts:
            j = i
        else:
            j = i - 1 if ts - times[i - 1] <= times[i] - ts else i
        pos = positions[j] if positions is not None else j
        return pos, abs(ts - times[j])

    def arrays(self) -> dict[str | None, tuple[np.ndarray, np.ndarray | None]]:
        """The time arrays as numpy arrays, made once: per stream (times, positions), and under
        None all snapshots' times (positions are then the indexes themselves)."""
        if self._np is None:
            arrays: dict[str | None, tuple[np.ndarray, np.ndarray | None]] = {
                None: (np.asarray(self.all_ts, dtype=np.int64), None)}
            for name, (times, positions) in self.by_stream.items():
                arrays[name] = (np.asarray(times, dtype=np.int64), np.asarray(positions, dtype=np.int64))
            self._np = arrays
        return self._np

    def attribute(self, ts: Sequence[int], streams: Sequence[str | None] | None) -> tuple[np.ndarray, np.ndarray]:
        """nearest() for many events at once (same answers, vectorised binary search):
        positions (-1: no snapshot at all) and distances in us. ``streams`` may be None when
        the day has a single stream (every event then searches it)."""
        return self.attribute_codes(np.asarray(ts, dtype=np.int64), None if streams is None else factorize(streams))

    def attribute_codes(self, ets: np.ndarray, streams: tuple[np.ndarray, list[Any]] | None
                        ) -> tuple[np.ndarray, np.ndarray]:
        """attribute() of event times as an int64 array and streams as DayCapture.codes gives
        them (codes and values)."""
        n = len(ets)
        pos = np.full(n, -1, dtype=np.int64)
        dist = np.zeros(n, dtype=np.int64)
        if not self.n or n == 0:
            return pos, dist
        arrays = self.arrays()
        names: list[str] = []
        codes: np.ndarray | None = None  # per event: its stream's place in names, -1 for all streams
        if len(self.by_stream) > 1 and streams is not None:
            names = sorted(self.by_stream)
            code = _Codes({name: i for i, name in enumerate(names)})
            # each distinct stream looked up once; code -1 (NULL) picks the -1 appended last
            lut = np.fromiter([*map(code.__getitem__, streams[1]), -1], dtype=np.int64)
            codes = lut[streams[0]]
        if _c is not None:  # the same search in C (_speedups.c): one pass over the events
            try:
                _c.attribute(ets, codes, [*map(arrays.__getitem__, names), arrays[None]], pos, dist)
                return pos, dist
            except _c.Unsupported:  # e.g. times that are not one contiguous int64 array
                pass
        # one stream: "its stream" and "all streams" are the same array
        groups: list[tuple[str | None, np.ndarray]] = [(None, np.arange(n) if codes is None else np.flatnonzero(codes == -1))]
        if codes is not None:
            groups += [(name, np.flatnonzero(codes == i)) for i, name in enumerate(names)]
        for group, members in groups:
            if members.size == 0:
                continue
            t_arr, p_arr = arrays[group]
            m = t_arr.size
            t = ets[members]
            i = np.searchsorted(t_arr, t, side="left")
            # 0 <= i <= m: each side needs one bound only (np.clip costs several times more)
            left = np.maximum(i - 1, 0)
            right = np.minimum(i, m - 1)
            use_left = (i == m) | ((i > 0) & ((t - t_arr[left]) <= (t_arr[right] - t)))
            j = np.where(use_left, left, right)
            pos[members] = p_arr[j] if p_arr is not None else j
            dist[members] = np.abs(t - t_arr[j])
        return pos, dist


def screen_sizes(streams: Sequence[StreamInfo]) -> dict[str, tuple[int, int]]:
    """Real pixel size per stream: the earliest row that states a usable size."""
    out: dict[str, tuple[int, int]] = {}
    for info in sorted(streams, key=lambda s: (s.ts_us, s.stream, s.ref)):
        if info.stream in out:
            continue
        w, h = info.width_px, info.height_px
        if w is not None and h is not None and w > 0 and h > 0:
            out[info.stream] = (w, h)
    return out


def _label(text: str) -> str:
    return " ".join(text.split())


class ElementIndex:
    """The element tree of one snapshot, looked up on demand.

    Elements carry their snapshot's time (capture schema v1), and the log returns them sorted by
    it: a binary search finds a snapshot's elements without touching the rest of the day. Rows
    that are not in time order are grouped by snapshot id once instead, so the answer never
    depends on the order."""

    __slots__ = ("elements", "ts", "ordered", "grouped")

    def __init__(self, elements: Sequence[Element]):
        self.elements = elements
        self.ts: list[int] = [e.ts_us for e in elements]  # a comprehension: faster than attrgetter
        self.ordered = self.ts == sorted(self.ts)  # linear on sorted input, all in C
        self.grouped: dict[str, list[Element]] | None = None

    @classmethod
    def for_snapshots(cls, capture: DayCapture, frame_ids: Iterable[str | None]) -> ElementIndex:
        """The index over the elements of these snapshots: every element of the day when the
        capture holds them, else just those fetched from its element source."""
        if capture.element_source is None:
            return cls(capture.elements)
        return cls(capture.element_source.of_snapshots(sorted({f for f in frame_ids if f is not None})))

    def of(self, frame_id: str | None, ts_us: int) -> Sequence[Element]:
        """Candidate elements of the snapshot (callers still check snapshot_frame_id)."""
        if frame_id is None:
            return ()
        if self.ordered:
            lo = bisect_left(self.ts, ts_us)
            return self.elements[lo:bisect_right(self.ts, ts_us, lo)]
        if self.grouped is None:
            self.grouped = {}
            for e in self.elements:
                self.grouped.setdefault(e.snapshot_frame_id, []).append(e)
        return self.grouped.get(frame_id, ())


_ZONES = (("top-left", "top-center", "top-right"),
          ("middle-left", "center", "middle-right"),
          ("bottom-left", "bottom-center", "bottom-right"))


def resolve_click(
    x: int | None,
    y: int | None,
    size: tuple[int, int] | None,
    elements: Sequence[Element] | Sequence[ElementHit],
    frame_id: str | None = None,
    ref_of: Callable[[Any], str] = _REF,
) -> tuple[str, str | None, str | None]:
    """(resolution, label, role) for an anonymous click at pixel (x, y) on a screen of ``size``
    pixels, against the labelled elements of snapshot ``frame_id`` (all given when None).
    ``ref_of``: an element's ref, the last tie-break (asked only when two elements tie before it)."""
    if x is None or y is None or size is None:
        return "unresolved", None, None
    w, h = size
    nx, ny = x / w, y / h
    if not (0.0 <= nx <= 1.0 and 0.0 <= ny <= 1.0):
        return "unresolved", None, None  # off this screen: the stream is wrong or the size is
    rx, ry = RING_PX / w, RING_PX / h  # the ring, per axis, in this screen's units
    best: Any = None
    best_key: tuple[bool, float, int] | None = None
    ties: list[Any] | None = None  # elements whose key equals best_key, in order: the ref decides
    near: list[tuple[bool, float, float, Any]] = []
    for e in elements:
        # cheapest rejections first: most of a tree is nowhere near the click
        left, width = e.left, e.width
        if left is None or width is None or not (left - rx <= nx <= left + width + rx):
            continue  # not even in the ring (NaN bounds never are)
        top, height = e.top, e.height
        if top is None or height is None or not (top - ry <= ny <= top + height + ry):
            continue
        if width < 0 or height < 0:
            continue
        right, bottom = left + width, top + height
        if (frame_id is not None and e.snapshot_frame_id != frame_id) or not e.text or e.text.isspace():
            continue  # a nameless box is no answer to "what was clicked"
        # a control (accessibility node) names a click better than an OCR word inside it
        ocr = e.source == "ocr"
        if left <= nx <= right and top <= ny <= bottom:
            key = (ocr, width * height, -(e.depth or 0))
            if best_key is None or key < best_key:
                best, best_key, ties = e, key, None
            elif key == best_key:
                ties = [best, e] if ties is None else [*ties, e]
        elif best is None:
            dx = (left - nx if nx < left else (nx - right if nx > right else 0.0)) * w
            dy = (top - ny if ny < top else (ny - bottom if ny > bottom else 0.0)) * h
            near.append((ocr, dx * dx + dy * dy, width * height, e))
    # the smallest key, then the smallest ref (min keeps the first of equals, as a strict < did)
    if best is not None:
        if ties is not None:
            best = min(ties, key=ref_of)
        return "exact", _label(best.text or ""), best.role
    if near:
        first = min(t[:3] for t in near)
        tied = [t[3] for t in near if t[:3] == first]
        e = tied[0] if len(tied) == 1 else min(tied, key=ref_of)
        return "tolerance", _label(e.text or ""), e.role
    row = 0 if ny < 1 / 3 else (1 if ny < 2 / 3 else 2)
    col = 0 if nx < 1 / 3 else (1 if nx < 2 / 3 else 2)
    return "zone", _ZONES[row][col], None


@dataclass(frozen=True, slots=True)
class Attribution:
    """Steps 1 and 2 for every input event of a day, in the capture's row order: what both the
    enriched-input table and the document's input accounting are built from.

    ``pos``: the event's snapshot (a position of ``index``, -1 when the day has none);
    ``dist_us``: its distance from that snapshot; ``targets``: per click event (by row), its
    (resolution, label, role)."""

    index: SnapIndex
    pos: np.ndarray
    pos_list: list[int]  # the same positions as a list
    dist_us: np.ndarray
    targets: dict[int, tuple[str, str | None, str | None]]


def attribute_input(capture: DayCapture, index: SnapIndex | None = None) -> Attribution:
    """Re-attribute every input event and resolve every click of the day (see the module doc)."""
    index = index if index is not None else SnapIndex.of(capture)
    # columns as arrays and codes, not a value per row: only the clicks' own fields are read
    pos_a, dist_a = index.attribute_codes(capture.array("inputs", "ts_us").astype(np.int64, copy=False),
                                          _input_streams(capture, index) if len(index.by_stream) > 1 else None)
    kind_codes, kinds = capture.codes("inputs", "kind")
    is_click = np.zeros(len(kinds) + 1, dtype=bool)  # per kind code; code -1 (no kind) picks the last
    is_click[[k for k, v in enumerate(kinds) if v == "click"]] = True
    clicks = np.flatnonzero(is_click[kind_codes])
    targets: dict[int, tuple[str, str | None, str | None]] = {}
    if clicks.size:
        # the recorder's element name and role as codes: each distinct one is looked at once
        name_codes, names = capture.codes("inputs", "element_name")
        role_codes, roles = capture.codes("inputs", "element_role")
        nc, rc, pos = name_codes[clicks], role_codes[clicks], pos_a[clicks]
        anonymous = np.fromiter(map(names_no_element, [*names, None]), dtype=bool, count=len(names) + 1)[nc]
        # a named click: its recorded name (spaces collapsed) and role, one answer per (name, role)
        named = np.flatnonzero(~anonymous)
        if named.size:
            role_of = [*roles, None]  # by role code; code -1 (no role) picks the None last
            keys, at = np.unique(nc[named] * len(role_of) + rc[named] % len(role_of), return_inverse=True)
            answers = [("recorded", " ".join(names[key // len(role_of)].split()), role_of[key % len(role_of)])
                       for key in keys.tolist()]
            targets.update(zip(clicks[named].tolist(), map(answers.__getitem__, at.tolist()), strict=True))
        # an anonymous click without a snapshot: nothing to look in
        targets.update(dict.fromkeys(clicks[anonymous & (pos < 0)].tolist(), ("unresolved", None, None)))
        anon = np.flatnonzero(anonymous & (pos >= 0))
        if anon.size:
            # element trees are fetched once, for the snapshots under anonymous clicks only
            xs, ys = capture.values_at("inputs", ("x", "y"), clicks[anon].tolist())
            s_stream, s_frame, s_ts = index.col("stream"), index.col("source_frame_id"), index.all_ts
            sizes = screen_sizes(capture.streams)
            at_pos = pos[anon].tolist()
            requests = [(x, y, sizes.get(s_stream[p]), s_frame[p], s_ts[p]) for x, y, p in zip(xs, ys, at_pos, strict=True)]
            columns = _element_columns(capture)
            if columns is not None:
                # the day's trees as columns: numpy keeps the elements in reach of each click, and
                # the click rule runs on those alone (the same answer: it rejects all the others)
                resolved = resolve_in_columns(columns, requests)
            else:
                boxes = ElementIndex.for_snapshots(capture, (s_frame[p] for p in at_pos))
                resolved = [resolve_click(x, y, size, boxes.of(fid, ts), fid) for x, y, size, fid, ts in requests]
            targets.update(zip(clicks[anon].tolist(), resolved, strict=True))
    return Attribution(index, pos_a, pos_a.tolist(), dist_a, targets)


def _input_streams(capture: DayCapture, index: SnapIndex) -> tuple[np.ndarray, list[Any]]:
    """The inputs' streams as codes; an input logged without one (a sync pass of an earlier
    release could read a click before its frame) takes the stream of the day's snapshot of its
    ``source_frame_id``, when the log holds that frame (the log itself is left as it is)."""
    codes, names = capture.codes("inputs", "stream")
    missing = np.flatnonzero(codes < 0)
    if missing.size == 0:
        return codes, names
    (frames,) = capture.values_at("inputs", ("source_frame_id",), missing.tolist())
    stream_of: dict[str, str] = {}
    for frame, stream in zip(index.col("source_frame_id"), index.col("stream"), strict=True):
        if frame is not None and stream is not None:
            stream_of.setdefault(frame, stream)
    names, codes = list(names), codes.copy()
    place = {name: i for i, name in reversed(list(enumerate(names)))}
    for row, frame in zip(missing.tolist(), frames, strict=True):
        stream = stream_of.get(frame) if frame is not None else None
        if stream is not None:
            if stream not in place:
                place[stream] = len(names)
                names.append(stream)
            codes[row] = place[stream]
    return codes, names


def input_values(capture: DayCapture, names: Sequence[str]) -> list[list[Any]]:
    """Columns of the day's input events, in row order (DayCapture.values: no event object is
    made while the reader holds them as columns)."""
    return capture.values("inputs", names)


def input_count(capture: DayCapture) -> int:
    """The day's input events (without making them, when the reader left them as columns)."""
    return capture.count("inputs")


def _element_columns(capture: DayCapture) -> Any:
    """The day's element rows as columns (capture.log.rows.ElementColumns) when its element
    source can give them (a sealed day of one segment), else None."""
    get = getattr(capture.element_source, "columns", None)
    return get() if callable(get) else None


_Click = tuple[int | None, int | None, tuple[int, int] | None, str | None, int]


@dataclass(frozen=True, slots=True)
class _RingPairs:
    """The (click, element) pairs of ring_candidates: ``live`` the clicks with any (their places
    in the request), per pair its click (a place in live) and element row, in click then log
    order; per live click its position (screen fractions)."""

    live: list[int]
    owner: np.ndarray
    elem: np.ndarray
    nx: np.ndarray
    ny: np.ndarray


def _ring_pairs(columns: Any, clicks: Sequence[_Click]) -> _RingPairs | None:
    """Every (click, element of its snapshot's time) pair whose ring-widened bounds contain the
    click: the same tests as resolve_click's first rejections, on numpy arrays of all pairs at
    once; None when there is none."""
    live: list[int] = []
    nxs: list[float] = []
    nys: list[float] = []
    rxs: list[float] = []
    rys: list[float] = []
    times: list[int] = []
    for k, (x, y, size, frame_id, ts_us) in enumerate(clicks):
        if x is None or y is None or size is None or frame_id is None:
            continue
        w, h = size
        nx, ny = x / w, y / h  # exactly as resolve_click computes them
        if not (0.0 <= nx <= 1.0 and 0.0 <= ny <= 1.0):
            continue
        live.append(k)
        nxs.append(nx)
        nys.append(ny)
        rxs.append(RING_PX / w)
        rys.append(RING_PX / h)
        times.append(ts_us)
    if not live:
        return None
    t, nx_a, ny_a = np.asarray(times, dtype=np.int64), np.asarray(nxs), np.asarray(nys)
    if _c is not None:  # the same search in C (_speedups.c), without an array of every candidate
        try:
            got = _c.ring(columns.ts_us, columns.left, columns.top, columns.width, columns.height, t, nx_a, ny_a,
                          np.asarray(rxs), np.asarray(rys))
        except _c.Unsupported:  # e.g. columns that are not contiguous arrays
            got = None
        if got is not None:
            owner, elem = np.frombuffer(got[0], dtype=np.int64), np.frombuffer(got[1], dtype=np.int64)
            return _RingPairs(live, owner, elem, nx_a, ny_a) if owner.size else None
    lo = np.searchsorted(columns.ts_us, t, side="left")
    lens = np.searchsorted(columns.ts_us, t, side="right") - lo
    total = int(lens.sum())
    if total == 0:
        return None
    # every (click, element of its snapshot's time) pair, clicks in order, elements in log order
    owner = np.repeat(np.arange(len(live)), lens)
    elem = np.arange(total) - np.repeat(np.cumsum(lens) - lens - lo, lens)
    left, width = columns.left[elem], columns.width[elem]
    top, height = columns.top[elem], columns.height[elem]
    px, py = nx_a[owner], ny_a[owner]
    prx, pry = np.asarray(rxs)[owner], np.asarray(rys)[owner]
    with np.errstate(invalid="ignore"):
        keep = ((left - prx <= px) & (px <= left + width + prx) & (top - pry <= py) & (py <= top + height + pry)
                & ~(width < 0) & ~(height < 0))
    sel = np.flatnonzero(keep)
    if sel.size == 0:
        return None
    return _RingPairs(live, owner[sel], elem[sel], nx_a, ny_a)


def ring_candidates(columns: Any, clicks: Sequence[_Click]) -> list[list[ElementHit]]:
    """Per click (x, y, screen size, snapshot frame id, snapshot time): the elements of that
    snapshot's time whose bounds, widened by the ring, contain the click, in log order: every
    element resolve_click could answer with. ``columns``: the day's ElementColumns (time-sorted).
    A click resolve_click answers without looking at elements gets none."""
    out: list[list[ElementHit]] = [[] for _ in clicks]
    pairs = _ring_pairs(columns, clicks)
    if pairs is None:
        return out
    wanted = np.unique(pairs.elem)
    rows = dict(zip(wanted.tolist(), columns.hits(wanted.tolist()), strict=True))
    for k, r in zip(pairs.owner.tolist(), pairs.elem.tolist(), strict=True):
        out[pairs.live[k]].append(rows[r])
    return out


def resolve_in_columns(columns: Any, clicks: Sequence[_Click]) -> list[tuple[str, str | None, str | None]]:
    """resolve_click of each click (as ring_candidates takes them) against its snapshot's
    elements in the day's ElementColumns, with the rule's orderings done over all ring pairs at
    once (in C where the package was built with a compiler, else by numpy: _rank): inside a
    box, the smallest (ocr, area, -depth); else the nearest by (ocr, squared pixel distance,
    area). A click whose best two pairs are equal on those keys (the refs decide) and a click
    with no pair are answered by resolve_click itself."""
    out = [resolve_click(x, y, size, (), frame_id) for x, y, size, frame_id, _ts in clicks]
    pairs = _ring_pairs(columns, clicks)
    if pairs is None:
        return out
    wanted = np.unique(pairs.elem)
    # what the rule reads of the rows besides their bounds (those are in pairs already)
    fields = columns.at(wanted.tolist(), ("snapshot_frame_id", "source", "role", "text", "depth"))
    w = np.searchsorted(wanted, pairs.elem)
    named = np.fromiter((bool(t) and not t.isspace() for t in fields["text"]), dtype=bool, count=wanted.size)
    ocr = np.fromiter((s == "ocr" for s in fields["source"]), dtype=bool, count=wanted.size)[w]
    neg_depth = -np.fromiter((d or 0 for d in fields["depth"]), dtype=np.int64, count=wanted.size)[w]
    fids, live = fields["snapshot_frame_id"], pairs.live
    same = np.fromiter((fids[i] == clicks[live[k]][3] for i, k in zip(w.tolist(), pairs.owner.tolist(), strict=True)),
                       dtype=bool, count=w.size)
    cand = same & named[w]
    sizes = [clicks[k][2] or (0, 0) for k in live]  # (every live click has one: _ring_pairs)
    sw = np.asarray([size[0] for size in sizes], dtype=np.float64)  # pixels
    sh = np.asarray([size[1] for size in sizes], dtype=np.float64)
    args = (pairs.owner, pairs.elem, cand, ocr, neg_depth, pairs.nx, pairs.ny, columns.left, columns.top,
            columns.width, columns.height, sw, sh)
    ranked: list[tuple[str, int, bool] | None] | None = None
    if _c is not None:  # the same ranking in C (_speedups.c), one pass over each click's pairs
        try:
            ranked = _c.rank(*args)
        except _c.Unsupported:
            pass
    if ranked is None:
        ranked = _rank(*args)
    for click, got in enumerate(ranked):
        if got is None:
            continue
        resolution, pair, tie = got
        k = live[click]
        x, y, sz, frame_id, _ts = clicks[k]
        if tie:  # two pairs equal on the keys: resolve_click breaks the tie by ref
            hits = columns.hits(pairs.elem[pairs.owner == click].tolist())
            out[k] = resolve_click(x, y, sz, hits, frame_id, columns.ref)
        else:
            row = int(w[pair])
            out[k] = (resolution, _label(fields["text"][row]), fields["role"][row])
    return out


def _rank(owner: np.ndarray, elem: np.ndarray, cand: np.ndarray, ocr: np.ndarray, neg_depth: np.ndarray,
          nx: np.ndarray, ny: np.ndarray, lefts: np.ndarray, tops: np.ndarray, widths: np.ndarray,
          heights: np.ndarray, sw: np.ndarray, sh: np.ndarray) -> list[tuple[str, int, bool] | None]:
    """Per click (``owner``: each pair's, in order; at nx, ny), among its candidate pairs: the
    smallest (ocr, area, -depth) of those whose element's box (``elem``'s place in lefts, tops,
    widths, heights) holds it, else the smallest (ocr, squared pixel distance, area), screens
    being sw x sh pixels. None for a click without a candidate, else (resolution, its pair,
    whether another pair ties it on the keys). Numpy over all pairs."""
    ranked: list[tuple[str, int, bool] | None] = [None] * sw.size
    px, py = nx[owner], ny[owner]
    left, top, width, height = lefts[elem], tops[elem], widths[elem], heights[elem]
    right, bottom = left + width, top + height
    inside = cand & (left <= px) & (px <= right) & (top <= py) & (py <= bottom)
    area = width * height
    has_inside = np.zeros(sw.size, dtype=bool)
    has_inside[owner[inside]] = True
    near = np.flatnonzero(cand & ~has_inside[owner])
    dx = np.where(px[near] < left[near], left[near] - px[near],
                  np.where(px[near] > right[near], px[near] - right[near], 0.0)) * sw[owner[near]]
    dy = np.where(py[near] < top[near], top[near] - py[near],
                  np.where(py[near] > bottom[near], py[near] - bottom[near], 0.0)) * sh[owner[near]]
    exact = np.flatnonzero(inside)
    # the keys of each ranking, least significant first (np.lexsort sorts by the last one first)
    for resolution, at, keys in (("exact", exact, (neg_depth[exact], area[exact], ocr[exact])),
                                 ("tolerance", near, (area[near], dx * dx + dy * dy, ocr[near]))):
        if at.size == 0:
            continue
        order = np.lexsort((*keys, owner[at]))  # by click, then (ocr, area, -depth) or (ocr, d2, area)
        o, keyed = owner[at][order], [k[order] for k in keys]
        first = np.flatnonzero(np.concatenate(([True], o[1:] != o[:-1])))
        # a tie: the next pair of the same click equal on every key
        nxt = np.minimum(first + 1, o.size - 1)
        tied = (nxt != first) & (o[nxt] == o[first])
        for key in keyed:
            tied &= key[nxt] == key[first]
        for click, pair, tie in zip(o[first].tolist(), at[order][first].tolist(), tied.tolist(), strict=True):
            ranked[click] = (resolution, pair, tie)
    return ranked


def enrich(capture: DayCapture, layout: str = "identity", attribution: Attribution | None = None) -> list[EnrichedInput]:
    """Every input event of the day, re-attributed, click-resolved and layout-mapped, in
    (time, stream, ref) order. Never raises on odd rows: what cannot be resolved says so.
    ``attribution``: the day's attribute_input, when the caller has it already."""
    order, cols = _enriched(capture, attribution, layout, typed_text=True)
    inputs = capture.inputs
    return [EnrichedInput(inputs[i], *fields) for i, *fields in zip(
        order, *(cols[f] for f in _FIELDS), strict=True)]


# EnrichedInput's fields after its event, in order: the columns enrich_columns gives beside the
# event's own ref, ts_us and kind
_FIELDS = ("snapshot_ref", "distance_ms", "stream", "app", "window", "url", "target_name", "target_role",
           "resolution", "key_text")


def enrich_columns(capture: DayCapture, attribution: Attribution | None = None, layout: str = "identity",
                   typed_text: bool = True) -> dict[str, list[Any]]:
    """enrich() as columns, without an object per event: the same values in the same (time,
    stream, ref) order, one list per EnrichedInput field, the event's own as ``ref``, ``ts_us``
    and ``kind``. ``typed_text`` False leaves ``key_text`` None (nothing translated)."""
    return _enriched(capture, attribution, layout, typed_text)[1]


def _enriched(capture: DayCapture, attribution: Attribution | None, layout: str,
              typed_text: bool) -> tuple[list[int], dict[str, list[Any]]]:
    """(the events' rows in (time, stream, ref) order, enrich_columns's columns in that order)."""
    att = attribution if attribution is not None else attribute_input(capture)
    ts, streams, refs, kinds = input_values(capture, ("ts_us", "stream", "ref", "kind"))
    keys = list(zip(ts, [s or "" for s in streams], refs, strict=True))
    order = sorted(range(len(ts)), key=keys.__getitem__)
    index = att.index
    pos = [att.pos_list[i] for i in order]  # -1 (no snapshot) picks the None after the last
    ms = ((att.dist_us + 500) // 1000).tolist()

    def of_snapshot(field: str) -> list[Any]:
        values = [*index.col(field), None]
        return [values[p] for p in pos]

    none = ("none", None, None)
    targets = [att.targets.get(i, none) for i in order]
    out: dict[str, list[Any]] = {
        "ref": [refs[i] for i in order], "ts_us": [ts[i] for i in order], "kind": [kinds[i] for i in order],
        "snapshot_ref": of_snapshot("ref"),
        "distance_ms": [ms[i] if p >= 0 else None for i, p in zip(order, pos, strict=True)],
        "stream": of_snapshot("stream"), "app": of_snapshot("app"), "window": of_snapshot("window"),
        "url": of_snapshot("url"),
        "target_name": [t[1] for t in targets], "target_role": [t[2] for t in targets],
        "resolution": [t[0] for t in targets],
    }
    if typed_text:
        (texts,) = input_values(capture, ("text",))
        tbl = layouts.table(layout)
        out["key_text"] = [layouts.translate(texts[i], kinds[i], tbl) if kinds[i] in ("key", "text") else None
                           for i in order]
    else:
        out["key_text"] = [None] * len(order)
    return order, out
