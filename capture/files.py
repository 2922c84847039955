"""The one home of three byte-level ideas every layer shares: canonical JSON, the sha256 of a
file, and writing a file atomically.

They sit in capture/ (the ground) because the log needs them first; everything above imports
them from here, so a hash or a published byte means the same thing everywhere.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20


def canonical_json(value: Any) -> str:
    """One line, keys sorted, no spaces, UTF-8 kept as is, NaN refused: the text that is hashed,
    compared and token-counted. Equal values give equal text on every run and machine."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file's bytes, read in chunks (sealed segments can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def atomic_write(path: Path, data: bytes, *, mode: int = 0o666) -> None:
    """Replace ``path`` with ``data`` so a reader sees the old file or the new one, never a part.

    The bytes go to ``.<name>.tmp`` beside it, are fsync'd, and the temporary file is renamed
    over ``path``. ``mode`` is the new file's permission before the umask (0o600: private)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)  # a leftover of a crash would keep its old permissions
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
