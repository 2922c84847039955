"""The day-partitioned assets. Each one reads its inputs from the warehouse, calls a pure
af_pipeline function, writes one table (replacing the day) and records what happened.

    raw_day -> frames, enriched_input, page_refs -> day_document -> context_block -> published_day

A run may cover one day (the UI, the nightly schedule) or a range (``af build``: one run, the
in-process executor, every asset called once with all its days). For a range, each day's own
numbers are logged as an observation of that partition and the materialization carries totals.
"""


import hashlib
import json
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource

from af_pipeline.emit import DEFAULT_BUDGET
from assets import publish, store
from assets.instance import WAREHOUSE_POOL
from assets.resources import DataFolder
from assets.version import code_version

# Single-run backfills and partitioned checks are flagged beta/preview by Dagster 1.13; we pin
# the version and test both, so the warnings only add noise to every command.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)

GROUP = "day"
OBSERVE_DAYS_TAG = "af/observe_days"  # "false": a range run logs no per-day observations
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
CONTEXT_COLUMNS = {"text": "VARCHAR", "sha256": "VARCHAR", "tokens": "BIGINT", "raw_tokens": "BIGINT"}


def _days(context: dg.AssetExecutionContext) -> list[str]:
    return list(context.partition_keys)


def _result(
    context: dg.AssetExecutionContext, per_day: dict[str, dict[str, Any]], totals: Callable[[list[dict]], dict]
) -> dg.MaterializeResult:
    """One day: its metadata. Several: an observation per day plus totals and a per-day table."""
    if len(per_day) == 1:
        return dg.MaterializeResult(metadata=next(iter(per_day.values())))
    if context.run.tags.get(OBSERVE_DAYS_TAG) != "false":  # certification's throwaway rebuild skips them
        for day, meta in per_day.items():
            context.log_event(dg.AssetObservation(asset_key=context.asset_key, partition=day, metadata=meta))
    meta = dict(totals(list(per_day.values())))
    meta["days"] = len(per_day)
    meta["first_day"] = min(per_day)
    meta["last_day"] = max(per_day)
    return dg.MaterializeResult(metadata=meta)


def _sum(key: str) -> Callable[[list[dict]], dict]:
    return lambda rows: {key: sum(int(r.get(key, 0)) for r in rows)}


def _progress(context: dg.AssetExecutionContext, name: str, days: Sequence[str], i: int) -> None:
    if context.run.tags.get(OBSERVE_DAYS_TAG) == "false":
        return
    if len(days) > 1 and (i == len(days) - 1 or i % 10 == 0):
        context.log.info(f"{name}: day {i + 1}/{len(days)} ({days[i]})")


def _site_of() -> Callable[[str | None], str | None]:
    from af_pipeline.entities import site_of

    return site_of


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


