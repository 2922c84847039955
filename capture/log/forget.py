"""Forgetting: the one exception to append-only (docs/privacy.md).

A selection (a time range, an app, a site, a window-title pattern, typed text only, whole days,
or any of these together) names rows to remove. ``plan`` says what would go without changing
anything; ``forget`` rewrites every sealed segment file and open segment holding a selected row
without it, removes matching quarantine lines, and chains a redaction record in the manifest:
the selection's kind, a keyed hash of its value, rows removed per day and kind, each rewritten
file's sha256 before and after, and a file of the keyed hashes of every ref it removed or
changed, so no later import lands them again. `af log verify` accepts exactly these rewrites.

Rules (select_day is the one place they live, used by the log and by tests alike):
- a row goes when it is in the range (a span: wholly inside it) and matches every content
  filter given (app, site, title); a span partly inside the range is cut at the range's edges;
- an input event goes with a matching snapshot (same source frame) or when it matches itself;
  an element goes with its snapshot; presence goes only by time, streams only with whole days;
- typed text only: the ``text`` of the selected input events is blanked; the rows stay.

Crash safety: every new file is staged under ``log/.forget/`` and an intent (the record) is
written before anything in place changes; a killed forget is rolled forward by the next writer.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from capture.errors import UserError
from capture.files import atomic_write
from capture.log.append import CONTINUATION, Appending
from capture.log.columns import registered
from capture.log.files import canonical_json, complete_lines, fsync_dir, sha256_file, sql_path
from capture.log.layout import parse_segment_name
from capture.log.opensegments import parse_lines
from capture.log.redaction import (
    FORGET_INTENT,
    FORGET_WORK,
    FORGOTTEN_DIR,
    REDACTION,
    folder_key,
    keyed_ref,
    keyed_value,
)
from capture.log.rows import checked_columns
from capture.log.schema import NAMES, SELECT_SQL, SORT_SQL
from capture.model import CLASS_OF, ROW_KINDS
from capture.timeutil import day_bounds, iso_utc, local_day, parse_day

# The ref of the later piece of a span cut in two: "<ref>~cut<range end>" (its base is the
# event's ref, so the import's forgotten-ref check covers it like a continuation).
CUT = f"{CONTINUATION}cut"

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


@dataclass(frozen=True)
class Selection:
    """What to forget. Filters given together must all hold (an app within a range...)."""

    start_us: int | None = None
    end_us: int | None = None
    app: str | None = None
    site: str | None = None
    title: str | None = None  # a Python regular expression, searched in the window title
    typed_text: bool = False  # blank the typed text of the selected input events, keep the rows
    days: tuple[str, ...] = ()  # whole local days
    retention: bool = False  # days older than the retention period (recorded as "retention")

    @property
    def content(self) -> bool:
        return bool(self.app or self.site or self.title)

    @property
    def whole_days(self) -> bool:
        """Only days are given: everything of them goes, stream notes included."""
        return bool(self.days) and self.start_us is None and self.end_us is None and not self.content \
            and not self.typed_text

    def kind(self) -> str:
        if self.retention:
            return "retention"
        parts = [name for name, on in (("range", self.start_us is not None or self.end_us is not None),
                                       ("app", self.app), ("site", self.site), ("title", self.title),
                                       ("day", self.days), ("typed_text", self.typed_text)) if on]
        return "+".join(parts)

    def value(self) -> dict[str, Any]:
        """What the record hashes (with the folder's key): never written as it is."""
        return {"start_us": self.start_us, "end_us": self.end_us, "app": self.app, "site": self.site,
                "title": self.title, "typed_text": self.typed_text, "days": sorted(self.days)}

    def check(self) -> None:
        """UserError with one sentence when the selection cannot be used."""
        if not (self.start_us is not None or self.end_us is not None or self.content or self.days or self.typed_text):
            raise UserError("say what to forget: a time range, an app, a site, a title pattern, typed text or a day")
        if self.start_us is not None and self.end_us is not None and self.end_us <= self.start_us:
            raise UserError("the range's end must be after its start")
        for d in self.days:
            try:
                parse_day(d)
            except ValueError as exc:
                raise UserError(str(exc)) from None
        if self.title is not None:
            try:
                re.compile(self.title)
            except re.error as exc:
                raise UserError(f"the title pattern {self.title!r} is not a regular expression ({exc})") from None
        for name, value in (("app", self.app), ("site", self.site), ("title", self.title)):
            if value is not None and not value.strip():
                raise UserError(f"the {name} to forget is empty")
        if self.site is not None and not _host(self.site):
            raise UserError(f"{self.site!r} is not a site or host name")


def _host(url: str | None) -> str | None:
    if not url:
        return None
    text = url.strip()
    try:
        host = urlsplit(text if "://" in text else f"//{text}").hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


@dataclass
class DayChange:
    """What forgetting a selection does to one day's rows."""

    drop: dict[str, set[str]] = field(default_factory=dict)  # kind -> refs removed
    new: dict[str, dict[str, list[Any]]] = field(default_factory=dict)  # kind -> ref -> rows replacing it
    cut: dict[str, int] = field(default_factory=dict)  # kind -> spans cut at the range's edges
    blanked: int = 0  # input events whose typed text was blanked
    # a whole sealed day: every row goes, without reading them; the record lists the day itself
    # (every later row of it is refused), not a hash per ref: a year's retention would be 20M refs
    whole_day: bool = False

    def touched(self, kind: str) -> set[str]:
        """Refs of ``kind`` whose row goes or changes."""
        return self.drop.get(kind, set()) | set(self.new.get(kind, {}))

    def refs(self) -> set[str]:
        return {r for k in ROW_KINDS for r in self.touched(k)}

    def empty(self) -> bool:
        return not self.whole_day and not any(self.drop.values()) and not any(self.new.values())


def select_day(sel: Selection, day: str, rows: dict[str, list[Any]], elements: Iterable[tuple[str, int, str]],
               tz: str) -> DayChange:
    """What ``sel`` removes or changes among one day's rows (``rows``: kind -> row objects of
    snapshots, inputs, presence and streams; ``elements``: (ref, ts_us, snapshot_frame_id))."""
    out = DayChange()
    if sel.days and day not in sel.days:
        return out
    lo, hi = sel.start_us, sel.end_us
    _, day_end = day_bounds(day, tz)
    pattern = re.compile(sel.title) if sel.title is not None else None
    app = sel.app.casefold() if sel.app is not None else None
    site = _host(sel.site) if sel.site is not None else None

    def in_range(ts: int) -> bool:
        return (lo is None or ts >= lo) and (hi is None or ts < hi)

    def matches(row: Any) -> bool:
        if app is not None and (row.app is None or row.app.casefold() != app):
            return False
        if site is not None:
            host = _host(row.url)
            if host is None or not (host == site or host.endswith(f".{site}")):
                return False
        return pattern is None or (row.window is not None and pattern.search(row.window) is not None)

    def span(kind: str, row: Any) -> bool:
        """Drop or cut one row by time; True when it was touched."""
        end = row.end_us
        if end is None or end <= row.ts_us:  # an instant
            if in_range(row.ts_us):
                out.drop.setdefault(kind, set()).add(row.ref)
                return True
            return False
        if (hi is not None and row.ts_us >= hi) or (lo is not None and end <= lo):
            return False  # no overlap
        pieces = []
        if lo is not None and row.ts_us < lo:
            pieces.append(replace(row, end_us=lo))
        if hi is not None and end > hi and hi < day_end:  # a piece past the day's end would change day
            pieces.append(replace(row, ref=f"{row.ref}{CUT}{hi}" if pieces else row.ref, ts_us=hi))
        if pieces:
            out.new.setdefault(kind, {})[row.ref] = pieces
            out.cut[kind] = out.cut.get(kind, 0) + 1
        else:
            out.drop.setdefault(kind, set()).add(row.ref)
        return True

    frames: set[str] = set()  # source frames of the selected snapshots: their inputs and elements go too
    for s in rows.get("snapshots", []):
        if sel.content and not matches(s):
            continue
        end = s.end_us if s.end_us is not None and s.end_us > s.ts_us else None
        overlaps = (in_range(s.ts_us) if end is None
                    else (hi is None or s.ts_us < hi) and (lo is None or end > lo))
        if not overlaps:
            continue
        if s.source_frame_id is not None:
            frames.add(s.source_frame_id)
        if not sel.typed_text:
            span("snapshots", s)
    for e in rows.get("inputs", []):
        if not in_range(e.ts_us):
            continue
        if sel.content and not (matches(e) or (e.source_frame_id is not None and e.source_frame_id in frames)):
            continue
        if sel.typed_text:
            if e.text is not None:
                out.new.setdefault("inputs", {})[e.ref] = [replace(e, text=None)]
                out.blanked += 1
        else:
            out.drop.setdefault("inputs", set()).add(e.ref)
    if sel.typed_text:
        return out
    for ref, ts, frame in elements:
        if in_range(ts) and (not sel.content or frame in frames):
            out.drop.setdefault("elements", set()).add(ref)
    if not sel.content:
        for p in rows.get("presence", []):
            span("presence", p)
    if sel.whole_days:
        out.drop["streams"] = {s.ref for s in rows.get("streams", [])}
    return out


def apply_change(rows: dict[str, list[Any]], change: DayChange) -> dict[str, list[Any]]:
    """One day's rows (every kind as row objects) after ``change``: what forgetting leaves."""
    out = {}
    for kind in ROW_KINDS:
        gone = change.drop.get(kind, set())
        new = change.new.get(kind, {})
        kept: list[Any] = []
        for r in rows.get(kind, []):
            if r.ref in gone:
                continue
            kept.extend(new.get(r.ref, [r]))
        out[kind] = kept
    return out


def forget_rows(sel: Selection, rows: list[Any], tz: str) -> list[Any]:
    """Rows of any days after forgetting ``sel`` (the Dagster-free model the log must equal)."""
    by_day: dict[str, dict[str, list[Any]]] = {}
    for r in rows:
        kind = next(k for k, c in CLASS_OF.items() if type(r) is c)
        by_day.setdefault(local_day(r.ts_us, tz), {}).setdefault(kind, []).append(r)
    out: list[Any] = []
    for day, kinds in sorted(by_day.items()):
        elements = [(e.ref, e.ts_us, e.snapshot_frame_id) for e in kinds.get("elements", [])]
        change = select_day(sel, day, kinds, elements, tz)
        for kept in apply_change(kinds, change).values():
            out.extend(kept)
    return out


@dataclass
class ForgetPlan:
    """What a selection removes: rows per day and kind, cut spans, blanked typed text."""

    selection: str  # its kind
    rows: dict[str, dict[str, int]] = field(default_factory=dict)  # day -> kind -> rows removed
    cut: dict[str, dict[str, int]] = field(default_factory=dict)  # day -> kind -> spans cut
    blanked: dict[str, int] = field(default_factory=dict)  # day -> typed texts blanked
    segments: list[str] = field(default_factory=list)  # sealed segment folders to rewrite
    open_days: list[str] = field(default_factory=list)
    quarantine: int = 0  # quarantine lines removed
    refs: int = 0  # refs removed or changed (their keyed hashes are recorded)
    seq: int | None = None  # the redaction record's entry, once forgotten
    seconds: float = 0.0
    # per day: the change, and where each touched ref lives (not part of the summary)
    changes: dict[str, DayChange] = field(default_factory=dict, repr=False)

    @property
    def days(self) -> list[str]:
        return sorted(set(self.rows) | set(self.cut) | set(self.blanked))

    def totals(self) -> dict[str, int]:
        out = dict.fromkeys(ROW_KINDS, 0)
        for kinds in self.rows.values():
            for k, n in kinds.items():
                out[k] += n
        return out

    @property
    def frames(self) -> int:
        """Snapshots removed or cut: the frames a compile of those days no longer shows whole."""
        return sum(k.get("snapshots", 0) for k in self.rows.values()) + sum(
            k.get("snapshots", 0) for k in self.cut.values())

    def empty(self) -> bool:
        return not self.days and not self.quarantine

    def to_json(self) -> dict[str, Any]:
        return {"selection": self.selection, "days": self.days, "rows": self.rows, "cut": self.cut,
                "typed_text_blanked": self.blanked, "frames": self.frames, "segments": self.segments,
                "open_days": self.open_days, "quarantine": self.quarantine, "refs": self.refs,
                "seq": self.seq, "seconds": round(self.seconds, 3)}


def _quarantine_matches(sel: Selection, record: dict[str, Any], refs: set[str]) -> bool:
    """Whether a quarantine line holds what ``sel`` forgets (its ref, its day, or the text)."""
    row = record.get("row")
    if isinstance(row, str) and (row in refs or row.split(CONTINUATION, 1)[0] in refs):
        return True
    day = record.get("day")
    if sel.days and isinstance(day, str) and day not in sel.days:
        return False
    if sel.typed_text:
        return False  # the quarantine never keeps typed text (capture/redact.py)
    raw = str(record.get("raw") or "")
    if sel.whole_days and isinstance(day, str):
        return True
    if sel.start_us is not None or sel.end_us is not None:
        stamps = [int(m) for m in re.findall(r'"ts_us"\s*:\s*(\d+)', raw)]
        if not stamps or not any((sel.start_us is None or t >= sel.start_us) and (sel.end_us is None or t < sel.end_us)
                                 for t in stamps):
            return False
        if not sel.content:
            return True
    text = raw.casefold()
    if sel.app is not None and sel.app.casefold() not in text:
        return False
    if sel.site is not None and (_host(sel.site) or "") not in text:
        return False
    return not (sel.title is not None and re.search(sel.title, raw) is None)


class Forgetting(Appending):
    """``plan`` and ``forget``: removing selected rows everywhere in the log, with a record."""

    def _days_of(self, sel: Selection) -> list[str]:
        days = self.day_names()
        if sel.days:
            days = [d for d in days if d in sel.days]
        if sel.start_us is not None or sel.end_us is not None:
            def overlaps(day: str) -> bool:
                lo, hi = day_bounds(day, self._zone)
                return (sel.end_us is None or lo < sel.end_us) and (sel.start_us is None or hi > sel.start_us)
            days = [d for d in days if overlaps(d)]
        return days

    def _candidates(self, name: str, kind: str, where: str, params: dict[str, Any]) -> list[Any]:
        """Rows of one kind of a sealed segment that pass an SQL pre-filter (a superset of what
        select_day selects, so only those rows are made into objects: a year of a busy log is
        tens of millions of rows); elements as (ref, ts_us, snapshot_frame_id)."""
        path = self.sealed_dir / name / f"{kind}.parquet"
        cols = "ref, ts_us, snapshot_frame_id" if kind == "elements" else SELECT_SQL[kind]
        with self._db() as con:
            got = con.execute(f"SELECT {cols} FROM read_parquet('{sql_path(path)}') WHERE {where}", params).fetchall()
        if kind == "elements":
            return [(r[0], r[1], r[2]) for r in got]
        cls = CLASS_OF[kind]
        return [cls(*r) for r in got]

    def _sealed_candidates(self, day: str, sel: Selection
                           ) -> tuple[dict[str, list[Any]], list[tuple[str, int, str]], dict[tuple[str, str], str]]:
        """A sealed day's rows that may be selected, by kind, its candidate elements, and the
        segment folder of each (kind, ref)."""
        lo, hi = sel.start_us, sel.end_us
        instant = " AND ".join([*([f"ts_us >= {int(lo)}"] if lo is not None else []),
                                *([f"ts_us < {int(hi)}"] if hi is not None else [])]) or "true"
        spans = " AND ".join([*([f"(ts_us >= {int(lo)} OR coalesce(end_us, ts_us) > {int(lo)})"] if lo is not None else []),
                              *([f"ts_us < {int(hi)}"] if hi is not None else [])]) or "true"
        own: list[str] = []  # a row's own fields (snapshots and inputs share app, window, url)
        params: dict[str, Any] = {}
        if sel.app is not None:
            # SQL lower() is not Python's casefold beyond ASCII: then only the exact test prunes
            own.append("lower(app) = $app" if sel.app.isascii() else "app IS NOT NULL")
            if sel.app.isascii():
                params["app"] = sel.app.lower()
        if sel.site is not None:
            own.append("contains(lower(url), $host)")
            params["host"] = _host(sel.site)
        if sel.title is not None:
            own.append('"window" IS NOT NULL')
        content = " AND ".join(own) or "true"
        rows: dict[str, list[Any]] = {k: [] for k in ROW_KINDS if k != "elements"}
        elements: list[tuple[str, int, str]] = []
        where: dict[tuple[str, str], str] = {}
        segments = [name for name, _ in self._segments(day)]

        def take(kind: str, name: str, got: list[Any]) -> None:
            if kind == "elements":
                elements.extend(got)
                where.update((("elements", r[0]), name) for r in got)
            else:
                rows[kind].extend(got)
                where.update(((kind, r.ref), name) for r in got)

        snap_params = {k: v for k, v in params.items() if f"${k}" in content}
        for name in segments:
            take("snapshots", name, self._candidates(name, "snapshots", f"({spans}) AND {content}", snap_params))
        frames = sorted({s.source_frame_id for s in rows["snapshots"] if s.source_frame_id is not None})
        # (an empty list has no type for DuckDB to bind: no frame, no link)
        linked = "source_frame_id IN (SELECT unnest($frames))" if frames else "false"
        by_frame = "snapshot_frame_id IN (SELECT unnest($frames))" if frames else "false"
        for name in segments:
            if sel.content:
                cond = f"({instant}) AND (({content}) OR {linked})"
                args = {**snap_params, **({"frames": frames} if frames else {})}
            else:
                cond, args = instant, {}
            if sel.typed_text:
                cond += " AND text IS NOT NULL"
            take("inputs", name, self._candidates(name, "inputs", cond, args))
            if sel.typed_text:
                continue
            if sel.content:
                take("elements", name, self._candidates(
                    name, "elements", f"({instant}) AND {by_frame}", {"frames": frames} if frames else {}))
            else:
                take("elements", name, self._candidates(name, "elements", instant, {}))
                take("presence", name, self._candidates(name, "presence", spans, {}))
                if sel.whole_days:
                    take("streams", name, self._candidates(name, "streams", "true", {}))
        return rows, elements, where

    def plan(self, sel: Selection) -> ForgetPlan:
        """What forgetting ``sel`` would remove; nothing changes."""
        sel.check()
        started = time.monotonic()
        plan = ForgetPlan(sel.kind())
        sealed = self._sealed()
        for day in self._days_of(sel):
            if day in sealed and sel.whole_days:
                self._plan_whole_day(plan, day)
                continue
            rows: dict[str, list[Any]] = {k: [] for k in ROW_KINDS if k != "elements"}
            elements: list[tuple[str, int, str]] = []
            where: dict[tuple[str, str], str] = {}  # (kind, ref) -> segment folder ("" when open)
            if day in sealed:
                self.verified_segments(day)  # a changed file is refused (CheckFailed), never rewritten
                rows, elements, where = self._sealed_candidates(day, sel)
            else:
                cap = self.read_day(day)
                for kind in rows:
                    rows[kind] = list(getattr(cap, kind))
                elements = [(e.ref, e.ts_us, e.snapshot_frame_id) for e in cap.elements]
            change = select_day(sel, day, rows, elements, self.tz)
            if change.empty():
                continue
            plan.changes[day] = change
            removed = {k: len(v) for k, v in change.drop.items() if v}
            if removed:
                plan.rows[day] = dict(sorted(removed.items()))
            if change.cut:
                plan.cut[day] = dict(sorted(change.cut.items()))
            if change.blanked:
                plan.blanked[day] = change.blanked
            plan.refs += len(change.refs())
            if day in sealed:
                names = {where[(k, r)] for k in ROW_KINDS for r in change.touched(k) if (k, r) in where}
                plan.segments.extend(sorted(names, key=lambda n: parse_segment_name(n) or (n, 0)))
            else:
                plan.open_days.append(day)
        if self.quarantine_path.exists():
            refs = {r for c in plan.changes.values() for r in c.refs()}
            plan.quarantine = sum(1 for q in self.quarantine_rows() if _quarantine_matches(sel, q, refs))
        plan.seconds = time.monotonic() - started
        return plan

    def _plan_whole_day(self, plan: ForgetPlan, day: str) -> None:
        """A sealed day forgotten whole: its row counts from the chain, no row read."""
        self.verified_segments(day)  # a changed file is refused (CheckFailed), never rewritten
        counts: dict[str, int] = {}
        names = []
        for name, entry in self._segments(day):
            files: dict[str, Any] = entry["files"] if isinstance(entry.get("files"), dict) else {}
            held = {k: int((files.get(f"{k}.parquet") or {}).get("rows") or 0) for k in ROW_KINDS}
            for k, n in held.items():
                if n:
                    counts[k] = counts.get(k, 0) + n
            if any(held.values()):
                names.append(name)
        if not counts:
            return
        plan.changes[day] = DayChange(whole_day=True)
        plan.rows[day] = dict(sorted(counts.items()))
        plan.segments.extend(names)

    def forget(self, sel: Selection, *, progress: Callable[[str], None] | None = None) -> ForgetPlan:
        """Remove what ``sel`` selects from every file of the log and chain a redaction record.
        Returns the plan carried out (``seq``: the record's entry; None when nothing matched)."""
        say = progress or (lambda _msg: None)
        started = time.monotonic()
        with self._writing() as recovered:
            for note in recovered:
                say(f"recovered: {note}")
            plan = self.plan(sel)
            if plan.empty():
                plan.seconds = time.monotonic() - started
                return plan
            key = folder_key(self.home.root)
            assert key is not None
            work = self.dir / FORGET_WORK
            if work.exists():
                shutil.rmtree(work)
            work.mkdir()
            refs_touched = {r for c in plan.changes.values() for r in c.refs()}
            digests = sorted({keyed_ref(key, r) for r in refs_touched})
            (work / "refs.bin").write_bytes(b"".join(digests))
            segments: dict[str, dict[str, Any]] = {}
            for day, change in plan.changes.items():
                for name in [n for n in plan.segments if (parse_segment_name(n) or ("", 0))[0] == day]:
                    say(f"rewriting sealed/{name}")
                    segments[name] = self._stage_segment(name, change, work / "sealed" / name)
                if day in plan.open_days:
                    say(f"rewriting open/{day}")
                    self._stage_open(day, change, work / "open" / day)
            if plan.quarantine:
                kept = [ln for ln in complete_lines(self.quarantine_path.read_bytes())
                        if not _quarantine_matches(sel, _json(ln), refs_touched)]
                (work / "quarantine.jsonl").write_bytes(b"".join(ln + b"\n" for ln in kept))
            seq = len(self._chain())
            refs_file = f"{FORGOTTEN_DIR}/{seq}.bin"
            record = {
                REDACTION: {
                    "selection": sel.kind(),
                    "value_hash": keyed_value(key, sel.value()),
                    "rows": plan.rows,
                    "cut": plan.cut,
                    "typed_text_blanked": plan.blanked,
                    "segments": segments,
                    "open_days": plan.open_days,
                    "quarantine": plan.quarantine,
                    "refs": {"file": refs_file, "count": len(digests), "sha256": sha256_file(work / "refs.bin")},
                    # whole days forgotten: every later row of them is refused (their refs are not listed)
                    "days": sorted(plan.days) if sel.whole_days else [],
                },
                "redacted_at": iso_utc(time.time_ns() // 1000),
            }
            # The intent is the point of no return: from here the next writer rolls forward.
            atomic_write(work / FORGET_INTENT, canonical_json(record) + b"\n", mode=0o600)
            fsync_dir(work)
            entry = self._complete_forget(record)
            plan.seq = entry["seq"]
        plan.seconds = time.monotonic() - started
        return plan

    def _stage_segment(self, name: str, change: DayChange, staging: Path) -> dict[str, Any]:
        """Write a sealed segment's files that hold touched rows, without them, to ``staging``;
        returns {file: {before, after, rows}} for the record."""
        staging.mkdir(parents=True)
        out: dict[str, Any] = {}
        import pyarrow as pa  # with DuckDB: only a forget needs it here

        for kind in ROW_KINDS:
            touched = change.touched(kind)
            src = self.sealed_dir / name / f"{kind}.parquet"
            dst = staging / f"{kind}.parquet"
            if change.whole_day:
                with self._db() as con:
                    held = con.execute(f"SELECT count(*) FROM read_parquet('{sql_path(src)}')").fetchone()
                    if not held or not held[0]:
                        continue
                    con.execute(f"COPY (SELECT {SELECT_SQL[kind]} FROM read_parquet('{sql_path(src)}') LIMIT 0) "
                                f"TO '{sql_path(dst)}' (FORMAT parquet, COMPRESSION zstd)")
                out[f"{kind}.parquet"] = {"before": sha256_file(src), "after": sha256_file(dst), "rows": 0}
                continue
            if not touched:
                continue
            with self._db() as con:
                present = {r[0] for r in con.execute(
                    f"SELECT ref FROM read_parquet('{sql_path(src)}') WHERE ref IN (SELECT unnest($refs))",
                    {"refs": sorted(touched)}).fetchall()}
                if not present:
                    continue
                new_rows = [r for ref in sorted(present) for r in change.new.get(kind, {}).get(ref, [])]
                con.register("forget_gone", pa.table({"ref": pa.array(sorted(present), pa.string())}))
                try:
                    with contextlib.ExitStack() as stack:
                        base = (f"SELECT {SELECT_SQL[kind]} FROM read_parquet('{sql_path(src)}') "
                                "WHERE ref NOT IN (SELECT ref FROM forget_gone)")
                        if new_rows:
                            extra = stack.enter_context(registered(con, "forget_new", kind,
                                                                   checked_columns(kind, new_rows)[0]))
                            base += f" UNION ALL SELECT {SELECT_SQL[kind]} FROM {extra}"
                        # the seal's own writer: same sort, compression and single thread
                        result = con.execute(
                            f"COPY (SELECT {SELECT_SQL[kind]} FROM ({base}) ORDER BY {SORT_SQL[kind]}) "
                            f"TO '{sql_path(dst)}' (FORMAT parquet, COMPRESSION zstd)").fetchone()
                finally:
                    con.unregister("forget_gone")
            out[f"{kind}.parquet"] = {"before": sha256_file(src), "after": sha256_file(dst),
                                      "rows": int(result[0]) if result else 0}
        return out

    def _stage_open(self, day: str, change: DayChange, staging: Path) -> None:
        """Write an open day's files that hold touched rows, without them, to ``staging``; other
        lines are kept byte for byte (a damaged line too: sealing quarantines it)."""
        staging.mkdir(parents=True)
        for kind in ROW_KINDS:
            touched = change.touched(kind)
            path = self.open_dir / day / f"{kind}.jsonl"
            if not touched or not path.exists():
                continue
            data = path.read_bytes()
            data = data[: data.rfind(b"\n") + 1]
            names = NAMES[kind]
            out: list[bytes] = []
            for line in data.split(b"\n")[:-1]:
                rows, _problems = parse_lines(line + b"\n", kind)
                if len(rows) != 1 or rows[0].ref not in touched:
                    out.append(line)
                    continue
                ref = rows[0].ref
                if ref in change.drop.get(kind, set()):
                    continue
                for r in change.new[kind][ref]:
                    out.append(_encode({n: getattr(r, n) for n in names}).encode("utf-8"))
            (staging / f"{kind}.jsonl").write_bytes(b"".join(ln + b"\n" for ln in out))

    def _complete_forget(self, record: dict[str, Any]) -> dict[str, Any]:
        """Move a forget's staged files into place and chain its record (also after a kill)."""
        work = self.dir / FORGET_WORK
        refs = record[REDACTION]["refs"]
        target = self.dir / refs["file"]
        if (work / "refs.bin").exists():
            target.parent.mkdir(exist_ok=True)
            os.replace(work / "refs.bin", target)
            fsync_dir(target.parent)
        for sub, base in (("sealed", self.sealed_dir), ("open", self.open_dir)):
            root = work / sub
            if not root.is_dir():
                continue
            for folder in sorted(root.iterdir()):
                for f in sorted(folder.iterdir()):
                    os.replace(f, base / folder.name / f.name)
                fsync_dir(base / folder.name)
                if sub == "open" and not any((base / folder.name / f"{k}.jsonl").exists()
                                             and (base / folder.name / f"{k}.jsonl").stat().st_size for k in ROW_KINDS):
                    shutil.rmtree(base / folder.name)  # every row forgotten: no day left to seal
        if (work / "quarantine.jsonl").exists():
            os.replace(work / "quarantine.jsonl", self.quarantine_path)
        chain = self._chain()
        last = chain[-1] if chain else None
        if last is not None and last.get(REDACTION) == record[REDACTION] and last.get("redacted_at") == record["redacted_at"]:
            entry = last  # landed before a kill
        else:
            entry = self._append_redaction(record)
        shutil.rmtree(work)
        # what this object knew of refs and sealed days is out of date
        self._ref_cache.clear()
        self._prefix_cache.clear()
        self._index = None
        self._index_days = set()
        return entry

    def _recover(self) -> list[str]:
        notes = super()._recover()
        work = self.dir / FORGET_WORK
        if work.exists():
            try:
                record = json.loads((work / FORGET_INTENT).read_bytes())
            except (OSError, ValueError):
                shutil.rmtree(work)  # killed while staging: nothing in place had changed
                notes.append("removed an unfinished forget (nothing had changed yet)")
            else:
                entry = self._complete_forget(record)
                notes.append(f"completed a forget interrupted before its redaction record (entry {entry['seq']})")
        return notes


def _json(line: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(line)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


__all__ = ["DayChange", "ForgetPlan", "Forgetting", "Selection", "apply_change", "forget_rows",
           "select_day"]
