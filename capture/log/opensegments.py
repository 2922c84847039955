"""Open segments (open/<day>/<kind>.jsonl), read tolerantly.

A damaged or hand-edited line, or one written by a newer capture schema, is reported with its
line number and left out; every other row is served. Sealing quarantines the reported lines.
"""

from __future__ import annotations

import json
from operator import attrgetter
from pathlib import Path
from typing import Any

from capture.log.quarantine import excerpt
from capture.log.rows import columns_ok, row_problem
from capture.log.schema import NAMES, REQUIRED
from capture.model import CAPTURE_SCHEMA_VERSION, CLASS_OF, ROW_KINDS


def parse_open(path: Path, kind: str) -> tuple[list[Any], list[tuple[int, str, str]]]:
    """The rows of an open segment file, and its lines that are not rows: (line, reason, text).

    Read tolerantly: a damaged or hand-edited line, or one written by a newer capture schema
    (fields this version does not know), is reported and left out; every other row is served.
    Sealing quarantines the reported lines with their file and line number.
    """
    if not path.exists():
        return [], []
    cls = CLASS_OF[kind]
    known = NAMES[kind]
    known_set = frozenset(known)
    rows: list[Any] = []
    linenos: list[int] = []
    problems: list[tuple[int, str, str]] = []
    data = path.read_bytes()
    end = data.rfind(b"\n")  # a torn tail is not a record (the next writer cuts it)
    for lineno, line in enumerate(data[: end + 1].split(b"\n")[:-1] if end >= 0 else [], start=1):
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            problems.append((lineno, f"is not valid JSON ({getattr(exc, 'msg', exc)})",
                             line.decode("utf-8", "replace")))
            continue
        if not isinstance(obj, dict):
            problems.append((lineno, "is not a JSON object", line.decode("utf-8", "replace")))
            continue
        if obj.keys() != known_set:
            extra = sorted(set(obj) - known_set)
            # A field added to the schema later is absent from an older writer's lines: its default.
            missing = sorted(n for n in known_set - set(obj) if n in REQUIRED[kind])
            why = []
            if extra:
                why.append(f"has fields capture schema v{CAPTURE_SCHEMA_VERSION} does not know "
                           f"({', '.join(extra[:5])}: written by a newer version?)")
            if missing:
                why.append(f"lacks the fields {', '.join(missing[:5])}")
            if why:
                problems.append((lineno, "; ".join(why), line.decode("utf-8", "replace")))
                continue
            rows.append(cls(**obj))
            linenos.append(lineno)
            continue
        rows.append(cls(**{n: obj[n] for n in known}))
        linenos.append(lineno)
    if rows and not columns_ok(kind, {n: list(map(attrgetter(n), rows)) for n in known}):
        good = []
        for row, lineno in zip(rows, linenos, strict=True):
            problem = row_problem(kind, row)
            if problem is None:
                good.append(row)
            else:
                problems.append((lineno, f"{kind} row {problem}", excerpt(kind, row)))
        rows = good
        problems.sort()
    return rows, problems


def open_sizes(folder: Path) -> tuple[int, ...]:
    return tuple(
        (folder / f"{k}.jsonl").stat().st_size if (folder / f"{k}.jsonl").exists() else -1 for k in ROW_KINDS
    )
