"""`af team ...`: a team root of users, each with their own data folder (capture/team.py).

    af team init ROOT                     create the team root and its registry
    af team add USER PATH [--team ROOT]   register a user's data folder (joins unchanged)
    af team remove USER [--team ROOT]     take a user out of the team (their folder stays theirs)
    af team list [--team ROOT]            the users and their folders
    af team build [--team ROOT]           build and certify every user's days, mine team routines

Every subcommand but init takes the team root from --team, else $AF_TEAM.
"""

from __future__ import annotations

import argparse
import os
import sys

from af_pipeline.interfaces import cli
from capture.errors import AfError, no_space
from capture.team import Team, TeamError


def _team_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--team", dest="root", default=os.environ.get("AF_TEAM"), metavar="ROOT",
                   help="the team root (default: $AF_TEAM)")


def _team(args: argparse.Namespace) -> Team:
    if not args.root:
        raise TeamError("no team root: pass --team ROOT or set AF_TEAM (create one with `af team init ROOT`)")
    return Team(args.root)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "team",
        help="a team root: one data folder per user, built and certified per user, routines across users",
        description="Manage a team root (docs/scale.md): a registry of users, each with their own data folder "
        "(the single-user layout, so a person's folder joins unchanged).",
    )
    tsub = p.add_subparsers(dest="team_command", metavar="SUBCOMMAND", parser_class=cli._Parser)

    i = tsub.add_parser("init", help="create a team root (0700) with an empty registry")
    i.add_argument("root", metavar="ROOT")
    i.add_argument("--postgres", action="store_true",
                   help="the team's Dagster instance keeps runs and events in Postgres ($AF_TEAM_PG_URL)")
    i.add_argument("--json", action="store_true", help="print machine-readable JSON")
    i.set_defaults(func=run_init, command="team init")

    a = tsub.add_parser("add", help="register USER with the data folder PATH")
    _team_arg(a)
    a.add_argument("user", metavar="USER", help="lowercase letters, digits, '-', '_', '.' (at most 64)")
    a.add_argument("path", metavar="PATH", help="the user's data folder (an existing one joins unchanged)")
    a.add_argument("--create", action="store_true", help="make a new, empty data folder at PATH if there is none (PATH must not exist "
                   "or be an empty folder: a non-empty folder without af.json is refused, untouched)")
    a.add_argument("--tz", metavar="ZONE", help="the new folder's IANA zone (with --create; default the machine's)")
    a.add_argument("--json", action="store_true", help="print machine-readable JSON")
    a.set_defaults(func=run_add, command="team add")

    r = tsub.add_parser("remove", help="take USER out of the team (their data folder is left as it is)",
                        description="Take USER out of the registry and out of the team's user partitions in its "
                        "Dagster instance. Their data folder, certificate and published files stay as they are: "
                        "they are the user's. The next team run neither builds nor lists them; the team routines "
                        "are mined without them from then on.")
    _team_arg(r)
    r.add_argument("user", metavar="USER")
    r.add_argument("--json", action="store_true", help="print machine-readable JSON")
    r.set_defaults(func=run_remove, command="team remove")

    ls = tsub.add_parser("list", help="the registered users and their data folders")
    _team_arg(ls)
    ls.add_argument("--json", action="store_true", help="print machine-readable JSON")
    ls.set_defaults(func=run_list, command="team list")

    b = tsub.add_parser("build", help="build and certify every user, write the team certificate and routines",
                        description="One Dagster run of the team job: every user with days due is built and "
                        "certified in their own folder (users with nothing due stand as certified), then "
                        "<team>/team-certificate.json and <team>/team-routines.json. Where the users' work runs "
                        "is configuration: worker processes on this machine (multiprocess, --workers), a "
                        "dask.distributed cluster (dask, --dask-address) or Celery workers (celery, --broker). "
                        "Exit 1 if a step or a user's certification fails.")
    _team_arg(b)
    b.add_argument("--executor", choices=("multiprocess", "dask", "celery"), default="multiprocess",
                   help="where the users' work runs: worker processes here, a dask cluster or Celery workers")
    b.add_argument("--workers", type=int, default=2, metavar="N", help="multiprocess: users built at once, one worker process each (default 2)")
    b.add_argument("--dask-address", metavar="ADDR", help="dask: the scheduler, e.g. tcp://10.0.0.5:8786")
    b.add_argument("--broker", metavar="URL", help="celery: the broker and result backend of the team's Celery "
                   "workers (`celery -A assets.team_celery worker`), e.g. redis://10.0.0.6:6379/0")
    b.add_argument("--no-certify", action="store_true", help="build and mine only (no certificates)")
    b.add_argument("--json", action="store_true", help="print machine-readable JSON")
    b.set_defaults(func=run_build, command="team build")

    p.set_defaults(func=lambda _a: (p.print_help(), 2)[1])


