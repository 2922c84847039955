"""compile_day: one local day of capture -> the schema v1 document (paper sections 3 and 4).

Pure and deterministic: no wall clock (``generated_at`` is added by emit callers), no hash-order
dependence (every output list is sorted with a total key), integer microseconds throughout and
floats only at the edge, rounded explicitly. The hot loops work on plain lists indexed by
snapshot position (see enrich.SnapIndex) instead of building an object per row.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Protocol, TypeVar, cast

import numpy as np

from af_pipeline.about import GENERATOR
from af_pipeline.compiler import layouts
from af_pipeline.compiler.away import away_spans
from af_pipeline.compiler.categories import CategoryRules, categorize, default_rules
from af_pipeline.compiler.document import (
    SCHEMA_VERSION,
    common_ref_ids,
    encode_refs,
    id_runs,
    id_runs_of_groups,
)
from af_pipeline.compiler.enrich import (
    RING_PX,
    Attribution,
    SnapIndex,
    attribute_input,
    input_count,
    input_values,
    screen_sizes,
)
from af_pipeline.compiler.sessionize import (
    NO_END,
    PAPER_RULES,
    Rules,
    Segment,
    build_segments,
    credits,
    flicker_merge,
    timeline_pieces,
)
from capture.model import CAPTURE_SCHEMA_VERSION, DayCapture
from capture.timeutil import US, day_bounds, to_datetime, zone

_T = TypeVar("_T")
MIN_US = 60 * US
_INF = 1 << 62  # beyond any time in us: the edges of a whole day's "window" in _coverage
# recorders that capture no input events at all: a day of theirs has no input, not an idle user
NO_INPUT_RECORDERS = frozenset({"activitywatch"})
TOP_WINDOWS = 3
TOP_CLICKS = 5
# input volume fields, in the order documents list them
VOLUME = ("keys", "text", "chars", "clicks", "scrolls", "copies", "pastes")
_K_KEYS, _K_TEXT, _K_CHARS, _K_CLICKS, _K_SCROLLS, _K_COPIES, _K_PASTES, _K_OTHER = range(8)
_COLS = 8
_K_CLIPBOARD = 100  # resolved to copies / pastes / other by the clipboard operation


class _Codes(dict[str, int]):
    def __missing__(self, key: str) -> int:
        return -1  # pointer motion and kinds we do not know: neither volume nor interaction


_KIND_CODE = _Codes(key=_K_KEYS, text=_K_TEXT, click=_K_CLICKS, scroll=_K_SCROLLS, clipboard=_K_CLIPBOARD,
                    app_switch=_K_OTHER, window_focus=_K_OTHER, move=-1)


@dataclass(frozen=True)
class CompileOptions:
    min_minutes: float = 0.0  # frames shorter are omitted; the omission is reported
    include_typed_text: bool = False  # operator opt-in at build time (emit needs its own)
    layout: str = "identity"  # keyboard map name (af_pipeline/compiler/layouts)
    categories: CategoryRules | None = None  # tier-2 category rules (compiler/categories.py); None: defaults
    # A part of a day, [start, end) in UTC us: only time inside it is counted. The capture holds
    # the rows inside it plus context rows (window_context) whose credit crosses its edges; each
    # row's credited interval is clipped to it. None: the whole capture (a day's document).
    window: tuple[int, int] | None = None


def _minutes(us: int) -> float:
    return round(us / MIN_US, 2)


def _seconds(us: int) -> int:
    return (us + US // 2) // US


class _Clock:
    """Local wall-clock text in the user's zone, DST-aware."""

    def __init__(self, tz: str, day: str):
        self.zone = zone(tz)
        # within one day the UTC offset is usually constant: then HH:MM:SS is arithmetic
        start, end = day_bounds(day, self.zone)
        off_a = to_datetime(start, self.zone).utcoffset()
        off_b = to_datetime(end, self.zone).utcoffset()
        self.offset_s: int | None = None
        self.lo = self.hi = 0
        if off_a is not None and off_a == off_b:
            self.offset_s = int(off_a.total_seconds())
            self.lo, self.hi = start, end

    def hms(self, ts_us: int) -> str:
        if self.offset_s is not None and self.lo <= ts_us < self.hi:
            s = (ts_us // US + self.offset_s) % 86_400
            return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
        return to_datetime(ts_us, self.zone).strftime("%H:%M:%S")

    def iso(self, ts_us: int) -> str:
        return to_datetime(ts_us, self.zone).isoformat(timespec="seconds")


def _entities() -> tuple[Callable[[str | None], str | None], Callable[[str], Any]]:
    from af_pipeline.compiler.entities import surface_of, type_url  # only browser rows need it

    return surface_of, type_url


def _key_char(text: str) -> str:
    return text if len(text) == 1 else f"[{text}]"


def compile_day(capture: DayCapture, options: CompileOptions = CompileOptions(),
                rules: Rules = PAPER_RULES) -> dict[str, Any]:
    """The schema v1 document of one day (or of any window a DayCapture holds), without
    ``generated_at``: segmentation per stream, enrichment-backed input accounting, click
    resolution, page typing, ledger, coverage, blind spots and provenance (docs/document-schema.md).

    Any row order gives the same document; rows in the log's order (capture/log.py) are the
    fast path. Raises ValueError for a negative floor and UserError for an unknown layout.

    The phases, each callable on its own (the warehouse runs them as separate steps and hands
    each one's result to the next): frame_day (timeline, credit, frames and their rows),
    enrich.attribute_input (input attribution and click resolution), then assemble (input per
    frame, pages, presence, ledger, coverage, blind spots, the document)."""
    _check_floor(options)
    return _without_gc(_compile, capture, options, rules)


def _compile(capture: DayCapture, options: CompileOptions, rules: Rules) -> dict[str, Any]:
    framing = _frame_day(capture, rules, options.window)
    return _assemble(capture, framing, attribute_input(capture, framing.rows.index), options, rules, None)


def _check(options: CompileOptions) -> dict[int, str]:
    """The options' keyboard map; ValueError for a floor that is not a finite number >= 0,
    UserError for an unknown layout."""
    _check_floor(options)
    return layouts.table(options.layout)


def _check_floor(options: CompileOptions) -> None:
    # NaN passes a "< 0" test; the floor is written into the document, whose floats are all finite
    if not (options.min_minutes >= 0 and math.isfinite(options.min_minutes)):
        raise ValueError(f"min_minutes must be a finite number >= 0, not {options.min_minutes}")


def _without_gc(fn: Callable[..., _T], *args: Any) -> _T:
    # The compile allocates thousands of containers that all stay alive until it returns (the
    # document) and makes no reference cycles, so the cyclic collector's passes during it find
    # nothing to free; on a busy day they cost several ms. Pause it, and restore it as found.
    paused = gc.isenabled()
    gc.disable()
    try:
        return fn(*args)
    finally:
        if paused:
            gc.enable()


# -- phase 1: the day's rows in timeline order and their (app, site) keys --------------------

@dataclass(frozen=True, slots=True)
class DayRows:
    index: SnapIndex  # snapshots in (time, stream, ref) order: "position" is a place in its order
    apps: list[str]
    urls: list[str | None]
    sites: list[str | None]  # the site part of each row's key (entities.surface_of of the URL)
    type_url: Callable[[str], Any] | None  # page typing, None when the day has no URL at all
    shared: tuple[str, list[int]] | None  # every ref one prefix plus an integer: (prefix, ids)
    site_codes: np.ndarray  # per row: its site's place in site_names, -1 for none
    site_names: list[str]  # the day's distinct sites

    def evidence(self, rows: list[int]) -> dict[str, Any]:
        if self.shared is not None:
            return {"snapshots": [{"prefix": self.shared[0], "ids": id_runs(list(map(self.shared[1].__getitem__, rows)))}]}
        refs = self.index.col("ref")
        return {"snapshots": encode_refs([refs[p] for p in rows])}

    def evidences(self, groups: list[list[int]]) -> list[dict[str, Any]]:
        """[evidence(rows) for rows in groups] (no group empty): when every ref is one prefix and
        an id, the ids' runs of all groups in one pass (document.id_runs_of_groups)."""
        if self.shared is not None and groups:
            prefix, ids = self.shared
            all_runs = id_runs_of_groups(ids, groups)
            if all_runs is not None:
                return [{"snapshots": [{"prefix": prefix, "ids": runs}]} for runs in all_runs]
        return [self.evidence(rows) for rows in groups]


def _day_rows(capture: DayCapture) -> DayRows:
    index = SnapIndex.of(capture)
    apps = index.col("app")
    shared = common_ref_ids(index.col("ref"))
    sites: list[str | None] = [None] * index.n
    urls = index.col("url")
    type_url = None
    site_codes = np.full(index.n, -1, dtype=np.int64)
    site_names: list[str] = []
    if any(urls):
        site_of, type_url = _entities()
        # once per distinct URL (a pure function, so the set's order cannot matter)
        url_codes, url_values = index.codes("url")  # the distinct URLs (a value may come twice)
        site_map = {url: site_of(url) for url in url_values if url}
        sites = [site_map[u] if u else None for u in urls]
        # the sites as codes, through the URLs' codes
        place: dict[str, int] = {}
        lut: list[int] = []
        for u in url_values:
            site = site_map[u] if u else None
            lut.append(-1 if site is None else place.setdefault(site, len(place)))
        site_codes = np.asarray([*lut, -1], dtype=np.int64)[url_codes]  # code -1 (no URL) picks the -1 last
        site_names = list(place)
    return DayRows(index, apps, urls, sites, type_url, shared, site_codes, site_names)


# -- phase 2: credit per row (dwell, gap, measured spans, afk) and the frames ---------------

@dataclass(frozen=True, slots=True)
class Timeline:
    streams: list[str]
    arrays: dict[str | None, tuple[np.ndarray, np.ndarray | None]]  # SnapIndex.arrays()
    ends: np.ndarray | None  # source-measured ends per row (NO_END: none), None when no row has one
    presence_src: dict[str, str]  # stream -> its presence source (see _presence)
    not_afk: dict[str, np.ndarray]  # stream -> merged not-afk intervals, for afk-governed streams
    away: np.ndarray  # per row: credited time outside not-afk (taken out of its credit)
    credit: list[int]  # per row: the time it earns on its own stream, us
    credit_a: np.ndarray
    brk_a: np.ndarray  # per row: a session break follows it
    srank: list[int]  # per row: its rank within its stream (adjacency = "next row of stream")
    prev_a: np.ndarray  # per row: the previous row of the same stream, -1 for none
    segments: list[Segment]  # the frames, ordered by (start, stream, first ref)
    # a part of a day (CompileOptions.window): [start, end) us, and per row the start of its
    # credited interval clipped to it (credit is then the clipped length); None for a whole day
    window: tuple[int, int] | None = None
    start_a: np.ndarray | None = None


def _clip(ts: np.ndarray, credit: np.ndarray, window: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per row: its credited interval [ts, ts + credit) clipped to the window, as (start, length)."""
    lo, hi = window
    a = np.clip(ts, lo, hi)
    return a, np.clip(ts + credit, lo, hi) - a


class EdgeRow(Protocol):
    """What window_context reads of a snapshot row."""

    @property
    def ts_us(self) -> int: ...
    @property
    def stream(self) -> str: ...
    @property
    def end_us(self) -> int | None: ...


def window_context(snapshots: Sequence[EdgeRow], first: int, stop: int, start_us: int, end_us: int,
                   rules: Rules = PAPER_RULES) -> tuple[list[int], list[int]]:
    """The context a part of a day [start_us, end_us) needs besides its rows (positions
    first..stop-1 of time-ordered ``snapshots``): positions before it and after it.

    Before: each stream's last row before the window (its credit may run into the window), and
    any row met on the way whose measured span reaches into it. After: each stream's first row at or after the
    window's end, unless more than a session gap after it (it decides the credit of the stream's
    last row inside the window; a row further on could not). Compiled with
    ``CompileOptions(window=(start_us, end_us))``, the rows inside the window earn what they
    earn in the whole day, clipped to it."""
    streams = {s.stream for s in snapshots}
    seen: set[str] = set()
    before: list[int] = []
    i = first - 1
    while i >= 0 and len(seen) < len(streams):
        s = snapshots[i]
        if s.stream not in seen or (s.end_us is not None and s.end_us > start_us):
            before.append(i)
            seen.add(s.stream)
        i -= 1
    seen.clear()
    after: list[int] = []
    limit = end_us + rules.gap_s * US
    i = stop
    while i < len(snapshots) and len(seen) < len(streams) and snapshots[i].ts_us <= limit:
        s = snapshots[i]
        if s.stream not in seen:
            after.append(i)
            seen.add(s.stream)
        i += 1
    return sorted(before), after


def _timeline(capture: DayCapture, rows: DayRows, rules: Rules,
              window: tuple[int, int] | None = None) -> Timeline:
    index = rows.index
    n = index.n
    apps, sites = rows.apps, rows.sites
    segments: list[Segment] = []
    streams = sorted(index.by_stream)
    arrays = index.arrays()
    # source-measured ends (ActivityWatch): such rows earn their span, not the capped dwell
    ends_np: np.ndarray | None = None
    ends = index.col("end_us")
    if ends.count(None) != n:  # a C-speed pass
        ends_np = np.fromiter((NO_END if e is None else e for e in ends), dtype=np.int64, count=n)
    # presence (ActivityWatch afk): on a stream it governs, only not-afk time is active time
    presence_src, not_afk = _presence(capture, streams)
    away_a = np.zeros(n, dtype=np.int64)
    start_a: np.ndarray | None = None
    if len(streams) == 1:  # one stream: positions are the stream's own order
        ts, pos_list = index.by_stream[streams[0]]
        credit, brk = credits(ts, rules, ends_np)
        credit_a = np.asarray(credit, dtype=np.int64)
        starts = arrays[None][0]
        if window is not None:
            start_a, credit_a = _clip(starts, credit_a, window)
            starts = start_a
            credit = credit_a.tolist()
        if streams[0] in not_afk:
            away_a = _outside(starts, credit_a, not_afk[streams[0]])
            credit_a = credit_a - away_a
            credit = credit_a.tolist()
        srank = list(range(n))
        prev_a = np.arange(-1, n - 1, dtype=np.int64)
        segments = flicker_merge(build_segments(streams[0], pos_list, ts, list(zip(apps, sites, strict=True)),
                                                credit, brk), rules)
        brk_a = np.asarray(brk, dtype=bool)
    else:
        credit_a = np.zeros(n, dtype=np.int64)
        brk_a = np.ones(n, dtype=bool)
        srank_a = np.zeros(n, dtype=np.int64)
        prev_a = np.full(n, -1, dtype=np.int64)
        if window is not None:
            start_a = np.zeros(n, dtype=np.int64)
        for stream in streams:
            ts, pos_list = index.by_stream[stream]
            ts_a, pa = cast(tuple[np.ndarray, np.ndarray], arrays[stream])
            c, b = credits(ts_a, rules, ends_np[pa] if ends_np is not None else None)
            starts = ts_a
            if start_a is not None and window is not None:
                starts, c_w = _clip(ts_a, np.asarray(c, dtype=np.int64), window)
                start_a[pa] = starts
                c = c_w.tolist()
            if stream in not_afk:
                c_a = np.asarray(c, dtype=np.int64)
                away = _outside(starts, c_a, not_afk[stream])
                away_a[pa] = away
                c = (c_a - away).tolist()
            credit_a[pa] = c
            brk_a[pa] = b
            srank_a[pa] = np.arange(pa.size)
            prev_a[pa[1:]] = pa[:-1]
            keys = list(zip(map(apps.__getitem__, pos_list), map(sites.__getitem__, pos_list), strict=True))
            segments.extend(flicker_merge(build_segments(stream, pos_list, ts, keys, c, b), rules))
        credit, srank = credit_a.tolist(), srank_a.tolist()
    refs = index.col("ref")
    segments.sort(key=lambda f: (f.start_us, f.stream, refs[f.rows[0]]))
    return Timeline(streams, arrays, ends_np, presence_src, not_afk, away_a, credit, credit_a, brk_a,
                    srank, prev_a, segments, window, start_a)


@dataclass(frozen=True, slots=True)
class Slots:
    """Owner slot per row: frames take slots 0..F-1, their interruptions the ones after."""

    keys: list[tuple[str, str | None]]
    rows: list[list[int]]
    inter: list[list[int]]  # per frame: the slots of its interruptions
    count: int
    owner_a: np.ndarray  # per row: its slot
    owner: list[int]


def _slots(n: int, segments: list[Segment]) -> Slots:
    slot_keys: list[tuple[str, str | None]] = [seg.key for seg in segments]  # type: ignore[misc]
    inter_slots: list[list[int]] = []
    slot_rows: list[list[int]] = [seg.rows for seg in segments]
    nxt = len(segments)
    for seg in segments:
        mine = []
        for it in seg.interruptions:
            slot_rows.append(it.rows)
            slot_keys.append(it.key)  # type: ignore[arg-type]
            mine.append(nxt)
            nxt += 1
        inter_slots.append(mine)
    owner_a = np.zeros(n, dtype=np.int64)
    if n:  # every row is in exactly one frame or interruption (sessionize)
        owner_a[np.fromiter(chain.from_iterable(slot_rows), dtype=np.int64, count=n)] = np.repeat(
            np.arange(nxt, dtype=np.int64), [len(r) for r in slot_rows])
    return Slots(slot_keys, slot_rows, inter_slots, nxt, owner_a, owner_a.tolist())


@dataclass(frozen=True, slots=True)
class Framing:
    """Phases 1 and 2: what the frames step computes, and what the document builds on."""

    rows: DayRows
    timeline: Timeline
    slots: Slots


def frame_day(capture: DayCapture, rules: Rules = PAPER_RULES) -> Framing:
    """The day's frames: rows in timeline order, their credit and the segments they form."""
    return _without_gc(_frame_day, capture, rules)


def _frame_day(capture: DayCapture, rules: Rules, window: tuple[int, int] | None = None) -> Framing:
    rows = _day_rows(capture)
    timeline = _timeline(capture, rows, rules, window)
    return Framing(rows, timeline, _slots(rows.index.n, timeline.segments))


# -- phase 3: input per frame -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class InputTally:
    vol: list[list[int]]  # per slot: the VOLUME counts
    has_input: np.ndarray  # per row: it received a counted event
    clicked: list[dict[tuple[str, str | None, str], int]]  # per slot: (target, role, resolution) -> n
    unresolved: list[int]  # per slot
    resolutions: dict[str, int]  # the day's counted clicks by resolution
    typed: list[list[str]] | None  # per slot: typed text pieces (opt-in only)
    attribution: dict[str, int]  # the coverage block's attribution numbers


def _tally_input(capture: DayCapture, att: Attribution, slots: Slots, options: CompileOptions,
                 tbl: dict[int, str]) -> InputTally:
    # Vectorised: counts per (owner slot, volume column) with one bincount. Pointer motion is
    # neither volume nor interaction; app switches and focus changes are interaction (column 7)
    # but not volume.
    # the events' columns, not the events (a sealed read leaves them as columns)
    kind_codes, kind_values = capture.codes("inputs", "kind")
    n_slots, owner_a, owner = slots.count, slots.owner_a, slots.owner
    # each distinct kind looked up once (kinds are never NULL: no code -1)
    code_a = np.fromiter(map(_KIND_CODE.__getitem__, kind_values), dtype=np.int64, count=len(kind_values))[kind_codes]
    board = np.flatnonzero(code_a == _K_CLIPBOARD).tolist()
    for i, op in zip(board, capture.values_at("inputs", ("clipboard_op",), board)[0], strict=True):
        code_a[i] = _K_PASTES if op == "paste" else (_K_COPIES if op in ("copy", "cut") else _K_OTHER)
    pos_a, dist_a = att.pos, att.dist_us
    unattributed = int(np.count_nonzero(pos_a < 0))
    counted = (pos_a >= 0) & (code_a >= 0)
    pos_c = pos_a[counted]
    slot_c = owner_a[pos_c]
    vol_np = np.bincount(slot_c * _COLS + code_a[counted], minlength=n_slots * _COLS).reshape(n_slots, _COLS)
    has_np = np.zeros(len(owner), dtype=bool)
    has_np[pos_c] = True
    dist_sorted = np.sort(dist_a[counted])
    n_dist = int(dist_sorted.size)

    def dist_ms(i: int) -> int:
        return (int(dist_sorted[i]) + 500) // 1000 if n_dist else 0
    pos_list_a = att.pos_list
    texts = np.flatnonzero(counted & (code_a == _K_TEXT))
    if texts.size:  # characters typed, a count (never the content), summed per owner slot
        (typed_at,) = capture.values_at("inputs", ("text",), texts.tolist())
        chars = np.fromiter((len(t or "") for t in typed_at), dtype=np.int64, count=texts.size)
        np.add.at(vol_np[:, _K_CHARS], owner_a[pos_a[texts]], chars)

    clicked: list[dict[tuple[str, str | None, str], int]] = [{} for _ in range(n_slots)]
    unresolved = [0] * n_slots
    resolution_counts = dict.fromkeys(("recorded", "exact", "tolerance", "zone", "unresolved"), 0)
    targets = att.targets
    for i in np.flatnonzero(counted & (code_a == _K_CLICKS)).tolist():
        res, target, trole = targets[i]
        resolution_counts[res] += 1
        slot = owner[pos_list_a[i]]
        if target is None:
            unresolved[slot] += 1
        else:
            k = (target, trole, res)
            clicked[slot][k] = clicked[slot].get(k, 0) + 1

    typed: list[list[str]] | None = None
    if options.include_typed_text:
        typed = [[] for _ in range(n_slots)]
        kinds, texts_of, ts, streams, refs = input_values(capture, ("kind", "text", "ts_us", "stream", "ref"))
        keyed = [i for i in np.flatnonzero(counted & ((code_a == _K_KEYS) | (code_a == _K_TEXT))).tolist()
                 if texts_of[i]]
        keyed.sort(key=lambda i: (ts[i], streams[i] or "", refs[i]))
        for i in keyed:
            mapped = layouts.translate(texts_of[i], kinds[i], tbl) or ""
            typed[owner[pos_list_a[i]]].append(_key_char(mapped) if kinds[i] == "key" else mapped)
    attribution = {
        "events": n_dist,
        "unattributed": unattributed,
        "median_ms": dist_ms(n_dist // 2),
        "p90_ms": dist_ms((n_dist * 9) // 10),
        "max_ms": dist_ms(n_dist - 1),
    }
    return InputTally(vol_np[:, :7].tolist(), has_np, clicked, unresolved, resolution_counts, typed, attribution)


# -- phase 4: presence-only time and window time per slot ---------------------------------------

@dataclass(frozen=True, slots=True)
class Tenure:
    presence_us: list[int]  # per slot: heartbeat time that received no input
    presence_runs: list[int]  # lengths of runs of presence-only rows, us
    frame_windows: dict[int, dict[str, int]]  # slot -> window title -> us
    app_windows: dict[str, dict[str, int]]  # app -> window title -> us


def _tenure(rows: DayRows, tl: Timeline, slots: Slots, has_np: np.ndarray) -> Tenure:
    index = rows.index
    n = index.n
    credit_a, owner_a = tl.credit_a, slots.owner_a
    # presence-only: heartbeat rows that received no input (integer sums, numpy)
    pmask = np.fromiter(index.col("heartbeat"), dtype=bool, count=n) & ~has_np
    presence_a = np.zeros(slots.count, dtype=np.int64)
    np.add.at(presence_a, owner_a[pmask], credit_a[pmask])
    presence_runs: list[int] = []
    for stream in tl.streams:
        sp = cast(np.ndarray, tl.arrays[stream][1])
        m, cr, b_ = pmask[sp], credit_a[sp], tl.brk_a[sp]
        if not m.any():
            continue
        carried = np.concatenate(([False], m[:-1] & ~b_[:-1]))  # the previous row's run goes on
        run_id = np.cumsum(m & ~carried) - 1
        presence_runs.extend(np.bincount(run_id[m], weights=cr[m]).astype(np.int64).tolist())

    # window time per owner slot (one bincount over the (slot, window) pairs), then per app
    codes, titles = index.codes("window")
    named = np.flatnonzero(np.fromiter(map(bool, titles), dtype=bool, count=len(titles)))  # no "" title
    rows_w = np.flatnonzero(np.isin(codes, named))
    pairs, at = np.unique(owner_a[rows_w] * len(titles) + codes[rows_w], return_inverse=True)
    # credits are whole us far below 2**53: float sums of them are exact
    sums = np.bincount(at.ravel(), weights=credit_a[rows_w], minlength=pairs.size).astype(np.int64).tolist()
    frame_windows: dict[int, dict[str, int]] = {}
    app_windows: dict[str, dict[str, int]] = {}
    slot_keys = slots.keys
    for pair, us in zip(pairs.tolist(), sums, strict=True):
        o, w = divmod(pair, len(titles))
        title = titles[w]
        fw = frame_windows.setdefault(o, {})
        fw[title] = fw.get(title, 0) + us  # a title the reader's dictionary holds twice adds up
        aw = app_windows.setdefault(slot_keys[o][0], {})
        aw[title] = aw.get(title, 0) + us
    return Tenure(presence_a.tolist(), presence_runs, frame_windows, app_windows)


# -- phase 5: the timeline ledger and the domains ------------------------------------------------

@dataclass(frozen=True, slots=True)
class Ledger:
    tl_credit: list[int]  # per row: its credit on the one timeline of all monitors, us
    app_tl: dict[str, int]
    domain_us: dict[str, int]
    domain_tl: dict[str, int]
    domain_visits: dict[str, int]
    # a part of a day: per row, whether it counts (inside the window, or credited inside it);
    # None for a whole day, where every row counts
    live: np.ndarray | None = None


def _ledger(rows: DayRows, tl: Timeline, slots: Slots, rules: Rules) -> Ledger:
    # The timeline ledger: every monitor's rows interleaved into ONE timeline (SnapIndex order:
    # time, stream, ref) and credited with the same dwell and gap rules, so each instant counts
    # once whatever the number of monitors. The per-monitor ledger stays the paper's tenure
    # (frames add up to it); on one stream the two are the same numbers.
    index = rows.index
    credit, not_afk, ends_np = tl.credit, tl.not_afk, tl.ends
    tl_credit = credit
    window = tl.window
    if len(tl.streams) > 1:
        tl_a = np.asarray(credits(index.all_ts, rules, ends_np)[0], dtype=np.int64)
        tl_start = tl.arrays[None][0]
        if window is not None:
            tl_start, tl_a = _clip(tl_start, tl_a, window)
        for stream in not_afk:
            _ts_s, pa_s = cast(tuple[np.ndarray, np.ndarray], tl.arrays[stream])
            tl_a[pa_s] -= _outside(tl_start[pa_s], tl_a[pa_s], not_afk[stream])
        if ends_np is not None:
            # measured spans (ActivityWatch): each instant to the span that started last, not the
            # capped gap to the next row of any stream (a short phone event must not cut off the
            # rest of a desktop event), then afk time of the row's own stream taken out
            _timeline_spans(tl_a, index.all_ts, ends_np, index.col("stream"), not_afk, window)
        tl_credit = tl_a.tolist()
    live: np.ndarray | None = None
    if window is not None:
        all_np = tl.arrays[None][0]
        live = ((all_np >= window[0]) & (all_np < window[1])) | (tl.credit_a > 0) | \
            (np.asarray(tl_credit, dtype=np.int64) > 0)
    app_tl: dict[str, int] = {}
    for (a, _site), slot_rows in zip(slots.keys, slots.rows, strict=True):  # every row is in one slot
        app_tl[a] = app_tl.get(a, 0) + sum(map(tl_credit.__getitem__, slot_rows))

    # domains: minutes, and visits = runs of adjacent rows of a stream on that domain (a row
    # whose previous row on its stream shows another site, or ends a session, starts one);
    # credits are whole us far below 2**53, so the float sums of bincount are exact
    domain_us: dict[str, int] = {}
    domain_tl: dict[str, int] = {}
    domain_visits: dict[str, int] = {}
    sc, names = rows.site_codes, rows.site_names
    if names:
        on = np.flatnonzero(sc >= 0 if live is None else (sc >= 0) & live)
        code = sc[on]
        prev = tl.prev_a[on]
        before = np.maximum(prev, 0)
        first = (prev < 0) | (sc[before] != code) | tl.brk_a[before]
        if live is not None:  # a visit the window enters in the middle starts at its edge
            first |= ~live[before]
        starts = code[first]
        k = len(names)
        rows_of = np.bincount(code, minlength=k).tolist()
        us = np.bincount(code, weights=tl.credit_a[on], minlength=k).astype(np.int64).tolist()
        tl_us = (np.bincount(code, weights=np.asarray(tl_credit, dtype=np.int64)[on], minlength=k)
                 .astype(np.int64).tolist()) if tl_credit is not credit else us
        visits = np.bincount(starts, minlength=k).tolist()
        for i, site in enumerate(names):
            if rows_of[i]:
                domain_us[site], domain_tl[site], domain_visits[site] = us[i], tl_us[i], visits[i]
    return Ledger(tl_credit, app_tl, domain_us, domain_tl, domain_visits, live)


# -- phase 6: the frames of the document and the per-app ledger ---------------------------------

@dataclass(frozen=True, slots=True)
class FrameList:
    frames: list[dict[str, Any]]  # the document's frames (at or above the floor)
    kept: list[Segment]  # every frame that is not only away time, floor or not
    omitted_n: int
    omitted_us: int
    away_frames: int
    app_minutes: dict[str, int]
    app_frames: dict[str, int]
    app_longest: dict[str, int]
    app_interrupts: dict[str, int]
    app_away: dict[str, int]


def _frame_list(capture: DayCapture, framing: Framing, tally: InputTally, tenure: Tenure,
                options: CompileOptions, clock: _Clock,
                page_cache: dict[str, tuple[str, str | None]], live: np.ndarray | None = None) -> FrameList:
    rows, tl, slots = framing.rows, framing.timeline, framing.slots
    type_url = rows.type_url

    def page_key(url: str) -> tuple[str, str | None]:
        pk = page_cache.get(url)
        if pk is None:
            ref = type_url(url)  # type: ignore[misc]
            pk = page_cache[url] = (ref.kind, ref.entity)
        return pk

    floor_us = options.min_minutes * MIN_US
    frames_out: list[dict[str, Any]] = []
    omitted_n = 0
    omitted_us = 0
    app_minutes: dict[str, int] = {}
    app_frames: dict[str, int] = {}
    app_longest: dict[str, int] = {}
    app_interrupts: dict[str, int] = {}
    # away: credited window time outside the presence source's not-afk intervals, per slot
    slot_away = [0] * slots.count
    if tl.away.any():
        slot_away = np.bincount(slots.owner_a, weights=tl.away, minlength=slots.count).astype(np.int64).tolist()
    app_away: dict[str, int] = {}
    for o, us in enumerate(slot_away):
        if us:
            app_away[slots.keys[o][0]] = app_away.get(slots.keys[o][0], 0) + us
    away_frames = 0
    kept: list[Segment] = []
    # measured-span rows (ActivityWatch) on a day whose other sources did record input
    mixed_input = tl.ends is not None and input_count(capture) > 0
    ends_list = tl.ends.tolist() if tl.ends is not None else []
    evidence = rows.evidences(slots.rows)  # per slot, every frame's and interruption's at once
    live_l = live.tolist() if live is not None else None
    for fi, seg in enumerate(tl.segments):
        app, site = cast(tuple[str, str | None], seg.key)
        if live_l is not None and not any(map(live_l.__getitem__, chain(
                seg.rows, chain.from_iterable(it.rows for it in seg.interruptions)))):
            continue  # only context rows of a part of a day: nothing of it is inside the window
        if not seg.active_us and slot_away[fi] and not any(it.active_us for it in seg.interruptions):
            away_frames += 1  # nothing but away time (a lock screen, an idle window): not a frame
            continue
        kept.append(seg)
        # the ledger: every row's credit is in exactly one frame or interruption (sessionize)
        app_minutes[app] = app_minutes.get(app, 0) + seg.active_us
        app_frames[app] = app_frames.get(app, 0) + 1
        if seg.active_us > app_longest.get(app, -1):
            app_longest[app] = seg.active_us
        for it in seg.interruptions:
            iapp = cast(tuple[str, str | None], it.key)[0]
            app_minutes[iapp] = app_minutes.get(iapp, 0) + it.active_us
            app_interrupts[iapp] = app_interrupts.get(iapp, 0) + 1
        if seg.active_us < floor_us:
            omitted_n += 1
            omitted_us += seg.active_us
            continue
        frame = _frame(fi, seg, rows.urls, tenure.frame_windows.get(fi, {}), tl.srank, tally.vol, tally.clicked,
                       tally.unresolved, tenure.presence_us, slots.inter[fi], tally.typed, clock,
                       page_key if site is not None else None, page_cache, evidence)
        if slot_away[fi]:
            frame["away_min"] = _minutes(slot_away[fi])
        if mixed_input and all(ends_list[p] != NO_END for p in seg.rows):
            # a day with input from another source: this frame's source (ActivityWatch) records
            # none, so its k0 c0 is "not recorded", not an idle user
            frame["input_recorded"] = False
        frames_out.append(frame)
    return FrameList(frames_out, kept, omitted_n, omitted_us, away_frames, app_minutes, app_frames, app_longest,
                     app_interrupts, app_away)


# -- phase 7: coverage ---------------------------------------------------------------------------

def _coverage(capture: DayCapture, framing: Framing, tally: InputTally, tenure: Tenure, ledger: Ledger,
              fl: FrameList, rules: Rules, clock: _Clock, sizes_all: dict[str, tuple[int, int]]) -> dict[str, Any]:
    index, tl = framing.rows.index, framing.timeline
    n = index.n
    credit = tl.credit
    all_ts = index.all_ts
    gaps: list[dict[str, Any]] = []
    all_np = tl.arrays[None][0]
    window, live = tl.window, ledger.live
    lo, hi = window if window is not None else (-_INF, _INF)
    # a row covers until its measured end (ActivityWatch), an instant row its own time
    cover = all_np if tl.ends is None else np.maximum.accumulate(np.maximum(all_np, tl.ends))
    for i in np.flatnonzero(all_np[1:] - cover[:-1] > rules.gap_s * US).tolist():
        g0, g1 = max(int(cover[i]), lo), min(all_ts[i + 1], hi)  # a part of a day: its part of the gap
        if g1 > g0:
            gaps.append({"start": clock.hms(g0), "end": clock.hms(g1), "minutes": _minutes(g1 - g0)})
    covered_us, dual_us = _union_and_overlap(tl.arrays, tl.credit_a, tl.start_a)
    total_active = sum(credit)
    first_us = all_ts[0] if n else None
    last_us = max((seg.end_us for seg in fl.kept), default=None)
    inside: np.ndarray | None = None
    if live is not None:
        inside = (all_np >= lo) & (all_np < hi)
        first_live = np.flatnonzero(live)
        first_us = max(all_ts[int(first_live[0])], lo) if first_live.size else None
        last_us = min(last_us, hi) if last_us is not None else None
    totals = [sum(v[k] for v in tally.vol) for k in range(7)]
    stream_rows = []
    for stream in tl.streams:
        _ts, pos_list = index.by_stream[stream]
        count = len(pos_list) if inside is None else int(np.count_nonzero(inside[pos_list]))
        entry: dict[str, Any] = {"stream": stream, "rows": count,
                                 "active_min": _minutes(sum(map(credit.__getitem__, pos_list)))}
        if stream in sizes_all:
            entry["width_px"], entry["height_px"] = sizes_all[stream]
        stream_rows.append(entry)
    presence_total = sum(tenure.presence_us)
    coverage: dict[str, Any] = {
        "first_activity": clock.hms(first_us) if first_us is not None else None,
        "last_activity": clock.hms(last_us) if last_us is not None else None,
        "active_min": _minutes(total_active),
        "timeline_min": _minutes(sum(ledger.tl_credit)),
        "covered_min": _minutes(covered_us),
        "span_min": _minutes(last_us - first_us) if first_us is not None and last_us is not None else 0.0,
        "dual_monitor_min": _minutes(dual_us),
        "distinct_apps": len(fl.app_minutes),
        "frames": len(fl.kept),
        "gaps": gaps,
        "gap_min": round(sum(g["minutes"] for g in gaps), 2),
        "presence_only": {
            "minutes": _minutes(presence_total),
            "longest_run_min": _minutes(max(tenure.presence_runs) if tenure.presence_runs else 0),
        },
        "input": dict(zip(VOLUME, totals, strict=True)),
        "clicks": tally.resolutions,
        "attribution": tally.attribution,
        "streams": stream_rows,
    }
    if tl.presence_src:  # said only where a source reported presence or measured its own spans
        coverage["presence"] = {"sources": sorted(set(tl.presence_src.values())),
                                "away_min": _minutes(int(tl.away.sum())), "away_frames": fl.away_frames}
        spans = away_spans(capture, capture.tz, bridge_s=rules.gap_s)  # where on the clock, for the page
        for entry in stream_rows:
            entry["presence"] = tl.presence_src.get(entry["stream"], "none")
            if spans.get(entry["stream"]):
                entry["away"] = [[a, b] for a, b in spans[entry["stream"]]]
    if n and not input_count(capture) and set(capture.recorders) and set(capture.recorders) <= NO_INPUT_RECORDERS:
        coverage["input_recorded"] = False  # k0 c0 here means "not recorded", never idleness
    return coverage


# -- phase 8: assembly ---------------------------------------------------------------------------

def assemble(capture: DayCapture, framing: Framing, attribution: Attribution,
             options: CompileOptions = CompileOptions(), rules: Rules = PAPER_RULES,
             page_types: dict[str, tuple[str, str | None]] | None = None) -> dict[str, Any]:
    """The document from the day's framing (frame_day) and input attribution
    (enrich.attribute_input) of the same capture with the same rules. ``page_types``: url ->
    (kind, entity) of entities.type_url, for URLs already typed (the page-refs step); the rest
    are typed here. compile_day(capture) is exactly this over its own phases."""
    return _without_gc(_assemble, capture, framing, attribution, options, rules, page_types)


def _assemble(capture: DayCapture, framing: Framing, attribution: Attribution, options: CompileOptions,
              rules: Rules, page_types: dict[str, tuple[str, str | None]] | None) -> dict[str, Any]:
    tbl = _check(options)
    clock = _Clock(capture.tz, capture.day)
    tally = _tally_input(capture, attribution, framing.slots, options, tbl)
    tenure = _tenure(framing.rows, framing.timeline, framing.slots, tally.has_input)
    ledger = _ledger(framing.rows, framing.timeline, framing.slots, rules)
    page_cache = dict(page_types) if page_types else {}
    fl = _frame_list(capture, framing, tally, tenure, options, clock, page_cache, ledger.live)
    sizes_all = screen_sizes(capture.streams)
    coverage = _coverage(capture, framing, tally, tenure, ledger, fl, rules, clock, sizes_all)
    doc = _document(capture, framing, tally, tenure, ledger, fl, coverage, options, rules, clock, sizes_all)
    # tier 2 (inferred): categories by the user's rules, after the measured tier is complete
    return categorize(doc, options.categories or default_rules())


def _document(capture: DayCapture, framing: Framing, tally: InputTally, tenure: Tenure, ledger: Ledger,
              fl: FrameList, coverage: dict[str, Any], options: CompileOptions, rules: Rules, clock: _Clock,
              sizes_all: dict[str, tuple[int, int]]) -> dict[str, Any]:
    app_tl, app_minutes, app_windows = ledger.app_tl, fl.app_minutes, tenure.app_windows
    apps_out = []
    # most time on the one timeline first (what "which app dominated" asks), then per monitor
    for app in sorted(app_minutes, key=lambda a: (-app_tl[a], -app_minutes[a], a)):
        wins = app_windows.get(app, {})
        item: dict[str, Any] = {
            "app": app,
            "minutes": _minutes(app_minutes[app]),
            "timeline_minutes": _minutes(app_tl[app]),
            "frames": fl.app_frames.get(app, 0),
            "interruptions": fl.app_interrupts.get(app, 0),
            "longest_frame_min": _minutes(fl.app_longest.get(app, 0)),
            "top_windows": [{"title": w, "minutes": _minutes(wins[w])}
                            for w in sorted(wins, key=lambda t: (-wins[t], t))[:TOP_WINDOWS]],
        }
        if fl.app_away.get(app):
            item["away_minutes"] = _minutes(fl.app_away[app])
        apps_out.append(item)
    domain_us, domain_tl = ledger.domain_us, ledger.domain_tl
    domains_out = [{"domain": d, "minutes": _minutes(domain_us[d]), "timeline_minutes": _minutes(domain_tl[d]),
                    "visits": ledger.domain_visits[d]}
                   for d in sorted(domain_us, key=lambda d: (-domain_tl[d], -domain_us[d], d))]

    start_us, end_us = day_bounds(capture.day, clock.zone)
    n_rows = framing.rows.index.n
    window = framing.timeline.window
    if window is not None:  # a part of a day: its own bounds, and the rows inside it
        start_us, end_us = window
        all_np = framing.timeline.arrays[None][0]
        n_rows = int(np.count_nonzero((all_np >= start_us) & (all_np < end_us)))
    return {
        "schema_version": SCHEMA_VERSION,
        "day": capture.day,
        "tz": capture.tz,
        "window": {"start": clock.iso(start_us), "end": clock.iso(end_us)},
        "coverage": coverage,
        "apps": apps_out,
        "domains": domains_out,
        "frames": fl.frames,
        "omitted": {"min_minutes": round(float(options.min_minutes), 2), "frames": fl.omitted_n,
                    "minutes": _minutes(fl.omitted_us)},
        "blind_spots": _blind_spots(capture, coverage, sizes_all, framing.timeline.streams, tally.resolutions,
                                    options),
        "privacy": {"typed_text": "included" if options.include_typed_text else "excluded"},
        "provenance": {
            "schema_version": SCHEMA_VERSION,
            "capture_schema_version": CAPTURE_SCHEMA_VERSION,
            "generator": GENERATOR,
            "recorders": sorted(set(capture.recorders)),
            "sealed": bool(capture.sealed),
            "segments": [{"file": k, "sha256": capture.segment_hashes[k]}
                         for k in sorted(capture.segment_hashes)],
            "options": {"min_minutes": round(float(options.min_minutes), 2),
                        "include_typed_text": options.include_typed_text,
                        "layout": options.layout},
            "rules": {"dwell_s": rules.dwell_s, "gap_s": rules.gap_s,
                      "flicker_s": rules.flicker_s, "ring_px": RING_PX},
            "rows": {"snapshots": n_rows, "inputs": input_count(capture),
                     "elements": capture.element_count(), "presence": len(capture.presence),
                     "streams": len(capture.streams)},
        },
    }


def _frame(fi: int, seg: Segment, urls: list[str | None], windows: dict[str, int], srank: list[int],
           vol: list[list[int]],
           clicked: list[dict[tuple[str, str | None, str], int]], unresolved: list[int],
           presence_us: list[int], islots: list[int], typed: list[list[str]] | None,
           clock: _Clock, page_key: Callable[[str], tuple[str, str | None]] | None,
           page_cache: dict[str, tuple[str, str | None]],
           evidence: list[dict[str, Any]]) -> dict[str, Any]:
    app, site = cast(tuple[str, str | None], seg.key)
    rows = seg.rows
    pages: dict[tuple[str, str | None], int] = {}
    page_order: dict[tuple[str, str | None], int] = {}
    if page_key is not None:
        prev_page: tuple[str, str | None] | None = None
        prev_rank = -2
        for p in rows:
            url = urls[p]
            if url:
                pk = page_cache.get(url) or page_key(url)
                r = srank[p]
                # a visit is a run of adjacent rows of the stream showing one page
                if pk != prev_page or r != prev_rank + 1:
                    pages[pk] = pages.get(pk, 0) + 1
                    page_order.setdefault(pk, len(page_order))
                prev_page, prev_rank = pk, r
            else:
                prev_page = None
    v = vol[fi]
    frame: dict[str, Any] = {
        "id": f"f-{fi + 1:04d}",
        "stream": seg.stream,
        "app": app,
        "start": clock.hms(seg.start_us),
        "end": clock.hms(seg.end_us),
        "active_min": _minutes(seg.active_us),
        "wall_min": _minutes(seg.end_us - seg.start_us),
        "rows": len(rows),
        "input": dict(zip(VOLUME, v, strict=True)),
        "presence_only_s": _seconds(presence_us[fi]),
        "evidence": evidence[fi],
    }
    if site is not None:
        frame["site"] = site
    if windows:
        frame["windows"] = [{"title": w, "minutes": _minutes(windows[w])}
                            for w in sorted(windows, key=lambda t: (-windows[t], t))[:TOP_WINDOWS]]
    if pages:
        out_pages = []
        for pk in sorted(pages, key=lambda k: (-pages[k], page_order[k])):
            item: dict[str, Any] = {"kind": pk[0], "count": pages[pk]}
            if pk[1] is not None:
                item["entity"] = pk[1]
            out_pages.append(item)
        frame["pages"] = out_pages
    c = clicked[fi]  # clicks during a folded detour belong to the detour, listed on it
    if c:
        frame["clicked"] = [
            _click_item(k, c[k])
            for k in sorted(c, key=lambda k: (-c[k], k[0], k[1] or "", k[2]))[:TOP_CLICKS]
        ]
    if unresolved[fi]:
        frame["unresolved_clicks"] = unresolved[fi]
    if seg.interruptions:
        inter = []
        for it, slot in zip(seg.interruptions, islots, strict=True):
            iapp, isite = cast(tuple[str, str | None], it.key)
            entry: dict[str, Any] = {
                "app": iapp,
                "at": clock.hms(it.start_us),
                "seconds": _seconds(it.active_us),
                "input": dict(zip(VOLUME, vol[slot], strict=True)),
                "evidence": evidence[slot],
            }
            if isite is not None:
                entry["site"] = isite
            ic = clicked[slot]
            if ic:
                entry["clicked"] = [_click_item(k, ic[k]) for k in
                                    sorted(ic, key=lambda k: (-ic[k], k[0], k[1] or "", k[2]))[:TOP_CLICKS]]
            if typed is not None and typed[slot]:
                entry["typed_text"] = "".join(typed[slot])
            inter.append(entry)
        frame["interruptions"] = inter
        frame["interruption_s"] = sum(e["seconds"] for e in inter)
    if typed is not None and typed[fi]:
        frame["typed_text"] = "".join(typed[fi])
    return frame


def _click_item(k: tuple[str, str | None, str], count: int) -> dict[str, Any]:
    item: dict[str, Any] = {"target": k[0], "resolution": k[2], "count": count}
    if k[1]:
        item["role"] = k[1]
    return item


def _union_and_overlap(arrays: dict[str | None, tuple[np.ndarray, np.ndarray | None]],
                       credit: np.ndarray, start_a: np.ndarray | None = None) -> tuple[int, int]:
    """Wall time covered by at least one stream, and by at least two (dual monitor). A row's
    credited interval starts at its time, or at ``start_a`` (a part of a day: clipped)."""
    per_stream = sorted((k, v) for k, v in arrays.items() if k is not None)
    if len(per_stream) < 2:
        return int(credit.sum()), 0
    edges: list[tuple[int, int]] = []
    for _stream, (ts, positions) in per_stream:
        # a stream's credited intervals never overlap (a row earns at most the gap to the next
        # row): merge the ones that touch, end to start, into runs
        c = credit[positions]
        m = c > 0
        if not m.any():
            continue
        s = ts[m] if start_a is None else start_a[positions][m]
        e = s + c[m]
        first = np.flatnonzero(np.concatenate(([True], s[1:] > e[:-1])))
        last = np.concatenate((first[1:] - 1, [s.size - 1]))
        for a, b in zip(s[first].tolist(), e[last].tolist(), strict=True):
            edges.append((a, 1))
            edges.append((b, -1))
    edges.sort()
    union = overlap = 0
    depth = 0
    last_t = 0
    for t, d in edges:
        if depth >= 1:
            union += t - last_t
        if depth >= 2:
            overlap += t - last_t
        depth += d
        last_t = t
    return union, overlap


def _presence(capture: DayCapture, streams: list[str]) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """Per stream: its presence source, and the merged not-afk intervals of the streams an afk
    bucket governs (an (k, 2) array of [start, end)).

    "afk": the source's afk watcher; only not-afk time is active (ActivityWatch's own active
    time: window events intersected with not-afk). "unlocks": aw-android's unlock instants,
    which start presence but do not bound it. "none": a stream whose source measured its own
    spans but reported no presence. Streams of instant capture are not listed (heartbeats)."""
    known = set(streams)
    src: dict[str, str] = {}
    spans: dict[str, list[tuple[int, int]]] = {}
    for p in capture.presence:
        for stream in ([p.stream] if p.stream is not None else streams):
            if stream not in known:
                continue
            if p.status in ("afk", "not-afk"):
                src[stream] = "afk"
                iv = spans.setdefault(stream, [])
                if p.status == "not-afk" and p.end_us > p.ts_us:
                    iv.append((p.ts_us, p.end_us))
            elif p.status == "unlock" and stream not in src:
                src[stream] = "unlocks"
    ends, stream_of = capture.values("snapshots", ("end_us", "stream"))
    if ends.count(None) != len(ends):  # rows with a measured end: a source of spans (ActivityWatch)
        for end_us, stream in zip(ends, stream_of, strict=True):
            if end_us is not None and stream not in src:
                src[stream] = "none"
    merged: dict[str, np.ndarray] = {}
    for stream, iv in spans.items():
        out: list[list[int]] = []
        for a, b in sorted(iv):
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        merged[stream] = np.asarray(out, dtype=np.int64).reshape(-1, 2)
    return src, merged


def _timeline_spans(tl_a: np.ndarray, all_ts: Any, ends_np: np.ndarray, stream_of: list[str],
                    not_afk: dict[str, np.ndarray], window: tuple[int, int] | None = None) -> None:
    """Overwrite the timeline credit of rows with a measured end (see sessionize.timeline_pieces),
    their pieces clipped to the window if one is given."""
    measured = np.flatnonzero(ends_np != NO_END)
    ts_all = np.asarray(all_ts, dtype=np.int64)
    pieces = timeline_pieces(ts_all[measured].tolist(), ends_np[measured].tolist())
    for row, parts in zip(measured.tolist(), pieces, strict=True):
        if window is not None:
            lo, hi = window
            parts = [(max(a, lo), min(b, hi)) for a, b in parts if min(b, hi) > max(a, lo)]
        total = sum(b - a for a, b in parts)
        iv = not_afk.get(stream_of[row])
        if iv is not None and parts:
            starts = np.asarray([a for a, _ in parts], dtype=np.int64)
            lengths = np.asarray([b - a for a, b in parts], dtype=np.int64)
            total -= int(_outside(starts, lengths, iv).sum())
        tl_a[row] = total


def _outside(ts: np.ndarray, credit: np.ndarray, iv: np.ndarray) -> np.ndarray:
    """Per row: the part of its credited interval [ts, ts + credit) outside the intervals."""
    if iv.shape[0] == 0:
        return credit.copy()
    starts, ends = iv[:, 0], iv[:, 1]
    lengths = ends - starts
    before = np.concatenate(([0], np.cumsum(lengths)))  # covered time before interval k

    def covered(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(starts, t, side="right") - 1
        kk = np.maximum(k, 0)
        inside = np.clip(t - starts[kk], 0, lengths[kk])
        return np.where(k >= 0, before[kk] + inside, 0)

    return credit - (covered(ts + credit) - covered(ts))


def _blind_spots(capture: DayCapture, coverage: dict[str, Any], sizes: dict[str, tuple[int, int]],
                 streams: list[str], clicks: dict[str, int],
                 options: CompileOptions) -> list[dict[str, Any]]:
    spots: list[dict[str, Any]] = [
        {"kind": "uncovered_time_is_unknown",
         "note": "Capture gaps and time before the first or after the last activity are unknown, not inactivity."},
        {"kind": "off_screen_work",
         "note": "Work away from the screen (paper, phone, conversation) appears only as gaps."},
        {"kind": "presence_not_attention",
         "note": "Active minutes are screen tenure: heartbeat rows keep input-free stretches credited, "
                 "including time away from an awake display; compare each frame's input volume.",
         "minutes": coverage["presence_only"]["minutes"]},
        {"kind": "intent_not_observed",
         "note": "The measured tier records apps, pages and input volume, never intent or tasks."},
    ]
    if coverage.get("input_recorded") is False:
        spots.append({"kind": "input_not_recorded",
                      "note": "Input not recorded by this source (ActivityWatch records windows, not keys or "
                              "clicks): input counts of 0 are missing data, never idleness."})
    if "presence" in coverage:
        spots.append({"kind": "away_not_active",
                      "note": "Window time inside the afk watcher's afk intervals (or outside its not-afk ones) "
                              "is away, not active: it is in no app's minutes and no frame's active time.",
                      "minutes": coverage["presence"]["away_min"]})
    if len(streams) > 1:
        spots.append({"kind": "multi_monitor_double_credit",
                      "note": "Each monitor stream earns its own dwell: minutes shown on two monitors "
                              "at once count in both, in frames and in the ledger's per-monitor minutes "
                              "(timeline minutes count each instant once).",
                      "minutes": coverage["dual_monitor_min"]})
    if capture.count("snapshots") and not capture.element_count():
        spots.append({"kind": "no_element_trees",
                      "note": "This capture has no element trees (legacy capture): anonymous clicks "
                              "can be placed only in a screen zone, if at all.",
                      "count": capture.count("snapshots")})
    unsized = [s for s in streams if s not in sizes]
    if unsized:
        spots.append({"kind": "screen_size_unknown",
                      "note": "No real screen size for these streams: their anonymous clicks stay "
                              "unresolved rather than guessed.",
                      "streams": unsized})
    if clicks["unresolved"]:
        spots.append({"kind": "unresolved_clicks",
                      "note": "Clicks that matched no element, ring or screen zone.",
                      "count": clicks["unresolved"]})
    if not options.include_typed_text:
        spots.append({"kind": "typed_text_excluded",
                      "note": "Typed content is excluded (privacy rule); only input volume is reported."})
    if not capture.sealed:
        spots.append({"kind": "day_not_sealed",
                      "note": "The day is still open in the log: later capture can change this document."})
    return spots
