"""Always-on soak: the memory's background services left running against a busy writer.

    .venv/bin/python -m bench.soak [--minutes 30] [--rate 5] [--midnight-after MIN] [--ui] [--work DIR]

A screenpipe-shaped writer (the current layout, WAL, as screenpipe runs it) commits RATE frames a
second, each with its element tree and two clicks in one transaction: several times what a busy
person produces (about one frame every two seconds). Against it run, for real time (no clock
tricks): `af sync --watch --interval 2`, `af serve` (asked for the day list and today's page
every 5 s), one long-lived `af mcp` session (the SDK's stdio client asking get_context every
10 s) and, with --ui, `af ui` (Dagster's webserver, daemon and code server). Every 15 s the
resident memory (RSS), open files and threads of each process tree are sampled, with the data
folder's size per landed row.

The verdict follows issue 43: after the first tenth of the run, RSS grows no more than
RSS_GROWTH_MAX and open files stay flat (the median of the last tenth against the median of the
second tenth). Writes soak.md and soak.json under --work; exit 1 when a process tree failed the
rule or died.

The open day's rows are held on purpose (the MCP server answers from them), so a run inside one
day cannot tell them from a leak. With --midnight-after MIN the data folder gets a real IANA zone
whose local midnight falls about MIN minutes into the run (zones with :30 and :45 offsets give a
choice every 15 minutes) and a grace period of 0 hours, so the first sync pass after midnight
seals the day before, for real (no clock is changed). Each sample also counts the rows in the
open segments; per process tree and per day, RSS is fitted as floor + slope x open-day rows: the
slope is what an open-day row costs, and a floor higher on the second day than on the first is
what stays behind after the rollover (a leak shows as a rising floor).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the screenpipe layout builder the tests use

from bench.common import af_command, say  # noqa: E402

SAMPLE_EVERY_S = 15.0  # seconds between samples
RSS_GROWTH_MAX = 0.05  # after the first tenth: at most 5 % more resident memory
FDS_GROWTH_MAX = 2  # open files: flat (a connection or two in flight)
SERVE_EVERY_S = 5.0
MINUTE_US = 60_000_000
MCP_EVERY_S = 10.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Writer(threading.Thread):
    """screenpipe's capture loop, committing a frame, its tree and two clicks together."""

    def __init__(self, path: Path, rate: float, switch_every: float = 0.0):
        super().__init__(daemon=True)
        from screenpipe_eras import EraDB

        self.era = EraDB(path, "current")
        self.era.con.execute("PRAGMA journal_mode = WAL")
        self.era.con.commit()
        self.path, self.every = path, 1.0 / rate
        self.switch_every = switch_every  # seconds on one app and window; 0: a new one every frame
        self.stop = threading.Event()
        self.frames = 0

    def run(self) -> None:
        from screenpipe_eras import sample_tree

        con = self.era.con = self.era._connect(self.path)  # this thread's own connection
        apps = ["Code", "Firefox", "Slack", "Terminal", "Figma"]
        start = next_at = time.monotonic()
        while not self.stop.is_set():
            at = datetime.now(UTC)
            n = self.frames
            k = int((time.monotonic() - start) / self.switch_every) if self.switch_every > 0 else n
            fid = self.era.snapshot(at, apps[k % 5], f"{apps[k % 5]} window {k % 40}", sample_tree(f"t{n % 200}"))
            for k in (1, 2):
                con.execute("INSERT INTO ui_events (timestamp, event_type, x, y, button, frame_id) "
                            "VALUES (?, 'click', ?, 20, 0, ?)", (at.isoformat(), 10 * k, fid))
            con.commit()
            self.frames += 1
            next_at += self.every
            self.stop.wait(max(0.0, next_at - time.monotonic()))
        con.close()


def _tree_sample(pid: int) -> dict[str, int] | None:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return None
    rss = fds = threads = 0
    alive = 0
    for p in procs:
        try:
            with p.oneshot():
                rss += p.memory_info().rss
                fds += p.num_fds()
                threads += p.num_threads()
                alive += 1
        except psutil.NoSuchProcess:
            continue
    return {"rss": rss, "fds": fds, "threads": threads, "processes": alive}


