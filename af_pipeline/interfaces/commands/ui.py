"""``af ui``: the Dagster UI on a data folder, from a checkout or an installed package alike.

It points Dagster at the data folder (``DAGSTER_HOME=<home>/dagster`` as an absolute path,
telemetry off, ``AF_HOME``), writes ``<home>/dagster/workspace.yaml`` naming the installed module
``assets.definitions`` (no working directory: it loads from wherever Python finds the package,
site-packages or a checkout) and runs ``dagster dev`` on it. The code location keeps the name
the checkout's workspace.yaml gives it, so run history and schedule state are the same either way.

Stopping (issue 43): ``dagster dev`` is about five processes (itself, the webserver, the daemon and
their code servers) plus, while a run is in progress, the run's process and its day workers. It
runs as a child in a session of its own, so the whole tree is one process group. SIGTERM or
SIGINT to ``af ui`` is passed to ``dagster dev`` as SIGINT (its own clean shutdown: measured
2.3-2.9 s); what of the group is still there once it has ended (or after ``GRACE_S``) gets
SIGTERM (the code servers would wait for their next heartbeat, a run's process would go on), and
after ``TERM_S`` more SIGKILL. A second signal skips to SIGKILL. ``af ui`` then exits 0 (a requested
stop, as ``af sync --watch`` and ``af record``), within ``GRACE_S + TERM_S + KILL_S`` of the signal.
SIGHUP (the terminal closed) stops it the same way: ``dagster dev``, in a session of its own, no
longer gets the terminal's hang-up itself. Only SIGKILL to ``af ui`` leaves the group running
(a service manager's control group still ends it: docs/systemd/af-ui.service).

Runs cut short (issue 43): once the group is gone, a run one of its processes ran that is still
unfinished in Dagster's run storage is failed as "cut short: af ui stopped ..." (and one Dagster
failed as interrupted says so too), tagged ``af/cut_short``; on start, runs left unfinished by
processes that are gone (af ui was killed) are failed the same way. The sealed-day sensor asks for
their days again on its next tick (assets/sensors.py).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.home import Home, resolve_home
from capture.process import accept_stop

GRACE_S = 4.0  # dagster dev's own shutdown after SIGINT (measured 2.3-2.9 s with nothing running)
TERM_S = 2.0  # then SIGTERM to the rest of its process group (a run's process, code servers)
KILL_S = 1.0  # then SIGKILL, and this long for the group to be gone

CODE_MODULE = "assets.definitions"
LOCATION_NAME = "activity_frames"  # as in the checkout's workspace.yaml
WORKSPACE = f"""\
# Written by `af ui`: the installed activity-frames code location (rewritten on every start).
load_from:
  - python_module:
      module_name: {CODE_MODULE}
      attribute: defs
      location_name: {LOCATION_NAME}
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ui",
        help="open the Dagster UI (webserver and daemon) on the data folder",
        description=(
            "Run `dagster dev` on the installed code location assets.definitions (through <home>/dagster/workspace.yaml, "
            "written here) with DAGSTER_HOME=<home>/dagster and AF_HOME=<home>: "
            "the day partitions, assets, checks, the nightly schedule and the sealed-day sensor of this "
            "data folder. Stop it with Ctrl-C."
        ),
    )
    cli.common(p, json_flag=False)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="port to listen on (default: 3000)")
    p.set_defaults(func=run_ui)


def prepare(home: Home) -> Path:
    """Point this process's Dagster at ``home`` and write the workspace file; return its path."""
    from assets.instance import use_home

    folder = Path(use_home(home))  # <home>/dagster with its dagster.yaml; DAGSTER_HOME, AF_HOME
    path = folder / "workspace.yaml"
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(WORKSPACE, encoding="utf-8")
    os.replace(tmp, path)
    return path


def command(workspace: Path, host: str, port: int) -> list[str]:
    """The dagster dev command line, run by this interpreter (so the code location is this install)."""
    return [sys.executable, "-m", "dagster", "dev", "-w", str(workspace), "-h", host, "-p", str(port)]


