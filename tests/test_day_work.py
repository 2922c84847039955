"""The per-day steps the assets and the certification rebuild share (af_pipeline/warehouse/day_work.py)."""

from __future__ import annotations

import duckdb
import pytest
from dagster_support import corpus, days_of, new_home

from af_pipeline.warehouse import day_work as steps
from af_pipeline.warehouse import store
from capture.log import EventLog


@pytest.fixture(scope="module")
def one_day(tmp_path_factory):
    home = new_home(tmp_path_factory.mktemp("steps"))
    batch = corpus(1)
    log = EventLog(home)
    log.append(batch)
    return home, log, days_of(batch)[0]


def test_documents_read_back_are_the_stored_ones_with_or_without_the_memory(one_day, tmp_path):
    home, log, day = one_day
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        steps.raw_day(con, log, day)
        meta = steps.day_document(con, day, include_typed_text=False)
        remembered = steps.document(con, day)
        steps._RECENT_DOCS.clear()
        assert steps.document(con, day) == remembered
        assert remembered[1] == meta["document_tokens"]
        # Another document stored under another hash is read from the table, never from memory.
        steps._remember("f" * 64, '{"not": "this day"}')
        assert steps.document(con, day) == remembered
    finally:
        con.close()


def test_recent_documents_are_bounded():
    steps._RECENT_DOCS.clear()
    for i in range(steps._RECENT_MAX + 5):
        steps._remember(f"{i:064x}", "{}")
    assert len(steps._RECENT_DOCS) == steps._RECENT_MAX
    assert f"{0:064x}" not in steps._RECENT_DOCS and f"{steps._RECENT_MAX + 4:064x}" in steps._RECENT_DOCS


def test_every_step_of_a_day_publishes_what_the_document_says(one_day, tmp_path):
    home, log, day = one_day
    con = duckdb.connect(":memory:")
    try:
        steps.build_day(con, log, day, tmp_path / "published", False, "test")
        doc, _tokens = steps.document(con, day)
        (sha,) = con.execute("SELECT sha256 FROM day_document WHERE day = ?", [day]).fetchone()
    finally:
        con.close()
    from af_pipeline.warehouse import publish

    manifest = publish.read_manifest(tmp_path / "published", day)
    assert manifest is not None and manifest["canonical_sha256"] == sha
    assert doc["day"] == day


def test_a_day_built_step_after_step_reads_its_capture_once(one_day, tmp_path):
    home, log, day = one_day
    store.LOADS.clear()
    con = duckdb.connect(":memory:")
    try:
        steps.build_day(con, log, day, tmp_path / "published", False, "test")
    finally:
        con.close()
    assert store.LOADS == {day: 1}


@pytest.mark.parametrize("typed", [False, True])
def test_steps_building_on_each_other_give_what_steps_rereading_the_warehouse_give(one_day, tmp_path, typed):
    """Parts handed on in memory (one run) and parts recomputed by each step alone (a step
    materialized by itself) give the same tables and the same published bytes."""
    home, log, day = one_day
    out = {}
    for carried in (True, False):
        con = duckdb.connect(":memory:")
        published = tmp_path / f"published-{carried}"
        try:
            run = steps.RunParts() if carried else None
            steps.raw_day(con, log, day, run)
            steps.frames(con, day, run)
            steps.enriched_input(con, day, typed, run)
            steps.page_refs(con, day, run)
            steps.day_document(con, day, typed, run)
            meta = steps.context_block(con, day, run)
            steps.published_day(con, day, published, "test", run)
            digests = store.digests(con, [day])[day]
        finally:
            con.close()
        files = {p.name: p.read_bytes() for p in sorted((published / day).iterdir())}
        out[carried] = (digests, files, meta)
    assert out[True] == out[False]
    digests, files, meta = out[True]
    assert int(digests["frames"].split(":")[0]) > 0 and int(digests["enriched_input"].split(":")[0]) > 0
    assert meta["raw_rows_tokens"] > 0 and "document.md" in files


def test_a_run_that_holds_too_many_rows_carries_nothing_and_still_builds(one_day, tmp_path):
    home, log, day = one_day
    store.LOADS.clear()
    con = duckdb.connect(":memory:")
    try:
        run = steps.RunParts(max_rows=0)
        steps.raw_day(con, log, day, run)
        steps.frames(con, day, run)
        steps.enriched_input(con, day, False, run)
        steps.day_document(con, day, False, run)
        assert run.held(day) is None
        doc, _tokens = steps.document(con, day)
    finally:
        con.close()
    assert store.LOADS[day] == 3  # each step read the day again, as a step materialized alone does
    assert doc["day"] == day and doc["frames"]
