"""The day and week pages: self-contained, deterministic, evidence on click (in Chromium), screenshots
against committed goldens, and `af serve` answering real HTTP requests on 127.0.0.1, read-only.

After an intended change of the pages: AF_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_views.py"""

from __future__ import annotations

import base64
import html
import os
import signal
import socket
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from wait_support import af_serve as serving
from wait_support import until

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
        # the one file a day page loads is the list of days beside its folder (its links): no day's data
        low = text.lower().replace('<script src="../days.js"></script><script src="days.js"></script>', "")
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


def test_the_legend_has_a_swatch_per_category_in_the_colours_of_the_bars(doc, pages):
    from af_pipeline.compiler import categories

    keys = pages["day"].split('<div class="keys">', 1)[1].split("</div>", 1)[0]
    for label, _minutes, _frames in categories.totals(doc):
        assert (f'<span class="kc"><i class="sw" style="background:{view.category_color(label)}"></i>'
                f'{html.escape(label)}</span>') in keys, label
    for app in (a["app"] for a in doc["apps"]):
        assert f"</i>{html.escape(app)}</span>" in keys.split('<span class="kc">', 1)[0], app
    assert ".kc,body.by-cat .ka{display:none}body.by-cat .kc{display:inline}" in pages["day"]


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
                        # the one other file a page may load: the list of days beside its folder
                        if route.request.url.endswith("/days.js"):
                            return route.abort()
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
                        page.click("#d-f-0003 details summary")  # 7 evidence rows are folded under a summary
                        detail = page.inner_text("#d-f-0003")
                        for shown in ("Fix parser by jd - Pull Request #42", "pull_request", "acme/widgets#42",
                                      "synth:golden:frames:{17-21,23-24}", "7 rows", "Work > Programming > Code hosting",
                                      "0 keys, 0 clicks"):
                            assert shown in detail, shown
                        page.check("input[value=cat]")
                        assert "by-cat" in (page.get_attribute("body", "class") or "")
                        # the legend follows the colour mode: category swatches now, no app swatches
                        assert page.is_visible(".keys .kc >> text=Work > Programming > Code hosting")
                        assert not page.is_visible(".keys .ka >> nth=0")
                        page.check("input[value=app]")
                        assert page.is_visible(".keys .ka >> nth=0") and not page.is_visible(".keys .kc >> nth=0")
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


def _published_home(root: Path, doc, view_html: bytes | None = None) -> tuple[Home, dict[str, bytes]]:
    """A data folder with ``doc``'s day published (its view.html replaced by ``view_html`` if given)."""
    home = Home(root)
    home.init(tz="Europe/Paris")
    files = day_work.artifact_bytes(doc, "AF-CONTEXT v1\n")
    if view_html is not None:
        files["view.html"] = view_html
    publish.publish_day(home.published_dir, doc["day"], files, canonical_sha256="x" * 64, sealed=True,
                        segments={}, code_version="test")
    return home, files


@pytest.fixture()
def served(tmp_path, doc):
    home, files = _published_home(tmp_path / "home", doc)
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


# -- af serve answers its own origin only (issue 36) ----------------------------------------------

READY_S = 60.0  # the longest `af serve` may take to listen (imports on a loaded machine)


@pytest.fixture()
def af_serve(tmp_path, doc):
    """`af serve` itself, in its own process on a free port; (port, its stderr file, published day's files)."""
    home, files = _published_home(tmp_path / "home", doc, b"<!doctype html><p>" + b"x" * (8 << 20) + b"</p>\n")
    err_path = tmp_path / "serve.err"
    with serving(home.root, err_path, READY_S) as (port, proc):
        yield port, err_path, files, proc


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as bytes; the status, the headers (lower-case names) and the body."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(1 << 16):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def _get(port: int, target: str, host: str | None) -> tuple[int, dict[str, str], bytes]:
    return _raw(port, f"GET {target} HTTP/1.1\r\n".encode() + (f"Host: {host}\r\n".encode() if host is not None else b"")
                + b"Connection: close\r\n\r\n")


def test_serve_answers_only_to_its_own_host(af_serve, doc):
    port, _err, files, _proc = af_serve
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        status, headers, body = _get(port, f"/day/{doc['day']}", host)
        assert status == 200 and body == files["view.html"]
    for target in (f"/day/{doc['day']}", "/days.json", "/", f"/week/{view.week_of(doc['day'])}"):
        for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1", "", None,
                     f"127.0.0.1:{port}.evil.example"):
            status, headers, body = _get(port, target, host)
            assert status == 421, (target, host)
            assert headers["content-type"].startswith("text/plain")
            assert body.count(b"\n") == 1 and doc["day"].encode() not in body and b"<" not in body
    # two Host headers, one of them ours, are not ours either
    status, _h, _b = _raw(port, f"GET /days.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\n\r\n"
                          .encode())
    assert status == 421


