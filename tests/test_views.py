"""The day and week pages: self-contained, deterministic, evidence on click (in Chromium), screenshots
against committed goldens, and `af serve` answering real HTTP requests on 127.0.0.1, read-only.

After an intended change of the pages: AF_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_views.py"""

from __future__ import annotations

import base64
import os
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from af_pipeline.compiler import view
from af_pipeline.compiler.compile import CompileOptions, compile_day
from af_pipeline.routines import replay
from af_pipeline.warehouse import day_work, publish
from capture.home import Home

GOLDEN = Path(__file__).parent / "golden"
SHOTS = GOLDEN / "views"
sys.path.insert(0, str(GOLDEN))
from day_fixture import golden_day  # noqa: E402

WIDTHS = {"1280": (1280, 900), "390": (390, 844)}
UPDATE = os.environ.get("AF_UPDATE_GOLDEN") == "1"
needs_chromium = pytest.mark.skipif(not Path(replay.CHROMIUM).exists(), reason="needs Debian chromium (make setup)")


@pytest.fixture(scope="module")
def doc():
    return compile_day(golden_day(), CompileOptions(min_minutes=0.0))


@pytest.fixture(scope="module")
def pages(doc):
    week = view.week_of(doc["day"])
    routines = [{"label": "Code → Terminal", "count": 4}, {"label": "Mail → Slack", "count": 2}]
    return {
        "day": view.render_day(doc),
        "week": view.render_week(week, {doc["day"]: doc}, {}, routines),
    }


def test_pages_are_self_contained_and_the_same_bytes_every_time(doc, pages):
    assert view.render_day(doc) == pages["day"]
    for text in pages.values():
        assert "default-src 'none'" in text  # the page itself forbids any fetch
        low = text.lower()
        assert "<link" not in low and " src=" not in low and "http://" not in low and "https://" not in low


def test_typed_text_never_reaches_the_page(doc):
    secret = "hunter2-typed"
    leaky = dict(doc, privacy={"typed_text": "included"},
                 frames=[dict(f, typed_text=secret) for f in doc["frames"]])
    assert secret not in view.render_day(leaky)


def test_optional_fields_may_be_absent(doc):
    # a page the typer could not name has a kind and no entity (schema v1): the page still renders
    bare = dict(doc, frames=[dict(f, pages=[{"count": 1, "kind": "page"}]) for f in doc["frames"]])
    assert "<b></b> ×1" in view.render_day(bare)


def test_week_hours_count_overlapping_monitors_once(doc):
    hours = view.hour_minutes(doc)
    # 08:58-09:01 Code on monitor 1 overlaps Mail 08:58:20-08:59:40 on monitor 2: counted once
    assert hours[8] == 2.0
    assert sum(hours) == pytest.approx(doc["coverage"]["timeline_min"], abs=0.1)
    assert view.week_days("2026-W12")[0] == "2026-03-16" and view.previous_week("2026-W01") == "2025-W52"
    with pytest.raises(ValueError):
        view.week_days("2026-12")


def _diff_ratio(page, got: bytes, want: bytes) -> float:
    """Share of pixels differing by more than 24 in a channel, decoded by Chromium itself (data: URLs)."""
    return page.evaluate(
        """async ([a, b]) => {
          const load = s => new Promise(r => { const i = new Image(); i.onload = () => r(i); i.src = s; });
          const [x, y] = await Promise.all([load(a), load(b)]);
          if (x.width !== y.width || x.height !== y.height) return 1;
          const px = img => { const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
            const g = c.getContext('2d'); g.drawImage(img, 0, 0); return g.getImageData(0, 0, c.width, c.height).data; };
          const p = px(x), q = px(y); let bad = 0;
          for (let i = 0; i < p.length; i += 4)
            if (Math.abs(p[i]-q[i]) > 24 || Math.abs(p[i+1]-q[i+1]) > 24 || Math.abs(p[i+2]-q[i+2]) > 24) bad++;
          return bad / (p.length / 4);
        }""",
        ["data:image/png;base64," + base64.b64encode(got).decode(), "data:image/png;base64," + base64.b64encode(want).decode()],
    )


