"""The capture event log: append-only, one segment per local day, sealed and hash-chained.

Layout under ``<home>/log/`` (docs/event-log.md describes it for users)::

    open/<day>/<kind>.jsonl        rows of a day still open, one JSON object a line, fsync'd
    open/<day>/sources.jsonl       which source / recorder contributed to that day
    sealed/<day>/<kind>.parquet    a sealed day: one Parquet file per row kind, sorted, never rewritten
    sealed/<day>/sources.json      the sealed day's sources and recorders
    manifest.jsonl                 one entry per sealed day, each chained to the previous by sha256
    quarantine.jsonl               rows that could not land, with their reason
    .lock                          held (flock) by the one process writing

A day is sealed exactly when the manifest has an entry for it. Writes are ordered so that a
process killed at any instant leaves a log that reads correctly and that the next writer repairs:
an open segment's torn last line is cut back to the last complete record; a half-finished seal is
either kept (its manifest entry landed) or undone (it did not).

``EventLog`` is the one object people use. It is made of parts, one job and one module each,
every part building only on those before it:

    core.py          settings, paths, the DuckDB connection            (LogCore)
    manifest.py      the manifest chain, sealed days and segments      (ManifestChain)
    dedup.py         which refs the log holds, kept cheap              (DedupIndex)
    lock.py          one writer at a time; crash recovery              (WriterLock)
    quarantine.py    rows that could not land, with their reason       (Quarantine)
    read.py          days and their rows in one total order            (Reading)
    verify.py        the chain walked, every sealed file re-hashed     (Verifying)
    seal.py          open days made immutable, amendments              (Sealing)
    append.py        batches landed, skipped, refused                  (Appending)
    forget.py        selected rows removed, with a redaction record    (Forgetting)

and stateless helpers: redaction.py (keyed hashes of what was forgotten), layout.py (names on disk), files.py (durable writes), schema.py (column
types and sort orders), rows.py (row checks, columns and back), columns.py (rows given as columns,
as an import hands them over, and their hand-over to DuckDB), opensegments.py (reading open/).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from capture.errors import UserError
from capture.log import append, dedup, files
from capture.log.append import AppendReport
from capture.log.forget import ForgetPlan, Forgetting, Selection
from capture.log.layout import amendment_of, parse_segment_name, segment_name
from capture.log.manifest import entry_hash
from capture.log.read import DEFERRED, DayStatus, ElementsBySnapshot
from capture.log.rows import FetchedRows, build_instances, column_values
from capture.log.rows import in_order as _in_order  # noqa: F401 - tests/test_log_read.py checks it directly
from capture.log.schema import COLUMNS, NAMES, SELECT_SQL, SORT_SQL, TS_MAX_US, TS_MIN_US, sort_key
from capture.log.verify import Verifying, VerifyReport
from capture.timeutil import local_day


class EventLog(Forgetting, Verifying):
    """The append-only capture log of one data folder (its parts: the module docstring)."""


# Tunables a test or benchmark may set on this package (``capture.log.FSYNC = False``); each lives
# in the module that reads it, and setting it here sets it there.
_TUNABLES: dict[str, types.ModuleType] = {
    "FSYNC": files, "INDEX_MIN_REFS": dedup, "OPEN_REFS_CACHED": dedup, "BULK_ROWS": append,
}

if TYPE_CHECKING:
    FSYNC: bool
    INDEX_MIN_REFS: int
    OPEN_REFS_CACHED: int
    BULK_ROWS: int


def _forwarded(name: str, home: types.ModuleType) -> property:
    def get(_pkg: Any) -> Any:
        return getattr(home, name)

    def put(_pkg: Any, value: Any) -> None:
        setattr(home, name, value)

    return property(get, put)


class _Package(types.ModuleType):
    pass


for _name, _home in _TUNABLES.items():
    setattr(_Package, _name, _forwarded(_name, _home))
sys.modules[__name__].__class__ = _Package

__all__ = [
    "COLUMNS",
    "DEFERRED",
    "NAMES",
    "SELECT_SQL",
    "SORT_SQL",
    "Selection",
    "TS_MAX_US",
    "TS_MIN_US",
    "AppendReport",
    "DayStatus",
    "ElementsBySnapshot",
    "EventLog",
    "ForgetPlan",
    "FetchedRows",
    "UserError",
    "VerifyReport",
    "amendment_of",
    "build_instances",
    "column_values",
    "entry_hash",
    "local_day",
    "parse_segment_name",
    "segment_name",
    "sort_key",
]
