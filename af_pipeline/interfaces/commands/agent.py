"""`af mcp` (the MCP server for agents) and `af qa` (the QA benchmark with its SQL oracle)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.home import resolve_home
from capture.process import end_now


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve the activity memory to agents over MCP (stdio)",
        description="Run the MCP server on stdin/stdout (official MCP SDK 2.x). Read-only tools: "
        "get_capabilities, get_context, get_activity_at, search_activity, get_activity, get_steps, "
        "get_day_summary, get_communications, get_patterns, get_routines, get_plan; prompts and "
        "resources for published days. It reads through the same model as `af day` (published days "
        "verified against their manifest, everything else compiled live from the log); nothing is "
        "written anywhere. Add it to an MCP client as the command `af mcp --home DIR` (see docs/mcp.md).",
    )
    cli.common(p, json_flag=False)
    p.add_argument("--include-typed-text", action="store_true",
                   help="let get_steps and documents include typed text (off by default: privacy rule)")
    p.add_argument("--now", metavar="TIMESTAMP",
                   help="answer as if the time were TIMESTAMP (ISO-8601, frozen), e.g. to replay a past "
                   "day as 'today' in demos and tests")
    p.set_defaults(func=_mcp)

    q = sub.add_parser(
        "qa",
        help="QA benchmark: questions from an SQL oracle, answered from the context block",
        description="Evaluate how well the memory answers questions about the user's days (paper "
        "6.2): pick 8 days (7 most recent consecutive active days + the nearest earlier day whose "
        "raw rows overflow a 200k-token window), compute ground truth with an SQL oracle over the "
        "raw rows, generate 64 questions (16 absent-fact probes), answer them, grade them, and "
        "report accuracy, duration error, token counts and compiler-vs-oracle agreement.",
    )
    cli.common(q)
    q.add_argument("--answerer", choices=("block", "llm"), default="block",
                   help="block: deterministic reader of the context block text (default); llm: a real "
                   "model over HTTP configured by AF_QA_LLM_URL / AF_QA_LLM_KEY / AF_QA_LLM_MODEL")
    q.add_argument("--represent", choices=("block", "document", "raw"), default="block",
                   help="what the llm answerer reads (the block answerer reads the block)")
    q.add_argument("--screenpipe", metavar="DB",
                   help="also run the oracle, transpiled to SQLite, directly on this screenpipe database "
                   "and check both engines agree")
    q.add_argument("--out", metavar="DIR", help="write qa-report.md and qa-report.json here")
    q.add_argument("--quiet", action="store_true", help="no progress on stderr")
    q.set_defaults(func=_qa)


def _mcp(args: argparse.Namespace) -> int:
    from af_pipeline.interfaces import (
        mcp_front,  # tiny, and first: it answers the handshake while the SDK loads
    )

    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder (no af.json); import something first")
    # The front first: it answers the handshake while the SDK below is still being imported.
    settings = {"tz": home.settings().tz, "typed_text": bool(args.include_typed_text)}
    front = mcp_front.start(settings)
    try:
        # the read model (no SDK): the front answers the first tool calls with it, and the
        # SDK's import waits for them (they share one interpreter lock)
        from af_pipeline.interfaces import mcp_server

        memory = mcp_server.open_memory(home, include_typed_text=args.include_typed_text, now=args.now)
        front.offer(mcp_server.early_calls(memory) if front.answers_tools() else None)
        if front.answers_tools():
            memory.prepare()
        front.sdk_turn()
        mcp_server.serve(memory)
    finally:
        front.finish()
    end_now(0)  # the session is over: no interpreter shutdown to race the SDK's threads


def _qa(args: argparse.Namespace) -> int:
    # deferred: the QA harness (its oracle imports sqlglot), only for `af qa`
    from af_pipeline.interfaces.qa import report

    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder (no af.json); import something first")
    db = Path(args.screenpipe) if args.screenpipe else None
    progress = None if args.quiet else (lambda m: print(f"af qa: {m}", file=sys.stderr, flush=True))
    result = report.run(home, answerer=args.answerer, representation=args.represent, screenpipe=db,
                        progress=progress)
    if args.out:
        for p in report.write(result, Path(args.out)):
            if progress:
                progress(f"wrote {p}")
    if args.json:
        cli.emit_json(result)
    else:
        print(report.to_markdown(result), end="")
    engines_ok = result["engines"] is None or result["engines"]["all_agree"]
    return 0 if engines_ok else 1
