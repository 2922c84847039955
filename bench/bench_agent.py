"""Benchmark: an agent's questions answered by calling the MCP tools, graded by an oracle.

    .venv/bin/python bench/bench_agent.py [--days 61] [--seed 1] [--json] [--keep]

It lands an `af synth` corpus (capture/synth.py, screenpipe layout) in a data folder (kept under
.bench/ and reused), starts `af mcp --now <end of the corpus>` and drives it over stdio with the
official SDK client. 40+ questions of four kinds, drawn with a seeded random generator:

- time lookup: "what was on monitor M at T?" -> get_activity_at(T); T is an instant whose raw rows
  on M show one app for a minute either side (so the question has one answer);
- last visit: "when did I last have the window W open?" -> search_activity(W), latest result;
- totals over a week: "how long was I in app A in week W?" -> get_day_summary(start, end);
- search: "find the <two words> thing" -> search_activity(words), top result.

Issue 38's kinds (their own seeded draws; `total` stays the four kinds above, `total_all` adds them):

- id lookup: "when did I last open <id>?" for ticket keys another key starts with (ENG-8 beside
  ENG-85) -> search_activity(id, order="recent", limit=1); right if the frame covers the last raw
  row holding the id as a whole token (no word character either side) in its title or URL;
- host last visit / first visit: "when did I last / first visit <host>?" for URL hosts with a
  subdomain (news.ycombinator.com) -> search_activity(host, order="recent" / "oldest", limit=1);
  the last / first raw row whose URL has that host (or whose title holds it);
- which days: "on which days did I open <id or title word>?" -> search_activity(q, group_by="day");
  right if the days equal those whose raw rows hold q as a token of the title, the app's name or
  the URL's host (linear.app holds "linear": the days on that site count);
- hour minutes: "how long was I in app A between HH:00 and HH+1:00 on day D?" ->
  get_day_summary(start, end); the oracle clips each row's earned interval to the window; within 1 %;
- switches: "how many app switches between HH:00 and HH+1:00 on day D?" -> get_day_summary(start,
  end, top=1)["switches"]["total"]; the oracle counts consecutive rows of one monitor with
  different apps, at the later row's time (a detour A -> B -> A is two); exact;
- detour: "what was on monitor M at T?" where M's rows go A, B (another app, at most 20 s), A and
  T is 1 s into B -> get_activity_at(T, around=0): its `detour` app, else the covering frame's app,
  must be B;
- interrupted in: "how often was I interrupted in app A on day D?" -> get_day_summary(day=D,
  top=200): A's `was_interrupted.times` (absent: 0) must equal the oracle's count of short detours
  to another app inside A's frames (Oracle.interruptions: the flicker merge of
  af_pipeline/compiler/sessionize.py, redone from the rows); exact.

The oracle is independent of the compiler: it reads the raw snapshot rows from the log
(EventLog.read_day) and applies the documented rules in a few lines of its own (docs/
document-schema.md: one timeline of all monitors ordered by time, monitor and ref; a row earns
min(gap to the next row, 90 s), nothing across a gap over 300 s). Graded: accuracy per kind,
tool calls and answer tokens (cl100k) per question, and the latency of every call.

Latency targets (issue 11): every tool under 100 ms warm on a busy day; search_activity over the
whole corpus under 200 ms warm. Each tool is also called repeatedly on the busiest day.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import BENCH_DIR, say  # noqa: E402
from capture.home import Home  # noqa: E402
from capture.log import EventLog  # noqa: E402
from capture.timeutil import day_bounds, to_datetime  # noqa: E402

TZ = "Europe/Paris"
DWELL_US, GAP_US = 90_000_000, 300_000_000
SLACK_US = 90_000_000
FLICKER_US = 20_000_000  # the longest detour the flicker merge folds (docs/document-schema.md)
GOOGLE_SURFACES = {"mail", "docs", "drive", "calendar", "meet", "chat", "keep", "sheets", "slides"}
HOUR_US = 3_600_000_000
Row = tuple[int, str, str, str, str, str]  # (ts_us, stream, ref, app, window, url)


def land(days: int, seed: int) -> Home:
    """A data folder holding the corpus, built once and kept (the corpus is deterministic)."""
    from capture.importers.screenpipe import read_screenpipe
    from capture.synth import generate

    root = BENCH_DIR / f"agent-{days}d-seed{seed}"
    home = Home(root / "home")
    if (root / "done").exists():
        return home
    say(f"bench_agent: writing and importing a {days}-day corpus into {root} ...")
    synth = generate(days, seed, root / "synth", tz=TZ)
    home.init(tz=TZ)
    EventLog(home).append(read_screenpipe(synth.db_path, tz=TZ))
    (root / "done").write_text("ok\n")
    return home


# ---------------------------------------------------------------------- the oracle (raw rows only)


class Oracle:
    def __init__(self, home: Home) -> None:
        log = EventLog(home)
        self.days = [d.day for d in log.days() if d.counts.get("snapshots", 0)]
        self.rows: dict[str, list[Row]] = {}
        for d in self.days:
            cap = log.read_day(d, lazy_elements=True)
            self.rows[d] = sorted((s.ts_us, s.stream or "", s.ref, s.app or "", s.window or "", s.url or "")
                                  for s in cap.snapshots if s.app)

    def app_minutes(self, day: str) -> dict[str, float]:
        """One timeline: each row earns min(gap to the next row on any monitor, 90 s), 0 over 300 s."""
        rows = self.rows[day]
        out: dict[str, float] = defaultdict(float)
        for a, b in zip(rows, rows[1:], strict=False):
            gap = b[0] - a[0]
            if gap <= GAP_US:
                out[a[3]] += min(gap, DWELL_US) / 60e6
        return out

    def stable_instants(self, rng: random.Random, n: int) -> list[tuple[int, str, str]]:
        """(instant, stream, app) where the stream's rows show one app a minute either side."""
        out: list[tuple[int, str, str]] = []
        tries = 0
        while len(out) < n and tries < 10_000:
            tries += 1
            day = rng.choice(self.days)
            per: dict[str, list[Row]] = defaultdict(list)
            for r in self.rows[day]:
                per[r[1]].append(r)
            stream = rng.choice(sorted(per))
            rows = per[stream]
            if len(rows) < 10:
                continue
            i = rng.randrange(1, len(rows) - 1)
            t = rows[i][0] + 1_000_000
            near = [r for r in rows if t - 60_000_000 <= r[0] <= t + 60_000_000]
            before = [r for r in rows if r[0] <= t]
            if (len(near) >= 3 and len({r[3] for r in near}) == 1 and t - before[-1][0] <= 30_000_000
                    and near[-1][0] >= t + 20_000_000):
                out.append((t, stream, rows[i][3]))
        return out

    def titles(self) -> dict[str, list[tuple[str, int]]]:
        """window title -> (day, ts) of every row showing it."""
        out: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for d in self.days:
            for ts, _s, _r, _a, w, _u in self.rows[d]:
                if w:
                    out[w].append((d, ts))
        return out

    # ---- issue 38: whole tokens, hosts, minutes clipped to a window, switches, detours

    def hits(self, q: str, url_text: bool) -> list[tuple[str, int]]:
        """(day, ts) of every raw row holding q as a whole token (no word character either side,
        casefolded: ENG-8 is not in ENG-85) in its title, or in its URL when ``url_text``, or as
        its URL's host."""
        ql = q.casefold()
        pat = re.compile(r"(?<!\w)" + re.escape(ql) + r"(?!\w)")
        return [(d, r[0]) for d in self.days for r in self.rows[d]
                if (ql in r[4].casefold() and pat.search(r[4].casefold()))
                or (url_text and ql in r[5].casefold() and pat.search(r[5].casefold()))
                or (r[5] and (urlsplit(r[5]).hostname or "") == ql)]

    def shown_days(self, q: str) -> list[str]:
        """The days q was on screen: a row holds it as a whole token (as in hits) of its title,
        its app's name or its URL's host, where a host's dot-separated words are tokens too
        (linear.app shows "linear", news.ycombinator.com "ycombinator")."""
        ql = q.casefold()
        pat = re.compile(r"(?<!\w)" + re.escape(ql) + r"(?!\w)")
        return sorted({d for d in self.days for r in self.rows[d]
                       if any(ql in t and pat.search(t) for t in
                              (r[4].casefold(), r[3].casefold(), (urlsplit(r[5]).hostname or "") if r[5] else ""))})

    def window_minutes(self, day: str, a_us: int, b_us: int) -> dict[str, float]:
        """One timeline, each row's earned interval [ts, ts + min(gap, 90 s)) (none over 300 s)
        clipped to [a_us, b_us)."""
        rows = self.rows[day]
        out: dict[str, float] = defaultdict(float)
        for r, n in zip(rows, rows[1:], strict=False):
            if n[0] - r[0] <= GAP_US:
                lo, hi = max(r[0], a_us), min(r[0] + min(n[0] - r[0], DWELL_US), b_us)
                if hi > lo:
                    out[r[3]] += (hi - lo) / 60e6
        return out

    def per_stream(self, day: str) -> dict[str, list[Row]]:
        per: dict[str, list[Row]] = defaultdict(list)
        for r in self.rows[day]:
            per[r[1]].append(r)
        return per

    def switches(self, day: str, a_us: int, b_us: int) -> int:
        """Changes of app between consecutive rows of one monitor, counted at the later row's time
        (a detour A -> B -> A is two)."""
        return sum(1 for rows in self.per_stream(day).values() for p, n in zip(rows, rows[1:], strict=False)
                   if p[3] != n[3] and a_us <= n[0] < b_us)

    def interruptions(self, day: str) -> dict[str, int]:
        """app -> how many short detours to another app its frames held on ``day``.

        The documented rule (sessionize's flicker merge), redone on one monitor's rows in (time,
        ref) order: a run is a stretch of rows with one key (app, site) and no gap over 300 s
        inside; it ends ``min(gap to the next row, 90 s)`` after its last row, or at that row
        when a gap over 300 s (or the monitor's last row) follows, which closes it. When a run of
        key K starts and the two runs before it are K then B, neither closed by a gap, and B
        lasted at most 20 s, B is a detour of the K run (with any detours B held), which goes on.
        A detour to another site of the same app is no interruption of the app."""
        out: dict[str, int] = defaultdict(int)
        for rows in self.per_stream(day).values():
            # [key, start, end, closed, detour apps]
            runs: list[tuple[tuple[str, str | None], list[Any]]] = []
            for i, r in enumerate(rows):
                gap = rows[i + 1][0] - r[0] if i + 1 < len(rows) else GAP_US + 1
                closed = gap > GAP_US
                end = r[0] + (0 if closed else min(gap, DWELL_US))
                key = (r[3], self.site(r[5]))
                if runs and runs[-1][0] == key and not runs[-1][1][2]:
                    runs[-1][1][1:3] = [end, closed]
                    continue
                if (len(runs) >= 2 and runs[-2][0] == key and not runs[-2][1][2] and not runs[-1][1][2]
                        and runs[-1][1][1] - runs[-1][1][0] <= FLICKER_US):
                    b_key, b = runs.pop()
                    runs[-1][1][3] += [b_key[0], *b[3]]
                    runs[-1][1][1:3] = [end, closed]
                    continue
                runs.append((key, [r[0], end, closed, []]))
            for (app, _site), (_s, _e, _c, detours) in runs:
                for d in detours:
                    if d != app:
                        out[app] += 1
        return out

    @staticmethod
    def site(url: str) -> str | None:
        """Where a URL is (the frame key's site): its registrable domain by the public suffix list
        (www. dropped), Google's products (mail, docs, calendar, meet ...) apart from google.com,
        a local server with its port; None without a web host."""
        if not url:
            return None
        u = urlsplit(url if "://" in url else "http://" + url)
        host = (u.hostname or "").rstrip(".")
        if u.scheme not in ("http", "https", "") or not host:
            return None
        if host == "localhost" or host.endswith(".localhost") or host.replace(".", "").isdigit():
            return f"{host}:{u.port}" if u.port is not None else host
        host = host.removeprefix("www.") if host.count(".") >= 2 else host
        site = _psl().privatesuffix(host) or host
        sub = host[: -len(site) - 1].split(".")[-1] if host.endswith("." + site) else ""
        return f"{sub}.{site}" if site.split(".", 1)[0] == "google" and sub in GOOGLE_SURFACES else site

    def detours(self) -> list[tuple[int, str, str]]:
        """(instant, stream, B): a monitor's rows go A, then B (another app) for at most 20 s, then A
        again; the instant is 1 s after B's first row, so the screen showed B then."""
        out = []
        for d in self.days:
            for stream, rows in sorted(self.per_stream(d).items()):
                for i in range(1, len(rows) - 1):
                    a, b = rows[i - 1], rows[i]
                    j = i
                    while j < len(rows) and rows[j][3] == b[3]:
                        j += 1
                    if (b[3] != a[3] and b[0] - a[0] <= GAP_US and j < len(rows) and rows[j][3] == a[3]
                            and b[0] + 2_000_000 < rows[j][0] <= b[0] + 20_000_000):
                        out.append((b[0] + 1_000_000, stream, b[3]))
        return out


