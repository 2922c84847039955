"""``af synth``: write a seeded sample capture (screenpipe SQLite) and the truth it planted."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from af_pipeline.interfaces.cli import emit_json
from capture.synth import DB_NAME, TRUTH_NAME, generate

DESCRIPTION = f"""\
Generate a realistic sample capture: office days with breaks, dozens of apps,
thousands of pages, a second monitor part of the time, heartbeat rows,
accessibility trees, input events, five recurring routines and some AZERTY days.

Writes DIR/{DB_NAME} in screenpipe's current SQLite layout and DIR/{TRUTH_NAME},
the ground truth of what was planted. The same --seed gives the same contents,
and day N is the same whatever --days is. See docs/sample-corpus.md.
"""

EPILOG = f"""\
examples:
  af synth --days 61 --seed 1 --out /tmp/corpus     # the paper-sized corpus
  af import screenpipe /tmp/corpus/{DB_NAME}
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("synth", help="generate a sample screenpipe capture and its ground truth",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--days", type=int, default=5, metavar="N", help="calendar days to generate (default 5)")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default 1)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"folder to write {DB_NAME} and {TRUTH_NAME} into (created if missing; "
                        "a previous af synth output there is replaced)")
    p.add_argument("--start-day", default="2026-06-01", metavar="DAY", help="first local day, YYYY-MM-DD "
                   "(default 2026-06-01)")
    p.add_argument("--tz", default="Europe/Paris", metavar="ZONE",
                   help="the simulated user's IANA time zone (default Europe/Paris)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()

    def progress(i: int, n: int, day: str, counts: dict[str, int]) -> None:
        print(f"af synth: day {i}/{n} {day}: {counts['frames']:,} frames, {counts['ui_events']:,} input events, "
              f"{counts['elements']:,} elements", file=sys.stderr, flush=True)

    result = generate(args.days, args.seed, Path(args.out), start_day=args.start_day, tz=args.tz,
                      progress=progress)
    seconds = round(time.perf_counter() - started, 2)
    summary = result.as_dict() | {"seconds": seconds, "seed": args.seed}
    if args.json:
        emit_json(summary)
        return 0
    occ = result.routine_occurrences
    print(f"wrote {result.db_path} and {result.truth_path}")
    print(f"  days: {result.days} ({result.active_days} with capture), seed {args.seed}")
    print(f"  frames: {result.frames:,}  ui_events: {result.ui_events:,}  elements: {result.elements:,}")
    print("  routine occurrences: " + ", ".join(f"{k} {v}" for k, v in sorted(occ.items())))
    print(f"  took {seconds:.1f} s")
    return 0
