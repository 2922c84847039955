"""A range run's day work on the other cores: each day's parts computed ahead in worker processes.

A range run (``af build`` of many days: one call of the Dagster multi-asset) builds its days one
after the other in one process (day_work.build_days), so the day work (frames, attribution, page
types, the document, its renderings and token counts: day_work.day_parts, every part a function
of the capture alone) used one core. Here, when the run starts, ``DayPrefetch`` starts
``os.cpu_count() - 1`` worker processes (at least one) that read each day straight from the
sealed log (the same verified segments raw_day registers) and compute its parts with the same
``day_parts``, in day order; the run's ``build_days`` takes a day's parts when it reaches the day
(``RunParts.day_parts``) and only writes them. The warehouse keeps one writer: the run's
process. The run's process computes a static share of the days itself (``own_days``,
``OWN_SHARE``: half of them, measured) when it reaches one, since with one worker (2 cores) it
would otherwise wait on the worker most of the run.

Why it gives the same bytes: a worker calls the same ``day_parts`` on the capture
``EventLog.read_day`` gives, which is the capture raw_day stores (same rows, same order). A
day's parts are used only when the day's provenance the warehouse recorded (tz, sealed,
recorders, segment sha256s) equals the worker's, and when the build's options (typed text,
category rules) are the ones the workers had; otherwise ``build_days`` computes the day itself, as
without workers. Results are keyed by day, so worker scheduling decides nothing.

Lifetime: a worker is a fresh interpreter (``python -m af_pipeline.warehouse.parallel_days``,
exec'd like multiprocessing's "spawn": the run's process has threads, Dagster's and
SQLAlchemy's, and forking it could copy a held lock). Not multiprocessing itself: its spawn and
forkserver both import the caller's ``__main__`` again in the child, and a script that builds
without an ``if __name__ == "__main__"`` guard would then start a second build in every worker
(it waits forever on the warehouse lock). Each worker has a lifeline pipe whose only writer is
the run's process: when that process ends, even by SIGKILL, the lifeline reads end-of-file and
the worker exits at once. A worker exits by itself when no day is left to give it. A worker's
exception travels back and is raised by the build of that day, naming it; a worker that dies
(killed, out of memory) leaves its day and the days not yet given out to the run.

Memory: a day's parts cross as one pickle (measured: see docs/benchmarks.md); the run holds at
most ``max_rows`` capture rows' worth of days computed ahead (MAX_ROWS): days past the bound are
not given to the workers and the run computes them itself.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, cast

from capture.process import end

# (tz, sealed, recorders, segment hashes): what a result must share with the warehouse's raw_days
Provenance = tuple[str, bool, list[str], dict[str, str]]

# The parts of at most this many capture rows (snapshots, inputs, presence, streams) are held at
# once, about 0.4 GB: days past it are not given to the workers, the run computes them itself.
MAX_ROWS = 1_000_000
MIN_DAYS = 4  # fewer days keep the serial path: a worker start costs ~1.5 s CPU, a day saves the run ~0.8 s (docs/benchmarks.md)


WORKERS_ENV = "AF_DAY_WORKERS"  # how many day workers a range run starts; 0: none (the serial path)

# The run's own process computes this share of the days itself (compute_day, when a step first
# needs the day) instead of waiting on the workers: with one worker (2 cores) the worker was the
# bottleneck and the run's process idled on it. A static share, not "take any day not yet done":
# the cheap frames step would then take every day. Measured in docs/benchmarks.md (session 21).
OWN_SHARE_ENV = "AF_DAY_OWN_SHARE"
OWN_SHARE = 0.5


def own_share() -> float:
    """The share of a range's days its run's process computes itself ($AF_DAY_OWN_SHARE or OWN_SHARE)."""
    try:
        return min(1.0, max(0.0, float(os.environ.get(OWN_SHARE_ENV, "").strip() or OWN_SHARE)))
    except ValueError:
        return OWN_SHARE


def own_days(days: Sequence[str], share: float) -> set[str]:
    """Every 1/share-th day of the sorted days, the first among them: the run computes the first
    day while the workers start (~1.5 s), and its share is spread over the range, so each step's
    walk through the days meets it between the workers' days."""
    ordered = sorted(set(days))
    if share <= 0:
        return set()
    return {d for i, d in enumerate(ordered) if i == 0 or int(i * share) != int((i - 1) * share)}


