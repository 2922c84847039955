"""``af day`` and ``af context``: one day's document, or a context block for a day or recent hours."""

from __future__ import annotations

import argparse
import math
import sys
from datetime import UTC, datetime
from typing import Any

from af_pipeline.compiler import emit, layouts
from af_pipeline.interfaces import cli
from af_pipeline.interfaces.memory import DEFAULT_MIN_MINUTES, MAX_HOURS, Memory
from capture.errors import UserError
from capture.home import resolve_home

_DAY_HELP = """\
Print one local day (in the data folder's time zone) as the schema v1 document (JSON, YAML,
Markdown) or as the token-budgeted context block.

When the day was published by `af build` (published/DAY/ holds document.json, document.yaml,
document.md, context.txt and manifest.json), its log day is sealed and the options match what
was published, the published file is printed after checking it against the sha256 in the
manifest; a file that no longer matches is refused (exit 2; --live compiles from the log
instead). Otherwise the day is compiled now from the event log; JSON output then carries
generated_at, the only field that differs from one compilation to the next. `af day`,
`af context` and `af mcp` read through the same model (af_pipeline.Memory).

Typed text is never printed unless --include-typed-text is given (it needs the document to be
built with typed text too, which this flag also asks for when compiling live).
"""

_CONTEXT_HELP = """\
Print the compact context block for system prompts: the whole per-app ledger, every visited
domain, the day's start, then as many frames (longest first) as fit the token budget (cl100k
tokens). See docs/context-block.md for the format. --day picks a local day (default: today in
the data folder's zone); --hours N covers the last N hours (at most 744) and --start/--end any
period of at most 31 days; those are compiled live. Frame ids outside a single published day are day-qualified (DAY/f-0003).
"""

def register(sub: Any) -> None:
    p = sub.add_parser("day", help="print one day's document (json, yaml, md) or context block",
                       description=_DAY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("day", metavar="DAY", help="local day: YYYY-MM-DD, today or yesterday")
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
    which.add_argument("--start", metavar="TIME", help="period start, ISO time in the folder's zone "
                       "(e.g. 2026-06-01T09:00, or a date); with --end, at most 31 days")
    c.add_argument("--end", metavar="TIME", help="period end with --start (a date includes that day; default now)")
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


def _options(args: argparse.Namespace) -> None:
    if not (args.min_minutes >= 0 and math.isfinite(args.min_minutes)):  # argparse's float() takes "nan"
        raise UserError(f"--min-minutes must be a number of minutes, 0 or more, not {args.min_minutes}")
    if getattr(args, "budget", 1) < 1:
        raise UserError(f"--budget must be a positive number of tokens, not {args.budget}")
    layouts.table(args.layout)  # a bad name is a usage error before any work


def _memory(args: argparse.Namespace) -> Memory:
    home = resolve_home(args.home)
    # a reader that may write: it leaves today's parsed rows (and documents) in cache/open, where
    # a fresh `af mcp` starts from (af_pipeline/interfaces/open_cache.py)
    return Memory(home, include_typed_text=args.include_typed_text, layout=args.layout, write_cache=True)


def _stamp(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(doc, generated_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _day(args: argparse.Namespace) -> int:
    _options(args)
    memory = _memory(args)
    day = memory.parse_day(args.day)
    defaults = args.min_minutes == DEFAULT_MIN_MINUTES and args.layout == layouts.DEFAULT_LAYOUT
    if not args.live and defaults and (args.format != "context" or args.budget == emit.DEFAULT_BUDGET):
        text = memory.published_text(day, args.format)  # verified against its manifest, or refused
        if text is not None:
            _write(text)
            return 0
    with memory.noting_skipped() as skipped:
        doc, source = memory.day_document(day, args.min_minutes, live=args.live)
    if not source.startswith("published/"):
        doc = _stamp(doc)
    _write(memory.render(doc, args.format, budget_tokens=args.budget))
    cli.warn_skipped("day", skipped)
    memory.save_open_caches()  # the open days read here, for a fresh `af mcp`
    return 0


def _context(args: argparse.Namespace) -> int:
    _options(args)
    if args.hours is not None and not 0 < args.hours <= MAX_HOURS:
        raise UserError(f"--hours must be more than 0 and at most {MAX_HOURS:g}, not {args.hours:g}")
    if args.end is not None and args.start is None:
        raise UserError("--end needs --start")
    memory = _memory(args)
    period = memory.period(day=args.day, hours=args.hours, start=args.start, end=args.end)
    with memory.noting_skipped() as skipped:
        text, _source = memory.context(period, args.budget, args.min_minutes)
    _write(text)
    cli.warn_skipped("context", skipped)
    memory.save_open_caches()  # the open days read here, for a fresh `af mcp`
    return 0