def run_ui(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder yet; import a capture first "
                        "(af import ...) or pass --home")
    argv = command(prepare(home), args.host, args.port)
    from assets.instance import instance, reap_dead_runs, settle_stopped

    inst = instance(home)
    since = time.time()
    for line in reap_dead_runs(inst):  # left by an af ui (or a run) that was killed
        _say(line)
    print(f"af ui: http://{args.host}:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']})", file=sys.stderr,
          flush=True)

    def settle(pids: set[int]) -> None:
        try:
            for line in settle_stopped(inst, pids, since):
                _say(line)
        except Exception as e:  # noqa: BLE001 - the stop goes on; the next start or run settles them
            _say(f"could not mark the runs cut short ({type(e).__name__}: {e}); the next start does")

    return supervise(argv, after_stop=settle)


def _say(line: str) -> None:
    print(f"af ui: {line}", file=sys.stderr, flush=True)


def supervise(argv: list[str], after_stop: Callable[[set[int]], None] | None = None) -> int:
    """Run ``argv`` in a session of its own until it ends or this process gets SIGTERM / SIGINT / SIGHUP;
    then stop its whole process group (module docstring) and call ``after_stop`` with the ids of
    the processes the group had. Its exit code, or 0 after a stop."""
    asked: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        asked.append(signum)

    restore = accept_stop(on_signal, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    try:
        proc = subprocess.Popen(argv, start_new_session=True)  # its pgid is its pid
        try:
            while not asked:
                try:
                    return proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            pids = group_pids(proc.pid)
            stop_group(proc, asked)
            if after_stop is not None:
                after_stop(pids)
    finally:
        restore()
    print("af ui: stopped", file=sys.stderr, flush=True)
    return 0


def stop_group(proc: subprocess.Popen[bytes], asked: list[int]) -> None:
    """Stop ``proc`` (a process group leader) and every process of its group: SIGINT to the leader,
    SIGTERM to the group after GRACE_S, SIGKILL after TERM_S more; a further signal in ``asked``
    skips to SIGKILL. Returns when the group is gone, or KILL_S after the SIGKILL at the latest."""
    pgid = proc.pid
    seen = len(asked)
    if proc.poll() is None:
        _signal_leader(proc, signal.SIGINT)
    deadline = time.monotonic() + GRACE_S
    while proc.poll() is None and time.monotonic() < deadline and len(asked) == seen:
        time.sleep(0.05)
    # dagster dev has stopped its webserver and daemon; their code servers would follow only at
    # their next heartbeat (~2.5 s), and a run's process not at all
    if _gone_within(proc, pgid, 0.3, asked, seen):
        return
    if len(asked) == seen:  # no second signal: ask the rest to end
        _signal_group(pgid, signal.SIGTERM)
        if _gone_within(proc, pgid, TERM_S, asked, seen):
            return
    _signal_group(pgid, signal.SIGKILL)
    _gone_within(proc, pgid, KILL_S, asked, len(asked))
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _gone_within(proc: subprocess.Popen[bytes], pgid: int, seconds: float, asked: list[int], seen: int) -> bool:
    """Wait up to ``seconds`` for the group to be gone; False at the deadline or on a further signal."""
    deadline = time.monotonic() + seconds
    while _group_alive(proc, pgid):
        if time.monotonic() >= deadline or len(asked) > seen:
            return False
        time.sleep(0.05)
    return True


def group_pids(pgid: int) -> set[int]:
    """The processes of process group ``pgid`` now (Linux /proc; empty elsewhere)."""
    pids = set()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid):
            pids.add(int(entry.name))
    return pids


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _signal_leader(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass


def _group_alive(proc: subprocess.Popen[bytes], pgid: int) -> bool:
    """Whether any process of the group is left (the leader is reaped here as soon as it ends)."""
    proc.poll()
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
