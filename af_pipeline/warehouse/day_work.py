"""The per-day work of the day assets, as plain functions over one warehouse connection.

Each function does one asset's work for one day: compute its part, replace the day in its
table, and return the day's numbers (plain values; assets/day_assets.py turns them into Dagster
metadata). No Dagster here: the assets are thin loops over these, and certification's
independent rebuild calls the same functions day by day (``build_day``) without paying for an
orchestrator it does not need.

The way of one day's data, each step building on the one before (the compiler's phases,
af_pipeline/compiler/compile.py):

    raw_day          log -> raw_* (the day's sealed files registered, or its rows copied)
    frames           the day's rows, read once -> compile.frame_day (timeline, credit, frames)
    enriched_input   + enrich.attribute_input (attribution, click resolution) -> the table
    page_refs        + entities.type_url per URL of those rows
    day_document     compile.assemble(frames, attribution, page types) -> canonical JSON
    context_block    the document -> the block
    published_day    the document and the block -> files

How results pass between steps: in memory, per run (``RunParts``), with the warehouse tables as
the source of truth. The tables cannot carry what the next phase needs without becoming a second
copy of the raw rows (the document needs every row's credit, owner frame and evidence ref), and a
Python object passed in memory costs nothing to hand on. It is safe because every run holds the
data folder's warehouse lock for its whole length (assets/instance.py) and runs its steps in one
process (the in-process executor): within a run nobody else writes the raw tables, and a run
that reloads a day (raw_day) drops what it held for it. A new run starts empty. A step that
finds nothing carried (it was materialized alone, or its day was not admitted because the run
holds more rows than ``CARRY_MAX_ROWS``) computes the earlier phases again from the warehouse:
the same functions on the same rows, so the same bytes, only slower. A day's capture is read
from the warehouse once per run (store.LOADS counts the reads, for tests and benchmarks).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from af_pipeline.compiler.categories import CategoryRules
from af_pipeline.compiler.compile import frame_day
from af_pipeline.compiler.emit import DEFAULT_BUDGET
from af_pipeline.compiler.enrich import attribute_input, enrich_columns
from af_pipeline.warehouse import publish, quality, store
from capture.log import EventLog

if TYPE_CHECKING:  # the compiler (numpy, the entity tables) loads when a step first runs
    from af_pipeline.compiler.compile import Framing
    from af_pipeline.compiler.enrich import Attribution
    from af_pipeline.warehouse.parallel_days import DayPrefetch
    from capture.model import DayCapture

CONTEXT_BUDGET_TOKENS = DEFAULT_BUDGET  # the recompile check renders with the same budget
PREVIEW_CHARS = 4000  # the context block preview in the UI; the full block is in published/

FRAMES = "frames"
ENRICHED = "enriched_input"
PAGE_REFS = "page_refs"
DOCUMENTS = "day_document"
CONTEXTS = "context_block"
PUBLISHED = "published_day"
SNAPSHOTS_ONLY = ("snapshots",)
ENRICH_KINDS = ("snapshots", "inputs", "elements", "streams")  # what enrich() reads

FRAME_COLUMNS = {
    "frame_id": "VARCHAR",  # <stream>:<ref of the first snapshot>: unique within a day
    "stream": "VARCHAR",
    "app": "VARCHAR",
    "site": "VARCHAR",
    "start_us": "BIGINT",
    "end_us": "BIGINT",
    "wall_us": "BIGINT",
    "active_us": "BIGINT",
    "snapshots": "BIGINT",
    "interruptions": "BIGINT",
    "first_ref": "VARCHAR",
    "last_ref": "VARCHAR",
}
ENRICHED_COLUMNS = {
    "ref": "VARCHAR",
    "ts_us": "BIGINT",
    "kind": "VARCHAR",
    "stream": "VARCHAR",
    "snapshot_ref": "VARCHAR",
    "distance_ms": "BIGINT",
    "app": "VARCHAR",
    "window": "VARCHAR",
    "url": "VARCHAR",
    "target_name": "VARCHAR",
    "target_role": "VARCHAR",
    "resolution": "VARCHAR",
    "key_text": "VARCHAR",  # typed content: NULL unless the operator opted in at build time
}
PAGE_COLUMNS = {"url": "VARCHAR", "snapshots": "BIGINT", "site": "VARCHAR", "page": "VARCHAR"}
# The document itself is a file named by its sha256 (store.write_document): not a column, whose
# compressed row group DuckDB rewrote at each checkpoint, a cost growing with the history.
DOCUMENT_COLUMNS = {
    "sha256": "VARCHAR",
    "frames": "BIGINT",
    "active_min": "DOUBLE",
    "tokens": "BIGINT",
    "sealed": "BOOLEAN",
}
INLINE_DOCUMENT = "canonical_json"  # the column of warehouses written before document files
CONTEXT_COLUMNS = {"text": "VARCHAR", "sha256": "VARCHAR", "tokens": "BIGINT"}

# A run keeps the parts of at most this many capture rows (snapshots, inputs, presence, streams)
# in memory at once, about 0.4 GB: a nightly day or a range of weeks. Days beyond it are not
# carried; their steps read the warehouse again.
CARRY_MAX_ROWS = 1_000_000


@dataclass
class DayParts:
    """What the steps of one day have computed so far in this run."""

    capture: DayCapture
    rows: int
    framing: Framing | None = None
    attribution: Attribution | None = None
    page_types: dict[str, tuple[str, str | None]] | None = None
    document: tuple[dict[str, Any], str, str, int, bool] | None = None  # doc, canonical, sha, tokens, sealed
    context: str | None = None  # the context block's text


class RunParts:
    """The parts one run's steps hand each other, per day (see the module docstring)."""

    def __init__(self, max_rows: int = CARRY_MAX_ROWS):
        self.max_rows = max_rows
        self._days: dict[str, DayParts] = {}
        self._rows = 0
        self.prefetch: DayPrefetch | None = None
        self._trusted: dict[str, bool] = {}  # day -> the workers' capture is the warehouse's

    def start_prefetch(
        self, root: Path | str, days: Sequence[str], include_typed_text: bool, categories: CategoryRules | None,
        min_days: int | None = None,
    ) -> DayPrefetch | None:
        """Compute these days' parts in worker processes (parallel_days), for a range of at least
        ``min_days`` days (parallel_days.MIN_DAYS); a shorter range keeps the serial path."""
        from af_pipeline.warehouse import parallel_days

        enough = len(days) >= (parallel_days.MIN_DAYS if min_days is None else min_days)
        if self.prefetch is None and enough and parallel_days.worker_count() > 0:
            self.prefetch = parallel_days.DayPrefetch(root, days, include_typed_text, categories, self.max_rows)
        return self.prefetch

    def close(self) -> None:
        if self.prefetch is not None:
            self.prefetch.close()

    def prefetched(
        self, con: duckdb.DuckDBPyConnection, day: str, piece: str, include_typed_text: bool | None = None,
        categories: CategoryRules | None | str = "",
    ) -> Any | None:
        """A step's part of the day as a worker computed it, or None: no worker has the day, or its
        capture or options are not the ones this step would use (then the step computes it)."""
        pre = self.prefetch
        if pre is None:
            return None
        found = pre.result(day)  # waits for the day's worker; raises the worker's error
        if found is None:
            return None
        trusted = self._trusted.get(day)
        if trusted is None:
            # sealed days only: an open day's rows may have grown since the worker read them
            trusted = found["provenance"][1] and found["provenance"] == _provenance(con, day)
            self._trusted[day] = trusted
        value = pre.take(day, piece)
        if include_typed_text is not None and include_typed_text != pre.include_typed_text:
            trusted = False
        if categories != "" and categories != pre.categories:
            trusted = False
        if not trusted:  # the day's later parts build on this one: none of them is used either
            self._trusted[day] = False
            return None
        return value

    def drop(self, day: str) -> None:
        gone = self._days.pop(day, None)
        if gone is not None:
            self._rows -= gone.rows

    def held(self, day: str) -> DayParts | None:
        return self._days.get(day)

    def day(self, con: duckdb.DuckDBPyConnection, day: str) -> DayParts:
        """The day's parts, reading its capture from the warehouse if this run has not yet."""
        parts = self._days.get(day)
        if parts is not None:
            store.bind_elements(con, parts.capture)  # the connection that read it may be closed
            return parts
        capture = store.load_capture(con, day, lazy_elements=True)
        rows = sum(capture.count(k) for k in ("snapshots", "inputs", "presence", "streams"))
        parts = DayParts(capture, rows)
        if self._rows + rows <= self.max_rows:
            self._days[day] = parts
            self._rows += rows
        return parts

    def framing(self, con: duckdb.DuckDBPyConnection, day: str) -> tuple[DayParts, Framing]:

        parts = self.day(con, day)
        if parts.framing is None:
            parts.framing = frame_day(parts.capture)
        return parts, parts.framing

    def attribution(self, con: duckdb.DuckDBPyConnection, day: str) -> tuple[DayParts, Framing, Attribution]:

        parts, framing = self.framing(con, day)
        if parts.attribution is None:
            parts.attribution = attribute_input(parts.capture, framing.rows.index)
        return parts, framing, parts.attribution


