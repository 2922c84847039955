"""Durable files: how the log writes so that a process killed at any instant loses no landed record.

Records are whole lines appended and fsync'd (``append_bytes``); a line without its newline is a
torn tail, never a record (``complete_lines``), and the next writer cuts it (``truncate_torn_tail``).
A new file's directory is fsync'd too, so the file itself survives power loss, not only its bytes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from capture import files
from capture.files import sha256_file as sha256_file  # the log parts import it from here

# fsync makes a landed record survive power loss, not just a killed process. Tests that only
# check logic may turn it off to run faster; nothing else should.
FSYNC = True


def canonical_json(obj: Any) -> bytes:
    """The log's records as bytes: capture.files' one canonical text, UTF-8 encoded."""
    return files.canonical_json(obj).encode("utf-8")


def fsync_dir(path: Path) -> None:
    if not FSYNC:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    if not FSYNC:
        return
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def append_bytes(path: Path, data: bytes) -> None:
    """Append whole records and fsync, so a record is on disk entirely or recoverable as a torn tail."""
    if not data:
        return
    new = not path.exists()
    with open(path, "ab") as fh:
        fh.write(data)
        fh.flush()
        if FSYNC:
            os.fsync(fh.fileno())
    if new:
        fsync_dir(path.parent)


def append_file(src: Path, dst: Path) -> None:
    """Append the whole of ``src`` to ``dst`` and fsync (a bulk write prepared beside its target)."""
    with open(src, "rb") as fh_src, open(dst, "ab") as fh_dst:
        shutil.copyfileobj(fh_src, fh_dst, 1 << 20)
        fh_dst.flush()
        if FSYNC:
            os.fsync(fh_dst.fileno())


def complete_lines(data: bytes) -> list[bytes]:
    """The complete lines of a JSON-lines file; a torn tail (no final newline) is not a record."""
    end = data.rfind(b"\n")
    if end < 0:
        return []
    return [ln for ln in data[: end + 1].split(b"\n") if ln]


def truncate_torn_tail(path: Path) -> int:
    """Cut a file back to just after its last newline; return the number of bytes removed."""
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        keep = 0
        pos = size
        while pos > 0:
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            idx = fh.read(step).rfind(b"\n")
            if idx >= 0:
                keep = pos + idx + 1
                break
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
        return size - keep


def sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def sql_list(paths: list[Path]) -> str:
    """A DuckDB list literal of file paths."""
    return "[" + ", ".join(f"'{sql_path(p)}'" for p in paths) + "]"
