"""Input enrichment (paper 4.3): re-attribution, click resolution and the keyboard layout map.

1. Stale attribution: recorders tag events with the app they *believed* was focused. Each event
   is re-attributed to the temporally nearest snapshot of its own stream (all streams when the
   event names none or an unknown one), found by binary search; that snapshot's app, window and
   URL are authoritative, and the distance is kept in milliseconds.
2. Anonymous clicks (coordinates, no element name) are resolved against the nearest snapshot's
   element tree: the smallest element containing the point ("exact"), else the nearest element
   within a 40 px ring measured per axis in the stream's real pixels ("tolerance"), else the
   coarse screen zone ("zone", e.g. "top-left"). Element bounds are normalised 0..1, clicks are
   pixels: without the stream's real screen size nothing can be matched, and the click stays
   "unresolved" rather than being guessed.
3. Key text goes through the operator's keyboard layout map (identity by default).

``enrich`` builds one EnrichedInput per event for consumers (the routine miner); the compiler
uses the same functions on plain arrays to avoid creating objects it does not need.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from af_pipeline import layouts
from capture.model import DayCapture, Element, InputEvent, Snapshot, StreamInfo

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


class SnapIndex:
    """Snapshots ordered by (time, stream, ref), with per-stream time arrays for bisection."""

    __slots__ = ("snaps", "all_ts", "by_stream")

    def __init__(self, snapshots: Iterable[Snapshot]):
        self.snaps: list[Snapshot] = sorted(snapshots, key=lambda s: (s.ts_us, s.stream, s.ref))
        self.all_ts: list[int] = [s.ts_us for s in self.snaps]
        groups: dict[str, tuple[list[int], list[int]]] = {}
        for pos, s in enumerate(self.snaps):
            g = groups.get(s.stream)
            if g is None:
                g = groups[s.stream] = ([], [])
            g[0].append(s.ts_us)
            g[1].append(pos)
        self.by_stream = groups

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


# (left, top, right, bottom, area, -depth, ref, label, role), normalised 0..1
_Box = tuple[float, float, float, float, float, int, str, str, str | None]


def element_boxes(elements: Iterable[Element], wanted: set[str] | None = None) -> dict[str, list[_Box]]:
    """Labelled boxes per snapshot frame id; a nameless box is no answer to "what was clicked"."""
    out: dict[str, list[_Box]] = {}
    for e in elements:
        fid = e.snapshot_frame_id
        if wanted is not None and fid not in wanted:
            continue
        label = (e.text or "").strip()
        if not label or e.left is None or e.top is None or e.width is None or e.height is None:
            continue
        if e.width < 0 or e.height < 0:
            continue
        box = (e.left, e.top, e.left + e.width, e.top + e.height, e.width * e.height,
               -(e.depth or 0), e.ref, " ".join(label.split()), e.role)
        out.setdefault(fid, []).append(box)
    return out


_ZONES = (("top-left", "top-center", "top-right"),
          ("middle-left", "center", "middle-right"),
          ("bottom-left", "bottom-center", "bottom-right"))


def resolve_click(
    x: int | None,
    y: int | None,
    size: tuple[int, int] | None,
    boxes: Sequence[_Box],
) -> tuple[str, str | None, str | None]:
    """(resolution, label, role) for an anonymous click at pixel (x, y)."""
    if x is None or y is None or size is None:
        return "unresolved", None, None
    w, h = size
    nx, ny = x / w, y / h
    if not (0.0 <= nx <= 1.0 and 0.0 <= ny <= 1.0):
        return "unresolved", None, None  # off this screen: the stream is wrong or the size is
    best: _Box | None = None
    for b in boxes:
        if b[0] <= nx <= b[2] and b[1] <= ny <= b[3]:
            if best is None or (b[4], b[5], b[6]) < (best[4], best[5], best[6]):
                best = b
    if best is not None:
        return "exact", best[7], best[8]
    best_key: tuple[float, float, str] | None = None
    for b in boxes:
        dx = max(b[0] - nx, 0.0, nx - b[2]) * w
        dy = max(b[1] - ny, 0.0, ny - b[3]) * h
        if dx <= RING_PX and dy <= RING_PX:
            key = (dx * dx + dy * dy, b[4], b[6])
            if best_key is None or key < best_key:
                best_key, best = key, b
    if best is not None:
        return "tolerance", best[7], best[8]
    row = 0 if ny < 1 / 3 else (1 if ny < 2 / 3 else 2)
    col = 0 if nx < 1 / 3 else (1 if nx < 2 / 3 else 2)
    return "zone", _ZONES[row][col], None


def enrich(capture: DayCapture, layout: str = "identity") -> list[EnrichedInput]:
    """Every input event of the day, re-attributed, click-resolved and layout-mapped, in
    (time, stream, ref) order. Never raises on odd rows: what cannot be resolved says so."""
    index = SnapIndex(capture.snapshots)
    tbl = layouts.table(layout)
    sizes = screen_sizes(capture.streams)
    events = sorted(capture.inputs, key=lambda e: (e.ts_us, e.stream or "", e.ref))
    attributed = [index.nearest(e.stream, e.ts_us) for e in events]
    wanted = {
        fid
        for e, (pos, _d) in zip(events, attributed, strict=True)
        if e.kind == "click" and not e.element_name and pos >= 0
        and (fid := index.snaps[pos].source_frame_id) is not None
    }
    boxes = element_boxes(capture.elements, wanted) if wanted else {}
    out: list[EnrichedInput] = []
    for e, (pos, dist) in zip(events, attributed, strict=True):
        snap = index.snaps[pos] if pos >= 0 else None
        resolution, name, role = click_target(e, snap, sizes, boxes)
        key_text = layouts.translate(e.text, e.kind, tbl) if e.kind in ("key", "text") else None
        out.append(
            EnrichedInput(
                event=e,
                snapshot_ref=snap.ref if snap else None,
                distance_ms=(dist + 500) // 1000 if snap else None,
                stream=snap.stream if snap else None,
                app=snap.app if snap else None,
                window=snap.window if snap else None,
                url=snap.url if snap else None,
                target_name=name,
                target_role=role,
                resolution=resolution,
                key_text=key_text,
            )
        )
    return out


def click_target(
    e: InputEvent,
    snap: Snapshot | None,
    sizes: dict[str, tuple[int, int]],
    boxes: dict[str, list[_Box]],
) -> tuple[str, str | None, str | None]:
    """(resolution, label, role) of one event; "none" for anything that is not a click."""
    if e.kind != "click":
        return "none", None, None
    if e.element_name and e.element_name.strip():
        return "recorded", " ".join(e.element_name.split()), e.element_role
    if snap is None:
        return "unresolved", None, None
    fid = snap.source_frame_id
    return resolve_click(e.x, e.y, sizes.get(snap.stream), boxes.get(fid, ()) if fid is not None else ())
