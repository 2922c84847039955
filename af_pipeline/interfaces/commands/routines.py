"""`af routines` (mine what the user repeats) and `af replay` (run a plan in a real browser)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from af_pipeline.compiler.actions import Action
from af_pipeline.interfaces import cli
from af_pipeline.routines import miner, report
from capture.errors import CheckFailed, UserError
from capture.home import resolve_home
from capture.log import EventLog


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "routines",
        help="mine routines (repeated action sequences), recurrence h, holdout and the R ladder",
        description=(
            "Mine the action stream of the last active days for routines: contiguous sequences of "
            "3 or more actions that occur at least 3 times (non-overlapping) and name at least 2 "
            "targets, reported maximal. Prints the routine table, h_raw and h_specific, the "
            "temporal holdout (fit on the first days, measure on the rest), the R ladder of the "
            "top routines' compiled plans, and a MODELED three-arm cost comparison."
        ),
    )
    cli.common(p)
    p.add_argument("--days", type=int, metavar="N", help="only the last N active days (default: all)")
    p.add_argument("--top", type=int, default=20, metavar="K", help="routines to show and compile (default 20)")
    p.add_argument(
        "--train-fraction",
        type=float,
        default=miner.PAPER_TRAIN_FRACTION,
        metavar="F",
        help="share of active days the holdout fits on (default 40/51, the paper's split)",
    )
    p.add_argument("--plans-dir", metavar="DIR", help="write each top routine's plan (.json) and minimal script (.txt)")
    p.add_argument("--evidence", action="store_true", help="with --json: include every occurrence's input refs")
    p.set_defaults(func=run_routines)

    r = sub.add_parser(
        "replay",
        help="replay a routine plan in a real browser (dry run unless --execute)",
        description=(
            "Drive Chromium through a guarded skill plan written by `af routines --plans-dir`. "
            "Each step is grounded by accessibility role and name; slots take the values given "
            "with --slot; guards (browser app, URL template, a unique element with the expected "
            "role and name) are checked before every action, and a guard miss stops at once with "
            "no further action. By default nothing is performed (dry run). Steps that look "
            "destructive (send, delete, pay, post, submit ...) and clicks that submit a form need "
            "--allow-destructive. No model is involved: zero model tokens. Exit 0 when the run "
            "completed (or the dry run found every guard holding), 1 on a guard miss or refusal."
        ),
    )
    r.add_argument("plan", metavar="PLAN.json", help="a plan file")
    r.add_argument("--slot", action="append", default=[], metavar="NAME=VALUE", help="a slot value (repeatable)")
    r.add_argument("--url", help="the page to open first (plans record URL templates, not addresses)")
    r.add_argument("--execute", action="store_true", help="perform the steps (default: dry run)")
    r.add_argument("--allow-destructive", action="store_true", help="allow steps that send, delete, pay, submit ...")
    r.add_argument("--transcript", metavar="PATH", help="also write the transcript as JSON to PATH")
    r.add_argument(
        "--timeout-ms", type=int, default=3000, metavar="MS", help="how long a guard waits for its element (default 3000)"
    )
    cli.common(r)  # --home is accepted for uniformity; replay reads only the plan file
    r.set_defaults(func=run_replay)


def load_actions(home_arg: str | None, last_days: int | None) -> tuple[list[list[Action]], str]:
    """The action stream of each active day in the log (oldest first) and the user's zone."""
    home = resolve_home(home_arg)
    try:
        settings = home.settings()
    except (FileNotFoundError, ValueError) as exc:
        raise UserError(str(exc)) from None
    log = EventLog(home)
    days = [d.day for d in log.days() if d.counts.get("inputs", 0) > 0]
    if last_days is not None:
        if last_days < 1:
            raise UserError(f"--days must be at least 1, not {last_days}")
        days = days[-last_days:]
    out: list[list[Action]] = []
    tty = sys.stderr.isatty()
    for n, day in enumerate(days, start=1):
        msg = f"reading and enriching day {n}/{len(days)} ({day})"
        print("\r" + msg if tty else msg, end="" if tty else "\n", file=sys.stderr, flush=True)
        capture = log.read_day(day, lazy_elements=True)
        acts = report.day_actions(capture)
        if acts:
            out.append(acts)
    if days and tty:
        print(file=sys.stderr)
    return out, settings.tz


def _no_input_message(home_arg: Any) -> str:
    """Why there is nothing to mine: no capture at all, or only sources that record no input."""
    log = EventLog(resolve_home(home_arg))
    with_rows = [d.day for d in log.days() if d.counts.get("snapshots", 0) > 0]
    if not with_rows:
        return "no day in the log has input events; import a capture first (af import ...)"
    recorders = sorted(set(log.read_day(with_rows[-1]).recorders))
    return (f"no day in the log has input events: routines are mined from input events (clicks, keys, "
            f"typing), and the {len(with_rows)} day(s) in the log come from sources that record none "
            f"({', '.join(recorders) or 'unknown'}; ActivityWatch records windows only). Import a capture "
            f"that records input (af import screenpipe, af import rpm, or af record)")


def _no_routine_message(payload: dict[str, Any]) -> str:
    """Why input events gave no routine."""
    return (f"no routine in {payload['days']} active day(s), {payload['steps']:,} action steps: a routine is "
            f"3 or more actions in a row, naming at least 2 targets, done at least 3 times")


