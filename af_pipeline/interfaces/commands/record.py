"""``af record``: record this X11 desktop into the event log (see docs/recorder.md)."""

from __future__ import annotations

import argparse
import sys
import threading
from types import FrameType
from typing import Any

from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.home import resolve_home
from capture.process import stop_signals

_DESCRIPTION = """\
Record the X11 desktop into the event log of the data folder (--home), until Ctrl-C, SIGTERM or
--duration: the focused window's app (WM_CLASS) and title, clicks with their position, scroll
gestures, key presses, typed text gathered per window (unless --no-typed-text), copy/cut/paste
shortcuts, and each monitor's size. A snapshot row is written on each interaction and app or
window switch, and a heartbeat row after 30 s without input. Rows reach the log every 2 s.

Windows of password managers and private/incognito browser windows are never recorded, nor
anything matching --exclude-app / --exclude-title: not their titles, not their input. Their time
shows only as an "(excluded)" snapshot. Screenshots are off unless --screenshots.
See docs/recorder.md.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="record this X11 desktop (focused window, clicks, keys) into the event log",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cli.common(p)
    p.add_argument("--duration", metavar="SECONDS", type=float,
                   help="stop after this many seconds (default: until Ctrl-C or SIGTERM)")
    p.add_argument("--display", metavar=":N", help="X display to record (default: $DISPLAY)")
    p.add_argument("--exclude-app", metavar="NAME", action="append", default=[],
                   help="never record windows of this app: its WM_CLASS, as `xprop WM_CLASS` shows it, "
                   "case-insensitive (repeatable; password managers are excluded already)")
    p.add_argument("--exclude-title", metavar="REGEX", action="append", default=[],
                   help="never record windows whose title matches this regular expression, "
                   "case-insensitive (repeatable; private/incognito windows are excluded already)")
    p.add_argument("--no-typed-text", action="store_true",
                   help="record no typed text at all: keys are counted, character key codes are dropped")
    p.add_argument("--screenshots", action="store_true",
                   help="also save a PNG of the monitor with each snapshot under <home>/screens/ "
                   "(off by default: pixels show everything on screen)")
    p.add_argument("--tz", metavar="ZONE",
                   help="IANA time zone recorded when the data folder is created (default: the "
                   "machine's zone); an existing folder keeps its zone")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)


def _say(message: str) -> None:
    print(f"af record: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    # deferred: python-xlib, mss and pynput, only for `af record`
    from capture.recorder import Exclusions, RecordOptions, record
    from capture.x11 import X11Desktop, display_name

    if args.duration is not None and not args.duration > 0:
        raise UserError(f"--duration must be a positive number of seconds, not {args.duration:g}")
    exclusions = Exclusions.build(args.exclude_app, args.exclude_title)
    display = display_name(args.display)
    X11Desktop(display).close()  # unreachable display: say so before creating a data folder
    home = resolve_home(args.home)
    try:
        home.init(tz=args.tz)
    except (ValueError, OSError) as exc:
        raise UserError(str(exc)) from None
    options = RecordOptions(exclusions=exclusions, typed_text=not args.no_typed_text,
                            screenshots=args.screenshots, duration_s=args.duration)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    with stop_signals(on_signal):
        summary = record(home, options, display=display, stop=stop, progress=None if args.quiet else _say)
    st = summary.stats
    inputs = dict(sorted(st.inputs.items()))
    if args.json:
        cli.emit_json({
            "home": str(home.root),
            "display": summary.display,
            "session": summary.session,
            "source_id": summary.source_id,
            "monitors": summary.monitors,
            "seconds": summary.seconds,
            "snapshots": st.snapshots,
            "heartbeats": st.heartbeats,
            "inputs": inputs,
            "excluded_stretches": st.excluded_stretches,
            "excluded_snapshots": st.excluded_markers,
            "excluded_inputs_dropped": st.excluded_inputs,
            "unknown_stretches": st.unknown_stretches,
            "unknown_inputs_dropped": st.unknown_inputs,
            "typed_text": options.typed_text,
            "screenshots": summary.screenshots,
            "screenshots_skipped": summary.screenshots_skipped,
            "landed": summary.landed,
            "days": summary.days,
            "days_sealed": summary.days_sealed,
            "quarantined": summary.quarantined,
            "quarantine_reasons": summary.quarantine_reasons,
        })
        return 0
    print(f"recorded {summary.display} for {summary.seconds:.0f} s (session {summary.session}) into {home.root}")
    print(f"  monitors:            {', '.join(summary.monitors) or 'none'}")
    print(f"  snapshots:           {st.snapshots} ({st.heartbeats} heartbeats)")
    print(f"  inputs:              {sum(inputs.values())}"
          + (f" ({', '.join(f'{k} {v}' for k, v in inputs.items())})" if inputs else ""))
    print(f"  typed text:          {'recorded' if options.typed_text else 'not recorded (--no-typed-text)'}")
    print(f"  excluded stretches:  {st.excluded_stretches} ({st.excluded_markers} '(excluded)' snapshots, "
          f"{st.excluded_inputs} input events dropped)")
    if st.unknown_stretches or st.unknown_inputs:
        print(f"  unknown window:      {st.unknown_stretches} stretches, {st.unknown_inputs} input events dropped "
              "(the recorder was stalled while the focus moved; see docs/recorder.md)")
    if options.screenshots:
        print(f"  screenshots:         {summary.screenshots} saved, {summary.screenshots_skipped} skipped "
              "(an excluded window was on screen)")
    if summary.quarantined:
        reasons = "; ".join(f"{r}: {n}" for r, n in summary.quarantine_reasons.items())
        print(f"  quarantined:         {summary.quarantined} rows the log refused ({reasons})")
    print(f"  days:                {', '.join(summary.days) or 'none'}"
          + (f"; sealed {', '.join(summary.days_sealed)}" if summary.days_sealed else ""))
    return 0