_PSL: list[Any] = []


def _psl() -> Any:
    """The public suffix list (the publicsuffixlist package's bundled copy), loaded once."""
    if not _PSL:
        from publicsuffixlist import PublicSuffixList

        _PSL.append(PublicSuffixList())
    return _PSL[0]


# ---------------------------------------------------------------------- questions


def questions(o: Oracle, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    qs: list[dict[str, Any]] = []
    for t, stream, app in o.stable_instants(rng, 12):
        qs.append({"kind": "time lookup", "time": to_datetime(t, TZ).isoformat(timespec="seconds"), "ts": t,
                   "stream": stream, "truth": app})
    titles = o.titles()
    multi = sorted(t for t, rows in titles.items() if len({d for d, _ in rows}) >= 2 and len(rows) >= 5
                   and len(t) >= 8)
    for title in rng.sample(multi, min(11, len(multi))):
        last = max(titles[title], key=lambda r: r[1])
        qs.append({"kind": "last visit", "query": title, "truth": last})
    weeks: dict[str, list[str]] = defaultdict(list)
    for d in o.days:
        dd = date.fromisoformat(d)
        weeks[(dd - timedelta(days=dd.weekday())).isoformat()].append(d)
    combos = []
    for monday, ds in sorted(weeks.items()):
        total: dict[str, float] = defaultdict(float)
        for d in ds:
            for app, m in o.app_minutes(d).items():
                total[app] += m
        combos += [(monday, app, m) for app, m in sorted(total.items()) if m >= 5]
    for monday, app, m in rng.sample(combos, min(10, len(combos))):
        sunday = (date.fromisoformat(monday) + timedelta(days=6)).isoformat()
        qs.append({"kind": "week total", "app": app, "start": monday, "end": sunday, "truth": round(m, 2)})
    words_of: list[tuple[str, str]] = []
    for title in sorted(titles):
        ws = [w for w in title.replace("-", " ").replace("_", " ").split() if len(w) >= 4 and w.isalpha()]
        if len(ws) >= 2:
            words_of.append((title, " ".join(sorted(set(ws))[:2])))
    for _title, q in rng.sample(words_of, min(10, len(words_of))):
        words = q.lower().split()
        hits = [(d, ts) for t, rows in titles.items() if all(w in t.lower() for w in words) for d, ts in rows]
        qs.append({"kind": "search", "query": q, "truth": hits})
    return qs + questions_38(o, seed, titles)


def questions_38(o: Oracle, seed: int, titles: dict[str, list[tuple[str, int]]]) -> list[dict[str, Any]]:
    """The kinds of issue 38, drawn with their own generator (the earlier kinds' draws are unchanged)."""
    rng = random.Random(seed * 1000 + 38)
    qs: list[dict[str, Any]] = []
    ids = sorted({m for d in o.days for r in o.rows[d] for m in re.findall(r"\b[A-Z][A-Z0-9]*-\d+\b", f"{r[4]} {r[5]}")})
    # ids another id starts with (ENG-8 beside ENG-85): a substring match would answer the longer one
    shadowed = [i for i in ids if any(j != i and j.startswith(i) and j[len(i)].isdigit() for j in ids)]
    for q in rng.sample(shadowed, min(10, len(shadowed))):
        qs.append({"kind": "id lookup", "query": q, "truth": max(o.hits(q, True), key=lambda h: h[1])})
    hosts = sorted({h for d in o.days for r in o.rows[d] if r[5] for h in [urlsplit(r[5]).hostname or ""]
                    if h.count(".") >= 2 and not h.startswith("www.")})  # subdomains: news.ycombinator.com
    for q in rng.sample(hosts, min(8, len(hosts))):
        qs.append({"kind": "host last visit", "query": q, "truth": max(o.hits(q, False), key=lambda h: h[1])})
    for q in rng.sample(hosts, min(8, len(hosts))):
        qs.append({"kind": "first visit", "query": q, "truth": min(o.hits(q, False), key=lambda h: h[1])})
    # a title word on some days but not all (a word of letters is a whole token iff it is a \w+ run)
    day_words = {d: {w for t in {r[4] for r in o.rows[d]} for w in re.findall(r"\w+", t.casefold())} for d in o.days}
    words = sorted({w for ws in day_words.values() for w in ws if len(w) >= 5 and w.isalpha()})
    words = [w for w in words if 2 <= sum(w in ws for ws in day_words.values()) < len(o.days)]
    multi_ids = [i for i in ids if len({d for d, _ in o.hits(i, True)}) >= 2]
    for pool in (multi_ids, words):  # 5 ids, then 5 title words (the draws in this order)
        for q in rng.sample(pool, min(5, len(pool))):
            qs.append({"kind": "which days", "query": q, "truth": o.shown_days(q)})
    windows = []
    for d in o.days:
        start = day_bounds(d, TZ)[0]
        for h in range(7, 22):
            a = int(to_datetime(start, TZ).replace(hour=h).timestamp() * 1_000_000)
            for app, m in sorted(o.window_minutes(d, a, a + HOUR_US).items()):
                if m >= 2:
                    windows.append((d, h, a, app, round(m, 2)))
    for d, h, _a, app, m in rng.sample(windows, min(20, len(windows))):
        qs.append({"kind": "hour minutes", "app": app, "start": f"{d}T{h:02d}:00", "end": f"{d}T{h + 1:02d}:00",
                   "truth": m})
    hours = sorted({(d, h, a) for d, h, a, _app, _m in windows})
    for d, h, a in rng.sample(hours, min(20, len(hours))):
        qs.append({"kind": "switches", "start": f"{d}T{h:02d}:00", "end": f"{d}T{h + 1:02d}:00",
                   "truth": o.switches(d, a, a + HOUR_US)})
    det = o.detours()
    for t, stream, app in rng.sample(det, min(10, len(det))):
        qs.append({"kind": "detour", "time": to_datetime(t, TZ).isoformat(timespec="seconds"), "ts": t,
                   "stream": stream, "truth": app})
    # its own generator, so that adding the kind left the draws above as they were
    rng = random.Random(seed * 1000 + 39)
    pairs = [(d, app, o.interruptions(d).get(app, 0)) for d in o.days
             for app, m in sorted(o.app_minutes(d).items()) if m >= 2]
    # most app-days have no detour (31 of 210 on the 14-day corpus): 7 that had, 3 that had none
    for pool, k in (([p for p in pairs if p[2]], 7), ([p for p in pairs if not p[2]], 3)):
        for d, app, n in rng.sample(pool, min(k, len(pool))):
            qs.append({"kind": "interrupted in", "app": app, "day": d, "truth": n})
    return qs


# ---------------------------------------------------------------------- answering through the tools


def _frame_covers(frame: dict[str, Any], day: str, ts: int) -> bool:
    start, _ = day_bounds(day, TZ)
    base = to_datetime(start, TZ)

    def at(clock: str) -> int:
        h, m, s = (int(x) for x in clock.split(":"))
        return int(base.replace(hour=h, minute=m, second=s).timestamp() * 1_000_000)

    s, e = at(frame["start"]), at(frame["end"])
    if e < s:
        e += 86_400_000_000
    return s - SLACK_US <= ts <= e + SLACK_US


async def run(home: Home, qs: list[dict[str, Any]], now: str, busiest: str) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client, types

    from af_pipeline.compiler import tokens

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "af_pipeline.interfaces.cli", "mcp", "--home", str(home.root), "--now", now],
        cwd=str(REPO), env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "")},
    )
    calls: list[dict[str, Any]] = []
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as s:
                t0 = time.perf_counter()
                await s.initialize()
                init_ms = (time.perf_counter() - t0) * 1000

                async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
                    t = time.perf_counter()
                    res = await s.call_tool(name, args)
                    ms = (time.perf_counter() - t) * 1000
                    first = res.content[0] if res.content else None
                    text = first.text if isinstance(first, types.TextContent) else ""  # every tool answers in text
                    calls.append({"tool": name, "ms": ms, "tokens": tokens.count(text), "error": bool(res.is_error)})
                    return bool(res.is_error), text

                # warm the caches the way a long-running server is warm (every day indexed once)
                t0 = time.perf_counter()
                await call("search_activity", {"query": "warm"})
                index_ms = (time.perf_counter() - t0) * 1000
                calls.clear()
                graded = []
                for q in qs:
                    before = len(calls)
                    ok, answer = await _answer(call, q)
                    mine = calls[before:]
                    keep = {k: v for k, v in q.items() if k != "truth" or q["kind"] in KINDS_38}
                    graded.append({**keep, "correct": ok, "answer": answer,
                                   "tool_calls": len(mine), "tokens": sum(c["tokens"] for c in mine),
                                   "ms": sum(c["ms"] for c in mine)})
                # latency of every tool, warm, on the busiest day
                lat: dict[str, list[float]] = defaultdict(list)
                probes = [
                    ("get_capabilities", {}), ("get_context", {"day": busiest}),
                    ("get_activity", {"day": busiest}), ("get_activity_at", {"time": f"{busiest}T11:00"}),
                    ("search_activity", {"query": "invoice report"}),
                    ("search_activity", {"query": "report", "start": busiest, "end": busiest}),
                    ("get_day_summary", {"day": busiest}),
                    ("get_day_summary", {"start": _minus(busiest, 6), "end": busiest}),
                    ("get_steps", {"frame_id": f"{busiest}/f-0010"}),
                    ("get_communications", {"day": busiest}),
                    ("get_patterns", {"day": busiest}), ("get_routines", {"day": busiest}),
                ]
                for _ in range(6):
                    for name, args in probes:
                        n = len(calls)
                        err, text = await call(name, args)
                        if err:
                            raise RuntimeError(f"{name}{args}: {text}")
                        lat[f"{name} {json.dumps(args, sort_keys=True)}"].append(calls[n]["ms"])
    latency = {}
    for key, ms in lat.items():
        warm = sorted(ms[1:])  # the first of six is the cold one
        latency[key] = {"cold_ms": round(ms[0], 1), "warm_median_ms": round(statistics.median(warm), 1),
                        "warm_max_ms": round(warm[-1], 1)}
    return {"initialize_ms": round(init_ms, 1), "index_all_days_ms": round(index_ms, 1), "graded": graded,
            "latency": latency}


