"""Properties (issue 41): any sequence of appends, seals, amendments and forgets leaves the log
holding the same day rows, and compiling to the same day documents, as appending only what
remains: the model is capture.log.forget.forget_rows (the Dagster-free rule) applied to the rows
landed so far, with forgotten refs never landing again."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import capture.log
from capture.home import Home
from capture.log import EventLog, Selection
from capture.log.forget import forget_rows
from capture.model import KIND_OF, CaptureBatch, Element, InputEvent, Presence, Snapshot, StreamInfo
from capture.timeutil import day_bounds, local_day

TZ = "Europe/Paris"
DAYS = ("2026-03-15", "2026-03-16")
MIN = 60_000_000


@st.composite
def batches(draw, n: int, prefix: str = "src", min_days: int = 1) -> list[CaptureBatch]:
    out = []
    for b in range(n):
        batch = CaptureBatch(f"{prefix}{b}", "synth")
        for day in draw(st.lists(st.sampled_from(DAYS), min_size=min_days, max_size=2, unique=True)):
            lo, hi = day_bounds(day, TZ)
            for i in range(draw(st.integers(1, 5))):
                ts = lo + draw(st.integers(0, 24 * 60 - 1)) * MIN
                ref = f"{prefix}{b}:{day}:f{i}"
                span = draw(st.one_of(st.none(), st.integers(1, 300)))
                end = min(ts + span * MIN, hi) if span else None
                batch.snapshots.append(Snapshot(
                    ref, ts, "m0", draw(st.sampled_from(["A", "B"])), draw(st.sampled_from(["w1", "secret w2", None])),
                    draw(st.sampled_from(["https://a.com/x", "https://sub.b.org/y", None])),
                    source_frame_id=ref, end_us=end))
                for j in range(draw(st.integers(0, 2))):
                    batch.elements.append(Element(f"{ref}:e{j}", ts, ref, "accessibility", "AXText", f"t{j}"))
                for j in range(draw(st.integers(0, 2))):
                    batch.inputs.append(InputEvent(
                        f"{ref}:i{j}", ts + j + 1, draw(st.sampled_from(["key", "click"])),
                        text=draw(st.sampled_from([None, "hello"])), app=draw(st.sampled_from([None, "A"])),
                        source_frame_id=draw(st.sampled_from([None, ref]))))
            if draw(st.booleans()):
                start = lo + draw(st.integers(0, 20 * 60)) * MIN
                batch.presence.append(Presence(f"{prefix}{b}:{day}:afk", start, start + draw(st.integers(0, 240)) * MIN,
                                               "not-afk"))
            batch.streams.append(StreamInfo(f"{prefix}{b}:{day}:stream", lo + MIN, "m0", 100, 100))
        out.append(batch)
    return out


def selections() -> st.SearchStrategy[Selection]:
    lo = day_bounds(DAYS[0], TZ)[0]
    ranges = st.tuples(st.integers(0, 47 * 60), st.integers(1, 600)).map(
        lambda t: (lo + t[0] * MIN, lo + (t[0] + t[1]) * MIN))
    return st.one_of(
        ranges.map(lambda r: Selection(start_us=r[0], end_us=r[1])),
        st.sampled_from(["a", "B"]).map(lambda a: Selection(app=a)),
        st.sampled_from(["b.org", "a.com"]).map(lambda s: Selection(site=s)),
        st.just(Selection(title="^secret")),
        st.sampled_from(DAYS).map(lambda d: Selection(days=(d,))),
        st.sampled_from(DAYS).map(lambda d: Selection(typed_text=True, days=(d,))),
        st.tuples(ranges, st.sampled_from(["A", "B"])).map(lambda t: Selection(start_us=t[0][0], end_us=t[0][1], app=t[1])),
    )


def _rows(log: EventLog) -> dict[str, tuple]:
    out = {}
    for day in DAYS:
        cap = log.read_day(day)
        out[day] = tuple(tuple(getattr(cap, k)) for k in ("snapshots", "inputs", "elements", "presence", "streams"))
    return out


def _batch_of(rows: list) -> CaptureBatch:
    b = CaptureBatch("model", "synth")
    for r in rows:
        b.rows(KIND_OF[type(r)]).append(r)
    return b


@contextlib.contextmanager
def _scratch_log(prefix: str) -> Iterator[tuple[Path, EventLog]]:
    """(a scratch folder, the log of a new data folder ``a`` in it), without fsyncs (a test's
    folders are thrown away), removed when the example ends."""
    fsync, capture.log.FSYNC = capture.log.FSYNC, False
    scratch = tempfile.TemporaryDirectory(prefix=prefix)
    try:
        root = Path(scratch.name)
        home = Home(root / "a")
        home.init(tz=TZ)
        yield root, EventLog(home)
    finally:
        capture.log.FSYNC = fsync
        scratch.cleanup()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_appends_seals_and_forgets_equal_appending_what_remains(data):
    given_batches = data.draw(batches(3))
    ops = data.draw(st.lists(st.one_of(
        st.tuples(st.just("append"), st.integers(0, 2)),
        st.tuples(st.just("seal"), st.sampled_from(DAYS)),
        st.tuples(st.just("forget"), selections()),
    ), min_size=1, max_size=8))
    with _scratch_log("af-forget-prop-") as (root, log):
        now = day_bounds(DAYS[0], TZ)[0]  # nothing seals on its own
        state: dict[str, object] = {}  # ref -> row the model holds
        forgotten: set[str] = set()
        gone_days: set[str] = set()  # days forgotten whole: no later row of them lands
        for op, arg in ops:
            if op == "append":
                log.append(given_batches[arg], now_us=now)
                for kind in ("snapshots", "inputs", "elements", "presence", "streams"):
                    for r in given_batches[arg].rows(kind):
                        if (r.ref not in state and r.ref.split("~", 1)[0] not in forgotten
                                and local_day(r.ts_us, TZ) not in gone_days):
                            state[r.ref] = r
            elif op == "seal":
                if (log.open_dir / arg).is_dir():
                    log.seal(arg)
            else:
                log.forget(arg)
                if arg.whole_days:  # the record lists the days that held rows
                    gone_days |= {local_day(r.ts_us, TZ) for r in state.values()} & set(arg.days)
                kept = {r.ref: r for r in forget_rows(arg, list(state.values()), TZ)}
                forgotten |= {ref for ref, r in state.items() if kept.get(ref) != r}
                state = kept
        report = log.verify()
        assert report.ok, report.problems
        Home(root / "b").init(tz=TZ)
        fresh = EventLog(Home(root / "b"))
        fresh.append(_batch_of(list(state.values())), now_us=day_bounds(DAYS[1], TZ)[1] + 48 * 3_600_000_000)
        assert _rows(log) == _rows(fresh)


class _Model:
    """What the log should hold: rows by ref, refs forgotten, days forgotten whole."""

    def __init__(self) -> None:
        self.state: dict[str, object] = {}
        self.forgotten: set[str] = set()
        self.gone_days: set[str] = set()

    def land(self, batch: CaptureBatch) -> set[str]:
        """The days that received a row."""
        days = set()
        for kind in ("snapshots", "inputs", "elements", "presence", "streams"):
            for r in batch.rows(kind):
                day = local_day(r.ts_us, TZ)
                if (r.ref not in self.state and r.ref.split("~", 1)[0] not in self.forgotten
                        and day not in self.gone_days):
                    self.state[r.ref] = r
                    days.add(day)
        return days

    def forget(self, sel: Selection) -> None:
        if sel.whole_days:
            self.gone_days |= {local_day(r.ts_us, TZ) for r in self.state.values()} & set(sel.days)
        kept = {r.ref: r for r in forget_rows(sel, list(self.state.values()), TZ)}
        self.forgotten |= {ref for ref, r in self.state.items() if kept.get(ref) != r}
        self.state = kept


def _documents(log: EventLog) -> dict[str, tuple[bool, dict]]:
    """Each day's compiled document without the list of segment files it read (a log that was
    amended and rewritten reads more of them than a fresh one), with whether the day is sealed."""
    from af_pipeline.compiler.compile import compile_day

    out = {}
    for day in DAYS:
        cap = log.read_day(day)
        doc = compile_day(cap)
        doc["provenance"].pop("segments")
        out[day] = (cap.sealed, doc)
    return out


def _emptied(doc: dict) -> dict:
    """The document of a day without rows, as if it were never written: a sealed day whose every
    row was forgotten keeps its (emptied) segments, so it stays sealed and names the recorders
    that once wrote to it; a fresh log never had the day."""
    return {**doc, "provenance": {**doc["provenance"], "sealed": False, "recorders": []},
            "blind_spots": [b for b in doc["blind_spots"] if b["kind"] != "day_not_sealed"]}


def _assert_same_documents(log: EventLog, fresh: EventLog) -> None:
    """The same canonical bytes (what the warehouse hashes and certification compares) per day."""
    from af_pipeline.compiler.emit import canonical_bytes

    ours, theirs = _documents(log), _documents(fresh)
    for day in DAYS:
        (sealed, doc), (fresh_sealed, fresh_doc) = ours[day], theirs[day]
        if sealed != fresh_sealed:
            assert sealed and not (fresh.open_dir / day).is_dir(), day
            assert not any(doc["provenance"]["rows"].values()), day
            doc, fresh_doc = _emptied(doc), _emptied(fresh_doc)
        assert canonical_bytes(doc) == canonical_bytes(fresh_doc), day


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_imports_seals_amendments_and_forgets_compile_to_the_documents_of_what_remains(data):
    """The issue's must-show: the day documents (canonical bytes, as the warehouse hashes them) of
    a log that took imports, seals, amendments of sealed days and forgets in any order equal
    those of a fresh log given only what remains; every amendment lands as one."""
    early = data.draw(batches(2))
    late = data.draw(batches(2, prefix="late", min_days=2))  # capture for both days, arriving late
    ops = [("append", data.draw(st.integers(0, 1)))] + data.draw(st.lists(st.one_of(
        st.tuples(st.just("append"), st.integers(0, 1)),
        st.tuples(st.just("seal"), st.sampled_from(DAYS)),
        st.tuples(st.just("amend"), st.tuples(st.sampled_from(DAYS), st.integers(0, 1))),
        st.tuples(st.just("forget"), selections()),
    ), min_size=1, max_size=7))
    with _scratch_log("af-forget-docs-") as (root, log):
        now = day_bounds(DAYS[0], TZ)[0]  # nothing seals on its own
        model = _Model()
        amended = forgets_after_amend = 0
        for op, arg in ops:
            if op == "append":
                log.append(early[arg], now_us=now)
                model.land(early[arg])
            elif op == "seal":
                if (log.open_dir / arg).is_dir():
                    log.seal(arg)
            elif op == "amend":  # late capture for a day: sealed first if it is open
                day, i = arg
                if (log.open_dir / day).is_dir():
                    log.seal(day)
                sealed = {d.day for d in log.days() if d.sealed}
                report = log.append(late[i], now_us=now)
                landed = model.land(late[i])
                if day in sealed and day in landed:
                    assert day in report.days_amended
                    amended += 1
                else:
                    assert day not in report.days_amended
            else:
                log.forget(arg)
                model.forget(arg)
                forgets_after_amend += bool(amended)
        event(f"amendments landed: {min(amended, 2)}")
        event(f"forgets after an amendment: {forgets_after_amend > 0}")
        verified = log.verify()
        assert verified.ok, verified.problems
        Home(root / "b").init(tz=TZ)
        fresh = EventLog(Home(root / "b"))
        fresh.append(_batch_of(list(model.state.values())), now_us=now)
        for day in DAYS:  # the fresh log's days sealed as the other's are
            if day in {d.day for d in log.days() if d.sealed} and (fresh.open_dir / day).is_dir():
                fresh.seal(day)
        _assert_same_documents(log, fresh)
        for lg in (log, fresh):  # and once every day is sealed
            for day in DAYS:
                if (lg.open_dir / day).is_dir():
                    lg.seal(day)
        _assert_same_documents(log, fresh)
        assert _rows(log) == _rows(fresh)