@needs_chromium
def test_views_in_chromium_match_goldens_show_evidence_and_request_nothing(pages, tmp_path):
    from playwright.sync_api import sync_playwright

    files = {}
    for name, text in pages.items():
        files[name] = tmp_path / f"{name}.html"
        files[name].write_text(text, encoding="utf-8")
    left_page: list[str] = []
    with sync_playwright() as p:
        browser = replay.launch(p)
        try:
            for name, path in files.items():
                for width, (w, h) in WIDTHS.items():
                    ctx = browser.new_context(viewport={"width": w, "height": h}, device_scale_factor=1)
                    page = ctx.new_page()

                    own = path.as_uri()

                    def guard(route, _left=left_page, _own=own):
                        if route.request.url != _own and not route.request.url.startswith("data:"):
                            _left.append(route.request.url)
                            return route.abort()
                        return route.continue_()

                    page.route("**/*", guard)
                    page.goto(path.as_uri())
                    if name == "day":
                        # keyboard: Tab into the timeline, Enter opens the first frame, arrow moves on
                        page.focus(".frame[data-f='f-0001']")
                        page.keyboard.press("Enter")
                        assert page.is_visible("#d-f-0001") and not page.is_visible("#hint")
                        page.keyboard.press("ArrowRight")
                        assert page.is_visible("#d-f-0003") and not page.is_visible("#d-f-0001")
                        page.keyboard.press("Escape")
                        assert page.is_visible("#hint")
                        page.click(".frame[data-f='f-0003']")
                        detail = page.inner_text("#d-f-0003")
                        for shown in ("Fix parser by jd - Pull Request #42", "pull_request", "acme/widgets#42",
                                      "synth:golden:frames:{17-21,23-24}", "7 rows", "Work > Programming > Code hosting",
                                      "0 keys, 0 clicks"):
                            assert shown in detail, shown
                        page.check("input[value=cat]")
                        assert "by-cat" in (page.get_attribute("body", "class") or "")
                        page.check("input[value=app]")
                    shot = page.screenshot(animations="disabled", caret="hide")
                    golden = SHOTS / f"{name}-{width}.png"
                    if UPDATE:
                        SHOTS.mkdir(exist_ok=True)
                        golden.write_bytes(shot)
                    assert golden.exists(), f"{golden} is missing: run with AF_UPDATE_GOLDEN=1 once"
                    ratio = _diff_ratio(page, shot, golden.read_bytes())
                    if ratio > 0.01:
                        (tmp_path / golden.name).write_bytes(shot)
                    assert ratio <= 0.01, f"{golden.name}: {ratio:.2%} of pixels differ (got {tmp_path / golden.name})"
                    ctx.close()
        finally:
            browser.close()
    assert left_page == []


@pytest.fixture()
def served(tmp_path, doc):
    home = Home(tmp_path / "home")
    home.init(tz="Europe/Paris")
    files = day_work.artifact_bytes(doc, "AF-CONTEXT v1\n")
    publish.publish_day(home.published_dir, doc["day"], files, canonical_sha256="x" * 64, sealed=True,
                        segments={}, code_version="test")
    from af_pipeline.interfaces.commands.view import make_server

    server = make_server(home, 0)  # bound and listening once constructed: no waiting needed
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield home, f"http://{server.server_address[0]}:{server.server_address[1]}", files
    finally:
        server.shutdown()
        server.server_close()


def test_serve_answers_on_localhost_with_the_published_bytes_and_refuses_writes(served, doc):
    home, base, files = served
    assert base.startswith("http://127.0.0.1:")
    index = urllib.request.urlopen(base + "/", timeout=10).read().decode()
    assert f'href="/day/{doc["day"]}"' in index and 'type="date"' in index
    with urllib.request.urlopen(base + f"/day?d={doc['day']}", timeout=10) as r:  # the picker redirects
        assert r.read() == files["view.html"]
    week = urllib.request.urlopen(base + f"/week/{view.week_of(doc['day'])}", timeout=10).read().decode()
    assert f'href="/day/{doc["day"]}"' in week
    for method in ("POST", "PUT", "DELETE"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(urllib.request.Request(base + "/", data=b"x", method=method), timeout=10)
        assert err.value.code == 405
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(base + "/day/2026-01-01", timeout=10)
    assert err.value.code == 404
    # a published page that was changed after publishing is refused, not served
    (home.published_dir / doc["day"] / "view.html").write_bytes(b"<p>changed</p>")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(base + f"/day/{doc['day']}", timeout=10)
    assert err.value.code == 409


def test_published_day_lists_view_html_in_its_manifest(served, doc):
    home, _base, files = served
    manifest = publish.read_manifest(home.published_dir, doc["day"])
    assert "view.html" in manifest["files"]
    assert publish.verify_day(home.published_dir, doc["day"]) == []
    assert files["view.html"] == view.render_day(doc, "AF-CONTEXT v1\n").encode()
