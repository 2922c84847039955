"""The per-day steps the assets and the certification rebuild share (af_pipeline/warehouse/day_work.py)."""

from __future__ import annotations

import duckdb
import pytest
from dagster_support import corpus, days_of, new_home

from af_pipeline.warehouse import day_work as steps
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
        steps.build_day(con, log, day, tmp_path / "published", False, "test", "2026-01-01T00:00:00Z")
        doc, _tokens = steps.document(con, day)
        (sha,) = con.execute("SELECT sha256 FROM day_document WHERE day = ?", [day]).fetchone()
    finally:
        con.close()
    from af_pipeline.warehouse import publish

    manifest = publish.read_manifest(tmp_path / "published", day)
    assert manifest is not None and manifest["canonical_sha256"] == sha
    assert doc["day"] == day