def _provenance(con: duckdb.DuckDBPyConnection, day: str) -> tuple[str, bool, list[str], dict[str, str]] | None:
    """(tz, sealed, recorders, segment sha256s) raw_day recorded for the day (parallel_days.Provenance)."""
    row = con.execute(f"SELECT tz, sealed, recorders, segment_hashes FROM {store.RAW_DAYS} WHERE day = ?",
                      [day]).fetchone()
    if row is None:
        return None
    return str(row[0]), bool(row[1]), list(json.loads(row[2])), dict(json.loads(row[3]))


_RUN: tuple[str, RunParts] | None = None


def run_parts(run_id: str) -> RunParts:
    """The parts of this Dagster run; a new run starts empty (one run holds the warehouse at a time)."""
    global _RUN
    if _RUN is None or _RUN[0] != run_id:
        if _RUN is not None:
            _RUN[1].close()  # workers an earlier run left (it failed before its last step)
        _RUN = (run_id, RunParts())
    return _RUN[1]



def _site_of() -> Callable[[str | None], str | None]:
    from af_pipeline.compiler.entities import site_of  # the suffix list (~0.6 s): only when a step runs

    return site_of


def frame_rows(refs: Sequence[str], segments: Iterable[Any]) -> list[tuple]:
    """The frames table's rows of the segments; ``refs``: the snapshots' refs by position."""
    rows = []
    for seg in segments:
        app, site = seg.key
        first, last = refs[seg.rows[0]], refs[seg.rows[-1]]
        rows.append(
            (
                f"{seg.stream}:{first}",
                seg.stream,
                app,
                site,
                seg.start_us,
                seg.end_us,
                seg.end_us - seg.start_us,
                seg.active_us,
                len(seg.rows),
                len(seg.interruptions),
                first,
                last,
            )
        )
    return rows


