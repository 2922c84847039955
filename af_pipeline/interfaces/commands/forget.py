"""``af forget``: remove selected capture from the data folder, with a record in the log's chain."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from datetime import datetime
from typing import Any

from af_pipeline.interfaces import cli
from af_pipeline.interfaces.open_cache import cache_path
from af_pipeline.warehouse.purge import purge_days
from af_pipeline.warehouse.retention import older_than, retention_days
from capture.errors import UserError
from capture.home import Home, resolve_home
from capture.log import EventLog, ForgetPlan, Selection
from capture.model import ROW_KINDS
from capture.timeutil import zone

_DESCRIPTION = """\
Remove capture you do not want kept: a time range, an app, a site, windows whose title matches a
pattern, typed text only, whole days, or days older than N days. Filters given together must all
hold (for example --app with --from/--to forgets that app within the range only).

What is guaranteed, once it reports done:
  - the selected rows are gone from every file of the event log: the sealed days' Parquet files
    that held them are rewritten without them, open days' files likewise, and quarantined rows
    naming them are removed; a window span partly inside a forgotten range is cut at its edges;
    --typed-text blanks the typed text of input events and keeps the events;
  - the log's hash chain gets a redaction record: which kind of selection (never its value: a
    keyed hash of it), rows removed per day and kind, each rewritten file's sha256 before and
    after, and keyed hashes of the removed rows' refs; `af log verify` and `af certify` accept
    exactly these rewrites and still fail on any other change;
  - importing or syncing the same source again never lands the forgotten rows (the import says
    how many it skipped as forgotten);
  - the affected days leave the warehouse (every table; the DuckDB file is rewritten into a new
    file, since DuckDB keeps freed blocks), their document files, their published folders and
    their cached open-day rows (<home>/cache/open); `af build` builds them again from the log;
    routines mined from every day (routine tables, published/routines/) are removed too.

What it cannot do: remove copies made elsewhere (exports, backups, files you shared, the
original source files of screenpipe or ActivityWatch: forget there too, or the next import of a
new source with the same rows brings them back under other refs). See docs/privacy.md.

Times are local, in the data folder's zone: "2026-06-01 14:00", "2026-06-01T14:00:30" or a day.
Without --yes, a terminal asks before anything changes; --dry-run only shows what would go.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("forget", help="remove selected capture for good, keeping the log verifiable",
                       description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="start", metavar="TIME", help="start of a range (local time, inclusive)")
    p.add_argument("--to", dest="end", metavar="TIME", help="end of a range (local time, exclusive)")
    p.add_argument("--app", metavar="NAME", help="an app, by its name as captured (any case)")
    p.add_argument("--site", metavar="HOST", help="a site: rows whose URL is on this host or a subdomain of it")
    p.add_argument("--title", metavar="REGEX", help="windows whose title matches this regular expression")
    p.add_argument("--typed-text", action="store_true", help="blank typed text only (the input events stay)")
    p.add_argument("--day", action="append", default=[], metavar="YYYY-MM-DD", help="a whole local day (repeatable)")
    p.add_argument("--older-than", metavar="DAYS", nargs="?", const="settings",
                   help="every day that ended more than DAYS days ago; without DAYS, af.json's retention_days")
    p.add_argument("--dry-run", action="store_true", help="show what would go; change nothing")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    cli.common(p)
    p.set_defaults(func=_forget)


_LOCAL = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?$")


def local_time(text: str, tz: str) -> int:
    """Microseconds of a local time (or a day's start) in ``tz``; an explicit offset is kept."""
    value = text.strip()
    try:
        if _LOCAL.match(value):
            when = datetime.fromisoformat(value.replace(" ", "T")).replace(tzinfo=zone(tz))
        else:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if when.tzinfo is None:
                raise ValueError
    except ValueError:
        raise UserError(f"{text!r} is not a time: give a local time such as \"2026-06-01 14:00\" or a day") from None
    return int(when.timestamp()) * 1_000_000 + when.microsecond


def selection_of(args: argparse.Namespace, log: EventLog, now_us: int) -> Selection | None:
    """The selection the options ask for (None: retention found no day to forget)."""
    days = tuple(args.day)
    retention = False
    if args.older_than is not None:
        if args.older_than == "settings":
            n = retention_days(log.home.root)
            if n is None:
                raise UserError("--older-than without DAYS uses af.json's retention_days, which is not set")
        else:
            try:
                n = int(args.older_than)
            except ValueError:
                raise UserError(f"--older-than takes a whole number of days, not {args.older_than!r}") from None
            if n < 1:
                raise UserError("--older-than takes 1 day or more")
        found = older_than(log, n, now_us)
        if not found:
            return None
        if days:
            found = [d for d in found if d in days]
        days, retention = tuple(found), True
        if not days:
            return None
    sel = Selection(
        start_us=local_time(args.start, log.tz) if args.start else None,
        end_us=local_time(args.end, log.tz) if args.end else None,
        app=args.app, site=args.site, title=args.title, typed_text=args.typed_text,
        days=days, retention=retention)
    sel.check()
    return sel


