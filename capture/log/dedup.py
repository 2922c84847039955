"""The dedup index: a ref is one row of the log, wherever and whenever it arrives.

An append must know which of its refs the log already holds, without a cost that grows with the
log's age. Three things keep it cheap, and none changes an answer: a sealed day is only looked at
if its refs start like some of the batch's (its manifest entry lists the sources of its refs);
the refs of open days this process has read stay in memory while their files keep their sizes;
a large append checks sealed refs against an in-memory array of their hashes, and only the rare
matches exactly. An open day's refs are held as 16-byte digests (OpenRefs), not as strings: an
always-on `af sync --watch` reads them every pass, and strings cost ~125 bytes a ref.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capture.errors import UserError
from capture.home import Home
from capture.log.files import sql_list
from capture.log.layout import SOURCES_SEALED, is_day
from capture.log.manifest import ManifestChain
from capture.log.opensegments import open_row_chunks, open_sizes
from capture.log.redaction import KEY_FILE, REDACTION, folder_key, keyed_ref
from capture.log.schema import NAMES
from capture.model import ROW_KINDS
from capture.timeutil import day_bounds

if TYPE_CHECKING:  # imported on first use (capture/log/core.py)
    import duckdb

# From this many new refs in one append, refs are checked against sealed days through an in-memory
# hash index instead of a scan of every sealed day (small appends, e.g. a recorder's, just scan).
INDEX_MIN_REFS = 5_000
# A manifest entry records which source ids the day's refs start with ("ref_sources"), so an
# append only looks at sealed days that share a source with it. A day fed by more sources than
# this records null instead and is always looked at.
REF_SOURCES_MAX = 64
# A small append keeps the refs of up to this many open days in memory between calls (the recorder
# appends to today every few seconds); the refs of further open days are scanned by DuckDB.
OPEN_REFS_CACHED = 4


def drop_batch_duplicates(grouped: dict[str, dict[str, Any]]) -> int:
    """Keep one row per ref within a batch: the first in (kind, day, time, batch order).

    Candidates are found by comparing hashes in numpy (no Python set of every ref); only rows whose
    hash repeats are compared by their actual ref, so the result does not depend on hash values.
    A group may be a list of rows or a RowColumns (rows as columns).
    """
    import numpy as np

    from capture.log.columns import RowColumns

    order = [(day, kind) for kind in ROW_KINDS for day in sorted(grouped) if kind in grouped[day]]
    groups = [grouped[day][kind] for day, kind in order]
    refs = [ref for rows in groups
            for ref in (rows.refs if isinstance(rows, RowColumns) else [row.ref for row in rows])]
    if len(refs) < 2:
        return 0
    hashes = np.fromiter(map(hash, refs), dtype=np.int64, count=len(refs))
    values, counts = np.unique(hashes, return_counts=True)
    repeated = values[counts > 1]
    if not len(repeated):
        return 0
    # A group may be out of time order (one day's checked columns, which the seal sorts anyway):
    # its candidates are visited by (time, batch order), as if it had been sorted stably.
    candidates = np.flatnonzero(np.isin(hashes, repeated)).tolist()
    stamps = [ts for rows in groups
              for ts in (rows.cols["ts_us"] if isinstance(rows, RowColumns) else [row.ts_us for row in rows])]
    bounds = list(itertools.accumulate(len(rows) for rows in groups))
    candidates.sort(key=lambda i: (bisect.bisect_right(bounds, i), stamps[i], i))
    first: set[str] = set()
    losers: list[int] = []  # positions in refs
    for i in candidates:
        if refs[i] in first:
            losers.append(i)
        else:
            first.add(refs[i])
    if not losers:
        return 0
    losers.sort()
    start = 0
    lost = iter(losers)
    nxt = next(lost, None)
    for (day, kind), rows in zip(order, groups, strict=True):
        end = start + len(rows)
        drop: set[int] = set()
        while nxt is not None and nxt < end:
            drop.add(nxt - start)
            nxt = next(lost, None)
        if drop:
            keep = [i not in drop for i in range(len(rows))]
            if isinstance(rows, RowColumns):
                grouped[day][kind] = rows.where(keep)
            else:
                grouped[day][kind] = [row for row, k in zip(rows, keep, strict=True) if k]
        start = end
    return len(losers)


def ref_source_ids(con: duckdb.DuckDBPyConnection, files: list[Path], source_ids: list[str]) -> list[str] | None:
    """The source ids some ref of these files starts with (as "<id>:"), or None when a ref starts
    with none of them (or there are too many to list): then no append may skip the day."""
    ids = sorted(set(source_ids))
    if not ids or len(ids) > REF_SOURCES_MAX:
        return None
    params = [f"{s}:" for s in ids]
    tests = [f"starts_with(ref, ${i})" for i in range(1, len(ids) + 1)]
    row = con.execute(
        f"SELECT count(*) FILTER (WHERE NOT ({' OR '.join(tests)})), "
        f"{', '.join(f'bool_or({t})' for t in tests)} FROM read_parquet({sql_list(files)})",
        params,
    ).fetchall()[0]  # fetchall: fetchone would leave the result open on the shared connection
    if row[0]:
        return None
    return [s for s, hit in zip(ids, row[1:], strict=True) if hit]


# Hashes per block of the index (8 bytes each); a block that grows past twice this is split.
INDEX_BLOCK = 1 << 16
# Bytes of an open-day ref's digest (OpenRefs). Two refs with the same 128-bit BLAKE2b digest
# would be taken for one: for n refs held and m looked up, the chance is about n*m / 2**128
# (1e-29 for a day of a million rows and a million lookups), far below a disk's error rate.
REF_DIGEST_BYTES = 16
# Digests added one append at a time wait in a set until there are this many, then merge.
OPEN_REFS_PENDING = 4096


def ref_digest(ref: str) -> bytes:
    return hashlib.blake2b(ref.encode(), digest_size=REF_DIGEST_BYTES).digest()


def row_digest(kind: str, values: tuple[Any, ...]) -> bytes:
    """A digest of a row's content (its fields' values in schema order, types included)."""
    return hashlib.blake2b(repr((kind, values)).encode(), digest_size=REF_DIGEST_BYTES).digest()


class DigestSet:
    """16-byte digests in a few sorted numpy arrays ("runs", each at least twice the next one's
    size), plus a small set of recent additions.

    Why runs and not one sorted array: merging new digests into one array rebuilt it whole on
    every sync pass (np.unique hashes every item in native memory the allocator then kept): the
    watcher's RSS grew about 150 B per open-day row beyond the 16 B held. A new run is merged
    into the one before it only when that is at most twice its size, so a digest is copied
    O(log n) times in all and a pass's arrays are the size of what it added."""

    def __init__(self) -> None:
        self._runs: list[Any] = []  # sorted, disjoint numpy arrays of S16, largest first
        self._pending: set[bytes] = set()

    def __len__(self) -> int:
        self._merge()
        return sum(len(run) for run in self._runs)

    def update(self, digests: Iterable[bytes]) -> None:
        self._pending.update(digests)
        if len(self._pending) >= OPEN_REFS_PENDING:
            self._merge()

    def _held(self, want: Any) -> Any:
        """A boolean array: whether each digest of ``want`` (an S16 array) is in a run."""
        import numpy as np

        # compared as raw 16-byte records: numpy's bytes dtype drops trailing NUL bytes when it
        # hands an item back, so items are never compared as Python bytes
        asked = want.view(np.uint8).reshape(-1, REF_DIGEST_BYTES)
        out = np.zeros(len(want), dtype=bool)
        for run in self._runs:
            pos = np.minimum(run.searchsorted(want), len(run) - 1)
            out |= np.all(run.view(np.uint8).reshape(-1, REF_DIGEST_BYTES)[pos] == asked, axis=1)
        return out

    def _merge(self) -> None:
        import numpy as np

        if not self._pending:
            return
        new = np.array(sorted(self._pending), dtype=f"S{REF_DIGEST_BYTES}")
        self._pending = set()
        new = new[~self._held(new)]  # runs stay disjoint: their lengths add up to the count
        if not len(new):
            return
        runs = self._runs
        runs.append(new)
        while len(runs) > 1 and len(runs[-2]) <= 2 * len(runs[-1]):
            last = runs.pop()
            runs[-1] = np.sort(np.concatenate([runs[-1], last]), kind="stable")

    def mask(self, digests: Sequence[bytes]) -> list[bool]:
        """Whether each digest is held (one vectorised search per run instead of one per digest)."""
        import numpy as np

        if not digests:
            return []
        self._merge()
        if not self._runs:
            return [False] * len(digests)
        held: list[bool] = self._held(np.array(digests, dtype=f"S{REF_DIGEST_BYTES}")).tolist()
        return held

    def __contains__(self, digest: object) -> bool:
        if digest in self._pending:
            return True
        return isinstance(digest, bytes) and self.mask([digest])[0]