def raw_day(con: duckdb.DuckDBPyConnection, log: EventLog, day: str, run: RunParts | None = None,
            include_typed_text: bool = False) -> dict[str, Any]:
    if run is not None:
        run.drop(day)  # what this run held for the day was read before this reload
    # typed text stays in the log unless the build opts in (store.TYPED_KINDS)
    loaded = store.load_raw_day(con, log, day, include_typed_text)
    counts = loaded["counts"]
    return {f"rows_{k}": int(v) for k, v in counts.items()} | {
        "rows_total": int(sum(counts.values())),
        "sealed": bool(loaded["sealed"]),
        "recorders": ", ".join(loaded["recorders"]) or "-",
    }


def frames(con: duckdb.DuckDBPyConnection, day: str, run: RunParts | None = None) -> dict[str, Any]:
    """The document's own frames (compile.frame_day: afk time is out of their active time)."""
    ready = run.prefetched(con, day, FRAMES) if run is not None else None
    if ready is not None:
        rows, meta = ready
    else:
        _parts, framing = (run or RunParts()).framing(con, day)
        rows, meta = frames_part(framing)
    store.replace_day(con, FRAMES, day, FRAME_COLUMNS, rows)
    return meta


def frames_part(framing: Framing) -> tuple[list[tuple], dict[str, Any]]:
    """The frames table's rows of a day and its numbers (pure: a day worker computes it too)."""
    rows = frame_rows(framing.rows.index.col("ref"), framing.timeline.segments)
    active_us = sum(r[7] for r in rows)
    return rows, {
        "frames": len(rows),
        "active_minutes": round(active_us / 60e6, 2),
        "streams": len({r[1] for r in rows}),
    }


