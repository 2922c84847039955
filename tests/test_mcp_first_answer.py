"""The open day's state kept on disk (af_pipeline/interfaces/open_cache.py, issue 43): a fresh
reader starting from it answers byte for byte what a fresh read and compile answers, and it is
not used when the open segment, the code or the options differ. Speed is measured by
bench/bench_mcp.py --first-answer, not asserted here."""

from __future__ import annotations

import json
import shutil
from dataclasses import fields
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_mcp_server import _session

from af_pipeline.compiler import compile as compile_module
from af_pipeline.compiler.emit import canonical_bytes
from af_pipeline.interfaces import open_cache
from af_pipeline.interfaces.memory import Memory
from capture.home import Home
from capture.log import EventLog
from capture.log import opensegments as opensegments_module
from capture.log.schema import NAMES
from capture.model import CLASS_OF, ROW_KINDS, CaptureBatch, InputEvent, Snapshot
from capture.timeutil import parse_ts

DAY = "2026-06-01"
NOW = "2026-06-01T13:00:00+02:00"
T0 = parse_ts("2026-06-01T09:00:00+02:00")
APPS = ("Editor", "Firefox", "Terminal", "Mail")


def _batch(first: int, count: int) -> CaptureBatch:
    b = CaptureBatch(source_id="open-test", recorder="recorder")
    for i in range(first, first + count):
        ts = T0 + i * 20_000_000
        app = APPS[(i // 7) % len(APPS)]
        b.snapshots.append(Snapshot(ref=f"open-test:frames:{i}", ts_us=ts, stream="monitor_1", app=app,
                                    window=f"{app} window {i // 30}", source_frame_id=str(i),
                                    url=f"https://docs.example.org/p{i // 11}" if app == "Firefox" else None))
        if i % 3 == 0:
            b.inputs.append(InputEvent(ref=f"open-test:ui:{i}", ts_us=ts + 2_000_000, kind="text",
                                       stream="monitor_1", text="secret words", app=app))
    return b


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """An open (unsealed) day of 600 snapshots (09:00-12:20), now being 13:00."""
    h = Home(tmp_path / "home")
    h.init(tz="Europe/Paris")
    report = EventLog(h).append(_batch(0, 600), now_us=parse_ts(NOW))
    assert not report.days_sealed and (h.log_dir / "open" / DAY).is_dir()
    return h


def _memory(home: Home, **kw: Any) -> Memory:
    return Memory(home, clock=lambda: parse_ts(NOW), **kw)


class Counted:
    """Counts compile_day calls and parsed open-segment lines (the work the cache saves)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.compiles = 0
        self.parsed = 0
        compile_day, parse_lines = compile_module.compile_day, opensegments_module.parse_lines

        def counted_compile(*a: Any, **kw: Any) -> Any:
            self.compiles += 1
            return compile_day(*a, **kw)

        def counted_parse(data: bytes, *a: Any, **kw: Any) -> Any:
            self.parsed += data.count(b"\n")
            return parse_lines(data, *a, **kw)

        monkeypatch.setattr(compile_module, "compile_day", counted_compile)
        monkeypatch.setattr(opensegments_module, "parse_lines", counted_parse)


def _fresh_bytes(home: Home, **kw: Any) -> bytes:
    """The day's document from a read and compile that use no cache."""
    shutil.rmtree(home.root / "cache", ignore_errors=True)
    m = _memory(home, **kw)
    doc = m.document(DAY)
    assert not (home.root / "cache").exists(), "a reader without write_cache writes nothing"
    return canonical_bytes(doc)


def test_rows_are_cached_in_field_order() -> None:
    for kind in ROW_KINDS:  # the cache stores each row as its values in NAMES order
        assert NAMES[kind] == tuple(f.name for f in fields(CLASS_OF[kind])), kind


def test_a_cached_day_is_byte_identical_and_read_and_compiled_nowhere(home: Home,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = _fresh_bytes(home)
    writer = _memory(home, write_cache=True)
    assert canonical_bytes(writer.document(DAY)) == fresh
    path = open_cache.cache_path(home.root, DAY)
    assert path.is_file() and path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700 and path.parent.parent.stat().st_mode & 0o777 == 0o700

    counted = Counted(monkeypatch)
    reader = _memory(home)
    assert canonical_bytes(reader.document(DAY)) == fresh
    assert (counted.compiles, counted.parsed) == (0, 0), "the cache held the rows and the document"
    # and a part of the day (what get_context(hours=...) compiles) equals a fresh reader's
    p = reader.period(hours=3)
    block = reader.context(p)[0]
    monkeypatch.undo()
    assert block == _memory(home).context(_memory(home).period(hours=3))[0]


def test_appending_one_row_invalidates_the_document_and_parses_only_the_new_line(
        home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    _memory(home, write_cache=True).document(DAY)
    cached = open_cache.load(home.root, DAY, home.log_dir / "open" / DAY)
    assert cached is not None
    EventLog(home).append(_batch(600, 1), now_us=parse_ts(NOW))

    counted = Counted(monkeypatch)
    reader = _memory(home)
    after = canonical_bytes(reader.document(DAY))
    # only the appended lines (the snapshot and its input event) are parsed; the day is compiled again
    assert (counted.compiles, counted.parsed) == (1, 2)
    assert cached[1] and all(canonical_bytes(json.loads(d)) != after for d in cached[1].values())
    monkeypatch.undo()
    assert after == _fresh_bytes(home)


def test_a_rewritten_line_refuses_the_cache(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    _memory(home, write_cache=True).document(DAY)
    seg = home.log_dir / "open" / DAY / "snapshots.jsonl"
    data = seg.read_bytes()
    seg.write_bytes(data.replace(b"Terminal window 1", b"Terminal wondow 1", 1))  # same length, other bytes
    assert open_cache.load(home.root, DAY, seg.parent) is None
    counted = Counted(monkeypatch)
    doc = canonical_bytes(_memory(home).document(DAY))
    assert counted.compiles == 1 and counted.parsed > 600 and b"wondow" in doc


def test_another_code_version_or_options_compile_fresh(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    _memory(home, write_cache=True).document(DAY)
    text = open_cache.cache_path(home.root, DAY).read_bytes()
    assert b"secret words" in text  # the rows, as the open segment beside it holds them ...
    loaded = open_cache.load(home.root, DAY, home.log_dir / "open" / DAY)
    assert loaded is not None and all("secret words" not in d for d in loaded[1].values())  # ... no typed document

    typed_fresh = _fresh_bytes(home, include_typed_text=True)
    _memory(home, write_cache=True).document(DAY)
    counted = Counted(monkeypatch)
    assert canonical_bytes(_memory(home, include_typed_text=True).document(DAY)) == typed_fresh
    assert counted.compiles == 1, "a document compiled without typed text is not served to an opted-in reader"

    monkeypatch.setattr(open_cache, "code_key", lambda: "another version")
    assert open_cache.load(home.root, DAY, home.log_dir / "open" / DAY) is None


def test_a_day_no_longer_open_loses_its_cache(home: Home) -> None:
    _memory(home, write_cache=True).document(DAY)
    stale = open_cache.cache_path(home.root, "2026-05-31")
    stale.write_bytes(open_cache.cache_path(home.root, DAY).read_bytes())  # a day sealed (or removed) since
    assert _memory(home, write_cache=True).save_open_cache(DAY) is False  # nothing read yet in this one
    m = _memory(home, write_cache=True)
    m.day_capture(DAY)
    assert m.save_open_cache(DAY) and not stale.exists() and open_cache.cache_path(home.root, DAY).is_file()


def test_a_fresh_server_answers_from_the_cache_as_without_it(home: Home) -> None:
    calls = [("get_context", {"hours": 3}), ("get_context", {})]

    def answers() -> list[Any]:
        r = anyio.run(lambda: _session(home, "--now", NOW, calls=list(calls), probe=False))
        assert all(not err for _, _, err, _ in r["results"]), r["results"]
        return [text for _, _, _, text in r["results"]]

    shutil.rmtree(home.root / "cache", ignore_errors=True)
    without = answers()
    assert not (home.root / "cache").exists(), "the server writes nothing into the data folder"
    _memory(home, write_cache=True).document(DAY)
    before = open_cache.cache_path(home.root, DAY).read_bytes()
    first = answers()
    assert first == without and "Editor" in first[0]
    assert open_cache.cache_path(home.root, DAY).read_bytes() == before


def test_af_context_and_af_log_cache_leave_the_open_day_for_a_fresh_server(home: Home,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The readers that may write leave the open day's rows where a fresh `af mcp` starts from:
    `af context` (and `af day`) after answering, `af log cache` (what `af sync --watch` runs)."""
    from af_pipeline.interfaces import cli

    folder = home.log_dir / "open" / DAY
    assert cli.main(["context", "--day", DAY, "--home", str(home.root)]) == 0
    assert open_cache.load(home.root, DAY, folder) is not None
    shutil.rmtree(home.root / "cache")
    assert cli.main(["log", "cache", "--home", str(home.root)]) == 0
    assert f"{DAY}: 800 open rows cached" in capsys.readouterr().err  # 600 snapshots, 200 inputs
    loaded = open_cache.load(home.root, DAY, folder)
    assert loaded is not None
    fresh = EventLog(home).read_day(DAY)
    for kind in ROW_KINDS:
        assert loaded[0][kind].held() == getattr(fresh, kind), kind
