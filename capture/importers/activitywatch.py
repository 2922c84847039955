"""Import ActivityWatch data: an export JSON file or the server's SQLite database, read-only.

ActivityWatch measures intervals: an event has a start and a duration, grown by heartbeats while
the window stays the same. That measured span is what the user saw, so each window event becomes
snapshots that carry it (Snapshot.end_us) and the compiler credits exactly the span:

- one snapshot per event (trigger ``aw:window``), cut at local midnight so each piece lands in
  its day, and cut where the browser's tab changes, so each piece carries its URL;
- several versions of one event (same start, growing durations: heartbeat states) are one event,
  the longest; the others are counted as merged heartbeat versions;
- overlapping events of one bucket are clipped at the next event's start.

``web.tab.current`` events give URLs: a browser window event takes the URLs of the tab events of
the same browser inside its span (aw-webui's filter_period_intersect); a tab event reported up
to URL_LEAD_US after the window changed still gives that visit its URL. When the source has no
window bucket, the tab events themselves become browser snapshots. ``afkstatus`` events become
Presence intervals and aw-android's ``os.lockscreen.unlocks`` events unlock instants, both tied
to the host's stream. Other bucket types (editor, media, input, ...) are counted by type and not
imported. ActivityWatch records no input events.

Layouts read: the export JSON ``{"buckets": {id: {type, client, hostname, events: [...]}}}``,
aw-server-rust's ``sqlite.db`` (``buckets`` + ``events`` with nanosecond start/end) and the older
Python aw-server's peewee database (``bucketmodel`` + ``eventmodel``).
"""

from __future__ import annotations

import bisect
import json
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capture.errors import UserError
from capture.importers.common import (
    HINT,
    MAX_APP,
    MAX_URL,
    MAX_WINDOW,
    ClockWatch,
    DaySeen,
    ImportBatch,
    Progress,
    ProgressFn,
    Texts,
    check_readable,
    iter_rows,
    open_sqlite_readonly,
    plain,
    read_failure,
    sniff,
    stream_infos,
    table_columns,
    wal_missing,
    zoneless,
)
from capture.model import Presence, Snapshot
from capture.timeutil import MAX_YEAR, MIN_YEAR, BadTimestamp, day_bounds, parse_ts

US = 1_000_000
MAX_EVENT_US = 24 * 3600 * US  # a single window event longer than a day is a stuck clock: cut it
URL_LEAD_US = 5 * US  # a tab event may be reported up to this much after the window event
WHAT = "an ActivityWatch export (.json) or database (sqlite.db)"
# ActivityWatch writes every time stamp with its offset; one without is read as UTC, as
# ActivityWatch's own aw-core reads it (a warning there, a note here)
ZONELESS = "time stamps carry no zone: read as UTC, as ActivityWatch itself reads them"
_LOW_US = parse_ts(f"{MIN_YEAR}-01-01T00:00:00Z")
_HIGH_US = parse_ts(f"{MAX_YEAR}-12-31T23:59:59Z")

# Browser families: a token found in the web bucket id and in the window's app name.
BROWSERS: dict[str, tuple[str, ...]] = {
    "chrome": ("chrome", "chromium"),
    "firefox": ("firefox", "librewolf", "waterfox"),
    "edge": ("edge", "msedge"),
    "brave": ("brave",),
    "opera": ("opera",),
    "vivaldi": ("vivaldi",),
    "safari": ("safari",),
    "arc": ("arc",),
}


@dataclass
class _Event:
    where: str  # locator inside the source, for the quarantine
    start_us: int
    end_us: int
    data: dict[str, Any]


@dataclass
class _Bucket:
    id: str
    type: str
    hostname: str
    events: list[_Event] = field(default_factory=list)


