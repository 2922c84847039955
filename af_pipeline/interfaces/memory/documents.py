"""Documents and context blocks of days and periods, and frames with stable, day-qualified ids.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from af_pipeline.compiler import emit, layouts
from af_pipeline.compiler.document import decode_refs
from af_pipeline.compiler.emit import DEFAULT_BUDGET, context_block
from af_pipeline.interfaces.memory import terms
from af_pipeline.interfaces.memory.core import (
    _EPOCH,
    BARE_ID,
    CACHED_DOCS,
    CACHED_PIECES,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_MINUTES,
    FORMAT_FILES,
    QUALIFIED_ID,
    BadArgument,
    FrameRef,
    Period,
    _DayIndex,
)
from af_pipeline.interfaces.memory.published import Published
from capture.errors import AfError
from capture.files import canonical_json
from capture.timeutil import US, day_bounds, parse_day


class _Edge(NamedTuple):
    """What window_context reads of a snapshot row (an open day's rows are held as columns)."""

    ts_us: int
    stream: str
    end_us: int | None


class Documents(Published):
    """Documents, context blocks, frames of periods."""

    # ------------------------------------------------------------------ documents

    def _check_min(self, min_minutes: float) -> float:
        if isinstance(min_minutes, bool) or not isinstance(min_minutes, (int, float)) or \
                not 0 <= min_minutes <= 24 * 60:
            raise BadArgument(f"min_minutes must be between 0 and 1440, not {min_minutes!r}")
        return float(min_minutes)

    def day_document(self, day: str, min_minutes: float = DEFAULT_MIN_MINUTES,
                     live: bool = False) -> tuple[dict[str, Any], str]:
        """(document, source) of one local day: published and verified, else compiled live."""
        min_minutes = self._check_min(min_minutes)
        layout = self.layout
        with self.lock:
            typed = self.include_typed_text
            if not live and layout == layouts.DEFAULT_LAYOUT and self._servable(day, min_minutes, typed):
                doc = self._published_document(day, min_minutes)
                if doc is not None:
                    return doc, f"published/{day}/document.json"
            key = (day, min_minutes, typed, layout, self._fingerprint(day))
            hit = self._docs.get(key)
            if hit is not None:
                return hit
            # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
            from af_pipeline.compiler.categories import rules_in
            from af_pipeline.compiler.compile import CompileOptions, compile_day

            cap = self.day_capture(day)
            if not cap.count("snapshots") and not cap.count("inputs"):
                raise self._no_capture(day)
            sealed = bool(self.log.segment_paths(day))
            follow = None if sealed else self._open.get(day)
            state = okey = None
            if follow:  # an open day: a document compiled from exactly these rows by an earlier process
                from af_pipeline.interfaces import open_cache

                state, okey = open_cache.files_state(follow), self._options_key(min_minutes, typed, layout)
                disk = self._disk_docs.get(day)
                text = disk[1].get(okey) if disk is not None and disk[0] == state else None
                doc = json.loads(text) if text is not None else None
            else:
                doc = None
            if doc is None:
                doc = compile_day(cap, CompileOptions(min_minutes=min_minutes, include_typed_text=typed,
                                                      layout=layout, categories=rules_in(self.home.root)))
                # kept as text only to be written to the open-day cache: a server that never
                # writes it (the MCP server) would hold a second copy of the live day's document
                if self.write_cache and follow and state is not None and okey is not None:
                    disk = self._disk_docs.get(day)
                    docs = dict(disk[1]) if disk is not None and disk[0] == state else {}
                    docs[okey] = canonical_json(doc)
                    self._disk_docs[day] = (state, docs)
                    self.save_open_cache(day)
            source = "compiled from the sealed log" if sealed else "compiled live from the log (includes unsealed data)"
            self._docs = {k: v for k, v in self._docs.items() if k[:4] != key[:4]}  # older versions
            while len(self._docs) >= CACHED_DOCS:
                self._docs.pop(next(iter(self._docs)))
            self._docs[key] = (doc, source)
            return doc, source

    def document(self, day: str | None = None, min_minutes: float = DEFAULT_MIN_MINUTES,
                 live: bool = False) -> dict[str, Any]:
        """One day's schema v1 document ("today", "yesterday" or YYYY-MM-DD): published and
        verified against its manifest when it can be, else compiled live from the log."""
        return self.day_document(self.parse_day(day), min_minutes, live)[0]

    def published_text(self, day: str, fmt: str) -> str | None:
        """The verified published rendering of a day (json, yaml, md or the default-budget
        context block), or None when it cannot be served as published."""
        if fmt not in FORMAT_FILES or self.layout != layouts.DEFAULT_LAYOUT or \
                not self._servable(day, DEFAULT_MIN_MINUTES, self.include_typed_text):
            return None
        if self._published_document(day, DEFAULT_MIN_MINUTES) is None:
            return None
        path = self.verified_file(day, FORMAT_FILES[fmt])
        return None if path is None else path.read_text(encoding="utf-8")

    def render(self, document: dict[str, Any], fmt: str = "json", budget_tokens: int = DEFAULT_BUDGET) -> str:
        """A document as json | yaml | md | context (typed text only if this Memory opted in)."""
        if fmt not in emit.FORMATS:
            raise BadArgument(f"format must be one of {', '.join(emit.FORMATS)}, not {fmt!r}")
        return emit.render(document, fmt, include_typed_text=self.include_typed_text, budget_tokens=budget_tokens)

    def _check_budget(self, budget_tokens: int) -> int:
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or \
                not 200 <= budget_tokens <= DEFAULT_MAX_TOKENS:
            raise BadArgument(f"budget_tokens must be a whole number between 200 and {DEFAULT_MAX_TOKENS}, "
                              f"not {budget_tokens!r}")
        return budget_tokens

    def context_block(self, day: str | Period | None = None, budget_tokens: int = DEFAULT_BUDGET,
                      min_minutes: float = DEFAULT_MIN_MINUTES) -> str:
        """The token-budgeted context block of a day or a period."""
        return self.context(self.as_period(day), budget_tokens, min_minutes)[0]

    def context(self, p: Period | str, budget_tokens: int = DEFAULT_BUDGET,
                min_minutes: float = DEFAULT_MIN_MINUTES) -> tuple[str, str]:
        """(block, source) for a period."""
        p = self.as_period(p)
        self._check_budget(budget_tokens)
        if p.kind == "day" and budget_tokens == DEFAULT_BUDGET and min_minutes == DEFAULT_MIN_MINUTES:
            text = self.published_text(p.day, "context")
            if text is not None:
                return text, f"published/{p.day}/context.txt"
        doc, source = self.period_document(p, min_minutes)
        return context_block(doc, budget_tokens=budget_tokens, include_typed_text=self.include_typed_text), source

    # ------------------------------------------------------------------ frames and periods

    def _local_us(self, day: str, clock: str) -> int:
        """HH:MM:SS on a local day in UTC microseconds (an ambiguous DST hour takes the first)."""
        d = parse_day(day)
        h, m, s = (int(x) for x in clock.split(":"))
        dt = datetime(d.year, d.month, d.day, h, m, min(s, 59), tzinfo=self.zone)
        return (dt - _EPOCH) // timedelta(microseconds=1)

    def day_index(self, day: str, min_minutes: float = DEFAULT_MIN_MINUTES) -> _DayIndex:
        """Frames of a day document with their absolute bounds."""
        doc, _ = self.day_document(day, min_minutes)
        key = (day, id(doc))
        hit = self._index.get(key)
        if hit is not None:
            return hit
        frames: list[FrameRef] = []
        for f in doc.get("frames", []):
            s = self._local_us(day, f["start"])
            e = self._local_us(day, f["end"])
            if e < s:  # the frame's last credit ran past midnight
                e += 24 * 3600 * US
            frames.append(FrameRef(day, s, e, f))
        idx = _DayIndex(frames)
        live = {id(d) for d, _ in self._docs.values()} | {id(d) for _, d in self._published.values()}
        self._index = {k: v for k, v in self._index.items() if k[1] in live}
        self._index[key] = idx
        return idx

    def search_index(self, day: str) -> _DayIndex:
        """The day's index with its searchable fields: every window title a frame's rows showed
        and every host of their URLs (read from the log), not only the three titles and the
        site the document lists."""
        idx = self.day_index(day, 0.0)
        if idx.hay is None or idx.fields is None or idx.tokens is None:
            typed = self.include_typed_text
            frames = [f.frame for f in idx.frames]
            fields: list[list[tuple[str, str]]] = []
            for f, (extra, hosts) in zip(frames, self._row_titles(day, frames), strict=True):
                listed = {str(w.get("title") or "") for w in f.get("windows") or []}
                fields.append(list(_fields(f, typed)) + [("title", t) for t in extra if t not in listed]
                              + [("host", h) for h in hosts])
            idx.fields = fields
            idx.hay = ["\n".join(text for _, text in fs).casefold() for fs in fields]
            idx.tokens = [terms.tokens(hay) for hay in idx.hay]
        return idx

    def _row_titles(self, day: str, frames: Sequence[dict[str, Any]]) -> list[tuple[list[str], list[str]]]:
        """Per frame, the distinct window titles and URL hosts of its snapshot rows and of its
        interruptions' rows, in row order."""
        try:
            rows = self._row_texts(day)
        except (AfError, OSError, ValueError):
            return [([], []) for _ in frames]

        def texts(evidence: Any, which: int) -> list[str]:
            try:
                refs = decode_refs((evidence or {}).get("snapshots", []))
            except (ValueError, KeyError, TypeError, AttributeError):
                refs = []
            seen: dict[str, None] = {}
            for r in sorted(refs, key=_ref_key):
                text = rows.get(r, (None, None))[which]
                if text:
                    seen.setdefault(text, None)
            return list(seen)

        out = []
        for f in frames:
            titles, hosts = texts(f.get("evidence"), 0), texts(f.get("evidence"), 1)
            # a folded detour's rows belong to the frame it interrupted: its titles are found there
            for i in f.get("interruptions") or []:
                titles += [t for t in texts(i.get("evidence"), 0) if t not in titles]
                hosts += [h for h in texts(i.get("evidence"), 1) if h not in hosts]
            out.append((titles, hosts))
        return out

    def _row_texts(self, day: str) -> dict[str, tuple[str | None, str | None]]:
        """ref -> (window title, URL host) of a day's snapshot rows. A sealed day's columns come
        straight from its Parquet segments (8 ms where reading the whole day takes 300 ms); an
        open day's from the rows already followed."""
        files = [str(f) for f in self.log.segment_files(day, "snapshots")]
        if not files:
            refs, windows, urls = self.day_capture(day).values("snapshots", ("ref", "window", "url"))
            return {r: (w, _host(u)) for r, w, u in zip(refs, windows, urls, strict=True) if w or u}
        if self._duck is None:
            import duckdb  # DuckDB: only for window titles, off `af mcp`'s start-up path

            self._duck = duckdb.connect()
        rows = self._duck.execute(
            'SELECT ref, "window", url FROM read_parquet(?, union_by_name = true) '
            'WHERE "window" IS NOT NULL OR url IS NOT NULL', [files]).fetchall()
        return {str(r): (None if w is None else str(w), _host(u)) for r, w, u in rows}

    def period_frames(self, p: Period | str, min_minutes: float = DEFAULT_MIN_MINUTES) -> list[FrameRef]:
        """Frames of the period's day documents that overlap it, in time order (whole frames:
        a frame is never cut, so its id and numbers are the same in every period)."""
        p = self.as_period(p)
        out: list[FrameRef] = []
        for d in p.days:
            try:
                idx = self.day_index(d, min_minutes)
            except BadArgument:
                continue  # a day without capture inside a longer period
            out.extend(f for f in idx.frames if f.start_us < p.end_us and f.end_us > p.start_us)
        out.sort(key=lambda f: (f.start_us, f.day, str(f.frame.get("stream") or ""), f.frame["id"]))
        return out

    def period_document(self, p: Period | str, min_minutes: float = DEFAULT_MIN_MINUTES) -> tuple[dict[str, Any], str]:
        """A document for any period. One day: that day's document (ids bare; its ``day`` names
        the day). Otherwise frames are day-qualified (``DAY/f-0003``), and for a part of a day: the ledger and coverage compiled from the rows inside the period. Several
        days: their ledgers summed. Frames are always whole frames of the day documents."""
        p = self.as_period(p)
        min_minutes = self._check_min(min_minutes)
        if p.kind == "day":  # the day's own document, bare ids: its header names the day
            return self.day_document(p.day, min_minutes)
        with self.lock:
            pieces: list[tuple[dict[str, Any], str]] = []
            for d in p.days:
                ds, de = day_bounds(d, self.tz)
                lo, hi = max(ds, p.start_us), min(de, p.end_us)
                if lo >= hi:
                    continue
                if (lo, hi) == (ds, de):
                    try:
                        pieces.append(self.day_document(d, min_minutes))
                    except BadArgument:
                        continue
                else:
                    piece = self._piece(d, lo, hi, min_minutes)
                    if piece is not None:
                        pieces.append(piece)
            if not pieces:
                raise self._no_capture(p.label)
            frames = self.period_frames(p, min_minutes)
            base = dict(pieces[0][0]) if len(pieces) == 1 else _merge([d for d, _ in pieces])
            base["frames"] = [dict(f.frame, id=f.qid) for f in frames]
            base["window"] = {k: v for k, v in p.to_json(self.tz).items() if k in ("start", "end")}
            base = self._recategorized(base)
            sources = sorted({s for _, s in pieces})
            return base, sources[0] if len(sources) == 1 else "; ".join(sources)

    def _recategorized(self, doc: dict[str, Any]) -> dict[str, Any]:
        """doc with its categories block made again over its own frames: the pieces' blocks name
        frames by their bare day ids, the period's frames are day-qualified."""
        from af_pipeline.compiler.categories import NAMESPACE, categorize, rules_in

        if NAMESPACE in doc.get("inferred", {}):
            doc = dict(doc, inferred={k: v for k, v in doc["inferred"].items() if k != NAMESPACE})
        return categorize(doc, rules_in(self.home.root))

    def _piece(self, day: str, lo: int, hi: int, min_minutes: float) -> tuple[dict[str, Any], str] | None:
        # deferred: numpy/DuckDB, so `af mcp` answers initialize before paying for them
        from af_pipeline.compiler.categories import rules_in
        from af_pipeline.compiler.compile import CompileOptions, compile_day, window_context

        key = (day, lo, hi, min_minutes, self.include_typed_text, self._fingerprint(day))
        hit = self._slices.pop(key, None)
        if hit is None:
            cap = self._slice(day, lo, hi)
            if not cap.count("snapshots") and not cap.count("inputs"):
                return None
            # the rows just outside the part whose credit crosses its edges: compiled with the
            # window, each row earns what it earns in the whole day, clipped to the part
            whole = self.day_capture(day)
            columns = whole.row_columns("snapshots")
            if columns is not None and hasattr(columns, "take"):  # an open day, as columns
                ts, streams, ends = whole.values("snapshots", ("ts_us", "stream", "end_us"))
                first, stop = bisect_left(ts, lo), bisect_left(ts, hi)
                before, after = window_context([_Edge(*r) for r in zip(ts, streams, ends, strict=True)],
                                               first, stop, lo, hi)
                cap.defer_rows("snapshots", columns.take([*before, *range(first, stop), *after]))
            else:
                rows = whole.snapshots
                keys = self._times(day, "snapshots", rows)
                before, after = window_context(rows, bisect_left(keys, lo), bisect_left(keys, hi), lo, hi)
                cap.snapshots = [rows[i] for i in before] + cap.snapshots + [rows[i] for i in after]
            hit = compile_day(cap, CompileOptions(min_minutes=min_minutes, include_typed_text=self.include_typed_text,
                                                  layout=self.layout, categories=rules_in(self.home.root),
                                                  window=(lo, hi)))
            # "The last N hours" ends at a new now on every call and a live day's rows change with
            # each sync pass, so most pieces are never asked again: keep none of an older version
            # of the day and only the few newest (each holds a compiled document; 17 of them were
            # most of the MCP server's growth in the soak, docs/benchmarks.md).
            self._slices = {k: v for k, v in self._slices.items() if k[0] != day or k[5] == key[5]}
            while len(self._slices) >= CACHED_PIECES:
                self._slices.pop(next(iter(self._slices)))
        self._slices[key] = hit  # most recently used last
        sealed = bool(self.log.segment_paths(day))
        return hit, ("compiled from the sealed log" if sealed else "compiled live from the log (includes unsealed data)")

    def resolve_frame(self, frame_id: str, day: str | None = None) -> FrameRef:
        """A frame by its day-qualified id (``2026-06-03/f-0003``), or by a bare id with its day.
        An id is never mapped to another day's frame."""
        fid = (frame_id or "").strip()
        m = QUALIFIED_ID.match(fid)
        if m:
            fday, bare = m.group(1), m.group(2)
            if day is not None and self.parse_day(day) != fday:
                raise BadArgument(f"frame {fid} belongs to {fday}, not to day {day}; drop day or use that day's id")
        elif BARE_ID.match(fid):
            if day is None:
                raise BadArgument(f"frame id {fid} needs its day: give the day-qualified id (e.g. "
                                  f"{self.today()}/{fid}) as returned by the tools, or day=YYYY-MM-DD")
            fday, bare = self.parse_day(day), fid
        else:
            raise BadArgument(f"frame_id must look like 2026-06-03/f-0012 (day/frame), not {frame_id!r}")
        idx = self.day_index(fday, 0.0)
        hit = next((f for f in idx.frames if f.frame["id"] == bare), None)
        if hit is None:
            span = f"{idx.frames[0].frame['id']}..{idx.frames[-1].frame['id']}" if idx.frames else "none"
            raise BadArgument(f"no frame {bare} on {fday} (frames there: {span})")
        return hit


def _fields(f: dict[str, Any], typed: bool) -> Iterable[tuple[str, str]]:
    """A frame's searchable fields, (name, text)."""
    yield "app", str(f.get("app") or "")
    if f.get("site"):
        yield "site", str(f["site"])
    for w in f.get("windows") or []:
        yield "title", str(w.get("title") or "")
    for p in f.get("pages") or []:
        # the entity (a ticket key, a PR, a person) and its kind apart: a kind label such as
        # "design_file" is not the user's words and must not join them into one field
        if p.get("entity"):
            yield "page", str(p["entity"])
        yield "page_kind", str(p.get("kind") or "")
    for c in f.get("clicked") or []:
        yield "clicked", str(c.get("target") or "")
    for i in f.get("interruptions") or []:
        yield "interruption", " ".join(str(x) for x in (i.get("app"), i.get("site")) if x)
    if typed and f.get("typed_text"):
        yield "typed", str(f["typed_text"])


def _host(url: object) -> str | None:
    """The host of a URL, lowercased (None when it has none)."""
    if not isinstance(url, str) or not url:
        return None
    try:
        host = urlsplit(url if "//" in url else f"//{url}").hostname
    except ValueError:
        return None
    return host or None


def _ref_key(ref: str) -> tuple[str, int, str]:
    """Row references in their numeric order (frames:93 before frames:102)."""
    head, _, tail = ref.rpartition(":")
    return (head, int(tail), "") if tail.isdigit() else (ref, -1, ref)


def _merge(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several days' documents as one period document: ledgers and coverage summed."""
    first = docs[0]
    apps: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for a in doc.get("apps", []):
            m = apps.setdefault(a["app"], {"app": a["app"], "minutes": 0.0, "timeline_minutes": 0.0, "frames": 0,
                                           "interruptions": 0, "longest_frame_min": 0.0, "top_windows": []})
            m["minutes"] += float(a["minutes"])
            m["timeline_minutes"] += float(a.get("timeline_minutes") or 0.0)
            m["frames"] += int(a["frames"])
            m["interruptions"] += int(a.get("interruptions", 0))
            m["longest_frame_min"] = max(m["longest_frame_min"], float(a["longest_frame_min"]))
            if not m["top_windows"]:
                m["top_windows"] = list(a.get("top_windows", []))
    domains: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for d in doc.get("domains", []):
            m = domains.setdefault(d["domain"], {"domain": d["domain"], "minutes": 0.0, "timeline_minutes": 0.0,
                                                 "visits": 0})
            m["minutes"] += float(d["minutes"])
            m["timeline_minutes"] += float(d.get("timeline_minutes") or 0.0)
            m["visits"] += int(d["visits"])
    for m in [*apps.values(), *domains.values()]:
        m["minutes"] = round(m["minutes"], 2)
        m["timeline_minutes"] = round(m["timeline_minutes"], 2)
    covs = [d["coverage"] for d in docs]

    def total(key: str) -> float:
        return round(sum(float(c.get(key) or 0.0) for c in covs), 2)

    firsts = [c["first_activity"] for c in covs if c.get("first_activity")]
    lasts = [c["last_activity"] for c in covs if c.get("last_activity")]
    coverage: dict[str, Any] = {
        "first_activity": f"{docs[0]['day']} {firsts[0]}" if firsts else None,
        "last_activity": f"{docs[-1]['day']} {lasts[-1]}" if lasts else None,
        "active_min": total("active_min"), "timeline_min": total("timeline_min"),
        "covered_min": total("covered_min"), "span_min": total("span_min"),
        "dual_monitor_min": total("dual_monitor_min"), "gap_min": total("gap_min"),
        "distinct_apps": len(apps), "frames": int(total("frames")),
        "presence_only": {"minutes": round(sum(float(c["presence_only"]["minutes"]) for c in covs), 2)},
        "gaps": [], "days": len(docs),
    }
    blind: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for b in doc.get("blind_spots", []):
            blind.setdefault(b["kind"], {"kind": b["kind"], "note": b.get("note", "")})
    om = [d["omitted"] for d in docs]
    return {
        "schema_version": first.get("schema_version"),
        "day": f"{docs[0]['day']}..{docs[-1]['day']}",
        "tz": first["tz"],
        "coverage": coverage,
        "apps": sorted(apps.values(), key=lambda a: (-a["timeline_minutes"], -a["minutes"], a["app"])),
        "domains": sorted(domains.values(), key=lambda d: (-d["timeline_minutes"], -d["minutes"], d["domain"])),
        "omitted": {"min_minutes": om[0]["min_minutes"], "frames": sum(o["frames"] for o in om),
                    "minutes": round(sum(float(o["minutes"]) for o in om), 2)},
        "blind_spots": sorted(blind.values(), key=lambda b: b["kind"]),
        "privacy": first.get("privacy", {}),
        "days": [d["day"] for d in docs],
    }