@pytest.mark.parametrize("target", [
    "/day?d=2026-03-16%0d%0aSet-Cookie:%20injected=1",
    "/day?d=2026-03-16%0aSet-Cookie:%20injected=1",
    "/day?d=2026-03-16%0d%0a%0d%0a<script>injected</script>",
    "/day?d=2026-02-30", "/day?d=2026-3-16", "/day?d=16-03-2026", "/day?d=", "/day", "/day?d",
    "/day?d=2026-03-16&d=2026-03-17", "/day?d=2026-03-16&x=1", "/day?d=%EF%BC%92026-03-16",
    "/day?d=" + "2" * 5000, "/?x=1", "/days.json?callback=injected",
    "/day/2026-03-16%0d%0aSet-Cookie:%20injected=1", "/day/..%2f..%2fetc%2fpasswd", "/day/2026-13-01",
    "/week/2026-W99", "/week/2026-W12%0d%0ainjected", "/week/" + "9" * 3000,
])
def test_serve_refuses_every_parameter_not_in_its_exact_form(af_serve, target):
    port, *_ = af_serve
    status, headers, body = _get(port, target, f"127.0.0.1:{port}")
    assert status == 400, target
    assert headers["content-type"].startswith("text/plain")
    assert "set-cookie" not in headers and "location" not in headers
    assert body.count(b"\n") == 1 and b"injected" not in body and b"passwd" not in body


def test_serve_redirects_a_real_day_and_never_copies_input_into_a_header(af_serve, doc):
    port, *_ = af_serve
    status, headers, _body = _get(port, f"/day?d={doc['day']}", f"localhost:{port}")
    assert status == 303 and headers["location"] == f"/day/{doc['day']}"
    # a raw CR LF inside the request line ends it: an HTTP/0.9 request, answered without any
    # header (its "header" lines are read as its headers): nothing of it comes back
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"GET /day?d=2026-03-16\r\nSet-Cookie: injected=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
                  .encode())
        answer = s.makefile("rb").read()
    assert not answer.startswith(b"HTTP/") and b"injected" not in answer and b"Set-Cookie" not in answer
    # http.server's own errors (a malformed request line) say the standard phrase, not the line
    status, headers, body = _raw(port, b"GET /x injected HTTP/1.1\r\n\r\n")
    assert status == 400 and b"injected" not in body and all("injected" not in v for v in headers.values())


def test_serve_timeouts_are_named_and_bounded():
    from af_pipeline.interfaces.commands import view as serve

    assert 10 <= serve.IDLE_TIMEOUT_S <= 30 and serve.IDLE_TIMEOUT_S <= serve.REQUEST_DEADLINE_S <= 60


def _closed_by_server(sock: socket.socket, drip: bytes = b"") -> bool:
    """Whether the server has closed ``sock`` (after sending ``drip`` again, if given)."""
    try:
        if drip:
            sock.sendall(drip)
        return sock.recv(1 << 16) == b""
    except TimeoutError:
        return False
    except OSError:  # reset: closed too
        return True


@pytest.mark.parametrize("drip", [b"", b"X"], ids=["silent", "dripping"])
def test_serve_closes_a_connection_that_sends_nothing_or_drips(monkeypatch, tmp_path, doc, drip):
    from af_pipeline.interfaces.commands import view as serve

    # the real constants are 15 and 30 s: the test shortens them to keep the suite fast
    monkeypatch.setattr(serve, "IDLE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(serve, "REQUEST_DEADLINE_S", 1.5)
    home, _files = _published_home(tmp_path / "home", doc)
    server = serve.make_server(home, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
            slow.settimeout(0.1)
            slow.sendall(b"GET / HTTP/1.1\r\nX-Slow: ")
            started = time.monotonic()
            until(lambda: _closed_by_server(slow, drip), 10, "the server closing a slow connection")
            took = time.monotonic() - started
        limit = serve.IDLE_TIMEOUT_S if not drip else serve.REQUEST_DEADLINE_S
        assert took < limit + 2.0
        if drip:  # each byte came sooner than the idle timeout: the request deadline cut it
            assert took >= serve.REQUEST_DEADLINE_S - 0.5
        # and the server still answers others
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/days.json", timeout=10) as r:
            assert r.status == 200
    finally:
        server.shutdown()
        server.server_close()


def test_a_client_leaving_mid_answer_leaves_no_traceback(af_serve, doc):
    port, err_path, files, proc = af_serve
    fds = Path(f"/proc/{proc.pid}/fd")
    idle = until(lambda: len(list(fds.iterdir())), 5, "reading the server's open files")
    for _ in range(3):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the 8 MB page cannot fit: the server blocks
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET /day/{doc['day']} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert s.recv(64).startswith(b"HTTP/1.0 200")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset in the middle of the body
    # the connections are closed by the server (its open files are back to what they were)
    until(lambda: len(list(fds.iterdir())) <= idle, 30, "the server closing the reset connections")
    # a request that is cut off before its end is no error either
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET / HTT")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    until(lambda: len(list(fds.iterdir())) <= idle, 30, "the server closing the cut-off request")
    status, _h, body = _get(port, "/days.json", f"127.0.0.1:{port}")
    assert status == 200 and doc["day"].encode() in body
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    err = err_path.read_text()
    assert f"GET /day/{doc['day']} HTTP/1.1\" 200" in err  # it did start answering
    assert "Traceback" not in err and "Error" not in err, err
