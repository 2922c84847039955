"""Independent per-app, per-day minutes counter for real public captures.

Written from the capture tools' own documented semantics, without importing
anything from af_pipeline, so it can be used as a yardstick for `af day`.

ActivityWatch export JSON (web UI "Export all buckets", or /api/0/export):
  * window events (bucket type ``currentwindow``) are spans [ts, ts+duration);
  * versions of one event (same start in one bucket) count once: the longest;
  * an event overlapping the next event of its bucket is cut at that start;
  * a span is capped at 24 h;
  * when the host has an afk bucket (type ``afkstatus``), only the part of a
    span inside the union of its ``not-afk`` events counts (ActivityWatch's own
    "active window" query: filter_period_intersect(window, not-afk));
    same-start afk versions are deduplicated the same way first;
  * aw-android unlock buckets do not gate time;
  * every credited piece is cut at local midnight of --tz.
  A "naive" variant (plain sum of raw durations, no dedup/clip, still afk
  gated) is reported too, to show how much the repairs matter.

RPM / Action Logger UI-log CSV (comma or semicolon, UTF-8/UTF-8-BOM/UTF-16):
  * one instant per row; OS-Clipboard rows carry no app and are not rows of
    the timeline; rows without a readable timestamp are dropped;
  * a row more than 30 min from both file neighbours while those two are
    within 30 min of each other is a clock jump and is dropped;
  * per userID stream, rows in (time, file line) order: a row earns
    min(gap to the stream's next row, 90 s); a gap over 300 s earns nothing;
    the stream's last row earns nothing (docs/document-schema.md, 4.2);
  * the same rules on one timeline of all streams give ``timeline``;
  * credited intervals are cut at local midnight.

Output: JSON {"kind", "tz", "rows", "days": {day: {app: seconds}},
"timeline_days": {...}, "naive_days": {...}, "notes": [...]}.

usage: python independent_count.py PATH --kind activitywatch|rpm --tz ZONE
"""

from __future__ import annotations

import argparse
import codecs
import csv
import io
import json
import sys
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

DWELL_S = 90.0
GAP_S = 300.0
WILD_S = 30 * 60.0
CAP_S = 24 * 3600.0


def parse_ts(text: str) -> float | None:
    """ISO 8601 (Z or offset, any fraction length) -> POSIX seconds (UTC)."""
    if not isinstance(text, str):
        return None
    s = text.strip().strip('"')
    if not s:
        return None
    if s.endswith("Z") or s.endswith("z"):
        s = s[:-1] + "+00:00"
    # normalise the fraction to 6 digits for fromisoformat on any Python
    if "." in s:
        head, rest = s.split(".", 1)
        i = 0
        while i < len(rest) and rest[i].isdigit():
            i += 1
        frac, tail = rest[:i], rest[i:]
        frac = (frac + "000000")[:6]
        s = f"{head}.{frac}{tail}"
    try:
        dt = datetime.fromisoformat(s.replace(" ", "T", 1))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        return dt.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


def split_days(start: float, end: float, tz: ZoneInfo):
    """Yield (local day 'YYYY-MM-DD', seconds) pieces of [start, end)."""
    t = start
    while t < end:
        local = datetime.fromtimestamp(t, tz)
        nxt_day = (local.replace(hour=0, minute=0, second=0, microsecond=0)
                   + timedelta(days=1))
        # midnight in the zone (wall clock), robust to DST
        nxt = datetime(nxt_day.year, nxt_day.month, nxt_day.day, tzinfo=tz).timestamp()
        stop = min(end, nxt)
        if stop <= t:  # paranoia against a zero-length loop
            stop = end
        yield local.strftime("%Y-%m-%d"), stop - t
        t = stop


def add(days: dict, start: float, end: float, app: str, tz: ZoneInfo) -> None:
    if end <= start:
        return
    for day, secs in split_days(start, end, tz):
        days[day][app] += secs


# ---------------------------------------------------------------- intervals

