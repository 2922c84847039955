"""Rules of the event log, checked on generated capture (hypothesis).

- append-only: bytes of a sealed day never change, whatever is appended later;
- idempotent: appending the same batch again lands nothing and changes nothing;
- tamper-evident: changing any single byte of a sealed file makes verify fail, naming that file;
- sealed days refuse new capture into the quarantine instead of merging it;
- what is read back is what was appended, open or sealed, however it was written.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import capture.log as log_module
from capture.home import Home
from capture.log import EventLog
from capture.model import ROW_KINDS, CaptureBatch, Element, InputEvent, Presence, Snapshot, StreamInfo
from capture.timeutil import day_bounds

TZ = "America/New_York"
DAYS = ("2026-03-07", "2026-03-08", "2026-03-09")  # 2026-03-08 has 23 hours in New York
HOUR = 3_600_000_000
T0 = day_bounds(DAYS[0], TZ)[0]
T_END = day_bounds(DAYS[-1], TZ)[1]
LATER = T_END + 48 * HOUR  # every generated day is past its grace period
EARLY = T0 - 48 * HOUR  # no generated day is due yet

# The encoder fixture only sets a module constant: sharing it between examples is intended.
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

ts = st.integers(min_value=T0, max_value=T_END - 1)
text = st.one_of(st.none(), st.text(max_size=12))
ref = st.integers(min_value=0, max_value=40)  # a small pool: duplicates are common
num = st.one_of(st.none(), st.floats(min_value=0, max_value=1, allow_nan=False), st.integers(0, 1))

snapshots = st.builds(
    lambda r, t, s, a, w, u, f, h: Snapshot(f"s{r}", t, s, a, w, u, focused=f, heartbeat=h, source_frame_id=f"s{r}"),
    ref, ts, st.sampled_from(["monitor_0", "monitor_1"]), st.text(max_size=8), text, text, st.booleans(), st.booleans(),
)
inputs = st.builds(
    lambda r, t, k, s, x, tx, b: InputEvent(f"i{r}", t, k, stream=s, x=x, text=tx, button=b),
    ref, ts, st.sampled_from(["click", "key", "text", "scroll"]), st.one_of(st.none(), st.just("monitor_1")),
    st.one_of(st.none(), st.integers(-5000, 5000)), text, text,
)
elements = st.builds(
    lambda r, t, p, tx, d, left, w: Element(f"e{r}", t, f"s{p}", "accessibility", "AXButton", tx, None, d, left, 0.5, w, None),
    ref, ts, ref, text, st.one_of(st.none(), st.integers(0, 30)), num, num,
)
presence = st.builds(lambda r, t: Presence(f"p{r}", t, t + HOUR, "afk"), ref, ts)
streams = st.builds(lambda r, t: StreamInfo(f"m{r}", t, "monitor_0", 1920, None), ref, ts)


@st.composite
def batches(draw: st.DrawFn, source: str = "gen") -> CaptureBatch:
    return CaptureBatch(
        source_id=source,
        recorder="synth",
        snapshots=draw(st.lists(snapshots, max_size=25)),
        inputs=draw(st.lists(inputs, max_size=25)),
        elements=draw(st.lists(elements, max_size=25)),
        presence=draw(st.lists(presence, max_size=3)),
        streams=draw(st.lists(streams, max_size=3)),
    )


@contextmanager
def fresh_log() -> Iterator[EventLog]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        home.init(tz=TZ)
        yield EventLog(home)


def sealed_bytes(log: EventLog) -> dict[str, bytes]:
    return {str(p.relative_to(log.dir)): p.read_bytes() for p in sorted(log.sealed_dir.rglob("*")) if p.is_file()}


def contents(log: EventLog) -> dict[str, tuple[list, ...]]:
    out = {}
    for status in log.days():
        cap = log.read_day(status.day)
        out[status.day] = tuple(getattr(cap, k) for k in ROW_KINDS)
    return out


def winners(batch: CaptureBatch) -> dict[str, tuple[str, object]]:
    """The row the log keeps for each ref of a batch: the first in (kind, time, batch order)."""
    out: dict[str, tuple[str, object]] = {}
    for kind in ROW_KINDS:
        for row in sorted(batch.rows(kind), key=lambda r: r.ts_us):
            out.setdefault(row.ref, (kind, row))
    return out


def expected(batch: CaptureBatch) -> dict[str, tuple[list, ...]]:
    """What the log should hold after appending ``batch`` to an empty log."""
    per_day: dict[str, dict[str, list]] = {}
    for kind, row in winners(batch).values():
        day = log_module.local_day(row.ts_us, TZ)  # type: ignore[attr-defined]
        per_day.setdefault(day, {k: [] for k in ROW_KINDS})[kind].append(_normal(row))
    return {
        day: tuple(sorted(kinds[k], key=log_module.sort_key(k)) for k in ROW_KINDS)
        for day, kinds in per_day.items()
    }


def _normal(row):
    """Integers given for float fields read back as floats."""
    if isinstance(row, Element):
        from dataclasses import replace

        return replace(row, **{n: float(getattr(row, n)) for n in ("left", "top", "width", "height")
                               if getattr(row, n) is not None})
    return row


@pytest.fixture(autouse=True, scope="module")
def _no_fsync():
    """These properties are about logic, not power loss (the crash test keeps fsync on)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(log_module, "FSYNC", False)
        yield


