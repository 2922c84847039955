"""Keyed hashes for forgetting: what a redaction record may say of what it removed.

A redaction record (capture/log/forget.py) names its selection and the refs it removed only by
keyed hashes: a site, a window title or a ref is content, and a plain hash of a short value is
found again by trying candidates. The key is a per-folder secret (``<home>/forget.key``, 0600),
made on first use; it stays with the data folder, so the same folder can tell that a re-imported
ref was forgotten while a copy of the log alone says nothing about what was.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from capture.files import atomic_write, canonical_json

KEY_FILE = "forget.key"
KEY_BYTES = 32
# A ref's keyed digest: 16 bytes (BLAKE2b's keyed mode is a MAC); the same width the log's
# open-day digests use, so dedup.DigestSet holds them.
REF_DIGEST_BYTES = 16
FORGOTTEN_DIR = "forgotten"  # under log/: one file of sorted ref digests per redaction record
REDACTION = "redaction"  # a manifest entry's key that makes it a redaction record


def folder_key(root: Path, create: bool = True) -> bytes | None:
    """The data folder's forgetting key; made (random, private) on first use when ``create``."""
    path = root / KEY_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if not create:
            return None
        atomic_write(path, os.urandom(KEY_BYTES).hex().encode() + b"\n", mode=0o600)
        data = path.read_bytes()
    return bytes.fromhex(data.decode("ascii").strip())


def keyed_ref(key: bytes, ref: str) -> bytes:
    return hashlib.blake2b(ref.encode("utf-8", "surrogatepass"), key=key, digest_size=REF_DIGEST_BYTES).digest()


def keyed_value(key: bytes, value: Any) -> str:
    """Hex keyed hash of a selection's value (its canonical JSON)."""
    return hashlib.blake2b(canonical_json(value).encode("utf-8"), key=key, digest_size=32,
                           person=b"af-selection").hexdigest()
FORGET_WORK = ".forget"  # under log/: a forget's staged files and its intent, until it completes
FORGET_INTENT = "intent.json"
