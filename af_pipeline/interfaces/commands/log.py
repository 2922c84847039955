"""``af log``: inspect, seal and verify the capture event log."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.home import resolve_home
from capture.log import DayStatus, EventLog
from capture.model import ROW_KINDS
from capture.timeutil import day_bounds
from certification import history

_DESCRIPTION = """\
The event log holds every captured row, one segment per local day (in the time zone recorded in
the data folder). A day stays open while capture can still arrive; it is sealed once it has
ended plus the grace period (importing past days seals them), or when you ask with `af log seal`.
Sealed days are Parquet files listed in a hash-chained manifest and never change; later capture
for a sealed day is refused into the quarantine with its reason.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "log",
        help="inspect, seal and verify the capture event log",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = p.add_subparsers(dest="log_action", metavar="ACTION", parser_class=type(p))

    status = actions.add_parser(
        "status",
        help="list the days in the log: sealed or open, rows per kind, and the quarantine total",
        description="List every day in the log with whether it is sealed and how many rows of each "
        "kind it holds, then the number of quarantined rows and the manifest chain head.",
    )
    cli.common(status)
    status.set_defaults(func=_status)

    verify = actions.add_parser(
        "verify",
        help="walk the manifest hash chain and re-hash every sealed file (exit 1 on any problem)",
        description="Recompute the sha256 of every sealed segment file and every link of the manifest "
        "chain. Prints each problem with the manifest entry, day and file it concerns, and exits 1 if "
        "there is any; exits 0 when the log is intact.",
    )
    cli.common(verify)
    verify.set_defaults(func=_verify)

    seal = actions.add_parser(
        "seal",
        help="seal one day now (its capture becomes immutable)",
        description="Seal DAY now instead of waiting for its end plus the grace period. After this, "
        "new capture for DAY is refused into the quarantine. Sealing an already sealed day is a no-op.",
    )
    seal.add_argument("day", metavar="DAY", help="local day, YYYY-MM-DD")
    cli.common(seal)
    seal.set_defaults(func=_seal)

    cache = actions.add_parser(
        "cache",
        help="keep the open days' parsed rows on disk, where a fresh `af mcp` starts from",
        description="Parse what was appended to each open day's segment since the last cache and write "
        "the day's rows to cache/open/<day>.marshal in the data folder (private, like the log). A freshly "
        "started `af mcp` then answers its first question about today without parsing the whole open "
        "segment. `af sync --watch` runs this every few minutes while rows land; a cache that no longer "
        "matches the open segment or the code is never used.",
    )
    cli.common(cache, json_flag=False)
    cache.set_defaults(func=_cache)

    announce = actions.add_parser(
        "announce",
        help="make the log's days partitions of the folder's Dagster instance",
        description="Tell the data folder's Dagster instance (the one `af ui` and `af build` use) which days "
        "the log holds, so the UI lists a new day at once instead of at the sensor's next tick. `af import` "
        "and `af sync` do this after landing rows; `af sync --watch` runs this command in a child process "
        "when a day's first rows land, so its own long-lived process never loads Dagster. A folder without "
        "an instance yet is left as it is.",
    )
    cli.common(announce, json_flag=False)
    announce.set_defaults(func=_announce)

    p.set_defaults(func=lambda _args: _usage(p))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _open(args: argparse.Namespace) -> EventLog:
    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(
            f"{home.root} is not an activity-frames data folder yet; import something first "
            "(`af import ...`) or run `af demo`"
        )
    try:
        return EventLog(home)
    except (ValueError, KeyError) as exc:
        raise UserError(f"cannot read the settings of {home.root}: {exc}") from None


def _cache(args: argparse.Namespace) -> int:
    from af_pipeline.interfaces.memory import Memory  # the read model: only for this action

    log = _open(args)
    memory = Memory(log.home, write_cache=True)
    rows = {d.day: sum(memory.day_capture(d.day).count(k) for k in ROW_KINDS) for d in log.days() if not d.sealed}
    for day in memory.save_open_caches():
        print(f"{day}: {rows[day]:,} open rows cached", file=sys.stderr)
    return 0


def _announce(args: argparse.Namespace) -> int:
    log = _open(args)
    if not (log.home.dagster_home / "dagster.yaml").exists():
        print("this folder has no Dagster instance yet (`af ui` or `af build` makes one): nothing to tell",
              file=sys.stderr)
        return 0
    from assets.instance import announce_days  # Dagster: only in this short-lived process

    announce_days(log.home)
    print(f"the Dagster instance knows the log's {len(log.day_names())} day(s)", file=sys.stderr)
    return 0