def _minus(day: str, n: int) -> str:
    return (date.fromisoformat(day) - timedelta(days=n)).isoformat()


async def _at_instant(call: Any, q: dict[str, Any], detour: bool) -> tuple[bool, Any]:
    """get_activity_at(T) must name the app the monitor showed at T: the covering frame's, or
    (``detour``) the short detour's folded into it when one covers T."""
    err, text = await call("get_activity_at", {"time": q["time"], "around": 0})
    if err:
        return False, text
    row = next((r for r in json.loads(text)["streams"] if r["stream"] == q["stream"]), None)
    if not row or not row.get("at"):
        return False, None
    if not detour:
        return row["at"]["app"] == q["truth"], row["at"]["app"]
    return (row["detour"]["app"] if row.get("detour") else row["at"]["app"]) == q["truth"], \
        {"at": row["at"]["app"], "detour": (row.get("detour") or {}).get("app")}


async def _first_result(call: Any, q: dict[str, Any], order: str, limit: int) -> tuple[bool, Any]:
    """search_activity(query, order)'s first result must be the frame covering the oracle's
    (day, ts): the last visit (order='recent') or the first (order='oldest')."""
    err, text = await call("search_activity", {"query": q["query"], "order": order, "limit": limit})
    if err:
        return False, text
    results = json.loads(text)["results"]
    if not results:
        return False, None
    best = results[0]
    day, ts = q["truth"]
    return (best["day"] == day and _frame_covers(best, day, ts),
            f"{best['id']} {best['start']}-{best['end']} {best['app']} {best.get('window')}")


