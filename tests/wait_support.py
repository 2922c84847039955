"""Waiting for a condition in tests that start real processes: poll it, never sleep a fixed time."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def until(condition: Callable[[], Any], seconds: float, what: str, proc: subprocess.Popen[Any] | None = None,
          every: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something truthy (returned); fail after ``seconds``,
    or as soon as ``proc`` (the process being waited on) has exited."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the command exited early with {proc.returncode}")
        time.sleep(every)
    raise AssertionError(f"{what}: not within {seconds:g} s")


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    """A TCP port nobody listens on now (for a server a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def af_serve(home_root: Path, err_path: Path, ready_s: float = 60.0) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`af serve` on ``home_root`` in its own process on a free port, its stderr in ``err_path``:
    (port, process) once it listens; stopped with Ctrl-C (as a user stops it) when the block ends."""
    af = str(Path(sys.executable).with_name("af"))
    port = free_port()
    with err_path.open("wb") as err:
        proc = subprocess.Popen([af, "serve", "--port", str(port), "--home", str(home_root)],
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        until(lambda: proc.poll() is not None or listening(port), ready_s, "af serve listening")
        assert proc.poll() is None, err_path.read_text()
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
