"""Generator functions for the reader-process tests (a spawned process imports them by name)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator


def numbers(count: int, progress: Callable[[str], None] | None = None) -> Iterator[int]:
    for i in range(count):
        if progress is not None:
            progress(f"at {i}")
        yield i


def forever(progress: Callable[[str], None] | None = None) -> Iterator[int]:
    """Its own pid, then numbers without end (a reader that only its parent can stop)."""
    yield os.getpid()
    i = 0
    while True:
        i += 1
        yield i


class Opaque(Exception):
    def __init__(self, handle: object) -> None:
        super().__init__("an error holding something that cannot be pickled")
        self.handle = handle


def fails(kind: str, progress: Callable[[str], None] | None = None) -> Iterator[int]:
    yield 1
    if kind == "value":
        raise ValueError("row 7 of the source is unreadable")
    raise Opaque(lambda: None)


def dies(progress: Callable[[str], None] | None = None) -> Iterator[int]:
    """One item, then the process ends without a word (as when the kernel kills it)."""
    yield 1
    os.kill(os.getpid(), 9)
    yield 2
