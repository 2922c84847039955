"""``af stats``: entity coverage report, the share of distinct URLs typed beyond a generic page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.home import resolve_home
from capture.log import EventLog
from capture.timeutil import parse_day

_DESCRIPTION = """\
Entity coverage report (paper section 6.4). Every URL seen in the capture log is typed by the
layered parsers (a bespoke parser for the site, then a search-parameter detector, then
subdomain/path heuristics, then a generic `page` with its domain). This prints how many distinct
URLs were typed as something more specific than a generic page, the kinds seen with their counts,
how many URLs each layer typed, and the domains with the most untyped URLs (where a new site
parser would help most).

By default it reads every day in the log; --day limits it to one local day. --urls reads a plain
list instead (one URL per line, `-` for standard input), for example a browser history export.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="entity coverage report: share of distinct URLs typed non-generic, kinds seen",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cli.common(p)
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--day", metavar="DAY", help="only this local day (YYYY-MM-DD)")
    scope.add_argument("--all", action="store_true", help="every day in the log (the default)")
    scope.add_argument("--urls", metavar="FILE", help="type the URLs listed in FILE (one per line; - for stdin) "
                       "instead of reading the log")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="how many untyped domains to list (default 15)")
    p.set_defaults(func=run)


def _from_file(name: str) -> tuple[list[str], dict[str, Any]]:
    if name == "-":
        text = sys.stdin.read()
    else:
        path = Path(name)
        try:
            # URLs are typed whatever bytes they hold: undecodable bytes become U+FFFD, not an error.
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise UserError(f"{path}: no such file (--urls expects a text file with one URL per line)") from None
        except IsADirectoryError:
            raise UserError(f"{path} is a folder; --urls expects a text file with one URL per line") from None
        except OSError as exc:
            raise UserError(f"{path}: cannot be read ({exc.strerror})") from None
    urls = [line.strip() for line in text.splitlines()]
    return urls, {"source": "stdin" if name == "-" else str(name), "lines": len(urls)}


def _from_log(args: argparse.Namespace) -> tuple[list[str | None], dict[str, Any]]:
    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder yet (no {home.settings_path.name}); "
                        "import a capture first or run `af demo`")
    log = EventLog(home)
    days = [d.day for d in log.days()]
    if args.day:
        try:
            parse_day(args.day)
        except ValueError as exc:
            raise UserError(f"--day: {exc}") from None
        if args.day not in days:
            known = f"it holds {days[0]} .. {days[-1]}" if days else "it is empty"
            raise UserError(f"day {args.day} is not in the log at {home.root} ({known})")
        days = [args.day]
    urls: list[str | None] = []
    snapshots = 0
    for i, day in enumerate(days, 1):
        capture = log.read_day(day, lazy_elements=True)
        snapshots += len(capture.snapshots)
        urls.extend(s.url for s in capture.snapshots)
        if len(days) > 1:
            print(f"  read {day} ({i}/{len(days)})", file=sys.stderr, flush=True)
    scope = {"source": str(home.root), "days": len(days), "first_day": days[0] if days else None,
             "last_day": days[-1] if days else None, "snapshots": snapshots}
    return urls, scope


def _n(value: int) -> str:
    return f"{value:,}"


def run(args: argparse.Namespace) -> int:
    # deferred: loading the public suffix list costs ~0.6 s
    from af_pipeline.compiler.entities import PSL_VERSION, coverage

    if args.top < 0:
        raise UserError(f"--top must be 0 or more, not {args.top}")
    urls: list[str | None]
    if args.urls:
        file_urls, scope = _from_file(args.urls)
        urls = list(file_urls)
    else:
        urls, scope = _from_log(args)
    report = coverage(urls, top_generic=args.top)

    if args.json:
        cli.emit_json({"scope": scope, "public_suffix_list": PSL_VERSION, **report.to_dict()})
        return 0

    if "days" in scope:
        span = (f"{scope['first_day']} .. {scope['last_day']}" if scope["days"] > 1
                else scope["first_day"] or "no days")
        print(f"Entity coverage for {span} ({scope['days']} day{'s' if scope['days'] != 1 else ''}, "
              f"{_n(scope['snapshots'])} snapshots, {_n(len(urls) - report.blank)} with a URL)")
    else:
        print(f"Entity coverage for {scope['source']} ({_n(scope['lines'])} lines)")
    if not report.distinct:
        print("No URLs to type.")
        return 0
    print(f"  distinct URLs      {_n(report.distinct)}")
    print(f"  typed non-generic  {_n(report.typed)} ({report.percent}) over {report.typed_kinds} kinds")
    print("  by layer           " + ", ".join(f"{name} {_n(count)}" for name, count in report.layers))
    print("\nKinds (distinct URLs)")
    width = max(len(kind) for kind, _ in report.kinds)
    for kind, count in report.kinds:
        note = "  (generic fallback)" if kind == "page" else ""
        print(f"  {kind:<{width}}  {count:>7,}{note}")
    if report.generic_domains:
        print("\nUntyped URLs by domain (where a site parser would help most)")
        width = max(len(domain) for domain, _ in report.generic_domains)
        for domain, count in report.generic_domains:
            print(f"  {domain:<{width}}  {count:>7,}")
    return 0
