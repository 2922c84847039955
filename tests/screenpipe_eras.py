"""Build screenpipe databases of every era from screenpipe's own migrations (test helper).

The layout comes from the shipped SQL migrations (``shared/data/screenpipe-migrations``, beside
the repository; ``AF_SCREENPIPE_MIGRATIONS`` overrides the folder), applied in file-name order
and stopped after an era's date. Rows are written the way screenpipe's insert code writes them
(read in its ``crates/screenpipe-db/src/db.rs`` of each period, not copied):

- 2024-08: one ``frames`` row per visible window, each timestamped when inserted (so windows of
  one capture cycle differ by milliseconds), ``offset_index`` counting up per row; app, window
  and ``focused`` live in ``ocr_text`` beside the OCR text.
- 2025-02: app, window, url and ``focused`` on ``frames``; the windows of a cycle share one
  timestamp and one ``offset_index``; ``ocr_text.app_name`` is left at its default ''.
- 2026-02: event-driven snapshots (``video_chunk_id`` NULL, ``offset_index`` 0, ``name`` =
  snapshot path, ``capture_trigger``), the accessibility tree as a flat JSON array of
  ``{role, text, depth, bounds}`` nodes in depth-first order.
- current: the same, and each tree node also written to ``elements`` (source 'accessibility',
  parent from a depth stack, ``sort_order`` counting up, NULL text for empty text).

Timestamps are what sqlx writes for a chrono ``DateTime<Utc>``: RFC 3339 with ``+00:00``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

ENV = "AF_SCREENPIPE_MIGRATIONS"
REPO = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO.parent / "shared" / "data" / "screenpipe-migrations" / "migrations"

# The last migration (by date prefix) of each era.
ERAS = {
    "2024-08": "20240831",
    "2025-02": "20250228",
    "2026-02": "20260229",
    "current": "99999999",
}


def migrations_dir() -> Path:
    """The migrations folder; skips the test (fails it under CI) when it is missing."""
    folder = Path(os.environ.get(ENV) or DEFAULT_DIR)
    if not folder.is_dir() or not any(folder.glob("*.sql")):
        msg = (f"screenpipe migrations not found at {folder} (set {ENV}, or put shared/ beside the "
               "repository)")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return folder


def ts(base: datetime, seconds: float) -> str:
    """A timestamp as sqlx encodes DateTime<Utc> (AutoSi fraction, +00:00)."""
    t = base + timedelta(seconds=seconds)
    frac = f".{t.microsecond:06d}" if t.microsecond else ""
    return t.strftime("%Y-%m-%dT%H:%M:%S") + frac + "+00:00"


@dataclass
class Window:
    app: str
    window: str
    focused: bool
    text: str = "some OCR text"
    url: str | None = None


@dataclass
class Node:
    role: str
    text: str
    depth: int
    bounds: tuple[float, float, float, float] | None = (0.1, 0.1, 0.2, 0.05)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"role": self.role, "text": self.text, "depth": self.depth}
        if self.bounds is not None:
            left, top, width, height = self.bounds
            out["bounds"] = {"left": left, "top": top, "width": width, "height": height}
        return out


class EraDB:
    """A screenpipe database that is migrated forward era by era, like a user's upgraded one."""

    _templates: dict[str, tuple[bytes, list[str]]] = {}  # era -> empty migrated database, files applied

    def __init__(self, path: Path, era: str = "current"):
        self.path = path
        self.folder = migrations_dir()
        if era not in self._templates:  # migrate once per era and test session, then copy
            self.con = self._connect(":memory:")
            self.applied = []
            self.upgrade(era)
            self._templates[era] = (self.con.serialize(), list(self.applied))
            self.con.close()
        data, applied = self._templates[era]
        path.write_bytes(data)
        self.con = self._connect(path)
        self.applied = list(applied)
        self.era = era

    @staticmethod
    def _connect(path: Path | str) -> sqlite3.Connection:
        con = sqlite3.connect(path)
        con.execute("PRAGMA synchronous = OFF")  # test fixtures: no fsync per statement
        # sqlite-vec's vec_length appears in a CHECK of one migration; only its existence matters.
        con.create_function("vec_length", 1, lambda blob: len(blob or b"") // 4)
        return con

    def upgrade(self, era: str) -> None:
        until = ERAS[era]
        for f in sorted(self.folder.glob("*.sql")):
            if f.name in self.applied or f.name[:8] > until:
                continue
            self.con.executescript(f.read_text(encoding="utf-8"))
            self.applied.append(f.name)
        self.era = era

    def close(self) -> Path:
        self.con.commit()
        self.con.close()
        return self.path

    def _chunk(self, device: str) -> tuple[int, str]:
        cols = {r[1] for r in self.con.execute("PRAGMA table_info(video_chunks)")}
        path = f"/Users/me/.screenpipe/data/{device}_2024-08-20_09-00-00.mp4"
        row = self.con.execute("SELECT id, file_path FROM video_chunks ORDER BY id DESC LIMIT 1").fetchone()
        if row:
            return int(row[0]), str(row[1])
        if "device_name" in cols:
            cur = self.con.execute("INSERT INTO video_chunks (file_path, device_name) VALUES (?, ?)", (path, device))
        else:
            cur = self.con.execute("INSERT INTO video_chunks (file_path) VALUES (?)", (path,))
        return int(cur.lastrowid or 0), path

    def cycle_2024(self, at: datetime, windows: Sequence[Window], device: str = "monitor_1") -> list[int]:
        """2024-08 insert_frame + insert_ocr_text, once per window (each row its own now())."""
        chunk, _path = self._chunk(device)
        ids = []
        for i, w in enumerate(windows):
            offset = self.con.execute(
                "SELECT COALESCE(MAX(offset_index), -1) + 1 FROM frames WHERE video_chunk_id = ?", (chunk,)
            ).fetchone()[0]
            cur = self.con.execute("INSERT INTO frames (video_chunk_id, offset_index, timestamp) VALUES (?, ?, ?)",
                                   (chunk, offset, ts(at, 0.004 * i)))
            fid = int(cur.lastrowid or 0)
            self.con.execute(
                "INSERT INTO ocr_text (frame_id, text, text_json, app_name, ocr_engine, window_name, focused) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (fid, w.text, "[]", w.app, "AppleNative", w.window, int(w.focused)),
            )
            ids.append(fid)
        return ids

    def cycle_2025(self, at: datetime, windows: Sequence[Window], device: str = "monitor_1") -> list[int]:
        """2025-02 and later video capture: one frame per window, shared timestamp and offset."""
        chunk, path = self._chunk(device)
        offset = self.con.execute(
            "SELECT COALESCE(MAX(offset_index), -1) + 1 FROM frames WHERE video_chunk_id = ?", (chunk,)
        ).fetchone()[0]
        frame_cols = {r[1] for r in self.con.execute("PRAGMA table_info(frames)")}
        ids = []
        for w in windows:
            values: dict[str, object] = dict(video_chunk_id=chunk, offset_index=offset, timestamp=ts(at, 0),
                                             name=path, browser_url=w.url, app_name=w.app, window_name=w.window,
                                             focused=int(w.focused))
            if "device_name" in frame_cols and self.era != "2025-02":
                values["device_name"] = device  # the 2025-02 code did not write it yet ('' default)
            cur = self.con.execute(
                f"INSERT INTO frames ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})", list(values.values()))
            fid = int(cur.lastrowid or 0)
            self.con.execute("INSERT INTO ocr_text (frame_id, text, text_json, ocr_engine, text_length) "
                             "VALUES (?, ?, ?, ?, ?)", (fid, w.text, "[]", "AppleNative", len(w.text)))
            ids.append(fid)
        return ids

    def snapshot(self, at: datetime, app: str, window: str, nodes: Sequence[Node] = (), *,
                 trigger: str = "click", device: str = "monitor_1", url: str | None = None,
                 focused: bool = True) -> int:
        """2026-02 / current insert_snapshot_frame (and, current, the elements dual-write)."""
        snap = f"/Users/me/.screenpipe/data/snapshots/{at:%Y-%m-%d}/{int(at.timestamp() * 1000)}_m1.jpg"
        tree = json.dumps([n.as_json() for n in nodes]) if nodes else None
        text = "\n".join(n.text for n in nodes if n.text) or None
        values: dict[str, object] = dict(
            video_chunk_id=None, offset_index=0, timestamp=ts(at, 0), name=snap, browser_url=url,
            app_name=app, window_name=window, focused=int(focused), device_name=device, snapshot_path=snap,
            capture_trigger=trigger, accessibility_text=text, text_source="accessibility",
            accessibility_tree_json=tree, content_hash=None, simhash=None)
        frame_cols = {r[1] for r in self.con.execute("PRAGMA table_info(frames)")}
        if "full_text" in frame_cols:
            values["full_text"] = text
        cur = self.con.execute(
            f"INSERT INTO frames ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})", list(values.values()))
        fid = int(cur.lastrowid or 0)
        tables = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tree and "elements" in tables:
            stack: list[tuple[int, int]] = []  # (depth, element id): the parent of depth d is the last d-1
            for order, n in enumerate(nodes):
                parent = next((eid for d, eid in reversed(stack) if d == n.depth - 1), None) if n.depth > 0 else None
                b = n.bounds or (None, None, None, None)
                cur = self.con.execute(
                    "INSERT INTO elements (frame_id, source, role, text, parent_id, depth, left_bound, top_bound, "
                    "width_bound, height_bound, confidence, sort_order) VALUES (?, 'accessibility', ?, ?, ?, ?, ?, ?, "
                    "?, ?, NULL, ?)",
                    (fid, n.role, n.text or None, parent, n.depth, *b, order))
                while stack and stack[-1][0] >= n.depth:
                    stack.pop()
                stack.append((n.depth, int(cur.lastrowid or 0)))
        return fid


BASE = datetime(2024, 8, 20, 9, 0, 0, 250000, tzinfo=UTC)


def sample_tree(label: str) -> list[Node]:
    """A small window tree: window > group > (button, text), and a second top-level sibling."""
    return [
        Node("AXWindow", label, 0, (0.0, 0.0, 1.0, 1.0)),
        Node("AXGroup", "", 1, None),
        Node("AXButton", f"{label} send", 2, (0.2, 0.1, 0.2, 0.1)),
        Node("AXStaticText", f"{label} body", 2),
        Node("AXMenuBar", "", 0, (0.0, 0.0, 1.0, 0.03)),
    ]
