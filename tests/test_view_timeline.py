"""The day page people use every day (issue 40), in Chromium at 1280 and 390 px, on a real data
folder: two days of a Windows PC's ActivityWatch export (tests/aw_windows_day.py) imported and
built with `af import` and `af build`.

- the timeline zooms (wheel, keys, buttons) down to a few minutes, where a frame that was 3 px
  wide (grouped with its neighbours until then) is a target a click or a tap hits;
- Tab stops once per row, arrows move inside it (roving tabindex);
- day -> next day -> week -> day, from published/days.js on file:// and from af serve;
- publishing a new day changes no byte of an earlier day: only days.js beside them;
- the list of frames and the week page fit a 390 px phone.

With AF_UPDATE_SCREENSHOTS=1 the pictures of docs/views.md are written to docs/img/views/.
One browser for the module; every wait is a condition, never a fixed sleep."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest
from aw_windows_day import DAY, export

from af_pipeline.interfaces import cli
from af_pipeline.interfaces.commands import sync as sync_cmd
from af_pipeline.routines import replay
from af_pipeline.warehouse import publish

DAY2 = "2026-03-18"
WEEK = "2026-W12"
WIDTHS = {"1280": (1280, 900), "390": (390, 844)}
SHOTS = Path(__file__).resolve().parents[1] / "docs" / "img" / "views"
UPDATE_SHOTS = os.environ.get("AF_UPDATE_SCREENSHOTS") == "1"
needs_chromium = pytest.mark.skipif(not Path(replay.CHROMIUM).exists(), reason="needs Debian chromium (make setup)")


def _export(root: Path, day: str) -> Path:
    path = root / f"aw-{day}.json"
    path.write_text(json.dumps(export()).replace(DAY, day), encoding="utf-8")
    return path


def _files(home: Path, day: str) -> dict[str, str]:
    folder = home / "published" / day
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """The first day imported and built, then the second: what the first publish left is kept."""
    root = tmp_path_factory.mktemp("timeline")
    home = root / "home"
    assert cli.main(["import", "activitywatch", str(_export(root, DAY)), "--home", str(home), "--tz", "UTC"]) == 0
    assert cli.main(["build", "--home", str(home)]) == 0
    first = _files(home, DAY)
    days_js = (home / "published" / publish.DAYS_JS).read_bytes()
    assert cli.main(["import", "activitywatch", str(_export(root, DAY2)), "--home", str(home), "--tz", "UTC"]) == 0
    assert cli.main(["build", "--home", str(home)]) == 0
    home_path = home
    home_path.joinpath(".first-day.json").write_text(json.dumps({"files": first, "days_js": days_js.decode()}))
    return home_path


def test_publishing_a_new_day_changes_no_earlier_day_only_the_list_beside_them(home):
    before = json.loads(home.joinpath(".first-day.json").read_text())
    assert _files(home, DAY) == before["files"]  # view.html and manifest.json included
    assert publish.verify_day(home / "published", DAY) == [] and publish.verify_day(home / "published", DAY2) == []
    after = (home / "published" / publish.DAYS_JS).read_text()
    assert f'["{DAY}"]' in before["days_js"] and f'["{DAY}", "{DAY2}"]' in after
    for day in (DAY, DAY2):  # no day's page names another day
        page = (home / "published" / day / "view.html").read_text()
        assert (DAY2 if day == DAY else DAY) not in page
    assert publish.published_days(home / "published") == [DAY, DAY2]  # days.js and index.html are no day


def test_af_view_without_a_day_shows_the_latest_and_writes_the_list_beside_it(home, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["view", "--home", str(home)]) == 0
    out = Path(capsys.readouterr().out.strip())
    assert out.name == f"view-{DAY2}.html"
    assert out.read_bytes() == (home / "published" / DAY2 / "view.html").read_bytes()
    days_js = (tmp_path / "days.js").read_text()
    assert f'"days": ["{DAY}", "{DAY2}"]' in days_js and "view.html" in days_js


def test_sync_status_ages_are_in_units_people_read():
    assert [sync_cmd.age(s) for s in (7, 7 * 60, 5.2 * 3600, 7_904_391)] == ["7 s", "7 min", "5.2 h", "91 d"]


# -- in Chromium ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = replay.launch(p)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(params=sorted(WIDTHS), ids=lambda w: f"{w}px")
def page(request, browser):
    w, h = WIDTHS[request.param]
    ctx = browser.new_context(viewport={"width": w, "height": h}, device_scale_factor=1)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.width = request.param  # type: ignore[attr-defined]
    yield pg
    ctx.close()
    assert errors == []


def _shot(page, name: str) -> None:
    if UPDATE_SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}-{page.width}.png"), animations="disabled", caret="hide")


def _day_url(home: Path, day: str) -> str:
    return (home / "published" / day / "view.html").as_uri()


def _view(page) -> tuple[float, float]:
    a, b = page.get_attribute("#tl", "data-view").split()
    return float(a), float(b)


@needs_chromium
def test_zoom_to_five_minutes_and_click_a_frame_that_was_3_px_wide(home, page):
    page.goto(_day_url(home, DAY))
    page.wait_for_selector("#tl[data-view]")
    lo, hi = _view(page)
    track = page.locator(".rows .track").first.bounding_box()
    # a frame 2-4 px wide on the whole day's axis (the median width): hidden in a group now
    spans = page.eval_on_selector_all(".rows .track >> nth=0 >> .frame",
                                      "fs => fs.map(f => [f.dataset.f, +f.dataset.a, +f.dataset.b])")
    px = track["width"] / (hi - lo)
    fid, a, b = next(s for s in spans if 2.0 <= (s[2] - s[1]) * px <= 4.0)
    frame = page.locator(f".frame[data-f='{fid}']")
    assert frame.is_hidden()  # too small to hit: drawn as part of a group
    _shot(page, "timeline-day")
    # the wheel zooms where the pointer is: the frame stays under it down to a 5-minute window
    x, y = track["x"] + ((a + b) / 2 - lo) * px, track["y"] + track["height"] / 2
    page.mouse.move(x, y)
    while (lambda v: v[1] - v[0])(_view(page)) > 300:
        before = page.get_attribute("#tl", "data-view")
        page.mouse.wheel(0, -200)
        page.wait_for_function("v => document.getElementById('tl').dataset.view !== v", arg=before)
    t0, t1 = _view(page)
    assert 60 <= t1 - t0 <= 300 and t0 < (a + b) / 2 < t1  # the frame's middle stayed in view
    box = frame.bounding_box()
    assert box["width"] >= 40, box  # now a target a finger hits
    _shot(page, "timeline-zoomed")
    frame.click()
    assert page.is_visible(f"#d-{fid}") and frame.get_attribute("aria-pressed") == "true"
    detail = page.inner_text(f"#d-{fid}")
    assert "input not recorded by this source" in detail and "0 keys" not in detail
    assert page.inner_text("#tlwin").endswith("min)")
    # the buttons: whole day, then zoom in twice halves the window twice
    page.click("[data-z=all]")
    assert _view(page) == (lo, hi)
    page.click("[data-z=in]")
    page.click("[data-z=in]")
    t0, t1 = _view(page)
    assert t1 - t0 == pytest.approx((hi - lo) / 4)
    # drag pans: the window keeps its length and moves later in the day
    mid_y = track["y"] + track["height"] / 2
    page.mouse.move(track["x"] + track["width"] * 0.8, mid_y)
    page.mouse.down()
    page.mouse.move(track["x"] + track["width"] * 0.3, mid_y, steps=5)
    page.mouse.up()
    u0, u1 = _view(page)
    assert u1 - u0 == pytest.approx(t1 - t0) and u0 > t0


@needs_chromium
def test_two_fingers_pinch_the_timeline_in_and_out(home, page):
    """A real touch pinch (Chromium's input pipeline, as a phone sends it): fingers spreading
    apart zoom in around their middle, closing zoom back out."""
    page.goto(_day_url(home, DAY))
    page.wait_for_selector("#tl[data-view]")
    lo, hi = _view(page)
    track = page.locator(".rows .track").first.bounding_box()
    cdp = page.context.new_cdp_session(page)
    mid, y = track["x"] + track["width"] / 2, track["y"] + track["height"] / 2

    def touch(kind: str, half: float) -> None:
        points = [] if kind == "touchEnd" else [{"x": mid - half, "y": y, "id": 0}, {"x": mid + half, "y": y, "id": 1}]
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    def pinch(start: float, end: float) -> tuple[float, float]:
        before = page.get_attribute("#tl", "data-view")
        touch("touchStart", start)
        for n in range(1, 9):
            touch("touchMove", start + (end - start) * n / 8)
        touch("touchEnd", end)
        page.wait_for_function("v => document.getElementById('tl').dataset.view !== v", arg=before)
        return _view(page)

    quarter = track["width"] / 4
    t0, t1 = pinch(quarter / 4, quarter)  # fingers four times further apart: a quarter of the day
    assert (t1 - t0) == pytest.approx((hi - lo) / 4, rel=0.05)
    assert t0 < lo + (hi - lo) / 2 < t1  # around the fingers' middle
    u0, u1 = pinch(quarter, quarter / 2)  # closing to half the distance: twice the span
    assert (u1 - u0) == pytest.approx(2 * (t1 - t0), rel=0.05)


@needs_chromium
def test_tab_stops_once_per_row_and_arrows_move_inside_it(home, page):
    page.goto(_day_url(home, DAY))
    page.wait_for_selector("#tl[data-view]")
    rows = page.locator(".rows .track").count()
    assert rows == 2  # the monitor and the presence row
    page.focus("[data-z=all]")  # the last control before the rows
    seen = []
    for _ in range(rows + 1):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("(() => { const e = document.activeElement, t = e.closest('.rows .track');"
                                  " return t ? [...document.querySelectorAll('.rows .track')].indexOf(t) : -1 })()"))
    assert seen == [0, 1, -1]  # one stop per row, then out of the timeline (not 197 stops)
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")  # back on the monitor row
    first = page.evaluate("document.activeElement.dataset.a")
    page.keyboard.press("ArrowRight")
    moved = page.evaluate("[document.activeElement.dataset.a, !!document.activeElement.closest('.rows .track')]")
    assert moved[1] and float(moved[0]) > float(first)
    # + zooms around the focused item and focus stays in its row
    before = _view(page)
    page.keyboard.press("+")
    after = _view(page)
    assert after[1] - after[0] == pytest.approx((before[1] - before[0]) / 2)
    assert page.evaluate("!!document.activeElement.closest('.rows .track')")
    # only one item of each row is a Tab stop, whatever the zoom
    assert page.evaluate("[...document.querySelectorAll('.rows .track')].map(t => t.querySelectorAll('[tabindex=\"0\"]').length)") == [1, 1]
    page.keyboard.press("ArrowDown")  # to the presence row
    assert page.evaluate("document.activeElement.closest('.track') === document.querySelectorAll('.rows .track')[1]")


def _navigate(page, start: str, week_url_part: str) -> None:
    """day -> next day -> week -> the first day, by the page's own links."""
    page.goto(start)
    page.wait_for_selector("#nav:not([hidden])")
    assert page.inner_text("#nav").startswith("no earlier day")
    page.click("#nav a[rel=next]")
    page.wait_for_url(f"**{DAY2}**")
    page.wait_for_selector("#nav:not([hidden])")
    assert page.inner_text("h1").startswith(f"Activity on {DAY2}")
    assert "no later day" in page.inner_text("#nav")
    page.click(f"#nav >> text=week {WEEK}")
    page.wait_for_url(f"**{week_url_part}**")
    page.click(f"a >> text={DAY[5:]}" if "week/" in week_url_part else f"a >> text={DAY}")
    page.wait_for_url(f"**{DAY}**")
    page.wait_for_selector("#nav:not([hidden])")
    assert page.inner_text("h1").startswith(f"Activity on {DAY}")


@needs_chromium
def test_navigate_day_next_day_week_day_from_files(home, page):
    _navigate(page, _day_url(home, DAY), f"index.html#{WEEK}")
    _shot(page, "day-nav")


@needs_chromium
def test_navigate_day_next_day_week_day_under_af_serve(home, page):
    from af_pipeline.interfaces.commands.view import make_server
    from capture.home import Home

    server = make_server(Home(home), 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        _navigate(page, f"{base}/day/{DAY}", f"/week/{WEEK}")
        # the week page: its days linked, the weeks around it, honest when there is nothing to compare
        page.goto(f"{base}/week/{WEEK}")
        text = page.inner_text("body")
        assert "no captured day" not in text and "no day captured the previous week" in text
        assert "new" not in page.inner_text("table.tot >> nth=0") and "previous week" not in page.inner_text("table.tot >> nth=0")
        assert "1. none found" not in text and page.locator("a[href='/week/2026-W11']").count() == 1
        assert page.locator("a[href='/week/2026-W13']").count() == 1
        assert page.locator(f"a[href='/day/{DAY}']").count() >= 1
        heat = page.locator(".heat table").bounding_box()
        assert heat["x"] + heat["width"] <= page.viewport_size["width"]  # the whole heatmap on screen
        _shot(page, "week")
    finally:
        server.shutdown()
        server.server_close()


@needs_chromium
def test_the_list_of_frames_and_the_search_work_on_a_phone(home, page):
    page.goto(_day_url(home, DAY))
    page.wait_for_selector("#tl[data-view]")
    page.fill("#q", "stack overflow")
    page.wait_for_selector("#fl[open]")
    shown = page.locator("#flist li:visible")
    assert 0 < shown.count() < page.locator("#flist li").count()
    item = shown.first.locator("button")
    fid = item.get_attribute("data-f")
    item.click()
    assert page.is_visible(f"#d-{fid}") and "Stack Overflow" in page.inner_text(f"#d-{fid}")
    # evidence: the watcher's event starts as HH:MM:SS, folded when long
    ev = page.inner_text(f"#d-{fid} h3:has-text('Evidence') + ul")
    assert ":" in ev and "17735" not in ev.split("…")[-1]
    # nothing is wider than the screen
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    _shot(page, "list")
