"""Continuous sync: follow the capture tools a person already runs and keep the log current.

``af sync screenpipe PATH`` and ``af sync activitywatch URL|PATH`` register a source in the data
folder and make one incremental pass; ``af sync`` passes over every registered source;
``--watch`` keeps following. Each pass maps what is new through the same importer as
``af import`` (so a synced row and an imported row of the same source have the same ref and land
once), appends it to the log, and seals the days whose grace period has passed.

How each source is read incrementally:

- screenpipe: the database is opened read-only, as by ``af import``; a pass reads the rows whose
  id is above the source's watermark (per table), less a small overlap so a capture cycle being
  written while we read is read again whole next time (refs make the overlap land once). A
  database whose identity changed (a new file, rotated, or rebuilt) starts from the beginning;
  its refs differ, so nothing of the old file is touched.
- ActivityWatch: the REST API of a running aw-server or aw-server-rust (default
  ``http://127.0.0.1:5600``), or its sqlite.db. A pass asks each bucket for the events that end
  after the watermark less an overlap. ActivityWatch grows its newest event in place (a
  heartbeat extends its duration); the log never rewrites a row, so the part of an event that
  grew since the last pass lands as a *continuation* row (ref ``<event ref>~<k>``) that starts
  where the logged part ended. Time is then credited exactly once, however often the event grew.

An ActivityWatch row whose ref the log lacks but which the log holds under another ref (the source's
refs name its hosts, so another host set gives other refs) takes the logged ref first
(``adopt_logged_refs``): it lands once, as a duplicate skipped or a continuation.

A source that is down, restarting or locked fails the pass with a sentence; ``watch`` retries
with exponential back-off (up to MAX_BACKOFF_S) and never lands a row twice. State (watermarks,
the last pass, the last error) lives in ``<home>/sync.json`` and is written atomically.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from capture import rewrites
from capture.errors import UserError
from capture.files import atomic_write
from capture.home import Home
from capture.log import EventLog
from capture.log.append import CONTINUATION
from capture.log.layout import WATERMARKS
from capture.model import CaptureBatch
from capture.timeutil import US, iso_utc, local_day, parse_ts

SYNC_FILE = "sync.json"
KINDS = ("screenpipe", "activitywatch")
DEFAULT_AW_URL = "http://127.0.0.1:5600"
DEFAULT_INTERVAL_S = 5.0  # between passes in --watch: capture lands within seconds
MAX_BACKOFF_S = 300.0  # a source that keeps failing is retried at least every five minutes
AW_OVERLAP_US = 10 * 60 * US  # events re-read before the watermark (heartbeats still extend them)
SP_OVERLAP_ROWS = 200  # screenpipe rows re-read below the id watermark (a cycle half-written)
HTTP_TIMEOUT_S = 10.0

Progress = Callable[[str], None]


@dataclass
class Source:
    """A registered capture source."""

    name: str  # "<kind>:<location>", the key in sync.json
    kind: str  # screenpipe | activitywatch
    location: str  # an absolute path, or an http(s) URL for a running ActivityWatch server


@dataclass
class PassResult:
    source: str
    ok: bool
    landed: int = 0
    skipped: int = 0
    forgotten: int = 0  # rows not landed because `af forget` removed them
    quarantined: int = 0  # rows this pass put in the quarantine (a re-read row held there already is not counted)
    continued: int = 0  # rows that continue an event which grew since it was logged
    newest_us: int | None = None  # the newest capture time this pass saw in the source
    error: str | None = None
    seconds: float = 0.0
    days_sealed: list[str] = field(default_factory=list)
    days_amended: list[str] = field(default_factory=list)
    changed: str | None = None  # what the source did to itself that this pass handled, in a sentence


# ----------------------------------------------------------------------------- registry and state


def _path(home: Home) -> Path:
    return home.root / SYNC_FILE


def _load(home: Home) -> dict[str, Any]:
    path = _path(home)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": 1, "sources": {}}
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} is not readable sync state ({exc}); move it aside and register the sources again") from None
    if not isinstance(data, dict) or not isinstance(data.get("sources"), dict):
        raise UserError(f"{path} is not sync state written by this program; move it aside and register the sources again")
    return data


def _save(home: Home, data: dict[str, Any]) -> None:
    atomic_write(_path(home), (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"), mode=0o600)


def normalise(kind: str, location: str) -> str:
    """A source location as registered: an absolute path, or a URL without a trailing slash."""
    if kind not in KINDS:
        raise UserError(f"unknown source kind {kind!r}; choose one of {', '.join(KINDS)}")
    if kind == "activitywatch" and location.startswith(("http://", "https://")):
        parsed = urllib.parse.urlsplit(location)
        if not parsed.hostname:
            raise UserError(f"{location!r} is not a URL of an ActivityWatch server (e.g. {DEFAULT_AW_URL})")
        return location.rstrip("/")
    p = Path(location).expanduser()
    if kind == "screenpipe" and p.is_dir():
        p = p / "db.sqlite"
    if kind == "activitywatch" and p.is_dir():
        p = p / "sqlite.db"
    if not p.is_file():
        raise UserError(f"{p}: no such file (expected a {kind} database)")
    return str(p.resolve())


def register(home: Home, kind: str, location: str) -> Source:
    """Add a source to the data folder's sync list (registering it again changes nothing)."""
    where = normalise(kind, location)
    data = _load(home)
    name = f"{kind}:{where}"
    if name not in data["sources"]:
        data["sources"][name] = {"kind": kind, "location": where, "added_at": iso_utc(time.time_ns() // 1000)}
        _save(home, data)
    return Source(name, kind, where)


def sources(home: Home) -> list[Source]:
    data = _load(home)
    return [Source(name, str(s["kind"]), str(s["location"])) for name, s in sorted(data["sources"].items())]


def _state(home: Home, name: str) -> dict[str, Any]:
    return dict(_load(home)["sources"].get(name, {}).get("state", {}))


def _record(home: Home, name: str, state: dict[str, Any], result: PassResult, now_us: int) -> None:
    data = _load(home)
    entry = data["sources"].setdefault(name, {})
    state = dict(state)
    state["last_pass"] = iso_utc(now_us)
    state["last_pass_us"] = now_us
    if result.ok:
        state["last_ok"] = iso_utc(now_us)
        state["last_ok_us"] = now_us
        state["failures"] = 0
        state.pop("last_error", None)
        state["landed_total"] = int(state.get("landed_total", 0)) + result.landed
    else:
        state["failures"] = int(state.get("failures", 0)) + 1
        state["last_error"] = result.error
    if result.newest_us is not None:
        state["newest_us"] = max(int(state.get("newest_us", 0)), result.newest_us)
    entry["state"] = state
    _save(home, data)


# ----------------------------------------------------------------------------- one pass


def sync_once(home: Home, source: Source, *, now_us: int | None = None, progress: Progress | None = None,
              open_refs: dict[str, Any] | None = None) -> PassResult:
    """One incremental pass over one source; a failure is reported in the result, not raised.
    ``open_refs``: the open days' ref digests kept from earlier passes (EventLog.keep_open_refs)."""
    now = time.time_ns() // 1000 if now_us is None else now_us
    started = time.monotonic()
    state = _state(home, source.name)
    result = PassResult(source.name, ok=True)
    try:
        log = EventLog(home)
        if open_refs is not None:
            log.keep_open_refs(open_refs)
        if source.kind == "activitywatch":
            # Asked of the server before taking the log: a slow server never holds the writer lock.
            batches, state = _activitywatch_batches(home, source, state, now)
        with log.writing():
            if source.kind == "screenpipe":
                before = state.get("changed")
                batches, state = _screenpipe_batches(home, source, state)
                if state.get("changed") != before:
                    result.changed = str(state["changed"]["says"])
            for batch in batches:
                if source.kind == "screenpipe" and state.get("reused_ids"):
                    rewrites.rekey_reused_ids(log, batch, home.settings().tz)
                adopt_logged_refs(log, batch, home.settings().tz)
                continued, covered = log.continue_grown_spans(batch)
                result.continued += continued
                result.skipped += sum(covered.values())
                drop_known_streams(log, batch)
                report = log.append(batch, now_us=now, progress=progress)
                result.landed += sum(report.landed.values())
                result.skipped += report.skipped
                result.forgotten += report.forgotten
                result.quarantined += report.quarantined_new
                result.days_sealed += report.days_sealed
                result.days_amended += report.days_amended
                newest = _newest(batch)
                if newest is not None:
                    result.newest_us = max(result.newest_us or newest, newest)
            result.days_sealed += log.seal_due(now)
    except (UserError, OSError, urllib.error.URLError, TimeoutError, ValueError) as exc:
        result.ok = False
        result.error = _sentence(source, exc)
    result.seconds = round(time.monotonic() - started, 3)
    result.days_sealed = sorted(set(result.days_sealed))
    _record(home, source.name, state if result.ok else _state(home, source.name), result, now)
    return result


def _sentence(source: Source, exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"{source.location} answered HTTP {exc.code} ({exc.reason})"
    if isinstance(exc, urllib.error.URLError):
        return f"{source.location} cannot be reached ({exc.reason}); is ActivityWatch running?"
    if isinstance(exc, TimeoutError):
        return f"{source.location} did not answer within {HTTP_TIMEOUT_S:g} s"
    return str(exc)


def _newest(batch: CaptureBatch) -> int | None:
    times = [max((getattr(r, "end_us", None) or r.ts_us) for r in batch.rows(k)) for k in ("snapshots", "inputs")
             if batch.rows(k)]
    return max(times) if times else None


def _same_row(kind: str, row: Any) -> tuple[Any, ...]:
    """What makes two rows of measured spans the same capture, whatever their refs: every field
    but the ref and the end (an event read again later may have grown)."""
    if kind == "snapshots":
        return (row.stream, row.ts_us, row.app, row.window, row.url, row.focused, row.trigger, row.heartbeat,
                row.source_frame_id)
    return (row.stream, row.ts_us, row.status)


def _content(kind: str, row: Any) -> tuple[Any, ...]:
    """A row's key without its start: what an event clipped at a later start still shares."""
    key = _same_row(kind, row)
    return (key[0], *key[2:])


def adopt_logged_refs(log: EventLog, batch: CaptureBatch, tz: str) -> int:
    """Give rows the log already holds under another ref that ref; return how many were given one.

    An ActivityWatch source's refs name its hosts (``activitywatch:<host>+<host>``), so the same
    events read under another set of hosts (a machine renamed on the same aw-server, a phone
    syncing to it, an export imported before the server was followed live) come with other refs,
    and the ref check alone would land them again. A row of measured spans (ActivityWatch's
    snapshots and presence) whose ref the log does not hold, but which is the same capture as a
    logged row (same stream, start and content: see ``_same_row``), takes the logged row's ref:
    the append then skips it as a duplicate, or, when the event grew since, the log continues it
    (``continue_grown_spans``). A stream row for a stream and day the log already describes is
    dropped the same way. Rows of instant capture (screenpipe) are left alone: their refs do not
    depend on what else the source holds."""
    kinds = [k for k in ("snapshots", "presence") if any(getattr(r, "end_us", None) is not None for r in batch.rows(k))]
    if not kinds:
        return 0
    present = log.refs_present([r.ref for k in kinds for r in batch.rows(k)] + [r.ref for r in batch.streams])
    unknown = {k: [r for r in batch.rows(k) if r.ref not in present] for k in kinds}
    new_streams = [r for r in batch.streams if r.ref not in present]
    if not any(unknown.values()) and not new_streams:
        return 0
    zone_of = ZoneInfo(tz)
    days = sorted({local_day(r.ts_us, zone_of) for k in kinds for r in unknown[k]}
                  | {local_day(r.ts_us, zone_of) for r in new_streams})
    logged: dict[str, dict[tuple[Any, ...], str]] = {k: {} for k in kinds}
    # per kind and content (the row's key but its start): (start, end covered, ref) of logged events
    spans: dict[str, dict[tuple[Any, ...], list[tuple[int, int, str]]]] = {k: {} for k in kinds}
    described: set[tuple[str, str]] = set()
    for day in days:
        cap = log.read_day(day, lazy_elements=True)
        for k in kinds:
            table = logged[k]
            reach: dict[str, int] = {}  # event ref -> the end of its last logged piece
            for row in getattr(cap, k):
                end = getattr(row, "end_us", None)
                if end is None:
                    continue
                base = row.ref.split(CONTINUATION, 1)[0]
                reach[base] = max(reach.get(base, end), end)
                if CONTINUATION in row.ref:
                    continue
                key = _same_row(k, row)
                if key not in table or row.ref < table[key]:
                    table[key] = row.ref  # two logged copies (landed before this check): the least ref
            for row in getattr(cap, k):
                if getattr(row, "end_us", None) is not None and CONTINUATION not in row.ref:
                    spans[k].setdefault(_content(k, row), []).append((row.ts_us, reach[row.ref], row.ref))
        described |= {(r.stream, day) for r in cap.streams}
    adopted = 0
    for k in kinds:
        taken: set[str] = set()
        out = []
        for row in batch.rows(k):
            ref = logged[k].get(_same_row(k, row)) if row.ref not in present else None
            start = None
            if ref is None and row.ref not in present:
                # aw-server-rust clips an event to the asked range: a long event read again from
                # inside it comes with a later start. It is the logged event that covers that start.
                start, ref = next(((a, r) for a, b, r in spans[k].get(_content(k, row), [])
                                   if a < row.ts_us < b), (None, None))
            if ref is not None and ref not in taken:
                taken.add(ref)
                row = dataclasses.replace(row, ref=ref) if start is None else dataclasses.replace(row, ref=ref, ts_us=start)
                adopted += 1
            out.append(row)
        setattr(batch, k, out)
    batch.streams = [r for r in batch.streams
                     if r.ref in present or (r.stream, local_day(r.ts_us, zone_of)) not in described]
    return adopted


def drop_known_streams(log: EventLog, batch: CaptureBatch) -> None:
    """A stream's row for a day is written by the first pass that sees the stream that day; a
    later pass sees it later (and may estimate its size from fewer clicks), which is not news."""
    if not batch.streams:
        return
    known = log.refs_present([r.ref for r in batch.streams])
    batch.streams = [r for r in batch.streams if r.ref not in known]


# ----------------------------------------------------------------------------- screenpipe


def _screenpipe_batches(home: Home, source: Source, state: dict[str, Any]) -> tuple[Iterable[CaptureBatch], dict[str, Any]]:
    """The pass's batches and the state to record. The rows land under the source id they
    landed under before, as long as the database is the same one: grown (ids above the
    watermark), its oldest rows deleted (retention: the natural identity changes, its first
    rows are still the logged ones), or rolled back (the rows at the watermark changed: read
    whole, reused ids rekeyed), or put back (a copy the log holds under another id: read whole
    under that id, reused ids rekeyed). A database the log does not hold starts over under its
    own id."""
    # deferred: only the importer of the source synced
    from capture.importers import screenpipe

    path = Path(source.location)
    tz = home.settings().tz
    log = EventLog(home)
    # One read transaction for the whole pass: identity, watermark checks and every table's rows
    # are what the database held at one instant (a frame is never read without its events).
    con = screenpipe.open_snapshot(path)
    try:
        return _screenpipe_pass(home, source, state, con, log, tz)
    except BaseException:
        con.close()
        raise


def _screenpipe_pass(home: Home, source: Source, state: dict[str, Any], con: sqlite3.Connection, log: EventLog,
                     tz: str) -> tuple[Iterable[CaptureBatch], dict[str, Any]]:
    # deferred: only the importer of the source synced
    from capture.importers import screenpipe

    path = Path(source.location)
    identity = screenpipe.source_identity(path, con)
    landed_as = state.get("source_id") or state.get("identity")  # states before ids were kept: the identity
    change = None
    if landed_as is not None and identity == state.get("identity"):
        sid = landed_as
    else:
        # A first pass, or the database's first frame changed: it may be one the log holds under
        # an earlier id (retention deleted its oldest rows, or a restore put back a copy synced
        # before), the one followed so far first.
        known = [str(landed_as)] if landed_as is not None else []
        known += [i for i in [*screenpipe_source_ids(home), identity] if i not in known]
        found = rewrites.retained_source(log, screenpipe.first_frames(path, rewrites.RETENTION_PROBE_ROWS, con),
                                         known, tz)
        sid = found or identity
        if found is not None and found == landed_as:
            change = "retention"
        elif found is not None and landed_as is not None:
            # another database the log holds (a restored copy synced before, maybe since
            # trimmed): read whole, and ids it reused since are told apart
            change = "rewritten"
        elif found is not None and found != identity:
            change = "retention"  # a first pass over a database the log holds under an earlier id
    since = state.get("since") if sid == landed_as else None  # another database: from the start
    marks = state.get("tails")
    if isinstance(since, dict) and isinstance(marks, dict):
        now_tails = screenpipe.tail_marks(path, marks, con)
        if rewrites.tails_changed(marks, now_tails):
            since, change = None, "rewritten"
    # In the pass's snapshot: rows written while this pass reads are above it and read next time.
    tails = screenpipe.tail_marks(path, None, con)
    marks_now = {t: max(0, int(m["max_id"]) - SP_OVERLAP_ROWS) for t, m in tails.items()}
    batches = _closing(screenpipe.iter_screenpipe(path, tz=tz, progress=None, source_id=sid,
                                                  since=since if isinstance(since, dict) else None, con=con), con)
    new_state = {**state, "identity": identity, "source_id": sid, "since": marks_now, "tails": tails,
                 # every id this path's rows landed under: a database put back later is one of them
                 "source_ids": sorted({*_str_list(state.get("source_ids")), sid})}
    if change is not None:
        new_state["changed"] = {"what": change, "at": iso_utc(time.time_ns() // 1000),
                                "says": rewrites.source_changes_note(change)}
    if change == "rewritten" or state.get("reused_ids"):
        new_state["reused_ids"] = True  # ids below the watermark may name two events: check every pass
    return batches, new_state


def _closing(batches: Iterator[CaptureBatch], con: sqlite3.Connection) -> Iterator[CaptureBatch]:
    """The batches, then the pass's read transaction ends (its connection closed)."""
    try:
        yield from batches
    finally:
        con.close()


def _str_list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def screenpipe_source_ids(home: Home) -> list[str]:
    """Source ids the log holds screenpipe rows under: of imports (their watermarks) and of
    followed databases (their sync state)."""
    found: set[str] = set()
    try:
        doc = json.loads((home.log_dir / WATERMARKS).read_bytes())
    except (OSError, ValueError):
        doc = {}
    sources = doc.get("sources") if isinstance(doc, dict) else None
    if isinstance(sources, dict):
        found |= {sid for sid, mark in sources.items() if isinstance(mark, dict) and mark.get("kind") == "screenpipe"}
    for entry in _load(home)["sources"].values():
        st = entry.get("state", {}) if entry.get("kind") == "screenpipe" else {}
        sid = st.get("source_id") or st.get("identity")
        if isinstance(sid, str):
            found.add(sid)
        found |= set(_str_list(st.get("source_ids")))
    return sorted(found)


# ----------------------------------------------------------------------------- ActivityWatch


def _get_json(url: str) -> Any:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:  # noqa: S310 (the user's own server)
        return json.loads(resp.read().decode("utf-8"))


def _activitywatch_batches(home: Home, source: Source, state: dict[str, Any], now_us: int
                           ) -> tuple[Iterable[CaptureBatch], dict[str, Any]]:
    # deferred: only the importer of the source synced
    from capture.importers.activitywatch import read_activitywatch

    tz = home.settings().tz
    if not source.location.startswith(("http://", "https://")):
        # The server's database: read whole (dedupe by ref lands only what is new).
        return [read_activitywatch(Path(source.location), tz=tz, progress=None)], dict(state)
    base = source.location
    buckets = _get_json(f"{base}/api/0/buckets/")
    if not isinstance(buckets, dict):
        raise UserError(f"{base}/api/0/buckets/ did not answer with a dictionary of buckets")
    marks = dict(state.get("buckets", {})) if isinstance(state.get("buckets"), dict) else {}
    export: dict[str, Any] = {"buckets": {}}
    for bid in sorted(buckets):
        meta = buckets[bid] if isinstance(buckets[bid], dict) else {}
        query = {}
        if bid in marks:
            # From the watermark, or from now if the clock went back since (events written after
            # a backwards jump end before the watermark): less the overlap either way.
            query["start"] = iso_utc(max(0, min(int(marks[bid]), now_us) - AW_OVERLAP_US))
        url = f"{base}/api/0/buckets/{urllib.parse.quote(bid, safe='')}/events"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        events = _get_json(url)
        if not isinstance(events, list):
            raise UserError(f"{url} did not answer with a list of events")
        export["buckets"][bid] = {**meta, "id": bid, "events": events}
        newest = _newest_event_end(events)
        if newest is not None:
            marks[bid] = max(int(marks.get(bid, 0)), newest)
    new_state = dict(state)
    new_state["buckets"] = marks
    if not any(b["events"] for b in export["buckets"].values()):
        return [], new_state
    # The importer reads files: hand it this pass's events as an export, in a private folder.
    folder = Path(tempfile.mkdtemp(prefix="af-sync-"))
    try:
        os.chmod(folder, 0o700)
        path = folder / "aw-sync-export.json"
        path.write_text(json.dumps(export), encoding="utf-8")
        batch = read_activitywatch(path, tz=tz, progress=None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [batch], new_state


def _newest_event_end(events: list[Any]) -> int | None:
    best: int | None = None
    for ev in events:
        try:
            start = parse_ts(str(ev["timestamp"]))
            end = start + int(round(float(ev.get("duration", 0)) * US))
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        best = end if best is None else max(best, end)
    return best


# ----------------------------------------------------------------------------- watching and status


def watch(
    home: Home,
    chosen: list[Source],
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    stop: threading.Event | None = None,
    on_pass: Callable[[PassResult], None] | None = None,
    max_passes: int | None = None,
) -> None:
    """Pass over the sources until ``stop`` is set; a failing source backs off exponentially."""
    stop = stop or threading.Event()
    due = dict.fromkeys((s.name for s in chosen), 0.0)
    failures = dict.fromkeys((s.name for s in chosen), 0)
    passes = 0
    # Each pass checks the rows it reads against the open day's refs: kept between passes, so a
    # pass reads only what it lands instead of the whole open day again (it grew with the day).
    open_refs: dict[str, Any] = {}
    while not stop.is_set():
        now = time.monotonic()
        for s in chosen:
            if stop.is_set() or now < due[s.name]:
                continue
            result = sync_once(home, s, open_refs=open_refs)
            passes += 1
            failures[s.name] = 0 if result.ok else failures[s.name] + 1
            delay = interval_s if result.ok else min(MAX_BACKOFF_S, interval_s * 2 ** failures[s.name])
            due[s.name] = time.monotonic() + delay
            if on_pass:
                on_pass(result)
        if max_passes is not None and passes >= max_passes:
            return
        wait = max(0.05, min(due.values()) - time.monotonic()) if due else interval_s
        stop.wait(wait)


def status(home: Home, now_us: int | None = None) -> list[dict[str, Any]]:
    """Per registered source: where it is, when it last passed, how far behind the log is."""
    now = time.time_ns() // 1000 if now_us is None else now_us
    data = _load(home)
    out = []
    for name, entry in sorted(data["sources"].items()):
        st = entry.get("state", {})
        newest = st.get("newest_us")
        last_ok = st.get("last_ok_us")
        out.append({
            "source": name,
            "kind": entry.get("kind"),
            "location": entry.get("location"),
            "last_pass": st.get("last_pass"),
            "last_ok": st.get("last_ok"),
            "last_error": st.get("last_error"),
            "failures": int(st.get("failures", 0)),
            "rows_landed": int(st.get("landed_total", 0)),
            "newest_capture": iso_utc(newest) if newest else None,
            # how old the newest capture in the log is: what an agent asking "now" may miss
            "behind_s": round((now - newest) / US, 1) if newest else None,
            "since_last_ok_s": round((now - last_ok) / US, 1) if last_ok else None,
            # what the source last did to itself that the sync had to handle (retention, a rollback)
            "source_changed": st.get("changed"),
        })
    return out


__all__ = ["KINDS", "PassResult", "Source", "normalise", "register", "sources", "status", "sync_once", "watch"]
