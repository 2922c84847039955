"""capture.files and capture.model.column_types: the one canonical JSON, file hash, atomic write
and DuckDB column-type map every layer uses."""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capture.files import atomic_write, canonical_json, sha256_file
from capture.log import COLUMNS
from capture.model import CLASS_OF, ROW_KINDS, column_types

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)


@given(_JSON)
def test_canonical_json_is_one_text_per_value(value):
    text = canonical_json(value)
    assert json.loads(text) == value
    assert "\n" not in text
    # Key order does not reach the text: the same mapping built the other way round hashes alike.
    if isinstance(value, dict):
        assert canonical_json(dict(reversed(list(value.items())))) == text


def test_canonical_json_keeps_unicode_and_refuses_nan():
    assert canonical_json({"b": "é", "a": [1, 2.5]}) == '{"a":[1,2.5],"b":"é"}'
    with pytest.raises(ValueError):
        canonical_json({"x": math.nan})


def test_sha256_file_is_the_hash_of_the_bytes(tmp_path: Path):
    path = tmp_path / "blob"
    data = os.urandom(3 << 20)  # more than one read chunk
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()


def test_atomic_write_replaces_and_can_make_a_private_file(tmp_path: Path):
    path = tmp_path / "settings.json"
    path.write_text("old")
    # A temporary file a crash left behind, readable by everyone: its mode must not carry over.
    leftover = tmp_path / ".settings.json.tmp"
    leftover.write_text("half")
    leftover.chmod(0o644)
    atomic_write(path, b"new", mode=0o600)
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    assert not leftover.exists()


_WRITER = """
import sys
from pathlib import Path
from capture.files import atomic_write
atomic_write(Path(sys.argv[1]), b"n" * (128 << 20))
"""


def test_a_writer_killed_mid_write_leaves_the_old_file_whole(tmp_path: Path):
    path = tmp_path / "certificate.json"
    path.write_bytes(b"old and complete\n")
    tmp = tmp_path / ".certificate.json.tmp"
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)])
    try:
        deadline = time.monotonic() + 60
        # Kill it once the new bytes are on their way: in the temporary file, or (a writer that is
        # not atomic) in the file itself.
        while not (tmp.exists() and tmp.stat().st_size > 0) and path.stat().st_size == 17 and child.poll() is None:
            assert time.monotonic() < deadline, "the writer never started writing"
            time.sleep(0.001)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    data = path.read_bytes()
    # Either the kill came first (the old file, untouched) or the write had finished (all of it).
    assert data == b"old and complete\n" or data == b"n" * (128 << 20)
    if child.returncode == -signal.SIGKILL and tmp.exists():
        assert data == b"old and complete\n"


@dataclass
class _Record:
    count: int
    name: str | None
    share: float | None
    done: bool
    tags: list[str]
    sizes: dict[str, int]
    span: tuple[int, ...]


def test_one_column_type_map_for_the_log_and_the_warehouse():
    # A container of ints is JSON text, not an integer column (the log's old copy said BIGINT).
    assert column_types(_Record) == {
        "count": "BIGINT", "name": "VARCHAR", "share": "DOUBLE", "done": "BOOLEAN",
        "tags": "VARCHAR", "sizes": "VARCHAR", "span": "VARCHAR",
    }
    assert all(COLUMNS[kind] == column_types(CLASS_OF[kind]) for kind in ROW_KINDS)
