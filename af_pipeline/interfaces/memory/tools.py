"""The bodies of the agent tools that summarise a period: per-app totals, the paged document,
steps of a frame, communications.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from af_pipeline.compiler.document import decode_refs, encode_refs
from af_pipeline.interfaces.memory import terms
from af_pipeline.interfaces.memory.core import (
    CHAT_APPS,
    CHAT_PAGE_KINDS,
    CHAT_SITES,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_MINUTES,
    MAIL_APPS,
    MAIL_PAGE_KINDS,
    MAIL_SITES,
    MAX_STEPS,
    BadArgument,
    FrameRef,
    Period,
    _casefold,
)
from af_pipeline.interfaces.memory.lookup import Lookup
from af_pipeline.interfaces.memory.paging import (
    _check_max_tokens,
    _page,
)
from capture.timeutil import US, day_bounds, hhmmss, to_datetime


@dataclass
class _Switches:
    interrupted_by: dict[str, Counter[str]] = field(default_factory=dict)  # app -> detour app -> times
    interrupting: dict[str, Counter[str]] = field(default_factory=dict)  # detour app -> app it was in -> times
    per_hour: Counter[str] = field(default_factory=Counter)  # "YYYY-MM-DD HH" -> switches


def _top(counts: Counter[str], n: int = 3) -> dict[str, int]:
    """The ``n`` most frequent, ties by name: a few words of description, not a list."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


