"""How a process of ours ends: without the interpreter's last sweep of the garbage collector.

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

import gc
import sys
from typing import NoReturn


def end(code: int) -> NoReturn:
    """Exit with ``code``, without the final full collection (module docstring)."""
    gc.freeze()
    sys.exit(code)
