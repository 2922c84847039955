"""`af build` and `af certify`: materialize and certify day partitions through Dagster."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from af_pipeline.interfaces import cli
from capture.errors import CheckFailed
from capture.home import resolve_home
from capture.timeutil import days_between

if TYPE_CHECKING:
    from assets.certify import BuildOutcome


def _range_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="first", metavar="DAY", help="first day (YYYY-MM-DD; default: the log's first day)")
    p.add_argument("--to", dest="last", metavar="DAY", help="last day (YYYY-MM-DD; default: the log's last day)")


def _verbose_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true",
                   help="print Dagster's own console log (every event; errors with stack traces)")


def _skipped(first: str | None, last: str | None, days: list[str]) -> None:
    """Say which days of an explicit range have no capture (they are no partitions, not errors)."""
    if not (first or last):
        return

    missing = sorted(set(days_between(first or days[0], last or days[-1])) - set(days))
    if missing:
        shown = ", ".join(missing) if len(missing) <= 4 else f"{missing[0]}, {missing[1]} ... {missing[-1]}"
        _say(f"skipping {len(missing)} day(s) of the range without capture ({shown}): nothing to build there")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build",
        help="materialize day partitions through Dagster (log -> warehouse -> published/)",
        description=(
            "Run the Dagster asset graph (raw_day, frames, enriched_input, page_refs, day_document, "
            "context_block, published_day) and the data-quality checks for a range of days, as ONE run "
            "with the in-process executor, printing one line per finished stage (--verbose: Dagster's own "
            "log instead). Days in the range without capture are skipped (they are no partitions), and so are "
            "sealed days already published from the same segments by the same code version (--force builds "
            "them). Run "
            "history goes to <home>/dagster (telemetry off). Exit 1 if a step or a blocking check fails."
        ),
    )
    cli.common(p)
    _range_args(p)
    _verbose_arg(p)
    p.add_argument("--force", action="store_true",
                   help="rebuild days whose published files already come from the same sealed segments and "
                        "code version (skipped otherwise: nothing about them would change)")
    p.set_defaults(func=run_build)

    c = sub.add_parser(
        "certify",
        help="run every certification check through Dagster and write <home>/certificate.json",
        description=(
            "Run the checks-only `certify` job over the day range in one Dagster run (for one day, the same as "
            "`dagster job execute -m assets.definitions -a defs -j certify --tags '{\"dagster/partition\": \"DAY\"}'`), "
            "each check judging every day on its own: byte-identical recompile "
            "in another process (other TZ and PYTHONHASHSEED), rebuild equals incremental, append-only "
            "against the manifest chain and published manifests, and the Great Expectations data-quality "
            "checks. Writes <home>/certificate.json and exits 1 if any check fails on any day."
        ),
    )
    cli.common(c)
    _range_args(c)
    _verbose_arg(c)
    c.set_defaults(func=run_certify)


def _say(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


def run_build(args: argparse.Namespace) -> int:
    # deferred: the harness and the warehouse (~0.2 s), not needed for `af --help`
    from assets import certify as harness

    home = resolve_home(args.home)
    days = harness.select_days(home, args.first, args.last)
    _skipped(args.first, args.last, days)
    try:
        out = harness.run_build(home, days, _say, verbose=args.verbose, stages=not args.json, force=args.force)
    except Exception as exc:  # a full disk before or around the run: one sentence naming the folder
        full = harness.disk_full(home, exc)
        if full is None:
            raise
        raise CheckFailed(full) from None
    full_disk = next((f for f in out.failures if "no space left on device" in f), None)
    if full_disk is not None:  # what failed for want of space, said once; the rest followed from it
        raise CheckFailed(harness.full_disk_sentence(home, full_disk[full_disk.index("no space left on device"):]))
    if args.json:
        cli.emit_json({"ok": out.ok, "days": out.days, "seconds": round(out.seconds, 2), "run_id": out.run_id,
                       "failures": out.failures, "skipped_unchanged": out.skipped, "published": out.published,
                       "withheld": out.withheld})
    elif not out.run_id:
        print(f"nothing to build: {len(out.skipped)} day(s) {days[0]} .. {days[-1]} unchanged since published "
              f"to {home.published_dir} (--force rebuilds them)")
    else:
        verdict = "built" if out.ok else "FAILED"
        built = len(days) - len(out.skipped)
        skipped = f", {len(out.skipped)} unchanged skipped" if out.skipped else ""
        print(f"{verdict} {built} day(s) {days[0]} .. {days[-1]}{skipped} in {out.seconds:.1f} s "
              f"(run {out.run_id[:8]}); {_where(out, str(home.published_dir))}")
        for f in out.failures:
            print(f"  {f}")
    if not out.ok:
        raise CheckFailed(f"the build failed ({len(out.failures)} failure(s)); see above")
    return 0


def _where(out: BuildOutcome, folder: str) -> str:
    """Where the run's days went: only a folder that was written is named."""
    parts = []
    if out.published:
        parts.append(f"{len(out.published)} day(s) published to {folder}")
    if out.withheld:
        parts.append(f"{len(out.withheld)} day(s) not published ({', '.join(out.withheld)}: "
                     "a data-quality rule failed)")
    return "; ".join(parts) or "nothing published"


def run_certify(args: argparse.Namespace) -> int:
    # deferred: the harness and the warehouse (~0.2 s), not needed for `af --help`
    from assets import certify as harness

    home = resolve_home(args.home)
    days = harness.select_days(home, args.first, args.last)
    _say(f"certifying {len(days)} day(s) {days[0]} .. {days[-1]} in one Dagster run")
    try:
        cert = harness.run_certify(home, days, _say, verbose=args.verbose)
    except Exception as exc:  # a full disk (the run's storage, the warehouse, the certificate): one sentence
        full = harness.disk_full(home, exc)
        if full is None:
            raise
        raise CheckFailed(full) from None
    full_disk = next((e for v in cert["days"].values() for e in v["errors"] if "no space left on device" in e), None)
    if full_disk is not None:
        raise CheckFailed(harness.full_disk_sentence(home, full_disk[full_disk.index("no space left on device"):]))
    if args.json:
        cli.emit_json(cert)
    else:
        failed = {d: v for d, v in cert["days"].items() if not v["passed"]}
        print(f"certificate: {cert['verdict'].upper()} for {len(days)} day(s) in {cert['seconds']:.1f} s; "
              f"code {cert['code_version']}, log head {(cert['log']['chain_head'] or '-')[:12]}; "
              f"written to {home.certificate_path}")
        redacted = cert["log"].get("redacted_days") or []
        if redacted:  # forgetting is the one accepted change of a sealed day: say where it happened
            print(f"  {len(redacted)} day(s) carry a redaction (af forget): {', '.join(redacted)}")
        for day, v in failed.items():
            # root causes first, then what followed from them on the same day
            failing = sorted((bool(c.get("consequence_of")), name) for name, c in v["checks"].items() if not c["passed"])
            for knock_on, name in failing:
                mark = " [consequence]" if knock_on else ""
                print(f"  {day} {name}{mark}: {v['checks'][name]['problem']}")
            for e in v["errors"]:
                print(f"  {day}: {e}")
    return 0 if cert["verdict"] == "pass" else 1