async def _answer(call: Any, q: dict[str, Any]) -> tuple[bool, Any]:
    kind = q["kind"]
    if kind in ("time lookup", "detour"):
        return await _at_instant(call, q, detour=kind == "detour")
    if kind in ("last visit", "id lookup", "host last visit", "first visit"):
        # one recipe: the title lookups of issue 11 read three results, issue 38's one
        return await _first_result(call, q, "oldest" if kind == "first visit" else "recent",
                                   3 if kind == "last visit" else 1)
    if kind == "week total":
        err, text = await call("get_day_summary", {"start": q["start"], "end": q["end"], "top": 200})
        if err:
            return False, text
        app = next((a for a in json.loads(text)["apps"] if a["app"] == q["app"]), None)
        got = app["minutes"] if app else 0.0
        return abs(got - q["truth"]) <= max(0.5, 0.02 * q["truth"]), got
    if kind in KINDS_38:
        return await _answer_38(call, q)
    err, text = await call("search_activity", {"query": q["query"], "limit": 5})
    if err:
        return False, text
    res = json.loads(text)["results"]
    if not res:
        return not q["truth"], None
    top = res[0]
    ok = any(d == top["day"] and _frame_covers(top, d, ts) for d, ts in q["truth"])
    return ok, f"{top['id']} {top.get('window')}"


