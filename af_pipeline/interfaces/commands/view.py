"""``af view`` and ``af serve``: a day or a week as one self-contained HTML page, and the published
pages over HTTP on 127.0.0.1 (read-only)."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from af_pipeline.compiler import view
from af_pipeline.interfaces import cli
from af_pipeline.warehouse import publish
from af_pipeline.warehouse.publish import published_days, verify_day
from capture.errors import UserError
from capture.files import atomic_write
from capture.home import Home, resolve_home
from capture.process import stop_signals

HOST = "127.0.0.1"  # never another interface: the pages hold titles and sites of the user's screen

_VIEW_HELP = """\
Write one self-contained HTML page (inline CSS and script, no network requests) for a day or
an ISO week, built from the same documents `af day` prints (published and verified when it
can be, else compiled from the log). The day page shows a timeline per monitor, the app,
domain and category ledgers and, for each frame on click, its windows, pages, clicks, input and
evidence rows; `af build` publishes the same page as published/DAY/view.html. The week page
shows minutes on screen by hour and day, totals per app, domain and category against the
previous week, the top routines and links to each day's published page and to the weeks
before and after. Beside a day's page `af view` writes days.js, the list of published days
its links to the previous and next day, the week and the index are drawn from (as
published/days.js does for published pages). Categories are
inferred (tier 2) from <home>/categories.json (or the defaults): see docs/views.md.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("view", help="write a day's or a week's HTML page", description=_VIEW_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("day", nargs="?", metavar="DAY",
                   help="local day: YYYY-MM-DD, today or yesterday (default: the latest day in the log)")
    p.add_argument("--week", metavar="YYYY-Www", help="an ISO week instead of a day, e.g. 2026-W12")
    p.add_argument("-o", "--out", metavar="FILE", help="where to write (default: view-DAY.html / view-WEEK.html here)")
    cli.common(p, json_flag=False)
    p.set_defaults(func=_view)

    s = sub.add_parser("serve", help="serve the published day pages on 127.0.0.1 (read-only)",
                       description="Serve published/DAY/view.html (checked against its manifest), week pages "
                       "rendered from the published documents, and a day picker, on 127.0.0.1 only. Nothing "
                       "is writable: every method but GET and HEAD is refused. Only requests addressed to "
                       "127.0.0.1:PORT or localhost:PORT are answered, days and weeks only in their exact form, "
                       "idle connections closed (docs/security.md). Ctrl-C stops it.")
    s.add_argument("--port", type=int, default=8765, help="TCP port (default 8765; 0 picks a free one)")
    cli.common(s, json_flag=False)
    s.set_defaults(func=_serve)


def _routines(memory: Any, days: list[str]) -> list[dict[str, Any]]:
    """The week's top routines as {"label", "count"} ([] when the week has too little to mine)."""
    from capture.errors import AfError

    try:
        found = memory.routines(memory.period(start=days[0], end=days[-1]), top=8)
    except (AfError, ValueError):
        return []
    out = []
    for r in found.get("routines", []):
        steps = r.get("targets") or r.get("symbols") or []
        label = " → ".join(str(t) for t in steps[:6]) + (" …" if len(steps) > 6 else "")
        out.append({"label": label or r.get("id", "?"), "count": int(r.get("count", 0))})
    return out


def week_page(memory: Any, week: str, day_href: Callable[[str], str | None],
              load: Callable[[str], dict[str, Any] | None] | None = None, *,
              week_href: Callable[[str], str | None] = lambda week: None, index_href: str | None = None) -> str:
    """The week's page; ``load`` gives a day's document or None (default: the log's days, through Memory)."""
    try:
        days = view.week_days(week)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if load is None:
        logged = set(memory.days())

        def load(day: str) -> dict[str, Any] | None:
            return memory.day_document(day)[0] if day in logged else None

    docs = {d: doc for d in days if (doc := load(d)) is not None}
    before = {d: doc for d in view.week_days(view.previous_week(week)) if (doc := load(d)) is not None}
    return view.render_week(week, docs, before, _routines(memory, days) if docs else [], day_href, week_href,
                            index_href)


def _view(args: argparse.Namespace) -> int:
    from af_pipeline.interfaces.memory import Memory  # the read model: not for `af --help`

    if args.day and args.week:
        raise UserError("give a DAY or --week YYYY-Www, not both")
    home = resolve_home(args.home)
    memory = Memory(home)
    with memory.noting_skipped() as skipped:
        if args.week:
            out = Path(args.out or f"view-{args.week}.html")

            def href(day: str) -> str | None:
                page = home.published_dir / day / "view.html"
                return os.path.relpath(page, out.resolve().parent) if page.is_file() else None

            def week_href(week: str) -> str | None:  # a sibling page written by af view --week before
                return f"view-{week}.html" if args.out is None and Path(f"view-{week}.html").is_file() else None

            text = week_page(memory, args.week, href, week_href=week_href,
                             index_href=_rel(home.published_dir / publish.INDEX, out))
        else:
            if args.day:
                day = memory.parse_day(args.day)
            else:
                logged = memory.days()
                if not logged:
                    raise UserError(f"{home.root} holds no day yet: import or record one first (af import, af record)")
                day = logged[-1]
            out = Path(args.out or f"view-{day}.html")
            doc, _source = memory.day_document(day)
            text = view.render_day(doc)
            # the page's links come from a list beside it: the published days, linked where they are
            pub = home.published_dir
            days_js = view.days_script(publish.published_days(pub), _rel(pub, out) + "/{}/view.html",
                                       _rel(pub / publish.INDEX, out) + "#{}", _rel(pub / publish.INDEX, out))
            atomic_write(out.parent / publish.DAYS_JS, days_js.encode("utf-8"))
    atomic_write(out, text.encode("utf-8"))
    print(out)
    cli.warn_skipped("view", skipped)
    return 0


def _rel(path: Path, out: Path) -> str:
    """``path`` relative to the folder ``out`` is written in, with / between parts (a URL's)."""
    return Path(os.path.relpath(path.resolve(), out.resolve().parent)).as_posix()


# -- af serve -------------------------------------------------------------------------------------


def _index(home: Home) -> str:

    days = published_days(home.published_dir)
    weeks = sorted({view.week_of(d) for d in days}, reverse=True)
    items = "".join(f"<li><a href=\"/day/{d}\">{d}</a></li>" for d in reversed(days)) or "<li>nothing published yet: run af build</li>"
    wk = "".join(f"<li><a href=\"/week/{w}\">{w}</a></li>" for w in weeks)
    picker = (f"<form action=\"/day\" method=\"get\"><label>Day <input type=\"date\" name=\"d\" "
              f"min=\"{days[0]}\" max=\"{days[-1]}\" value=\"{days[-1]}\"></label> <button>Open</button></form>"
              if days else "")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
            "content=\"width=device-width, initial-scale=1\"><title>activity-frames</title><style>"
            "body{font:14px/1.4 \"DejaVu Sans\",sans-serif;max-width:700px;margin:16px auto;padding:0 12px}"
            "</style></head><body><h1>activity-frames</h1>"
            f"{picker}<h2>Days</h2><ul>{items}</ul><h2>Weeks</h2><ul>{wk}</ul></body></html>\n")


