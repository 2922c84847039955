"""Benchmark: time to answer get_context for the last 2 hours of a busy day, live.

    .venv/bin/python bench/bench_mcp.py [--seed S] [--calls N] [--keep DIR]

It writes one busy synthetic day (`af synth`, capture/synth.py), shifts it so that it ends a
minute ago, and lands it in a fresh data folder: the day is today, so it stays OPEN (unsealed)
in the log, which is the live case the server must handle (compile on request from the open
JSON-lines segments). Then it measures, for get_context(hours=2):

- over stdio through the SDK's real client (mcp.client.stdio + ClientSession, spawning
  `python -m af_pipeline.interfaces.cli mcp --home DIR`): the first call (cold: reads the open day) and N
  warm calls;
- the same while a recorder appends: before each call a few rows land in the log (the server
  must pick them up: it reads only what was appended);
- in-process (af_pipeline.interfaces.mcp_server.Memory, no transport), for comparison.

`af mcp` pays its one-time costs (tokenizer, imports, reading today's open rows) before it
answers initialize; that start-up time is reported apart from the answer times.

Target (issue 6): under 100 ms per warm answer over stdio. Prints a table and JSON.

First answer (issue 43): a fresh `af mcp` process, its handshake record present (a restart),
asked get_context(hours=3) right after initialize, about an OPEN day of 3,000 snapshots (the
first 3,000 of the synthetic day, landed unsealed, the server's clock frozen with --now an hour
after the last one). Timed from initialize answered to the answer, and from spawn; cold: no
open-day cache in the data folder; warm: the cache (af_pipeline/interfaces/open_cache.py) written
beforehand by a reader that may write. Median of --runs fresh processes each.
Target: at most 0.5 s from initialize to the answer. `--first-answer-only` measures only this.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from capture.home import Home  # noqa: E402
from capture.importers.screenpipe import read_screenpipe  # noqa: E402
from capture.log import EventLog  # noqa: E402
from capture.model import ROW_KINDS, CaptureBatch, Snapshot  # noqa: E402
from capture.synth import generate  # noqa: E402

TZ = "Europe/Paris"


def busy_live_home(root: Path, seed: int) -> tuple[Home, dict[str, int]]:
    synth = generate(1, seed, root / "synth", start_day="2026-06-01", tz=TZ)
    batch = read_screenpipe(synth.db_path, tz=TZ)
    last = max(s.ts_us for s in batch.snapshots)
    shift = (time.time_ns() // 1000 - 60_000_000) - last  # the day ends a minute ago
    moved = CaptureBatch(source_id=batch.source_id, recorder=batch.recorder)
    for kind in ROW_KINDS:
        rows = batch.rows(kind)
        if kind == "presence":
            moved.presence = [replace(p, ts_us=p.ts_us + shift, end_us=p.end_us + shift) for p in rows]
        else:
            setattr(moved, kind, [replace(r, ts_us=r.ts_us + shift) for r in rows])
    home = Home(root / "home")
    home.init(tz=TZ)
    report = EventLog(home).append(moved)
    return home, {k: len(moved.rows(k)) for k in ROW_KINDS} | {"days_sealed": len(report.days_sealed)}


FIRST_DAY = "2026-06-01"
FIRST_SNAPSHOTS = 3000


def open_day_home(root: Path, seed: int, snapshots: int = FIRST_SNAPSHOTS) -> tuple[Home, str, dict[str, int]]:
    """A data folder whose only day is open and holds the synthetic day's first ``snapshots``
    snapshots (with the rows before the last of them); returns it, the --now to replay it with,
    and the row counts."""
    from capture.timeutil import to_datetime

    synth = generate(1, seed, root / "synth-open", start_day=FIRST_DAY, tz=TZ)
    batch = read_screenpipe(synth.db_path, tz=TZ)
    shots = sorted(s.ts_us for s in batch.snapshots)
    cut = shots[min(snapshots, len(shots)) - 1] + 1
    kept = CaptureBatch(source_id=batch.source_id, recorder=batch.recorder)
    for kind in ROW_KINDS:
        rows = batch.rows(kind)
        setattr(kept, kind, [r for r in rows if r.ts_us < cut] if kind != "streams" else rows)
    home = Home(root / "home-open")
    home.init(tz=TZ)
    report = EventLog(home).append(kept, now_us=cut)
    assert not report.days_sealed, "the day must stay open"
    now = to_datetime(cut + 3600 * 1_000_000, TZ).isoformat()
    return home, now, {k: len(kept.rows(k)) for k in ROW_KINDS}


def server_params(home: Home, cache: Path, *extra: str) -> Any:
    """How the SDK's client spawns `af mcp` on this data folder, ``cache`` being the user's cache folder."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "af_pipeline.interfaces.cli", "mcp", "--home", str(home.root), *extra],
        cwd=str(REPO), env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""),
                            "XDG_CACHE_HOME": str(cache)},
    )