KINDS_38 = ("id lookup", "host last visit", "which days", "first visit", "hour minutes", "switches", "detour",
            "interrupted in")


async def _answer_38(call: Any, q: dict[str, Any]) -> tuple[bool, Any]:
    """Issue 38's recipes (those not shared with issue 11's kinds, see _answer): one call each,
    the cheapest an agent reading docs/mcp.md would make."""
    kind = q["kind"]
    if kind == "which days":
        err, text = await call("search_activity", {"query": q["query"], "group_by": "day"})
        if err:
            return False, text
        days = sorted(r["day"] for r in json.loads(text)["by_day"])
        return days == q["truth"], days
    if kind in ("hour minutes", "switches"):
        err, text = await call("get_day_summary", {"start": q["start"], "end": q["end"],
                                                   "top": 200 if kind == "hour minutes" else 1})
        if err:
            return False, text
        doc = json.loads(text)
        if kind == "switches":
            return doc["switches"]["total"] == q["truth"], doc["switches"]["total"]
        app = next((a for a in doc["apps"] if a["app"] == q["app"]), None)
        got = app["minutes"] if app else 0.0
        return abs(got - q["truth"]) <= 0.01 * q["truth"], got
    if kind == "interrupted in":
        err, text = await call("get_day_summary", {"day": q["day"], "top": 200})
        if err:
            return False, text
        app = next((a for a in json.loads(text)["apps"] if a["app"] == q["app"]), None)
        times = int((app or {}).get("was_interrupted", {}).get("times", 0))
        return times == q["truth"], times
    raise ValueError(f"no recipe for {kind!r}")


