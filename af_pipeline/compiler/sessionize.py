"""Frame segmentation (paper 4.2): dwell, session gap and flicker merge, per monitor stream.

Pure and integer-only: times are UTC microseconds, so sums are exact and no float rounding can
make two runs differ. A stream's rows are ordered by (time, ref) before anything else.

Rules, per stream:
- measured span: a row whose source measured how long the window was shown (Snapshot.end_us,
  ActivityWatch) earns exactly that span, clipped at the next row of the stream so overlapping
  events are never counted twice; the session gap is measured from its end to the next row;
- dwell (instant-style capture, screenpipe): a row earns min(gap to the next row, 90 s);
- session gap: a gap over 300 s earns nothing and closes the frame (the stream's last row also
  earns nothing: there is no next row to measure against);
- flicker merge: A -> B -> A collapses into one A frame when B spans at most 20 s of wall time
  and neither A nor B was closed by a session break. B becomes an interruption of the merged
  frame with its own credited time, which is not added to A's.

Conservation: the credit of every row lands exactly once, in a frame or in an interruption.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, islice, pairwise
from operator import ne, or_

import numpy as np

from capture.model import Snapshot

US = 1_000_000
NO_END = np.iinfo(np.int64).min  # in an ``ends`` array: the row has no source-measured end
_FAR = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Rules:
    dwell_s: int = 90
    gap_s: int = 300
    flicker_s: int = 20


PAPER_RULES = Rules()


class Interruption:
    """A short detour folded into a frame: its rows and the time they earned."""

    __slots__ = ("key", "rows", "start_us", "end_us", "active_us")

    def __init__(self, key: Hashable, rows: list[int], start_us: int, end_us: int, active_us: int):
        self.key = key
        self.rows = rows
        self.start_us = start_us
        self.end_us = end_us
        self.active_us = active_us


class Segment:
    """A frame while it is built: rows are positions in the caller's row arrays."""

    __slots__ = ("stream", "key", "rows", "start_us", "end_us", "active_us", "broken", "interruptions")

    def __init__(self, stream: str, key: Hashable, first: int, start_us: int):
        self.stream = stream
        self.key = key
        self.rows: list[int] = [first]
        self.start_us = start_us
        self.end_us = start_us
        self.active_us = 0
        self.broken = False  # closed by a session gap (or the end of the stream)
        self.interruptions: list[Interruption] = []

    @property
    def wall_us(self) -> int:
        return self.end_us - self.start_us


def credits(ts: Sequence[int] | np.ndarray, rules: Rules = PAPER_RULES,
            ends: Sequence[int] | np.ndarray | None = None) -> tuple[list[int], list[bool]]:
    """Per row: the time it earns (us) and whether a session break follows it.

    ``ends`` (optional, aligned with ``ts``): each row's source-measured end, NO_END for rows
    without one. Rows with an end earn their span (clipped at the next row); the others the
    capped dwell."""
    n = len(ts)
    if ends is None or n == 0:
        if n < 2:
            return [0] * n, [True] * n
        # vectorised: one difference per row, then cap and break masks (integers stay exact)
        delta = np.diff(np.asarray(ts, dtype=np.int64))
        brk = delta > rules.gap_s * US
        credit = np.minimum(delta, rules.dwell_s * US)
        credit[brk] = 0
        return credit.tolist() + [0], brk.tolist() + [True]
    ts_a = np.asarray(ts, dtype=np.int64)
    end_a = np.asarray(ends, dtype=np.int64)
    measured = end_a != NO_END
    nxt = np.empty(n, dtype=np.int64)
    nxt[:-1] = ts_a[1:]
    nxt[-1] = _FAR
    last = np.zeros(n, dtype=bool)
    last[-1] = True
    # instant rows: the paper's dwell (the last row has no next row and earns nothing)
    delta = np.where(last, 0, nxt - ts_a)
    brk_i = last | (delta > rules.gap_s * US)
    credit_i = np.where(brk_i, 0, np.minimum(delta, rules.dwell_s * US))
    # measured rows: their span up to the next row; the gap that breaks runs from their end
    stop = np.minimum(np.maximum(end_a, ts_a), nxt)
    credit_m = stop - ts_a
    after = np.maximum(end_a, ts_a)
    brk_m = last | (np.where(last, 0, nxt - np.minimum(after, nxt)) > rules.gap_s * US)
    credit = np.where(measured, credit_m, credit_i)
    brk = np.where(measured, brk_m, brk_i)
    return credit.tolist(), brk.tolist()


def segment_stream(
    stream: str,
    rows: Sequence[int],
    ts: Sequence[int],
    keys: Sequence[Hashable],
    rules: Rules = PAPER_RULES,
    ends: Sequence[int] | None = None,
) -> list[Segment]:
    """Frames of one stream. ``rows`` are row positions, ``ts``/``keys`` (and ``ends``, see
    credits) indexed by position in ``rows`` (already sorted by time, ref). Returns merged
    frames in time order."""
    stream_ts = list(ts)
    credit, brk = credits(stream_ts, rules, ends)
    return flicker_merge(build_segments(stream, rows, stream_ts, keys, credit, brk), rules)


