"""Team corpora for the team tests (no tests here): one `af synth` capture per user, seeded.

Each user's capture is `af synth` (screenpipe's SQLite layout) with its own seed, cut to one
hour a day (09:00-10:00 Paris, 07 UTC in June) by deleting the other rows from a copy of the
database, so every day stays small, and landed through the real importer (`af import
screenpipe`). Generating is the slow part (seconds per user): the cut databases are kept in a
cache folder named after the synthesizer's source, so they are made once per synthesizer
version and machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import multiprocessing
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from capture.home import Home

# Fresh interpreters, not forks: a test worker has threads (DuckDB, Dagster, execnet), and a
# child forked from it crashed once in the garbage collector (SIGSEGV, clean-clone run).
_SPAWN = multiprocessing.get_context("spawn")

TZ = "Europe/Paris"
START = "2026-06-01"
KEEP_UTC_HOUR = "07"
_SOURCES = ("capture/synth.py", "capture/synth_world.py", "capture/synth_worker.py")
_ROOT = Path(__file__).resolve().parents[1]


def _cache() -> Path:
    h = hashlib.sha256()
    for name in _SOURCES:
        p = _ROOT / name
        if p.exists():
            h.update(p.read_bytes())
    return Path(tempfile.gettempdir()) / f"af-team-corpora-{h.hexdigest()[:12]}"


@contextlib.contextmanager
def _cache_lock() -> Iterator[None]:
    """One maker of the cache at a time: parallel test workers (pytest -n) ask for the same users."""
    root = _cache()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _make(job: tuple[int, int, str]) -> str:
    from capture.synth import DB_NAME, generate

    seed, days, target = job
    out = Path(target)
    if (out / "cut.sqlite").exists():
        return target
    work = Path(tempfile.mkdtemp(prefix=f"af-synth-{seed}-"))
    try:
        generate(days, seed, work, start_day=START, tz=TZ, parallel=False)
        db = work / DB_NAME
        con = sqlite3.connect(db)
        con.execute(f"DELETE FROM frames WHERE strftime('%H', timestamp) != '{KEEP_UTC_HOUR}'")
        con.execute(f"DELETE FROM ui_events WHERE strftime('%H', timestamp) != '{KEEP_UTC_HOUR}'")
        con.execute("DELETE FROM elements WHERE frame_id NOT IN (SELECT id FROM frames)")
        con.commit()
        con.execute("VACUUM")
        con.close()
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / f"cut.sqlite.{seed}.partial"
        shutil.copyfile(db, tmp)
        tmp.replace(out / "cut.sqlite")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def corpora(seeds: list[int], days: int) -> dict[int, Path]:
    """seed -> a cut screenpipe database of ``days`` days (made in 2 processes when missing)."""
    root = _cache()
    jobs = [(s, days, str(root / f"seed{s}-days{days}")) for s in seeds]
    with _cache_lock():
        todo = [j for j in jobs if not (Path(j[2]) / "cut.sqlite").exists()]
        if todo:
            with ProcessPoolExecutor(max_workers=2, mp_context=_SPAWN) as pool:
                list(pool.map(_make, todo))
    return {s: Path(t) / "cut.sqlite" for s, _d, t in jobs}


def _import(job: tuple[str, str]) -> str:
    from af_pipeline.interfaces import cli

    db, target = job
    out = Path(target)
    if (out / "done").exists():
        return target
    shutil.rmtree(out, ignore_errors=True)
    Home(out).init(tz=TZ)
    code = cli.main(["import", "screenpipe", db, "--home", str(out), "--quiet"])
    assert code == 0, f"import of {db} into {out} exited {code}"
    (out / "done").write_text("")
    return target


def user_folders(seeds: list[int], days: int) -> dict[int, Path]:
    """seed -> a cached data folder holding that seed's cut capture, imported (copy it before use).

    Named after the code version too: a change to the importer or the log makes new folders."""
    from af_pipeline.warehouse.version import code_version

    dbs = corpora(seeds, days)
    root = _cache() / f"homes-{code_version()}"
    jobs = [(str(dbs[s]), str(root / f"seed{s}")) for s in seeds]
    with _cache_lock():
        todo = [j for j in jobs if not (Path(j[1]) / "done").exists()]
        if todo:
            with ProcessPoolExecutor(max_workers=2, mp_context=_SPAWN) as pool:
                list(pool.map(_import, todo))
    return {s: Path(t) for s, (_db, t) in zip(seeds, jobs, strict=True)}


def copy_folder(src: Path, dst: Path) -> Home:
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("done"))
    dst.chmod(0o700)
    return Home(dst)


def two_user_team(root: Path, seeds: list[int], days: int = 10):  # -> capture.team.Team
    """A team at ``root/team`` whose users alice and bob hold copies of the first two seeds' folders."""
    from capture.team import Team

    folders = user_folders(seeds, days)
    team = Team(root / "team")
    team.init()
    for name, seed in (("alice", seeds[0]), ("bob", seeds[1])):
        team.add(name, copy_folder(folders[seed], root / name).root)
    return team


def lock_held(path: Path) -> bool:
    """Whether some process holds the flock on ``path`` now (a user's warehouse lock: their work
    is under way). Probes with a non-blocking lock, released at once."""
    import os

    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
