"""Lookups over frames: what was on screen at an instant, and search across days.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from af_pipeline.compiler.document import decode_refs
from af_pipeline.interfaces.memory import terms
from af_pipeline.interfaces.memory.core import (
    MAX_SEARCH_DAYS,
    BadArgument,
    FrameRef,
    Period,
)
from af_pipeline.interfaces.memory.documents import (
    Documents,
    _ref_key,
)
from af_pipeline.interfaces.memory.paging import (
    _cursor_offset,
    _make_cursor,
    fit,
)
from capture.timeutil import hhmmss, local_day, parse_day, to_datetime


class Lookup(Documents):
    """What was on screen when; search."""

    # ------------------------------------------------------------------ lookups

    def activity_at(self, when: str, around: int = 1) -> dict[str, Any]:
        """What covered an instant on each monitor: the frame (or the gap), and ``around`` frames
        before and after it."""
        if isinstance(around, bool) or not isinstance(around, int) or not 0 <= around <= 5:
            raise BadArgument(f"around must be between 0 and 5, not {around!r}")
        t = self.parse_time(when, "time")
        if t > self.now_us():
            raise BadArgument(f"time {when} is in the future")
        day = local_day(t, self.tz)
        try:
            idx = self.day_index(day, 0.0)
        except BadArgument:
            raise self._no_capture(f"{day} (asked for {when})") from None
        streams: dict[str, list[FrameRef]] = {}
        for f in idx.frames:
            streams.setdefault(str(f.frame.get("stream") or ""), []).append(f)
        out = []
        for stream in sorted(streams):
            frames = streams[stream]
            pos = bisect_left([f.start_us for f in frames], t + 1) - 1  # last frame starting <= t
            covering = frames[pos] if pos >= 0 and frames[pos].end_us > t else None
            before = frames[max(0, pos - around + (0 if covering else 1)):pos + (0 if covering else 1)] if pos >= 0 else []
            after = frames[pos + 1:pos + 1 + around]
            row: dict[str, Any] = {"stream": stream}
            if covering:
                row["at"] = self._brief(covering)
                detour = self._detour_at(covering, t)
                if detour is not None:
                    row["detour"] = detour
            else:
                gap_from = hhmmss(frames[pos].end_us, self.tz) if pos >= 0 else None
                gap_to = hhmmss(frames[pos + 1].start_us, self.tz) if pos + 1 < len(frames) else None
                row["at"] = None
                row["gap"] = {"from": gap_from, "to": gap_to,
                              "note": "no frame on this monitor at that time (no capture, or a gap over 5 min)"}
            row["before"] = [self._brief(f, short=True) for f in before]
            row["after"] = [self._brief(f, short=True) for f in after]
            out.append(row)
        return {"time": to_datetime(t, self.tz).isoformat(timespec="seconds"), "day": day, "tz": self.tz,
                "streams": out}

    def _detour_at(self, f: FrameRef, t: int) -> dict[str, Any] | None:
        """The short detour folded into frame ``f`` that covers instant ``t`` (from its start, for
        its seconds), or None: at that instant the screen showed the detour, not the frame."""
        for it in f.frame.get("interruptions") or []:
            at = self._local_us(f.day, str(it.get("at") or "00:00:00"))
            if at <= t <= at + round(float(it.get("seconds") or 0) * 1_000_000):
                out = {k: it[k] for k in ("app", "site", "at", "seconds") if k in it}
                out["note"] = "at this instant the screen showed this short detour, folded into the frame above"
                return out
        return None

    def _brief(self, f: FrameRef, short: bool = False) -> dict[str, Any]:
        fr = f.frame
        out: dict[str, Any] = {"id": f.qid, "app": fr["app"], "start": fr["start"], "end": fr["end"],
                               "active_min": fr["active_min"]}
        if fr.get("site"):
            out["site"] = fr["site"]
        if fr.get("windows"):
            out["window"] = fr["windows"][0]["title"]
        if not short:
            if fr.get("pages"):
                out["pages"] = [f"{p['kind']} {p.get('entity') or ''}".strip() for p in fr["pages"][:3]]
            v = fr.get("input") or {}
            out["input"] = {k: v[k] for k in ("keys", "clicks", "text") if v.get(k)}
            if fr.get("clicked"):
                out["clicked"] = [c["target"] for c in fr["clicked"][:3]]
        return out

    def search(self, query: str, start: str | None = None, end: str | None = None, limit: int = 20,
               cursor: str | None = None, order: str = "relevance", group_by: str | None = None) -> dict[str, Any]:
        """Ranked frames across days matching the query's terms (memory/terms.py: identifiers
        whole, a term matches a token, never part of one; each term may match a different field):
        apps, window titles, sites, URL hosts, typed pages, clicked targets, communications
        subjects, and typed text only when opted in. Frames holding every term rank first (exact
        matches before word starts), then those holding the query as typed in one field, then
        every term in one field, then by field-weighted matches. ``order="recent"`` /
        ``"oldest"`` keep the best-matching tier only, newest / oldest first ("when did I last /
        first ..."). ``group_by="day"``: instead of frames, the days of that tier, each with its
        frame count, minutes and first and last matching time ("on which days ...")."""
        if order not in ORDERS:
            raise BadArgument(f"order must be one of {', '.join(map(repr, ORDERS))}, not {order!r}")
        if group_by not in (None, "day"):
            raise BadArgument(f"group_by must be 'day' or absent, not {group_by!r}")
        words = terms.terms(query)
        phrase = " ".join(query.casefold().split())
        if not words:
            raise BadArgument("query must contain at least one word (e.g. 'PROJ-42' or 'expense form')")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise BadArgument(f"limit must be between 1 and 100, not {limit!r}")
        days = self.days()
        if not days:
            raise self._no_capture("search")
        if start is None and end is None:  # the newest year of the log, however old it is
            last = min(days[-1], self.today())
            first = max(days[0], (parse_day(last) - timedelta(days=MAX_SEARCH_DAYS - 1)).isoformat())
            p = self.period(start=first, end=last, max_days=MAX_SEARCH_DAYS)
        else:
            p = self.period(start=start or days[0], end=end, max_days=MAX_SEARCH_DAYS)
        known = set(days)
        scored: list[tuple[tuple[Any, ...], FrameRef, list[str], frozenset[str]]] = []
        with self.lock:
            for d in p.days:
                if d not in known:
                    continue
                idx = self.search_index(d)
                for i, hay in enumerate(idx.hay or []):
                    if not any(w in hay for w in words):  # a cheap test every match passes
                        continue
                    toks = (idx.tokens or [])[i]
                    found = [terms.match(w, hay, toks) for w in words]
                    if not any(found):
                        continue
                    f = idx.frames[i]
                    if f.start_us >= p.end_us or f.end_us <= p.start_us:
                        continue
                    phrased, together, score, fields, kinds = _score((idx.fields or [])[i], words, phrase)
                    tier = (-sum(1 for m in found if m), -sum(1 for m in found if m == terms.EXACT), -phrased, -together)
                    rank: tuple[Any, ...] = (*tier, -score, -float(f.frame.get("active_min", 0.0)), -f.start_us, f.qid)
                    if order == "recent":
                        rank = (*tier, -f.start_us, f.qid)
                    elif order == "oldest":
                        rank = (*tier, f.start_us, f.qid)
                    scored.append((rank, f, fields, kinds))
        scored.sort(key=lambda r: r[0])
        if (order != "relevance" or group_by) and scored:  # only the best-matching tier
            best = scored[0][0][:4]
            scored = [r for r in scored if r[0][:4] == best]
        if group_by == "day":
            return self._by_day(query, words, order, p, scored, days)
        key = ("search", tuple(words), phrase, order, p.start_us, p.end_us)
        offset = _cursor_offset(cursor, key)
        page = scored[offset:offset + limit]
        results = []
        for _, f, fields, _kinds in page:
            fr = f.frame
            item = self._brief(f, short=True)
            item["day"] = f.day
            item["matched"] = fields
            item["evidence"] = _evidence_summary(fr)
            results.append(item)
        more = offset + limit < len(scored)
        return {
            "query": query, "words": words, "order": order, "period": p.to_json(self.tz), "total": len(scored),
            "results": results,
            "next_cursor": _make_cursor(offset + limit, key) if more else None,
            "typed_text": "searched" if self.include_typed_text else "not searched (operator did not enable it)",
            **({"note": f"nothing matched in {p.label}; the log holds {days[0]} to {days[-1]}"}
               if not scored else {}),
        }

    def _by_day(self, query: str, words: list[str], order: str, p: Period,
                scored: list[tuple[tuple[Any, ...], FrameRef, list[str], frozenset[str]]],
                days: list[str]) -> dict[str, Any]:
        """search(group_by="day"): the days the query was on screen (a frame's app, site, URL
        host, window title or page matched), each with its frames, minutes and the first and
        last matching frame's start and end (local times), in ``order`` of days; apart, the days
        it was only named elsewhere (a clicked target such as a sidebar's '#random', a page kind,
        a folded detour's name, typed text), with the fields that named it."""
        per: dict[str, list[FrameRef]] = {}
        named: dict[str, tuple[int, set[str]]] = {}
        for _, f, _fields, kinds in scored:
            if kinds & SHOWN:
                per.setdefault(f.day, []).append(f)
            else:
                n, where = named.get(f.day, (0, set()))
                named[f.day] = (n + 1, where | kinds)
        rows: list[dict[str, Any]] = []
        for day in sorted(per, reverse=order == "recent"):
            frames = sorted(per[day], key=lambda f: f.start_us)
            rows.append({"day": day, "frames": len(frames),
                         "minutes": round(sum(float(f.frame.get("active_min", 0.0)) for f in frames), 2),
                         "first": frames[0].frame.get("start"), "last": frames[-1].frame.get("end"),
                         "first_id": frames[0].qid, "last_id": frames[-1].qid})
        only = [{"day": day, "frames": named[day][0], "in": sorted(named[day][1])}
                for day in sorted(set(named) - set(per), reverse=order == "recent")]
        return fit({
            "query": query, "words": words, "order": order, "group_by": "day", "period": p.to_json(self.tz),
            "days": len(rows), "frames": sum(r["frames"] for r in rows), "by_day": rows,
            **({"named_only": only, "named_only_note": "days it was only named in these fields (a clicked "
                "target, a page kind, a detour, typed text), never the app, site, URL host, title or page "
                "on screen"} if only else {}),
            "typed_text": "searched" if self.include_typed_text else "not searched (operator did not enable it)",
            **({"note": f"nothing matched in {p.label}; the log holds {days[0]} to {days[-1]}"}
           if not rows and not only else {}),
        })


ORDERS = ("relevance", "recent", "oldest")  # search_activity's orders
# the fields that say what the screen showed (group_by="day" lists the days the query was one of them)
SHOWN = frozenset({"app", "site", "host", "title", "page"})
_WEIGHT = {"page": 5, "title": 4, "site": 3, "host": 3, "app": 3, "clicked": 2, "page_kind": 1, "interruption": 1,
           "typed": 1}


def _score(fields: Sequence[tuple[str, str]], words: Sequence[str],
           phrase: str) -> tuple[int, int, int, list[str], frozenset[str]]:
    """(phrase, together, weighted score, matched fields, their kinds): whether one field holds
    the query as typed (on token boundaries), whether one field holds every term of the query,
    the field-weighted count of matched terms (an exact match counts twice a word start), the
    first fields that matched (kind: text) and the kinds of all that matched."""
    score, has_phrase, together = 0, 0, 0
    shown: list[str] = []
    kinds: set[str] = set()
    for name, text in fields:
        low = text.casefold()
        if not any(w in low for w in words):
            continue
        toks = terms.tokens(low)
        found = [terms.match(w, low, toks) for w in words]
        if any(found):
            kinds.add(name)
            score += _WEIGHT[name] * sum(found)
            has_phrase |= int(terms.has_phrase(phrase, low))
            together |= int(all(found))
            if len(shown) < 4:
                shown.append(f"{name}: {text[:120]}")
    return has_phrase, together, score, shown, frozenset(kinds)


def _evidence_summary(frame: dict[str, Any]) -> dict[str, Any]:
    """A frame's evidence in a few tokens: its row count and first and last row references."""
    try:
        refs = decode_refs(frame.get("evidence", {}).get("snapshots", []))
    except (ValueError, KeyError, TypeError):
        refs = []
    out: dict[str, Any] = {"rows": len(refs)}
    if refs:
        ordered = sorted(refs, key=_ref_key)
        out["first"], out["last"] = ordered[0], ordered[-1]
    return out