def enriched_input(
    con: duckdb.DuckDBPyConnection, day: str, include_typed_text: bool, run: RunParts | None = None
) -> dict[str, Any]:
    ready = run.prefetched(con, day, ENRICHED, include_typed_text) if run is not None else None
    if ready is not None:
        rows, meta = ready
    else:
        parts, _framing, attribution = (run or RunParts()).attribution(con, day)
        rows, meta = enriched_part(parts.capture, attribution, include_typed_text)
    store.replace_day_columns(con, ENRICHED, day, ENRICHED_COLUMNS, rows)
    return meta


def enriched_part(
    capture: DayCapture, attribution: Attribution, include_typed_text: bool
) -> tuple[list[list[Any]], dict[str, Any]]:
    """The enriched_input columns of a day (ENRICHED_COLUMNS order) and its numbers (pure)."""
    by_name = enrich_columns(capture, attribution, typed_text=include_typed_text)  # no object per event
    cols = [by_name[name] for name in ENRICHED_COLUMNS]
    by_res = Counter(by_name["resolution"])
    return cols, {"events": len(by_name["ref"])} | {f"resolution_{k}": v for k, v in sorted(by_res.items())}


def page_refs(con: duckdb.DuckDBPyConnection, day: str, run: RunParts | None = None) -> dict[str, Any]:
    ready = run.prefetched(con, day, PAGE_REFS) if run is not None else None
    if ready is not None:
        rows, meta = ready
        store.replace_day(con, PAGE_REFS, day, PAGE_COLUMNS, rows)
        return meta
    held = run.held(day) if run is not None else None
    if held is not None:  # the rows this run read for the day
        counts = url_counts(held.capture)
    else:
        store.load_capture(con, day, ())  # the day must have been loaded: a clear error if not
        counts = dict(
            con.execute(  # counted in the warehouse: no snapshot objects for a URL tally
                f"SELECT url, count(*) FROM {store.day_relation(con, day, 'snapshots')} "
                "WHERE url IS NOT NULL AND url <> '' GROUP BY url",
            ).fetchall()
        )
    rows, types, meta = page_part(counts)
    store.replace_day(con, PAGE_REFS, day, PAGE_COLUMNS, rows)
    if held is not None:
        held.page_types = types  # the document types no URL again
    return meta


def url_counts(capture: DayCapture) -> dict[str, int]:
    (urls,) = capture.values("snapshots", ("url",))
    return dict(Counter(u for u in urls if u))


def page_part(
    counts: dict[str, int],
) -> tuple[list[tuple], dict[str, tuple[str, str | None]], dict[str, Any]]:
    """The page_refs rows of a day's URL counts, each URL's (kind, entity), the numbers (pure)."""
    from af_pipeline.compiler.entities import type_url  # the suffix list (~0.6 s): only when a step runs

    site_of = _site_of()
    rows = []
    kinds: dict[str, int] = {}
    types: dict[str, tuple[str, str | None]] = {}
    for url in sorted(counts):
        ref = type_url(url)
        types[url] = (ref.kind, ref.entity)
        page = store.canonical_json(_plain(ref))
        kind = str(getattr(ref, "kind", "page"))
        kinds[kind] = kinds.get(kind, 0) + 1
        rows.append((url, counts[url], site_of(url), page))
    generic = sum(v for k, v in kinds.items() if k in ("page", "generic"))
    return rows, types, {
        "urls": len(rows),
        "kinds": len(kinds),
        "typed_share": round(1 - generic / len(rows), 3) if rows else 0.0,
    }


