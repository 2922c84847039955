"""The quarantine: rows that could not land, each stored once with its source, row and reason.

Nothing offered to the log is lost silently: a row refused (bad type, no usable time, a conflict
with the logged row of its ref, a damaged open-segment line) is recorded here, its raw text
bounded and typed text redacted, and counted in the append's report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from capture.log.core import LogCore
from capture.log.files import append_bytes, complete_lines
from capture.log.schema import NAMES
from capture.redact import excerpt_text, redact_row

RAW_EXCERPT = 300  # characters of a refused row kept in the quarantine for a human to read


def excerpt(kind: str, row: Any) -> str:
    """A bounded, always-encodable text of a row for the quarantine (typed text redacted)."""
    try:
        data = {n: getattr(row, n, None) for n in NAMES[kind]}
    except Exception:  # a foreign object: show what it is
        return excerpt_text(row)[:RAW_EXCERPT]
    return json.dumps(redact_row(data), ensure_ascii=True, default=repr)[:RAW_EXCERPT]


class Refusals:
    """Quarantine records of one append, written out in blocks so a huge refusal stays bounded."""

    FLUSH_EVERY = 10_000

    def __init__(self, source_id: str, sink: Callable[[list[dict[str, Any]]], int | None]):
        self.source_id = source_id
        self.sink = sink
        self.pending: list[dict[str, Any]] = []
        self.count = 0
        self.new = 0  # of count, rows the quarantine did not hold yet (a re-read row is stored once)
        self.reasons: dict[str, int] = {}

    def add(self, reason: str, *, row: str, raw: str | None = None, source: str | None = None,
            day: str | None = None) -> None:
        record: dict[str, Any] = {
            "source": source if source is not None else self.source_id,
            "source_id": self.source_id,
            "row": row,
            "reason": reason,
            "raw": None if raw is None else excerpt_text(raw)[:RAW_EXCERPT],  # redacted whoever built it
        }
        if day is not None:
            record["day"] = day
        self.pending.append(record)
        self.count += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        if len(self.pending) >= self.FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.new += self.sink(self.pending) or 0
            self.pending = []


def quarantine_key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(row.get("source_id")), str(row.get("source")), str(row.get("row")), str(row.get("reason")))


class Quarantine(LogCore):
    """Reading and writing quarantine.jsonl."""

    def quarantine_rows(self) -> list[dict[str, Any]]:
        """Every quarantined row: source, row locator, reason, raw excerpt and, when known, day."""
        if not self.quarantine_path.exists():
            return []
        out = []
        for line in complete_lines(self.quarantine_path.read_bytes()):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def _append_quarantine(self, rows: list[dict[str, Any]], seen: set[tuple[str, str, str, str]]) -> int:
        """Store quarantined rows once: re-importing the same source does not repeat them.
        Returns how many were new."""
        fresh: list[bytes] = []
        for r in rows:
            key = quarantine_key(r)
            if key not in seen:
                seen.add(key)
                # ASCII-escaped: a raw excerpt may hold text that is not valid UTF-8.
                fresh.append(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode() + b"\n")
        append_bytes(self.quarantine_path, b"".join(fresh))
        return len(fresh)

    def _store_refused(self, rows: list[dict[str, Any]]) -> int:
        seen = {quarantine_key(r) for r in self.quarantine_rows()}
        return self._append_quarantine(rows, seen)