class OpenRefs:
    """The refs of one open day, and its rows' contents, as 16-byte digests: 32 bytes a row
    instead of a ref string's ~125 (and no row held), with the same answers (``ref in refs``,
    ``same_rows``) up to the digest's collision chance above."""

    def __init__(self) -> None:
        self._refs = DigestSet()
        self._rows = DigestSet()

    def __len__(self) -> int:
        return len(self._refs)

    def update(self, refs: Iterable[str]) -> None:
        self._refs.update(map(ref_digest, refs))

    def mask(self, refs: Sequence[str]) -> list[bool]:
        return self._refs.mask([ref_digest(r) for r in refs])

    def __contains__(self, ref: object) -> bool:
        return isinstance(ref, str) and ref_digest(ref) in self._refs

    def add_rows(self, kind: str, values: Iterable[tuple[Any, ...]]) -> None:
        """Note rows' contents (each a tuple of its fields in schema order)."""
        self._rows.update(row_digest(kind, v) for v in values)

    def same_rows(self, kind: str, values: Sequence[tuple[Any, ...]]) -> list[bool]:
        """Whether each row (a tuple of its fields in schema order) is, field for field, one
        the day holds. False says only "not known to be": the caller compares those exactly."""
        return self._rows.mask([row_digest(kind, v) for v in values])


