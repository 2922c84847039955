"""``af import screenpipe|activitywatch|rpm PATH``: land a user's own capture source in the log."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from af_pipeline.interfaces import cli
from capture import rewrites
from capture.errors import UserError
from capture.home import resolve_home
from capture.importers import child
from capture.importers.common import parse_screen_sizes
from capture.log import EventLog
from capture.model import ROW_KINDS
from capture.sync import adopt_logged_refs, drop_known_streams, screenpipe_source_ids

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
        "Import a screenpipe database, either schema era. It is opened read-only and never changed; "
        "reading works while screenpipe is running (recent rows still in db.sqlite-wal are included). "
        "Rows land one local day at a time, so memory holds one day of element rows.",
    ),
    "activitywatch": (
        "an ActivityWatch export JSON, or its sqlite.db",
        "Import ActivityWatch: an export (Web UI > Settings > Export, or GET /api/0/export) or the "
        "aw-server-rust database (e.g. ~/.local/share/activitywatch/aw-server-rust/sqlite.db). Window "
        "events become snapshots carrying their measured span, web tab events give URLs, afk events presence.",
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
        if kind == "rpm":
            k.add_argument("--source-tz", metavar="ZONE",
                           help="IANA time zone of the log's time stamps that carry no zone (the Action "
                           "Logger's 2020-04-09 17:22:00:365); default: the data folder's zone")
            k.add_argument("--date-order", choices=("dmy", "mdy"),
                           help="how to read dates such as 03/04/2020 (day/month or month/day) when no "
                           "date in the file decides it")
        if kind == "screenpipe":
            k.add_argument("--screen", metavar="STREAM=WxH", action="append", default=[],
                           help="real screen size of a monitor in pixels, e.g. monitor_1=1512x982 "
                           "(repeatable; overrides the size derived from click element bounds)")
            k.add_argument("--reader-process", action="store_true",
                           help="read the database in a second process while this one lands each day: "
                           "less time on two cores (6-31 %% in docs/benchmarks.md), about 140 MB more memory")
        k.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        k.set_defaults(func=run)
    p.set_defaults(func=_need_kind)


def _need_kind(args: argparse.Namespace) -> int:
    raise UserError("say what to import: af import screenpipe|activitywatch|rpm PATH (see af import --help)")


def _progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    new_home = not home.exists()
    try:
        # A new data folder is created only once the source has been read: a missing or
        # unreadable source leaves nothing behind.
        settings = home.init(tz=args.tz, create=False)
    except (ValueError, OSError) as exc:
        raise UserError(str(exc)) from None
    progress = None if args.quiet else _progress
    path = Path(args.path)
    opts: dict[str, Any] = {"tz": settings.tz, "source_id": args.source_id, "progress": progress}
    batches: Iterable[Any]
    mark: dict[str, Any] | None = None  # the source's watermark, recorded once it has landed whole
    grown = False
    rewritten = False  # a screenpipe database the log holds rows of, read whole again
    if args.source_kind == "screenpipe":
        # deferred: only the importer of the source given
        from capture.importers import screenpipe

        screens = parse_screen_sizes(args.screen)
        mark = screenpipe.source_mark(path, {"tz": settings.tz, "screens": sorted(screens.items()),
                                             "source_id": args.source_id})
        sid = args.source_id or mark["identity"]
        if not args.source_id and sid and home.log_dir.is_dir():
            # The database may be one the log holds under an earlier id: its oldest rows deleted
            # (retention), or a copy under another name. Its rows keep their refs.
            firsts = screenpipe.first_frames(path, rewrites.RETENTION_PROBE_ROWS)
            found = rewrites.retained_source(EventLog(home), firsts, [s for s in screenpipe_source_ids(home)
                                                                      if s != sid], settings.tz)
            if found and not EventLog(home).refs_present([f"{sid}:frames:{fid}" for fid, _ in firsts]):
                sid, rewritten = found, True
                opts["source_id"] = found
                if progress:
                    progress(f"{path} is the source imported before as {found} (its oldest rows deleted, "
                             "or a copy under another name): its rows keep their refs")
        old = EventLog(home).source_watermark(sid) if sid and home.log_dir.is_dir() else None
        if old is not None and {k: v for k, v in old.items() if k != "held"} == mark:
            return _unchanged(args, home, path, sid, old.get("held"))
        since = screenpipe.grown_since(path, old, mark) if old is not None else None
        grown = since is not None
        # read whole a database the log holds rows of: ids below the old end may name new events
        rewritten = rewritten or (old is not None and not grown)
        if grown and progress:
            progress(f"{path} grew since its last import: reading from row ids {since}")
        # One local day at a time: memory holds one day of element rows, not the whole database.
        # --reader-process: a reader process reads while this one lands each day
        # (capture/importers/child.py): less time on two cores, more memory.
        if args.reader_process:
            batches = child.in_child("capture.importers.screenpipe:iter_screenpipe",
                                     {"path": path, "screens": screens, "since": since,
                                      **{k: v for k, v in opts.items() if k != "progress"}}, progress)
        else:
            batches = screenpipe.iter_screenpipe(path, screens=screens, since=since, **opts)
    elif args.source_kind == "activitywatch":
        # deferred: only the importer of the source given
        from capture.importers.activitywatch import read_activitywatch

        batches = [read_activitywatch(path, **opts)]
    else:
        # deferred: only the importer of the source given
        from capture.importers.rpm import read_rpm

        batches = [read_rpm(path, **opts, source_tz=args.source_tz, date_order=args.date_order,
                            zone_origin="the data folder's zone" if not new_home else
                            f"the new data folder's zone, from {'--tz' if args.tz else 'the machine'}")]
    log: EventLog | None = None
    total = ImportTotals()
    with contextlib.ExitStack() as held:
        for batch in batches:
            if log is None:  # the data folder is made only once the source yields something
                try:
                    home.init(tz=settings.tz)
                except OSError as exc:
                    raise UserError(f"cannot create the data folder {home.root}: {exc.strerror or exc}") from None
                log = EventLog(home)
                # One writer lock for the whole source: a long import landed day by day is not
                # broken off by another writer (the recorder, a sync) taking the log between batches.
                for note in held.enter_context(log.writing()):
                    if progress:
                        progress(f"recovered: {note}")
            if args.source_kind == "screenpipe" and rewritten:
                rewrites.rekey_reused_ids(log, batch, settings.tz)
            if args.source_kind == "activitywatch":
                # Events the log holds under another host set's refs (the server followed live,
                # then its export holding a phone's bucket too) take the logged refs: once.
                streams_before = len(batch.streams)
                adopt_logged_refs(log, batch, settings.tz)
                total.read["streams"] += streams_before - len(batch.streams)
                total.skipped += streams_before - len(batch.streams)
            # An export taken later than an earlier import holds the events that grew since in
            # place: their new part lands as a continuation of the logged event, never twice.
            _continued, covered = log.continue_grown_spans(batch)
            if grown:
                drop_known_streams(log, batch)  # as a sync pass: a day's stream row is written once
            else:
                held_streams = _known_streams(log, batch, screens_given=getattr(args, "screen", None) or [])
                total.read["streams"] += held_streams
                total.skipped += held_streams
            total.add(batch, log.append(batch, progress=progress))
            total.skipped += sum(covered.values())
            for kind, n in covered.items():
                total.read[kind] += n  # they were in the source: read, and already in the log
        if log is not None and mark is not None and (sum(total.landed.values()) > 0 or total.skipped > 0):
            # Every batch landed: the next import of an unchanged source is answered from this.
            # "held": the source's rows the log holds (what a re-import would find already there).
            before = (old or {}).get("held") if grown else None
            holds = {k: (int(before.get(k, 0)) if isinstance(before, dict) else 0)
                    + (total.landed[k] if grown else total.read[k]) for k in ROW_KINDS}
            log.record_watermark(total.source_id, {**mark, "held": holds})
    if progress:
        progress(f"read {sum(total.read.values()):,} rows ({total.unusable:,} unusable) into {home.log_dir}")
    if total.days_touched and (home.dagster_home / "dagster.yaml").exists():
        # Dagster (~1-2 s, ~50 MB): imported only for a folder that has an instance to tell
        from assets.instance import announce_days

        announce_days(home, total.days_touched)  # the Dagster UI shows the new days without a reload
    notes = dict(sorted(total.notes.items()))
    if args.json:
        cli.emit_json({
            "source": args.source_kind,
            "path": str(path),
            "source_id": total.source_id,
            "home": str(home.root),
            "read": total.read,
            "landed": total.landed,
            "skipped": total.skipped,
            "forgotten": total.forgotten,
            "quarantined": total.quarantined,
            "quarantine_reasons": dict(sorted(total.quarantine_reasons.items())),
            "importer_notes": notes,
            "days_touched": total.days_touched,
            "days_sealed": total.days_sealed,
            "days_amended": total.days_amended,
            "hints": total.hints,
            "new_home_tz": settings.tz if new_home and log is not None else None,
        })
    else:
        _print_table(args.source_kind, path, total.source_id, home.root, total.read, total, notes)
        if new_home and log is not None:
            print(f"\n  new data folder {home.root} uses time zone {settings.tz} "
                  f"(from {'--tz' if args.tz else 'the machine'}; it cannot change later)")
        for hint in total.hints:
            print(f"\n  {hint}")
    _nothing_landed(path, total, notes)
    _mostly_quarantined(path, total)
    return 0


def _unchanged(args: argparse.Namespace, home: Any, path: Path, source_id: str, held: Any) -> int:
    """The source is as its last complete import left it: nothing is read, nothing lands.

    Its rows are reported as what a re-import that read them would find: all already in the log
    (``read`` and ``skipped`` from the watermark), with ``rows_read`` 0."""
    log = EventLog(home)
    with log.writing():
        sealed = log.seal_due()  # what a re-import that landed nothing would still have done
    rows = {k: int(held.get(k, 0)) if isinstance(held, dict) else 0 for k in ROW_KINDS}
    sentence = (f"{path} has not changed since it was last imported into {home.root} "
                f"(source {source_id}): its {sum(rows.values()):,} rows are already in the log; nothing was read")
    if args.json:
        cli.emit_json({
            "source": args.source_kind, "path": str(path), "source_id": source_id, "home": str(home.root),
            "unchanged": True, "message": sentence, "rows_read": 0, "read": rows,
            "landed": dict.fromkeys(ROW_KINDS, 0), "skipped": sum(rows.values()),
            "quarantined": 0, "quarantine_reasons": {}, "importer_notes": {}, "days_touched": [],
            "days_sealed": sealed, "days_amended": [],
        })
    else:
        print(sentence)
        if sealed:
            print(f"  sealed now (their grace period had passed): {', '.join(sealed)}")
    return 0


def _nothing_landed(path: Path, total: ImportTotals, notes: dict[str, int]) -> None:
    """A source of which nothing usable landed is an error (exit 2) with the reason.

    Re-importing a source whose rows are all already in the log is a success: they landed before.
    """
    if sum(total.landed.values()) or total.skipped:
        return
    why = [f"{n:,} quarantined: {reason}" for reason, n in
           sorted(total.quarantine_reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:3]]
    why += [f"{n:,} {what}" for what, n in sorted(notes.items(), key=lambda kv: (-kv[1], kv[0]))[:3]]
    reason = "; ".join(why) if why else "the source holds no rows"
    raise UserError(f"{path}: nothing usable landed ({reason})" + "".join(f" {h}" for h in total.hints))


def _mostly_quarantined(path: Path, total: ImportTotals) -> None:
    """A source of which more than half the rows read were quarantined is an error (exit 2),
    though what could be used has landed: one sentence with the count, the main reason and an
    example row. Rows already in the log (or duplicates skipped) are read and usable, not
    quarantined; the derived stream rows are not rows of the source."""
    if total.source_rows is not None:  # rows of the source (CSV rows, events) against those unusable
        rows, bad = total.source_rows, total.unusable
    else:  # capture rows (a screenpipe frame's rows, elements, ...) against every quarantined one
        rows, bad = sum(n for k, n in total.read.items() if k != "streams") + total.unusable, total.quarantined
    if not bad or 2 * bad <= rows or not total.quarantine_reasons:
        return
    reason, _n = min(total.quarantine_reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    example = total.examples.get(reason)
    raise UserError(
        f"{path}: {bad:,} of the {rows:,} rows read were quarantined, mostly for "
        f"\"{reason}\"" + (f" (e.g. {example})" if example else "")
        + "; the rest landed. See log/quarantine.jsonl in the data folder for every row"
    )


def _known_streams(log: EventLog, batch: Any, screens_given: list[str]) -> int:
    """Drop the batch's stream rows whose ref the log holds already; returns how many.

    A stream row says when a stream was first seen on a local day. A later import of the same
    source that amends the day (an export with earlier events, a second file) sees it at another
    time, which is not a conflict worth a quarantine entry; it is the same stream row, already in
    the log. Rows of a monitor whose size the user gives now (``--screen``) are kept, so a size
    that differs from the logged one is still reported."""
    if not batch.streams:
        return 0
    sized = {spec.partition("=")[0].strip() for spec in screens_given}
    known = log.refs_present([r.ref for r in batch.streams if r.stream not in sized])
    before = len(batch.streams)
    batch.streams = [r for r in batch.streams if r.ref not in known]
    return before - len(batch.streams)


class ImportTotals:
    """The sum of the append reports of one import (a screenpipe import lands day by day)."""

    def __init__(self) -> None:
        self.source_id = ""
        self.read = dict.fromkeys(ROW_KINDS, 0)
        self.landed = dict.fromkeys(ROW_KINDS, 0)
        self.skipped = 0
        self.forgotten = 0  # rows `af forget` removed earlier: never landed again
        self.quarantined = 0
        self.unusable = 0
        self.quarantine_reasons: dict[str, int] = {}
        self.notes: dict[str, int] = {}
        self.days_touched: list[str] = []
        self.days_sealed: list[str] = []
        self.days_amended: list[str] = []
        self.hints: list[str] = []
        self.examples: dict[str, str] = {}  # quarantine reason -> one of its rows, file:row
        self.source_rows: int | None = 0  # None once a batch does not count its source's rows

    def add(self, batch: Any, report: Any) -> None:
        self.source_id = batch.source_id
        for k in ROW_KINDS:
            self.read[k] += len(batch.rows(k))
            self.landed[k] += report.landed.get(k, 0)
        self.unusable += len(batch.quarantined)
        self.skipped += report.skipped
        self.forgotten += getattr(report, "forgotten", 0)
        self.quarantined += report.quarantined
        for reason, n in report.quarantine_reasons.items():
            self.quarantine_reasons[reason] = self.quarantine_reasons.get(reason, 0) + n
        for what, n in getattr(batch, "notes", {}).items():
            self.notes[what] = self.notes.get(what, 0) + n
        for hint in getattr(batch, "hints", ()):
            if hint not in self.hints:
                self.hints.append(hint)
        counted = getattr(batch, "source_rows", None)
        self.source_rows = None if counted is None or self.source_rows is None else self.source_rows + counted
        for q in batch.quarantined:
            self.examples.setdefault(q.reason, f"{Path(q.source).name}:{q.row}")
        self.days_touched = sorted(set(self.days_touched) | set(report.days_touched))
        self.days_sealed = sorted(set(self.days_sealed) | set(report.days_sealed))
        self.days_amended = sorted(set(self.days_amended) | set(report.days_amended))


_UNIT = re.compile(r"^(.*), (seconds|minutes|hours|characters|bytes)$")


def _unit_of(note: str) -> tuple[str, str]:
    """A note that counts a quantity ends in its unit (``"rows: largest backwards step,
    seconds"``): the unit is printed beside the number, in its own column, not after the text."""
    m = _UNIT.match(note)
    return (m.group(1), m.group(2)) if m else (note, "")


def _print_table(kind: str, path: Path, source_id: str, root: Path, read: dict[str, int], report: Any,
                 notes: dict[str, int]) -> None:
    print(f"Imported {kind} {path}")
    print(f"  source {source_id} -> data folder {root}\n")
    print(f"  {'rows':<12}{'read':>12}{'landed':>12}")
    for k in ROW_KINDS:
        print(f"  {k:<12}{read[k]:>12,}{report.landed.get(k, 0):>12,}")
    print(f"  {'total':<12}{sum(read.values()):>12,}{sum(report.landed.values()):>12,}\n")
    print(f"  already in the log (skipped): {report.skipped:,}")
    if getattr(report, "forgotten", 0):
        print(f"  {report.forgotten:,} rows skipped: forgotten (removed by `af forget`, never landed again)")
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
        rows = [_unit_of(what) for what in notes]
        width = max((len(unit) for _, unit in rows), default=0)
        for (what, unit), n in zip(rows, notes.values(), strict=True):
            print(f"  {n:>10,} {unit:<{width}} {what}" if width else f"  {n:>10,}  {what}")
    days = report.days_touched
    if days:
        span = days[0] if len(days) == 1 else f"{days[0]} .. {days[-1]}"
        print(f"\n  days touched: {len(days)} ({span}); sealed now: {len(report.days_sealed)}")
    if report.days_amended:
        print(f"  sealed days amended (a new sealed segment each; rebuilt by the next build): "
              f"{', '.join(report.days_amended)}")
