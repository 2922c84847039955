"""Days a build can skip: published from the segments the log holds now, by the code of now.

A sealed day's published files are a function of its sealed segments and the code version
(af_pipeline/warehouse/publish.py). Each build of a day records, in the warehouse table
``built_days``, the code version and the segments it built from (no ``seq`` column: the table is
bookkeeping, not a result, so the rebuild comparison of certification leaves it out; the
published manifest cannot say it, as a sealed day's manifest is not rewritten when new code
gives the same bytes). When that record names the current code version and exactly the segments
the log's manifest chain records for the day now (an amendment adds one), the published manifest
names the same segments, and the warehouse holds the document that manifest names, building the
day again would write the same bytes: ``af build``, the nightly schedule and the sensor leave it alone, files and
mtimes included. An open day is never skipped (its capture changes without a new segment).
``af build --force`` (the run tag FORCE_TAG) builds every day of its range regardless.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from af_pipeline.warehouse import publish
from capture.log import EventLog, amendment_of, segment_name

FORCE_TAG = "af/force"
REASON = "published from the same sealed segments with the same code version"
# An unchanged day's materialization (assets/day_assets.py) keeps the numbers of the day's
# previous one and says so in its own field: UNCHANGED (the reason), NUMBERS_FROM (the run that
# computed them). "skipped" replaced the numbers in earlier releases: not carried forward.
UNCHANGED = "unchanged"
NUMBERS_FROM = "numbers from run"
NOT_KEPT = frozenset({UNCHANGED, NUMBERS_FROM, "skipped"})


def log_segments(log: EventLog, day: str) -> dict[str, str]:
    """``sealed/<segment>/<file>`` -> sha256 as the manifest chain records them ({} while open):
    the keys and values a build of the day puts in its published manifest."""
    out: dict[str, str] = {}
    for entry in log.day_entries(day):
        name = segment_name(day, max(amendment_of(entry), 0))
        files: dict[str, Any] = entry["files"] if isinstance(entry.get("files"), dict) else {}
        for fname, meta in sorted(files.items()):
            out[f"sealed/{name}/{fname}"] = str(meta.get("sha256")) if isinstance(meta, dict) else ""
    return out


BUILT = "built_days"


def _segments_text(segments: Mapping[str, str]) -> str:
    return json.dumps(dict(sorted(segments.items())), sort_keys=True, separators=(",", ":"))


def up_to_date(
    published_dir: Path, log: EventLog, day: str, version: str, stored: Mapping[str, tuple[str, str, str]]
) -> bool:
    """Whether building ``day`` again would change nothing (see the module docstring).
    ``stored``: stored_state of the warehouse."""
    segments = log_segments(log, day)
    if not segments or day not in stored:
        return False
    sha, built_version, built_segments = stored[day]
    if built_version != version or built_segments != _segments_text(segments):
        return False
    manifest = publish.read_manifest(published_dir, day)
    return (
        manifest is not None
        and manifest.get("sealed") is True
        and manifest.get("segments") == segments
        and manifest.get("canonical_sha256") == sha
    )


def _has_table(con: Any, table: str) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ?", [table]
    ).fetchone()
    return bool(row and row[0])


def stored_state(con: Any, days: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """day -> (sha256 of the day's document in the warehouse, code version and segments (JSON) it
    was built with), for the days the warehouse holds both for."""
    wanted = sorted(set(days))
    if not wanted or not (_has_table(con, "day_document") and _has_table(con, BUILT)):
        return {}
    rows = con.execute(
        f"SELECT d.day, d.sha256, b.code_version, b.segments FROM day_document d JOIN {BUILT} b USING (day) "
        "WHERE d.day IN (SELECT unnest(?::VARCHAR[]))", [wanted]
    ).fetchall()
    return {str(r[0]): (str(r[1]), str(r[2]), str(r[3])) for r in rows}


def record_built(con: Any, day: str, version: str, segments: Mapping[str, str]) -> None:
    """Record that ``day`` was built by ``version`` from ``segments`` (replacing what was recorded)."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {BUILT} (day VARCHAR, code_version VARCHAR, segments VARCHAR)")
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"DELETE FROM {BUILT} WHERE day = ?", [day])
        con.execute(f"INSERT INTO {BUILT} VALUES (?, ?, ?)", [day, version, _segments_text(segments)])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def record_published(con: Any, published_dir: Path, day: str, version: str, published: Mapping[str, Any]) -> None:
    """After a build of ``day`` (``published``: its published_day numbers): record what a later
    build compares to skip it, when the day was published sealed (a withheld or open day never is)."""
    if published.get("withheld") or not published.get("sealed"):
        return
    manifest = publish.read_manifest(published_dir, day) or {}
    record_built(con, day, version, manifest.get("segments") or {})


def split(
    published_dir: Path, log: EventLog, days: Iterable[str], version: str, stored: Mapping[str, tuple[str, str, str]]
) -> tuple[list[str], list[str]]:
    """(days to build, days to skip), each in the given order."""
    todo: list[str] = []
    skip: list[str] = []
    for day in days:
        (skip if up_to_date(published_dir, log, day, version, stored) else todo).append(day)
    return todo, skip


def latest_metadata(instance: Any, asset_key: Any, days: Sequence[str]) -> dict[str, tuple[dict[str, Any], str]]:
    """day -> (metadata, run id) of each day's latest materialization of the asset (days never
    materialized are left out): newest first, a page at a time until every day is found."""
    import dagster as dg

    wanted = set(days)
    found: dict[str, tuple[dict[str, Any], str]] = {}
    cursor = None
    while wanted:
        page = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=sorted(wanted)),
            limit=max(100, 2 * len(wanted)), cursor=cursor, ascending=False,
        )
        for record in page.records:
            mat = record.asset_materialization
            if mat is not None and mat.partition in wanted:
                found[mat.partition] = (dict(mat.metadata), record.run_id)
                wanted.discard(mat.partition)
        if not page.has_more:
            break
        cursor = page.cursor
    return found
