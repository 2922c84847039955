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
import statistics
import sys
import time
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import BENCH_DIR, say  # noqa: E402
from capture.home import Home  # noqa: E402
from capture.log import EventLog  # noqa: E402
from capture.timeutil import day_bounds, to_datetime  # noqa: E402

TZ = "Europe/Paris"
DWELL_US, GAP_US = 90_000_000, 300_000_000
SLACK_US = 90_000_000


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
        self.rows: dict[str, list[tuple[int, str, str, str, str]]] = {}
        for d in self.days:
            cap = log.read_day(d, lazy_elements=True)
            self.rows[d] = sorted((s.ts_us, s.stream or "", s.ref, s.app or "", s.window or "")
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
            per: dict[str, list[tuple[int, str, str, str, str]]] = defaultdict(list)
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
            for ts, _s, _r, _a, w in self.rows[d]:
                if w:
                    out[w].append((d, ts))
        return out


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
    from mcp import ClientSession, StdioServerParameters, stdio_client

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
                    text = res.content[0].text if res.content else ""
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
                    graded.append({**{k: v for k, v in q.items() if k != "truth"}, "correct": ok, "answer": answer,
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


async def _answer(call: Any, q: dict[str, Any]) -> tuple[bool, Any]:
    kind = q["kind"]
    if kind == "time lookup":
        err, text = await call("get_activity_at", {"time": q["time"], "around": 0})
        if err:
            return False, text
        row = next((r for r in json.loads(text)["streams"] if r["stream"] == q["stream"]), None)
        app = row["at"]["app"] if row and row.get("at") else None
        return app == q["truth"], app
    if kind == "last visit":
        err, text = await call("search_activity", {"query": q["query"], "order": "recent", "limit": 3})
        if err:
            return False, text
        results = json.loads(text)["results"]
        if not results:
            return False, None
        best = results[0]
        day, ts = q["truth"]
        return best["day"] == day and _frame_covers(best, day, ts), f"{best['day']} {best['start']}-{best['end']}"
    if kind == "week total":
        err, text = await call("get_day_summary", {"start": q["start"], "end": q["end"], "top": 200})
        if err:
            return False, text
        app = next((a for a in json.loads(text)["apps"] if a["app"] == q["app"]), None)
        got = app["minutes"] if app else 0.0
        return abs(got - q["truth"]) <= max(0.5, 0.02 * q["truth"]), got
    err, text = await call("search_activity", {"query": q["query"], "limit": 5})
    if err:
        return False, text
    res = json.loads(text)["results"]
    if not res:
        return not q["truth"], None
    top = res[0]
    ok = any(d == top["day"] and _frame_covers(top, d, ts) for d, ts in q["truth"])
    return ok, f"{top['id']} {top.get('window')}"


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
               "tokens_max": max(g["tokens"] for g in gs),
               "ms_median": round(statistics.median(g["ms"] for g in gs), 1)}
        for kind, gs in sorted(by_kind.items())
    }
    allg = r["graded"]
    total = {"questions": len(allg), "accuracy": round(sum(g["correct"] for g in allg) / len(allg), 3),
             "days": len(o.days), "calendar_days": args.days, "busiest_day": busiest}
    search_key = next(k for k in r["latency"] if k.startswith("search_activity") and '"start"' not in k)
    search_ms = r["latency"][search_key]["warm_median_ms"]
    targets = {"every_tool_under_100ms": all(v["warm_median_ms"] < 100 for v in r["latency"].values()),
               "search_under_200ms": search_ms < 200}
    out = {"total": total, "by_kind": summary, **{k: v for k, v in r.items() if k != "graded"},
           "search_all_days_warm_ms": search_ms, "targets": targets,
           "wrong": [g for g in allg if not g["correct"]]}
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print(f"{total['questions']} questions over {total['days']} days with capture: accuracy {total['accuracy']:.1%}")
        for kind, s in summary.items():
            print(f"  {kind:<12} n={s['questions']:>2} acc {s['accuracy']:.1%}  calls {s['tool_calls_mean']:.2f}  "
                  f"tokens median {s['tokens_median']:.0f} max {s['tokens_max']}  {s['ms_median']:.1f} ms")
        print(f"initialize {r['initialize_ms']:.0f} ms; first search (indexes every day) {r['index_all_days_ms']:.0f} ms")
        for key, v in r["latency"].items():
            print(f"  {key:<90} warm median {v['warm_median_ms']:>7.1f} ms  max {v['warm_max_ms']:>7.1f}  "
                  f"cold {v['cold_ms']:>7.1f}")
        for g in out["wrong"]:
            print(f"  WRONG {g['kind']}: {({k: v for k, v in g.items() if k in ('time', 'stream', 'query', 'app', 'start')})} "
                  f"-> {g['answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
