"""What every part of the log shares: the data folder's settings, the log's paths and one DuckDB
connection. The parts (manifest, dedup, lock, read, verify, seal, append) build on this class;
capture.log.EventLog combines them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from capture.home import Home
from capture.log.layout import MANIFEST, QUARANTINE
from capture.timeutil import zone

if TYPE_CHECKING:  # DuckDB is imported on first use: a reader of open days never needs it (0.1 s)
    import duckdb


class LogCore:
    """Settings, paths and the DuckDB connection of one data folder's log."""

    def __init__(self, home: Home) -> None:
        self.home = home
        settings = home.settings()
        self.tz: str = settings.tz
        self.grace_hours: float = settings.grace_hours
        self._zone = zone(self.tz)
        self.dir = home.log_dir
        self.open_dir = self.dir / "open"
        self.sealed_dir = self.dir / "sealed"
        self.manifest_path = self.dir / MANIFEST
        self.quarantine_path = self.dir / QUARANTINE
        self._con: duckdb.DuckDBPyConnection | None = None
        self._con_lock = threading.RLock()

    @contextmanager
    def _db(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One in-memory DuckDB connection per log object (connecting costs more than a day's read)."""
        with self._con_lock:
            if self._con is None:
                import duckdb

                self._con = duckdb.connect()
                # One thread: the same rows always give the same Parquet bytes.
                self._con.execute("SET threads = 1")
            yield self._con

    def close(self) -> None:
        """Release the DuckDB connection (the log object stays usable; it reconnects on demand)."""
        with self._con_lock:
            if self._con is not None:
                self._con.close()
                self._con = None
