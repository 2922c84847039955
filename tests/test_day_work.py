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
def test_a_day_built_at_once_gives_what_its_steps_alone_give(one_day, tmp_path, typed):
    """build_day (the parts handed on in one call) and the steps taken one by one from the
    warehouse's rows (day_parts on a capture read back, each part written by its writer) give
    the same tables and the same published bytes."""
    from af_pipeline.warehouse import quality

    home, log, day = one_day
    out = {}
    for at_once in (True, False):
        con = duckdb.connect(":memory:")
        published = tmp_path / f"published-{at_once}"
        try:
            if at_once:
                meta = steps.build_day(con, log, day, published, typed, "test", measure_raw=True)[steps.CONTEXTS]
            else:
                steps.raw_day(con, log, day, typed)
                for step, part in steps.day_parts(store.load_capture(con, day, lazy_elements=True), typed, None):
                    if step == steps.PUBLISHED:
                        assert quality.failing_days(con, [day]) == {}
                        steps.published_day(day, published, "test", part)
                    else:
                        got = steps.WRITERS[step](con, day, part)
                        meta = got if step == steps.CONTEXTS else meta
            digests = store.digests(con, [day])[day]
        finally:
            con.close()
        files = {p.name: p.read_bytes() for p in sorted((published / day).iterdir())}
        out[at_once] = (digests, files, meta)
    assert out[True] == out[False]
    digests, files, meta = out[True]
    assert int(digests["frames"].split(":")[0]) > 0 and int(digests["enriched_input"].split(":")[0]) > 0
    assert meta["raw_rows_tokens"] > 0 and "document.md" in files


def test_the_document_step_alone_reads_the_rows_from_the_warehouse(one_day, tmp_path):
    home, log, day = one_day
    store.LOADS.clear()
    con = duckdb.connect(":memory:")
    try:
        steps.raw_day(con, log, day)
        meta = steps.day_document(con, day, False)
        doc, tokens = steps.document(con, day)
    finally:
        con.close()
    assert store.LOADS[day] == 1
    assert doc["day"] == day and doc["frames"] and tokens == meta["document_tokens"]


def _to_old_layout(con):
    """Make a warehouse look as the code before registered days wrote it: raw_* as tables
    holding every row, no raw_files, raw_root or per-month views."""
    for kind, view in store.RAW_TABLES.items():
        con.execute(f"CREATE TABLE old_{kind} AS SELECT * FROM {view} ORDER BY day, seq")
        con.execute(f"DROP VIEW {view}")
        con.execute(f"DROP TABLE {store.COPIED_TABLES[kind]}")
        con.execute(f"ALTER TABLE old_{kind} RENAME TO {view}")
    con.execute(f"DROP TABLE {store.RAW_FILES}")
    con.execute(f"DROP TABLE {store.RAW_ROOT}")
    con.execute(f"DROP SCHEMA IF EXISTS {store.PARTS} CASCADE")  # the per-month views of a later layout


def test_a_sealed_day_is_registered_not_copied_and_reads_as_the_log(one_day, tmp_path):
    home, log, day = one_day
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        steps.raw_day(con, log, day)
        kinds = dict(con.execute("SELECT kind, rows FROM raw_files WHERE day = ?", [day]).fetchall())
        assert set(kinds) == set(store.ROW_KINDS)  # every kind read from its sealed file
        for kind, table in store.COPIED_TABLES.items():
            assert con.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), kind
            (n,) = con.execute(f"SELECT count(*) FROM {store.RAW_TABLES[kind]} WHERE day = ?", [day]).fetchone()
            assert n == kinds[kind]
        cap, want = store.load_capture(con, day), log.read_day(day)
        for kind in store.ROW_KINDS:
            assert getattr(cap, kind) == getattr(want, kind), kind
    finally:
        con.close()


def test_a_warehouse_of_the_old_layout_is_migrated_in_place_and_builds_the_same(one_day, tmp_path):
    home, log, day = one_day
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    try:
        steps.build_day(con, log, day, tmp_path / "published", False, "test")
        want = store.digests(con, [day])
        _to_old_layout(con)
        con.close()
        con = duckdb.connect(str(path))
        assert store.digests(con, [day]) == want  # the old tables compare as the views would
        cap = store.load_capture(con, day)  # migrates: the old rows are the copied rows
        assert cap.snapshots == log.read_day(day).snapshots
        assert con.execute("SELECT count(*) FROM raw_files").fetchone() == (0,)
        assert store.digests(con, [day]) == want
        steps.build_day(con, log, day, tmp_path / "published", False, "test")  # registers the day
        assert con.execute("SELECT count(*) FROM raw_copied_snapshots").fetchone() == (0,)
        assert con.execute("SELECT count(DISTINCT kind) FROM raw_files").fetchone() == (len(store.ROW_KINDS),)
        assert store.digests(con, [day]) == want
    finally:
        con.close()


def test_a_moved_data_folder_is_read_from_its_new_place(one_day, tmp_path):
    import shutil

    from capture.home import Home

    home, log, day = one_day
    moved = Home(tmp_path / "moved")
    shutil.copytree(home.root, moved.root)
    con = duckdb.connect(":memory:")
    try:
        steps.raw_day(con, log, day)
        want = store.digests(con, [day])
        steps.raw_day(con, EventLog(moved), day)
        (root,) = con.execute("SELECT log_dir FROM raw_root").fetchone()
        assert root.startswith(str(moved.root.resolve()))
        assert store.digests(con, [day]) == want
    finally:
        con.close()


