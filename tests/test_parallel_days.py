"""A range run's day work in worker processes (af_pipeline/warehouse/parallel_days.py): the same
bytes as the serial build, a worker's error names its day, a killed run leaves no worker, the
row bound holds, and short ranges keep the serial path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import duckdb
import pytest
from dagster_support import corpus, days_of, new_home, only_days
from hypothesis import given
from hypothesis import strategies as st

from af_pipeline.compiler.categories import rules_in
from af_pipeline.warehouse import day_work, parallel_days, store
from capture.log import EventLog

warnings.filterwarnings("ignore", message=".*AssetCheckSpec.*")
WAIT_S = 120


def _landed(root: Path):
    """Two sealed days; the second with an amendment (a day of two segments: its rows are copied
    into the warehouse, not registered), so both raw layouts are covered."""
    batch = corpus()
    day1, day2 = days_of(batch)[:2]
    cut = max(s.ts_us for s in only_days(batch, {day2}).snapshots) - 15 * 60_000_000
    home = new_home(root)
    EventLog(home).append(only_days(batch, {day1}))
    EventLog(home).append(only_days(batch, {day2}, before_us=cut))
    EventLog(home).append(only_days(batch, {day2}))
    return home, [day1, day2]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _digests(home, days):
    con = duckdb.connect(str(home.warehouse_path), read_only=True)
    try:
        return store.digests(con, days)
    finally:
        con.close()


def _serial(home, days, out: Path):
    """The days built day after day by the steps without workers (what certification's rebuild runs)."""
    from af_pipeline.warehouse.version import code_version

    con = duckdb.connect(":memory:")
    try:
        for day in days:
            day_work.build_day(con, EventLog(home), day, out, False, code_version(), rules_in(home.root))
        return store.digests(con, days)
    finally:
        con.close()


def _with_workers(home, days, out: Path, run: parallel_days.RunParts):
    """The days built by build_day with the run's day workers (what the Dagster multi-asset does)."""
    from af_pipeline.warehouse.version import code_version

    con = duckdb.connect(":memory:")
    try:
        with run:
            run.start_prefetch(home.root, days, False, rules_in(home.root), min_days=2)
            for day in days:
                day_work.build_day(con, EventLog(home), day, out, False, code_version(), rules_in(home.root), run=run)
        return store.digests(con, days)
    finally:
        con.close()


@pytest.mark.parametrize("share, own", [(0, 0), (0.5, 1)], ids=["every day from the worker", "one day the run's own"])
def test_days_built_with_workers_are_byte_identical_to_the_serial_build(tmp_path, monkeypatch, share, own):
    """With a share, the run's process computes its days itself (the first of them) while the
    worker computes the others: the same bytes as the serial build either way, each day's parts
    used (not recomputed), nothing held after the run and no worker left."""
    home, days = _landed(tmp_path)
    monkeypatch.setenv(parallel_days.WORKERS_ENV, "1")
    monkeypatch.setenv(parallel_days.OWN_SHARE_ENV, str(share))
    run = parallel_days.RunParts()  # made and passed by the run, as the multi-asset does
    ours = _with_workers(home, days, tmp_path / "workers", run)
    pre = run.prefetch
    assert pre is not None and pre.stats["days"] == len(days) - own and pre.stats.get("own_days", 0) == own
    assert run.used == dict.fromkeys(days, True)  # every day's parts were used, not recomputed
    assert pre._results == {}  # each build took its day: nothing held after the run
    for proc in pre._procs:  # the workers ended with their last day
        assert proc.poll() is not None

    serial = _serial(home, days, tmp_path / "serial")
    assert _tree(tmp_path / "workers") == _tree(tmp_path / "serial")
    assert serial and all(ours[d][t] == v for d in days for t, v in serial[d].items()), (ours, serial)


def test_a_dagster_range_run_with_workers_is_byte_identical_to_the_serial_build(tmp_path, monkeypatch):
    from assets import certify as harness
    from assets.day_assets import WORKERS_SAID
    from assets.instance import instance

    home, days = _landed(tmp_path)
    monkeypatch.setenv(parallel_days.WORKERS_ENV, "1")
    monkeypatch.setenv(parallel_days.OWN_SHARE_ENV, "0")  # every day from the worker
    monkeypatch.setattr(parallel_days, "MIN_DAYS", 2)
    out = harness.run_build(home, days, force=True)
    assert out.ok, out.failures
    said = [r.user_message for r in instance(home).all_logs(out.run_id) if WORKERS_SAID in r.user_message]
    assert said == [f"day_work: 2 of 2 day(s) computed ahead ({WORKERS_SAID}: 1)"], said

    serial = _serial(home, days, tmp_path / "serial")
    assert _tree(home.published_dir) == _tree(tmp_path / "serial")
    ours = _digests(home, days)
    assert serial and all(ours[d][t] == v for d in days for t, v in serial[d].items()), (ours, serial)


@given(st.lists(st.dates().map(str), max_size=80, unique=True), st.floats(0, 1))
def test_the_runs_own_days_are_its_share_spread_over_the_range(days, share):
    own = parallel_days.own_days(days, share)
    assert own <= set(days)
    if days and share > 0:
        assert min(days) in own  # computed while the workers start
        assert abs(len(own) - share * len(days)) <= 1
    else:
        assert not own


@pytest.mark.parametrize("share, where", [(1, ""), (0, "in the day worker computing ")],
                         ids=["the run's own day", "a worker's day"])
def test_an_error_computing_a_day_is_raised_for_its_day(tmp_path, share, where):
    home, days = _landed(tmp_path)
    # rules that are no CategoryRules: the document's assembly fails where the day is computed
    pre = parallel_days.DayPrefetch(home.root, days, False, "not rules", max_rows=10**9, workers=1, share=share)
    try:
        with pytest.raises(Exception) as err:
            pre.result(days[0])
        assert f"{where}{days[0]}" in "".join(getattr(err.value, "__notes__", []))
    finally:
        pre.close()


def test_workers_run_this_code_whatever_the_current_folder(tmp_path, monkeypatch):
    """A folder named like the package (another checkout) in the current directory is not imported."""
    home, days = _landed(tmp_path)
    decoy = tmp_path / "cwd"
    (decoy / "af_pipeline").mkdir(parents=True)
    (decoy / "af_pipeline" / "__init__.py").write_text("raise ImportError('the decoy checkout')\n")
    monkeypatch.chdir(decoy)
    pre = parallel_days.DayPrefetch(home.root, days[:1], False, rules_in(home.root), max_rows=10**9, workers=1, share=0)
    try:
        assert pre.result(days[0]) is not None and "died" not in pre.stats
    finally:
        pre.close()


def test_a_dead_worker_leaves_its_days_to_the_steps(tmp_path):
    home, days = _landed(tmp_path)
    pre = parallel_days.DayPrefetch(home.root, days, False, rules_in(home.root), max_rows=10**9, workers=1, share=0)
    try:
        os.kill(pre.pids[0], signal.SIGKILL)
        assert [pre.result(d) for d in days] == [None, None]  # the steps compute them, no error
        assert pre.stats["died"] == 1
    finally:
        pre.close()


def test_the_row_bound_leaves_later_days_to_the_steps(tmp_path):
    home, days = _landed(tmp_path)
    pre = parallel_days.DayPrefetch(home.root, days, False, rules_in(home.root), max_rows=1, workers=1, share=0)
    try:
        first = pre.result(days[0])
        assert first is not None and first["rows"] > 1
        assert pre.result(days[1]) is None  # past the bound: not given to a worker
    finally:
        pre.close()


def test_options_or_capture_other_than_the_workers_use_the_serial_path(tmp_path):
    """A day's parts are used only for the capture the warehouse holds and the build's own options."""
    home, days = _landed(tmp_path)
    con = duckdb.connect(str(home.warehouse_path))
    try:
        for day in days:
            store.load_raw_day(con, EventLog(home), day)
        with parallel_days.RunParts() as run:
            run.prefetch = parallel_days.DayPrefetch(home.root, days, False, rules_in(home.root), 10**9, workers=1,
                                                     share=0)
            assert run.day_parts(con, days[0], True, rules_in(home.root)) is None  # typed text: not the workers'
            assert run.used == {days[0]: False}
            con.execute(f"UPDATE {store.RAW_DAYS} SET segment_hashes = '{{}}' WHERE day = ?", [days[1]])
            assert run.day_parts(con, days[1], False, rules_in(home.root)) is None  # another capture than the worker's
        with parallel_days.RunParts() as run:
            run.prefetch = parallel_days.DayPrefetch(home.root, days[:1], False, rules_in(home.root), 10**9,
                                                     workers=1, share=0)
            assert run.day_parts(con, days[0], False, None) is None  # other category rules
        with parallel_days.RunParts() as run:
            run.prefetch = parallel_days.DayPrefetch(home.root, days[:1], False, rules_in(home.root), 10**9,
                                                     workers=1, share=0)
            parts = run.day_parts(con, days[0], False, rules_in(home.root))
            assert parts is not None and set(day_work.STEPS[1:]) <= set(parts)
    finally:
        con.close()


def test_a_short_range_starts_no_worker(tmp_path):
    run = parallel_days.RunParts()
    assert run.start_prefetch(tmp_path, ["2026-06-01"], False, None) is None
    assert run.prefetch is None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose (nobody reaps it once its parent is killed)
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_a_killed_run_leaves_no_worker(tmp_path):
    home, days = _landed(tmp_path)
    script = textwrap.dedent(f"""
        import sys, time
        from af_pipeline.warehouse import parallel_days
        pre = parallel_days.DayPrefetch({str(home.root)!r}, {days!r}, False, None, 10**9, workers=1, share=0)
        print(*pre.pids, flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert pids and all(_alive(p) for p in pids)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=WAIT_S)
    deadline = time.monotonic() + WAIT_S
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), f"worker(s) {pids} outlived the killed run"
