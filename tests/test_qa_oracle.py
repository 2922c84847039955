"""The QA oracle: one SQL text, two engines, hand-checked answers."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.interfaces.qa import oracle
from capture.errors import UserError
from capture.model import Snapshot
from capture.screenpipe_schema import CURRENT_DDL, LEGACY_DDL
from capture.timeutil import day_bounds, parse_ts

TZ = "Europe/Paris"
DAY = "2026-03-10"


def _ts_text(dt: datetime, shape: int) -> str:
    if shape == 0:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00"
    if shape == 1:
        return dt.strftime("%Y-%m-%d %H:%M:%S")
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _screenpipe(path: Path, rows: list[tuple[str, str, str | None, str | None, int | None]], ddl: str = CURRENT_DDL) -> Path:
    """rows: (timestamp text, app, url, device, focused)."""
    con = sqlite3.connect(path)
    con.executescript(ddl)
    con.executemany(
        "INSERT INTO frames (timestamp, app_name, browser_url, device_name, focused) VALUES (?, ?, ?, ?, ?)",
        [(t, a, u, d, f) for t, a, u, d, f in rows],
    )
    con.commit()
    con.close()
    return path


def _snapshots(rows: list[tuple[str, str, str | None, str | None, int]]) -> list[Snapshot]:
    return [
        Snapshot(ref=f"t:frames:{i}", ts_us=parse_ts(t), stream=d or "", app=a, url=u, focused=bool(f))
        for i, (t, a, u, d, f) in enumerate(rows)
    ]


def test_hand_checked_day(tmp_path: Path) -> None:
    base = datetime(2026, 3, 10, 8, 0, 0, tzinfo=UTC)  # 09:00 in Paris
    at = lambda s: _ts_text(base + timedelta(seconds=s), 0)  # noqa: E731
    rows = [
        (at(0), "Code", None, "monitor_1", 1),
        (at(10), "Firefox", "https://www.GitHub.com/a/b?q=1", "monitor_2", 1),  # interleaved monitor
        (at(40), "Code", None, "monitor_1", 1),
        (at(40), "Slack", None, "monitor_1", 0),  # background window: not foreground, ignored
        (at(400), "Firefox", "https://mail.google.com/mail/u/0", "monitor_1", 1),  # 360 s gap capped at 60
        (at(430), "Firefox", "http://news.bbc.co.uk:8080/x", "monitor_1", 1),
        (at(460), "Terminal", "file:///etc/hosts", "monitor_1", 1),  # last row: no credit, no domain
    ]
    db = _screenpipe(tmp_path / "db.sqlite", rows)
    sp = oracle.ScreenpipeOracle(db)
    got = sp.day(DAY, TZ)
    assert got.app_dwell_us == {"Code": 10_000_000 + 60_000_000, "Firefox": 30_000_000 + 30_000_000 + 30_000_000, "Terminal": 0}
    assert got.distinct_apps == 3
    assert got.first_local(TZ) == "09:00"
    assert got.host_dwell_us == {"github.com": 30_000_000, "mail.google.com": 30_000_000, "news.bbc.co.uk": 30_000_000}
    # Gmail is its own surface, not one "google.com" (the surface rule); BBC News is bbc.co.uk
    assert got.domain_minutes() == {"github.com": 0.5, "mail.google.com": 0.5, "bbc.co.uk": 0.5}
    duck = oracle.DuckDBOracle()
    assert oracle.agree(got, duck.day_from_rows(DAY, _snapshots(rows), TZ)) == []


def test_day_boundaries_follow_the_user_zone(tmp_path: Path) -> None:
    # 23:30 UTC on the 9th is 00:30 on the 10th in Paris: it belongs to the 10th there.
    rows = [
        ("2026-03-09 22:50:00", "Early", None, "monitor_1", 1),
        ("2026-03-09 23:30:00", "Code", None, "monitor_1", 1),
        ("2026-03-09 23:30:30", "Code", None, "monitor_1", 1),
    ]
    sp = oracle.ScreenpipeOracle(_screenpipe(tmp_path / "db.sqlite", rows))
    assert sp.days(TZ) == ["2026-03-09", "2026-03-10"]
    d = sp.day(DAY, TZ)
    assert d.first_local(TZ) == "00:30" and set(d.app_dwell_us) == {"Code"}
    assert sp.day(DAY, "UTC").app_dwell_us == {}


timestamps = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)


@given(st.lists(st.tuples(timestamps, st.integers(0, 2)), min_size=1, max_size=30))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_sql_timestamp_adapter_matches_the_capture_parser(values: list[tuple[datetime, int]]) -> None:
    con = sqlite3.connect(":memory:")
    con.executescript(CURRENT_DDL)
    texts = [_ts_text(dt, shape) for dt, shape in values]
    con.executemany("INSERT INTO frames (timestamp, app_name, device_name, focused) VALUES (?, 'A', 'm', 1)", [(t,) for t in texts])
    con.executescript(oracle.screenpipe_rows_sql(con))
    got = sorted(r[0] for r in con.execute("SELECT ts_us FROM screenpipe_rows"))
    assert got == sorted(parse_ts(t) for t in texts)


def test_offsets_in_timestamps() -> None:
    con = sqlite3.connect(":memory:")
    con.executescript(CURRENT_DDL)
    texts = ["2026-03-10T10:00:00.25+02:00", "2026-03-10T10:00:00-01:30", "garbage", "2026-03-10"]
    con.executemany("INSERT INTO frames (timestamp, app_name, device_name, focused) VALUES (?, 'A', 'm', 1)", [(t,) for t in texts])
    con.executescript(oracle.screenpipe_rows_sql(con))
    got = sorted(r[0] for r in con.execute("SELECT ts_us FROM screenpipe_rows"))
    assert got == sorted(parse_ts(t) for t in texts[:2])  # unreadable rows are excluded


apps = st.sampled_from(["Code", "Firefox", "Slack", "Google Chrome", "Mail"])
urls = st.sampled_from([None, "https://github.com/x", "https://docs.python.org/3/", "http://localhost:8000/", "https://a.b.github.io/"])


@given(
    st.lists(
        st.tuples(st.integers(0, 86_400 * 1000), apps, urls, st.sampled_from(["monitor_1", "monitor_2"]), st.integers(0, 1)),
        min_size=0,
        max_size=60,
        unique_by=lambda r: (r[0], r[3]),  # one row per capture cycle (time, monitor), as the log holds
    )
)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_duckdb_and_sqlite_agree(tmp_path_factory: pytest.TempPathFactory, spec: list[tuple[int, str, str | None, str, int]]) -> None:
    start, _ = day_bounds(DAY, TZ)
    base = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=start)
    # whole-second text only for whole-second times, so two rows never collapse into one by formatting
    rows = [
        (_ts_text(base + timedelta(milliseconds=ms), 1 if ms % 1000 == 0 else 2 * (ms % 2)), a, u, d, f)
        for ms, a, u, d, f in spec
    ]
    db = _screenpipe(tmp_path_factory.mktemp("sp") / "db.sqlite", rows)
    sp = oracle.ScreenpipeOracle(db)
    a = sp.day(DAY, TZ)
    b = oracle.DuckDBOracle().day_from_rows(DAY, _snapshots(rows), TZ)
    assert oracle.agree(a, b) == []
    # the cap bounds every row's credit
    assert sum(a.app_dwell_us.values()) <= 60_000_000 * max(0, a.rows - 1)


def test_legacy_cycles_have_one_foreground(tmp_path: Path) -> None:
    # legacy capture: one row per visible window per cycle; the focused one is the foreground
    rows = [
        ("2026-03-10 10:00:00", "Mail", None, "monitor_1", 1),
        ("2026-03-10 10:00:00", "Slack", None, "monitor_1", 1),  # a second focused row: not the first
        ("2026-03-10 10:00:00", "Finder", None, "monitor_1", 0),  # background window
        ("2026-03-10 10:00:30", "Code", None, "monitor_1", None),  # alone, focus unrecorded: foreground
        ("2026-03-10 10:01:00", "Notes", None, "monitor_1", None),  # two rows, no focus: ambiguous
        ("2026-03-10 10:01:00", "Music", None, "monitor_1", None),
    ]
    sp = oracle.ScreenpipeOracle(_screenpipe(tmp_path / "db.sqlite", rows, LEGACY_DDL))
    assert sp.layouts() == {"video": 6}
    assert sp.day(DAY, TZ).app_dwell_us == {"Mail": 30_000_000, "Code": 0}
    assert sp.counts() == {"frames_rows": 6, "unreadable": 0, "foreground_rows": 2}


def test_current_rows_are_each_an_observation(tmp_path: Path) -> None:
    rows = [
        ("2026-03-10 10:00:00", "Mail", None, "monitor_1", 1),
        ("2026-03-10 10:00:00", "Mail", None, "monitor_1", 1),  # recorded twice: one observation
        ("2026-03-10 10:00:00", "Slack", None, "monitor_1", 1),  # same second, another event
        ("2026-03-10 10:00:20", "Finder", None, "monitor_1", 0),  # marked unfocused
        ("2026-03-10 10:00:30", "Code", None, "monitor_1", None),
    ]
    sp = oracle.ScreenpipeOracle(_screenpipe(tmp_path / "db.sqlite", rows))
    assert sp.layouts() == {"event": 5}
    assert sp.day(DAY, TZ).app_dwell_us == {"Mail": 0, "Slack": 30_000_000, "Code": 0}
    assert sp.counts()["foreground_rows"] == 3


def test_not_a_screenpipe_database(tmp_path: Path) -> None:
    p = tmp_path / "x.sqlite"
    with pytest.raises(UserError, match="no such"):
        oracle.ScreenpipeOracle(p)
    p.write_text("hello")
    with pytest.raises(UserError, match="not a readable SQLite"):
        oracle.ScreenpipeOracle(p)


def test_source_is_never_written(tmp_path: Path) -> None:
    db = _screenpipe(tmp_path / "db.sqlite", [("2026-03-10 10:00:00", "A", None, "m", 1)])
    before = db.read_bytes()
    db.chmod(0o444)
    sp = oracle.ScreenpipeOracle(db)
    sp.day(DAY, TZ)
    sp.close()
    assert db.read_bytes() == before


@given(
    st.lists(st.integers(1, 60_000), min_size=1, max_size=40),  # gaps in ms, all under the cap
    st.lists(apps, min_size=41, max_size=41),
)
@settings(max_examples=40, deadline=None)
def test_one_stream_without_long_gaps_credits_its_whole_span(gaps: list[int], names: list[str]) -> None:
    start, _ = day_bounds(DAY, TZ)
    t = start + 3_600_000_000
    snaps = []
    for i, app in enumerate(names[: len(gaps) + 1]):
        snaps.append(Snapshot(ref=f"p:{i}", ts_us=t, stream="monitor_1", app=app))
        if i < len(gaps):
            t += gaps[i] * 1000
    got = oracle.DuckDBOracle().day_from_rows(DAY, snaps, TZ)
    assert sum(got.app_dwell_us.values()) == snaps[-1].ts_us - snaps[0].ts_us
    assert got.rows == len(snaps) and got.first_us == snaps[0].ts_us
