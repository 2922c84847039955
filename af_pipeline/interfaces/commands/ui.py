"""``af ui``: the Dagster UI on a data folder, from a checkout or an installed package alike.

It points Dagster at the data folder (``DAGSTER_HOME=<home>/dagster`` as an absolute path,
telemetry off, ``AF_HOME``), writes ``<home>/dagster/workspace.yaml`` naming the installed module
``assets.definitions`` (no working directory: it loads from wherever Python finds the package,
site-packages or a checkout) and becomes ``dagster dev`` on it. The code location keeps the name
the checkout's workspace.yaml gives it, so run history and schedule state are the same either way.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.home import Home, resolve_home

CODE_MODULE = "assets.definitions"
LOCATION_NAME = "activity_frames"  # as in the checkout's workspace.yaml
WORKSPACE = f"""\
# Written by `af ui`: the installed activity-frames code location (rewritten on every start).
load_from:
  - python_module:
      module_name: {CODE_MODULE}
      attribute: defs
      location_name: {LOCATION_NAME}
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ui",
        help="open the Dagster UI (webserver and daemon) on the data folder",
        description=(
            "Run `dagster dev` on the installed code location assets.definitions (through <home>/dagster/workspace.yaml, "
            "written here) with DAGSTER_HOME=<home>/dagster and AF_HOME=<home>: "
            "the day partitions, assets, checks, the nightly schedule and the sealed-day sensor of this "
            "data folder. Stop it with Ctrl-C."
        ),
    )
    cli.common(p, json_flag=False)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="port to listen on (default: 3000)")
    p.set_defaults(func=run_ui)


def prepare(home: Home) -> Path:
    """Point this process's Dagster at ``home`` and write the workspace file; return its path."""
    from assets.instance import use_home

    folder = Path(use_home(home))  # <home>/dagster with its dagster.yaml; DAGSTER_HOME, AF_HOME
    path = folder / "workspace.yaml"
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(WORKSPACE, encoding="utf-8")
    os.replace(tmp, path)
    return path


def command(workspace: Path, host: str, port: int) -> list[str]:
    """The dagster dev command line, run by this interpreter (so the code location is this install)."""
    return [sys.executable, "-m", "dagster", "dev", "-w", str(workspace), "-h", host, "-p", str(port)]


def run_ui(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder yet; import a capture first "
                        "(af import ...) or pass --home")
    argv = command(prepare(home), args.host, args.port)
    print(f"af ui: http://{args.host}:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']})", file=sys.stderr,
          flush=True)
    # Replace this process: Ctrl-C and signals then reach dagster dev, which stops its children.
    os.execv(argv[0], argv)
    return 0  # not reached