def day_document(
    con: duckdb.DuckDBPyConnection, day: str, include_typed_text: bool, run: RunParts | None = None,
    categories: CategoryRules | None = None,
) -> dict[str, Any]:
    """The document assembled from the day's frames, attribution and page types (compile.assemble)."""
    ready = run.prefetched(con, day, DOCUMENTS, include_typed_text, categories) if run is not None else None
    if ready is not None:
        body, sha, n_tokens, meta = ready
        parts = None
    else:
        parts, framing, attribution = (run or RunParts()).attribution(con, day)
        body, sha, n_tokens, meta = document_part(
            parts.capture, framing, attribution, include_typed_text, categories, parts.page_types)
    canonical = body.decode("utf-8")
    store.move_text_to_documents(con, DOCUMENTS, INLINE_DOCUMENT)  # an older warehouse, once
    store.write_document(con, day, sha, body)  # before the row that names it is committed
    store.replace_day(
        con, DOCUMENTS, day, DOCUMENT_COLUMNS,
        [(sha, meta["frames"], meta["active_minutes"], n_tokens, meta["sealed"])],
    )
    store.after_commit(con, lambda: store.drop_other_documents(con, day, keep=sha))
    _remember(sha, canonical)
    if parts is not None:
        # later steps read the document as stored (canonical JSON: sorted keys), never the dict built here
        parts.document = (json.loads(canonical), canonical, sha, n_tokens, meta["sealed"])
        parts.framing = parts.attribution = None  # no later step needs them
    return meta


def document_part(
    capture: DayCapture, framing: Framing, attribution: Attribution, include_typed_text: bool,
    categories: CategoryRules | None, page_types: dict[str, tuple[str, str | None]] | None,
) -> tuple[bytes, str, int, dict[str, Any]]:
    """The day's canonical document bytes, their sha256, their tokens and the step's numbers (pure)."""
    from af_pipeline.compiler import tokens
    from af_pipeline.compiler.compile import CompileOptions, assemble
    from af_pipeline.compiler.emit import canonical_bytes

    doc = assemble(capture, framing, attribution,
                   CompileOptions(include_typed_text=include_typed_text, categories=categories),
                   page_types=page_types)
    body = canonical_bytes(doc)
    sha = hashlib.sha256(body).hexdigest()
    n_tokens = tokens.count(body.decode("utf-8"))
    active = float(doc["coverage"]["active_min"])
    return body, sha, n_tokens, {
        "frames": len(doc["frames"]),
        "active_minutes": active,
        "document_tokens": n_tokens,
        "canonical_sha256": sha,
        "sealed": bool(capture.sealed),
    }


def context_block(
    con: duckdb.DuckDBPyConnection, day: str, run: RunParts | None = None, measure_raw: bool = True
) -> dict[str, Any]:
    """The day's context block; ``preview`` in the result is its first PREVIEW_CHARS (Markdown).

    ``measure_raw`` adds what an agent would read instead (the day's rows as a search API returns
    them, in tokens) to the result: a measurement for people, not part of the table, so the
    certification rebuild, which only compares tables and files, skips it."""
    from af_pipeline.compiler.emit import raw_rows_tokens

    ready = run.prefetched(con, day, CONTEXTS) if run is not None else None
    if ready is not None:
        text, n, sha, meta = ready
        store.replace_day(con, CONTEXTS, day, CONTEXT_COLUMNS, [(text, sha, n)])
        return meta if measure_raw else {k: v for k, v in meta.items() if k not in RAW_KEYS}
    held = run.held(day) if run is not None else None
    if held is not None and held.document is not None:
        doc, doc_tokens = held.document[0], held.document[3]
    else:
        doc, doc_tokens = document(con, day)
    text, n, sha, meta = context_part(doc, doc_tokens)
    store.replace_day(con, CONTEXTS, day, CONTEXT_COLUMNS, [(text, sha, n)])
    if measure_raw:
        capture = held.capture if held is not None else store.load_capture(con, day, SNAPSHOTS_ONLY)
        meta |= raw_part(raw_rows_tokens(capture), n)
    if held is not None:
        held.context = text
    return meta


RAW_KEYS = ("raw_rows_tokens", "reduction_vs_raw_rows")


def raw_part(raw: int, n: int) -> dict[str, Any]:
    return {"raw_rows_tokens": raw, "reduction_vs_raw_rows": round(raw / n, 1) if n else 0.0}


