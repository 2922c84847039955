"""Small screenpipe-like layouts for the sample generator and quick tests (not screenpipe's own).

These two DDLs are compact stand-ins: CURRENT_DDL has the columns the importer reads from an
event-driven database, LEGACY_DDL those of a 2025 video-capture one. They are not the real
layout: tests that must match real databases build them from screenpipe's shipped migrations
(tests/screenpipe_eras.py), and the importer detects columns with ``PRAGMA table_info`` and
decides each row's era itself (capture/importers/screenpipe.py).

screenpipe's own ``accessibility_tree_json`` is a flat array of ``{"role", "text", "depth",
"bounds": {"left","top","width","height"} (0..1)}`` nodes in depth-first order; the importer also
reads the nested ``{"role", "name", "bounds", "children": [...]}`` form these fixtures use.
"""

from __future__ import annotations

CURRENT_DDL = """
CREATE TABLE frames (
    id INTEGER PRIMARY KEY,
    video_chunk_id INTEGER,
    offset_index INTEGER,
    timestamp TIMESTAMP NOT NULL,
    name TEXT,
    app_name TEXT,
    window_name TEXT,
    focused BOOLEAN,
    browser_url TEXT,
    device_name TEXT NOT NULL DEFAULT 'monitor_1',
    accessibility_tree_json TEXT,
    capture_trigger TEXT
);
CREATE TABLE ui_events (
    id INTEGER PRIMARY KEY,
    timestamp TIMESTAMP NOT NULL,
    session_id TEXT,
    relative_ms INTEGER,
    event_type TEXT NOT NULL,
    x INTEGER,
    y INTEGER,
    delta_x INTEGER,
    delta_y INTEGER,
    button INTEGER,
    click_count INTEGER,
    key_code INTEGER,
    modifiers INTEGER,
    text_content TEXT,
    text_length INTEGER,
    app_name TEXT,
    app_pid INTEGER,
    window_title TEXT,
    browser_url TEXT,
    element_role TEXT,
    element_name TEXT,
    element_value TEXT,
    element_description TEXT,
    element_automation_id TEXT,
    element_bounds TEXT,
    frame_id INTEGER
);
CREATE TABLE elements (
    id INTEGER PRIMARY KEY,
    frame_id INTEGER NOT NULL,
    source TEXT NOT NULL,
    role TEXT,
    text TEXT,
    parent_id INTEGER,
    depth INTEGER,
    left_bound REAL,
    top_bound REAL,
    width_bound REAL,
    height_bound REAL,
    confidence REAL,
    sort_order INTEGER
);
CREATE INDEX idx_frames_ts ON frames(timestamp);
CREATE INDEX idx_ui_events_ts ON ui_events(timestamp);
CREATE INDEX idx_elements_frame ON elements(frame_id);
"""

LEGACY_DDL = """
CREATE TABLE frames (
    id INTEGER PRIMARY KEY,
    video_chunk_id INTEGER,
    offset_index INTEGER,
    timestamp TIMESTAMP NOT NULL,
    name TEXT,
    app_name TEXT,
    window_name TEXT,
    focused BOOLEAN,
    browser_url TEXT,
    device_name TEXT NOT NULL DEFAULT ''
);
CREATE TABLE ui_events (
    id INTEGER PRIMARY KEY,
    timestamp TIMESTAMP NOT NULL,
    event_type TEXT NOT NULL,
    x INTEGER,
    y INTEGER,
    button INTEGER,
    key_code INTEGER,
    modifiers INTEGER,
    text_content TEXT,
    app_name TEXT,
    window_title TEXT,
    browser_url TEXT,
    element_role TEXT,
    element_name TEXT
);
CREATE TABLE accessibility (
    id INTEGER PRIMARY KEY,
    timestamp TIMESTAMP NOT NULL,
    app_name TEXT,
    window_name TEXT,
    text_content TEXT,
    browser_url TEXT
);
"""

# Clipboard operations are packed into ui_events.modifiers as an ASCII code.
CLIPBOARD_OPS = {99: "copy", 120: "cut", 118: "paste"}
CLIPBOARD_CODES = {v: k for k, v in CLIPBOARD_OPS.items()}
# Mouse buttons as screenpipe numbers them.
BUTTONS = {0: "left", 1: "right", 2: "middle"}