def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def intersect(s: float, e: float, sorted_union, starts):
    """Pieces of [s, e) inside a sorted disjoint interval list."""
    import bisect
    i = bisect.bisect_right(starts, s) - 1
    if i < 0:
        i = 0
    pieces = []
    while i < len(sorted_union):
        a, b = sorted_union[i]
        if a >= e:
            break
        lo, hi = max(a, s), min(b, e)
        if hi > lo:
            pieces.append((lo, hi))
        i += 1
    return pieces


# ---------------------------------------------------------- ActivityWatch

def _dedupe_clip(events):
    """events: list of (start, dur, payload). Same start -> longest; overlap
    with the next start -> clipped. Returns list of (start, end, payload)."""
    by_start = {}
    for st, du, pl in events:
        cur = by_start.get(st)
        if cur is None or du > cur[0]:
            by_start[st] = (du, pl)
    starts = sorted(by_start)
    out = []
    for i, st in enumerate(starts):
        du, pl = by_start[st]
        end = st + min(du, CAP_S)
        if i + 1 < len(starts) and end > starts[i + 1]:
            end = starts[i + 1]
        out.append((st, end, pl))
    return out


def count_activitywatch(path: str, tz: ZoneInfo) -> dict:
    with open(path, "rb") as fh:
        raw = fh.read()
    doc = json.loads(raw.decode("utf-8-sig"))
    buckets = doc.get("buckets", doc) if isinstance(doc, dict) else {}
    if isinstance(buckets, list):
        buckets = {b.get("id", str(i)): b for i, b in enumerate(buckets)}
    notes = []
    window_by_host = defaultdict(list)  # host -> list of bucket event lists
    afk_by_host = defaultdict(list)
    rows = 0
    for bid, b in buckets.items():
        btype = b.get("type")
        host = b.get("hostname") or "unknown"
        evs = b.get("events") or []
        if btype == "currentwindow":
            window_by_host[host].append((bid, evs))
            rows += len(evs)
        elif btype == "afkstatus":
            afk_by_host[host].append((bid, evs))
        else:
            notes.append(f"bucket {bid} type {btype}: {len(evs)} events not counted")
    days = defaultdict(lambda: defaultdict(float))
    naive = defaultdict(lambda: defaultdict(float))
    ungated = defaultdict(lambda: defaultdict(float))
    bad = 0
    for host, wbuckets in window_by_host.items():
        gate = None
        if afk_by_host.get(host):
            not_afk = []
            for _, evs in afk_by_host[host]:
                parsed = []
                for e in evs:
                    st = parse_ts(e.get("timestamp"))
                    du = e.get("duration")
                    if st is None or not isinstance(du, (int, float)) or du != du or du < 0:
                        continue
                    parsed.append((st, float(du), (e.get("data") or {}).get("status")))
                for st, en, status in _dedupe_clip(parsed):
                    if status == "not-afk":
                        not_afk.append((st, en))
            gate = union(not_afk)
            gate_starts = [a for a, _ in gate]
            notes.append(f"host {host}: afk gate, {len(gate)} not-afk intervals, "
                         f"{sum(b - a for a, b in gate) / 60:.1f} min")
        else:
            notes.append(f"host {host}: no afk bucket, time not gated")
        for _bid, evs in wbuckets:
            parsed = []
            for e in evs:
                st = parse_ts(e.get("timestamp"))
                du = e.get("duration")
                if st is None or isinstance(du, bool) or not isinstance(du, (int, float)) \
                        or du != du or du < 0 or du == float("inf"):
                    bad += 1
                    continue
                app = (e.get("data") or {}).get("app")
                if not isinstance(app, str) or not app.strip():
                    bad += 1
                    continue
                parsed.append((st, float(du), app))
            # naive: raw durations, afk gated, no dedup/clip
            for st, du, app in parsed:
                en = st + du
                if gate is None:
                    add(naive, st, en, app, tz)
                else:
                    for a, b in intersect(st, en, gate, gate_starts):
                        add(naive, a, b, app, tz)
            for st, en, app in _dedupe_clip(parsed):
                add(ungated, st, en, app, tz)
                if gate is None:
                    add(days, st, en, app, tz)
                else:
                    for a, b in intersect(st, en, gate, gate_starts):
                        add(days, a, b, app, tz)
    if bad:
        notes.append(f"{bad} window events unusable (time, duration or app)")
    return {"kind": "activitywatch", "rows": rows, "days": _plain(days),
            "naive_days": _plain(naive), "ungated_days": _plain(ungated),
            "notes": notes}