# What `af serve` accepts. The pages hold what was on the user's screen, so the server answers
# its own origin only and reads nothing before the request is known to be well formed:
# - Host must name this server (127.0.0.1:PORT or localhost:PORT): a page on another site that
#   rebinds its DNS name to 127.0.0.1 sends its own name and gets 421 (DNS rebinding);
# - every path part and query value has one exact form (a day, a week); anything else is 400,
#   and no request byte is ever copied into a header or an answer;
# - a connection that sends nothing waits IDLE_TIMEOUT_S at most, and the whole request (line and
#   headers) must arrive within REQUEST_DEADLINE_S, so slow clients cannot hold threads;
# - a client that goes away mid-answer is not an error of the server: nothing is printed.
IDLE_TIMEOUT_S = 15.0  # seconds a read or a write of one connection may wait
REQUEST_DEADLINE_S = 30.0  # seconds for the request line and headers, however slowly they drip
MAX_TARGET_CHARS = 200  # the longest request target (path and query) served; ours are < 40
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_WEEK = re.compile(r"[0-9]{4}-W[0-9]{2}")
_ESCAPED = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}  # control characters in a log line
_GONE = (ConnectionError, TimeoutError)  # BrokenPipe, ConnectionReset/Aborted; a timed-out socket


class _DeadlineReader(io.RawIOBase):
    """A connection's bytes, each read waiting at most IDLE_TIMEOUT_S and all of them arriving
    before the deadline: a client dripping a byte at a time is cut off like a silent one."""

    def __init__(self, sock: socket.socket, seconds: float):
        self._sock = sock
        self._end = time.monotonic() + seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self._sock.settimeout(min(left, IDLE_TIMEOUT_S))
        return self._sock.recv_into(buffer)