def _summary(plan: ForgetPlan) -> list[str]:
    totals = plan.totals()
    lines = [f"selection: {plan.selection}"]
    if plan.empty():
        return [*lines, "nothing in the log matches: nothing to forget"]
    kinds = ", ".join(f"{n:,} {k}" for k, n in totals.items() if n) or "no rows"
    lines.append(f"rows removed: {kinds}")
    cut = {k: sum(c.get(k, 0) for c in plan.cut.values()) for k in ROW_KINDS}
    if any(cut.values()):
        lines.append("spans cut at the range's edges: " + ", ".join(f"{n:,} {k}" for k, n in cut.items() if n))
    if plan.blanked:
        lines.append(f"typed text blanked: {sum(plan.blanked.values()):,} input events (the events stay)")
    lines.append(f"frames affected: {plan.frames:,}")
    lines.append(f"days affected ({len(plan.days)}): {', '.join(plan.days)}")
    for day in plan.days:
        per = ", ".join(f"{n:,} {k}" for k, n in plan.rows.get(day, {}).items())
        lines.append(f"  {day}: {per or 'no row removed'}"
                     + (f"; {plan.blanked[day]:,} typed texts blanked" if day in plan.blanked else ""))
    lines.append(f"files rewritten: {len(plan.segments)} sealed segment(s), {len(plan.open_days)} open day(s)"
                 + (f"; {plan.quarantine:,} quarantine line(s) removed" if plan.quarantine else ""))
    return lines


def _forget(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder yet; there is nothing to forget")
    log = EventLog(home)
    sel = selection_of(args, log, time.time_ns() // 1000)
    if sel is None:
        if args.json:
            cli.emit_json({"selection": "retention", "days": [], "forgotten": False})
        else:
            print("no day is older than that: nothing to forget")
        return 0
    if args.yes and not args.dry_run:
        return _done(args, home, log, sel)
    plan = log.plan(sel)
    if args.dry_run or plan.empty():
        if args.json:
            cli.emit_json({**plan.to_json(), "dry_run": args.dry_run, "forgotten": False})
        else:
            print("\n".join(_summary(plan)))
            if args.dry_run and not plan.empty():
                print("dry run: nothing changed")
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            raise UserError("add --yes to forget without being asked (or --dry-run to see what would go)")
        print("\n".join(_summary(plan)))
        answer = input("forget this for good? type yes: ")
        if answer.strip().lower() != "yes":
            print("nothing changed")
            return 0
    return _done(args, home, log, sel)


def _done(args: argparse.Namespace, home: Home, log: EventLog, sel: Selection) -> int:
    """Forget ``sel`` (planned again under the log's writer lock) and clear its copies."""
    say = (lambda _m: None) if args.json else (lambda m: print(m, file=sys.stderr))
    done = log.forget(sel, progress=say)
    for day in done.days:  # parsed open-day rows kept for a fresh `af mcp` (af log cache)
        cache_path(home.root, day).unlink(missing_ok=True)
    started = time.monotonic()
    purged = purge_days(home, done.days, say)
    seconds = time.monotonic() - started
    team_routines = _refresh_team_routines(home, say) if done.days else None
    if args.json:
        cli.emit_json({**done.to_json(), "dry_run": False, "forgotten": True, "team_routines_rewritten": team_routines,
                       "published_removed": purged.published, "warehouse_rows_removed": purged.rows,
                       "warehouse_rewritten": purged.rewritten, "documents_removed": purged.documents,
                       "routine_tables_dropped": purged.dropped, "routine_plans_removed": purged.plans,
                       "warehouse_seconds": round(seconds, 3)})
        return 0
    print("\n".join(_summary(done)))
    if done.empty():
        return 0
    print(f"forgotten from the log in {done.seconds:.2f} s: redaction record at chain entry {done.seq} "
          "(`af log verify` accepts it)")
    if purged.published or purged.rows or purged.rewritten:
        print(f"removed from the warehouse ({sum(purged.rows.values()):,} rows, the file rewritten) and "
              f"published files ({len(purged.published)} day folder(s)) in {seconds:.2f} s; "
              "run `af build` to build the affected days again")
    if purged.dropped or purged.plans:
        print("routines mined from every day (routine tables, published/routines/) were removed with them; "
              "run the `routines` job (af ui) to mine them again")
    if team_routines:
        print(f"the team's routines were mined again without it: {team_routines}")
    return 0


def _refresh_team_routines(home: Home, say: Any) -> str | None:
    """When this folder is a user of the team named by AF_TEAM, mine the team's routine table again
    now (it counts every user's actions, the forgotten ones included, until rewritten); the path
    written, or None. The folder itself does not know its team (a person's folder joins a team
    unchanged), so without AF_TEAM the next team run rewrites the table."""
    root = os.environ.get("AF_TEAM")
    if not root:
        return None
    from capture.team import Team, TeamError

    try:
        team = Team(root)
        members = team.members()
    except (TeamError, OSError) as exc:
        say(f"af forget: AF_TEAM={root}: {exc}; the team's routines were not mined again")
        return None
    if not any(m.path.resolve() == home.root.resolve() for m in members):
        return None
    from assets.team import write_team_routines  # Dagster (~2 s): only for a team's user

    write_team_routines(team, warn=say)
    return str(team.routines_path)