@pytest.fixture(params=["python", "bulk"])
def encoder(request, monkeypatch):
    """Run each property with both ways of writing open segments."""
    monkeypatch.setattr(log_module, "BULK_ROWS", 10**9 if request.param == "python" else 1)
    return request.param


@SETTINGS
@given(batch=batches())
def test_read_back_equals_what_was_appended_open_or_sealed(encoder, batch):
    with fresh_log() as log:
        log.append(batch, now_us=EARLY)
        want = expected(batch)
        assert contents(log) == want
        for status in log.days():
            log.seal(status.day)
        assert all(s.sealed for s in log.days())
        assert contents(log) == want


@SETTINGS
@given(batch=batches())
def test_direct_seal_and_open_then_seal_store_the_same_bytes(batch):
    with fresh_log() as direct, fresh_log() as stepwise:
        direct.append(batch, now_us=LATER)  # past days: sealed straight from the import
        stepwise.append(batch, now_us=EARLY)  # open first...
        stepwise.seal_due(LATER)  # ...then sealed from the open segments
        assert sealed_bytes(direct) == sealed_bytes(stepwise)
        assert [e["files"] for e in direct.manifest()] == [e["files"] for e in stepwise.manifest()]


@pytest.fixture(params=["scan", "index"])
def lookup(request, monkeypatch):
    """Check refs against sealed days both ways: scanning them, and through the hash index."""
    monkeypatch.setattr(log_module, "INDEX_MIN_REFS", 10**9 if request.param == "scan" else 0)
    return request.param


@SETTINGS
@given(first=batches(source="a"), second=batches(source="b"), cut=st.sampled_from(DAYS))
def test_sealed_bytes_never_change_and_sealed_days_take_amendments(lookup, first, second, cut):
    with fresh_log() as log:
        # Seal every day up to `cut`, then append more capture for all days.
        log.append(first, now_us=EARLY)
        for status in log.days():
            if status.day <= cut:
                log.seal(status.day)
        before_bytes = sealed_bytes(log)
        before_manifest = log.manifest_path.read_bytes() if log.manifest_path.exists() else b""
        before = contents(log)
        sealed_days = {s.day for s in log.days() if s.sealed}
        present = {row.ref for day in before.values() for rows in day for row in rows}
        report = log.append(second, now_us=EARLY)
        log.seal_due(LATER)
        after_bytes = sealed_bytes(log)
        # earlier segments keep their bytes; the manifest only grows
        assert {k: after_bytes[k] for k in before_bytes} == before_bytes
        assert (log.manifest_path.read_bytes() if log.manifest_path.exists() else b"").startswith(before_manifest)
        after = contents(log)
        late = {
            ref: row
            for ref, (_kind, row) in winners(second).items()
            if log_module.local_day(row.ts_us, TZ) in sealed_days and ref not in present  # type: ignore[attr-defined]
        }
        for day in sealed_days:
            old_refs = {row.ref for rows in before[day] for row in rows}
            new_refs = {row.ref for rows in after[day] for row in rows}
            # every earlier row is still there, and the late rows of that day joined it
            assert old_refs <= new_refs
            assert new_refs - old_refs == {r for r, row in late.items()
                                           if log_module.local_day(row.ts_us, TZ) == day}  # type: ignore[attr-defined]
        amended = {log_module.local_day(row.ts_us, TZ) for row in late.values()}  # type: ignore[attr-defined]
        assert set(report.days_amended) == amended
        assert not any(q["reason"].endswith("is sealed") for q in log.quarantine_rows())
        assert log.verify().ok