def _day_or_none(text: str) -> str | None:
    return text if _DAY.fullmatch(text) and view.is_day(text) else None


def _week_or_none(text: str) -> str | None:
    if not _WEEK.fullmatch(text):
        return None
    try:
        view.week_days(text)
    except ValueError:
        return None
    return text


def _query(query: str, expected: set[str]) -> dict[str, str] | None:
    """The query's parameters when each is one of ``expected`` and given once, else None."""
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query), max_num_fields=len(expected))
    except ValueError:
        return None
    found = dict(pairs)
    return found if len(found) == len(pairs) and set(found) <= expected else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], _GONE):
            return  # the client went away or stalled: nothing to report
        super().handle_error(request, client_address)


def make_server(home: Home, port: int) -> ThreadingHTTPServer:
    from af_pipeline.interfaces.memory import Memory  # the read model: not for `af --help`

    memory = Memory(home)

    def published(day: str) -> dict[str, Any] | None:
        """A published day's document, only when its files match the manifest."""
        path = home.published_dir / day / "document.json"
        if not path.is_file() or verify_day(home.published_dir, day):
            return None
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return doc

    hosts: set[str] = set()  # filled once the port is bound (port 0 picks one)

    class Handler(BaseHTTPRequestHandler):
        server_version = "af-serve"
        timeout = IDLE_TIMEOUT_S  # set on the socket by StreamRequestHandler.setup

        def setup(self) -> None:
            super().setup()
            self.rfile.close()  # the connection stays open: only this reader of it is replaced
            self.rfile = io.BufferedReader(_DeadlineReader(self.connection, REQUEST_DEADLINE_S))

        def handle(self) -> None:
            try:
                super().handle()
            except _GONE:
                self.close_connection = True  # the client went away mid-request or mid-answer

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            line = (format % args).translate(_ESCAPED)  # no terminal escapes from a client
            print(f"  {self.address_string()} {line}", file=sys.stderr, flush=True)

        def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8",
                  extra: dict[str, str] | None = None) -> None:
            self.connection.settimeout(IDLE_TIMEOUT_S)  # the request deadline is over: writes wait as long
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; "
                             "script-src 'unsafe-inline' 'self'; img-src data:; form-action 'self'")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            """One plain sentence; ``message`` never holds request bytes that were not validated."""
            self._send(status, (message + "\n").encode("utf-8"), "text/plain; charset=utf-8")

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # http.server's own errors (a malformed request line, an unknown method) would put the
            # raw request line into the status line and the page: only the standard phrase is said.
            self.close_connection = True
            status = HTTPStatus(code)
            self._error(code, f"{status.phrase}: {status.description}.")

        def parse_request(self) -> bool:
            if not super().parse_request():
                return False
            given = self.headers.get_all("Host") or []
            if len(given) != 1 or given[0].lower() not in hosts:
                self.close_connection = True
                self._error(421, f"this server answers only to {' and '.join(sorted(hosts))}")
                return False
            if len(self.path) > MAX_TARGET_CHARS:
                self.close_connection = True
                self._error(400, f"the address is longer than {MAX_TARGET_CHARS} characters; no page has one")
                return False
            return True

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlsplit(self.path)
            parts = [p for p in url.path.split("/") if p]
            params = _query(url.query, {"d"} if parts == ["day"] else set())
            if params is None:
                return self._error(400, "unexpected query parameters: only /day takes one, d=YYYY-MM-DD")
            try:
                if not parts:
                    return self._send(200, _index(home).encode("utf-8"))
                if parts == ["day"]:
                    day = _day_or_none(params.get("d", ""))
                    if day is None:
                        return self._error(400, "d must be a day written YYYY-MM-DD")
                    return self._send(303, b"", extra={"Location": f"/day/{day}"})
                if parts in (["days.js"], ["day", "days.js"]):  # the list a day page's links come from
                    days_js = view.days_script(published_days(home.published_dir), "/day/{}", "/week/{}", "/")
                    return self._send(200, days_js.encode("utf-8"), "text/javascript; charset=utf-8")
                if len(parts) == 2 and parts[0] == "day":
                    day = _day_or_none(parts[1])
                    if day is None:
                        return self._error(400, "a day is written YYYY-MM-DD, as in /day/2026-03-16")
                    if not (home.published_dir / day / "view.html").is_file():
                        return self._error(404, f"{day} has no published view (run af build)")
                    problems = verify_day(home.published_dir, day)
                    if problems:
                        return self._error(409, "; ".join(problems))
                    return self._send(200, (home.published_dir / day / "view.html").read_bytes())
                if len(parts) == 2 and parts[0] == "week":
                    week = _week_or_none(parts[1])
                    if week is None:
                        return self._error(400, "a week is written YYYY-Www, as in /week/2026-W12")
                    page = week_page(memory, week, lambda d: f"/day/{d}" if
                                     (home.published_dir / d / "view.html").is_file() else None, published,
                                     week_href=lambda w: f"/week/{w}", index_href="/")
                    return self._send(200, page.encode("utf-8"))
                if parts == ["days.json"]:
                    return self._send(200, json.dumps(published_days(home.published_dir)).encode(), "application/json")
            except UserError as exc:
                return self._error(400, str(exc))
            return self._error(404, "not found")

        def do_HEAD(self) -> None:  # noqa: N802
            self.do_GET()

        def _refuse(self) -> None:
            self._send(405, b"read-only\n", "text/plain; charset=utf-8", {"Allow": "GET, HEAD"})

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

    server = _Server((HOST, port), Handler)
    bound = server.server_address[1]
    hosts.update({f"{HOST}:{bound}", f"localhost:{bound}"})  # HOST is IPv4 only: no [::1]
    return server


def _serve(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder")
    try:
        server = make_server(home, args.port)
    except OSError as exc:
        raise UserError(f"cannot listen on {HOST}:{args.port} ({exc.strerror or exc})") from None
    print(f"serving http://{HOST}:{server.server_address[1]}/ (read-only; Ctrl-C stops)", flush=True)

    # SIGTERM (a service manager's stop) and SIGINT end serve_forever and the command with 0, as
    # for `af sync --watch` (issue 43). shutdown() waits for serve_forever: from another thread.
    def on_signal(_signum: int, _frame: Any) -> None:
        threading.Thread(target=server.shutdown, name="af-serve-stop", daemon=True).start()

    try:
        with stop_signals(on_signal):
            server.serve_forever()
    finally:
        server.server_close()  # request threads are daemons: a stalled client does not hold the exit
    print("stopped", file=sys.stderr, flush=True)
    return 0
