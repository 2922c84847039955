"""Sealing: an open day past its end plus the grace period becomes immutable Parquet, hash-chained.

A segment is written to a staging folder, fsync'd, moved into place in one rename, and only then
chained in the manifest: a process killed before the manifest entry leaves a folder that recovery
removes (the open segment, or the source of a direct seal, is still the truth); killed after it,
the day is sealed. Files are written in each kind's total order with one DuckDB thread, so the
same rows always give the same bytes. A sealed segment is never rewritten; late capture for a
sealed day becomes its next amendment.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from typing import TYPE_CHECKING, Any

from capture.errors import UserError
from capture.log.columns import registered
from capture.log.dedup import ref_source_ids
from capture.log.files import (
    append_bytes,
    canonical_json,
    complete_lines,
    fsync_dir,
    fsync_file,
    sha256_file,
    sql_path,
)
from capture.log.layout import SOURCES_OPEN, SOURCES_SEALED, amendment_of, segment_name
from capture.log.lock import WriterLock
from capture.log.opensegments import parse_open
from capture.log.quarantine import Quarantine, Refusals
from capture.log.rows import checked_columns, empty_sql
from capture.log.schema import SELECT_SQL, SORT_SQL
from capture.model import ROW_KINDS
from capture.timeutil import day_bounds, parse_day

if TYPE_CHECKING:  # imported on first use (capture/log/core.py)
    import duckdb

HOUR_US = 3_600 * 1_000_000
# DuckDB keeps memory a query freed for the next one, up to 128 MiB by default. An import seals
# day after day on one connection, and what each seal kept added to the import's peak: returned
# at once, the 61-day import peaks about 25 MB lower (295 -> 270 MB). Its CPU cost alone is not
# measured (the import as a whole takes ~8 % more CPU than before this and the packing of held
# rows; docs/benchmarks.md).
SEAL_SETTINGS = ("SET allocator_flush_threshold = '0MB'",
                 "SET allocator_bulk_deallocation_flush_threshold = '0MB'")


def _return_freed_memory(con: duckdb.DuckDBPyConnection) -> None:
    import duckdb  # on first use (capture/log/core.py)

    for stmt in SEAL_SETTINGS:
        try:
            con.execute(stmt)
        except duckdb.Error:  # a DuckDB without the setting: it keeps its default
            pass


def _pending(con: duckdb.DuckDBPyConnection, views: contextlib.ExitStack, fresh: dict[str, Any]) -> dict[str, str]:
    """kind -> the SQL relation of the day's checked columns (registered until ``views`` closes),
    or an empty relation of the kind's columns where the day has none of it."""
    return {kind: views.enter_context(registered(con, f"pending_{kind}", kind, fresh[kind]))
            if kind in fresh else empty_sql(kind) for kind in ROW_KINDS}