def worker_count() -> int:
    """``os.cpu_count() - 1`` (the run's own process has the last core), at least one; or the
    number in $AF_DAY_WORKERS."""
    setting = os.environ.get(WORKERS_ENV, "").strip()
    if setting.isdigit():
        return int(setting)
    return max(1, (os.cpu_count() or 1) - 1)


def compute_day(log: Any, day: str, include_typed_text: bool, categories: Any) -> dict[str, Any]:
    """Every derived step's part of one day from the sealed log: day_work.day_parts, the one
    place the steps' order is written, on the capture the log gives."""
    from af_pipeline.warehouse import day_work

    cap = log.read_day(day, lazy_elements=True)
    out: dict[str, Any] = {"provenance": (str(cap.tz), bool(cap.sealed), list(cap.recorders), dict(cap.segment_hashes))}
    out["rows"] = sum(cap.count(k) for k in ("snapshots", "inputs", "presence", "streams"))
    out.update(day_work.day_parts(cap, include_typed_text, categories, measure_raw=True))
    return out


class RunParts:
    """A range run's day workers, as one run's ``build_days`` call uses them (day_work.Prefetched).

    Made by the run (the Dagster multi-asset: a local variable of its one call) and closed when
    it ends; nothing of it outlives the run."""

    def __init__(self, max_rows: int = MAX_ROWS):
        self.max_rows = max_rows
        self.prefetch: DayPrefetch | None = None
        self.used: dict[str, bool] = {}  # day -> its workers' parts were used (False: computed by the run)

    def start_prefetch(
        self, root: Path | str, days: Sequence[str], include_typed_text: bool, categories: Any,
        min_days: int | None = None,
    ) -> DayPrefetch | None:
        """Compute these days' parts in worker processes, for a range of at least ``min_days``
        days (MIN_DAYS); a shorter range keeps the serial path."""
        enough = len(days) >= (MIN_DAYS if min_days is None else min_days)
        if self.prefetch is None and enough and worker_count() > 0:
            self.prefetch = DayPrefetch(root, days, include_typed_text, categories, self.max_rows)
        return self.prefetch

    def close(self) -> None:
        if self.prefetch is not None:
            self.prefetch.close()

    def __enter__(self) -> RunParts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def day_parts(self, con: Any, day: str, include_typed_text: bool, categories: Any) -> dict[str, Any] | None:
        """The day's parts as a worker computed them, or None: no worker has the day, or its
        capture (the provenance raw_day recorded) or options are not the ones of this build
        (then build_days computes the day itself)."""
        from af_pipeline.warehouse import day_work

        pre = self.prefetch
        if pre is None:
            return None
        found = pre.take_day(day)  # waits for the day's worker; raises the worker's error
        if found is None:
            return None
        # sealed days only: an open day's rows may have grown since the worker read them
        trusted = bool(found["provenance"][1]) and found["provenance"] == day_work.provenance(con, day)
        trusted = trusted and include_typed_text == pre.include_typed_text and categories == pre.categories
        self.used[day] = trusted
        return found if trusted else None


def _watch(lifeline: int) -> None:
    try:
        while os.read(lifeline, 1):
            pass
    except OSError:
        pass
    os._exit(0)  # the run's process is gone: nobody needs what this worker computes


def _worker(conn: Connection, lifeline: int, root: str, include_typed_text: bool, categories: Any) -> None:
    """A worker's loop: a day in, its parts (or its error) out, until told to stop."""
    threading.Thread(target=_watch, args=(lifeline,), daemon=True).start()
    from capture.home import Home
    from capture.log import EventLog

    log = EventLog(Home(Path(root)))
    while True:
        try:
            day = conn.recv()
        except EOFError:
            return
        if day is None:
            return
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            result: tuple[Any, ...] = (day, None, compute_day(log, day, include_typed_text, categories))
        except Exception as exc:  # noqa: BLE001 - handed to the step that needs the day
            reason = f"{type(exc).__name__}: {exc}"
            try:
                pickle.dumps(exc)
                err: Any = exc
            except Exception:  # noqa: BLE001 - an exception that does not pickle crosses as text
                err = None
            result = (day, (err, reason, traceback.format_exc()), None)
        payload = pickle.dumps(result + (time.perf_counter() - t0, time.process_time() - c0), protocol=5)
        conn.send_bytes(payload)