class Tools(Lookup):
    """Summaries, paged documents, steps, communications."""

    # ------------------------------------------------------------------ tools' bodies

    def summary(self, p: Period | str, top: int = 20) -> dict[str, Any]:
        """Per-app ledger, one-timeline minutes first (per-monitor beside them, labelled)."""
        p = self.as_period(p)
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 200:
            raise BadArgument(f"top must be between 1 and 200, not {top!r}")
        doc, source = self.period_document(p)
        cov = doc.get("coverage", {})
        counts = self._switches(p)
        apps = []
        for a in doc.get("apps", [])[:top]:
            by, into = counts.interrupted_by.get(a["app"], Counter()), counts.interrupting.get(a["app"], Counter())
            row: dict[str, Any] = {
                "app": a["app"],
                "minutes": a.get("timeline_minutes", a["minutes"]),
                "per_monitor_minutes": a["minutes"],
                "sessions": a["frames"],
                "longest_session_min": a["longest_frame_min"],
            }
            if by:  # absent when none: a long ledger of zeros would cost every answer tokens
                row["was_interrupted"] = {"times": by.total(), "by": _top(by)}
            if into:
                row["interrupted_others"] = {"times": into.total(), "in": _top(into)}
            row["top_windows"] = [w["title"] if isinstance(w, dict) else w for w in a.get("top_windows", [])]
            apps.append(row)
        return {
            "period": p.to_json(self.tz),
            "source": source,
            "minutes": cov.get("timeline_min"),
            "per_monitor_minutes": cov.get("active_min"),
            "covered_min": cov.get("covered_min"),
            "first_activity": cov.get("first_activity"),
            "last_activity": cov.get("last_activity"),
            "distinct_apps": cov.get("distinct_apps"),
            "apps": apps,
            "apps_not_listed": max(0, len(doc.get("apps", [])) - len(apps)),
            "switches": {"total": sum(counts.per_hour.values()), "per_hour": dict(sorted(counts.per_hour.items()))},
            "note": ("minutes: all monitors on one timeline, each instant once (use these for 'how long'); "
                     "per_monitor_minutes count a dual-monitor minute on both; a session is one frame; "
                     "was_interrupted: short detours to other apps inside this app's sessions (by: the apps "
                     "detoured to); interrupted_others: times this app was the detour (in: the apps it "
                     "interrupted); both absent when none; switches: changes of app on a monitor, a detour counting twice "
                     "(there and back), per local hour"),
        }

    def _switches(self, p: Period) -> _Switches:
        """Detours to another app and app switches inside the period.

        A whole day is read from its frames: a change of app from a monitor's frame to the next
        (the frame before the day's first one, on an earlier day of the period, still tells
        whether that one began with a switch), and a folded detour to another app two, there and
        back within the hour it began; a detour to another site of the same app is no switch.
        The rows are read instead where the frames cannot tell: a part of a day (a detour may
        begin before the part and end inside it), or a day with a detour that may end in the
        next hour or two detours that may be one inside the other (a frame lists a detour's own
        detours after it, not in it). There each change of app between a monitor's consecutive
        rows counts at the later row. Detours (was_interrupted) are counted where they begin."""
        out = _Switches()
        streams: dict[str, list[FrameRef]] = {}
        by_rows: dict[str, tuple[int, int]] = {}  # days counted from their rows: [lo, hi)

        def hour(t: int) -> str:
            return to_datetime(t, self.tz).strftime("%Y-%m-%d %H")

        for day in p.days:
            try:
                frames = self.day_index(day).frames
            except BadArgument:  # a day of the period with no capture
                continue
            ds, de = day_bounds(day, self.tz)
            lo, hi = max(ds, p.start_us), min(de, p.end_us)
            if (lo, hi) != (ds, de) or self._detours_unsure(frames, hour):
                by_rows[day] = (lo, hi)
            for f in frames:
                streams.setdefault(str(f.frame.get("stream") or ""), []).append(f)

        before: dict[tuple[str, str], str] = {}  # (day, stream) -> app of the stream's last frame of an earlier day
        for stream, frames in streams.items():
            frames.sort(key=lambda f: (f.start_us, f.qid))
            for prev, f in zip([None, *frames], frames, strict=False):
                app = str(f.frame.get("app") or "")
                rows = f.day in by_rows
                if rows and prev is not None and prev.day != f.day:
                    before[(f.day, stream)] = str(prev.frame.get("app") or "")
                if not rows and prev is not None and str(prev.frame.get("app") or "") != app:
                    out.per_hour[hour(f.start_us)] += 1
                for it in f.frame.get("interruptions") or []:
                    at = self._local_us(f.day, str(it.get("at") or "00:00:00"))
                    detour = str(it.get("app") or "")
                    if detour == app or not p.start_us <= at < p.end_us:
                        continue
                    out.interrupted_by.setdefault(app, Counter())[detour] += 1
                    out.interrupting.setdefault(detour, Counter())[app] += 1
                    if not rows:
                        out.per_hour[hour(at)] += 2
        for day, (lo, hi) in by_rows.items():
            self._row_switches(day, lo, hi, before, out.per_hour, hour)
        return out

    def _detours_unsure(self, frames: list[FrameRef], hour: Callable[[int], str]) -> bool:
        """Whether a frame holds a detour that may end in the next hour, or two detours that may
        be one folded inside the other: a detour lasts at most the flicker limit, and its ``at``
        is cut to the second."""
        from af_pipeline.compiler.sessionize import PAPER_RULES  # deferred: numpy, as the documents

        near = (PAPER_RULES.flicker_s + 1) * US
        for f in frames:
            ats = sorted(self._local_us(f.day, str(it.get("at") or "00:00:00"))
                         for it in f.frame.get("interruptions") or [])
            if any(b - a <= near for a, b in pairwise(ats)) or any(hour(a) != hour(a + near) for a in ats):
                return True
        return False

    def _row_switches(self, day: str, lo: int, hi: int, before: dict[tuple[str, str], str],
                      per_hour: Counter[str], hour: Callable[[int], str]) -> None:
        """Changes of app between a monitor's consecutive rows of ``day`` whose later row is in
        [lo, hi), per hour; a monitor's first row of the day is compared with ``before``."""
        rows = self.day_capture(day).snapshots
        stop = bisect_left(self._times(day, "snapshots", rows), hi)
        last: dict[str, str] = {}
        # a monitor's rows in the compiler's order (time, then ref)
        for s in sorted(rows[:stop], key=lambda s: (s.ts_us, s.ref)):
            prev = last.get(s.stream, before.get((day, s.stream)))
            last[s.stream] = s.app
            if prev is not None and prev != s.app and s.ts_us >= lo:
                per_hour[hour(s.ts_us)] += 1

    def activity(self, p: Period | str, min_minutes: float = DEFAULT_MIN_MINUTES, evidence: str = "ranges",
                 max_tokens: int = DEFAULT_MAX_TOKENS, cursor: str | None = None) -> dict[str, Any]:
        """The period's document, frames paged to fit max_tokens."""
        p = self.as_period(p)
        if evidence not in ("ranges", "none"):
            raise BadArgument(f"evidence must be 'ranges' or 'none', not {evidence!r}")
        _check_max_tokens(max_tokens)
        doc, source = self.period_document(p, min_minutes)
        frames = doc["frames"]
        if p.kind == "day":  # JSON answers always carry day-qualified ids
            frames = [dict(f, id=f"{p.day}/{f['id']}") for f in frames]
        if evidence == "none":
            frames = [{k: v for k, v in f.items() if k != "evidence"} for f in frames]
            for f in frames:
                if f.get("interruptions"):
                    f["interruptions"] = [{k: v for k, v in i.items() if k != "evidence"} for i in f["interruptions"]]
        frames = [_shrink_frame(f) for f in frames]
        head = {k: v for k, v in doc.items() if k != "frames"}
        if "inferred" in head:
            # tier 2 grouped (category totals, frame counts): its per-frame evidence lists would
            # outgrow the header on a busy day; the day's document keeps them
            head["inferred"] = {ns: {"generator": b["generator"], "items": [
                {k: v for k, v in it.items() if k != "evidence"} | {"frames": len(it["evidence"].get("frames", []))}
                for it in b["items"]]} for ns, b in head["inferred"].items()}
        head["served"] = {"source": source, "period": p.to_json(self.tz)}
        key = ("activity", p.start_us, p.end_us, min_minutes, evidence)
        return _page(head, "frames", frames, max_tokens, cursor, key, lean=("day", "served"))

    def steps(self, p: Period | None, frame_id: str | None, query: str | None, limit: int = 100,
              cursor: str | None = None, day: str | None = None) -> dict[str, Any]:
        if (frame_id is None) == (query is None or not query.strip()):
            raise BadArgument("give exactly one of frame_id (e.g. 2026-06-03/f-0012) or query (words to find a task)")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_STEPS:
            raise BadArgument(f"limit must be between 1 and {MAX_STEPS}, not {limit!r}")
        others: list[str] = []
        if frame_id is not None:
            f = self.resolve_frame(frame_id, day)
        else:
            per = p or self.period()
            ranked = self._match(per, query or "")
            if not ranked:
                raise BadArgument(f"no frame in {per.label} matches {query!r} (app, site, window title, page, clicked target)")
            f = ranked[0]
            others = [r.qid for r in ranked[1:11]]
        all_steps = self._frame_steps(f)
        for st in all_steps:
            st["evidence"] = encode_refs(st.pop("refs"))
        brief: dict[str, Any] = {"id": f.qid}
        brief.update({k: f.frame[k] for k in ("app", "site", "stream", "start", "end", "active_min") if k in f.frame})
        head: dict[str, Any] = {
            "frame": brief,
            "other_matches": others,
            "typed_text": "included" if self.include_typed_text else "excluded (operator did not enable it)",
        }
        return _page(head, "steps", all_steps, DEFAULT_MAX_TOKENS, cursor, ("steps", f.qid, limit),
                     lean=("frame",), limit=limit)

    def _match(self, p: Period, query: str) -> list[FrameRef]:
        words = terms.terms(query)
        out = []
        with self.lock:
            for d in p.days:
                try:
                    idx = self.search_index(d)
                except BadArgument:
                    continue
                for f, hay, toks in zip(idx.frames, idx.hay or [], idx.tokens or [], strict=True):
                    if f.start_us >= p.end_us or f.end_us <= p.start_us:
                        continue
                    found = [terms.match(w, hay, toks) for w in words]  # as search: identifiers whole
                    if any(found):
                        out.append(((-sum(1 for m in found if m), -sum(found), -float(f.frame.get("active_min", 0)),
                                     f.qid), f))
        return [f for _, f in sorted(out, key=lambda r: r[0])]

    def _frame_steps(self, f: FrameRef) -> list[dict[str, Any]]:
        # deferred: entities load the public suffix list (~0.6 s), see warm()
        from af_pipeline.compiler.actions import actions_for_day
        from af_pipeline.compiler.enrich import enrich

        cap = self.day_capture(f.day)
        refs: set[str] = set()
        try:
            refs = set(decode_refs(f.frame.get("evidence", {}).get("snapshots", [])))
        except (ValueError, KeyError, TypeError):
            refs = set()
        times = [s.ts_us for s in cap.snapshots if s.ref in refs]
        start = min(times) if times else f.start_us
        end = max(max(times) if times else f.end_us, f.end_us)
        stream = f.frame.get("stream")
        enriched = [e for e in enrich(self._slice(f.day, start, end + 1))
                    if (e.stream or e.event.stream) == stream]
        texts: dict[str, str] = {}
        if self.include_typed_text:
            texts = {e.event.ref: e.key_text for e in enriched if e.key_text}
        out = []
        for a in actions_for_day(f.day, enriched):
            step: dict[str, Any] = {"at": hhmmss(a.ts_us, self.tz), "op": {"app": "focus"}.get(a.op, a.op),
                                    "target": a.target}
            if a.role:
                step["role"] = a.role
            if a.app:
                step["app"] = a.app
            if a.url and a.op in ("nav", "click"):
                step["url"] = a.url
            if a.repeat > 1:
                step["repeat"] = a.repeat
            if a.op == "type" and texts:
                typed = "".join(texts.get(r, "") for r in a.refs)
                if typed:
                    step["typed_text"] = typed
            step["refs"] = list(a.refs)
            out.append(step)
        return out

    def communications(self, p: Period | str, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        p = self.as_period(p)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200:
            raise BadArgument(f"limit must be between 1 and 200, not {limit!r}")
        frames = self.period_frames(p, 0.0)
        if not frames:
            raise self._no_capture(p.label)
        surfaces: dict[tuple[str, str, str], dict[str, Any]] = {}
        for f in frames:
            fr = f.frame
            kind = _comm_kind(fr)
            if kind is None:
                continue
            s = surfaces.setdefault((kind, fr["app"], fr.get("site") or ""), {
                "kind": kind, "app": fr["app"], "site": fr.get("site"), "minutes": 0.0, "frames": [], "threads": {}})
            s["minutes"] += float(fr.get("active_min", 0.0))
            s["frames"].append(f.qid)
            for t in fr.get("windows") or []:
                if _LIST_VIEW.search(str(t.get("title") or "")):
                    continue  # an inbox, a folder or search results: a list of threads, not one
                th = s["threads"].setdefault(t["title"], {"subject": t["title"], "minutes": 0.0, "frames": []})
                th["minutes"] += float(t.get("minutes", 0.0))
                th["frames"].append(f.qid)
            for pg in fr.get("pages") or []:
                if pg.get("entity") and pg.get("kind") in MAIL_PAGE_KINDS + CHAT_PAGE_KINDS \
                        and pg.get("kind") not in LIST_PAGE_KINDS:
                    name = f"{pg['kind']}: {pg['entity']}"
                    th = s["threads"].setdefault(name, {"subject": name, "minutes": 0.0, "frames": []})
                    th["frames"].append(f.qid)
        # an app surface (Slack, Mail) has the app's one-timeline minutes from the ledger; a site
        # inside a browser has only its frames' per-monitor minutes (the ledger's domain would
        # mix mail with the rest of the site)
        doc, _ = self.period_document(p, 0.0)
        timeline = {a["app"]: a.get("timeline_minutes") for a in doc.get("apps", [])}
        rows = []
        for s in sorted(surfaces.values(), key=lambda s: (-s["minutes"], s["app"], s["site"] or "")):
            threads = sorted(s["threads"].values(), key=lambda t: (-t["minutes"], t["subject"]))
            for t in threads:
                t["per_monitor_minutes"] = round(t.pop("minutes"), 2)
                fr_ids = sorted(set(t["frames"]))
                t["frames"] = fr_ids[:5]
                if len(fr_ids) > 5:
                    t["more_frames"] = len(fr_ids) - 5
            row = {"kind": s["kind"], "app": s["app"], "site": s["site"]}
            if not s["site"] and timeline.get(s["app"]) is not None:
                row["minutes"] = timeline[s["app"]]
            row.update({"per_monitor_minutes": round(s["minutes"], 2), "frames": len(s["frames"]),
                        "threads": threads[:limit], "threads_not_listed": max(0, len(threads) - limit)})
            rows.append(row)
        key = ("comms", p.start_us, p.end_us, limit)
        head = {"period": p.to_json(self.tz),
                "note": ("subjects are window titles and page references; message bodies are never read; "
                         "the frame ids are the evidence (get_steps / get_activity); minutes: the app on "
                         "one timeline; per_monitor_minutes: its frames, a two-monitor minute twice")}
        return _page(head, "surfaces", rows, DEFAULT_MAX_TOKENS, cursor, key, lean=("period",))


LIST_PAGE_KINDS = ("inbox",)  # page kinds that list threads (an inbox), not one thread


# Window titles of mail and chat views that list threads rather than show one (Gmail's
# "Inbox (3) - jane@x - Gmail", "Search results - ...", a web search for "gmail"): not subjects.
_LIST_VIEW = re.compile(
    r"^(?:inbox|sent(?: mail| items)?|drafts|starred|snoozed|important|all mail|spam|junk(?: email)?|trash|"
    r"deleted items|archive|outbox|search results|unread)\b(?:\s*\(\d+\))?(?:\s*[-–|]|$)"
    r"|\bsearch results\b|\s[-–]\s(?:google|bing|duckduckgo) search$",
    re.IGNORECASE)


def _comm_kind(frame: dict[str, Any]) -> str | None:
    app = _casefold(frame.get("app"))
    site = _casefold(frame.get("site"))
    kinds = {str(p.get("kind")) for p in frame.get("pages") or []}
    if site:
        if any(site == s or site.endswith("." + s) for s in MAIL_SITES) or \
                kinds & set(MAIL_PAGE_KINDS):
            return "mail"
        if any(site == s or site.endswith("." + s) for s in CHAT_SITES) or \
                kinds & set(CHAT_PAGE_KINDS):
            return "messaging"
        return None
    words = set(re.split(r"[^a-z0-9.]+", app))
    if any(a in words or app == a for a in MAIL_APPS):
        return "mail"
    if any(a in words or app == a for a in CHAT_APPS):
        return "messaging"
    return None


MAX_LISTED_INTERRUPTIONS = 20


def _shrink_frame(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame with more folded interruptions than an answer can carry (a real RPM log has one
    with 343: 34k tokens) lists the longest ones, in time order, and says how many are left
    out; ``interruption_s`` keeps the total of all of them."""
    its = frame.get("interruptions") or []
    if len(its) <= MAX_LISTED_INTERRUPTIONS:
        return frame
    keep = sorted(sorted(range(len(its)), key=lambda i: (-float(its[i].get("seconds", 0)), i))
                  [:MAX_LISTED_INTERRUPTIONS])
    return dict(frame, interruptions=[its[i] for i in keep], interruptions_not_listed=len(its) - len(keep))
