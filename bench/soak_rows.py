"""What one open-day row costs the always-on processes: bytes held per row, measured.

    .venv/bin/python -m bench.soak_rows [--frames 3000] [--work DIR]

Builds an open day like the soak's (bench/soak.py's writer: a frame, its 5-element tree and two
clicks each; no pacing), lands it with one `af sync` pass, then measures with tracemalloc:

- the MCP read model: ``Memory.day_capture(today)`` (the open day's followed rows, held as
  columns), bytes held after the call per open-day row;
- the sync pass's dedup: ``EventLog._open_refs(day)`` (the refs of the open day, held for the
  pass), bytes held per ref, and the peak while it is built;
- the peak of a re-read's conflict check (``_conflicts`` on the 300 newest rows of each kind, as
  a pass re-reading below its watermark does);
- after the day seals, what the same Memory holds once it answers the rolling window from the
  sealed day (Python memory held, the RSS step, the modules the sealed-day path imported).

Prints one JSON object (stdout).
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import subprocess
import sys
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the screenpipe layout builder the tests use

from bench.common import af_command, say  # noqa: E402


def build(work: Path, frames: int) -> tuple[Path, str]:
    from screenpipe_eras import EraDB, sample_tree

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    db, home = work / "db.sqlite", work / "home"
    era = EraDB(db, "current")
    apps = ["Code", "Firefox", "Slack", "Terminal", "Figma"]
    start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(minutes=1)
    for n in range(frames):  # the soak's writer, 5 frames a second, unpaced
        at = start + timedelta(seconds=n / 5)
        fid = era.snapshot(at, apps[n % 5], f"{apps[n % 5]} window {n % 40}", sample_tree(f"t{n % 200}"))
        for k in (1, 2):
            era.con.execute("INSERT INTO ui_events (timestamp, event_type, x, y, button, frame_id) "
                            "VALUES (?, 'click', ?, 20, 0, ?)", (at.isoformat(), 10 * k, fid))
    era.con.commit()
    era.con.close()
    subprocess.run([*af_command(), "sync", "screenpipe", str(db), "--home", str(home), "--tz", "UTC"], check=True,
                   stdout=subprocess.DEVNULL)
    return home, start.date().isoformat()


def held(fn: Any) -> tuple[Any, int, int]:
    """(result, bytes still allocated after fn returned with its result alive, peak bytes during)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    out = fn()
    gc.collect()
    now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, now - before, peak - before


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.soak_rows", description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--work", type=Path, default=ROOT / ".bench" / "soak_rows")
    args = ap.parse_args(argv)
    say(f"building an open day of {args.frames} frames ...")
    home, day = build(args.work, args.frames)

    from af_pipeline.interfaces.memory import Memory
    from capture.home import Home
    from capture.log import EventLog
    from capture.model import ROW_KINDS

    out: dict[str, Any] = {"frames": args.frames, "day": day}
    m = Memory(home, clock=lambda: int(datetime.fromisoformat(f"{day}T23:00:00+00:00").timestamp() * 1e6))
    m.log.open_dir  # noqa: B018 (the log opened outside the measure)
    import capture.log.opencolumns  # noqa: F401 (numpy's import is not the open day's rows)
    # the capture handed out is a view of the open day's columns (capture.log.opencolumns), which
    # the Memory's followers keep: what is held after the call is those columns
    cap, mem_held, mem_peak = held(lambda: m.day_capture(day))
    rows = {k: cap.count(k) if k != "elements" else cap.element_count() for k in ROW_KINDS}
    n = sum(rows.values())
    out["rows"] = rows
    out["memory_bytes_per_row"] = round(mem_held / n, 1)
    out["memory_peak_bytes_per_row"] = round(mem_peak / n, 1)
    # a second, followed read of the unchanged day adds nothing
    _, again, _ = held(lambda: m.day_capture(day))
    out["memory_again_bytes"] = again

    # get_context(hours=3) every 10 s, as the soak's session asks: what the answers keep
    clock = [int((datetime.fromisoformat(f"{day}T00:01:00+00:00").timestamp() + args.frames / 5 + 60) * 1e6)]
    m.clock = lambda: clock[0]
    m.context(m.period(hours=3))
    # traced across all calls: memory freed by a call is only seen if it was allocated while traced
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    steps = []
    for _ in range(20):
        clock[0] += 10_000_000
        m.context(m.period(hours=3))
        gc.collect()
        steps.append(tracemalloc.get_traced_memory()[0] - base)
    tracemalloc.stop()
    out["memory_context_held_after_each_call"] = steps

    log = EventLog(Home(home))
    refs, ref_held, ref_peak = held(lambda: log._open_refs(day))
    out["sync_refs"] = len(refs)
    out["sync_bytes_per_ref"] = round(ref_held / len(refs), 1)
    out["sync_refs_peak_bytes_per_ref"] = round(ref_peak / len(refs), 1)
    whole = log.read_day(day)  # the rows as objects, as a sync pass re-reading them has them
    tails = {k: getattr(whole, k)[-300:] for k in ("snapshots", "inputs", "elements")}

    def conflicts() -> int:
        return sum(len(log._conflicts(day, k, rows, False)) for k, rows in tails.items())

    found, _, conflict_peak = held(conflicts)
    out["sync_conflicts_found"] = found
    out["sync_conflicts_peak_bytes_per_row"] = round(conflict_peak / n, 1)
    # The day seals (as the first sync pass after midnight does) and the same Memory answers the
    # same rolling window again, now from the sealed day: what the soak's MCP server stepped up by.
    import psutil

    proc = psutil.Process()
    gc.collect()
    rss0, modules = proc.memory_info().rss, set(sys.modules)
    EventLog(Home(home)).seal(day)
    tracemalloc.start()
    for _ in range(5):
        clock[0] += 10_000_000
        m.context(m.period(hours=3))
    gc.collect()
    out["after_seal_python_held_mb"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
    top = tracemalloc.take_snapshot().statistics("filename")[:4]
    tracemalloc.stop()
    out["after_seal_rss_step_mb"] = round((proc.memory_info().rss - rss0) / 2**20, 1)
    out["after_seal_new_modules"] = len(set(sys.modules) - modules)
    out["after_seal_top"] = [f"{st.traceback[0].filename}: {st.size / 2**20:.1f} MB" for st in top]
    out["after_seal_pieces"] = len(m._slices)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
