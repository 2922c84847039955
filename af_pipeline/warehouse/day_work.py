"""The per-day work of the day assets, as plain functions over one warehouse connection.

Each function does one asset's work for one day: read its inputs from the warehouse, call the
pure af_pipeline function, replace the day in its table, and return the day's numbers (plain
values; assets/day_assets.py turns them into Dagster metadata). No Dagster here: the assets are thin
loops over these, and certification's independent rebuild calls the same functions day by day
(``build_day``) without paying for an orchestrator it does not need.

Functions that read the day's capture accept one already loaded (``capture``), so a caller
doing every step of a day reads it once; given none, each loads what it needs.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from af_pipeline.compiler.emit import DEFAULT_BUDGET
from af_pipeline.warehouse import publish, store
from capture.log import EventLog
from capture.model import DayCapture

CONTEXT_BUDGET_TOKENS = DEFAULT_BUDGET  # the recompile check renders with the same budget
PREVIEW_CHARS = 4000  # the context block preview in the UI; the full block is in published/

FRAMES = "frames"
ENRICHED = "enriched_input"
PAGE_REFS = "page_refs"
DOCUMENTS = "day_document"
CONTEXTS = "context_block"
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
DOCUMENT_COLUMNS = {
    "canonical_json": "VARCHAR",
    "sha256": "VARCHAR",
    "frames": "BIGINT",
    "active_min": "DOUBLE",
    "tokens": "BIGINT",
    "sealed": "BOOLEAN",
}
CONTEXT_COLUMNS = {"text": "VARCHAR", "sha256": "VARCHAR", "tokens": "BIGINT"}



def _site_of() -> Callable[[str | None], str | None]:
    from af_pipeline.compiler.entities import site_of

    return site_of


def _surface_of() -> Callable[[str | None], str | None]:
    from af_pipeline.compiler.entities import surface_of

    return surface_of


def frame_rows(snapshots: Sequence[Any], segments: Iterable[Any]) -> list[tuple]:
    rows = []
    for seg in segments:
        app, site = seg.key
        first, last = snapshots[seg.rows[0]], snapshots[seg.rows[-1]]
        rows.append(
            (
                f"{seg.stream}:{first.ref}",
                seg.stream,
                app,
                site,
                seg.start_us,
                seg.end_us,
                seg.end_us - seg.start_us,
                seg.active_us,
                len(seg.rows),
                len(seg.interruptions),
                first.ref,
                last.ref,
            )
        )
    return rows


def raw_day(con: duckdb.DuckDBPyConnection, log: EventLog, day: str) -> dict[str, Any]:
    loaded = store.load_raw_day(con, log, day)
    counts = loaded["counts"]
    return {f"rows_{k}": int(v) for k, v in counts.items()} | {
        "rows_total": int(sum(counts.values())),
        "sealed": bool(loaded["sealed"]),
        "recorders": ", ".join(loaded["recorders"]) or "-",
    }


def frames(con: duckdb.DuckDBPyConnection, day: str, capture: DayCapture | None = None) -> dict[str, Any]:
    from af_pipeline.compiler import sessionize

    surface_of = _surface_of()  # frames are keyed as the document keys them (compile_day)
    snaps = (capture or store.load_capture(con, day, SNAPSHOTS_ONLY)).snapshots
    segments = sessionize.segment(snaps, key_of=lambda s: (s.app, surface_of(s.url) if s.url else None))
    rows = frame_rows(snaps, segments)
    store.replace_day(con, FRAMES, day, FRAME_COLUMNS, rows)
    active_us = sum(r[7] for r in rows)
    return {
        "frames": len(rows),
        "active_minutes": round(active_us / 60e6, 2),
        "streams": len({r[1] for r in rows}),
    }


def enriched_input(
    con: duckdb.DuckDBPyConnection, day: str, include_typed_text: bool, capture: DayCapture | None = None
) -> dict[str, Any]:
    from af_pipeline.compiler.enrich import enrich

    events = enrich(capture or store.load_capture(con, day, ENRICH_KINDS, lazy_elements=True))
    rows = [
        (
            e.event.ref,
            e.event.ts_us,
            e.event.kind,
            e.stream,
            e.snapshot_ref,
            e.distance_ms,
            e.app,
            e.window,
            e.url,
            e.target_name,
            e.target_role,
            e.resolution,
            e.key_text if include_typed_text else None,
        )
        for e in events
    ]
    store.replace_day(con, ENRICHED, day, ENRICHED_COLUMNS, rows)
    by_res: dict[str, int] = {}
    for e in events:
        by_res[e.resolution] = by_res.get(e.resolution, 0) + 1
    return {"events": len(rows)} | {f"resolution_{k}": v for k, v in sorted(by_res.items())}


def page_refs(con: duckdb.DuckDBPyConnection, day: str) -> dict[str, Any]:
    from af_pipeline.compiler.entities import type_url

    site_of = _site_of()
    store.load_capture(con, day, ())  # the day must have been loaded: a clear error if not
    counts: dict[str, int] = dict(
        con.execute(  # counted in the warehouse: no snapshot objects for a URL tally
            f"SELECT url, count(*) FROM {store.RAW_TABLES['snapshots']} "
            "WHERE day = ? AND url IS NOT NULL AND url <> '' GROUP BY url",
            [day],
        ).fetchall()
    )
    rows = []
    kinds: dict[str, int] = {}
    for url in sorted(counts):
        ref = type_url(url)
        page = store.canonical_json(_plain(ref))
        kind = str(getattr(ref, "kind", "page"))
        kinds[kind] = kinds.get(kind, 0) + 1
        rows.append((url, counts[url], site_of(url), page))
    store.replace_day(con, PAGE_REFS, day, PAGE_COLUMNS, rows)
    generic = sum(v for k, v in kinds.items() if k in ("page", "generic"))
    return {
        "urls": len(rows),
        "kinds": len(kinds),
        "typed_share": round(1 - generic / len(rows), 3) if rows else 0.0,
    }


def day_document(
    con: duckdb.DuckDBPyConnection, day: str, include_typed_text: bool, capture: DayCapture | None = None
) -> dict[str, Any]:
    from af_pipeline.compiler import tokens
    from af_pipeline.compiler.compile import CompileOptions, compile_day
    from af_pipeline.compiler.emit import canonical_bytes

    capture = capture or store.load_capture(con, day, lazy_elements=True)
    doc = compile_day(capture, CompileOptions(include_typed_text=include_typed_text))
    body = canonical_bytes(doc)
    sha = hashlib.sha256(body).hexdigest()
    n_tokens = tokens.count(body.decode("utf-8"))
    active = float(doc["coverage"]["active_min"])
    canonical = body.decode("utf-8")
    store.replace_day(
        con, DOCUMENTS, day, DOCUMENT_COLUMNS, [(canonical, sha, len(doc["frames"]), active, n_tokens, capture.sealed)]
    )
    _remember(sha, canonical)
    return {
        "frames": len(doc["frames"]),
        "active_minutes": active,
        "document_tokens": n_tokens,
        "canonical_sha256": sha,
        "sealed": bool(capture.sealed),
    }


def context_block(
    con: duckdb.DuckDBPyConnection, day: str, capture: DayCapture | None = None, measure_raw: bool = True
) -> dict[str, Any]:
    """The day's context block; ``preview`` in the result is its first PREVIEW_CHARS (Markdown).

    ``measure_raw`` adds what an agent would read instead (the day's rows as a search API returns
    them, in tokens) to the result: a measurement for people, not part of the table, so the
    certification rebuild, which only compares tables and files, skips it."""
    from af_pipeline.compiler import emit, tokens
    from af_pipeline.compiler.emit import raw_rows_tokens

    doc, doc_tokens = document(con, day)
    text = emit.context_block(doc, CONTEXT_BUDGET_TOKENS)
    n = tokens.count(text)
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    store.replace_day(con, CONTEXTS, day, CONTEXT_COLUMNS, [(text, sha, n)])
    meta: dict[str, Any] = {
        "context_tokens": n,
        "document_tokens": doc_tokens,
        "reduction_vs_document": round(doc_tokens / n, 1) if n else 0.0,
        "preview": "```text\n" + text[:PREVIEW_CHARS] + "\n```",
    }
    if measure_raw:
        raw = raw_rows_tokens(capture or store.load_capture(con, day, SNAPSHOTS_ONLY))
        meta["raw_rows_tokens"] = raw
        meta["reduction_vs_raw_rows"] = round(raw / n, 1) if n else 0.0
    return meta


def published_day(
    con: duckdb.DuckDBPyConnection, day: str, published_dir: Path, code_version: str, generated_at: str
) -> dict[str, Any]:
    """Publish the day's files; ``path`` in the result is the day's folder."""
    files, sha, sealed, segments = day_artifacts(con, day, generated_at=generated_at)
    out = publish.publish_day(
        published_dir, day, files, canonical_sha256=sha, sealed=sealed, segments=segments, code_version=code_version
    )
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
    generated_at: str,
) -> None:
    """Every step of one day, in the assets' order, reading the day's capture once."""
    raw_day(con, log, day)
    capture = store.load_capture(con, day, lazy_elements=True)
    frames(con, day, capture)
    enriched_input(con, day, include_typed_text, capture)
    page_refs(con, day)
    day_document(con, day, include_typed_text, capture)
    context_block(con, day, capture, measure_raw=False)
    published_day(con, day, published_dir, code_version, generated_at)


def _plain(value: Any) -> Any:
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def now_iso() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# Canonical documents just written, by their sha256. The steps after day_document read the
# day's document back; DuckDB keeps the documents of all days in one compressed column segment,
# so reading one decompresses every day's, a cost that grows with the history. The small sha256
# column says which document the warehouse holds; a document is only taken from here when its
# hash matches, so a hit is always the stored document.
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
        (canonical,) = con.execute(f"SELECT canonical_json FROM {DOCUMENTS} WHERE day = ?", [day]).fetchone() or ("",)
    return canonical, sha, n_tokens, sealed


def document(con: Any, day: str) -> tuple[dict[str, Any], int]:
    found = _stored_document(con, day)
    if found is None:
        raise LookupError(f"day {day} has no document in the warehouse; materialize day_document first")
    return json.loads(found[0]), found[2]


def day_artifacts(con: Any, day: str, generated_at: str) -> tuple[dict[str, bytes], str, bool, dict[str, str]]:
    """The published files of one day from the warehouse: (files, canonical sha256, sealed, segments)."""

    found = _stored_document(con, day)
    ctx = con.execute(f"SELECT text FROM {CONTEXTS} WHERE day = ?", [day]).fetchone()
    if found is None or ctx is None:
        raise LookupError(f"day {day} has no document or context block in the warehouse")
    canonical, sha, _tokens, sealed = found
    doc = json.loads(canonical)
    files = artifact_bytes(doc, ctx[0], generated_at)
    segments = {s["file"]: s["sha256"] for s in doc.get("provenance", {}).get("segments", [])}
    return files, sha, sealed, segments


def artifact_bytes(doc: dict[str, Any], context_text: str, generated_at: str) -> dict[str, bytes]:
    """The four published files of a document (document.json is the only one with generated_at)."""
    from af_pipeline.compiler import emit

    return {
        "document.json": emit.to_json(dict(doc, generated_at=generated_at)).encode("utf-8"),
        "document.yaml": emit.to_yaml(doc).encode("utf-8"),
        "document.md": emit.to_markdown(doc).encode("utf-8"),
        "context.txt": context_text.encode("utf-8"),
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