def read_activitywatch(
    path: Path,
    *,
    tz: str | None = None,
    source_id: str | None = None,
    progress: ProgressFn | None = None,
) -> ImportBatch:
    """Read an ActivityWatch export JSON or SQLite database into one batch (never modified)."""
    path = Path(path).expanduser()
    if path.is_dir() and (path / "sqlite.db").is_file():
        path = path / "sqlite.db"  # pointed at aw-server-rust's folder
    p = check_readable(path, WHAT)
    kind = sniff(p)
    batch = ImportBatch(source_id="activitywatch", recorder="activitywatch")
    texts = Texts(batch, surrogates=True)
    say = Progress(f"activitywatch {p.name}", progress)
    if kind == "json":
        buckets = _from_export(p, batch, texts)
    elif kind == "sqlite":
        con = open_sqlite_readonly(p, WHAT)
        try:
            buckets = _from_sqlite(con, p, batch, texts, say)
        except sqlite3.DatabaseError as exc:
            raise read_failure(p, exc) from None
        finally:
            con.close()
        _wal_hint(p, buckets, batch)
    else:
        raise UserError(f"{p} is not an ActivityWatch export or database: {HINT[kind]}")
    _classify(buckets, batch)
    hosts = sorted({b.hostname for b in buckets if b.type == "currentwindow"} or {b.hostname for b in buckets})
    batch.source_id = source_id or "activitywatch:" + ("+".join(hosts) or "unknown")
    _map(buckets, batch, texts, DaySeen(tz), str(p))
    say.say(f"{len(batch.snapshots)} snapshots, {len(batch.presence)} presence intervals")
    return batch


# ---------------------------------------------------------------------------------------------
# Reading the two layouts into buckets of events

# The bucket types this importer maps, and the id prefix each watcher gives its bucket
# ("aw-watcher-window_<host>", "aw-watcher-afk_<host>", "aw-watcher-web-<browser>").
MAPPED_TYPES = frozenset({"currentwindow", "web.tab.current", "afkstatus", "os.lockscreen.unlocks"})
ID_PREFIXES = (("aw-watcher-window_", "currentwindow"), ("aw-watcher-afk_", "afkstatus"),
               ("aw-watcher-web-", "web.tab.current"))


def _classify(buckets: list[_Bucket], batch: ImportBatch) -> None:
    """A bucket of a type this importer maps keeps it; any other bucket whose id is a watcher's
    (``aw-watcher-window_HOST``, ...) is read as that watcher's, whatever type a wrapper wrote
    (a dashboard saves ``"type": "window"``)."""
    for b in buckets:
        if b.type in MAPPED_TYPES:
            continue
        for prefix, kind in ID_PREFIXES:
            if b.id.startswith(prefix):
                batch.note(f"buckets of type {b.type or '(none)'!r} read as {kind!r} by their id ({prefix}...)")
                b.type = kind
                break