async def timed_session(home: Home, cache: Path, extra: tuple[str, ...], steps: list[Any]) -> tuple[list[float], Any]:
    """Spawn `af mcp`, initialize, then await each ``step(session)``: the seconds from spawn to
    initialize answered and to each step's end, and the last step's result."""
    from mcp import ClientSession, stdio_client

    marks: list[float] = []
    result: Any = None
    with open(os.devnull, "w") as devnull:
        t0 = time.perf_counter()
        async with stdio_client(server_params(home, cache, *extra), errlog=devnull) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                marks.append(time.perf_counter() - t0)
                for step in steps:
                    result = await step(s)
                    marks.append(time.perf_counter() - t0)
    return marks, result


async def fresh_first_answer(home: Home, now: str, cache: Path) -> tuple[float, float, str]:
    """(initialize answered -> first get_context answer, spawn -> that answer) in ms, and the answer."""
    (init, answered), res = await timed_session(home, cache, ("--now", now),
                                                [lambda s: s.call_tool("get_context", {"hours": 3})])
    assert not res.is_error, res.content
    return round((answered - init) * 1000, 1), round(answered * 1000, 1), str(getattr(res.content[0], "text", ""))


def first_answer(root: Path, seed: int, runs: int) -> dict[str, Any]:
    """Fresh processes' first get_context(hours=3) on an open day, without and with the cache."""
    import anyio

    from af_pipeline.interfaces import open_cache
    from af_pipeline.interfaces.memory import Memory
    from capture.timeutil import parse_ts

    home, now, rows = open_day_home(root, seed)
    handshake = root / "first-answer-user-cache"
    anyio.run(fresh_first_answer, home, now, handshake)  # records the handshake: every run is a restart
    out: dict[str, Any] = {"snapshots": rows["snapshots"], "rows": sum(rows.values()), "runs": runs, "now": now}
    answers = {}
    for mode in ("cold", "warm"):
        if mode == "warm":  # what a reader that may write leaves behind (the server never writes)
            Memory(home, clock=functools.partial(parse_ts, now), write_cache=True).document(FIRST_DAY)
        samples = []
        for _ in range(runs):
            if mode == "cold":
                shutil.rmtree(open_cache.cache_path(home.root, FIRST_DAY).parent, ignore_errors=True)
            samples.append(anyio.run(fresh_first_answer, home, now, handshake))
        answers[mode] = {t for _, _, t in samples}
        out[mode] = {"after_initialize_ms": statistics.median(a for a, _, _ in samples),
                     "from_spawn_ms": statistics.median(b for _, b, _ in samples),
                     "samples_after_initialize_ms": [a for a, _, _ in samples]}
    out["same_answer"] = len(answers["cold"] | answers["warm"]) == 1
    out["target_met"] = out["warm"]["after_initialize_ms"] <= 500
    return out


class Appender:
    """Plays a recorder: a new snapshot every call, timestamped now."""

    def __init__(self, home: Home) -> None:
        self.log = EventLog(home)
        self.n = 0

    def __call__(self) -> None:
        self.n += 1
        now = time.time_ns() // 1000
        b = CaptureBatch(source_id="bench-live", recorder="recorder")
        b.snapshots.append(Snapshot(ref=f"bench-live:frames:{self.n}", ts_us=now, stream="monitor_1",
                                    app="Bench Recorder", window=f"tick {self.n}", source_frame_id=f"b{self.n}"))
        self.log.append(b)


def stats(ms: list[float]) -> dict[str, float]:
    s = sorted(ms)
    return {"median_ms": round(statistics.median(s), 2), "p90_ms": round(s[int(0.9 * (len(s) - 1))], 2),
            "max_ms": round(s[-1], 2), "calls": len(s)}


async def start_up(home: Home, cache: Path) -> dict[str, float]:
    """Spawn to ``initialize`` answered, to the tool list, and to the first tool answer."""
    (init, listed, called), _ = await timed_session(
        home, cache, (), [lambda s: s.list_tools(), lambda s: s.call_tool("get_capabilities", {})])
    return {"initialize_ms": round(init * 1000, 1), "tools_list_ms": round(listed * 1000, 1),
            "first_answer_ms": round(called * 1000, 1)}


async def over_stdio(home: Home, calls: int, appender: Appender | None) -> dict[str, Any]:
    from mcp import ClientSession, stdio_client

    params = server_params(home, home.root.parent / "user-cache")
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as s:
                t0 = time.perf_counter()
                await s.initialize()
                init_ms = (time.perf_counter() - t0) * 1000
                t0 = time.perf_counter()
                first = await s.call_tool("get_context", {"hours": 2})
                cold_ms = (time.perf_counter() - t0) * 1000
                assert not first.is_error, first.content
                warm: list[float] = []
                for _ in range(calls):
                    if appender:
                        appender()
                    t0 = time.perf_counter()
                    res = await s.call_tool("get_context", {"hours": 2})
                    warm.append((time.perf_counter() - t0) * 1000)
                    assert not res.is_error, res.content
                text = res.content[0].text
                if appender:
                    assert "Bench Recorder" in text, "live rows must be visible"
    return {"initialize_ms": round(init_ms, 1), "first_call_ms": round(cold_ms, 1), **stats(warm),
            "block_chars": len(text)}


