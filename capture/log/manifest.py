"""The manifest chain: one entry per sealed segment, each holding the sha256 of the previous.

A day is sealed exactly when the manifest has an entry for it; capture that arrives later is an
amendment, a further segment chained after the day's earlier ones, which stay untouched. The
manifest only grows (an entry is one fsync'd line appended), so its parsed form is cached while
the file keeps its inode, size and mtime.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from capture.files import atomic_write
from capture.home import Home
from capture.log.core import LogCore
from capture.log.files import append_bytes, canonical_json, complete_lines
from capture.log.layout import WATERMARKS, amendment_of, is_day, segment_name
from capture.log.redaction import REDACTION
from capture.model import CAPTURE_SCHEMA_VERSION
from capture.timeutil import iso_utc


def entry_hash(entry: dict[str, Any]) -> str:
    """sha256 of a manifest entry's canonical JSON without its own ``hash`` field."""
    return hashlib.sha256(canonical_json({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


def apply_redactions(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sealed segments' entries (those naming a day), each file a later redaction record
    rewrote carrying the hash and row count that record gives it after the rewrite. The entries
    as written are left as they are (their hashes chain them)."""
    days = [e for e in entries if isinstance(e.get("day"), str)]
    records = [e for e in entries if isinstance(e.get(REDACTION), dict)]
    if not records:
        return days
    by_segment = {segment_name(e["day"], max(amendment_of(e), 0)): i for i, e in enumerate(days)}
    out = list(days)
    for rec in records:
        segments = rec[REDACTION].get("segments")
        for name, files in (segments.items() if isinstance(segments, dict) else ()):
            i = by_segment.get(name)
            if i is None or not isinstance(files, dict):
                continue  # verify() reports a record naming a segment the chain lacks
            entry = dict(out[i])
            patched = {k: dict(v) if isinstance(v, dict) else v for k, v in (entry.get("files") or {}).items()}
            for fname, change in files.items():
                if isinstance(change, dict) and isinstance(patched.get(fname), dict):
                    patched[fname]["sha256"] = change.get("after")
                    patched[fname]["rows"] = change.get("rows", patched[fname].get("rows"))
            entry["files"] = patched
            entry["redacted_by"] = [*entry.get("redacted_by", []), rec.get("seq")]
            out[i] = entry
    return out


class ManifestChain(LogCore):
    """The manifest entries, the sealed days and segments they name, and the chain's head."""

    def __init__(self, home: Home) -> None:
        super().__init__(home)
        # Parsed manifest, reused while the file keeps its inode, size and mtime (it only grows):
        # (stamp, every entry as written, the day entries with redactions applied).
        self._manifest_cache: tuple[tuple[int, int, int], list[dict[str, Any]], list[dict[str, Any]]] | None = None

    def _parsed(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        try:
            st = self.manifest_path.stat()
        except FileNotFoundError:
            return [], []
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._manifest_cache is not None and self._manifest_cache[0] == stamp:
            return self._manifest_cache[1], self._manifest_cache[2]
        every = []
        for line in complete_lines(self.manifest_path.read_bytes()):
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # verify() reports it; readers keep going with the rest
            if isinstance(entry, dict):
                every.append(entry)
        days = apply_redactions(every)
        self._manifest_cache = (stamp, every, days)
        return every, days

    def _chain(self) -> list[dict[str, Any]]:
        """Every manifest entry as written: sealed segments and redaction records, oldest first."""
        return list(self._parsed()[0])

    def _entries(self) -> list[dict[str, Any]]:
        """The sealed segments' entries, each with the files a redaction rewrote as recorded
        after it (``redacted_by`` lists those records' seq): what the segment holds now."""
        return list(self._parsed()[1])

    def redactions(self) -> list[dict[str, Any]]:
        """The redaction records of the chain, oldest first (see capture/log/forget.py)."""
        return [e for e in self._parsed()[0] if isinstance(e.get(REDACTION), dict)]

    def _sealed(self) -> dict[str, dict[str, Any]]:
        """Each sealed day's first manifest entry (a day is sealed once it has one)."""
        out: dict[str, dict[str, Any]] = {}
        for e in self._entries():
            out.setdefault(e["day"], e)
        return out

    def _chained_segments(self) -> set[str]:
        """Folder names (under sealed/) of every segment the manifest has an entry for."""
        return {segment_name(e["day"], amendment_of(e)) for e in self._entries() if amendment_of(e) >= 0}

    def day_entries(self, day: str) -> list[dict[str, Any]]:
        """The manifest entries of one day's sealed segments, oldest first (empty while open)."""
        return [e for e in self._entries() if e["day"] == day]

    def _segments(self, day: str) -> list[tuple[str, dict[str, Any]]]:
        """(folder name under sealed/, manifest entry) of each sealed segment of a day, oldest first."""
        return [(segment_name(day, max(amendment_of(e), 0)), e) for e in self.day_entries(day)]

    def segment_files(self, day: str, kind: str) -> list[Path]:
        """The sealed Parquet files of one row kind of a day, one per segment ([] while open)."""
        return [self.sealed_dir / name / f"{kind}.parquet" for name, _ in self._segments(day)]

    def manifest(self) -> list[dict[str, Any]]:
        """The manifest entries, oldest first (a day with amendments has several)."""
        return self._entries()

    def chain_entries(self) -> list[dict[str, Any]]:
        """Every entry of the chain as written, redaction records included (the chain head is
        the last one's hash; ``manifest()`` holds only the sealed segments)."""
        return self._chain()

    def chain_head(self) -> str | None:
        """Hash of the newest manifest entry (None before the first seal)."""
        entries = self._chain()
        return str(entries[-1]["hash"]) if entries else None

    def _open_days(self) -> list[str]:
        if not self.open_dir.exists():
            return []
        sealed = self._sealed()
        return sorted(
            c.name for c in self.open_dir.iterdir() if c.is_dir() and is_day(c.name) and c.name not in sealed
        )

    def _append_entry(self, day: str, amendment: int, files: dict[str, dict[str, Any]],
                      ref_sources: list[str] | None) -> None:
        """Chain the entry of a segment just moved into place after the newest entry."""
        entries = self._chain()
        entry: dict[str, Any] = {
            "seq": len(entries),
            "day": day,
            **({"amendment": amendment} if amendment else {}),
            "tz": self.tz,
            "capture_schema": CAPTURE_SCHEMA_VERSION,
            "files": dict(sorted(files.items())),
            "ref_sources": ref_sources,
            "sealed_at": iso_utc(time.time_ns() // 1000),
            "prev": entries[-1]["hash"] if entries else None,
        }
        entry["hash"] = entry_hash(entry)
        append_bytes(self.manifest_path, canonical_json(entry) + b"\n")

    def _append_redaction(self, record: dict[str, Any]) -> dict[str, Any]:
        """Chain a redaction record after the newest entry; returns the entry written."""
        entries = self._chain()
        entry = {**record, "seq": len(entries), "prev": entries[-1]["hash"] if entries else None}
        entry["hash"] = entry_hash(entry)
        append_bytes(self.manifest_path, canonical_json(entry) + b"\n")
        return entry

    # -- source watermarks ----------------------------------------------------------------------
    # Not part of the chain: a record of where each source's last complete import ended, so that
    # importing an unchanged source again can be answered without reading it. Losing the file
    # only costs a full read (refs still make the import land nothing twice).

    def source_watermark(self, source_id: str) -> dict[str, Any] | None:
        """What the last complete import of this source recorded about it (None: nothing)."""
        try:
            doc = json.loads((self.dir / WATERMARKS).read_bytes())
        except (OSError, ValueError):
            return None
        sources = doc.get("sources") if isinstance(doc, dict) else None
        mark = sources.get(source_id) if isinstance(sources, dict) else None
        return mark if isinstance(mark, dict) else None

    def record_watermark(self, source_id: str, mark: dict[str, Any]) -> None:
        """Record a source's watermark after an import of it completed (atomic; the writer holds the lock)."""
        path = self.dir / WATERMARKS
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError):
            doc = {}
        found = doc.get("sources") if isinstance(doc, dict) else None
        sources: dict[str, Any] = found if isinstance(found, dict) else {}
        sources[source_id] = mark
        atomic_write(path, canonical_json({"version": 1, "sources": dict(sorted(sources.items()))}) + b"\n")
