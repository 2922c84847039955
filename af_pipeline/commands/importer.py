"""``af import screenpipe|activitywatch|rpm PATH``: land a user's own capture source in the log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from af_pipeline import cli
from capture.errors import UserError
from capture.home import resolve_home
from capture.model import ROW_KINDS

_DESCRIPTION = """\
Read a capture source you already have (it is opened read-only and never changed), map it onto
the capture schema and append it to the event log in the data folder (--home). Re-importing the
same source lands nothing twice; importing it again after it grew lands only the new rows.
Rows that cannot be used are quarantined with their reason; the table printed at the end says
how many landed, were already in the log, or were quarantined, and why. See docs/importers.md.
"""

_KINDS = {
    "screenpipe": (
        "a screenpipe SQLite database (usually ~/.screenpipe/db.sqlite)",
        "Import a screenpipe database, either schema era. Reading works while screenpipe is running "
        "(recent rows still in db.sqlite-wal are included).",
    ),
    "activitywatch": (
        "an ActivityWatch export JSON, or its sqlite.db",
        "Import ActivityWatch: an export (Web UI > Settings > Export, or GET /api/0/export) or the "
        "aw-server-rust database (e.g. ~/.local/share/activitywatch/aw-server-rust/sqlite.db). Window "
        "events become snapshots with a 30 s heartbeat, web tab events give URLs, afk events presence.",
    ),
    "rpm": (
        "an RPM UI-log CSV (action-logger format)",
        "Import a robotic-process-mining UI log: a CSV with one user action per row "
        "(timeStamp, userID, targetApp, eventType, url, content, target.* columns).",
    ),
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "import",
        help="land a screenpipe, ActivityWatch or RPM UI-log capture in the event log",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = p.add_subparsers(dest="source_kind", metavar="SOURCE", parser_class=type(p))
    for kind, (what, description) in _KINDS.items():
        k = kinds.add_parser(kind, help=f"import {what}", description=description)
        k.add_argument("path", metavar="PATH", help=what)
        cli.common(k)
        k.add_argument("--tz", metavar="ZONE",
                       help="IANA time zone recorded when the data folder is created (default: the "
                       "machine's zone); an existing folder keeps its zone")
        k.add_argument("--source-id", metavar="ID",
                       help="override the source identity that makes re-imports idempotent "
                       "(default: derived from the source, see docs/importers.md)")
        if kind == "screenpipe":
            k.add_argument("--screen", metavar="STREAM=WxH", action="append", default=[],
                           help="real screen size of a monitor in pixels, e.g. monitor_1=1512x982 "
                           "(repeatable; overrides the size derived from click element bounds)")
        k.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        k.set_defaults(func=run)
    p.set_defaults(func=_need_kind)


def _need_kind(args: argparse.Namespace) -> int:
    raise UserError("say what to import: af import screenpipe|activitywatch|rpm PATH (see af import --help)")


def _progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from capture.importers.common import parse_screen_sizes
    from capture.log import EventLog

    home = resolve_home(args.home)
    try:
        settings = home.init(tz=args.tz)
    except (ValueError, OSError) as exc:
        raise UserError(str(exc)) from None
    progress = None if args.quiet else _progress
    path = Path(args.path)
    opts: dict[str, Any] = {"tz": settings.tz, "source_id": args.source_id, "progress": progress}
    if args.source_kind == "screenpipe":
        from capture.importers.screenpipe import read_screenpipe

        batch = read_screenpipe(path, screens=parse_screen_sizes(args.screen), **opts)
    elif args.source_kind == "activitywatch":
        from capture.importers.activitywatch import read_activitywatch

        batch = read_activitywatch(path, **opts)
    else:
        from capture.importers.rpm import read_rpm

        batch = read_rpm(path, **opts)
    if progress:
        progress(f"read {batch.count():,} rows ({len(batch.quarantined):,} unusable); landing them in {home.log_dir}")
    report = EventLog(home).append(batch, progress=progress)
    notes = dict(sorted(getattr(batch, "notes", {}).items()))
    read = {k: len(batch.rows(k)) for k in ROW_KINDS}
    if args.json:
        cli.emit_json({
            "source": args.source_kind,
            "path": str(path),
            "source_id": batch.source_id,
            "home": str(home.root),
            "read": read,
            "landed": report.landed,
            "skipped": report.skipped,
            "quarantined": report.quarantined,
            "quarantine_reasons": report.quarantine_reasons,
            "importer_notes": notes,
            "days_touched": report.days_touched,
            "days_sealed": report.days_sealed,
        })
        return 0
    _print_table(args.source_kind, path, batch.source_id, home.root, read, report, notes)
    return 0


def _print_table(kind: str, path: Path, source_id: str, root: Path, read: dict[str, int], report: Any,
                 notes: dict[str, int]) -> None:
    print(f"Imported {kind} {path}")
    print(f"  source {source_id} -> data folder {root}\n")
    print(f"  {'rows':<12}{'read':>12}{'landed':>12}")
    for k in ROW_KINDS:
        print(f"  {k:<12}{read[k]:>12,}{report.landed.get(k, 0):>12,}")
    print(f"  {'total':<12}{sum(read.values()):>12,}{sum(report.landed.values()):>12,}\n")
    print(f"  already in the log (skipped): {report.skipped:,}")
    print(f"  quarantined:                  {report.quarantined:,}")
    if report.quarantine_reasons:
        top = sorted(report.quarantine_reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        print("\n  top quarantine reasons:")
        for reason, n in top[:8]:
            print(f"  {n:>10,}  {reason}")
        if len(top) > 8:
            print(f"  {'':>10}  ... and {len(top) - 8} more reasons (see --json)")
    if notes:
        print("\n  importer notes (mapped on purpose, repaired, or not imported):")
        for what, n in notes.items():
            print(f"  {n:>10,}  {what}")
    days = report.days_touched
    if days:
        span = days[0] if len(days) == 1 else f"{days[0]} .. {days[-1]}"
        print(f"\n  days touched: {len(days)} ({span}); sealed now: {len(report.days_sealed)}")