def _state(d: DayStatus) -> str:
    if not d.sealed:
        return "open"
    return "sealed" if not d.amendments else f"sealed +{d.amendments} amendment{'s' if d.amendments > 1 else ''}"


def _status(args: argparse.Namespace) -> int:
    log = _open(args)
    days = log.days()
    refused = log.quarantine_rows()
    quarantined = len(refused)
    reasons: dict[str, int] = {}
    for q in refused:
        reason = str(q.get("reason"))
        reasons[reason] = reasons.get(reason, 0) + 1
    head = log.chain_head()
    # inputs an earlier sync release landed before their frame: the build attributes them through
    # their frame id (af_pipeline/compiler/enrich.py); the log keeps them as they are
    unstreamed = {d.day: n for d in days if d.counts.get("inputs") and (n := _without_stream(log, d.day))}
    if args.json:
        cli.emit_json(
            {
                "tz": log.tz,
                "days": [{"day": d.day, "sealed": d.sealed, "amendments": d.amendments, "counts": d.counts,
                          "inputs_without_stream": unstreamed.get(d.day, 0),
                          "skipped_lines": [s.to_json() for s in d.skipped]} for d in days],
                "quarantined": quarantined,
                "quarantine_reasons": dict(sorted(reasons.items())),
                "chain_head": head,
            }
        )
        return 0
    print(f"event log {log.dir} (days in {log.tz})")
    header = ["day", "state"] + list(ROW_KINDS)
    rows = [[d.day, _state(d)] + [str(d.counts[k]) for k in ROW_KINDS] for d in days]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    for r in rows:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    sealed = sum(d.sealed for d in days)
    amended = sum(d.amendments for d in days)
    print(f"{len(days)} days ({sealed} sealed, {len(days) - sealed} open); "
          + (f"{amended} amendments of sealed days; " if amended else "")
          + f"{quarantined} rows quarantined")
    for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:5]:
        print(f"  {n:>8}  {reason}")
    if len(reasons) > 5:
        print(f"  ... {len(reasons) - 5} more reasons (--json lists them all; rows in {log.quarantine_path})")
    if unstreamed:
        print(f"{sum(unstreamed.values())} input rows have no stream (landed before their frame by an earlier "
              f"sync release; builds attribute them through their frame): {', '.join(sorted(unstreamed))}")
    print(f"chain head: {head or '(no sealed day yet)'}")
    cli.warn_skipped("log status", [s for d in days for s in d.skipped])  # not counted as rows above
    return 0


def _without_stream(log: EventLog, day: str) -> int:
    codes, _values = log.read_day(day, lazy_elements=True).codes("inputs", "stream")
    return int((codes < 0).sum())


def _verify(args: argparse.Namespace) -> int:
    log = _open(args)
    report = log.verify()

    # A chain that verifies on its own may still be shorter than one certified before.
    extra = [f"certification history: {p}" for p in history.chain_problems(log.home, log)]
    if extra:
        report.problems.extend(extra)
        report.ok = False
    if args.json:
        cli.emit_json(
            {
                "ok": report.ok,
                "problems": report.problems,
                "notes": report.notes,
                "entries": report.entries,
                "head": report.head,
            }
        )
        return 0 if report.ok else 1
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if report.ok:
        redacted = len(log.redactions())
        print(f"ok: {report.entries - redacted} sealed segments"
              + (f", {redacted} redaction record(s) (af forget)" if redacted else "")
              + f", chain head {report.head or '(none)'}")
        return 0
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    print(f"FAILED: {len(report.problems)} problem(s) in {log.dir}", file=sys.stderr)
    return 1


def _seal(args: argparse.Namespace) -> int:
    log = _open(args)
    try:
        end = day_bounds(args.day, log.tz)[1]
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if end > time.time_ns() // 1000 and not log.segment_paths(args.day):
        print(
            f"note: {args.day} has not ended yet in {log.tz}; capture arriving for it after sealing "
            "will be quarantined",
            file=sys.stderr,
        )
    sealed = log.seal(args.day)
    if args.json:
        cli.emit_json({"day": args.day, "sealed": sealed, "chain_head": log.chain_head()})
        return 0
    print(f"{args.day}: sealed" if sealed else f"{args.day}: already sealed")
    return 0
