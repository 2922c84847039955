"""Everywhere the memory is read sees a forget at once (issue 41): a running `af serve` (its
own process, started before the forget and never restarted) stops serving the forgotten app's
titles, its week page's app totals and routines follow the rewritten log, and the list of
published days (published/days.js, /days.js, the index) names no day whose files were removed;
a running Memory's routines (af mcp's get_routines) lose the forgotten routine without a rebuild."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from dagster_support import TZ, corpus, new_home
from wait_support import af_serve

from af_pipeline.interfaces import cli
from af_pipeline.warehouse import publish
from capture.log import EventLog
from capture.timeutil import day_bounds

DAYS = ("2026-06-01", "2026-06-02")
WEEK = "2026-W23"
APP = "Preview"  # the synthetic corpus's PDF viewer: the one routine of these two days is in it
ROUTINE = "Close Window → Don&#x27;t Save → File"  # as the week page writes it
READY_S = 60.0  # the longest `af serve` may take to listen (imports on a loaded machine)


@pytest.fixture()
def served(tmp_path):
    """A built folder of two days and `af serve` on it: (home, base URL, the server process)."""
    home = new_home(tmp_path)
    EventLog(home).append(corpus(), now_us=day_bounds(DAYS[1], TZ)[1] + 48 * 3_600_000_000)
    assert cli.main(["build", "--home", str(home.root)]) == 0
    with af_serve(home.root, tmp_path / "serve.err", READY_S) as (port, proc):
        yield home, f"http://127.0.0.1:{port}", proc


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def _titles_only(app: str) -> set[str]:
    """Window titles only ``app`` showed (no other app's title holds one)."""
    b = corpus()
    other = {s.window for s in b.snapshots if s.app != app and s.window}
    return {s.window for s in b.snapshots if s.app == app and s.window and not any(s.window in o for o in other)}


def _listed(js: str) -> list[str]:
    """The days a days.js lists."""
    start = js.index('"days": [')
    return json.loads(js[start + len('"days": '):js.index("]", start) + 1])


def test_a_running_af_serve_and_memory_see_a_forget_at_once(served):
    from af_pipeline.interfaces.memory import Memory

    home, base, proc = served
    titles = _titles_only(APP)
    status, page = _get(f"{base}/day/{DAYS[1]}")
    shown = {t for t in titles if t in page}
    assert status == 200 and shown and f">{APP}<" in page  # the day page shows the app and its titles
    status, week = _get(f"{base}/week/{WEEK}")
    assert status == 200 and ROUTINE in week  # the week's routines, mined by the server's Memory
    memory = Memory(home, clock=lambda: day_bounds(DAYS[1], TZ)[1] + 3_600_000_000)  # an af mcp, in effect
    period = memory.period(start=DAYS[0], end=DAYS[1])
    assert memory.routines(period)["routines"]

    assert cli.main(["forget", "--app", APP, "--yes", "--home", str(home.root)]) == 0
    # the running server: the affected days are not served until built again, the week has no trace
    for day in DAYS:
        if not (home.published_dir / day).exists():
            status, said = _get(f"{base}/day/{day}")
            assert status == 404 and "no published view" in said
    status, week = _get(f"{base}/week/{WEEK}")
    assert status == 200 and ROUTINE not in week
    # the running Memory mines the rewritten log: the routine was the app's, it is gone at once
    assert memory.routines(period)["routines"] == []

    assert cli.main(["build", "--home", str(home.root)]) == 0
    status, page = _get(f"{base}/day/{DAYS[1]}")
    assert status == 200 and not any(t in page for t in titles) and f">{APP}<" not in page
    # the week again from both days' documents, its routines from the server's Memory: none of the app
    status, week = _get(f"{base}/week/{WEEK}")
    assert status == 200 and "<td>Slack</td>" in week and ROUTINE not in week
    assert proc.poll() is None  # the same server throughout


def test_forgetting_a_day_takes_it_off_every_list_of_published_days(served):
    home, base, proc = served
    on_disk = home.published_dir / publish.DAYS_JS
    assert _listed(on_disk.read_text()) == list(DAYS) == _listed(_get(f"{base}/days.js")[1])
    assert cli.main(["forget", "--day", DAYS[1], "--yes", "--home", str(home.root)]) == 0
    # published/days.js is what the pages opened from disk (file://) and index.html link from: a
    # day whose folder was removed is not linked
    assert _listed(on_disk.read_text()) == [DAYS[0]]
    assert on_disk.read_bytes() == publish.days_list_bytes([DAYS[0]])
    assert _listed(_get(f"{base}/days.js")[1]) == [DAYS[0]]
    status, index = _get(f"{base}/")
    assert status == 200 and f'href="/day/{DAYS[0]}"' in index and f'href="/day/{DAYS[1]}"' not in index
    assert _get(f"{base}/day/{DAYS[1]}")[0] == 404
    assert proc.poll() is None