def in_process(home: Home, calls: int, appender: Appender | None) -> dict[str, Any]:
    from af_pipeline.interfaces.memory import Memory

    m = Memory(home)
    t0 = time.perf_counter()
    m.warm()  # what `af mcp` does before serving
    warm_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    m.context(m.period(hours=2))
    cold_ms = (time.perf_counter() - t0) * 1000
    warm = []
    for _ in range(calls):
        if appender:
            appender()
        t0 = time.perf_counter()
        m.context(m.period(hours=2))
        warm.append((time.perf_counter() - t0) * 1000)
    return {"startup_warm_ms": round(warm_ms, 1), "first_call_ms": round(cold_ms, 1), **stats(warm)}


def main() -> int:
    import anyio

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=11, help="synthetic seed (11: a busy dual-monitor day)")
    ap.add_argument("--calls", type=int, default=30, help="warm calls per mode")
    ap.add_argument("--keep", metavar="DIR", help="build the data folder here and keep it")
    ap.add_argument("--json", action="store_true", help="print JSON only")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per first-answer mode")
    ap.add_argument("--first-answer-only", action="store_true", help="measure only the first answer (issue 43)")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="af-bench-mcp-"))
    if root.exists() and args.keep:
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    try:
        print("first answer on an open day ...", file=sys.stderr)
        first = first_answer(root, args.seed, args.runs)
        if args.first_answer_only:
            print(json.dumps({"first_answer": first}) if args.json else _first_lines(first))
            return 0
        print("building a busy live day ...", file=sys.stderr)
        home, rows = busy_live_home(root, args.seed)
        out: dict[str, Any] = {"rows_landed": rows, "calls": args.calls, "first_answer": first}
        # the first start (nothing recorded: the SDK answers the handshake) and three restarts
        cache = root / "start-up-cache"
        out["first_start"] = anyio.run(start_up, home, cache)
        restarts = [anyio.run(start_up, home, cache) for _ in range(3)]
        out["restart"] = {k: statistics.median(r[k] for r in restarts) for k in restarts[0]}
        out["stdio"] = anyio.run(over_stdio, home, args.calls, None)
        out["stdio_while_appending"] = anyio.run(over_stdio, home, args.calls, Appender(home))
        out["in_process"] = in_process(home, args.calls, None)
        out["in_process_while_appending"] = in_process(home, args.calls, Appender(home))
        out["target_met"] = out["stdio"]["median_ms"] < 100 and out["stdio_while_appending"]["median_ms"] < 100
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"busy live day: {rows['snapshots']:,} snapshots, {rows['inputs']:,} input events, "
          f"{rows['elements']:,} elements (open, unsealed: {rows['days_sealed']} day(s) sealed)")
    print(f"get_context(hours=2), {args.calls} warm calls each:")
    print(f"{'mode':<28}{'first call':>12}{'median':>10}{'p90':>10}{'max':>10}")
    for mode in ("stdio", "stdio_while_appending", "in_process", "in_process_while_appending"):
        r = out[mode]
        print(f"{mode:<28}{r['first_call_ms']:>10.1f}ms{r['median_ms']:>8.1f}ms{r['p90_ms']:>8.1f}ms{r['max_ms']:>8.1f}ms")
    print(f"target (< 100 ms median over stdio): {'met' if out['target_met'] else 'NOT met'}")
    for mode in ("first_start", "restart"):
        r = out[mode]
        print(f"{mode:<12} spawn to initialize {r['initialize_ms']:.0f} ms, to tools/list {r['tools_list_ms']:.0f} ms, "
              f"to the first answer {r['first_answer_ms']:.0f} ms")
    print(f"target (initialize < 1 s on a restart): {'met' if out['restart']['initialize_ms'] < 1000 else 'NOT met'}")
    print(_first_lines(first))
    print(json.dumps(out))
    return 0


def _first_lines(r: dict[str, Any]) -> str:
    lines = [f"first get_context(hours=3) of a fresh af mcp, open day of {r['snapshots']:,} snapshots "
             f"({r['rows']:,} rows), median of {r['runs']}:"]
    for mode in ("cold", "warm"):
        m = r[mode]
        lines.append(f"  {mode:<5} {m['after_initialize_ms']:.0f} ms after initialize ({m['from_spawn_ms']:.0f} ms "
                     f"from spawn; runs {', '.join(f'{x:.0f}' for x in m['samples_after_initialize_ms'])})")
    lines.append(f"  same answer cold and warm: {'yes' if r['same_answer'] else 'NO'}; target (warm <= 500 ms "
                 f"after initialize): {'met' if r['target_met'] else 'NOT met'}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
