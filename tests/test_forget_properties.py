"""Property (issue 41): any sequence of appends, seals and forgets leaves the log holding the
same day rows as appending only what remains: the model is capture.log.forget.forget_rows (the
Dagster-free rule) applied to the rows landed so far, with forgotten refs never landing again."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
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
def batches(draw, n: int) -> list[CaptureBatch]:
    out = []
    for b in range(n):
        batch = CaptureBatch(f"src{b}", "synth")
        for day in draw(st.lists(st.sampled_from(DAYS), min_size=1, max_size=2, unique=True)):
            lo, hi = day_bounds(day, TZ)
            for i in range(draw(st.integers(1, 5))):
                ts = lo + draw(st.integers(0, 24 * 60 - 1)) * MIN
                ref = f"src{b}:{day}:f{i}"
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
                batch.presence.append(Presence(f"src{b}:{day}:afk", start, start + draw(st.integers(0, 240)) * MIN,
                                               "not-afk"))
            batch.streams.append(StreamInfo(f"src{b}:{day}:stream", lo + MIN, "m0", 100, 100))
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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_appends_seals_and_forgets_equal_appending_what_remains(data):
    given_batches = data.draw(batches(3))
    ops = data.draw(st.lists(st.one_of(
        st.tuples(st.just("append"), st.integers(0, 2)),
        st.tuples(st.just("seal"), st.sampled_from(DAYS)),
        st.tuples(st.just("forget"), selections()),
    ), min_size=1, max_size=8))
    fsync, capture.log.FSYNC = capture.log.FSYNC, False
    scratch = tempfile.TemporaryDirectory(prefix="af-forget-prop-")
    try:
        root = Path(scratch.name)
        home = Home(root / "a")
        home.init(tz=TZ)
        log = EventLog(home)
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
    finally:
        capture.log.FSYNC = fsync
        scratch.cleanup()