@SETTINGS
@given(batch=batches(), now=st.sampled_from([EARLY, LATER]))
def test_appending_the_same_batch_again_changes_nothing(batch, now):
    with fresh_log() as log:
        first = log.append(batch, now_us=now)
        state = (contents(log), sealed_bytes(log), log.quarantine_rows(), log.chain_head())
        again = log.append(batch, now_us=now)
        assert sum(again.landed.values()) == 0 and again.days_sealed == []
        assert again.skipped == sum(first.landed.values()) + first.skipped
        assert (contents(log), sealed_bytes(log), log.quarantine_rows(), log.chain_head()) == state


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_single_changed_byte_in_a_sealed_file_is_caught_and_named(data, tmp_path_factory):
    log = _tamper_base(tmp_path_factory)
    files = sorted(p for p in log.sealed_dir.rglob("*") if p.is_file())
    path = data.draw(st.sampled_from(files))
    original = path.read_bytes()
    pos = data.draw(st.integers(0, len(original) - 1))
    delta = data.draw(st.integers(1, 255))
    changed = bytearray(original)
    changed[pos] = (changed[pos] + delta) % 256
    try:
        path.write_bytes(bytes(changed))
        report = log.verify()
        rel = str(path.relative_to(log.dir))
        assert not report.ok
        assert any(rel in p and "was changed" in p for p in report.problems), report.problems
    finally:
        path.write_bytes(original)
    assert log.verify().ok


_BASE: dict[str, EventLog] = {}


def _tamper_base(factory) -> EventLog:
    """One sealed log shared by the tamper examples (each example restores the byte it changed)."""
    if "log" not in _BASE:
        home = Home(factory.mktemp("tamper") / "home")
        home.init(tz=TZ)
        log = EventLog(home)
        b = CaptureBatch("t", "synth")
        for i in range(60):
            t = T0 + i * 3_000_000_000
            b.snapshots.append(Snapshot(f"s{i}", t, "monitor_0", "App", f"w{i}", None, source_frame_id=str(i)))
            b.inputs.append(InputEvent(f"i{i}", t, "click", x=i, y=i))
            b.elements.append(Element(f"e{i}", t, str(i), "ocr", "line", f"text {i}", left=0.1, top=0.2))
        b.presence.append(Presence("p", T0, T0 + HOUR, "not-afk"))
        b.streams.append(StreamInfo("m", T0, "monitor_0", 1920, 1080))
        log.append(b, now_us=LATER)
        assert log.verify().ok
        _BASE["log"] = log
    return _BASE["log"]


@SETTINGS
@given(batch=batches(), data=st.data())
def test_an_open_segment_cut_at_any_byte_reads_recovers_and_completes(batch, data):
    """A kill mid-append leaves an open segment missing the tail of its last write; cut anywhere."""
    from hypothesis import assume

    with fresh_log() as log:
        log.append(batch, now_us=EARLY)
        files = sorted(log.open_dir.rglob("*.jsonl"))
        assume(files)
        path = data.draw(st.sampled_from(files))
        content = path.read_bytes()
        path.write_bytes(content[: data.draw(st.integers(0, len(content) - 1))])
        want = expected(batch)
        partial = contents(log)  # readers see complete records only, never an error
        for day, kinds in partial.items():
            for got, full in zip(kinds, want[day], strict=True):
                assert set(got) <= set(full)
        assert log.verify().ok
        log.append(batch, now_us=EARLY)  # running the import again repairs and completes the day
        assert contents(log) == want
        assert all(p.read_bytes().endswith(b"\n") for p in log.open_dir.rglob("*.jsonl"))
        recorders = {s.day: log.read_day(s.day).recorders for s in log.days()}
        assert all(r == ["synth"] for r in recorders.values())
