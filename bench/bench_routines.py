"""Routine mining: time and peak memory at 51 and 365 active days.

    .venv/bin/python bench/bench_routines.py [--days 51 365] [--events-per-day 4566] [--seed 7]

The action streams come from a generator shaped like a busy desktop corpus (the paper's 51-day
freeze has 232,898 input events, about 4,566 a day): a long-tailed vocabulary of a few thousand
click / type / paste / app / nav symbols, sessions of a few to a few hundred actions cut by
idle gaps, and planted routines (a 3-step compose loop, a window-close loop, multi-app routines
of 5-12 steps) interleaved with noise. Every input event is counted as one action, which is
pessimistic: a real stream is shorter, because a typing run is a single action.

Measured: the wall time of mining (encode + frequent grams + maximality + routine table + h) and
the peak of traced Python/numpy allocations (tracemalloc, in a second run, since tracing slows
Python down), then the same for the temporal holdout (fit on 40/51 of the days, match the
rest); the process's peak RSS (getrusage) is printed too. Reference: the published research
miner took 193 s and 5.8 GB for 51 days. Target: under 5 s and 500 MB.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from af_pipeline.compiler.actions import Action  # noqa: E402
from af_pipeline.routines import miner as R  # noqa: E402
from af_pipeline.routines import plans  # noqa: E402

T0 = 1_772_438_400_000_000
SEC = 1_000_000


def _vocab(rng: random.Random, n: int) -> list[tuple[str, str, str | None, bool]]:
    ops = ["click"] * 6 + ["type"] * 2 + ["paste", "copy", "app", "nav"]
    out = []
    for i in range(n):
        op = rng.choice(ops)
        if op == "copy":
            out.append(("copy", "copy", None, False))
        elif op == "app":
            out.append((f"app:App{i % 40}", "app", f"App{i % 40}", True))
        else:
            out.append((f"{op}:target{i}", op, f"target{i}", True))
    # anonymous clicks and typing into unknown fields: frequent, targetless
    out += [("click:? @App1", "click", None, False), ("type:? @App1", "type", None, False)]
    return out


PLANTED = [
    ["click:New message [button]", "type:To", "click:Send [button]"],  # compose loop
    ["click:Close [button]", "click:Don't save [button]", "app:Finder"],  # window-close loop
    ["app:Excel", "click:A{row} [cell]", "copy", "app:Chrome", "click:Name [textbox]", "paste:Name",
     "click:Save [button]"],
    ["nav:mail.example.com/inbox", "click:Calendar [link]", "nav:calendar.example.com/week",
     "click:Mail [link]", "nav:mail.example.com/inbox", "click:Compose [button]", "type:Subject",
     "type:Body", "click:Send [button]", "click:Inbox [link]", "app:Slack", "click:general [link]"],
]  # fmt: skip


def generate(days: int, events_per_day: int, seed: int) -> list[list[Action]]:
    rng = random.Random(seed)
    vocab = _vocab(rng, 3000)
    weights = [1.0 / (i + 1) ** 1.1 for i in range(len(vocab))]
    out: list[list[Action]] = []
    ref = 0
    for d in range(days):
        day = f"day-{d:03d}"
        acts: list[Action] = []
        session = 0
        t = T0 + d * 86_400 * SEC + 8 * 3600 * SEC
        while len(acts) < events_per_day:
            session_len = rng.randint(5, 300)
            run: list[tuple[str, str, str | None, bool]] = []
            while len(run) < session_len:
                if rng.random() < 0.06:
                    routine = PLANTED[rng.randrange(len(PLANTED))]
                    for sym in routine:
                        op = sym.split(":", 1)[0]
                        tgt = sym.split(":", 1)[1] if ":" in sym else None
                        run.append((sym, op, tgt, tgt is not None))
                else:
                    run.extend(rng.choices(vocab, weights=weights, k=rng.randint(1, 8)))
            for sym, op, tgt, named in run:
                if acts and acts[-1].symbol == sym and acts[-1].session == session:
                    continue
                t += rng.randint(1, 20) * SEC // 4
                ref += 1
                acts.append(
                    Action(
                        symbol=sym, op=op, target=tgt, role=None, named=named, app="App1", url=None,
                        url_template=None, day=day, stream="monitor_1", ts_us=t, end_us=t,
                        session=session, refs=(f"bench:inputs:{ref}",),
                    )
                )  # fmt: skip
            session += 1
            t += rng.randint(91, 1800) * SEC
        out.append(acts)
    return out


def measure(fn):  # type: ignore[no-untyped-def]
    """Wall time of one plain run, then peak traced memory of a second run (tracemalloc slows
    Python code down, so time and memory are taken separately)."""
    gc.collect()
    t = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - t
    del value
    gc.collect()
    tracemalloc.start()
    value = fn()
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return value, elapsed, peak / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, nargs="+", default=[51, 365])
    ap.add_argument("--events-per-day", type=int, default=4566)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    rows = []
    for n in args.days:
        print(f"generating {n} days ...", file=sys.stderr)
        days = generate(n, args.events_per_day, args.seed)
        steps = sum(len(d) for d in days)

        def run(days=days):  # type: ignore[no-untyped-def]
            res = R.mine_days(days)
            return res, R.recurrence(res)

        (res, h), t_mine, m_mine = measure(run)
        ho, t_ho, m_ho = measure(lambda days=days: R.holdout(days))
        top = res.routines[:20]
        t = time.perf_counter()
        compiled = [plans.compile_plan(r) for r in top]
        t_plan_ms = (time.perf_counter() - t) * 1000 / max(len(top), 1)
        costs = [plans.plan_cost(p) for p in compiled]
        lad = plans.ladder(costs)
        rows.append(
            (n, steps, len(res.routines), res.n_signatures, t_mine, m_mine, t_ho, m_ho, h.h_raw, h.h_specific,
             ho.in_sample, ho.out_of_sample, t_plan_ms, lad["r_inject"]["1512x982"]["median"],
             lad["r_info"]["1512x982"]["median"])
        )  # fmt: skip
        del days, res
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    head = (
        f"{'days':>5} {'actions':>9} {'routines':>8} {'signat.':>8} {'mine s':>7} {'mine MB':>8} "
        f"{'holdout s':>9} {'hold MB':>8} {'h_raw':>6} {'h_spec':>6} {'h_in':>6} {'h_out':>6} "
        f"{'plan ms':>7} {'R_inj':>6} {'R_info':>6}"
    )
    print(head)
    for r in rows:
        print(
            f"{r[0]:>5} {r[1]:>9,} {r[2]:>8,} {r[3]:>8,} {r[4]:>7.2f} {r[5]:>8.1f} {r[6]:>9.2f} {r[7]:>8.1f} "
            f"{r[8]:>6.3f} {r[9]:>6.3f} {r[10]:>6.3f} {r[11]:>6.3f} {r[12]:>7.2f} {r[13]:>6.1f} {r[14]:>6.1f}"
        )
    print(f"peak RSS of this process: {maxrss_mb:.0f} MB (includes the generated streams)")
    print("reference research miner, 51 days: 193 s, 5.8 GB; target: < 5 s, < 500 MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