def run_routines(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise UserError(f"--top must be at least 1, not {args.top}")
    if not 0.0 < args.train_fraction < 1.0:
        raise UserError(f"--train-fraction must be between 0 and 1, not {args.train_fraction}")
    days, tz = load_actions(args.home, args.days)
    if not days:
        if not args.json:
            raise UserError(_no_input_message(args.home))
        # --json answers in JSON whatever the data: the same document, empty, with the reason
        payload = report.to_dict(report.build([], args.top, args.train_fraction), tz, args.top)
        payload["timing"] = {"mining_seconds": 0.0, "compile_ms_median": None}  # nothing was mined
        payload["reason"] = _no_input_message(args.home)
        cli.emit_json(payload)
        return 0
    print(f"mining {sum(len(d) for d in days):,} actions over {len(days)} days", file=sys.stderr)
    built = report.build(days, args.top, args.train_fraction)
    payload = report.to_dict(built, tz, args.top, evidence=args.evidence)
    payload["reason"] = None if built.mined.routines else _no_routine_message(payload)
    compiled = built.plans
    if args.plans_dir:
        folder = Path(args.plans_dir)
        try:
            report.write_plans(folder, compiled)
        except OSError as exc:
            raise UserError(f"cannot write plans to {folder}: {exc.strerror or exc}") from None
    if args.json:
        cli.emit_json(payload)
    else:
        print(render(payload))
        if args.plans_dir:
            print(f"plans written to {args.plans_dir} ({len(compiled)} plans, .json and .txt)")
    return 0


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def render(p: dict[str, Any]) -> str:
    t = p["routines"]
    lines = [
        f"{p['days']} active days, {p['steps']:,} action steps; {t['routines_total']:,} maximal routines "
        f"({t['routine_signatures']:,} routine signatures, {t['frequent_grams']:,} recurring n-grams), "
        f"mined in {p['timing']['mining_seconds']:.2f} s",
        "",
        f"{'#':>3} {'count':>6} {'k':>3} {'days':>4} {'plan tok':>8} {'R_inject':>8} {'R_info':>7}  routine",
    ]
    if p.get("reason"):
        lines.append(f"    {p['reason']}")
    for i, r in enumerate(t["routines"], start=1):
        c = r["plan"]
        seq = " > ".join(r["symbols"])
        if len(seq) > 90:
            seq = seq[:89] + "…"
        lines.append(
            f"{i:>3} {r['count']:>6} {r['k']:>3} {len(r['days']):>4} {c['plan_tokens']:>8} "
            f"{c['r_inject']['1512x982']:>8.1f} {c['r_info']['1512x982']:>7.1f}  {seq}"
        )
    h = p["recurrence"]
    lines += ["", f"recurrence: h_raw {_pct(h['h_raw'])} (steps inside any recurring n-gram), "
              f"h_specific {_pct(h['h_specific'])} (inside a routine naming >= 2 targets)"]  # fmt: skip
    ho = p["holdout"]
    if ho:
        lines.append(
            f"holdout: fit on {len(ho['train_days'])} days ({ho['signatures']:,} signatures), measured on "
            f"{len(ho['test_days'])}: in-sample {_pct(ho['in_sample_h'])}, out-of-sample {_pct(ho['out_of_sample_h'])}"
        )
    else:
        lines.append("holdout: needs at least 2 active days")
    lad = p["ladder"]
    if lad["routines"]:
        lines += ["", f"R ladder over the top {lad['routines']} routines (median [IQR]; numerator MODELED):"]
        for res in ("1280x800", "1512x982", "1728x1117"):
            a, b = lad["r_inject"][res], lad["r_info"][res]
            lines.append(
                f"  {res:>9}: R_inject {a['median']:.1f} [{a['q1']:.1f}-{a['q3']:.1f}]   "
                f"R_info {b['median']:.1f} [{b['q1']:.1f}-{b['q3']:.1f}]"
            )
        lines.append(
            f"  plan tokens median {lad['plan_tokens']['median']:.1f}, minimal script {lad['script_tokens']['median']:.1f}, "
            f"guard coverage median {lad['guard_coverage']['median']:.3f}"
            + (f", compile median {p['timing']['compile_ms_median']:.3f} ms per plan"
               if p["timing"]["compile_ms_median"] is not None else "")
        )
        arms = p["three_arm"]
        lines += ["", f"three-arm comparison, {arms['label']}:"]
        for key, label in (("arm_a_rederive", "A re-derive"), ("arm_b_plan_injected", "B plan injected"),
                           ("arm_c_local_replay", "C local replay")):  # fmt: skip
            a = arms[key]
            lines.append(
                f"  {label:<16} {a['tokens'] / 1e6:>8.3f} Mtok  ${a['usd']:>9.2f}  saves {_pct(a['saving_vs_a'])}"
            )
    return "\n".join(lines)


def run_replay(args: argparse.Namespace) -> int:
    # deferred: the replay engine drives Playwright, only for `af replay`
    from af_pipeline.routines import replay

    slots = replay.parse_slots(args.slot)
    if args.timeout_ms < 1:
        raise UserError(f"--timeout-ms must be positive, not {args.timeout_ms}")
    tr = replay.replay(
        args.plan,
        slots,
        args.url,
        execute=args.execute,
        allow_destructive=args.allow_destructive,
        timeout_ms=args.timeout_ms,
    )
    if args.transcript:
        try:
            Path(args.transcript).write_text(
                json.dumps(tr.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        except OSError as exc:
            raise UserError(f"cannot write the transcript to {args.transcript}: {exc.strerror or exc}") from None
    if args.json:
        cli.emit_json(tr.to_dict())
    else:
        print(tr.to_text(), end="")
    if not tr.ok:
        raise CheckFailed(tr.stop_reason or tr.outcome)
    return 0