def _mcp_loop(home: Path, stop: threading.Event, log: list[float], errors: list[str]) -> None:
    """One long-lived stdio session asking for the last three hours every MCP_EVERY_S."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def session() -> None:
        params = StdioServerParameters(command=af_command()[0], args=[*af_command()[1:], "mcp", "--home", str(home)],
                                       env={**os.environ})
        with open(os.devnull, "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                while not stop.is_set():
                    t0 = time.perf_counter()
                    res = await s.call_tool("get_context", {"hours": 3})
                    log.append(time.perf_counter() - t0)
                    if res.is_error:
                        errors.append(res.content[0].text if res.content else "error")
                    await asyncio.sleep(MCP_EVERY_S)

    try:
        asyncio.run(session())
    except Exception as exc:  # reported in the results, the soak goes on
        errors.append(f"session ended: {exc}")


def _mcp_pid(parent: int) -> int | None:
    for p in psutil.Process(parent).children(recursive=True):
        try:
            if "mcp" in p.cmdline():
                return int(p.pid)
        except psutil.NoSuchProcess:
            continue
    return None


def midnight_zone(after_min: float, now: datetime | None = None) -> tuple[str, datetime]:
    """The IANA zone whose next local midnight is nearest to ``after_min`` minutes from now (at
    least a minute from now), and that midnight in UTC."""
    from zoneinfo import ZoneInfo, available_timezones

    now = now or datetime.now(UTC)
    want = now + timedelta(minutes=after_min)
    best: tuple[float, str, datetime] | None = None
    for name in sorted(available_timezones()):
        if name.startswith(("Etc/", "SystemV/")) or "/" not in name:
            continue  # the named places only (what a person's folder would carry)
        local = now.astimezone(ZoneInfo(name))
        nxt = datetime.combine(local.date() + timedelta(days=1), datetime.min.time(), ZoneInfo(name))
        at = nxt.astimezone(UTC)
        if at - now < timedelta(minutes=1):
            continue
        gap = abs((at - want).total_seconds())
        if best is None or gap < best[0]:
            best = (gap, name, at)
    assert best is not None
    return best[1], best[2]


def _open_rows(home: Path) -> dict[str, int]:
    """Rows (lines) in each open day's segments: what the services may hold for the open days."""
    out = {}
    open_dir = home / "log" / "open"
    for folder in sorted(open_dir.iterdir()) if open_dir.is_dir() else []:
        n = 0
        for f in folder.glob("*.jsonl"):
            with f.open("rb") as fh:
                while block := fh.read(1 << 20):
                    n += block.count(b"\n")
        out[folder.name] = n
    return out


def _fit(points: list[tuple[int, int]]) -> tuple[float, float] | None:
    """Least squares rss = floor + slope * rows: (floor bytes, slope bytes per row)."""
    if len(points) < 3 or len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope


def _per_day(samples: list[dict[str, Any]], skip: int) -> dict[str, Any]:
    """Per local day: samples, open-day rows reached, RSS fitted as floor + slope x rows (the
    first ``skip`` samples, the warm-up, left out)."""
    days: dict[str, list[tuple[int, int]]] = {}
    for s in samples[skip:]:
        if s.get("day") and s.get("day_rows") is not None:
            days.setdefault(s["day"], []).append((s["day_rows"], s["rss"]))
    out = {}
    for day, pts in days.items():
        fit = _fit(pts)
        out[day] = {"samples": len(pts), "rows_max": max(x for x, _ in pts),
                    "rss_first_mb": round(pts[0][1] / 2**20, 1), "rss_last_mb": round(pts[-1][1] / 2**20, 1),
                    "floor_mb": round(fit[0] / 2**20, 1) if fit else None,
                    "bytes_per_row": round(fit[1]) if fit else None}
    return out


