"""The ``af`` command line. Each command lives in af_pipeline/interfaces/commands/<name>.py.

Exit codes: 0 success, 1 a check or verification failed, 2 bad usage or bad input.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from af_pipeline.about import DISTRIBUTION, __version__
from capture.errors import AfError, no_space
from capture.home import private_files
from capture.process import end

# Modules registering sub-commands, in the order --help lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "synth",
    "demo",
    "log",
    "forget",
    "importer",
    "sync",
    "build",
    "stats",
    "routines",
    "agent",
    "day",
    "record",
    "view",
    "categories",
    "ui",
    "team",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 on usage errors; keep that, say it plainly
        self.print_usage(sys.stderr)
        print(f"af: {message}", file=sys.stderr)
        raise SystemExit(2)


def common(parser: argparse.ArgumentParser, json_flag: bool = True) -> None:
    """Options every command takes."""
    parser.add_argument(
        "--home",
        metavar="DIR",
        help="data folder holding the log, the DuckDB warehouse and published/ "
        "(default: $AF_HOME or ~/.activity-frames); a new or empty folder, or an existing data folder: "
        "a folder that already holds something but no af.json is refused",
    )
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def emit_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False))


def warn_skipped(command: str, skipped: Sequence[Any]) -> None:
    """One sentence on stderr when the log left lines of an open day out of what was printed
    (capture.log.opensegments.SkippedLine; Memory.noting_skipped collects them)."""
    if skipped:
        from capture.log.opensegments import skipped_sentence  # with the log, which the caller read

        print(f"af {command}: {skipped_sentence(skipped)}", file=sys.stderr)


def build_parser(only: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="af",
        description="activity-frames: compile screen activity into evidence-linked agent memory.",
        epilog="Run `af COMMAND --help` for each command. Exit codes: 0 ok, 1 check failed, 2 bad usage or input.",
    )
    parser.add_argument("--version", action="version", version=f"af {__version__} ({DISTRIBUTION})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES if only is None else only:
        module = importlib.import_module(f"af_pipeline.interfaces.commands.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    private_files()  # the data folder holds titles, URLs, typed text: 0700 folders, 0600 files
    argv = list(sys.argv[1:] if argv is None else argv)
    # An MCP client starts `af mcp` for every session and waits for it: import only that command
    # (the others pull in numpy, DuckDB and the synthesizer, ~0.4 s before the server can start).
    # `af --version` needs none of them either, and `af build` / `af certify` only their own
    # module (the others cost ~0.6 s of CPU on top of what those two import anyway); `af import`
    # only its own (the demo command's imports pulled in Dagster: ~2 s and ~50 MB of its peak);
    # `af team` only its own (a nightly with nothing new is ~2 s: the others were a quarter of it).
    only = {"mcp": ("agent",), "--version": (), "build": ("build",), "certify": ("build",),
            "import": ("importer",), "team": ("team",)}
    parser = build_parser(only.get(argv[0]) if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code = args.func(args)
    except AfError as exc:
        print(f"af {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - only a full disk is turned into a sentence here
        full = no_space(exc)
        if full is None:
            raise
        # what was being written is abandoned; the log's own writes are atomic (nothing half-landed)
        print(f"af {args.command}: {full}; free some space and run it again", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"af {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours, and nothing left to say.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return int(code or 0)


def entry() -> NoReturn:
    """The ``af`` console script: main(), then the process ends without the interpreter's last
    garbage collection (capture/process.py: up to 0.6 s after a Dagster run)."""
    end(main())


if __name__ == "__main__":
    entry()
