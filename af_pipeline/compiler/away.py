"""Where a day's window time was away from the screen, as spans on the clock.

The compiler counts away time per slot and frame (compile.py); a person reading the day wants
to see *where* on the timeline it was: this module turns the capture's presence rows (the afk
watcher's not-afk intervals) and its measured window spans into local [start, end) spans per
stream, for the document's ``coverage.streams[].away`` and the day page.

Rules (units in the names): spans shorter than ``min_s`` (1 s) are left out; window time is
continuous across breaks of at most the session gap (300 s), so one afk interval is one span.
"""

from __future__ import annotations

from collections.abc import Sequence

from af_pipeline.compiler.sessionize import PAPER_RULES
from capture.model import DayCapture
from capture.timeutil import day_bounds, hhmmss


def away_spans(capture: DayCapture, tz: str, min_s: int = 1,
               bridge_s: int = PAPER_RULES.gap_s) -> dict[str, list[tuple[str, str]]]:
    """Per stream, the local [start, end) times (HH:MM:SS) its window time was away from the
    screen, as the compiler counts away time: on a stream an afk watcher governs, window time
    outside its not-afk intervals. Window time is taken as continuous across breaks of at most
    ``bridge_s`` seconds (the compiler's capture-gap rule: a shorter break is no gap), so one
    afk interval is one span. Spans shorter than ``min_s`` seconds are left out; a stream no
    afk watcher governs has none. The compiler puts them in the document (each stream's
    ``away`` in ``coverage.streams``), and the day page draws them on the timeline."""
    snaps = capture.values("snapshots", ("ts_us", "end_us", "stream"))
    streams = sorted(set(snaps[2]))
    governed: dict[str, list[tuple[int, int]]] = {}
    for p in capture.presence:
        if p.status not in ("afk", "not-afk"):
            continue
        for stream in [p.stream] if p.stream is not None else streams:
            iv = governed.setdefault(stream, [])
            if p.status == "not-afk" and p.end_us > p.ts_us:
                iv.append((p.ts_us, p.end_us))
    if not governed:
        return {}
    lo, hi = day_bounds(capture.day, tz)
    shown: dict[str, list[tuple[int, int]]] = {}
    for ts, end, stream in zip(*snaps, strict=True):
        if stream in governed and end is not None and end > ts:
            shown.setdefault(stream, []).append((max(ts, lo), min(end, hi)))
    out: dict[str, list[tuple[str, str]]] = {}
    for stream in sorted(shown):
        present = _merge(governed[stream])
        spans: list[tuple[int, int]] = []
        for a, b in _merge(shown[stream], bridge_s * 1_000_000):
            for pa, pb in present:  # what is left of [a, b) outside each not-afk interval
                if pb <= a or pa >= b:
                    continue
                if pa > a:
                    spans.append((a, pa))
                a = max(a, pb)
                if a >= b:
                    break
            if a < b:
                spans.append((a, b))
        kept = [(a, b) for a, b in _merge(spans) if b - a >= min_s * 1_000_000]
        if kept:
            out[stream] = [(hhmmss(a, tz), hhmmss(b, tz) if b < hi else "24:00:00") for a, b in kept]
    return out


def _merge(iv: Sequence[tuple[int, int]], bridge_us: int = 0) -> list[tuple[int, int]]:
    """Intervals merged where they overlap or lie at most ``bridge_us`` apart."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(iv):
        if b <= a:
            continue
        if out and a <= out[-1][1] + bridge_us:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
