"""Import ActivityWatch data: an export JSON file or the server's SQLite database, read-only.

ActivityWatch records intervals (an event has a start and a duration), screenpipe records
instants. To let both be measured the same way downstream, each window event becomes:

- one snapshot at its start (trigger ``aw:window``), and
- for long events, one heartbeat snapshot every HEARTBEAT_S seconds through its duration
  (trigger ``heartbeat``, heartbeat flag set), the cadence of screenpipe's idle capture, so
  dwell (gap to the next snapshot, capped) is credited alike.

``web.tab.current`` events give URLs: a browser window snapshot takes the URL of the tab event of
the same browser that covers its time. When the source has no window bucket at all, the tab
events themselves become browser snapshots. ``afkstatus`` events become Presence intervals.
Other bucket types (editor, input, ...) are counted and not mapped.

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
)
from capture.model import Presence, Snapshot
from capture.timeutil import MAX_YEAR, MIN_YEAR, BadTimestamp, parse_ts

US = 1_000_000
HEARTBEAT_S = 30
HEARTBEAT_US = HEARTBEAT_S * US
MAX_EVENT_US = 24 * 3600 * US  # a single window event longer than a day is a stuck clock: cut it
URL_LEAD_US = 2 * US  # a tab event may be reported up to this much after the window event
WHAT = "an ActivityWatch export (.json) or database (sqlite.db)"
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
    else:
        raise UserError(f"{p} is not an ActivityWatch export or database: {HINT[kind]}")
    hosts = sorted({b.hostname for b in buckets if b.type == "currentwindow"} or {b.hostname for b in buckets})
    batch.source_id = source_id or "activitywatch:" + ("+".join(hosts) or "unknown")
    _map(buckets, batch, texts, DaySeen(tz), str(p))
    say.say(f"{len(batch.snapshots)} snapshots, {len(batch.presence)} presence intervals")
    return batch


# ---------------------------------------------------------------------------------------------
# Reading the two layouts into buckets of events


def _from_export(p: Path, batch: ImportBatch, texts: Texts) -> list[_Bucket]:
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        batch.note("export file: invalid UTF-8 replaced with U+FFFD")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{p} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise UserError(f"{p} is nested too deeply to be an ActivityWatch export") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("buckets"), dict):
        raise UserError(f'{p} is JSON but not an ActivityWatch export (expected an object with a "buckets" object)')
    out: list[_Bucket] = []
    for bid, bucket in sorted(doc["buckets"].items()):
        if not isinstance(bucket, dict):
            batch.quarantine(str(p), f"buckets[{bid!r}]", "bucket is not an object", bucket)
            continue
        b = _Bucket(id=texts(bid, 256, "bucket id") or "?", type=str(bucket.get("type") or ""),
                    hostname=_hostname(bucket.get("hostname"), bid))
        events = bucket.get("events")
        if not isinstance(events, list):
            batch.quarantine(str(p), f"buckets[{bid!r}]", "bucket has no events list", {k: bucket[k] for k in
                             list(bucket)[:6] if k != "events"})
            continue
        for i, ev in enumerate(events):
            where = f"buckets[{bid!r}].events[{i}]"
            if not isinstance(ev, dict):
                batch.quarantine(str(p), where, "event is not an object", ev)
                continue
            try:
                start = parse_ts(ev.get("timestamp"))
            except BadTimestamp as exc:
                batch.quarantine(str(p), where, "unreadable timestamp", str(exc))
                continue
            dur = ev.get("duration", 0)
            if isinstance(dur, bool) or not isinstance(dur, (int, float)) or not math.isfinite(dur) or dur < 0:
                batch.quarantine(str(p), where, "duration is not a number of seconds >= 0", f"duration={dur!r}")
                continue
            data = ev.get("data")
            if not isinstance(data, dict):
                batch.quarantine(str(p), where, "event data is not an object", ev)
                continue
            b.events.append(_Event(where, start, start + int(round(dur * US)), data))
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
        if n % 8192 == 0:
            say.tick("events", n)
        where = f"eventmodel id={eid}"
        bucket = by_key.get(bkey)
        if bucket is None:
            batch.quarantine(str(p), where, "event of a bucket that does not exist", f"bucket_id={bkey!r}")
            continue
        try:
            start = parse_ts(ts)
            seconds = float(dur)
        except BadTimestamp as exc:
            batch.quarantine(str(p), where, "unreadable timestamp", str(exc))
            continue
        except (TypeError, ValueError):
            batch.quarantine(str(p), where, "duration is not a number of seconds >= 0", f"duration={dur!r}")
            continue
        if not math.isfinite(seconds) or seconds < 0:
            batch.quarantine(str(p), where, "duration is not a number of seconds >= 0", f"duration={dur!r}")
            continue
        parsed = _data(data)
        if parsed is None:
            batch.quarantine(str(p), where, "event data is not a JSON object", data)
            continue
        bucket.events.append(_Event(where, start, start + int(round(seconds * US)), parsed))
    return list(by_key.values())


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


@dataclass
class _Tabs:
    """The tab events of one web bucket, sorted by start, for lookups by time."""

    browser: str | None
    starts: list[int]
    events: list[_Event]

    def url_at(self, ts: int) -> _Event | None:
        i = bisect.bisect_right(self.starts, ts) - 1
        if i >= 0 and self.events[i].start_us <= ts < max(self.events[i].end_us, self.events[i].start_us + 1):
            return self.events[i]
        j = i + 1  # the tab event may be reported just after the window changed
        if j < len(self.events) and self.events[j].start_us - ts <= URL_LEAD_US:
            return self.events[j]
        return None


def _dedupe(bucket: _Bucket, batch: ImportBatch) -> list[_Event]:
    """Events sorted by start; identical repeats (same start, end and data) skipped."""
    seen: set[tuple[int, int, str]] = set()
    out = []
    for ev in sorted(bucket.events, key=lambda e: (e.start_us, e.end_us, e.where)):
        key = (ev.start_us, ev.end_us, json.dumps(ev.data, sort_keys=True, default=str))
        if key in seen:
            batch.note("events: duplicates skipped (same bucket, start, duration and data)")
            continue
        seen.add(key)
        out.append(ev)
    return out


def _map(buckets: list[_Bucket], batch: ImportBatch, texts: Texts, days: DaySeen, file: str) -> None:
    sid = batch.source_id
    windows = [b for b in buckets if b.type == "currentwindow"]
    webs = [b for b in buckets if b.type == "web.tab.current"]
    afks = [b for b in buckets if b.type == "afkstatus"]
    for b in buckets:
        if b not in windows and b not in webs and b not in afks and b.events:
            batch.note(f"events in buckets of type {b.type or '(none)'!r} (not mapped)", len(b.events))

    tabs: list[_Tabs] = []
    for b in webs:
        evs = [e for e in _dedupe(b, batch) if isinstance(e.data.get("url"), str) and e.data["url"]]
        tabs.append(_Tabs(_browser_of(b.id), [e.start_us for e in evs], evs))
    used_tabs: set[int] = set()

    for b in windows:
        stream = f"aw:{b.hostname}"
        refs: set[str] = set()
        for ev in _dedupe(b, batch):
            app = texts(ev.data.get("app") if isinstance(ev.data.get("app"), str) else None, 100_000, "window app")
            if app is None or not app.strip():
                batch.quarantine(file, ev.where, "window event has no app name", ev.data)
                continue
            if len(app) > MAX_APP:
                batch.quarantine(file, ev.where, f"app name longer than {MAX_APP} characters", app)
                continue
            title = ev.data.get("title")
            window = texts(title if isinstance(title, str) else None, MAX_WINDOW, "window title")
            browser = _browser_of(app)
            end = _cap_end(ev, batch)
            for k, ts in enumerate(range(ev.start_us, max(end, ev.start_us + 1), HEARTBEAT_US)):
                url = None
                if browser is not None:
                    for t in tabs:
                        if t.browser in (None, browser):
                            hit = t.url_at(ts)
                            if hit is not None:
                                used_tabs.add(id(hit))
                                url = texts(hit.data.get("url"), MAX_URL, "tab url")
                                break
                ref = f"{sid}:{b.id}:{ev.start_us}" + (f":hb{k}" if k else "")
                if ref in refs:
                    batch.quarantine(file, ev.where, "another event of the bucket starts at the same time", ev.data)
                    break
                refs.add(ref)
                batch.snapshots.append(Snapshot(
                    ref=ref, ts_us=ts, stream=stream, app=app, window=window, url=url, focused=True,
                    trigger="heartbeat" if k else "aw:window", heartbeat=k > 0,
                ))
                days.see(stream, ts)

    if windows:
        unused = sum(1 for t in tabs for e in t.events if id(e) not in used_tabs)
        batch.note("web tab events with no browser window snapshot to attach to (not imported)", unused)
    else:
        _tabs_as_snapshots(webs, tabs, batch, texts, days)

    for b in afks:
        for ev in _dedupe(b, batch):
            status = ev.data.get("status")
            if status not in ("afk", "not-afk"):
                batch.quarantine(file, ev.where, "afk status is neither 'afk' nor 'not-afk'", ev.data)
                continue
            batch.presence.append(Presence(ref=f"{sid}:{b.id}:{ev.start_us}", ts_us=ev.start_us,
                                           end_us=_cap_end(ev, batch), status=status))
    batch.streams = stream_infos(sid, days.first, {})


def _cap_end(ev: _Event, batch: ImportBatch) -> int:
    if ev.end_us - ev.start_us > MAX_EVENT_US:
        batch.note("events longer than 24 h (cut to 24 h)")
        return ev.start_us + MAX_EVENT_US
    return ev.end_us


def _tabs_as_snapshots(webs: Iterable[_Bucket], tabs: list[_Tabs], batch: ImportBatch, texts: Texts,
                       days: DaySeen) -> None:
    """No window bucket: the browser's tab events are the only foreground record we have."""
    sid = batch.source_id
    for b, t in zip(webs, tabs, strict=True):
        stream = f"aw:{b.hostname}"
        app = (t.browser or "browser").capitalize()
        for ev in t.events:
            title = ev.data.get("title")
            window = texts(title if isinstance(title, str) else None, MAX_WINDOW, "tab title")
            url = texts(ev.data.get("url"), MAX_URL, "tab url")
            end = _cap_end(ev, batch)
            for k, ts in enumerate(range(ev.start_us, max(end, ev.start_us + 1), HEARTBEAT_US)):
                batch.snapshots.append(Snapshot(
                    ref=f"{sid}:{b.id}:{ev.start_us}" + (f":hb{k}" if k else ""), ts_us=ts, stream=stream,
                    app=app, window=window, url=url, focused=True,
                    trigger="heartbeat" if k else "aw:web", heartbeat=k > 0,
                ))
                days.see(stream, ts)
        if t.events:
            batch.note("web tab events used as browser snapshots (no window bucket in the source)", len(t.events))