def context_part(doc: dict[str, Any], doc_tokens: int) -> tuple[str, int, str, dict[str, Any]]:
    """The context block of a document: (text, tokens, sha256, the step's numbers) (pure)."""
    from af_pipeline.compiler import emit, tokens

    text = emit.context_block(doc, CONTEXT_BUDGET_TOKENS)
    n = tokens.count(text)
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return text, n, sha, {
        "context_tokens": n,
        "document_tokens": doc_tokens,
        "reduction_vs_document": round(doc_tokens / n, 1) if n else 0.0,
        "preview": "```text\n" + text[:PREVIEW_CHARS] + "\n```",
    }


def published_day(
    con: duckdb.DuckDBPyConnection, day: str, published_dir: Path, code_version: str, run: RunParts | None = None,
    withheld: str | None = None,
) -> dict[str, Any]:
    """Publish the day's files; ``path`` in the result is the day's folder. The files are a
    function of the capture and the code alone (no wall-clock stamp): a day built again from
    the same segments with the same code is left as it is, mtimes included (``written`` False).

    A day whose rows break a data-quality rule (``withheld``: quality.failing_days' reason) is
    not published: nothing is written for it, files published before stay as they were, and the
    result says why (``withheld``)."""
    if withheld is not None:
        if run is not None:
            run.drop(day)
        return {"path": str(published_dir / day), "written": False, "withheld": withheld}
    held = run.held(day) if run is not None else None
    ready = run.prefetched(con, day, PUBLISHED) if run is not None else None
    if ready is not None:
        files, sha, sealed, segments = ready
    elif held is not None and held.document is not None and held.context is not None:
        doc, _canonical, sha, _tokens, sealed = held.document
        files = artifact_bytes(doc, held.context)
        segments = _segments(doc)
    else:
        files, sha, sealed, segments = day_artifacts(con, day)
    out = publish.publish_day(
        published_dir, day, files, canonical_sha256=sha, sealed=sealed, segments=segments, code_version=code_version
    )
    if run is not None:
        run.drop(day)  # the day's last step: its parts are done
    meta: dict[str, Any] = {"path": str(out.folder), "sealed": sealed, "written": out.written, "canonical_sha256": sha}
    for name, f in out.manifest["files"].items():
        meta[f"sha256 {name}"] = f["sha256"]
    return meta


def build_day(
    con: duckdb.DuckDBPyConnection,
    log: EventLog,
    day: str,
    published_dir: Path,
    include_typed_text: bool,
    code_version: str,
    categories: CategoryRules | None = None,
) -> None:
    """Every step of one day, in the assets' order, each on the one before (one capture read)."""
    run = RunParts()
    raw_day(con, log, day, run, include_typed_text)
    frames(con, day, run)
    enriched_input(con, day, include_typed_text, run)
    page_refs(con, day, run)
    day_document(con, day, include_typed_text, run, categories)
    context_block(con, day, run, measure_raw=False)
    failing = quality.failing_days(con, [day]).get(day)
    published_day(con, day, published_dir, code_version, run, failing.reason if failing else None)


_SCALARS = {str, int, float, bool, type(None)}


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _plain(value: Any) -> Any:
    """dataclasses.asdict's dict of a dataclass (its fields in order); a record of scalars only
    (a page reference) is read field by field, without asdict's recursive copy."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {n: getattr(value, n) for n in _field_names(type(value))}
        return out if set(map(type, out.values())) <= _SCALARS else dataclasses.asdict(value)
    return value


# Canonical documents just written, by their sha256. The steps after day_document read the
# day's document back; a hit here spares reading and decompressing its file. The sha256 column
# says which document the warehouse holds; a document is only taken from here when its hash
# matches, so a hit is always the stored document.
_RECENT_DOCS: OrderedDict[str, str] = OrderedDict()
_RECENT_MAX = 8


def _remember(sha: str, canonical: str) -> None:
    _RECENT_DOCS[sha] = canonical
    _RECENT_DOCS.move_to_end(sha)
    while len(_RECENT_DOCS) > _RECENT_MAX:
        _RECENT_DOCS.popitem(last=False)


def _stored_document(con: Any, day: str) -> tuple[str, str, int, bool] | None:
    """(canonical json, sha256, tokens, sealed) of the day's stored document, or None."""
    row = con.execute(f"SELECT sha256, tokens, sealed FROM {DOCUMENTS} WHERE day = ?", [day]).fetchone()
    if row is None:
        return None
    sha, n_tokens, sealed = str(row[0]), int(row[1]), bool(row[2])
    canonical = _RECENT_DOCS.get(sha)
    if canonical is None:
        if store.has_column(con, DOCUMENTS, INLINE_DOCUMENT):  # not migrated yet (day_document migrates)
            (canonical,) = con.execute(f"SELECT {INLINE_DOCUMENT} FROM {DOCUMENTS} WHERE day = ?", [day]).fetchone()
        else:
            canonical = store.read_document_bytes(con, day, sha).decode("utf-8")  # checked against sha
    return canonical, sha, n_tokens, sealed


