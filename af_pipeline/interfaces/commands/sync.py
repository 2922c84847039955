"""``af sync``: keep the event log current from screenpipe and ActivityWatch as they record."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from af_pipeline.interfaces import cli
from af_pipeline.warehouse.days import log_days
from capture import sync
from capture.errors import UserError
from capture.home import resolve_home
from capture.process import accept_stop

_DESCRIPTION = """\
Follow the capture tools you already run, so the memory is current without re-importing by hand.

  af sync screenpipe ~/.screenpipe/db.sqlite    register screenpipe and make one pass
  af sync activitywatch http://127.0.0.1:5600   register a running ActivityWatch server (or give
                                                its sqlite.db) and make one pass
  af sync                                       one pass over every registered source
  af sync --watch                               keep following every registered source
  af sync --status                              where each source stands and how far behind it is

Each pass reads only what is new (sources are opened read-only), lands it in the event log
through the same importers as `af import` (so nothing lands twice), and seals the days whose
grace period has passed. A source that is down, restarting or locked is retried with back-off.
See docs/sync.md for a systemd user unit and a launchd agent that run `af sync --watch`.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("sync", help="keep the log current from screenpipe and ActivityWatch (one pass or --watch)",
                       description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", nargs="?", choices=sync.KINDS, help="register a source of this kind first")
    p.add_argument("location", nargs="?", metavar="PATH|URL",
                   help=f"the screenpipe database, or the ActivityWatch server URL (e.g. {sync.DEFAULT_AW_URL}) "
                   "or its sqlite.db")
    p.add_argument("--watch", action="store_true", help="keep following until interrupted (Ctrl-C or SIGTERM)")
    p.add_argument("--interval", type=float, default=sync.DEFAULT_INTERVAL_S, metavar="SECONDS",
                   help=f"seconds between passes with --watch (default {sync.DEFAULT_INTERVAL_S:g})")
    p.add_argument("--status", action="store_true", help="print each registered source's state and exit")
    p.add_argument("--tz", metavar="ZONE", help="IANA zone recorded when the data folder is created")
    cli.common(p)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    if args.status:
        if not home.exists():
            raise UserError(f"{home.root} is not an activity-frames data folder yet; register a source first")
        return _print_status(home, args.json)
    if not args.interval > 0:
        raise UserError(f"--interval must be a positive number of seconds, not {args.interval}")
    chosen: list[sync.Source]
    if args.kind:
        if not args.location:
            if args.kind != "activitywatch":
                raise UserError(f"give the {args.kind} database to follow, e.g. `af sync screenpipe ~/.screenpipe`")
            args.location = sync.DEFAULT_AW_URL
        location = sync.normalise(args.kind, args.location)  # checked before the data folder is made
        try:
            home.init(tz=args.tz)
        except (ValueError, OSError) as exc:
            raise UserError(str(exc)) from None
        chosen = [sync.register(home, args.kind, location)]
    else:
        if not home.exists():
            raise UserError(f"{home.root} has no registered source; start with `af sync screenpipe PATH` "
                            "or `af sync activitywatch URL`")
        chosen = sync.sources(home)
        if not chosen:
            raise UserError("no source is registered; start with `af sync screenpipe PATH` or `af sync activitywatch URL`")
    if not args.watch:
        results = [sync.sync_once(home, s) for s in chosen]
        for r in results:
            _say(r, args.json)
        _announce(home, results)
        return 0 if all(r.ok for r in results) else 2
    stop = threading.Event()

    def _stop(_sig: int, _frame: Any) -> None:
        stop.set()

    accept_stop(_stop)
    print(f"following {len(chosen)} source(s) every {args.interval:g} s into {home.root}; Ctrl-C stops",
          file=sys.stderr, flush=True)
    keeper, announcer = OpenCacheKeeper(home, stop), DayAnnouncer(home, stop)
    sync.watch(home, chosen, interval_s=args.interval, stop=stop,
               on_pass=lambda r: _pass_done(home, r, args.json, keeper, announcer))
    print("stopped", file=sys.stderr)
    return 0


def _pass_done(home: Any, r: sync.PassResult, as_json: bool, keeper: OpenCacheKeeper,
               announcer: DayAnnouncer) -> None:
    _say(r, as_json, quiet=True, tz=home.settings().tz)
    announcer.after_pass(r)
    keeper.after_pass(r)


def _af_log_child(home: Any, action: str, stop: threading.Event) -> tuple[int, str]:
    """`af log ACTION` on the folder in a child process (what would stay resident here runs and
    ends there), terminated if ``stop`` is set meanwhile: its exit code and why it failed (the
    last line it printed, or its exit code)."""
    child = subprocess.Popen([sys.executable, "-m", "af_pipeline.interfaces.cli", "log", action, "--home",
                              str(home.root)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    while child.poll() is None:
        if stop.wait(0.1):
            child.terminate()
    err = child.communicate()[1].decode(errors="replace").strip().splitlines()
    return child.returncode, err[-1] if err else f"exit {child.returncode}"


class DayAnnouncer:
    """Tells the folder's Dagster instance about a day once, when --watch first lands a row of it,
    through `af log announce` in a child process. Announcing on every pass that landed rows opened
    the instance every couple of seconds all day for nothing (the days it holds change at most once
    a day), and doing it here loaded Dagster into this long-lived process for good (+75 MB RSS)."""

    def __init__(self, home: Any, stop: threading.Event | None = None) -> None:
        self.home = home
        self.stop = stop or threading.Event()
        self.told: set[str] = set()
        self.next_try = 0.0  # after a failed announcement, not before this (monotonic s)

    def after_pass(self, r: sync.PassResult) -> None:
        if not (r.ok and r.landed) or self.stop.is_set() or time.monotonic() < self.next_try:
            return
        days = set(log_days(self.home))
        if days <= self.told or not (self.home.dagster_home / "dagster.yaml").exists():
            return  # nothing new, or no instance yet (af ui's sensor adds the days when it starts)
        code, why = _af_log_child(self.home, "announce", self.stop)  # a stop ends it: the next start announces
        if code == 0:
            self.told |= days
        elif code != -signal.SIGTERM:  # only a cost: the sensor adds the day at its next tick
            self.next_try = time.monotonic() + OpenCacheKeeper.CACHE_EVERY_S
            print(f"af log announce failed ({why}); retrying in {OpenCacheKeeper.CACHE_EVERY_S:g} s",
                  file=sys.stderr, flush=True)


class OpenCacheKeeper:
    """Keeps the open day's parsed rows on disk while --watch lands rows (`af log cache`), so a
    freshly started `af mcp` answers about today without parsing the whole open segment. At most
    every CACHE_EVERY_S, in a child process: the rows of a busy open day are hundreds of MB of
    objects, which this long-lived process would keep as resident memory once parsed."""

    CACHE_EVERY_S = 300.0  # s between refreshes while rows land (a refresh parses only what was appended)

    def __init__(self, home: Any, stop: threading.Event) -> None:
        self.home, self.stop = home, stop
        self.next_due = time.monotonic()

    def after_pass(self, r: sync.PassResult) -> None:
        if not (r.ok and r.landed) or time.monotonic() < self.next_due or self.stop.is_set():
            return
        self.next_due = time.monotonic() + self.CACHE_EVERY_S
        # a stop ends the refresh too: the cache is written atomically or not at all
        code, why = _af_log_child(self.home, "cache", self.stop)
        if code not in (0, -signal.SIGTERM):  # only a cost: the next af mcp parses the segment
            print(f"af log cache failed ({why}); retrying in {self.CACHE_EVERY_S:g} s", file=sys.stderr, flush=True)


def _announce(home: Any, results: list[sync.PassResult]) -> None:
    """New rows may start a new day: make it a partition the Dagster UI shows without a reload."""
    if any(r.ok and r.landed for r in results):
        from assets.instance import announce_days  # Dagster (~1 s): only when a pass landed new days

        announce_days(home)


def _say(r: sync.PassResult, as_json: bool, quiet: bool = False, tz: str | None = None) -> None:
    if quiet and r.ok and not (r.landed or r.quarantined or r.days_sealed or r.changed):
        return  # --watch prints only passes that landed, quarantined (new rows), sealed or saw a change
    if as_json:
        cli.emit_json({"source": r.source, "ok": r.ok, "landed": r.landed, "skipped": r.skipped,
                       "forgotten": r.forgotten,
                       "quarantined": r.quarantined, "continued": r.continued, "error": r.error,
                       "seconds": r.seconds, "days_sealed": r.days_sealed, "days_amended": r.days_amended,
                       "source_changed": r.changed})
        sys.stdout.flush()
        return
    # --watch: each line starts with the time in the data folder's zone, its offset written
    stamp = f"{datetime.now(ZoneInfo(tz)).isoformat(timespec='seconds')} " if quiet and tz else ""
    if not r.ok:
        print(f"{stamp}{r.source}: FAILED: {r.error} (retrying with back-off)"
              if quiet else f"{r.source}: FAILED: {r.error}", file=sys.stderr, flush=True)
        return
    if r.changed:
        print(f"{stamp}{r.source}: {r.changed}", flush=True)
    if quiet and not r.landed and not r.quarantined and not r.days_sealed:
        return  # the change is said: the pass itself did nothing to say
    extra = []
    if r.continued:
        extra.append(f"{r.continued} continue events that grew")
    if r.days_sealed:
        extra.append(f"sealed {', '.join(r.days_sealed)}")
    if r.days_amended:
        extra.append(f"amended {', '.join(r.days_amended)}")
    if r.forgotten:
        extra.append(f"{r.forgotten:,} rows skipped: forgotten")
    tail = f" ({'; '.join(extra)})" if extra else ""
    # a watch's pass re-reads rows below its watermark on purpose: only new rows are counted
    seen = "" if quiet else f"{r.skipped:,} already in the log, "
    print(f"{stamp}{r.source}: {r.landed:,} rows landed, {seen}"
          f"{r.quarantined:,} quarantined in {r.seconds:.2f} s{tail}", flush=True)


def age(seconds: float) -> str:
    """A duration in the largest unit a person reads at a glance: 42 s, 17 min, 5.2 h, 91 d."""
    s = max(0.0, float(seconds))
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.0f} min"
    if s < 86_400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86_400:.0f} d"


def _print_status(home: Any, as_json: bool) -> int:
    rows = sync.status(home)
    if as_json:
        cli.emit_json({"home": str(home.root), "sources": rows})
        return 0
    if not rows:
        print(f"no source registered in {home.root}")
        return 0
    for row in rows:
        print(row["source"])
        print(f"  last pass:      {row['last_pass'] or 'never'}"
              + (f"  (last success {age(row['since_last_ok_s'])} ago)" if row["since_last_ok_s"] is not None else ""))
        if row["last_error"]:
            print(f"  last error:     {row['last_error']} ({row['failures']} failed passes in a row)")
        newest = row["newest_capture"]
        print(f"  newest capture: {newest or 'none yet'}"
              + (f"  ({age(row['behind_s'])} old)" if row["behind_s"] is not None else ""))
        print(f"  rows landed:    {row['rows_landed']:,}")
        if row["source_changed"]:
            print(f"  source changed: {row['source_changed']['at']}: {row['source_changed']['says']}")
    return 0