class SortedHashes:
    """Sorted int64 hashes held in blocks, so that adding some copies only the blocks they join.

    One array grown by np.insert held the old and the new array at once: at the end of the
    61-day import the index was 22 MB and each day's insert took 22 MB more, at the import's peak.
    Blocks cost one small search per block and query run, as cheap as one big array's."""

    def __init__(self) -> None:
        import numpy as np

        self._blocks: list[Any] = []
        self._lows = np.empty(0, dtype=np.int64)  # the first hash of each block
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _runs(self, ordered: Any) -> list[tuple[int, int]]:
        """For each block, the slice of the sorted ``ordered`` that belongs to it (values below
        the first block's low belong to the first block)."""
        import numpy as np

        owner = np.maximum(np.searchsorted(self._lows, ordered, side="right") - 1, 0)
        cuts = np.searchsorted(owner, np.arange(len(self._blocks) + 1)).tolist()
        return list(zip(cuts, cuts[1:], strict=False))

    def add(self, new: Any) -> None:
        """Merge a sorted int64 array in."""
        import numpy as np

        if not len(new):
            return
        if not self._blocks:
            merged = [new[i:i + INDEX_BLOCK] for i in range(0, len(new), INDEX_BLOCK)]
        else:
            merged = []
            for block, (lo, hi) in zip(self._blocks, self._runs(new), strict=True):
                if lo == hi:
                    merged.append(block)
                    continue
                part = new[lo:hi]
                grown = np.insert(block, np.searchsorted(block, part), part)
                if len(grown) > 2 * INDEX_BLOCK:
                    merged.extend(grown[i:i + INDEX_BLOCK] for i in range(0, len(grown), INDEX_BLOCK))
                else:
                    merged.append(grown)
        self._blocks = merged
        self._lows = np.array([b[0] for b in merged], dtype=np.int64)
        self._n += len(new)

    def contains(self, ordered: Any) -> Any:
        """A boolean array: whether each hash of the sorted ``ordered`` is held."""
        import numpy as np

        found = np.zeros(len(ordered), dtype=bool)
        if not self._blocks:
            return found
        for block, (lo, hi) in zip(self._blocks, self._runs(ordered), strict=True):
            if lo < hi:
                q = ordered[lo:hi]
                pos = np.minimum(np.searchsorted(block, q), len(block) - 1)
                found[lo:hi] = block[pos] == q
        return found