def main(argv: Sequence[str]) -> int:
    """``python -m af_pipeline.warehouse.parallel_days SOCKET_FD LIFELINE_FD``, options on stdin
    (started by DayPrefetch; not meant to be run by hand)."""
    root, include_typed_text, categories = pickle.loads(bytes.fromhex(sys.stdin.read()))
    _worker(Connection(int(argv[0])), int(argv[1]), root, include_typed_text, categories)
    return 0


CODE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding af_pipeline/ and capture/


def _worker_env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(CODE_ROOT), path) if p)}


class DayWorkError(RuntimeError):
    """A day worker failed on a day (or died); the message names the day and the reason."""


class DayPrefetch:
    """Worker processes computing a range run's days ahead (module docstring)."""

    def __init__(self, root: Path | str, days: Sequence[str], include_typed_text: bool, categories: Any,
                 max_rows: int, workers: int | None = None, share: float | None = None):
        self.root = str(root)
        self.include_typed_text = include_typed_text
        self.categories = categories
        self.max_rows = max_rows
        self._todo = sorted(set(days))
        self._days = frozenset(self._todo)
        self._own = own_days(self._todo, own_share() if share is None else share)
        self._todo = [d for d in self._todo if d not in self._own]
        self._log: Any = None  # the run's own EventLog, for its own days
        self._results: dict[str, dict[str, Any]] = {}
        self._errors: dict[str, tuple[Any, str, str]] = {}
        self._skipped: set[str] = set()  # past the row bound: never given to a worker
        self._rows = 0
        self._cond = threading.Condition()
        self._closed = False
        # what the run measured, for tests and benchmarks
        self.stats = {"days": 0, "bytes": 0, "unpickle_s": 0.0, "worker_wall_s": 0.0, "worker_cpu_s": 0.0}
        n = max(1, min(workers or worker_count(), len(self._todo) or 1))
        self._procs: list[subprocess.Popen[bytes]] = []
        self._conns: dict[Connection, str | None] = {}
        self._lifelines: list[int] = []
        options = pickle.dumps((str(root), include_typed_text, categories), protocol=5).hex()
        for _ in range(n):
            mine, theirs = socket.socketpair()
            life_r, life_w = os.pipe()  # this process holds the only writer: EOF when it ends
            try:
                proc = subprocess.Popen(
                    # -P and the code's own folder first: the worker imports this very code, not
                    # a checkout that happens to be the current directory
                    [sys.executable, "-P", "-m", __name__, str(theirs.fileno()), str(life_r)],
                    stdin=subprocess.PIPE, pass_fds=(theirs.fileno(), life_r), close_fds=True, env=_worker_env(),
                )
                assert proc.stdin is not None
                try:
                    proc.stdin.write(options.encode("ascii"))
                    proc.stdin.close()
                except OSError:  # it died at once: its first recv below reads EOF (module docstring)
                    pass
            finally:
                theirs.close()
                os.close(life_r)
            self._procs.append(proc)
            self._conns[Connection(mine.detach())] = None
            self._lifelines.append(life_w)
        for conn in list(self._conns):
            self._give(conn)
        self._thread = threading.Thread(target=self._serve, name="af-day-prefetch", daemon=True)
        self._thread.start()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def _give(self, conn: Connection) -> None:
        """The next day to ``conn``'s worker, or its stop; called with the lock held or before the thread."""
        day = None
        while self._todo and day is None:
            candidate = self._todo.pop(0)
            if self._rows >= self.max_rows:
                self._skipped.add(candidate)
            else:
                day = candidate
        self._conns[conn] = day
        try:
            conn.send(day)  # None: nothing left, the worker ends
        except OSError:  # a dead worker: _serve reads its EOF and hands its days to the steps
            pass

    def _serve(self) -> None:
        while True:
            busy = [c for c, d in self._conns.items() if d is not None]
            if not busy:
                break
            for ready in wait(busy):
                conn = cast(Connection, ready)  # only Connections were given to wait()
                day = self._conns[conn]
                assert day is not None
                try:
                    payload = conn.recv_bytes()
                except (EOFError, OSError):
                    # The worker died (killed, out of memory): its day and the days no worker has
                    # yet go to the steps, which compute them as without workers (same bytes; a
                    # day that crashes a process crashes there too, with the serial code's error).
                    with self._cond:
                        self.stats["died"] = int(self.stats.get("died", 0)) + 1
                        self._skipped.add(day)
                        self._skipped.update(self._todo)
                        self._todo.clear()
                        self._conns[conn] = None
                        self._cond.notify_all()
                    continue
                t0 = time.perf_counter()
                got_day, err, result, wall, cpu = pickle.loads(payload)
                with self._cond:
                    self.stats["days"] += 1
                    self.stats["bytes"] += len(payload)
                    self.stats["unpickle_s"] += time.perf_counter() - t0
                    self.stats["worker_wall_s"] += wall
                    self.stats["worker_cpu_s"] += cpu
                    if err is not None:
                        self._errors[got_day] = err
                    else:
                        self._results[got_day] = result
                        self._rows += int(result["rows"])
                    if not self._closed:
                        self._give(conn)
                    else:
                        self._conns[conn] = None
                    self._cond.notify_all()
        with self._cond:
            self._skipped.update(self._todo)  # a worker died: the steps compute what is left
            self._todo.clear()
            self._cond.notify_all()
        for proc in self._procs:  # each was told to stop (or died): reap it
            proc.wait()

    def result(self, day: str) -> dict[str, Any] | None:
        """The day's parts once its worker has returned them; None if no worker computes the day."""
        if day not in self._days:
            return None
        if day in self._own:
            self._compute_own(day)
        with self._cond:
            while True:
                if day in self._results:
                    return self._results[day]
                if day in self._errors:
                    err, reason, trace = self._errors[day]
                    if isinstance(err, BaseException):
                        err.add_note(f"(in the day worker computing {day})")
                        raise err
                    raise DayWorkError(f"day {day}: {reason}\n{trace}".rstrip())
                if day in self._skipped or self._closed:
                    return None
                self._cond.wait()

    def _compute_own(self, day: str) -> None:
        """One of the run's own days (own_days), computed here the first time a step needs it."""
        with self._cond:
            if day not in self._own:
                return
            self._own.discard(day)
            if self._closed or self._rows >= self.max_rows:  # past the row bound: the steps compute it
                self._skipped.add(day)
                return
        from capture.home import Home
        from capture.log import EventLog

        if self._log is None:
            self._log = EventLog(Home(Path(self.root)))
        try:
            result = compute_day(self._log, day, self.include_typed_text, self.categories)
        except Exception as exc:  # noqa: BLE001 - raised by result() as a worker's error would be
            with self._cond:
                self._errors[day] = (exc, f"{type(exc).__name__}: {exc}", traceback.format_exc())
            return
        with self._cond:
            self.stats["own_days"] = int(self.stats.get("own_days", 0)) + 1
            self._results[day] = result
            self._rows += int(result["rows"])

    def take_day(self, day: str) -> dict[str, Any] | None:
        """The day's parts, no longer held by the run (its build writes them); None as result()."""
        found = self.result(day)
        if found is None:
            return None
        with self._cond:
            if self._results.pop(day, None) is not None:
                self._rows -= int(found["rows"])
        return found

    def close(self) -> None:
        """Stop the workers now (a run that ends early); idle workers have ended already."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        lifelines, self._lifelines = self._lifelines, []
        for fd in lifelines:
            os.close(fd)  # a busy worker exits at once
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log, self._log = self._log, None
        if log is not None:
            log.close()  # the run's own days' reader


if __name__ == "__main__":
    end(main(sys.argv[1:]))  # without the interpreter's last collection (capture/process.py)