def document_hashes(con: Any, days: Sequence[str]) -> dict[str, str]:
    """day -> sha256 of the day's stored document as it is now (its file read and hashed, not the
    hash recorded beside it), or why there is none: what certification compares to a recompile,
    so a document changed after it was written fails."""
    rows = con.execute(f"SELECT day, sha256 FROM {DOCUMENTS} WHERE day IN (SELECT unnest(?::VARCHAR[]))",
                       [list(days)]).fetchall()
    if store.has_column(con, DOCUMENTS, INLINE_DOCUMENT):
        texts = dict(con.execute(f"SELECT day, {INLINE_DOCUMENT} FROM {DOCUMENTS} "
                                 "WHERE day IN (SELECT unnest(?::VARCHAR[]))", [list(days)]).fetchall())
        return {str(d): hashlib.sha256(str(texts[d]).encode("utf-8")).hexdigest() for d, _sha in rows}
    return {str(d): store.document_hash(con, str(d), str(sha)) for d, sha in rows}


def document(con: Any, day: str) -> tuple[dict[str, Any], int]:
    found = _stored_document(con, day)
    if found is None:
        raise LookupError(f"day {day} has no document in the warehouse; materialize day_document first")
    return json.loads(found[0]), found[2]


def day_artifacts(con: Any, day: str) -> tuple[dict[str, bytes], str, bool, dict[str, str]]:
    """The published files of one day from the warehouse: (files, canonical sha256, sealed, segments)."""

    found = _stored_document(con, day)
    ctx = con.execute(f"SELECT text FROM {CONTEXTS} WHERE day = ?", [day]).fetchone()
    if found is None or ctx is None:
        raise LookupError(f"day {day} has no document or context block in the warehouse")
    canonical, sha, _tokens, sealed = found
    doc = json.loads(canonical)
    return artifact_bytes(doc, ctx[0]), sha, sealed, _segments(doc)


def _segments(doc: dict[str, Any]) -> dict[str, str]:
    return {s["file"]: s["sha256"] for s in doc.get("provenance", {}).get("segments", [])}


def artifact_bytes(doc: dict[str, Any], context_text: str) -> dict[str, bytes]:
    """The published files of a document: functions of the document alone. When a build ran
    is in the run's metadata and the certificate, not in the files, so equal capture and code
    give equal bytes (and an agent caching by sha256 re-reads nothing)."""
    from af_pipeline.compiler import emit, view

    return {
        "document.json": emit.to_json(doc).encode("utf-8"),
        "document.yaml": emit.to_yaml(doc).encode("utf-8"),
        "document.md": emit.to_markdown(doc).encode("utf-8"),
        "context.txt": context_text.encode("utf-8"),
        "view.html": view.render_day(doc, context_text).encode("utf-8"),
    }


def built_day_totals(warehouse_path: Path) -> list[tuple[str, int, float, int, int]]:
    """Per built day, oldest first: (day, frames, active minutes, document tokens, context-block
    tokens), read from the warehouse without writing it (`af demo`'s summary table)."""
    con = duckdb.connect(str(warehouse_path), read_only=True)
    try:
        rows = con.execute(
            f"SELECT d.day, d.frames, d.active_min, d.tokens, c.tokens "
            f"FROM {DOCUMENTS} d JOIN {CONTEXTS} c USING (day) ORDER BY d.day"
        ).fetchall()
    finally:
        con.close()
    return [(str(r[0]), int(r[1]), float(r[2]), int(r[3]), int(r[4])) for r in rows]