def test_a_warehouse_moved_with_its_data_folder_follows_it(tmp_path):
    import shutil

    from capture.home import Home

    home = new_home(tmp_path / "a")
    batch = corpus(1)
    day = days_of(batch)[0]
    EventLog(home).append(batch)
    con = duckdb.connect(str(home.warehouse_path))
    steps.raw_day(con, EventLog(home), day)
    want = store.digests(con, [day])
    con.close()
    moved = Home(tmp_path / "b")
    shutil.move(home.root, moved.root)  # the old place is gone
    con = duckdb.connect(str(moved.warehouse_path))
    try:
        assert store.digests(con, [day]) == want  # the views name the files at the new place
        assert store.load_capture(con, day).snapshots
    finally:
        con.close()


def test_documents_are_private_files_checked_against_their_hash(one_day, tmp_path):
    """The warehouse holds the document's hash; the document is a gzip file beside the DuckDB
    file, mode 0600, and a file that no longer matches its hash is refused, naming the file."""
    import gzip
    import stat

    from capture.errors import CheckFailed

    home, log, day = one_day
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        steps.raw_day(con, log, day)
        meta = steps.day_document(con, day, include_typed_text=False)
        assert not store.has_column(con, steps.DOCUMENTS, steps.INLINE_DOCUMENT)
        (path,) = (tmp_path / "w.documents").iterdir()
        assert path.name == f"{day}.{meta['canonical_sha256']}.json.gz"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert steps.document_hashes(con, [day]) == {day: meta["canonical_sha256"]}
        steps._RECENT_DOCS.clear()
        path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()).replace(b'"frames"', b'"framez"', 1)))
        with pytest.raises(CheckFailed, match=f"{path.name}.*changed after it was written"):
            steps.document(con, day)
        assert steps.document_hashes(con, [day])[day] != meta["canonical_sha256"]
        steps.day_document(con, day, include_typed_text=False)  # building the day again mends it
        assert steps.document_hashes(con, [day]) == {day: meta["canonical_sha256"]}
        path.unlink()
        steps._RECENT_DOCS.clear()
        with pytest.raises(CheckFailed, match="missing"):
            steps.document(con, day)
    finally:
        con.close()


def test_a_warehouse_with_documents_in_the_table_is_migrated_in_place(one_day, tmp_path):
    """Warehouses written before document files kept each document in a column: they read as
    before, and the next document written moves every stored one to its file."""
    import hashlib

    home, log, day = one_day
    empty = hashlib.sha256(b"{}").hexdigest()
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        steps.raw_day(con, log, day)
        meta = steps.day_document(con, day, include_typed_text=False)
        steps._RECENT_DOCS.clear()
        doc, n_tokens = steps.document(con, day)
        text = store.read_document_bytes(con, day, meta["canonical_sha256"]).decode()
        # the old layout: the text as the first column, no file
        con.execute("CREATE TABLE old AS SELECT day, seq, ? AS canonical_json, sha256, frames, active_min, tokens, "
                    "sealed FROM day_document", [text])
        con.execute("DROP TABLE day_document")
        con.execute("ALTER TABLE old RENAME TO day_document")
        con.execute("INSERT INTO day_document SELECT '1999-01-01', 0, '{}', ?, 0, 0.0, 1, true", [empty])
        for f in (tmp_path / "w.documents").iterdir():
            f.unlink()
        assert steps.document(con, day) == (doc, n_tokens)  # read from the column
        assert steps.document_hashes(con, [day]) == {day: meta["canonical_sha256"]}
        steps.day_document(con, day, include_typed_text=False)
        assert not store.has_column(con, steps.DOCUMENTS, steps.INLINE_DOCUMENT)
        steps._RECENT_DOCS.clear()
        assert steps.document(con, day) == (doc, n_tokens)
        assert steps.document_hashes(con, ["1999-01-01"]) == {"1999-01-01": empty}
        assert sorted(p.name[:10] for p in (tmp_path / "w.documents").iterdir()) == ["1999-01-01", day]
    finally:
        con.close()


def test_a_batch_commits_every_write_of_a_step_or_none(tmp_path):
    """A step's days are one transaction: a failure on a later day leaves the earlier days as
    they were, and what waits for the commit (removing a day's old document file) does not run."""
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    cols = {"v": "BIGINT"}
    try:
        store.replace_day(con, "t", "2026-01-01", cols, [(1,)])
        done: list[str] = []
        with pytest.raises(RuntimeError), store.batch(con):
            store.replace_day(con, "t", "2026-01-01", cols, [(2,)])
            store.replace_day(con, "t", "2026-01-02", cols, [(3,)])
            store.after_commit(con, lambda: done.append("late"))
            raise RuntimeError("the third day failed")
        assert con.execute("SELECT day, v FROM t ORDER BY day").fetchall() == [("2026-01-01", 1)]
        assert done == []
        with store.batch(con):
            with store.batch(con):  # re-entrant: still the one transaction
                store.replace_day(con, "t", "2026-01-01", cols, [(2,)])
            store.replace_day(con, "t", "2026-01-02", cols, [(3,)])
            store.after_commit(con, lambda: done.append("late"))
            assert done == []
        assert done == ["late"]
        assert con.execute("SELECT day, v FROM t ORDER BY day").fetchall() == [("2026-01-01", 2), ("2026-01-02", 3)]
        store.after_commit(con, lambda: done.append("now"))  # outside a batch: at once
        assert done == ["late", "now"]
    finally:
        con.close()
