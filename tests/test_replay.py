"""Parametric replay in a real browser (Debian Chromium through Playwright) on local pages.

One browser for the whole module; pages are served from tests/pages on 127.0.0.1 by a server
that gives every element a new id on every load, so grounding can only work by role and name.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from af_pipeline.compiler.actions import actions_for_day
from af_pipeline.routines import miner, plans, replay
from capture.model import InputEvent

PAGES = Path(__file__).parent / "pages"
ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not Path(replay.CHROMIUM).exists(), reason="needs Debian chromium (make setup)")


class _Site(ThreadingHTTPServer):
    variant = "form.html"  # what /form serves
    submissions: list[dict[str, list[str]]]
    ids = itertools.count(1000)


class _Handler(BaseHTTPRequestHandler):
    server: _Site

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _page(self, name: str) -> None:
        body = (PAGES / name).read_text(encoding="utf-8").replace("{{ID}}", f"x{next(self.server.ids)}")
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        pages = {"/form": self.server.variant, "/other": "other.html", "/thanks": "thanks.html"}
        if path in pages:
            self._page(pages[path])
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self.server.submissions.append(urllib.parse.parse_qs(self.rfile.read(length).decode("utf-8")))
        self.send_response(303)
        self.send_header("Location", "/thanks")
        self.end_headers()


@pytest.fixture(scope="module")
def site() -> Iterator[_Site]:
    srv = _Site(("127.0.0.1", 0), _Handler)
    srv.submissions = []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = replay.launch(pw)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, site: _Site) -> Iterator[Any]:
    site.variant = "form.html"
    p = browser.new_page()
    yield p
    p.close()


def base(site: _Site) -> str:
    return f"http://127.0.0.1:{site.server_address[1]}"


@dataclass(frozen=True)
class Enr:
    event: InputEvent
    url: str
    target_name: str | None = None
    target_role: str | None = None
    stream: str | None = "monitor_1"
    app: str | None = "Google Chrome"
    resolution: str = "recorded"


def mined_plan(url: str, thanks: str | None = None) -> dict[str, Any]:
    """Capture-shaped input of a form-filling routine done 3 times, mined and compiled. With
    ``thanks``, each round ends on that page by clicking "Add another response"."""
    rows: list[Enr] = []
    n = itertools.count()

    def ev(kind: str, **kw: Any) -> InputEvent:
        i = next(n)  # one event per second, one routine a minute: all in one session
        return InputEvent(ref=f"t:inputs:{i}", ts_us=1_772_438_400_000_000 + i * 1_000_000, kind=kind, stream="monitor_1", **kw)

    for name, email in (("Ann", "ann@x.org"), ("Bob", "bob@y.org"), ("Cy", "cy@z.org")):
        rows.append(Enr(ev("click"), url, "Name", "AXTextField"))
        rows += [Enr(ev("key", text=c), url, resolution="none") for c in name]
        rows.append(Enr(ev("click"), url, "Email", "AXTextField"))
        rows += [Enr(ev("key", text=c), url, resolution="none") for c in email]
        rows.append(Enr(ev("click"), url, "Save draft", "AXButton"))
        rows.append(Enr(ev("click"), url, "Submit", "AXButton"))
        if thanks:
            rows.append(Enr(ev("click"), thanks, "Add another response", "AXLink"))
    acts = actions_for_day("2026-03-02", rows)
    res = miner.mine_days([acts])
    top = res.routines[0]
    assert top.k == (8 if thanks else 6) and top.count == 3
    return plans.compile_plan(top)


def values(page: Any) -> tuple[str, str]:
    return (
        page.get_by_role("textbox", name="Name", exact=True).input_value(),
        page.get_by_role("textbox", name="Email", exact=True).input_value(),
    )


def without_submit(plan: dict[str, Any]) -> dict[str, Any]:
    return {**plan, "steps": [s for s in plan["steps"] if s.get("target") != "Submit"]}


def test_matching_page_runs_every_step_and_fills_the_slots(page: Any, site: _Site) -> None:
    plan = without_submit(mined_plan(base(site) + "/form"))
    assert [s["slot"] for s in plan["steps"] if "slot" in s] == ["name", "email"]
    page.goto(base(site) + "/form")
    first_ids = page.locator("input").evaluate_all("els => els.map(e => e.id)")
    tr = replay.run_plan(plan, {"name": "Dana", "email": "dana@w.org"}, page, execute=True, timeout_ms=2000)
    assert tr.outcome == "completed", tr.to_text()
    assert tr.actions_performed == 5 and tr.model_tokens == 0
    assert values(page) == ("Dana", "dana@w.org")
    assert page.get_by_role("status").inner_text() == "Draft saved"
    assert "Dana" not in json.dumps(tr.to_dict())  # slot values never reach the transcript
    # A second load has different element ids; the same plan still grounds by role and name.
    page.goto(base(site) + "/form")
    second_ids = page.locator("input").evaluate_all("els => els.map(e => e.id)")
    assert first_ids != second_ids
    tr = replay.run_plan(plan, {"name": "Eve", "email": "eve@v.org"}, page, execute=True, timeout_ms=2000)
    assert tr.outcome == "completed" and values(page) == ("Eve", "eve@v.org")


def test_dry_run_checks_guards_and_performs_nothing(page: Any, site: _Site) -> None:
    plan = mined_plan(base(site) + "/form")
    page.goto(base(site) + "/form")
    tr = replay.run_plan(plan, {"name": "Dana", "email": "dana@w.org"}, page, timeout_ms=2000)
    assert tr.outcome == "checked" and tr.actions_performed == 0
    assert all(s.status == "checked" for s in tr.steps)
    assert "submits a form" in tr.steps[-1].detail
    assert values(page) == ("", "")
    assert "model tokens spent: 0" in tr.to_text()


def test_changed_page_performs_no_action(page: Any, site: _Site) -> None:
    plan = without_submit(mined_plan(base(site) + "/form"))
    site.variant = "form_changed.html"  # same address, "Name" renamed to "Full name"
    page.goto(base(site) + "/form")
    tr = replay.run_plan(plan, {"name": "Dana", "email": "dana@w.org"}, page, execute=True, timeout_ms=300)
    assert tr.outcome == "stopped" and tr.actions_performed == 0
    assert tr.steps[0].status == "guard-miss" and "Name" in tr.steps[0].detail
    assert all(s.status == "not-reached" for s in tr.steps[1:])
    assert page.locator("input[name=name]").input_value() == ""
    assert page.locator("input[name=email]").input_value() == ""


def test_wrong_page_is_caught_by_the_url_guard(page: Any, site: _Site) -> None:
    # /other has the very same fields and button, but it is not the page the routine ran on.
    plan = without_submit(mined_plan(base(site) + "/form"))
    page.goto(base(site) + "/other")
    tr = replay.run_plan(plan, {"name": "Dana", "email": "dana@w.org"}, page, execute=True, timeout_ms=300)
    assert tr.outcome == "stopped" and tr.actions_performed == 0
    assert "URL template" in (tr.stop_reason or "")
    assert values(page) == ("", "")


def test_a_miss_midway_stops_at_once(page: Any, site: _Site) -> None:
    plan = without_submit(mined_plan(base(site) + "/form"))
    # Break the guard of step 3 (the Email field) only.
    steps = [dict(s) for s in plan["steps"]]
    steps[2] = {**steps[2], "guard": {**steps[2]["guard"], "element": {"role": "textbox", "name": "E-mail"}}}
    page.goto(base(site) + "/form")
    tr = replay.run_plan({**plan, "steps": steps}, {"name": "Dana", "email": "d@w.org"}, page, execute=True, timeout_ms=1500)
    assert [s.status for s in tr.steps] == ["performed", "performed", "guard-miss", "not-reached", "not-reached"], tr.to_text()
    assert tr.actions_performed == 2
    assert values(page) == ("Dana", "")
    assert page.get_by_role("status").inner_text() == ""  # Save draft was never clicked


def test_an_action_the_page_refuses_stops_the_run(page: Any, site: _Site) -> None:
    plan = without_submit(mined_plan(base(site) + "/form"))
    steps = [dict(s) for s in plan["steps"]]
    # Step 2 now tries to type into the "Save draft" button: it grounds, but cannot be filled.
    steps[1] = {**steps[1], "guard": {**steps[1]["guard"], "element": {"role": "button", "name": "Save draft"}}}
    page.goto(base(site) + "/form")
    tr = replay.run_plan({**plan, "steps": steps}, {"name": "Dana", "email": "d@w.org"}, page, execute=True, timeout_ms=800)
    assert [s.status for s in tr.steps][:3] == ["performed", "failed", "not-reached"], tr.to_text()
    assert tr.outcome == "stopped" and tr.actions_performed == 1 and values(page) == ("", "")


def test_submit_needs_allow_destructive(page: Any, site: _Site) -> None:
    plan = mined_plan(base(site) + "/form")
    page.goto(base(site) + "/form")
    tr = replay.run_plan(plan, {"name": "Dana", "email": "d@w.org"}, page, execute=True, timeout_ms=2000)
    assert tr.outcome == "refused" and tr.actions_performed == 0 and "Submit" in (tr.stop_reason or "")
    assert values(page) == ("", "")


def test_refusals_happen_before_any_browser_starts(tmp_path: Path, site: _Site) -> None:
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(mined_plan(base(site) + "/form")), encoding="utf-8")
    url = base(site) + "/form"
    tr = replay.replay(plan_path, {"name": "F", "email": "f@u.org"}, url, execute=True)
    assert tr.outcome == "refused" and "--allow-destructive" in (tr.stop_reason or "")
    tr = replay.replay(plan_path, {"name": "F"}, url)
    assert tr.outcome == "refused" and "missing slot value(s): email" in (tr.stop_reason or "")
    tr = replay.replay(plan_path, {"name": "F", "email": "x", "nmae": "typo"}, url)
    assert tr.outcome == "refused" and "unknown slot(s): nmae" in (tr.stop_reason or "")
    assert tr.actions_performed == 0 and all(s.status == "not-reached" for s in tr.steps)
    bad = tmp_path / "bad.json"
    bad.write_text('{"steps": [{"op": "click", "target": "X", "guard": {}}]}', encoding="utf-8")
    with pytest.raises(replay.UserError, match="no element guard"):
        replay.load_plan(bad)


def test_cli_replay_executes_submits_and_writes_a_transcript(tmp_path: Path, site: _Site) -> None:
    # Fill, save, submit, land on the thank-you page (a navigation guard), click back to the form.
    plan = mined_plan(base(site) + "/form", thanks=base(site) + "/thanks")
    assert [s["op"] for s in plan["steps"]][-3:] == ["click", "expect_url", "click"]
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    out = tmp_path / "transcript.json"
    cmd = [sys.executable, "-m", "af_pipeline.interfaces.cli", "replay", str(plan_path), "--url", base(site) + "/form",
           "--slot", "name=Fay", "--slot", "email=fay@u.org", "--transcript", str(out),
           "--execute", "--allow-destructive"]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "model tokens spent: 0" in run.stdout
    assert site.submissions[-1] == {"name": ["Fay"], "email": ["fay@u.org"]}
    transcript = json.loads(out.read_text(encoding="utf-8"))
    assert transcript["model_tokens"] == 0 and transcript["outcome"] == "completed"
    assert transcript["actions_performed"] == 7
    assert [st["status"] for st in transcript["steps"]][-2:] == ["checked", "performed"]
    assert "Fay" not in out.read_text(encoding="utf-8")