# -------------------------------------------------------------------- RPM

def _read_text(path: str) -> str:
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw.startswith(codecs.BOM_UTF16_LE) or raw.startswith(codecs.BOM_UTF16_BE):
        return raw.decode("utf-16")
    return raw.decode("utf-8-sig", errors="replace")


def count_rpm(path: str, tz: ZoneInfo) -> dict:
    text = _read_text(path)
    first = text.split("\n", 1)[0]
    delim = ";" if first.count(";") > first.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    header = next(reader)
    cols = {h.strip().strip('"').lower(): i for i, h in enumerate(header)}
    ci = {k: cols.get(k.lower()) for k in ("timeStamp", "userID", "targetApp", "eventType")}
    notes = []
    recs = []  # (file index, ts or None, user, app)
    nrows = 0
    for idx, row in enumerate(reader):
        if not row or all(not c.strip() for c in row):
            continue
        nrows += 1

        def get(k, row=row):
            i = ci[k]
            return row[i].strip() if i is not None and i < len(row) else ""
        recs.append((idx, parse_ts(get("timeStamp")), get("userID"), get("targetApp"),
                     get("eventType")))
    # clock jumps: > 30 min from both file neighbours that agree with each other
    keep = [r for r in recs if r[1] is not None]
    unreadable = len(recs) - len(keep)
    wild = set()
    for i in range(1, len(keep) - 1):
        p, c, n = keep[i - 1][1], keep[i][1], keep[i + 1][1]
        if abs(c - p) > WILD_S and abs(c - n) > WILD_S and abs(n - p) <= WILD_S:
            wild.add(i)
    keep = [r for i, r in enumerate(keep) if i not in wild]
    snaps = [r for r in keep if r[3] and r[3] != "OS-Clipboard"]
    notes.append(f"{nrows} rows, {unreadable} unreadable timestamps, {len(wild)} clock jumps, "
                 f"{len(keep) - len(snaps)} OS-Clipboard/app-less rows not on the timeline")

    def credit(seq, out):
        seq = sorted(seq, key=lambda r: (r[1], r[0]))
        for a, b in zip(seq, seq[1:], strict=False):
            gap = b[1] - a[1]
            if gap > GAP_S:
                continue
            add(out, a[1], a[1] + min(gap, DWELL_S), a[3], tz)

    days = defaultdict(lambda: defaultdict(float))
    streams = defaultdict(list)
    for r in snaps:
        streams[r[2]].append(r)
    for _, seq in streams.items():
        credit(seq, days)
    timeline = defaultdict(lambda: defaultdict(float))
    credit(snaps, timeline)
    notes.append("streams: " + ", ".join(f"{u or '(none)'}={len(s)}" for u, s in streams.items()))
    return {"kind": "rpm", "rows": nrows, "days": _plain(days),
            "timeline_days": _plain(timeline), "notes": notes}


def _plain(days):
    return {d: {a: round(s, 3) for a, s in sorted(apps.items())} for d, apps in sorted(days.items())}


def count(path: str, kind: str, tz: str) -> dict:
    zone = ZoneInfo(tz)
    res = count_activitywatch(path, zone) if kind == "activitywatch" else count_rpm(path, zone)
    res["tz"] = tz
    res["path"] = path
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("path")
    ap.add_argument("--kind", choices=["activitywatch", "rpm"], required=True)
    ap.add_argument("--tz", required=True)
    a = ap.parse_args(argv)
    res = count(a.path, a.kind, a.tz)
    json.dump(res, sys.stdout, ensure_ascii=False, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