class DedupIndex(ManifestChain):
    """Which refs the log holds: open-day ref caches, sealed-day source prefixes, the hash index."""

    def __init__(self, home: Home) -> None:
        super().__init__(home)
        # Refs of open days already read by this process, valid while the files keep their sizes.
        self._ref_cache: dict[str, tuple[tuple[int, ...], OpenRefs]] = {}
        # Sorted hashes of the refs of sealed days, built on the first large append (see _maybe_sealed).
        self._index: SortedHashes | None = None
        self._index_days: set[str] = set()
        # "<source id>:" prefixes that every ref of a sealed day starts with (None: unknown, always look).
        self._prefix_cache: dict[str, tuple[str, ...] | None] = {}
        # (the redaction records' hashes, the folder's key, keyed digests of every forgotten ref,
        # the [start, end) of every day forgotten whole, sorted)
        self._forgotten_cache: tuple[tuple[str, ...], bytes, DigestSet, list[tuple[int, int]]] | None = None

    def _forgotten(self) -> tuple[bytes, DigestSet] | None:
        """The folder's key and the keyed digests of every ref a redaction record removed or
        changed (None: nothing was ever forgotten). An append skips these refs: a forgotten row
        never lands again."""
        records = self.redactions()
        if not records:
            return None
        stamp = tuple(str(r.get("hash")) for r in records)
        if self._forgotten_cache is None or self._forgotten_cache[0] != stamp:
            self._forgotten_cache = self._read_forgotten(records, stamp)
        return self._forgotten_cache[1], self._forgotten_cache[2]

    def forgotten_days(self) -> list[tuple[int, int]]:
        """[start, end) in UTC microseconds of every day forgotten whole (af forget --day, retention):
        no row of them lands again."""
        return self._forgotten_cache[3] if self._forgotten() is not None and self._forgotten_cache else []

    def _read_forgotten(self, records: list[dict[str, Any]], stamp: tuple[str, ...]
                        ) -> tuple[tuple[str, ...], bytes, DigestSet, list[tuple[int, int]]]:
        key = folder_key(self.home.root, create=False)
        if key is None:
            raise UserError(f"{self.home.root / KEY_FILE} is missing but the log has forgotten rows: without it "
                            "an import could land them again; restore the file from a backup of this folder")
        digests = DigestSet()
        for rec in records:
            refs = rec[REDACTION].get("refs")
            path = self.dir / str(refs.get("file")) if isinstance(refs, dict) else None
            try:
                data = path.read_bytes() if path is not None else b""
            except FileNotFoundError:
                raise UserError(f"{path} is missing (run `af log verify`): without it an import could land "
                                "forgotten rows again") from None
            digests.update(data[i:i + REF_DIGEST_BYTES] for i in range(0, len(data), REF_DIGEST_BYTES))
        days = sorted({d for rec in records for d in (rec[REDACTION].get("days") or []) if isinstance(d, str) and is_day(d)})
        return stamp, key, digests, [day_bounds(d, self._zone) for d in days]

    def forgotten_mask(self, refs: Sequence[str]) -> list[bool]:
        """Whether each ref (or the event it continues, ``<ref>~...``) was forgotten."""
        found = self._forgotten()
        if found is None or not refs:
            return [False] * len(refs)
        key, digests = found
        hit = digests.mask([keyed_ref(key, r) if isinstance(r, str) else b"" for r in refs])
        based = [i for i, r in enumerate(refs) if not hit[i] and isinstance(r, str) and "~" in r]
        if based:
            for i, h in zip(based, digests.mask([keyed_ref(key, refs[i].split("~", 1)[0]) for i in based]),
                            strict=True):
                hit[i] = h
        return hit

    def keep_open_refs(self, cache: dict[str, tuple[tuple[int, ...], OpenRefs]]) -> None:
        """Read and keep open days' digests in ``cache``, shared with later logs of this process
        (``af sync --watch`` makes one per pass): a day whose files kept their sizes is not read
        again, and a pass's own rows are added as it writes them."""
        self._ref_cache = cache

    def _open_refs(self, day: str) -> OpenRefs:
        folder = self.open_dir / day
        sizes = open_sizes(folder)
        cached = self._ref_cache.get(day)
        if cached and cached[0] == sizes:
            return cached[1]
        refs = OpenRefs()
        for kind in ROW_KINDS:
            names = NAMES[kind]
            for rows in open_row_chunks(folder / f"{kind}.jsonl", kind):  # only digests are kept
                refs.update(r.ref for r in rows)
                refs.add_rows(kind, (tuple(getattr(r, n) for n in names) for r in rows))
        self._ref_cache[day] = (sizes, refs)
        return refs

    def _open_refs_held(self, day: str) -> bool:
        cached = self._ref_cache.get(day)
        return cached is not None and cached[0] == open_sizes(self.open_dir / day)

    def _sealed_refs(self, day: str) -> set[str]:
        paths = [p for kind in ROW_KINDS for p in self.segment_files(day, kind)]
        if not paths:
            return set()
        with self._db() as con:
            return {r[0] for r in con.execute(f"SELECT ref FROM read_parquet({sql_list(paths)})").fetchall()}

    def refs_present(self, refs: list[str]) -> set[str]:
        """Which of these refs the log already holds (sealed or open), with the append's own lookup."""
        return self._refs_in_log(refs)

    def _refs_in_log(self, refs: list[str]) -> set[str]:
        """Which of these refs are anywhere in the log (sealed Parquet or open segments)."""
        if not refs:
            return set()
        small = len(refs) < INDEX_MIN_REFS
        # A sealed day none of whose refs starts like one of these cannot hold any of them.
        sealed_days = self._sharing_source(sorted(self._sealed()), refs)
        open_days = self._open_days()
        found: set[str] = set()
        if open_days:
            if small:
                # Open days this process has read stay in memory (checked by file sizes), so the
                # recorder's frequent small appends do not re-read today's whole segment each time.
                held = [d for d in open_days if self._open_refs_held(d)]
                fresh = [d for d in open_days if d not in held]
                held += fresh[: max(0, OPEN_REFS_CACHED - len(held))]
                for day in held:
                    hits = self._open_refs(day).mask(refs)
                    found.update(r for r, hit in zip(refs, hits, strict=True) if hit)
                open_days = [d for d in open_days if d not in held]
            if open_days:
                found |= self._scan_refs(refs, [], open_days)
        if sealed_days:
            if small and self._index is None:
                found |= self._scan_refs(refs, sealed_days, [])
            else:
                maybe = self._maybe_sealed(refs, sealed_days)
                if maybe:
                    found |= self._scan_refs(maybe, sealed_days, [])
        return found

    def _sharing_source(self, days: list[str], refs: list[str]) -> list[str]:
        """The sealed days among ``days`` that may hold one of ``refs``, judged by source prefix."""
        out = []
        verdict: dict[tuple[str, ...], bool] = {}  # days fed by the same sources share one answer
        for day in days:
            prefixes = self._day_prefixes(day)
            if prefixes is None:
                out.append(day)
                continue
            if prefixes not in verdict:
                verdict[prefixes] = bool(prefixes) and any(r.startswith(prefixes) for r in refs)
            if verdict[prefixes]:
                out.append(day)
        return out

    def _day_prefixes(self, day: str) -> tuple[str, ...] | None:
        """"<source id>:" prefixes that every ref of a sealed day starts with, or None if unknown."""
        if day in self._prefix_cache:
            return self._prefix_cache[day]
        segments = self._segments(day)
        if not segments:
            return None
        union: set[str] = set()
        unknown = False
        for name, entry in segments:
            ids = self._segment_ref_sources(name, entry)
            if ids is None:
                unknown = True
                break
            union.update(ids)
        prefixes = None if unknown else tuple(f"{s}:" for s in sorted(union))
        self._prefix_cache[day] = prefixes
        return prefixes

    def _segment_ref_sources(self, name: str, entry: dict[str, Any]) -> list[str] | None:
        if "ref_sources" in entry:
            listed = entry["ref_sources"]
            return listed if isinstance(listed, list) and all(isinstance(s, str) for s in listed) else None
        # Sealed before manifest entries recorded it: work it out once per process from the
        # segment's sources and refs (the same computation sealing does).
        import duckdb  # on first use (capture/log/core.py)

        try:
            doc = json.loads((self.sealed_dir / name / SOURCES_SEALED).read_bytes())
            candidates = [str(s["source_id"]) for s in doc.get("sources", [])]
            with self._db() as con:
                return ref_source_ids(con, [self.sealed_dir / name / f"{k}.parquet" for k in ROW_KINDS], candidates)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, duckdb.Error):
            return None  # unreadable: look at the day every time, as verify will report it

    def _scan_refs(self, refs: list[str], sealed_days: list[str], open_days: list[str]) -> set[str]:
        """Exact lookup: scan the ref column of the given days."""
        parts = []
        if sealed_days:
            files = [p for day in sealed_days for k in ROW_KINDS for p in self.segment_files(day, k)]
            parts.append(f"SELECT ref FROM read_parquet({sql_list(files)})")
        opened = [
            self.open_dir / day / f"{k}.jsonl"
            for day in open_days
            for k in ROW_KINDS
            if (self.open_dir / day / f"{k}.jsonl").exists()
        ]
        if opened:
            parts.append(
                f"SELECT ref FROM read_json({sql_list(opened)}, "
                "format = 'newline_delimited', columns = {'ref': 'VARCHAR'})"
            )
        if not parts:
            return set()
        with self._db() as con:
            found = con.execute(
                f"SELECT DISTINCT ref FROM ({' UNION ALL '.join(parts)}) WHERE ref IN (SELECT unnest($refs))",
                {"refs": refs},
            ).fetchall()
        return {r[0] for r in found}

    def _maybe_sealed(self, refs: list[str], sealed_days: list[str]) -> list[str]:
        """Refs whose hash matches a ref of a sealed day (a superset of those present).

        Scanning every sealed day for each large append would grow with the log's age; instead
        this process keeps a sorted array of the hashes of sealed refs (8 bytes a row, extended
        as days seal) and only the rare matches are checked exactly. Python's str hash is salted
        per process, which is fine: the array never leaves the process.
        """
        import numpy as np

        missing = [day for day in sealed_days if day not in self._index_days]
        if missing:
            files = [p for day in missing for k in ROW_KINDS for p in self.segment_files(day, k)]
            with self._db() as con:
                found = con.execute(f"SELECT ref FROM read_parquet({sql_list(files)})").fetchnumpy()["ref"]
            self._index_add(missing, found.tolist())
        index = self._index
        if index is None or not len(index):
            return []
        hashes = np.fromiter(map(hash, refs), dtype=np.int64, count=len(refs))
        order = np.argsort(hashes, kind="stable")  # sorted queries search the index far faster
        ordered = hashes[order]
        hits = np.sort(order[index.contains(ordered)])
        return [refs[i] for i in hits.tolist()]

    def _index_add(self, days: list[str], refs: list[str]) -> None:
        """Merge the refs of newly sealed days into the hash index."""
        import numpy as np

        if self._index is None:
            self._index = SortedHashes()
        self._index.add(np.sort(np.fromiter(map(hash, refs), dtype=np.int64, count=len(refs))))
        self._index_days.update(days)
