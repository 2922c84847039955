"""The certification history: every certified chain head, kept so a shortened log is caught.

A certificate records the log's chain head, but a later certificate replaces it; if the newest
sealed days (their manifest lines and folders) were deleted, the remaining chain verifies and a
new certificate would simply record the shorter head. So each passing certification also
appends one line to ``<home>/certificates.jsonl`` (append-only, each line chained to the one
before by sha256), and every later verification requires the current manifest chain to extend
the last certified head: the entry at the certified position must still have that hash.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from capture.files import canonical_json, sha256_bytes
from capture.home import Home
from capture.log import EventLog

HISTORY = "certificates.jsonl"


def history_path(home: Home) -> Path:
    return home.root / HISTORY


def _hash(record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "hash"}
    return sha256_bytes(canonical_json(body).encode("utf-8"))


def read(home: Home) -> tuple[list[dict[str, Any]], list[str]]:
    """The history's records, oldest first, and the problems of the history itself."""
    path = history_path(home)
    if not path.exists():
        return [], []
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    prev: str | None = None
    for lineno, line in enumerate(path.read_bytes().splitlines(), start=1):
        where = f"{HISTORY} line {lineno}"
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError("not an object")
        except ValueError:
            problems.append(f"{where} is not a valid record (edited or damaged)")
            continue
        if rec.get("prev") != prev or rec.get("hash") != _hash(rec):
            problems.append(f"{where} was edited or a record before it was removed (broken chain link)")
        prev = rec.get("hash") if isinstance(rec.get("hash"), str) else _hash(rec)
        records.append(rec)
    return records, problems


def record(home: Home, cert: dict[str, Any]) -> None:
    """Append a passing certificate's chain head to the history (failing ones certify nothing)."""
    head = (cert.get("log") or {}).get("chain_head")
    if cert.get("verdict") != "pass" or not head:
        return
    records, _ = read(home)
    last = records[-1] if records else None
    entries = int((cert.get("log") or {}).get("entries", 0))
    if last is not None and last.get("chain_head") == head:
        return  # the same head certified again: nothing new to keep
    rec: dict[str, Any] = {
        "certified_at": cert.get("certified_at"),
        "chain_head": head,
        "entries": entries,
        "code_version": cert.get("code_version"),
        "prev": last.get("hash") if last else None,
    }
    rec["hash"] = _hash(rec)
    path = history_path(home)
    with open(path, "ab") as fh:
        fh.write(canonical_json(rec).encode("utf-8") + b"\n")
        fh.flush()
        os.fsync(fh.fileno())


def chain_problems(home: Home, log: EventLog) -> list[str]:
    """Problems if the log's chain no longer extends the last certified chain head."""
    records, problems = read(home)
    if not records:
        return problems
    last = records[-1]
    head, n = last.get("chain_head"), last.get("entries")
    entries = log.chain_entries()  # redaction records are links of the chain too
    if not isinstance(n, int) or n < 1:
        return [*problems, f"{HISTORY}: the last record has no usable entry count"]
    when = last.get("certified_at") or "?"
    if len(entries) < n:
        problems.append(
            f"the event log's manifest has {len(entries)} entries but {n} were certified on {when} "
            f"(chain head {str(head)[:12]}): sealed history was removed"
        )
    elif entries[n - 1].get("hash") != head:
        problems.append(
            f"the event log's manifest entry {n - 1} no longer has the hash certified on {when} "
            f"({str(head)[:12]}): sealed history was rewritten"
        )
    return problems