def _verdict(samples: list[dict[str, int]]) -> dict[str, Any]:
    n = len(samples)
    tenth = max(1, n // 10)
    base = samples[tenth:2 * tenth] or samples[:1]
    last = samples[-tenth:]
    rss0 = statistics.median(s["rss"] for s in base)
    rss1 = statistics.median(s["rss"] for s in last)
    fds0 = statistics.median(s["fds"] for s in base)
    # the median, as the module says: a sample taken during a sync pass (its database and log
    # files open) or while a child runs is work in flight, not a descriptor kept; the max is shown
    fds1 = statistics.median(s["fds"] for s in last)
    growth = rss1 / rss0 - 1 if rss0 else 0.0
    return {"rss_start_mb": round(rss0 / 2**20, 1), "rss_end_mb": round(rss1 / 2**20, 1),
            "rss_growth": round(growth, 4), "fds_start": fds0, "fds_end": fds1,
            "fds_end_max": max(s["fds"] for s in last),
            "threads_end": last[-1]["threads"], "processes_end": last[-1]["processes"],
            "ok": growth <= RSS_GROWTH_MAX and fds1 - fds0 <= FDS_GROWTH_MAX}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="how long the services run (default 30)")
    ap.add_argument("--rate", type=float, default=5.0, help="frames a second the writer commits (default 5)")
    ap.add_argument("--switch-every", type=float, default=10.0, metavar="S",
                    help="seconds the writer stays on one app and window before the next (default 10, several "
                    "times a busy person's switching; 0: a new app every frame, the first soaks' writer)")
    ap.add_argument("--midnight-after", type=float, default=None, metavar="MIN",
                    help="give the data folder a real zone whose local midnight falls about MIN minutes into "
                         "the run (grace 0 h: the day before seals at the first pass after it)")
    ap.add_argument("--ui", action="store_true", help="also run `af ui` (Dagster's webserver and daemon)")
    ap.add_argument("--work", type=Path, default=ROOT / ".bench" / "soak", help="folder for the run (made fresh)")
    args = ap.parse_args(argv)
    import shutil

    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    home = args.work / "home"
    db = args.work / "db.sqlite"
    writer = Writer(db, args.rate, args.switch_every)
    writer.era.snapshot(datetime.now(UTC), "Code", "start", ())
    writer.era.con.commit()
    writer.era.con.close()  # the writer's thread opens its own
    af = af_command()
    env = {**os.environ, "AF_HOME": str(home)}
    tz, midnight = "UTC", None
    if args.midnight_after is not None:
        from capture.home import Home

        tz, midnight = midnight_zone(args.midnight_after)
        Home(home).init(tz=tz, grace_hours=0)
        say(f"soak: data folder in {tz}: its midnight falls at {midnight:%H:%M:%S} UTC, "
            f"{(midnight - datetime.now(UTC)).total_seconds() / 60:.1f} min from now; grace 0 h")
    subprocess.run([*af, "sync", "screenpipe", str(db), "--home", str(home), "--tz", tz], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    logs = {name: (args.work / f"{name}.out").open("wb") for name in ("sync", "serve", "ui")}
    port = _free_port()
    procs: dict[str, subprocess.Popen[bytes]] = {
        "sync": subprocess.Popen([*af, "sync", "--watch", "--interval", "2"], env=env, stdout=logs["sync"],
                                 stderr=subprocess.STDOUT, start_new_session=True),
        "serve": subprocess.Popen([*af, "serve", "--port", str(port)], env=env, stdout=logs["serve"],
                                  stderr=subprocess.STDOUT, start_new_session=True),
    }
    if args.ui:
        procs["ui"] = subprocess.Popen([*af, "ui", "--port", str(_free_port())], env=env, stdout=logs["ui"],
                                       stderr=subprocess.STDOUT, start_new_session=True)
    stop = threading.Event()
    mcp_times: list[float] = []
    mcp_errors: list[str] = []
    mcp = threading.Thread(target=_mcp_loop, args=(home, stop, mcp_times, mcp_errors), daemon=True)
    serve_errors: list[str] = []

    def ask_serve() -> None:
        while not stop.is_set():
            for target in ("/days.json", "/"):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{target}", timeout=30) as r:  # noqa: S310
                        r.read()
                except Exception as exc:  # counted, not fatal: the server may still be starting
                    serve_errors.append(f"{target}: {exc}")
            stop.wait(SERVE_EVERY_S)

    asker = threading.Thread(target=ask_serve, daemon=True)
    writer.start()
    mcp.start()
    asker.start()
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in [*procs, "mcp"]}
    from capture.timeutil import local_day

    t0 = time.monotonic()
    disk: list[tuple[int, int]] = []
    end = time.monotonic() + args.minutes * 60
    died: list[str] = []
    say(f"soak: {args.minutes:g} min, writer at {args.rate:g} frames/s, services: {', '.join(procs)} + mcp")
    try:
        while time.monotonic() < end:
            stop.wait(SAMPLE_EVERY_S)
            today = local_day(time.time_ns() // 1000, tz)
            rows = _open_rows(home)
            # the open day's rows, and the rows of every open day (the day before, until it seals)
            stamp = {"t_s": round(time.monotonic() - t0), "day": today, "day_rows": rows.get(today, 0),
                     "open_rows": sum(rows.values()), "open_days": len(rows)}
            for name, proc in procs.items():
                if proc.poll() is not None and name not in died:
                    died.append(name)
                got = _tree_sample(proc.pid)
                if got:
                    samples[name].append({**got, **stamp})
            pid = _mcp_pid(os.getpid())
            got = _tree_sample(pid) if pid else None
            if got:
                samples["mcp"].append({**got, **stamp})
            size = sum(f.stat().st_size for f in home.rglob("*") if f.is_file())
            disk.append((writer.frames, size))
            left = max(0, int(end - time.monotonic()))
            say(f"  {writer.frames:,} frames written, {stamp['open_rows']:,} rows in {stamp['open_days']} open day(s), "
                f"{size / 2**20:.1f} MB on disk; "
                + ", ".join(f"{n} {s[-1]['rss'] / 2**20:.0f} MB" for n, s in samples.items() if s) + f"; {left} s left")
    finally:
        writer.stop.set()
        stop.set()
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        for fh in logs.values():
            fh.close()
    con = sqlite3.connect(db)
    frames = con.execute("SELECT count(*) FROM frames").fetchone()[0]
    con.close()
    verdicts = {name: _verdict(s) for name, s in samples.items() if len(s) >= 3}
    days = {name: _per_day(s, max(1, len(s) // 10)) for name, s in samples.items() if len(s) >= 3}
    per_row = disk[-1][1] / max(1, disk[-1][0] * 8) if disk else 0  # a frame, 5 elements and 2 clicks
    result = {"minutes": args.minutes, "rate_frames_s": args.rate, "switch_every_s": args.switch_every,
              "frames": frames, "died": died,
              "verdicts": verdicts, "disk_bytes_per_row": round(per_row, 1),
              "mcp_calls": len(mcp_times), "mcp_median_s": round(statistics.median(mcp_times), 3) if mcp_times else None,
              "mcp_errors": mcp_errors[:5], "serve_errors": len(serve_errors),
              "tz": tz, "midnight_utc": midnight.isoformat() if midnight else None, "per_day": days,
              "samples": samples}
    lines = [f"soak: {args.minutes:g} min, {frames:,} frames at {args.rate:g}/s (x2 clicks, 5 elements each), a new app every "
             f"{args.switch_every:g} s", "",
             "| process tree | RSS start MB | RSS end MB | growth | open files start / end (max) | threads | ok |",
             "|---|---|---|---|---|---|---|"]
    for name, v in verdicts.items():
        lines.append(f"| {name} | {v['rss_start_mb']} | {v['rss_end_mb']} | {v['rss_growth']:+.1%} | "
                     f"{v['fds_start']:g} / {v['fds_end']:g} ({v['fds_end_max']}) | {v['threads_end']} | {'yes' if v['ok'] else 'NO'} |")
    if any(len(d) > 1 for d in days.values()):
        lines += ["", f"per local day ({tz}, midnight {midnight:%H:%M} UTC; warm-up tenth left out): RSS = floor + "
                  "slope x open-day rows", "",
                  "| process tree | day | samples | open-day rows at most | RSS first / last MB | floor MB | "
                  "bytes per open-day row |", "|---|---|---|---|---|---|---|"]
        for name, per in days.items():
            for day, d in per.items():
                lines.append(f"| {name} | {day} | {d['samples']} | {d['rows_max']:,} | {d['rss_first_mb']} / "
                             f"{d['rss_last_mb']} | {d['floor_mb']} | {d['bytes_per_row']} |")
    lines += ["", f"disk: {per_row:.0f} bytes per landed row; MCP: {len(mcp_times)} calls, median "
              f"{result['mcp_median_s']} s, errors {len(mcp_errors)}; serve errors {len(serve_errors)}; "
              f"died: {', '.join(died) or 'none'}"]
    text = "\n".join(lines)
    print(text)
    (args.work / "soak.md").write_text(text + "\n")
    (args.work / "soak.json").write_text(json.dumps(result, indent=2) + "\n")
    ok = not died and all(v["ok"] for v in verdicts.values()) and not mcp_errors
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
