"""Reading a large source in a child process while this process lands what it has read.

An import is two halves that take turns on one core: reading the source (SQLite rows to
capture rows: about two thirds of a screenpipe import's CPU) and landing each day (dedup,
Parquet, seal: the other third). Threads cannot overlap them, since both halves hold the GIL
for nearly all of their time. A reader process can: it reads day N+1 while this process lands
day N, so on two cores the import takes, at best, about as long as its reading half alone.

It is a choice, not the default: the two processes hold about 140 MB more than one (each has
its own interpreter and libraries, and the reading's and the landing's peaks no longer fall at
different times). `af import screenpipe --reader-process` asks for it.

The batches, the progress lines and the errors of the reader reach this process in order over
one pipe. The reader runs at most one batch ahead (the pipe blocks it until its last batch has
been taken), so memory holds one more day, not the source. The reader dies with this process
(a Linux parent-death signal, else when its next send finds the pipe closed), and stopping the
iteration early stops the reader.
"""

from __future__ import annotations

import ctypes
import importlib
import multiprocessing
import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from capture.errors import AfError

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class ReaderStopped(AfError):
    """The reader process ended before its source was read to the end, without an error of its own."""

    exit_code = 1


# messages from the reader: (tag, payload)
_BATCH, _PROGRESS, _ERROR, _END = "batch", "progress", "error", "end"


def in_child(target: str, kwargs: dict[str, Any], progress: Callable[[str], None] | None = None) -> Iterator[Any]:
    """The items of ``target(**kwargs, progress=...)`` (a generator function named
    "package.module:function"), computed in a child process, in order.

    Its progress lines go to ``progress`` here, between the items they came with. An exception
    raised in the reader is raised here again (same class and message when it can be pickled,
    else a RuntimeError naming it); a reader that dies without one raises ReaderStopped.

    The reader is a spawned interpreter, which imports the calling program's main module first:
    a script that calls this must keep its work under ``if __name__ == "__main__":``, as for
    any spawned process (the ``af`` command does)."""
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked DuckDB or thread state
    here, there = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_run, args=(there, target, kwargs, progress is not None, os.getpid()), daemon=True,
                       name=f"af reader {target}")
    proc.start()
    there.close()  # this end lives in the child now: EOF here means the child is gone
    done = False
    try:
        while True:
            try:
                tag, payload = pickle.loads(here.recv_bytes())
            except EOFError:
                proc.join()
                code = proc.exitcode
                why = " (killed, perhaps for lack of memory)" if code is not None and code < 0 else ""
                raise ReaderStopped(f"the reader process stopped with exit code {code}{why} before the source "
                                    "was read to its end; the days landed so far are in the log, and importing "
                                    "again lands the rest") from None
            if tag == _BATCH:
                yield payload
            elif tag == _PROGRESS:
                if progress is not None:
                    progress(payload)
            elif tag == _ERROR:
                raise payload
            else:
                done = True
                return
    finally:
        here.close()
        if not done and proc.is_alive():
            proc.terminate()  # stopped early (an error here, or the consumer broke off)
        proc.join()


def _run(out: Connection, target: str, kwargs: dict[str, Any], with_progress: bool, parent: int) -> None:
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops us
    try:
        module, name = target.split(":")
        fn = getattr(importlib.import_module(module), name)
        if with_progress:
            kwargs = {**kwargs, "progress": lambda line: _send(out, _PROGRESS, line)}
        for item in fn(**kwargs):
            _send(out, _BATCH, item)
        _send(out, _END, None)
    except (BrokenPipeError, ConnectionResetError):
        return  # the parent stopped reading: nothing is left to tell
    except BaseException as exc:  # noqa: BLE001 - every failure is the parent's to report
        try:
            _send(out, _ERROR, _portable(exc))
        except (BrokenPipeError, ConnectionResetError):
            return
    finally:
        out.close()


def _send(out: Connection, tag: str, payload: Any) -> None:
    # pickle.dumps in C, not Connection.send's ForkingPickler (a Python subclass): half the
    # reader's time spent pickling a day's batch
    out.send_bytes(pickle.dumps((tag, payload), protocol=pickle.HIGHEST_PROTOCOL))


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling as itself, else a RuntimeError with its class and text."""
    try:
        back = pickle.loads(pickle.dumps(exc))
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:  # noqa: BLE001, S110 - any failure to pickle means: send a plain copy
        pass
    return RuntimeError(f"{type(exc).__name__}: {exc}")


def _die_with_parent(parent: int) -> None:
    """Ask Linux to end this process when its parent dies (a killed import leaves no reader)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # without it a reader still ends at its next send (the pipe is closed)
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the signal was asked for
