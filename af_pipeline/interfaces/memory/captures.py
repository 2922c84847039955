"""A day's rows for the read model: sealed days read once, open days followed by the log's own
reader (and the open-day cache), sliced by time.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from af_pipeline.interfaces.memory.core import (
    CACHED_DAYS,
    CACHED_ROWS,
    MemoryCore,
)
from capture.errors import AfError
from capture.files import canonical_json
from capture.model import DayCapture, SkippedLine, StreamInfo


class Captures(MemoryCore):
    """A day's rows, cached and sliced."""

    # ------------------------------------------------------------------ captures (cached)

    def _fingerprint(self, day: str) -> tuple[Any, ...]:
        """Changes whenever the rows for a day change (a sealed day only by an amendment or a
        redaction: af forget rewrites its segments, and a running server must not serve them)."""
        if self.log.segment_paths(day):
            entries = self.log.day_entries(day)
            return ("sealed", len(entries), tuple(tuple(e.get("redacted_by", ())) for e in entries))
        folder = self.log.open_dir / day
        if not folder.is_dir():
            return ("absent",)
        if self._touched is not None:
            self._touched.add(day)  # an open day an answer read: its skipped lines are noted
        return tuple(
            sorted((p.name, st.st_size, st.st_mtime_ns) for p in folder.iterdir() if (st := p.stat()))
        )

    def day_capture(self, day: str) -> DayCapture:
        """A day's rows: sealed days read once; open days follow their files incrementally."""
        with self.lock:
            fp = self._fingerprint(day)
            if fp[0] != "sealed":
                # An open day is held by its followers, as columns; the capture handed out is a
                # view of them, made anew for each call, so rows a caller makes of it (reading
                # ``capture.snapshots``) live only as long as the caller keeps them.
                self._captures.pop(day, None)
                return self._read_open(day)
            hit = self._captures.get(day)
            if hit is not None and hit[0] == fp:
                self._captures[day] = self._captures.pop(day)  # most recently used last
                return hit[1]
            self._open.pop(day, None)
            cap = self.log.read_day(day, lazy_elements=True)
            self._captures.pop(day, None)
            self._captures[day] = (fp, cap)
            today = self.today()  # kept: the day live questions ask about, and the day just read
            while len(self._captures) > CACHED_DAYS or self._held_rows(today) > CACHED_ROWS:
                oldest = next((d for d in self._captures if d not in (today, day)), None)
                if oldest is None:
                    break
                self._captures.pop(oldest)
                self._open.pop(oldest, None)
                self._ts = {k: v for k, v in self._ts.items() if k[0] != oldest}
            return cap

    def _held_rows(self, today: str) -> int:
        """Rows of the captures held for days other than today (deferred rows counted unmade)."""
        return sum(cap.count(kind) for d, (_fp, cap) in self._captures.items() if d != today
                   for kind in ("snapshots", "inputs", "presence"))

    def _read_open(self, day: str) -> DayCapture:
        """An open day's rows, by the log's one open-segment reader, which follows the day's
        files and parses only what was appended since the last read (a live recorder appends
        every few seconds). A line it cannot read is left out and named in ``skipped``."""
        from af_pipeline.interfaces import open_cache
        from capture.log.opensegments import read_open_day  # with the log: not before `af mcp` answers

        if day not in self._open:  # a first read in this process: start from the cache when it holds
            loaded = open_cache.load(self.home.root, day, self.log.open_dir / day)
            if loaded is not None:
                self._open[day], docs, state = loaded
                self._disk_docs[day] = (state, docs)
        follow = self._open.pop(day, None)
        if follow is None:
            follow = {}
        self._open[day] = follow  # most recently read last
        today = self.today()
        while len(self._open) > CACHED_DAYS:  # open days nobody asks about any more
            oldest = next(d for d in self._open if d not in (today, day))
            self._open.pop(oldest)
            self._disk_docs.pop(oldest, None)
        return read_open_day(self.log.open_dir, day, self.tz, follow, columnar=True)

    def _options_key(self, min_minutes: float, typed: bool, layout: str) -> str:
        """The compile options a cached document must have been compiled with."""
        from af_pipeline.compiler.categories import RULES_FILE

        try:
            rules = hashlib.sha256((self.home.root / RULES_FILE).read_bytes()).hexdigest()
        except FileNotFoundError:
            rules = "defaults"
        return canonical_json({"min_minutes": min_minutes, "include_typed_text": typed, "layout": layout,
                               "categories": rules})

    def save_open_cache(self, day: str) -> bool:
        """Write an open day's parsed rows and the documents compiled from them (open_cache);
        False when the day is not open here or nothing is read yet."""
        from af_pipeline.interfaces import open_cache

        with self.lock:
            follow = self._open.get(day)
            if not follow or self.log.segment_paths(day):
                return False
            state = open_cache.files_state(follow)
            disk = self._disk_docs.get(day)
            docs = disk[1] if disk is not None and disk[0] == state else {}
            open_cache.save(self.home.root, day, follow, docs)
            return True

    def save_open_caches(self) -> list[str]:
        """save_open_cache for every open day read here; the days written."""
        return [day for day in sorted(self._open) if self.save_open_cache(day)]

    # ------------------------------------------------------------------ lines the reader left out

    @contextmanager
    def noting_skipped(self) -> Iterator[list[SkippedLine]]:
        """Collect the open-segment lines left out of the answers given inside the block: the
        list yielded is filled when the block ends, with the skipped lines of every open day the
        answers read (a damaged line, or one of a newer capture schema). Take ``lock`` around
        it when other threads share this Memory."""
        outer, self._touched = self._touched, set()
        found: list[SkippedLine] = []
        try:
            yield found
        finally:
            touched, self._touched = self._touched, outer
            if outer is not None:
                outer.update(touched)
        for day in sorted(touched):
            try:
                found.extend(self.day_capture(day).skipped)
            except (AfError, OSError, ValueError):
                continue  # the day went away (sealed meanwhile): nothing of it was left out

    def _times(self, day: str, kind: str, rows: list[Any]) -> list[int]:
        hit = self._ts.get((day, kind))
        if hit is not None and hit[0] is rows:
            return hit[1]
        times = [r.ts_us for r in rows]
        if day in self._captures:  # kept with a sealed day's rows; an open day's are made per call
            self._ts[(day, kind)] = (rows, times)
        return times

    def _slice(self, day: str, start_us: int, end_us: int) -> DayCapture:
        """The rows of one day inside [start_us, end_us)."""
        cap = self.day_capture(day)
        out = DayCapture(day=day, tz=self.tz, sealed=cap.sealed)
        for kind in ("snapshots", "inputs", "elements"):
            # an open day, held as columns (capture.log.opencolumns): a view of the part
            part = getattr(cap.row_columns(kind) if kind != "elements" else cap.element_source, "between", None)
            if part is not None:
                if kind == "elements":
                    out.element_source = part(start_us, end_us)
                else:
                    out.defer_rows(kind, part(start_us, end_us))
                continue
            rows = getattr(cap, kind)
            keys = self._times(day, kind, rows)
            lo, hi = bisect_left(keys, start_us), bisect_left(keys, end_us)
            setattr(out, kind, list(rows[lo:hi]))
        out.presence = [
            replace(p, ts_us=max(p.ts_us, start_us), end_us=min(p.end_us, end_us))
            for p in cap.presence if p.ts_us < end_us and p.end_us > start_us
        ]
        streams: dict[str, StreamInfo] = {}
        for s in cap.streams:  # screen sizes hold for the whole day
            streams.setdefault(s.stream, s)
        out.streams = sorted(streams.values(), key=lambda s: (s.ts_us, s.ref))
        out.recorders = list(cap.recorders)
        out.segment_hashes = dict(cap.segment_hashes)
        out.skipped = list(cap.skipped)
        return out
