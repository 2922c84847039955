"""``af day`` and ``af context``: one day's document, or a context block for a day or recent hours."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from af_pipeline import cli, emit, layouts
from af_pipeline.compile import CompileOptions, compile_day
from capture.errors import UserError
from capture.home import Home, resolve_home
from capture.model import DayCapture
from capture.timeutil import US, local_day, parse_day, to_datetime

_DAY_HELP = """\
Print one local day (in the data folder's time zone) as the schema v1 document (JSON, YAML,
Markdown) or as the token-budgeted context block.

When the day was published by `af build` (published/DAY/ holds document.json, document.yaml,
document.md, context.txt and manifest.json) and the options match what was published, the
published files are printed. Otherwise the day is compiled now from the event log; JSON output
then carries generated_at, the only field that differs from one compilation to the next.

Typed text is never printed unless --include-typed-text is given (it needs the document to be
built with typed text too, which this flag also asks for when compiling live).
"""

_CONTEXT_HELP = """\
Print the compact context block for system prompts: the whole per-app ledger, every visited
domain, the day's start, then as many frames (longest first) as fit the token budget (cl100k
tokens). See docs/context-block.md for the format. --day picks a local day (default: today in
the data folder's zone); --hours N covers the last N hours and is always compiled live.
"""

FORMAT_FILES = {"json": "document.json", "yaml": "document.yaml", "md": "document.md", "context": "context.txt"}


def register(sub: Any) -> None:
    p = sub.add_parser("day", help="print one day's document (json, yaml, md) or context block",
                       description=_DAY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("day", metavar="DAY", help="local day, YYYY-MM-DD")
    p.add_argument("-f", "--format", choices=emit.FORMATS, default="json",
                   help="json (canonical, one line), yaml, md (Markdown) or context (default: json)")
    _build_options(p)
    p.add_argument("--budget", type=int, default=emit.DEFAULT_BUDGET, metavar="T",
                   help=f"token budget of the context block (default {emit.DEFAULT_BUDGET})")
    p.add_argument("--live", action="store_true", help="compile from the event log even if the day is published")
    cli.common(p, json_flag=False)
    p.set_defaults(func=_day)

    c = sub.add_parser("context", help="print the context block for a day or the last N hours",
                       description=_CONTEXT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = c.add_mutually_exclusive_group()
    which.add_argument("--day", metavar="DAY", help="local day, YYYY-MM-DD (default: today)")
    which.add_argument("--hours", type=float, metavar="N", help="the last N hours, across days")
    c.add_argument("--budget", type=int, default=emit.DEFAULT_BUDGET, metavar="T",
                   help=f"token budget (default {emit.DEFAULT_BUDGET})")
    _build_options(c)
    cli.common(c, json_flag=False)
    c.set_defaults(func=_context)


def _build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-minutes", type=float, default=0.0, metavar="M",
                   help="omit frames shorter than M minutes (the omission is reported; default 0)")
    p.add_argument("--include-typed-text", action="store_true",
                   help="include typed text (sensitive): opts in at build and at print time")
    p.add_argument("--layout", default=layouts.DEFAULT_LAYOUT,
                   help="keyboard layout map for key text: a shipped name "
                   f"({', '.join(layouts.available())}) or a .json file (default identity)")


def _options(args: argparse.Namespace) -> CompileOptions:
    if args.min_minutes < 0:
        raise UserError(f"--min-minutes must be 0 or more, not {args.min_minutes}")
    if getattr(args, "budget", 1) < 1:
        raise UserError(f"--budget must be a positive number of tokens, not {args.budget}")
    layouts.table(args.layout)  # a bad name is a usage error before any work
    return CompileOptions(min_minutes=args.min_minutes, include_typed_text=args.include_typed_text,
                          layout=args.layout)


def _home(args: argparse.Namespace) -> Home:
    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder (import a capture first, "
                        "or pass --home)")
    return home


def _check_day(day: str) -> str:
    try:
        parse_day(day)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return day


def _published(home: Home, day: str, options: CompileOptions) -> dict[str, Any] | None:
    """The published document of day when it exists and was built with these options."""
    folder = home.published_dir / day
    if not (folder / "manifest.json").is_file() or not (folder / "document.json").is_file():
        return None
    try:
        doc = json.loads((folder / "document.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{folder / 'document.json'} is not readable JSON ({exc}); rebuild with `af build`") from None
    built = doc.get("provenance", {}).get("options", {}) if isinstance(doc, dict) else {}
    wanted = {"min_minutes": round(float(options.min_minutes), 2),
              "include_typed_text": options.include_typed_text, "layout": options.layout}
    if built != wanted:
        return None
    return doc  # type: ignore[no-any-return]


def _live(home: Home, day: str, options: CompileOptions) -> dict[str, Any]:
    from capture.log import EventLog

    capture = EventLog(home).read_day(day, lazy_elements=True)
    _require_rows(capture, f"day {day}")
    return _stamp(compile_day(capture, options))


def _require_rows(capture: DayCapture, what: str) -> None:
    if not capture.snapshots and not capture.inputs:
        raise UserError(f"{what} has no capture in the log (see `af log status` for the days it holds)")


def _stamp(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(doc, generated_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _day(args: argparse.Namespace) -> int:
    day = _check_day(args.day)
    options = _options(args)
    home = _home(args)
    doc = None if args.live else _published(home, day, options)
    if doc is not None:
        folder = home.published_dir / day
        path: Path = folder / FORMAT_FILES[args.format]
        same_budget = args.format != "context" or args.budget == emit.DEFAULT_BUDGET
        if path.is_file() and same_budget and not args.include_typed_text:
            _write(path.read_text(encoding="utf-8"))
            return 0
    else:
        doc = _live(home, day, options)
    _write(emit.render(doc, args.format, include_typed_text=args.include_typed_text,
                       budget_tokens=args.budget))
    return 0


def _context(args: argparse.Namespace) -> int:
    options = _options(args)
    home = _home(args)
    tz = home.settings().tz
    if args.hours is not None:
        if not 0 < args.hours <= 24 * 31:
            raise UserError(f"--hours must be more than 0 and at most 744, not {args.hours}")
        from capture.log import EventLog

        end = int(time.time() * US)
        start = end - int(args.hours * 3600 * US)
        capture = EventLog(home).read_range(start, end)
        _require_rows(capture, f"the last {args.hours:g} hours")
        doc = compile_day(capture, options)
        # the document describes the hours asked for, not the whole day they start in
        doc["window"] = {"start": to_datetime(start, tz).isoformat(timespec="seconds"),
                         "end": to_datetime(end, tz).isoformat(timespec="seconds")}
    else:
        day = _check_day(args.day) if args.day else local_day(int(time.time() * US), tz)
        doc = _published(home, day, options) or _live(home, day, options)
    _write(emit.context_block(doc, args.budget, include_typed_text=args.include_typed_text))
    return 0
