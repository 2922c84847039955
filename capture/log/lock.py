"""One writer at a time, and crash recovery when it starts.

Threads of one process queue on a lock; processes meet at an flock on ``log/.lock``, which names
the holder so a second writer is refused with a sentence, not blocked. Whoever takes the lock
first repairs what a killed writer left behind: a torn last line is cut back to the last complete
record; a half-finished seal is either kept (its manifest entry landed) or undone (it did not).
Recovery never touches a sealed segment the manifest names.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from capture.errors import UserError
from capture.home import Home
from capture.log.dedup import DedupIndex
from capture.log.files import truncate_torn_tail
from capture.log.layout import LOCK, parse_segment_name


class WriterLock(DedupIndex):
    """The writer lock (re-entrant within one log object) and the recovery run on taking it."""

    def __init__(self, home: Home) -> None:
        super().__init__(home)
        self._lock_depth = 0
        self._thread_lock = threading.RLock()

    @contextmanager
    def _writing(self) -> Iterator[list[str]]:
        """Hold the writer lock (re-entrant within this object); yield the recovery notes."""
        with self._thread_lock:  # threads of one process queue here; processes meet at the flock
            if self._lock_depth:
                self._lock_depth += 1
                try:
                    yield []
                finally:
                    self._lock_depth -= 1
                return
            with self._process_lock() as notes:
                yield notes

    @contextmanager
    def writing(self) -> Iterator[list[str]]:
        """Hold the writer lock across several appends (a source landed day batch by day batch),
        so no other writer can take the log between them; yields the recovery notes."""
        with self._writing() as notes:
            yield notes

    @contextmanager
    def _process_lock(self) -> Iterator[list[str]]:
        self.dir.mkdir(parents=True, exist_ok=True)
        fh = open(self.dir / LOCK, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise UserError(
                f"the event log at {self.dir} is being written by {holder}; wait for it to finish and retry"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"process {os.getpid()}\n")
        fh.flush()
        self._lock_depth = 1
        try:
            yield self._recover()
        finally:
            self._lock_depth = 0
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()

    def _recover(self) -> list[str]:
        """Repair what a killed writer left behind. Never touches a sealed day's files."""
        notes: list[str] = []
        for path in (self.manifest_path, self.quarantine_path):
            if path.exists():
                cut = truncate_torn_tail(path)
                if cut:
                    notes.append(f"{path.name}: removed an incomplete last record ({cut} bytes)")
        sealed_days = set(self._sealed())
        chained = self._chained_segments()
        if self.sealed_dir.exists():
            for child in sorted(self.sealed_dir.iterdir()):
                parsed = parse_segment_name(child.name)
                if child.name.startswith(".") and child.name.endswith(".staging"):
                    shutil.rmtree(child)
                    notes.append(f"day {child.name[1:-8]}: removed an unfinished seal")
                elif child.is_dir() and parsed is not None and child.name not in chained:
                    day, k = parsed
                    direct = self.dir / f".{child.name}.direct"
                    if direct.exists() or (k == 0 and (self.open_dir / day).is_dir()):
                        # Moved into place but its manifest entry never landed: not sealed. The open
                        # segment (or the source, for a segment sealed straight from an import) is the truth.
                        shutil.rmtree(child)
                        direct.unlink(missing_ok=True)
                        what = "seal" if k == 0 else f"amendment {k}"
                        notes.append(f"day {day}: undid a {what} interrupted before its manifest entry")
        for marker in sorted(self.dir.glob(".*.direct")):
            marker.unlink()
        if self.open_dir.exists():
            for child in sorted(self.open_dir.iterdir()):
                if not child.is_dir():
                    continue
                if child.name in sealed_days:
                    shutil.rmtree(child)
                    notes.append(f"day {child.name}: removed the open segment of a day already sealed")
                    continue
                for pending in sorted(child.glob(".*.pending")):
                    pending.unlink()
                    notes.append(f"day {child.name}: removed an unfinished write ({pending.name})")
                for f in sorted(child.glob("*.jsonl")):
                    cut = truncate_torn_tail(f)
                    if cut:
                        notes.append(f"day {child.name}: {f.name}: removed an incomplete last record ({cut} bytes)")
        if notes:
            self._ref_cache.clear()
        return notes
