"""Waiting for a condition in tests that start real processes: poll it, never sleep a fixed time."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
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