def build_segments(
    stream: str,
    rows: Sequence[int],
    stream_ts: Sequence[int],
    keys: Sequence[Hashable],
    credit: Sequence[int],
    brk: Sequence[bool],
) -> list[Segment]:
    """The first pass of Algorithm 1: a new segment on each key change or after a break.

    Boundaries are found in one C-speed pass (key change or break after the previous row);
    each segment's active time is a difference of prefix sums, so Python work is per segment,
    not per row."""
    n = len(rows)
    if n == 0:
        return []
    # row i + 1 starts a segment when the key changes or row i is followed by a session break
    cut = map(or_, map(ne, islice(keys, 1, None), keys), brk)
    starts = [0, *compress(range(1, n), cut), n]
    acc = list(accumulate(credit, initial=0))
    raw: list[Segment] = []
    for a, b in pairwise(starts):
        last = b - 1
        seg = Segment(stream, keys[a], rows[a], stream_ts[a])
        if b - a > 1:
            seg.rows = list(rows[a:b])
        seg.active_us = acc[b] - acc[a]
        seg.end_us = stream_ts[last] + credit[last]
        seg.broken = bool(brk[last])
        raw.append(seg)
    return raw


def flicker_merge(raw: list[Segment], rules: Rules = PAPER_RULES) -> list[Segment]:
    """Fold A -> B -> A' into A (B an interruption), left to right, so chains fold too."""
    limit = rules.flicker_s * US
    out: list[Segment] = []
    for seg in raw:
        if len(out) >= 2:
            b = out[-1]
            a = out[-2]
            if (
                a.key == seg.key
                and not a.broken
                and not b.broken
                and b.wall_us <= limit
            ):
                out.pop()
                a.interruptions.append(Interruption(b.key, b.rows, b.start_us, b.end_us, b.active_us))
                # a detour's own detours stay visible on the frame that absorbs it
                a.interruptions.extend(b.interruptions)
                a.rows.extend(seg.rows)
                a.interruptions.extend(seg.interruptions)
                a.active_us += seg.active_us
                a.end_us = seg.end_us
                a.broken = seg.broken
                continue
        out.append(seg)
    return out


def timeline_pieces(ts: Sequence[int], ends: Sequence[int]) -> list[list[tuple[int, int]]]:
    """Measured spans of several streams on ONE timeline: each instant credited once, to the span
    that started last (picking up the phone during desktop work credits the phone, and the
    desktop window again once the phone event ends).

    ``ts`` / ``ends`` are rows in timeline order (time, stream, ref); returns, per row, the
    disjoint [start, end) pieces of its span that no later-starting span covers."""
    starts_u: list[int] = []  # union of the spans seen so far (later starts), sorted, disjoint
    ends_u: list[int] = []
    out: list[list[tuple[int, int]]] = [[] for _ in range(len(ts))]
    for i in range(len(ts) - 1, -1, -1):
        a, b = ts[i], max(ends[i], ts[i])
        if b <= a:
            continue
        lo = bisect_right(ends_u, a)  # first union interval ending after a
        hi = lo
        cur = a
        pieces = out[i]
        while hi < len(starts_u) and starts_u[hi] < b:
            if starts_u[hi] > cur:
                pieces.append((cur, starts_u[hi]))
            cur = max(cur, ends_u[hi])
            hi += 1
        if cur < b:
            pieces.append((cur, b))
        new_start = min(a, starts_u[lo]) if hi > lo else a
        new_end = max(b, ends_u[hi - 1]) if hi > lo else b
        starts_u[lo:hi] = [new_start]
        ends_u[lo:hi] = [new_end]
    return out


def ends_of(snapshots: Sequence[Snapshot]) -> list[int] | None:
    """The ``ends`` argument of credits for these rows, None when no row has a measured end."""
    if all(s.end_us is None for s in snapshots):
        return None
    return [NO_END if s.end_us is None else s.end_us for s in snapshots]


def segment(
    snapshots: Sequence[Snapshot],
    key_of: Callable[[Snapshot], Hashable] = lambda s: (s.app, None),
    rules: Rules = PAPER_RULES,
) -> list[Segment]:
    """Frames of a set of snapshots, every stream segmented on its own, ordered by
    (start, stream, first ref). Row positions refer to ``snapshots`` as given."""
    by_stream: dict[str, list[int]] = {}
    for i, s in enumerate(snapshots):
        by_stream.setdefault(s.stream, []).append(i)
    frames: list[Segment] = []
    for stream in sorted(by_stream):
        idx = sorted(by_stream[stream], key=lambda i: (snapshots[i].ts_us, snapshots[i].ref))
        frames.extend(
            segment_stream(
                stream,
                idx,
                [snapshots[i].ts_us for i in idx],
                [key_of(snapshots[i]) for i in idx],
                rules,
                ends_of([snapshots[i] for i in idx]),
            )
        )
    frames.sort(key=lambda f: (f.start_us, f.stream, snapshots[f.rows[0]].ref))
    return frames
