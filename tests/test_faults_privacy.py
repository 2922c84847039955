"""Privacy at rest: what the quarantine keeps of refused rows, and the modes of what `af` writes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.interfaces import cli
from capture.home import Home
from capture.importers.common import excerpt_of
from capture.log import EventLog
from capture.model import CaptureBatch, Element, InputEvent, Quarantined
from capture.redact import PASSWORD_ROW, SECRET_KEYS, redact_row
from capture.timeutil import parse_ts

SECRET = "Hunter2Zq"  # what the user typed; must never reach quarantine.jsonl

_keys = st.sampled_from(sorted(SECRET_KEYS)).flatmap(
    lambda k: st.sampled_from([k, k.upper(), k.title()]))
_harmless = st.text(alphabet="abcdefgh ", max_size=8)


@st.composite
def rows_with_a_secret(draw):
    """A source row (nested dicts/lists, or its JSON text) with SECRET under a typed-text key."""
    inner = {draw(_keys): SECRET + draw(_harmless)}
    for _ in range(draw(st.integers(0, 3))):
        inner = draw(st.sampled_from([
            lambda x: {"data": x, "app": "Firefox"},
            lambda x: [x, {"title": "inbox"}],
            lambda x: {"event": {"timestamp": "2026-06-01T10:00:00Z", "payload": x}},
        ]))(inner)
    return draw(st.sampled_from([inner, json.dumps(inner)]))


@settings(max_examples=150, deadline=None)
@given(rows_with_a_secret())
def test_typed_text_in_any_row_shape_never_reaches_an_excerpt(raw):
    assert SECRET not in excerpt_of(raw)
    assert SECRET not in repr(redact_row(raw))


@settings(max_examples=100, deadline=None)
@given(role=st.sampled_from(["AXSecureTextField", "password", "PasswordBox", "secure text field"]),
       name=_harmless)
def test_a_password_field_row_is_dropped_entirely(role, name):
    raw = {"role": role, "name": name or "Sign in", "frame_id": 12, "bounds": "0,0,10,10"}
    assert excerpt_of(raw) == PASSWORD_ROW
    assert excerpt_of({"element": {"is_password": True, "label": "PIN"}}) == PASSWORD_ROW


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(900, 5000), key=_keys)
def test_a_row_nested_deeper_than_json_can_walk_is_still_excerpted_without_its_secret(depth, key):
    # a window title of thousands of "[" (the screenpipe fuzz test found one) is refused, not a crash
    text = "[" * depth + f'{{"{key}": "{SECRET}"}}' + "]" * depth
    assert SECRET not in excerpt_of(text)
    assert SECRET not in excerpt_of({"window": text})


def test_titles_and_reasons_stay_readable():
    # only typed text goes: what a person needs to see why a row was refused stays
    out = excerpt_of({"app": "Firefox", "title": "Quarterly report", "timestamp": "not a time"})
    assert "Quarterly report" in out and "not a time" in out


def test_the_quarantine_file_holds_no_typed_text_nor_password_rows(home):
    log = EventLog(home)
    b = CaptureBatch(source_id="test:q", recorder="synth")
    bad_ts = 10  # 1970: outside the log's range, so these rows are refused with an excerpt
    b.inputs.append(InputEvent("q:1", bad_ts, "text", text=SECRET + " my card 4111"))
    b.inputs.append(InputEvent("q:2", bad_ts, "clipboard", text=SECRET, clipboard_op="paste"))
    b.elements.append(Element("q:3", bad_ts, "f", "accessibility", role="AXSecureTextField", text=SECRET))
    b.elements.append(Element("q:4", bad_ts, "f", "accessibility", role="AXTextField", text=SECRET))
    # an importer's own refusal, built without excerpt_of: redacted on the way in too
    b.quarantined.append(Quarantined("src.csv", "line 7", "unreadable timestamp",
                                     raw=json.dumps({"value": SECRET, "targetApp": "Excel"})))
    report = log.append(b, now_us=parse_ts("2026-03-15T12:00:00Z"))
    assert report.quarantined == 5
    text = log.quarantine_path.read_text(encoding="utf-8")
    assert SECRET not in text
    rows = {r["row"]: r for r in log.quarantine_rows()}
    assert set(rows) == {"q:1", "q:2", "q:3", "q:4", "line 7"}
    assert PASSWORD_ROW in rows["q:3"]["raw"]
    assert "Excel" in rows["line 7"]["raw"]  # the rest of the row is still there to read


def _walk_modes(root: Path) -> list[str]:
    """Every path under root that a user other than the owner could read, with its mode."""
    loose = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            st_ = p.lstat()
            if stat.S_ISLNK(st_.st_mode):
                continue
            if st_.st_mode & 0o077:
                loose.append(f"{p.relative_to(root)} {stat.filemode(st_.st_mode)}")
    if root.stat().st_mode & 0o077:
        loose.append(f". {stat.filemode(root.stat().st_mode)}")
    return loose


def test_every_file_af_writes_is_private_to_its_user(tmp_path, capsys):
    old = os.umask(0o022)  # the usual shell umask: af must not follow it
    try:
        corpus = tmp_path / "corpus"
        assert cli.main(["synth", "--days", "1", "--out", str(corpus)]) == 0
        home = tmp_path / "home"
        assert cli.main(["import", "screenpipe", str(corpus / "screenpipe.sqlite"), "--home", str(home),
                         "--tz", "Europe/Paris", "--quiet"]) == 0
        os.umask(0o022)  # each command sets it itself
        assert cli.main(["build", "--home", str(home)]) == 0
        os.umask(0o022)
        assert cli.main(["day", "2026-06-01", "-f", "md", "--home", str(home)]) == 0
    finally:
        os.umask(old)
    capsys.readouterr()
    written = {p.relative_to(home).parts[0] for p in home.rglob("*")}
    assert {"af.json", "log", "warehouse.duckdb", "published", "dagster", "warehouse.lock"} <= written
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert _walk_modes(home) == []
    assert stat.S_IMODE((home / "af.json").stat().st_mode) == 0o600


def test_an_older_loose_data_folder_is_tightened(tmp_path):
    root = tmp_path / "old"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    Home(root).init(tz="UTC")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "af.json").stat().st_mode) == 0o600
    root.chmod(0o755)  # an existing data folder an older af left open
    Home(root).init()
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
