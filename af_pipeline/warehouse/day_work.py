"""A day's work as plain functions over one warehouse connection: the step order, written once.

No Dagster here. ``day_parts`` holds the order of a day's steps, each building on the one before
(the compiler's phases, af_pipeline/compiler/compile.py), as pure functions of the day's capture:

    raw_day          log -> raw_* (the day's sealed files registered, or its rows copied)
    frames           the day's rows -> compile.frame_day (timeline, credit, frames)
    enriched_input   + enrich.attribute_input (attribution, click resolution)
    page_refs        + entities.type_url per URL of those rows
    day_document     compile.assemble(frames, attribution, page types) -> canonical JSON
    context_block    the document -> the block
    published_day    the document and the block -> files

``build_days`` builds days one after the other: raw_day, then each part of ``day_parts`` written
to its table as it comes (``WRITERS``), the day's data-quality rules judged on what it wrote,
and the files published (or withheld). Everyone who builds a day calls it: the Dagster
multi-asset (assets/day_assets.py, one call for the days of its run), certification's
independent rebuild and a team build (``build_day``, one day); and a range run's day workers
(parallel_days) compute the same ``day_parts`` ahead, from the sealed log, for it to write. A
day's parts live in the local variables of that call: nothing is kept between calls but the
content-addressed cache of documents just written (``_RECENT_DOCS``), which only spares reading a
file back. A day's capture is read from the warehouse once per build (store.LOADS counts the reads,
for tests and benchmarks), and not at all when a day worker read it from the log.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import duckdb

from af_pipeline.compiler.categories import CategoryRules
from af_pipeline.compiler.emit import DEFAULT_BUDGET
from af_pipeline.warehouse import publish, quality, store
from capture.log import EventLog

if TYPE_CHECKING:  # the compiler (numpy, the entity tables) loads when a step first runs
    from af_pipeline.compiler.compile import Framing
    from af_pipeline.compiler.enrich import Attribution
    from capture.model import DayCapture

CONTEXT_BUDGET_TOKENS = DEFAULT_BUDGET  # the recompile check renders with the same budget

RAW = "raw_day"
FRAMES = "frames"
ENRICHED = "enriched_input"
PAGE_REFS = "page_refs"
DOCUMENTS = "day_document"
CONTEXTS = "context_block"
PUBLISHED = "published_day"
STEPS = (RAW, FRAMES, ENRICHED, PAGE_REFS, DOCUMENTS, CONTEXTS, PUBLISHED)  # also the asset keys
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


# What a part is, per step (each a plain value that pickles: a day worker sends them whole):
#   FRAMES    (rows, numbers)                 ENRICHED  (columns, numbers)
#   PAGE_REFS (rows, numbers)                 DOCUMENTS (canonical bytes, sha256, tokens, numbers)
#   CONTEXTS  (text, tokens, sha256, numbers) PUBLISHED (files, canonical sha256, sealed, segments)
DayParts = Mapping[str, Any]


class Prefetched(Protocol):
    """Where a day's parts may already be computed (parallel_days.RunParts: a range run's workers)."""

    def day_parts(self, con: duckdb.DuckDBPyConnection, day: str, include_typed_text: bool,
                  categories: CategoryRules | None) -> DayParts | None: ...


def day_parts(capture: DayCapture, include_typed_text: bool, categories: CategoryRules | None,
              measure_raw: bool = True) -> Iterator[tuple[str, Any]]:
    """Every derived step's part of one day, in the steps' order: (step, part) pairs, each
    computed from the ones before (pure: the capture and the options in, values out).

    The one place the order is written: ``build_day`` writes each part as it comes, a day worker
    (parallel_days) computes them all ahead. ``measure_raw`` adds to the context block's numbers
    what an agent would read instead (the day's rows as a search API returns them, in tokens): a
    measurement for people, not part of any table or file."""
    from af_pipeline.compiler.compile import frame_day
    from af_pipeline.compiler.emit import raw_rows_tokens
    from af_pipeline.compiler.enrich import attribute_input

    framing = frame_day(capture)
    yield FRAMES, frames_part(framing)
    attribution = attribute_input(capture, framing.rows.index)
    yield ENRICHED, enriched_part(capture, attribution, include_typed_text)
    page_rows, types, page_meta = page_part(url_counts(capture))
    yield PAGE_REFS, (page_rows, page_meta)
    body, sha, n_tokens, doc_meta = document_part(capture, framing, attribution, include_typed_text, categories, types)
    del framing, attribution  # no later step needs them
    yield DOCUMENTS, (body, sha, n_tokens, doc_meta)
    doc = json.loads(body.decode("utf-8"))  # later steps read the document as stored (canonical JSON: sorted keys)
    text, n, ctx_sha, ctx_meta = context_part(doc, n_tokens)
    if measure_raw:
        ctx_meta |= raw_part(raw_rows_tokens(capture), n)
    yield CONTEXTS, (text, n, ctx_sha, ctx_meta)
    yield PUBLISHED, (artifact_bytes(doc, text), sha, doc_meta["sealed"], _segments(doc))


# A range's days are written, committed and judged against the data-quality rules a few at a
# time: the rules' queries cost about 0.14 s whatever the number of days (1.2 s for 58 days at
# once, 7.9 s day by day), and so does a commit; the days waiting for their verdict hold their
# files in memory (about 0.5 MB each).
JUDGE_EVERY = 16


def build_days(
    con: duckdb.DuckDBPyConnection,
    log: EventLog,
    days: Sequence[str],
    published_dir: Path,
    include_typed_text: bool,
    code_version: str,
    categories: CategoryRules | None = None,
    *,
    run: Prefetched | None = None,
    measure_raw: bool = False,
    judge_every: int = JUDGE_EVERY,
) -> Iterator[tuple[str, dict[str, dict[str, Any]]]]:
    """Every step of each day, in order, each on the one before: (day, step -> the day's numbers)
    for each day, in the given order, once it is published or withheld.

    Days go JUDGE_EVERY at a time: their raw_day and derived tables are one transaction
    (store.batch: their rows committed together, or none); then their data-quality rules are
    judged on what they wrote, and each day's files are published, or withheld when a rule is broken
    (quality.failing_days: the ``withheld`` reason in published_day's numbers; files published
    before stay as they were). ``run``: where a day worker may have computed a day's parts
    already (used only when its capture is the one raw_day stored and its options are these,
    else the day is computed here). ``measure_raw``: the context block's numbers also say what
    the day's raw rows cost in tokens (for people: no table or file holds it)."""
    for first in range(0, len(days), max(1, judge_every)):
        waiting: list[tuple[str, dict[str, dict[str, Any]], Any]] = []
        with store.batch(con):  # these days' rows, committed together
            for day in days[first:first + max(1, judge_every)]:
                waiting.append(_write_day(con, log, day, include_typed_text, categories, run, measure_raw))
        failing = quality.failing_days(con, [d for d, _o, _f in waiting])
        for day, out, files in waiting:
            why = failing.get(day)
            out[PUBLISHED] = published_day(day, published_dir, code_version, files, why.reason if why else None)
            yield day, out


def _write_day(con: duckdb.DuckDBPyConnection, log: EventLog, day: str, include_typed_text: bool,
               categories: CategoryRules | None, run: Prefetched | None,
               measure_raw: bool) -> tuple[str, dict[str, dict[str, Any]], Any]:
    """raw_day and every derived table of one day: (day, step -> numbers, the files to publish)."""
    out: dict[str, dict[str, Any]] = {RAW: raw_day(con, log, day, include_typed_text)}
    ready = run.day_parts(con, day, include_typed_text, categories) if run is not None else None
    if ready is not None:
        parts: Iterable[tuple[str, Any]] = ((step, ready[step]) for step in STEPS[1:])
    else:
        capture = store.load_capture(con, day, lazy_elements=True)
        parts = day_parts(capture, include_typed_text, categories, measure_raw)
    files: Any = None
    for step, part in parts:
        if step == PUBLISHED:
            files = part
            break
        out[step] = WRITERS[step](con, day, part)
    if not measure_raw:
        out[CONTEXTS] = {k: v for k, v in out[CONTEXTS].items() if k not in RAW_KEYS}
    return day, out, files


def build_day(
    con: duckdb.DuckDBPyConnection,
    log: EventLog,
    day: str,
    published_dir: Path,
    include_typed_text: bool,
    code_version: str,
    categories: CategoryRules | None = None,
    *,
    run: Prefetched | None = None,
    measure_raw: bool = False,
) -> dict[str, dict[str, Any]]:
    """Every step of one day (build_days of that day); step -> the day's numbers."""
    ((_day, out),) = build_days(con, log, [day], published_dir, include_typed_text, code_version, categories,
                                run=run, measure_raw=measure_raw)
    return out


def raw_day(con: duckdb.DuckDBPyConnection, log: EventLog, day: str, include_typed_text: bool = False) -> dict[str, Any]:
    """Load the day's rows from the log into the raw layer; the numbers of what was loaded."""
    # typed text stays in the log unless the build opts in (store.TYPED_KINDS)
    loaded = store.load_raw_day(con, log, day, include_typed_text)
    counts = loaded["counts"]
    return {f"rows_{k}": int(v) for k, v in counts.items()} | {
        "rows_total": int(sum(counts.values())),
        "sealed": bool(loaded["sealed"]),
        "recorders": ", ".join(loaded["recorders"]) or "-",
    }


def provenance(con: duckdb.DuckDBPyConnection, day: str) -> tuple[str, bool, list[str], dict[str, str]] | None:
    """(tz, sealed, recorders, segment sha256s) raw_day recorded for the day (what a day worker's
    capture must share with the warehouse's for its parts to be used: parallel_days.Provenance)."""
    row = con.execute(f"SELECT tz, sealed, recorders, segment_hashes FROM {store.RAW_DAYS} WHERE day = ?",
                      [day]).fetchone()
    if row is None:
        return None
    return str(row[0]), bool(row[1]), list(json.loads(row[2])), dict(json.loads(row[3]))


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


def frames_part(framing: Framing) -> tuple[list[tuple], dict[str, Any]]:
    """The frames table's rows of a day (the document's own frames: compile.frame_day, afk time
    out of their active time) and its numbers."""
    rows = frame_rows(framing.rows.index.col("ref"), framing.timeline.segments)
    active_us = sum(r[7] for r in rows)
    return rows, {
        "frames": len(rows),
        "active_minutes": round(active_us / 60e6, 2),
        "streams": len({r[1] for r in rows}),
    }


def write_frames(con: duckdb.DuckDBPyConnection, day: str, part: Any) -> dict[str, Any]:
    rows, meta = part
    store.replace_day(con, FRAMES, day, FRAME_COLUMNS, rows)
    return dict(meta)


def enriched_part(
    capture: DayCapture, attribution: Attribution, include_typed_text: bool
) -> tuple[list[list[Any]], dict[str, Any]]:
    """The enriched_input columns of a day (ENRICHED_COLUMNS order) and its numbers."""
    from af_pipeline.compiler.enrich import enrich_columns

    by_name = enrich_columns(capture, attribution, typed_text=include_typed_text)  # no object per event
    cols = [by_name[name] for name in ENRICHED_COLUMNS]
    by_res = Counter(by_name["resolution"])
    return cols, {"events": len(by_name["ref"])} | {f"resolution_{k}": v for k, v in sorted(by_res.items())}


def write_enriched(con: duckdb.DuckDBPyConnection, day: str, part: Any) -> dict[str, Any]:
    cols, meta = part
    store.replace_day_columns(con, ENRICHED, day, ENRICHED_COLUMNS, cols)
    return dict(meta)


def url_counts(capture: DayCapture) -> dict[str, int]:
    (urls,) = capture.values("snapshots", ("url",))
    return dict(Counter(u for u in urls if u))


def page_part(
    counts: dict[str, int],
) -> tuple[list[tuple], dict[str, tuple[str, str | None]], dict[str, Any]]:
    """The page_refs rows of a day's URL counts, each URL's (kind, entity), the numbers."""
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


def write_page_refs(con: duckdb.DuckDBPyConnection, day: str, part: Any) -> dict[str, Any]:
    rows, meta = part
    store.replace_day(con, PAGE_REFS, day, PAGE_COLUMNS, rows)
    return dict(meta)


def document_part(
    capture: DayCapture, framing: Framing, attribution: Attribution, include_typed_text: bool,
    categories: CategoryRules | None, page_types: dict[str, tuple[str, str | None]] | None,
) -> tuple[bytes, str, int, dict[str, Any]]:
    """The day's canonical document bytes (compile.assemble of the frames, the attribution and
    the page types), their sha256, their tokens and the step's numbers."""
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


def write_document(con: duckdb.DuckDBPyConnection, day: str, part: Any) -> dict[str, Any]:
    """The document as a file named by its sha256, and its row (store.write_document)."""
    body, sha, n_tokens, meta = part
    store.move_text_to_documents(con, DOCUMENTS, INLINE_DOCUMENT)  # an older warehouse, once
    store.write_document(con, day, sha, body)  # before the row that names it is committed
    store.replace_day(
        con, DOCUMENTS, day, DOCUMENT_COLUMNS,
        [(sha, meta["frames"], meta["active_minutes"], n_tokens, meta["sealed"])],
    )
    store.after_commit(con, lambda: store.drop_other_documents(con, day, keep=sha))
    _remember(sha, body.decode("utf-8"))
    return dict(meta)


def day_document(
    con: duckdb.DuckDBPyConnection, day: str, include_typed_text: bool, categories: CategoryRules | None = None,
) -> dict[str, Any]:
    """The document step alone, from the day's rows in the warehouse (raw_day first): the
    day's parts up to the document (day_parts), only the document written."""
    capture = store.load_capture(con, day, lazy_elements=True)
    for step, part in day_parts(capture, include_typed_text, categories, measure_raw=False):
        if step == DOCUMENTS:
            return write_document(con, day, part)
    raise AssertionError("day_parts gave no document")  # pragma: no cover - the order has one


RAW_KEYS = ("raw_rows_tokens", "reduction_vs_raw_rows")


def raw_part(raw: int, n: int) -> dict[str, Any]:
    return {"raw_rows_tokens": raw, "reduction_vs_raw_rows": round(raw / n, 1) if n else 0.0}


def context_part(doc: dict[str, Any], doc_tokens: int) -> tuple[str, int, str, dict[str, Any]]:
    """The context block of a document: (text, tokens, sha256, the step's numbers). The numbers
    go to Dagster's storage, which never holds capture text (a preview of the block did: `af
    forget` could not reach it); the block itself is in published/<day>/context.txt."""
    from af_pipeline.compiler import emit, tokens

    text = emit.context_block(doc, CONTEXT_BUDGET_TOKENS)
    n = tokens.count(text)
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return text, n, sha, {
        "context_tokens": n,
        "document_tokens": doc_tokens,
        "reduction_vs_document": round(doc_tokens / n, 1) if n else 0.0,
    }


def write_context(con: duckdb.DuckDBPyConnection, day: str, part: Any) -> dict[str, Any]:
    text, n, sha, meta = part
    store.replace_day(con, CONTEXTS, day, CONTEXT_COLUMNS, [(text, sha, n)])
    return dict(meta)


# How each derived step's part is written (published_day publishes after the day's commit).
WRITERS: dict[str, Callable[[duckdb.DuckDBPyConnection, str, Any], dict[str, Any]]] = {
    FRAMES: write_frames,
    ENRICHED: write_enriched,
    PAGE_REFS: write_page_refs,
    DOCUMENTS: write_document,
    CONTEXTS: write_context,
}


def published_day(
    day: str, published_dir: Path, code_version: str, part: Any, withheld: str | None = None,
) -> dict[str, Any]:
    """Publish the day's files (``part``: day_parts' PUBLISHED); ``path`` in the result is the
    day's folder. The files are a function of the capture and the code alone (no wall-clock
    stamp): a day built again from the same segments with the same code is left as it is, mtimes
    included (``written`` False).

    A day whose rows break a data-quality rule (``withheld``: quality.failing_days' reason) is
    not published: nothing is written for it, files published before stay as they were, and the
    result says why (``withheld``)."""
    if withheld is not None:
        return {"path": str(published_dir / day), "written": False, "withheld": withheld}
    files, sha, sealed, segments = part
    out = publish.publish_day(
        published_dir, day, files, canonical_sha256=sha, sealed=sealed, segments=segments, code_version=code_version
    )
    meta: dict[str, Any] = {"path": str(out.folder), "sealed": sealed, "written": out.written, "canonical_sha256": sha}
    for name, f in out.manifest["files"].items():
        meta[f"sha256 {name}"] = f["sha256"]
    return meta


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


# Canonical documents just written, by their sha256. A reader of a day's document just built
# (document(), a check after the build in the same process) is spared reading and decompressing
# its file. The sha256 column
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
