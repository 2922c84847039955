"""A real ActivityWatch server for tests (not a test module): aw-server from PyPI in testing mode.

It runs from the project's .venv-aw (made by `make setup` / `make test`), on a free loopback port,
with in-memory storage and its own HOME, so nothing outside the test's folder is touched. Events
are fed through the official aw-client in a subprocess of that venv.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("AF_AW_VENV", ROOT / ".venv-aw"))
WAIT_S = 60.0


def available() -> Path:
    exe = VENV / "bin" / "aw-server"
    if not exe.exists():
        msg = f"aw-server is not installed in {VENV}: run `make setup`"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class AwServer:
    def __init__(self, folder: Path, port: int | None = None, storage: str = "memory"):
        self.exe = available()
        self.storage = storage  # memory, or peewee: the SQLite file a real installation keeps
        self.folder = folder
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        home = str(self.folder)
        return {**os.environ, "HOME": home, "XDG_DATA_HOME": home, "XDG_CONFIG_HOME": home,
                "XDG_CACHE_HOME": home}

    def start(self) -> AwServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [str(self.exe), "--testing", "--host", "127.0.0.1", "--port", str(self.port), "--storage", self.storage],
            env=self.env(), stdout=subprocess.DEVNULL, stderr=open(self.folder / "aw-server.log", "ab"),
        )
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:  # wait for the server to answer, not for a fixed time
            if self.proc.poll() is not None:
                raise RuntimeError(f"aw-server exited: {(self.folder / 'aw-server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/0/info", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"aw-server did not answer on {self.url} within {WAIT_S:g} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)
        self.proc = None

    def feed(self, bucket: str, kind: str, heartbeats: list[tuple[str, float, dict]], pulsetime: float = 3.0) -> None:
        """Send heartbeats (ISO start, duration s, data) through aw-client, as a watcher does."""
        script = (
            "import json, sys\n"
            "from datetime import datetime, timedelta\n"
            "from aw_client import ActivityWatchClient\n"
            "from aw_core.models import Event\n"
            "a = json.loads(sys.argv[1])\n"
            "c = ActivityWatchClient('af-test-feed', testing=True, host='127.0.0.1', port=a['port'])\n"
            "c.create_bucket(a['bucket'], event_type=a['kind'], queued=False)\n"
            "for ts, dur, data in a['beats']:\n"
            "    e = Event(timestamp=datetime.fromisoformat(ts), duration=timedelta(seconds=dur), data=data)\n"
            "    c.heartbeat(a['bucket'], e, pulsetime=a['pulse'], queued=False)\n"
        )
        arg = json.dumps({"port": self.port, "bucket": bucket, "kind": kind, "beats": heartbeats, "pulse": pulsetime})
        subprocess.run([str(VENV / "bin" / "python"), "-c", script, arg], env=self.env(), check=True,
                       capture_output=True, timeout=120)

    def export(self) -> bytes:
        """What the web UI's "Export all buckets as JSON" downloads (GET /api/0/export)."""
        with urllib.request.urlopen(f"{self.url}/api/0/export", timeout=30) as r:
            return r.read()  # type: ignore[no-any-return]

    def database(self) -> Path:
        """The peewee SQLite file the server writes (storage peewee), under its data folder."""
        found = sorted(self.folder.rglob("peewee-sqlite*.db"))
        if not found:
            raise FileNotFoundError(f"aw-server wrote no peewee database under {self.folder}")
        return found[0]

    def events(self, bucket: str) -> list[dict]:
        with urllib.request.urlopen(f"{self.url}/api/0/buckets/{bucket}/events", timeout=10) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]


