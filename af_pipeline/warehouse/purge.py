"""After ``af forget``: no copy of the forgotten rows stays in the warehouse or published files.

The affected days' rows leave every warehouse table (each holds a ``day`` column), their
document files and published folders are removed (published/days.js then lists the days left),
what was mined from every day at once (the routine tables, the published replay plans) is
removed for the routines job to mine again, and the DuckDB file is rewritten into a new file
(DuckDB keeps the blocks a DELETE freed, with their bytes, until they are reused). The days
are then simply not built: the next `af build` (or the nightly run) builds them again from the
rewritten log. Dagster's storage holds no capture text (counts, row ids, rule names), so it is
left as it is.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from capture.errors import UserError
from capture.home import Home

LOCK_FILE = "warehouse.lock"  # the one assets/instance.py takes for every run: held here too
DOCUMENT_SUFFIX = ".json.gz"
PLANS_SUBDIR = "routines"  # published/routines/: the replay plans (assets/routines.py)


@dataclass
class Purged:
    published: list[str] = field(default_factory=list)  # day folders removed
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows deleted
    documents: int = 0  # document files removed
    rewritten: bool = False  # the DuckDB file was copied into a new one
    dropped: list[str] = field(default_factory=list)  # whole-history tables (routines) dropped
    plans: bool = False  # the published routine plans (published/routines/) removed


@contextmanager
def _warehouse_lock(home: Home, say: Callable[[str], None]) -> Iterator[None]:
    path = home.root / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    say(f"waiting for the warehouse of {home.root}: a build is using it (Ctrl-C to give up; "
                        "the log has forgotten the rows already, and `af forget` run again finishes this)")
                    told = True
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)


def purge_days(home: Home, days: Sequence[str], say: Callable[[str], None] = lambda _m: None) -> Purged:
    """Remove ``days`` from the published files and the warehouse, rewriting its file."""
    out = Purged()
    chosen = sorted(set(days))
    if not chosen:
        return out
    for day in chosen:
        folder = home.published_dir / day
        if folder.is_dir():
            shutil.rmtree(folder)
            out.published.append(day)
    if out.published:
        # published/days.js (the pages' links, index.html's list, file:// included) named the
        # removed days: listed again from the folders left, as a build does after publishing
        from af_pipeline.warehouse.publish import write_days_list

        write_days_list(home.published_dir)
    plans = home.published_dir / PLANS_SUBDIR  # mined from every day, like the routine tables
    if plans.is_dir():
        shutil.rmtree(plans)
        out.plans = True
    db = home.warehouse_path
    documents = db.with_name(f"{db.stem}.documents")
    if not db.exists() and not documents.is_dir():
        return out
    import duckdb  # on first use: only a forget in a folder that was built needs it

    with _warehouse_lock(home, say):
        if db.exists():
            try:
                con = duckdb.connect(str(db))
            except duckdb.Error as exc:
                raise UserError(f"the warehouse {db} cannot be opened to remove the forgotten days ({exc}); "
                                "stop what holds it (af ui, af mcp) and run the same `af forget` again") from None
            try:
                tables = [t for (t,) in con.execute(
                    "SELECT table_name FROM information_schema.columns c JOIN information_schema.tables t "
                    "USING (table_schema, table_name) WHERE table_type = 'BASE TABLE' AND column_name = 'day' "
                    "AND table_schema = 'main' ORDER BY table_name").fetchall()]
                for table in tables:
                    n = con.execute(f'DELETE FROM "{table}" WHERE day IN (SELECT unnest($days))',
                                    {"days": chosen}).fetchone()
                    if n and n[0]:
                        out.rows[table] = int(n[0])
                # Tables mined from every day at once (the routine tables) hold what the forgotten
                # rows contributed and cannot say which part: dropped, the routines job mines
                # them again (raw_* are the log's own bookkeeping: kept).
                for (table,) in con.execute(
                        "SELECT table_name FROM information_schema.tables t WHERE table_schema = 'main' "
                        "AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'raw\\_%' ESCAPE '\\' "
                        "AND NOT EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_schema = 'main' "
                        "AND c.table_name = t.table_name AND c.column_name = 'day') ORDER BY table_name").fetchall():
                    con.execute(f'DROP TABLE "{table}"')
                    out.dropped.append(table)
                con.execute("CHECKPOINT")
            finally:
                con.close()
            _rewrite(db)
            out.rewritten = True
        if documents.is_dir():
            for day in chosen:
                for path in documents.glob(f"{day}.*{DOCUMENT_SUFFIX}"):
                    path.unlink()
                    out.documents += 1
    return out


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _rewrite(db: Path) -> None:
    """Copy the database into a new file and put it in place: freed blocks are not copied."""
    import duckdb

    fresh = db.with_name(f".{db.name}.rewrite")
    for p in (fresh, fresh.with_name(fresh.name + ".wal")):
        p.unlink(missing_ok=True)
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{_sql_path(db)}' AS old_db (READ_ONLY)")
        con.execute(f"ATTACH '{_sql_path(fresh)}' AS new_db")
        con.execute("COPY FROM DATABASE old_db TO new_db")
        con.execute("DETACH new_db")
        con.execute("DETACH old_db")
    finally:
        con.close()
    fd = os.open(fresh, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(fresh, db)
    db.with_name(db.name + ".wal").unlink(missing_ok=True)  # checkpointed before the copy