def build_assets(partitions: dg.PartitionsDefinition) -> list[dg.AssetsDefinition]:
    """The asset graph over the given day partitions (partitions depend on the data folder)."""
    common: dict[str, Any] = {
        "partitions_def": partitions,
        "backfill_policy": dg.BackfillPolicy.single_run(),
        "group_name": GROUP,
        "pool": WAREHOUSE_POOL,
    }

    @dg.asset(
        **common,
        kinds={"duckdb"},
        description="The day's rows from the event log (sealed Parquet segments or the open day), "
        "in the raw_* tables of the warehouse.",
    )
    def raw_day(context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource) -> dg.MaterializeResult:
        log = data_folder.log()
        days = _days(context)
        per_day: dict[str, dict[str, Any]] = {}
        with warehouse.get_connection() as con:
            for i, day in enumerate(days):
                loaded = store.load_raw_day(con, log, day)
                counts = loaded["counts"]
                per_day[day] = {f"rows_{k}": int(v) for k, v in counts.items()} | {
                    "rows_total": int(sum(counts.values())),
                    "sealed": bool(loaded["sealed"]),
                    "recorders": ", ".join(loaded["recorders"]) or "-",
                }
                _progress(context, "raw_day", days, i)
        return _result(context, per_day, _sum("rows_total"))

    @dg.asset(
        **common,
        deps=[raw_day],
        kinds={"duckdb"},
        description="Activity frames per monitor stream: dwell 90 s, session gap 300 s, flicker merge 20 s "
        "(paper 4.2), keyed by (app, site).",
    )
    def frames(context: dg.AssetExecutionContext, warehouse: DuckDBResource) -> dg.MaterializeResult:
        from af_pipeline import sessionize

        site_of = _site_of()
        days = _days(context)
        per_day: dict[str, dict[str, Any]] = {}
        with warehouse.get_connection() as con:
            for day in days:
                snaps = store.load_capture(con, day, SNAPSHOTS_ONLY).snapshots
                segments = sessionize.segment(snaps, key_of=lambda s: (s.app, site_of(s.url) if s.url else None))
                rows = frame_rows(snaps, segments)
                store.replace_day(con, FRAMES, day, FRAME_COLUMNS, rows)
                active_us = sum(r[7] for r in rows)
                per_day[day] = {
                    "frames": len(rows),
                    "active_minutes": round(active_us / 60e6, 2),
                    "streams": len({r[1] for r in rows}),
                }
        return _result(
            context,
            per_day,
            lambda r: {
                "frames": sum(x["frames"] for x in r),
                "active_minutes": round(sum(x["active_minutes"] for x in r), 2),
            },
        )

    @dg.asset(
        **common,
        deps=[raw_day],
        kinds={"duckdb"},
        description="Input events re-attributed to the nearest snapshot, clicks resolved against the element "
        "tree, keyboard layout applied (paper 4.3). Typed text stays out unless opted in.",
    )
    def enriched_input(
        context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> dg.MaterializeResult:
        from af_pipeline.enrich import enrich

        typed = data_folder.include_typed_text
        per_day: dict[str, dict[str, Any]] = {}
        with warehouse.get_connection() as con:
            for day in _days(context):
                events = enrich(store.load_capture(con, day, ENRICH_KINDS, lazy_elements=True))
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
                        e.key_text if typed else None,
                    )
                    for e in events
                ]
                store.replace_day(con, ENRICHED, day, ENRICHED_COLUMNS, rows)
                by_res: dict[str, int] = {}
                for e in events:
                    by_res[e.resolution] = by_res.get(e.resolution, 0) + 1
                per_day[day] = {"events": len(rows)} | {f"resolution_{k}": v for k, v in sorted(by_res.items())}
        return _result(context, per_day, _sum("events"))

    @dg.asset(
        **common,
        deps=[raw_day],
        kinds={"duckdb"},
        description="Typed page references for every URL of the day (paper 3.3 / 4.4): pure URL parsing.",
    )
    def page_refs(context: dg.AssetExecutionContext, warehouse: DuckDBResource) -> dg.MaterializeResult:
        from af_pipeline.entities import type_url

        site_of = _site_of()
        per_day: dict[str, dict[str, Any]] = {}
        with warehouse.get_connection() as con:
            for day in _days(context):
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
                per_day[day] = {
                    "urls": len(rows),
                    "kinds": len(kinds),
                    "typed_share": round(1 - generic / len(rows), 3) if rows else 0.0,
                }
        return _result(context, per_day, _sum("urls"))

    @dg.asset(
        **common,
        deps=[frames, enriched_input, page_refs],
        kinds={"duckdb"},
        description="The schema v1 day document (af_pipeline.compile.compile_day), stored as canonical JSON.",
    )
    def day_document(
        context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> dg.MaterializeResult:
        from af_pipeline import tokens
        from af_pipeline.compile import CompileOptions, compile_day
        from af_pipeline.emit import canonical_bytes

        options = CompileOptions(include_typed_text=data_folder.include_typed_text)
        per_day: dict[str, dict[str, Any]] = {}
        days = _days(context)
        with warehouse.get_connection() as con:
            for i, day in enumerate(days):
                capture = store.load_capture(con, day, lazy_elements=True)
                doc = compile_day(capture, options)
                body = canonical_bytes(doc)
                sha = hashlib.sha256(body).hexdigest()
                n_tokens = tokens.count(body.decode("utf-8"))
                active = float(doc["coverage"]["active_min"])
                store.replace_day(
                    con,
                    DOCUMENTS,
                    day,
                    DOCUMENT_COLUMNS,
                    [(body.decode("utf-8"), sha, len(doc["frames"]), active, n_tokens, capture.sealed)],
                )
                per_day[day] = {
                    "frames": len(doc["frames"]),
                    "active_minutes": active,
                    "document_tokens": n_tokens,
                    "canonical_sha256": sha,
                    "sealed": bool(capture.sealed),
                }
                _progress(context, "day_document", days, i)
        return _result(context, per_day, _sum("document_tokens"))

    @dg.asset(
        **common,
        deps=[day_document],
        kinds={"duckdb"},
        description=f"The compact context block for system prompts (at most {CONTEXT_BUDGET_TOKENS} cl100k tokens).",
    )
    def context_block(context: dg.AssetExecutionContext, warehouse: DuckDBResource) -> dg.MaterializeResult:
        from af_pipeline import emit, tokens
        from af_pipeline.qa.report import raw_rows_json

        per_day: dict[str, dict[str, Any]] = {}
        with warehouse.get_connection() as con:
            for day in _days(context):
                doc, doc_tokens = document(con, day)
                text = emit.context_block(doc, CONTEXT_BUDGET_TOKENS)
                n = tokens.count(text)
                # what an agent would otherwise read: the day's rows as a search API returns them
                raw = tokens.count(raw_rows_json(store.load_capture(con, day, SNAPSHOTS_ONLY)))
                sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
                store.replace_day(con, CONTEXTS, day, CONTEXT_COLUMNS, [(text, sha, n, raw)])
                per_day[day] = {
                    "context_tokens": n,
                    "document_tokens": doc_tokens,
                    "raw_rows_tokens": raw,
                    "reduction_vs_raw_rows": round(raw / n, 1) if n else 0.0,
                    "reduction_vs_document": round(doc_tokens / n, 1) if n else 0.0,
                    "preview": dg.MetadataValue.md("```text\n" + text[:PREVIEW_CHARS] + "\n```"),
                }
        return _result(context, per_day, _sum("context_tokens"))

    @dg.asset(
        **common,
        deps=[context_block],
        kinds={"file"},
        description="Files for agents under <home>/published/<day>/: document.json/.yaml/.md, context.txt and a "
        "manifest with the sha256 of each, written atomically; append-only once the day is sealed.",
    )
    def published_day(
        context: dg.AssetExecutionContext, data_folder: DataFolder, warehouse: DuckDBResource
    ) -> dg.MaterializeResult:
        per_day: dict[str, dict[str, Any]] = {}
        version = code_version()
        with warehouse.get_connection() as con:
            for day in _days(context):
                files, sha, sealed, segments = day_artifacts(con, day, generated_at=_now_iso())
                out = publish.publish_day(
                    data_folder.published_dir,
                    day,
                    files,
                    canonical_sha256=sha,
                    sealed=sealed,
                    segments=segments,
                    code_version=version,
                )
                meta: dict[str, Any] = {
                    "path": dg.MetadataValue.path(str(out.folder)),
                    "sealed": sealed,
                    "written": out.written,
                    "canonical_sha256": sha,
                }
                for name, f in out.manifest["files"].items():
                    meta[f"sha256 {name}"] = f["sha256"]
                per_day[day] = meta
        return _result(context, per_day, lambda r: {"written": sum(1 for x in r if x["written"])})

    return [raw_day, frames, enriched_input, page_refs, day_document, context_block, published_day]


def _plain(value: Any) -> Any:
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _now_iso() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def document(con: Any, day: str) -> tuple[dict[str, Any], int]:
    row = con.execute(f"SELECT canonical_json, tokens FROM {DOCUMENTS} WHERE day = ?", [day]).fetchone()
    if row is None:
        raise LookupError(f"day {day} has no document in the warehouse; materialize day_document first")
    return json.loads(row[0]), int(row[1])


def day_artifacts(con: Any, day: str, generated_at: str) -> tuple[dict[str, bytes], str, bool, dict[str, str]]:
    """The published files of one day from the warehouse: (files, canonical sha256, sealed, segments)."""

    row = con.execute(f"SELECT canonical_json, sha256, sealed FROM {DOCUMENTS} WHERE day = ?", [day]).fetchone()
    ctx = con.execute(f"SELECT text FROM {CONTEXTS} WHERE day = ?", [day]).fetchone()
    if row is None or ctx is None:
        raise LookupError(f"day {day} has no document or context block in the warehouse")
    doc = json.loads(row[0])
    files = artifact_bytes(doc, ctx[0], generated_at)
    segments = {s["file"]: s["sha256"] for s in doc.get("provenance", {}).get("segments", [])}
    return files, str(row[1]), bool(row[2]), segments


def artifact_bytes(doc: dict[str, Any], context_text: str, generated_at: str) -> dict[str, bytes]:
    """The four published files of a document (document.json is the only one with generated_at)."""
    from af_pipeline import emit

    return {
        "document.json": emit.to_json(dict(doc, generated_at=generated_at)).encode("utf-8"),
        "document.yaml": emit.to_yaml(doc).encode("utf-8"),
        "document.md": emit.to_markdown(doc).encode("utf-8"),
        "context.txt": context_text.encode("utf-8"),
    }
