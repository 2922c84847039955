"""A throwaway PostgreSQL server for the team tests (Debian's postgresql 15; no tests here).

initdb refuses to run as root, and CI runs as root: the cluster lives in a temporary folder
owned by the unprivileged ``postgres`` user (the Debian package creates it) and its programs
run as that user through ``runuser``. As any other user they run as that user. The server
listens on 127.0.0.1 on a free port with trust authentication, for this machine only, and is
stopped (``pg_ctl stop -m immediate``) and removed at the end.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _pg_bin() -> Path:
    # Debian installs each major version under /usr/lib/postgresql/<major>/bin; take the newest.
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


PG_BIN = Path(os.environ["AF_PG_BIN"]) if os.environ.get("AF_PG_BIN") else _pg_bin()
DB_USER = "af"


def available() -> str | None:
    """None if a server can be started here, else why not."""
    if not (PG_BIN / "initdb").exists():
        return f"no PostgreSQL in {PG_BIN} (Debian: apt-get install postgresql)"
    if os.getuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
        if not shutil.which("runuser"):
            return "running as root without runuser"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A running test server: ``url`` to reach it; ``stop()`` (an outage: an immediate shutdown)
    and ``start()`` again on the same data and port."""

    def __init__(self, folder: Path, port: int):
        self.folder, self.data, self.port = folder, folder / "data", port
        self.url = f"postgresql+psycopg2://{DB_USER}@127.0.0.1:{port}/postgres"

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        full = ["runuser", "-u", "postgres", "--", *cmd] if os.getuid() == 0 else list(cmd)
        return subprocess.run(full, check=True, capture_output=True, text=True, cwd=self.folder)

    def start(self) -> None:
        # -w: pg_ctl returns once the server accepts connections (it polls; no fixed sleep here)
        self.run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60", "-l", str(self.folder / "server.log"),
                 "-o", f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                 "-c max_connections=200", "start")

    def stop(self) -> None:
        self.run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")


@contextmanager
def server() -> Iterator[Server]:
    """Start a server; yield it; stop it and remove its files."""
    folder = Path(tempfile.mkdtemp(prefix="af-pg-"))
    if os.getuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(folder, pw.pw_uid, pw.pw_gid)
    folder.chmod(0o700)
    pg = Server(folder, _free_port())
    try:
        pg.run(str(PG_BIN / "initdb"), "-D", str(pg.data), "-A", "trust", "-U", DB_USER, "-E", "UTF8", "--no-sync")
        pg.start()
        yield pg
    finally:
        if (pg.data / "postmaster.pid").exists():
            try:
                pg.stop()
            except subprocess.CalledProcessError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres() -> Iterator[str]:
    """Start a server; yield its SQLAlchemy URL (postgresql+psycopg2://af@127.0.0.1:PORT/postgres); stop it."""
    with server() as pg:
        yield pg.url