def _from_export(p: Path, batch: ImportBatch, texts: Texts) -> list[_Bucket]:
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        batch.note("export file: invalid UTF-8 replaced with U+FFFD")
    try:
        doc = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise UserError(f"{p} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise UserError(f"{p} is nested too deeply to be an ActivityWatch export") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("buckets"), dict):
        raise UserError(f'{p} is JSON but not an ActivityWatch export (expected an object with a "buckets" object)')
    # A capture may keep the bucket metadata and the events apart: {"buckets": {id: {type, ...}},
    # "events": {id: [...]}}; a bucket without its own events list takes its list from there.
    sibling: dict[str, Any] = doc["events"] if isinstance(doc.get("events"), dict) else {}
    out: list[_Bucket] = []
    for bid, bucket in sorted(doc["buckets"].items()):
        if not isinstance(bucket, dict):
            batch.quarantine(str(p), f"buckets[{bid!r}]", "bucket is not an object", bucket)
            continue
        b = _Bucket(id=texts(bid, 256, "bucket id") or "?", type=str(bucket.get("type") or ""),
                    hostname=_hostname(bucket.get("hostname"), bid))
        events = bucket.get("events")
        if events is None and isinstance(sibling.get(bid), list):
            events = sibling[bid]
            batch.note("buckets whose events were read from the top-level \"events\" map")
        if not isinstance(events, list):
            batch.quarantine(str(p), f"buckets[{bid!r}]", "bucket has no events list", {k: bucket[k] for k in
                             list(bucket)[:6] if k != "events"})
            continue
        base = f"buckets[{bid!r}].events" if bucket.get("events") is not None else f"events[{bid!r}]"
        batch.source_rows = (batch.source_rows or 0) + len(events)
        for i, ev in enumerate(events):
            where = f"{base}[{i}]"
            if not isinstance(ev, dict):
                batch.quarantine(str(p), where, "event is not an object", ev)
                continue
            try:
                start = _start(ev.get("timestamp"))
            except BadTimestamp as exc:
                batch.quarantine(str(p), where, "unreadable timestamp", str(exc))
                continue
            if zoneless(ev.get("timestamp")):
                batch.note(ZONELESS)
            end = _end(start, ev.get("duration", 0))
            if isinstance(end, str):
                batch.quarantine(str(p), where, end, f"duration={ev.get('duration')!r}"[:200])
                continue
            data = ev.get("data")
            if not isinstance(data, dict):
                batch.quarantine(str(p), where, "event data is not an object", ev)
                continue
            b.events.append(_Event(where, start, end, data))
        out.append(b)
    return out


def _from_sqlite(con: sqlite3.Connection, p: Path, batch: ImportBatch, texts: Texts,
                 say: Progress) -> list[_Bucket]:
    tables = {str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if {"buckets", "events"} <= tables and "bucketrow" in table_columns(con, "events"):
        return _from_rust_db(con, p, batch, texts, say)
    if {"bucketmodel", "eventmodel"} <= tables:
        return _from_peewee_db(con, p, batch, texts, say)
    raise UserError(
        f"{p} is an SQLite database but not ActivityWatch's (no buckets/events tables; "
        f"tables: {', '.join(sorted(tables)[:8]) or 'none'}); for screenpipe use `af import screenpipe`"
    )


STALE_US = 24 * 3600 * US  # a server database whose newest event is this much older than the file


def _wal_hint(p: Path, buckets: list[_Bucket], batch: ImportBatch) -> None:
    """aw-server keeps its database in WAL mode: recent events sit in ``<db>-wal`` until a
    checkpoint. A copy of the main file alone holds none of them; say so when it looks like that
    (no events at all, or none in the day before the file was last written)."""
    if not wal_missing(p):
        return
    ends = [e.end_us for b in buckets for e in b.events]
    try:
        written_us = p.stat().st_mtime_ns // 1000
    except OSError:
        return
    if ends and max(ends) >= written_us - STALE_US:
        return
    what = "holds no events" if not ends else "holds no events of the day before it was last written"
    batch.hints.append(
        f"{p} {what} and there is no {p.name}-wal beside it: aw-server keeps its recent events in "
        f"that -wal file until a checkpoint, so they may be there. Copy {p.name}-wal (and {p.name}-shm) "
        f"along with the database, or stop aw-server first (it checkpoints when it stops), then import again."
    )


def _ns_to_us(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadTimestamp(f"nanosecond time {value!r} is not an integer")
    us = value // 1000
    if not _LOW_US <= us <= _HIGH_US:
        raise BadTimestamp(f"nanosecond time {value} is outside {MIN_YEAR}-{MAX_YEAR}")
    return us


def _from_rust_db(con: sqlite3.Connection, p: Path, batch: ImportBatch, texts: Texts,
                  say: Progress) -> list[_Bucket]:
    by_row: dict[Any, _Bucket] = {}
    bcols = set(table_columns(con, "buckets"))
    name_col = "name" if "name" in bcols else "id"
    for row, name, btype, host in con.execute(
        f'SELECT id, "{name_col}", type, {"hostname" if "hostname" in bcols else "NULL"} FROM buckets ORDER BY id'
    ):
        bid = texts(name, 256, "bucket id") or f"bucket{row}"
        by_row[row] = _Bucket(id=bid, type=str(btype or ""), hostname=_hostname(host, bid))
    clock = ClockWatch(batch, "events")
    total = int(con.execute("SELECT max(rowid) FROM events").fetchone()[0] or 0)
    n = 0
    for eid, bucketrow, start_ns, end_ns, data in iter_rows(
        con.execute("SELECT id, bucketrow, starttime, endtime, data FROM events ORDER BY id")
    ):
        n += 1
        batch.source_rows = n
        if n % 8192 == 0:
            say.tick("events", n, total)
        where = f"events id={eid}"
        bucket = by_row.get(bucketrow)
        if bucket is None:
            batch.quarantine(str(p), where, "event of a bucket that does not exist", f"bucketrow={bucketrow!r}")
            continue
        try:
            start, end = _ns_to_us(start_ns), _ns_to_us(end_ns)
        except BadTimestamp as exc:
            batch.quarantine(str(p), where, "unreadable timestamp", str(exc))
            continue
        if end < start:
            batch.quarantine(str(p), where, "event ends before it starts", f"{start_ns}..{end_ns}")
            continue
        parsed = _data(data)
        if parsed is None:
            batch.quarantine(str(p), where, "event data is not a JSON object", data)
            continue
        clock.see(start)
        bucket.events.append(_Event(where, start, end, parsed))
    clock.finish()
    return list(by_row.values())


def _from_peewee_db(con: sqlite3.Connection, p: Path, batch: ImportBatch, texts: Texts,
                    say: Progress) -> list[_Bucket]:
    by_key: dict[Any, _Bucket] = {}
    for key, bid, btype, host in con.execute("SELECT key, id, type, hostname FROM bucketmodel ORDER BY key"):
        name = texts(bid, 256, "bucket id") or f"bucket{key}"
        by_key[key] = _Bucket(id=name, type=str(btype or ""), hostname=_hostname(host, name))
    n = 0
    for eid, bkey, ts, dur, data in iter_rows(
        con.execute("SELECT id, bucket_id, timestamp, duration, datastr FROM eventmodel ORDER BY id")
    ):
        n += 1
        batch.source_rows = n
        if n % 8192 == 0:
            say.tick("events", n)
        where = f"eventmodel id={eid}"
        bucket = by_key.get(bkey)
        if bucket is None:
            batch.quarantine(str(p), where, "event of a bucket that does not exist", f"bucket_id={bkey!r}")
            continue
        try:
            start = _start(ts)
            seconds = float(dur)
        except BadTimestamp as exc:
            batch.quarantine(str(p), where, "unreadable timestamp", str(exc))
            continue
        except (TypeError, ValueError, OverflowError):
            batch.quarantine(str(p), where, "duration is not a number of seconds >= 0", f"duration={dur!r}"[:200])
            continue
        end = _end(start, seconds)
        if isinstance(end, str):
            batch.quarantine(str(p), where, end, f"duration={dur!r}"[:200])
            continue
        parsed = _data(data)
        if parsed is None:
            batch.quarantine(str(p), where, "event data is not a JSON object", data)
            continue
        bucket.events.append(_Event(where, start, end, parsed))
    return list(by_key.values())


class _HugeInt(str):
    """A JSON integer too long to be a time or a duration, kept as its text."""


def _json_int(text: str) -> int | str:
    # Python refuses to convert integers of more than 4300 digits (ValueError): no time or
    # duration has more than 20, so longer ones stay text and are quarantined where used
    return int(text) if len(text) <= 40 else _HugeInt(text[:40] + "...")


def _start(value: Any) -> int:
    if isinstance(value, _HugeInt):
        raise BadTimestamp(f"timestamp {value} has too many digits")
    try:
        return parse_ts(value)
    except (OverflowError, ValueError) as exc:  # inf, NaN, integers beyond a float's range
        raise BadTimestamp(f"timestamp {str(value)[:40]!r} is not a time ({exc})") from None


def _end(start: int, dur: Any) -> int | str:
    """start + duration seconds, or the reason the duration cannot be used."""
    if isinstance(dur, bool) or not isinstance(dur, (int, float)):
        return "duration is not a number of seconds >= 0"
    if isinstance(dur, float) and not math.isfinite(dur) or dur < 0:
        return "duration is not a number of seconds >= 0"
    if dur > (_HIGH_US - start) / US:
        return f"event would end after {MAX_YEAR} (duration too long)"
    return start + int(round(dur * US))


def _data(raw: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(raw) if isinstance(raw, (str, bytes)) else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _hostname(value: Any, bucket_id: str) -> str:
    if isinstance(value, str) and value.strip() and value.strip().lower() != "unknown":
        return plain(value.strip()[:128])
    # aw-watcher buckets are named "<watcher>_<hostname>"
    _, sep, host = bucket_id.rpartition("_")
    return plain(host[:128]) if sep and host else "unknown"


# ---------------------------------------------------------------------------------------------
# Mapping buckets onto the capture model


def _browser_of(name: str | None) -> str | None:
    low = (name or "").lower()
    for family, tokens in BROWSERS.items():
        for token in tokens:
            if token == "arc":
                if low in ("arc", "arc.exe") or low.startswith("aw-watcher-web-arc"):
                    return family
            elif token in low:
                return family
    return None


class _Tabs:
    """The tab events of the web buckets a browser may own, sorted, overlaps clipped."""

    def __init__(self, events: list[_Event]):
        evs = sorted(events, key=lambda e: (e.start_us, -e.end_us, e.where))
        out: list[_Event] = []
        for ev in evs:
            if out and ev.start_us < out[-1].end_us:
                if ev.start_us == out[-1].start_us:
                    continue  # two buckets saw the same visit: the longer one is kept
                prev = out[-1]
                out[-1] = _Event(prev.where, prev.start_us, ev.start_us, prev.data)
            out.append(ev)
        self.events = out
        self.starts = [e.start_us for e in out]
        self.used: set[int] = set()  # positions of tab events that gave a URL

    def spans(self, start: int, end: int) -> list[tuple[int, int, _Event | None]]:
        """[start, end) cut where the tab changes: (from, to, tab event or None).

        The tab watcher reports a visit up to URL_LEAD_US after the window changed: such an
        uncovered lead is given to the tab event that follows it."""
        out: list[tuple[int, int, _Event | None]] = []
        i = max(bisect.bisect_right(self.starts, start) - 1, 0)
        t = start
        while t < end:
            while i < len(self.events) and self.events[i].end_us <= t:
                i += 1
            if i == len(self.events):
                out.append((t, end, None))
                break
            ev = self.events[i]
            if ev.start_us > t:
                if ev.start_us - t <= URL_LEAD_US and ev.start_us < end:
                    stop = min(ev.end_us, end)
                    out.append((t, stop, ev))
                    self.used.add(i)
                    t = stop
                    i += 1
                    continue
                stop = min(ev.start_us, end)
                out.append((t, stop, None))
                t = stop
                continue
            stop = min(ev.end_us, end)
            out.append((t, stop, ev))
            self.used.add(i)
            t = stop
            i += 1
        # neighbours without a URL, or with the same one, are one span
        merged: list[tuple[int, int, _Event | None]] = []
        for a, b, tab in out:
            if merged and merged[-1][1] == a and _url(merged[-1][2]) == _url(tab):
                merged[-1] = (merged[-1][0], b, merged[-1][2])
            else:
                merged.append((a, b, tab))
        return merged


def _url(ev: _Event | None) -> Any:
    return None if ev is None else ev.data.get("url")


def _versions(bucket: _Bucket, batch: ImportBatch, file: str) -> list[_Event]:
    """One event per start, sorted, overlaps clipped at the next event's start.

    ActivityWatch's heartbeats grow an event in place, and exports or synced databases may
    hold several versions of it: the same start with growing durations. The longest is the
    final state; the shorter ones are merged heartbeat versions, not separate events."""
    out: list[_Event] = []
    for ev in sorted(bucket.events, key=lambda e: (e.start_us, -e.end_us, e.where)):
        if out and out[-1].start_us == ev.start_us:
            if ev.data == out[-1].data:
                batch.note("merged heartbeat versions (same start, shorter or equal duration; the longest kept)")
            else:
                batch.quarantine(file, ev.where, "another event of the bucket starts at the same time "
                                 "(the longest one is kept)", ev.data)
            continue
        if out and ev.start_us < out[-1].end_us:
            prev = out[-1]
            out[-1] = _Event(prev.where, prev.start_us, ev.start_us, prev.data)
            batch.note("overlapping events clipped at the next event's start")
        out.append(ev)
    return out


def _pieces(start: int, end: int, days: DaySeen) -> list[tuple[int, int]]:
    """[start, end) split at local midnight, so each piece lands in the day it belongs to."""
    out = []
    t = start
    while True:
        midnight = day_bounds(days.day(t), days.zone)[1]
        if end <= midnight:
            out.append((t, end))
            return out
        out.append((t, midnight))
        t = midnight


def _map(buckets: list[_Bucket], batch: ImportBatch, texts: Texts, days: DaySeen, file: str) -> None:
    sid = batch.source_id
    windows = [b for b in buckets if b.type == "currentwindow"]
    webs = [b for b in buckets if b.type == "web.tab.current"]
    afks = [b for b in buckets if b.type == "afkstatus"]
    unlocks = [b for b in buckets if b.type == "os.lockscreen.unlocks"]
    mapped = (*windows, *webs, *afks, *unlocks)
    for b in buckets:
        if all(b is not m for m in mapped) and b.events:
            batch.note(f"events in buckets of type {b.type or '(none)'!r} (not imported)", len(b.events))

    web_events = {id(b): [e for e in _versions(b, batch, file) if isinstance(e.data.get("url"), str)
                          and e.data["url"]] for b in webs}
    tabs_of: dict[str, _Tabs] = {}  # per browser family: the tab events of its web buckets
    for family in sorted({f for f in map(_browser_of, (b.id for b in webs)) if f} | set(BROWSERS)):
        mine = [e for b in webs if _browser_of(b.id) in (None, family) for e in web_events[id(b)]]
        if mine:
            tabs_of[family] = _Tabs(mine)

    for b in windows:
        stream = f"aw:{b.hostname}"
        for ev in _versions(b, batch, file):
            app = texts(ev.data.get("app") if isinstance(ev.data.get("app"), str) else None, 100_000, "window app")
            if app is None or not app.strip():
                batch.quarantine(file, ev.where, "window event has no app name", ev.data)
                continue
            if len(app) > MAX_APP:
                batch.quarantine(file, ev.where, f"app name longer than {MAX_APP} characters", app)
                continue
            title = ev.data.get("title")
            window = texts(title if isinstance(title, str) else None, MAX_WINDOW, "window title")
            end = _cap_end(ev, batch)
            browser = _browser_of(app)
            tabs = tabs_of.get(browser) if browser is not None else None
            spans: list[tuple[int, int, _Event | None]] = (tabs.spans(ev.start_us, end) if tabs is not None and end > ev.start_us
                     else [(ev.start_us, end, None)])
            _emit(batch, days, f"{sid}:{b.id}:{ev.start_us}", stream, app, window, "aw:window",
                  [(a, z, texts(tab.data.get("url"), MAX_URL, "tab url") if tab is not None else None)
                   for a, z, tab in spans])

    if windows:
        given = {id(t.events[i]) for t in tabs_of.values() for i in t.used}
        unused = sum(1 for b in webs for e in web_events[id(b)] if id(e) not in given)
        batch.note("web tab events outside any browser window event (not imported)", unused)
    else:
        _tabs_as_snapshots(webs, web_events, batch, texts, days, file)

    for b in afks:
        stream = f"aw:{b.hostname}"
        for ev in _versions(b, batch, file):
            status = ev.data.get("status")
            if status not in ("afk", "not-afk"):
                batch.quarantine(file, ev.where, "afk status is neither 'afk' nor 'not-afk'", ev.data)
                continue
            base = f"{sid}:{b.id}:{ev.start_us}"
            for k, (a, z) in enumerate(_pieces(ev.start_us, max(_cap_end(ev, batch), ev.start_us), days)):
                batch.presence.append(Presence(ref=base + (f":{k}" if k else ""), ts_us=a, end_us=z,
                                               status=str(status), stream=stream))
    for b in unlocks:
        # aw-android: one zero-length event per unlock (KEYGUARD_HIDDEN): presence starts there
        stream = f"aw:{b.hostname}"
        for ev in _versions(b, batch, file):
            batch.presence.append(Presence(ref=f"{sid}:{b.id}:{ev.start_us}", ts_us=ev.start_us,
                                           end_us=ev.start_us, status="unlock", stream=stream))
    batch.streams = stream_infos(sid, days.first, {})


def _emit(batch: ImportBatch, days: DaySeen, base: str, stream: str, app: str, window: str | None,
          trigger: str, spans: list[tuple[int, int, str | None]]) -> None:
    """One snapshot per span piece (URL change, local midnight), each with its measured end."""
    k = 0
    for a, z, url in spans:
        for pa, pz in _pieces(a, z, days) if z > a else [(a, a)]:
            batch.snapshots.append(Snapshot(
                ref=base + (f":{k}" if k else ""), ts_us=pa, stream=stream, app=app, window=window,
                url=url, focused=True, trigger=trigger, heartbeat=False, end_us=pz,
            ))
            days.see(stream, pa)
            k += 1


def _cap_end(ev: _Event, batch: ImportBatch) -> int:
    if ev.end_us - ev.start_us > MAX_EVENT_US:
        batch.note("events longer than 24 h (cut to 24 h)")
        return ev.start_us + MAX_EVENT_US
    return ev.end_us


def _tabs_as_snapshots(webs: Iterable[_Bucket], web_events: dict[int, list[_Event]], batch: ImportBatch,
                       texts: Texts, days: DaySeen, file: str) -> None:
    """No window bucket: the browser's tab events are the only foreground record we have."""
    sid = batch.source_id
    for b in webs:
        stream = f"aw:{b.hostname}"
        app = (_browser_of(b.id) or "browser").capitalize()
        for ev in web_events[id(b)]:
            title = ev.data.get("title")
            window = texts(title if isinstance(title, str) else None, MAX_WINDOW, "tab title")
            url = texts(ev.data.get("url"), MAX_URL, "tab url")
            _emit(batch, days, f"{sid}:{b.id}:{ev.start_us}", stream, app, window, "aw:web",
                  [(ev.start_us, _cap_end(ev, batch), url)])
        if web_events[id(b)]:
            batch.note("web tab events used as browser snapshots (no window bucket in the source)",
                       len(web_events[id(b)]))
