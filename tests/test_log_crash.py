"""A writer killed with SIGKILL in the middle of a large append leaves a log that reads, verifies,
and is completed by running the same import again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from capture.home import Home
from capture.log import EventLog
from capture.model import ROW_KINDS

ROOT = Path(__file__).resolve().parents[1]
TZ = "Europe/Paris"
DAYS = 6

# The child builds the same large batch every time and appends it; progress goes to stdout so the
# parent can kill it part-way through.
CHILD = textwrap.dedent(
    """
    import sys
    from capture.home import Home
    from capture.log import EventLog
    from capture.model import CaptureBatch, Element, InputEvent, Snapshot
    from capture.timeutil import day_bounds, days_between

    home, now_day = sys.argv[1], sys.argv[2]
    tz = "Europe/Paris"
    b = CaptureBatch("crash:db", "synth")
    for day in days_between("2026-03-10", "2026-03-15"):
        start = day_bounds(day, tz)[0] + 8 * 3_600_000_000
        for i in range(700):
            ts = start + i * 6_000_000
            fid = f"{day}:{i}"
            b.snapshots.append(Snapshot(f"crash:f:{fid}", ts, "monitor_1", "Firefox", f"title {i}",
                                        f"https://example.com/{i}", source_frame_id=fid))
            for j in range(2):
                b.inputs.append(InputEvent(f"crash:u:{fid}:{j}", ts + j, "key", stream="monitor_1",
                                           key_code=j, text="é" * j))
            for j in range(8):
                b.elements.append(Element(f"crash:e:{fid}:{j}", ts, fid, "accessibility", "AXStaticText",
                                          f"element {j} of {i}", left=j / 8, top=0.5))
    now = day_bounds(now_day, tz)[0]
    r = EventLog(Home(home)).append(b, now_us=now, progress=lambda m: print(m, flush=True))
    print("DONE", sum(r.landed.values()), r.skipped, flush=True)
    """
)


def _run(home: Path, now_day: str, kill_after: int | None) -> str:
    """Run the import; with kill_after, SIGKILL it once that many progress lines were printed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(home), now_day],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    seen = 0
    last = ""
    for line in proc.stdout:
        last = line.strip()
        if last.startswith("DONE"):
            break
        seen += 1
        if kill_after is not None and seen >= kill_after:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=300)
    if kill_after is None:
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    return last


def _contents(log: EventLog) -> dict[str, dict[str, list]]:
    return {s.day: {k: getattr(log.read_day(s.day), k) for k in ROW_KINDS} for s in log.days()}


def _sealed_files(log: EventLog) -> dict[str, bytes]:
    return {str(p.relative_to(log.dir)): p.read_bytes() for p in sorted(log.sealed_dir.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_sigkill_mid_append_then_rerun_completes(tmp_path):
    # Reference: the same import, never interrupted, all days sealed at the end.
    ref_home = Home(tmp_path / "reference")
    ref_home.init(tz=TZ)
    assert _run(ref_home.root, "2026-03-18", None).startswith("DONE")
    reference = EventLog(ref_home)
    want = _contents(reference)
    assert len(want) == DAYS and all(s.sealed for s in reference.days())

    home = Home(tmp_path / "home")
    home.init(tz=TZ)
    sealed_so_far: dict[str, bytes] = {}
    # "2026-03-15": the first four days are past and seal during the import, the last two stay
    # open (JSON lines); "2026-03-18": the open days seal too, from their open segments.
    for now_day, kill_points in (("2026-03-15", (2, 5)), ("2026-03-18", (1,))):
        for kill_after in kill_points:
            _run(home.root, now_day, kill_after)
            log = EventLog(home)
            if os.environ.get("AF_CRASH_DEBUG"):
                print(kill_after, sorted(str(p.relative_to(log.dir)) for p in log.dir.rglob("*")), log.verify().notes)
            report = log.verify()
            assert report.ok, report.problems
            got = _contents(log)  # every day reads, whatever instant the kill hit
            for day, kinds in got.items():
                sealed = log.read_day(day).sealed
                for kind, rows in kinds.items():
                    if sealed:
                        assert rows == want[day][kind], (day, kind)  # a sealed day is whole
                    else:
                        assert set(rows) <= set(want[day][kind]), (day, kind)
            files = _sealed_files(log)
            assert {k: files[k] for k in sealed_so_far} == sealed_so_far  # nothing sealed changed
            sealed_so_far = files
        last = _run(home.root, now_day, None)
        assert last.startswith("DONE")
    log = EventLog(home)
    assert log.verify().ok and log.verify().notes == []
    assert _contents(log) == want
    assert _sealed_files(log) == _sealed_files(reference)  # the same bytes as an uninterrupted import
    assert not list(log.dir.rglob("*.pending")) and not list(log.dir.rglob("*.staging"))
