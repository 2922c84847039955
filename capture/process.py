"""How a process of ours is asked to stop, and how it ends.

Stop signals. A long-running command (`af record`, `af sync --watch`, `af serve`, `af mcp`,
`af ui`) handles SIGTERM and SIGINT itself, through ``stop_signals``. A signal mask is inherited
through fork and exec: started by a parent that had SIGTERM blocked at that moment, a command
would leave every stop request pending and run until killed. So the signals it handles are
unblocked as their handlers are installed. (Clean-clone CI twice saw `af record` run on for 40 s
after SIGTERM with its main loop turning; a blocked SIGTERM is the one cause found that fits.)

The end: without the interpreter's last sweep of the garbage collector.

At exit CPython collects garbage over the whole heap before it frees the modules. With
Dagster, SQLAlchemy and Great Expectations loaded that last collection costs 0.3-0.6 s of
wall time in each `af build` / `af certify` (docs/benchmarks.md, session 27), after the work is
done and the user still waits. ``gc.freeze()`` moves every object to the permanent generation,
which no collection looks at; objects are still freed by their reference counts as the modules
are cleared. What is skipped is only garbage in reference cycles, which the operating system
takes back with the process. Nothing of ours relies on a finalizer there: every file we write
is closed by a ``with`` block (the log's and the published files' writes are atomic and
synced), SQLite and DuckDB keep what was committed, and child processes are stopped by atexit
handlers, which run before this point.

Only a process's own entry point calls ``end``: a library call (a test calling ``cli.main``)
must not freeze the caller's heap.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

Handler = Callable[[int, FrameType | None], object]


def accept_stop(handler: Handler, signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> Callable[[], None]:
    """Call ``handler`` on each of ``signals`` from now on, and let them through even if this
    thread was started with them blocked (module docstring). The function returned puts the
    previous handlers and mask back. Call it from the main thread."""
    previous = {s: signal.signal(s, handler) for s in signals}
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)

    def restore() -> None:
        for s, old in previous.items():
            signal.signal(s, old)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    return restore


@contextlib.contextmanager
def stop_signals(handler: Handler, signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> Iterator[None]:
    """``accept_stop`` for the length of a ``with`` block."""
    restore = accept_stop(handler, signals)
    try:
        yield
    finally:
        restore()


def end_now(code: int) -> NoReturn:
    """Exit with ``code`` at once, once stdout and stderr are flushed: no atexit handlers, no
    interpreter shutdown. Only for `af mcp`, which has answered its client and written what it
    keeps by then, and whose MCP SDK leaves a worker thread blocked on a descriptor it never
    closes (mcp/server/stdio.py): a shutdown that meets such a thread holding a buffer's lock, or
    a library's native thread, aborts the process. A clean-clone run saw `af mcp` end with
    SIGABRT after its client closed stdin (its stderr was not kept, so which one is not known)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def end(code: int) -> NoReturn:
    """Exit with ``code``, without the final full collection (module docstring)."""
    gc.freeze()
    sys.exit(code)