class Sealing(WriterLock, Quarantine):
    """Sealing open days (when due, or on request) and sealing checked rows straight from memory."""

    def _due(self, day: str, now_us: int) -> bool:
        return day_bounds(day, self._zone)[1] + int(round(self.grace_hours * HOUR_US)) < now_us

    def seal_due(self, now_us: int | None = None) -> list[str]:
        """Seal every open day whose local end plus the grace period is before now; return them."""
        now = time.time_ns() // 1000 if now_us is None else now_us
        done = []
        with self._writing():
            for day in self._open_days():
                if self._due(day, now) and self.seal(day):
                    done.append(day)
        return done

    def seal(self, day: str) -> bool:
        """Seal one open day now. True if it sealed, False if it was already sealed."""
        try:
            parse_day(day)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        with self._writing():
            if day in self._sealed():
                return False
            folder = self.open_dir / day
            present = [k for k in ROW_KINDS if (folder / f"{k}.jsonl").exists() and (folder / f"{k}.jsonl").stat().st_size]
            if not present:
                raise UserError(f"there is no capture for {day} in the event log at {self.dir}; nothing to seal")
            sources: list[tuple[str, str]] = []
            if (folder / SOURCES_OPEN).exists():
                for ln in complete_lines((folder / SOURCES_OPEN).read_bytes()):
                    try:
                        s = json.loads(ln)
                        sources.append((str(s["source_id"]), str(s["recorder"])))
                    except (ValueError, TypeError, KeyError):
                        continue  # a damaged source note: the rows' refs still name their source
            fresh: dict[str, dict[str, list[Any]]] = {}
            refused = Refusals(f"log:open:{day}", self._store_refused)
            for kind in present:
                path = folder / f"{kind}.jsonl"
                rows, problems = parse_open(path, kind)
                for lineno, reason, text in problems:
                    refused.add(f"open segment line {reason}", row=f"line {lineno}", raw=text,
                                source=f"log/open/{day}/{kind}.jsonl", day=day)
                if rows:
                    fresh[kind] = checked_columns(kind, rows)[0]
            # Quarantined before the seal lands: a kill in between leaves the open segment (and its
            # bad lines) in place, and sealing again records the same lines once (keyed by line).
            refused.flush()
            if not fresh:
                raise UserError(f"the open segment of {day} in {folder} holds no usable row "
                                f"({refused.count} damaged lines); nothing to seal")
            with self._db() as con, contextlib.ExitStack() as views:
                self._write_sealed(con, day, _pending(con, views, fresh), sources)
            shutil.rmtree(folder)
            self._ref_cache.pop(day, None)
            return True

    def _seal_columns(self, day: str, fresh: dict[str, dict[str, list[Any]]], sources: list[tuple[str, str]],
                      amend: bool = False) -> int:
        """Seal checked in-memory rows as a segment of ``day``: its first (the day has no open
        segment) or, with ``amend``, its next amendment. Returns the amendment number."""
        k = (max(amendment_of(e) for e in self.day_entries(day)) + 1) if amend else 0
        name = segment_name(day, k)
        marker = self.dir / f".{name}.direct"  # tells recovery this seal had no open segment behind it
        append_bytes(marker, b"sealing from an import\n")
        try:
            with self._db() as con, contextlib.ExitStack() as views:
                _return_freed_memory(con)
                self._write_sealed(con, day, _pending(con, views, fresh), sources, amendment=k)
        finally:
            # Only a killed process leaves the marker behind; an error here must not let recovery
            # treat a folder this call did not create as its own half-finished seal.
            marker.unlink(missing_ok=True)
        return k

    def _write_sealed(
        self, con: duckdb.DuckDBPyConnection, day: str, relations: dict[str, str], sources: list[tuple[str, str]],
        amendment: int = 0,
    ) -> None:
        """Write a segment's Parquet files to a staging folder, move it into place, chain the manifest."""
        name = segment_name(day, amendment)
        final = self.sealed_dir / name
        if final.exists():
            raise UserError(
                f"{final} exists but the manifest has no entry for it: the log was changed by hand "
                "(run `af log verify`)"
            )
        staging = self.sealed_dir / f".{name}.staging"
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        files: dict[str, dict[str, Any]] = {}
        for kind in ROW_KINDS:
            dst = staging / f"{kind}.parquet"
            result = con.execute(
                f"COPY (SELECT {SELECT_SQL[kind]} FROM {relations[kind]} ORDER BY {SORT_SQL[kind]}) "
                f"TO '{sql_path(dst)}' (FORMAT parquet, COMPRESSION zstd)"
            ).fetchone()
            files[dst.name] = {"rows": int(result[0]) if result else 0}
        unique = sorted(set(sources))
        ref_sources = ref_source_ids(con, [staging / f"{kind}.parquet" for kind in ROW_KINDS], [s for s, _ in unique])
        doc = {
            "day": day,
            "recorders": sorted({r for _, r in unique}),
            "sources": [{"source_id": s, "recorder": r} for s, r in unique],
        }
        (staging / SOURCES_SEALED).write_bytes(canonical_json(doc) + b"\n")
        files[SOURCES_SEALED] = {"rows": len(unique)}
        for name in files:
            fsync_file(staging / name)
            files[name]["sha256"] = sha256_file(staging / name)
        fsync_dir(staging)
        os.rename(staging, final)
        fsync_dir(self.sealed_dir)
        self._append_entry(day, amendment, files, ref_sources)
        self._prefix_cache.pop(day, None)  # worked out again from every segment of the day