def _p95(xs: list[float]) -> float:
    """Nearest rank: the value 95 % of the answers are at or under."""
    s = sorted(xs)
    return s[max(0, -(-len(s) * 95 // 100) - 1)]


def main() -> int:
    import anyio

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=61)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    home = land(args.days, args.seed)
    say(f"bench_agent: data folder ready in {time.perf_counter() - t0:.1f} s")
    o = Oracle(home)
    qs = questions(o, args.seed)
    last = o.days[-1]
    now = to_datetime(day_bounds(last, TZ)[1] - 60_000_000, TZ).isoformat()
    busiest = max(o.days, key=lambda d: len(o.rows[d]))
    r = anyio.run(lambda: run(home, qs, now, busiest))
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in r["graded"]:
        by_kind[g["kind"]].append(g)
    summary = {
        kind: {"questions": len(gs), "accuracy": round(sum(g["correct"] for g in gs) / len(gs), 3),
               "tool_calls_mean": round(statistics.mean(g["tool_calls"] for g in gs), 2),
               "tokens_median": statistics.median(g["tokens"] for g in gs),
               "tokens_p95": _p95([g["tokens"] for g in gs]),
               "tokens_max": max(g["tokens"] for g in gs),
               "ms_median": round(statistics.median(g["ms"] for g in gs), 1)}
        for kind, gs in sorted(by_kind.items())
    }
    for g in by_kind.get("hour minutes", []):
        if isinstance(g["answer"], (int, float)):
            g["error_min"] = round(g["answer"] - g["truth"], 2)
    if "detour" in summary:  # how the right app was named: the `detour` field, or a frame of its own
        summary["detour"]["named_by_detour_field"] = sum(bool(g["answer"] and g["answer"].get("detour"))
                                                        for g in by_kind["detour"])
    for kind in ("switches", "interrupted in"):  # exact counts: how far off, answer - oracle
        if kind in summary:
            summary[kind]["error"] = sorted(g["answer"] - g["truth"] for g in by_kind[kind]
                                            if isinstance(g["answer"], int))
    errs = [g["error_min"] for g in by_kind.get("hour minutes", []) if "error_min" in g]
    if errs:
        rel = [abs(g["error_min"]) / g["truth"] for g in by_kind["hour minutes"] if "error_min" in g]
        summary["hour minutes"]["error_min"] = {"mean": round(statistics.mean(errs), 2), "min": min(errs),
                                                "max": max(errs), "abs_relative_median": round(statistics.median(rel), 4),
                                                "abs_relative_max": round(max(rel), 4)}
    allg = r["graded"]
    # `total` stays issue 11's measure (its four kinds, the >= 90 % target of make bench's row);
    # `total_all` adds issue 38's kinds
    old = [g for g in allg if g["kind"] not in KINDS_38]
    total = {"questions": len(old), "accuracy": round(sum(g["correct"] for g in old) / len(old), 3),
             "days": len(o.days), "calendar_days": args.days, "busiest_day": busiest,
             "kinds": sorted({g["kind"] for g in old})}
    # issue 38's targets are on every answer: p95 <= 4,000 tokens, none over 10,000
    total_all = {"questions": len(allg), "accuracy": round(sum(g["correct"] for g in allg) / len(allg), 3),
                 "tokens_p95": _p95([g["tokens"] for g in allg]), "tokens_max": max(g["tokens"] for g in allg)}
    search_key = next(k for k in r["latency"] if k.startswith("search_activity") and '"start"' not in k)
    search_ms = r["latency"][search_key]["warm_median_ms"]
    targets = {"every_tool_under_100ms": all(v["warm_median_ms"] < 100 for v in r["latency"].values()),
               "search_under_200ms": search_ms < 200}
    out = {"total": total, "total_all": total_all, "by_kind": summary, **{k: v for k, v in r.items() if k != "graded"},
           "search_all_days_warm_ms": search_ms, "targets": targets,
           "wrong": [g for g in allg if not g["correct"]]}
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print(f"{total['questions']} questions of issue 11's kinds over {total['days']} days with capture: "
              f"accuracy {total['accuracy']:.1%}; with issue 38's kinds {total_all['questions']} questions: "
              f"{total_all['accuracy']:.1%}, answer tokens p95 {total_all['tokens_p95']} max {total_all['tokens_max']}")
        for kind, s in summary.items():
            print(f"  {kind:<15} n={s['questions']:>2} acc {s['accuracy']:.1%}  calls {s['tool_calls_mean']:.2f}  "
                  f"tokens median {s['tokens_median']:.0f} p95 {s['tokens_p95']} max {s['tokens_max']}  "
                  f"{s['ms_median']:.1f} ms")
            if "named_by_detour_field" in s:
                print(f"  {'':<15} named by the detour field {s['named_by_detour_field']}, by a frame of its own "
                      f"{s['questions'] - s['named_by_detour_field']}")
            if "error" in s:
                print(f"  {'':<15} errors (answer - oracle): {s['error']}")
            if "error_min" in s:
                e = s["error_min"]
                print(f"  {'':<15} error (answer - oracle) mean {e['mean']:+.2f} min, from {e['min']:+.2f} to "
                      f"{e['max']:+.2f}; |error|/oracle median {e['abs_relative_median']:.1%} max "
                      f"{e['abs_relative_max']:.1%}")
        print(f"initialize {r['initialize_ms']:.0f} ms; first search (indexes every day) {r['index_all_days_ms']:.0f} ms")
        for key, v in r["latency"].items():
            print(f"  {key:<90} warm median {v['warm_median_ms']:>7.1f} ms  max {v['warm_max_ms']:>7.1f}  "
                  f"cold {v['cold_ms']:>7.1f}")
        for g in out["wrong"]:
            asked = {k: v for k, v in g.items() if k in ('time', 'stream', 'query', 'app', 'day', 'start', 'end')}
            print(f"  WRONG {g['kind']}: {asked} -> {g['answer']}"
                  + (f" (oracle: {g['truth']})" if "truth" in g else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