def run_init(args: argparse.Namespace) -> int:
    team = Team(args.root)
    team.init()
    if args.postgres:
        from assets.team import prepare_team_instance

        prepare_team_instance(team, postgres=True)
    if args.json:
        cli.emit_json({"root": str(team.root), "users": len(team.members())})
    else:
        print(f"team root {team.root} ({len(team.members())} user(s))")
    return 0


def run_add(args: argparse.Namespace) -> int:
    from capture.home import machine_zone

    team = _team(args)
    tz = (args.tz or machine_zone()) if args.create else None
    if args.tz and not args.create:
        print("af team add: --tz only applies with --create (an existing folder keeps its zone)", file=sys.stderr)
        return 2
    member = team.add(args.user, args.path, create_tz=tz)
    if args.json:
        cli.emit_json({"user": member.user, "path": str(member.path)})
    else:
        print(f"added {member.user}: {member.path}")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    team = _team(args)
    member = team.remove(args.user)
    unpartitioned = False
    if (team.dagster_home / "dagster.yaml").exists():  # the team has an instance: its partitions too
        from assets.team import team_instance, unregister_user

        inst = team_instance(team)
        try:
            unpartitioned = unregister_user(inst, team, member.user)
        finally:
            inst.dispose()
    if args.json:
        cli.emit_json({"user": member.user, "path": str(member.path), "partition_removed": unpartitioned})
    else:
        print(f"removed {member.user} from the team; their folder {member.path} is left as it is")
    return 0


def run_list(args: argparse.Namespace) -> int:
    members = _team(args).members()
    if args.json:
        cli.emit_json({"users": [{"user": m.user, "path": str(m.path), "tz": m.home.settings().tz} for m in members]})
        return 0
    for m in members:
        print(f"{m.user}\t{m.path}")
    if not members:
        print("no users yet: add one with `af team add USER PATH` (--team ROOT or $AF_TEAM)", file=sys.stderr)
    return 0


def run_build(args: argparse.Namespace) -> int:
    team = _team(args)
    if args.executor == "dask" and not args.dask_address:
        raise TeamError("--executor dask needs --dask-address (the scheduler of the cluster)")
    if args.executor == "celery" and not args.broker:
        raise TeamError("--executor celery needs --broker (the broker URL of the team's Celery workers)")
    if args.workers < 1:
        raise TeamError(f"--workers must be at least 1, not {args.workers}")
    from assets.team import run_team

    try:
        out = run_team(team, args.executor, workers=args.workers, dask_address=args.dask_address,
                       certify=not args.no_certify, broker=args.broker)
    except AfError:
        raise
    except Exception as exc:  # noqa: BLE001 - the team's storage or executor, before or around the run
        if no_space(exc):
            raise  # cli.main says it as a sentence
        said = f"the team run could not be made or followed ({type(exc).__name__}: {_first_line(exc)})"
        if args.json:
            cli.emit_json({"ok": False, "error": said, "executor": args.executor})
        else:
            print(f"af team build: {said}", file=sys.stderr)
        return 2
    import json

    # The team certificate is written whatever a user's run did (a failing user fails the run
    # after it): its verdict and the users it names are the outcome.
    cert = None
    if not args.no_certify and team.certificate_path.is_file():
        cert = json.loads(team.certificate_path.read_text(encoding="utf-8"))
    summary = {"ok": out.ok, "run_id": out.run_id, "executor": out.executor, "seconds": round(out.seconds, 1),
               "failures": out.failures}
    if cert is not None:
        summary |= {"team_verdict": cert.get("verdict"), "failed_users": cert.get("failed", []),
                    "pending_users": sorted(u for u, v in cert.get("per_user", {}).items() if v.get("verdict") == "pending"),
                    "certificate": str(team.certificate_path)}
    if args.json:
        cli.emit_json(summary)
    else:
        print(f"team run {out.run_id[:8]} on {out.executor}: {'ok' if out.ok else 'FAILED'} ({out.seconds:.1f} s)")
        for f in out.failures:
            print(f"  {f}", file=sys.stderr)
        if cert is not None:
            print(f"  {team.certificate_path}: {cert.get('verdict')}")
        if team.routines_path.is_file():
            print(f"  {team.routines_path}")
    if cert is not None and cert.get("verdict") != "pass":
        if not args.json:
            print(f"af team build: the team certificate says {cert.get('verdict')}: see each failing user's "
                  "certificate.json", file=sys.stderr)
        return 1
    return 0 if out.ok else 1


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else "no message"
