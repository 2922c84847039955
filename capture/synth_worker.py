"""Child process of a parallel ``af synth`` run: simulates the days, pickles rows to stdout.

Started by capture.synth with ``python -m capture.synth_worker '[seed, days, start_day, tz]'``;
not meant to be run by hand.
"""

from __future__ import annotations

import json
import sys

from capture.synth import produce_to


def main(argv: list[str]) -> int:
    seed, days, start_day, tz = json.loads(argv[1])
    produce_to(sys.stdout.buffer, (int(seed), int(days), str(start_day), str(tz)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
