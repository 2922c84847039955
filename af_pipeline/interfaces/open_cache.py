"""The open day's read and compiled state kept on disk, so a fresh process answers its first
question about today without parsing the whole open segment again (issue 43).

A fresh ``af mcp`` pays, before its first answer about an open day, for parsing every JSON line
of the day's open segment (tens of thousands of rows: most of the time) and for compiling the
day. This file keeps both from an earlier process: per row kind, the rows parsed from the first
``offset`` bytes of ``log/open/<day>/<kind>.jsonl`` with the lines left out (the snapshots,
input events and elements as the read model holds them, capture.log.opencolumns: their buffers'
bytes and dictionaries, restored without a row being made or coded again), and the day's
compiled documents, each under the options it was compiled with.

It is reused only when everything it was made from is unchanged:

- the code: ``code_version()`` (the compiler and capture sources) and the Python version (the
  file is ``marshal`` data, whose format is Python's);
- each file's first ``offset`` bytes: their sha256 is checked against the file before use (a
  file that grew is parsed from ``offset`` on by the usual follower; one rewritten, shorter or
  replaced is read whole);
- a document is used only when no byte was appended since it was compiled, and only for the
  same options (floor, typed text, layout, category rules): a document with typed text exists
  only if a reader that opted in wrote it.

``marshal`` holds only plain values here (no code is loaded or run; anything else is refused).
The file lives in the private data folder (``cache/open/``, folder 0700, file 0600): it holds
what the open segment beside it holds. It is written atomically, by readers that may write (the
MCP server only reads the data folder and never writes it), which also removes the caches of
days no longer open (sealed, or removed by retention). Any doubt means no cache: a fresh read.
"""

from __future__ import annotations

import gc
import hashlib
import marshal
import sys
from pathlib import Path
from typing import Any

from capture.files import atomic_write
from capture.log.opensegments import OpenSegmentFile
from capture.log.rows import build_instances
from capture.log.schema import NAMES
from capture.model import CLASS_OF, ROW_KINDS, SkippedLine

FORMAT = 3  # 3: the read model's column store (capture.log.opencolumns) as it was; 2: row values
CACHE_DIR = ("cache", "open")
EMPTY = hashlib.sha256().hexdigest()


def cache_path(home_root: Path, day: str) -> Path:
    return Path(home_root).joinpath(*CACHE_DIR, f"{day}.marshal")


def code_key() -> str:
    # deferred: hashing the sources costs a few tens of ms, paid only when an open day is read
    from af_pipeline.warehouse.version import code_version

    return f"{FORMAT}|{code_version()}|{sys.version}"


def prefix_sha(path: Path, length: int) -> str | None:
    """sha256 of the file's first ``length`` bytes, None if it has fewer."""
    h = hashlib.sha256()
    left = length
    try:
        with open(path, "rb") as fh:
            while left > 0:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    return None
                h.update(chunk)
                left -= len(chunk)
    except OSError:
        return None
    return h.hexdigest()


def files_state(follow: dict[str, OpenSegmentFile]) -> tuple[tuple[str, int], ...]:
    """What a document compiled now was compiled from: each kind's parsed length."""
    return tuple((k, follow[k]._offset) for k in ROW_KINDS if k in follow)


def load(home_root: Path, day: str, folder: Path) -> tuple[dict[str, OpenSegmentFile], dict[str, str], tuple[Any, ...]] | None:
    """(followers primed with the cached rows, documents by options key, the files' state they
    were compiled from), or None when there is no usable cache."""
    paused = gc.isenabled()
    gc.disable()  # tens of thousands of lists and strings, none of them in a cycle
    try:
        data = marshal.loads(cache_path(home_root, day).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        if paused:
            gc.enable()
    try:
        if not isinstance(data, dict) or data.get("code") != code_key() or data.get("day") != day:
            return None
        follow: dict[str, OpenSegmentFile] = {}
        for kind in ROW_KINDS:
            entry = data["files"][kind]
            offset, lines, sha = int(entry["offset"]), int(entry["lines"]), str(entry["sha"])
            path = folder / f"{kind}.jsonl"
            if (prefix_sha(path, offset) if offset else EMPTY) != sha:
                return None  # the file is not the one read: read everything again
            seg = OpenSegmentFile(path, kind, f"log/open/{day}/{kind}.jsonl", columnar=True)
            if seg.columns is not None:  # the store as it was, no row made or coded again
                seg.columns = type(seg.columns).restore(kind, entry["store"])
            else:
                columns = entry["columns"]  # one list per field of the row class, in order
                if not isinstance(columns, list) or len(columns) != len(NAMES[kind]) or \
                        any(type(c) is not list or len(c) != len(columns[0]) for c in columns):
                    return None
                seg.rows = build_instances(CLASS_OF[kind], columns)
            seg._problems = [SkippedLine(str(f), int(n), str(r), str(t)) for f, n, r, t in entry["problems"]]
            seg._offset, seg._lines = offset, lines
            seg._inode = path.stat().st_ino if offset else None
            follow[kind] = seg
        docs = {str(k): str(v) for k, v in data["docs"].items()}
        state = tuple((str(k), int(n)) for k, n in data["state"])
    except (KeyError, TypeError, ValueError, OSError):
        return None
    return follow, docs, state


def save(home_root: Path, day: str, follow: dict[str, OpenSegmentFile], docs: dict[str, str]) -> None:
    """Write the followers' rows and the documents compiled from exactly them. Best effort: a
    folder that cannot be written only costs the next process its speed."""
    files: dict[str, Any] = {}
    for kind in ROW_KINDS:
        seg = follow.get(kind)
        if seg is None:
            return
        sha = prefix_sha(seg.path, seg._offset) if seg._offset else EMPTY
        if sha is None:
            return
        fields = NAMES[kind]
        files[kind] = {
            "offset": seg._offset, "lines": seg._lines, "sha": sha,
            **({"store": seg.columns.dump()} if seg.columns is not None
               else {"columns": [[getattr(r, n) for r in seg.rows] for n in fields]}),
            "problems": [(s.file, s.line, s.reason, s.text) for s in seg._problems],
        }
    body = {"code": code_key(), "day": day, "files": files, "docs": dict(docs), "state": list(files_state(follow))}
    path = cache_path(home_root, day)
    try:
        for p in (path.parent.parent, path.parent):
            p.mkdir(mode=0o700, exist_ok=True)
        atomic_write(path, marshal.dumps(body), mode=0o600)
        # a day sealed or removed since (retention) keeps no copy of its rows here
        open_days = folder_days(follow[ROW_KINDS[0]].path.parent.parent)
        for old in path.parent.glob("*.marshal"):
            if old.stem not in open_days:
                old.unlink(missing_ok=True)
    except (OSError, ValueError):
        return


def folder_days(open_dir: Path) -> set[str]:
    return {p.name for p in open_dir.iterdir() if p.is_dir()} if open_dir.is_dir() else set()
