"""The team's Dagster definitions: every user's days built and certified, routines across users.

One code location per team root (workspace-team.yaml; ``AF_TEAM`` names the root); several
roots can share one deployment, their names apart by the team's key (team_key). Users are the
dynamic partitions ``af_users_<key>`` (``af team add`` registers them; the ``team_users`` sensor
adds new ones): the per-user run of the ``<key>/user_memory`` asset builds and certifies one
user's due days, and the sensor launches one for each user with a sealed day not yet published.

The ``team_build`` job does the whole team in one run of four steps whatever the number of users:
the users step finds who has days due (a user with nothing due stands as certified, decided
without a worker), spreads their work over the executor's workers, logs each user's outcome as
it comes in and materializes their ``user_memory`` partition; then the team certificate, the
cross-user routine table and the verdict. ``team_build_only`` builds without certificates. Where
the users' work runs is the users step's configuration (``af team build --executor``):

- ``multiprocess``: a pool of ``workers`` processes on this machine, each importing the pipeline
  once for all the users it takes (a pool whose worker dies is started again once for the users
  it had not finished);
- ``dask``: one task per user on a dask.distributed cluster (``dask_address``), on as many
  machines as it has workers; each worker must see the team root's folders (shared disk). Task
  keys carry the run id, so two runs on one cluster never share a result;
- ``celery``: one task per user for the team's Celery workers (``broker``; assets/team_celery.py),
  task ids carrying the run id, a task whose worker died given back to the queue.

Why a user is the unit of work and not a (user, day): DuckDB allows one writer per file, and a
user's days share that user's warehouse, so a user's days are one writer's sequence anyway (only
the due ones are built: the single-user unchanged-day rule); between users nothing is shared.
A user's work holds their warehouse file lock (assets/instance.py), so two runs, a team run and
a user_memory run, or a run and an `af build` never write one user's folder at once. Why the users
are not Dagster steps: a static graph of two ops per user made the code location grow with the
team (30,012 op nodes and 42.8 s to load at 5,000 users) and each step cost a process start;
dagster-dask cannot run a dynamic fan-out, and a dynamic one would still cost a process per
user. Each user's outcome is still Dagster's: a log line, an asset materialization per user.
"""


import functools
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from af_pipeline.warehouse import team as team_work
from af_pipeline.warehouse.days import log_days
from af_pipeline.warehouse.version import code_version
from assets import unchanged
from assets.instance import POOLS_YAML, appended, run_monitoring_yaml, warehouse_lock
from assets.sensors import days_needing_publish
from capture.errors import UserError
from capture.home import Home, private_files
from capture.log import EventLog
from capture.team import Member, Team
from certification import team as team_cert

EXECUTORS = ("multiprocess", "dask", "celery")


def step_name(user: str) -> str:
    """A Dagster-safe op name part for a user name (op names allow [A-Za-z0-9_] only)."""
    safe = re.sub(r"[^a-z0-9_]", "_", user)
    return safe if safe == user else f"{safe}_{hashlib.sha256(user.encode()).hexdigest()[:6]}"


def certify_user(member: Member, unchanged_days: list[str] | None = None) -> dict[str, Any]:
    """The single-user certification of one user's folder (assets/certify.run_certify), as a library.

    ``unchanged_days``: days this run did not build because they are published from the same
    sealed segments by this code (assets/unchanged.py). Their entries in the user's certificate
    are carried over when that certificate was made by this code version and passed them: only
    the due days are judged again. With none due and the log's chain head unchanged, the
    certificate stands as it is and nothing runs."""
    from assets.certify import run_certify, select_days

    home = member.home
    days = select_days(home, None, None)
    previous = _previous_certificate(home)
    carried = _carried(previous, unchanged_days or [])
    standing = _standing(member, previous, days, carried)
    if standing is not None:
        return standing
    due = [d for d in days if d not in carried]
    if not due:  # every day carried, but the chain moved on (an amendment, a forget): judge them all
        carried, due = {}, days
    cert = run_certify(home, due, carried=carried)
    # the run judges every day between the first and the last due day (one range run)
    judged = sum(1 for entry in cert["days"].values() if not entry.get("carried"))
    return {**team_cert.summary(member.user, cert), "days_judged": judged}


def _previous_certificate(home: Home) -> dict[str, Any] | None:
    """The user's certificate.json when this code version made it, else None."""
    import json

    try:
        cert = json.loads(home.certificate_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return cert if isinstance(cert, dict) and cert.get("code_version") == code_version() else None


def _standing(member: Member, previous: dict[str, Any] | None, days: list[str],
              carried: dict[str, Any]) -> dict[str, Any] | None:
    """The user's line from ``previous`` when that certificate stands as it is: it carries a
    passing entry for every day of the log (``carried``, from _carried) and certified the log's
    chain head as it is now. Else None: something is to be judged."""
    if previous is None or any(d not in carried for d in days):
        return None
    if (previous.get("log") or {}).get("chain_head") != EventLog(member.home).chain_head():
        return None
    return {**team_cert.summary(member.user, previous), "reused": True}


def _carried(previous: dict[str, Any] | None, unchanged_days: list[str]) -> dict[str, Any]:
    """The previous certificate's passing entries of the unchanged days (``previous``: the user's
    certificate made by this code version, from _previous_certificate)."""
    if previous is None or not unchanged_days:
        return {}
    entries = previous.get("days") or {}
    return {d: entries[d] for d in unchanged_days if isinstance(entries.get(d), dict) and entries[d].get("passed")}


FAILED = "failed"  # a build step's output when the user's build raised: the error


def build_due_days(member: Member) -> dict[str, Any]:
    """Build the user's days that are due: every day of their log but those published from the
    same sealed segments by this code version (assets/unchanged.py, the single-user rule), and
    record each built day so that the next run can skip it. Call under the warehouse lock."""
    from assets.certify import unchanged_days

    home = member.home
    todo, skipped = unchanged_days(home, log_days(home)) if home.exists() else ([], [])

    def record(con: Any, day: str, version: str, published: dict[str, Any]) -> None:
        unchanged.record_published(con, home.published_dir, day, version, published)

    out = (team_work.build_user(home, todo, on_built=record) if todo or not home.exists()
           else {"days": {}, "code_version": code_version()})
    return {**out, "unchanged": skipped}


def user_verdict(member: Member, built: dict[str, Any]) -> dict[str, Any]:
    """One user's line in the team certificate: certified on their own folder, "pending" with no
    capture yet, "fail" naming the stage when the build or the certification raised (and then
    their own certificate.json says fail too). Never raises: one user's failure stays theirs."""
    if FAILED in built:
        return _failed(member, "build", built[FAILED]["kind"], built[FAILED]["message"])
    if not built.get("days") and not built.get("unchanged") and _no_capture(member):
        return team_cert.pending(member.user)
    try:
        return certify_user(member, list(built.get("unchanged", [])))
    except Exception as exc:  # noqa: BLE001 - reported in the user's certificate and the team's
        return _failed(member, "certification", type(exc).__name__, str(exc))


def _failed(member: Member, stage: str, kind: str, message: str) -> dict[str, Any]:
    """Write the user's failing certificate (certification/team.failed) into their folder; their line."""
    from assets.certify import CERTIFICATE_VERSION, write_certificate

    cert, line = team_cert.failed(member.user, stage, kind, message)
    if member.home.root.is_dir():
        write_certificate(member.home, {"certificate_version": CERTIFICATE_VERSION, **cert})
    return line


def _no_capture(member: Member) -> bool:
    """Nothing ever landed in the user's log: no day and no file under log/ (a log whose files
    are there but whose days cannot be named is damaged, not new)."""
    home = member.home
    if not home.exists() or log_days(home):
        return False
    log = EventLog(home).dir
    return not log.is_dir() or not any(p.is_file() for p in log.rglob("*") if not p.name.startswith("."))


def _problem(verdict: dict[str, Any]) -> str:
    return f": {verdict['problem']}" if verdict.get("problem") else ""


class TeamRoot(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The team root a code location serves (``AF_TEAM``), injected into the team's ops."""

    root: str


class TeamWork(dg.Config):
    """Where the users' work of a team run goes (the Launchpad's op config; `af team build` flags)."""

    executor: str = "multiprocess"  # multiprocess: worker processes here; dask: a dask.distributed cluster;
    # celery: the team's Celery workers (assets/team_celery.py)
    workers: int = 2  # multiprocess: users at once
    dask_address: str = ""  # dask: the scheduler, e.g. tcp://10.0.0.5:8786
    broker: str = ""  # celery: the broker and result backend, e.g. redis://10.0.0.6:6379/0


def user_work(root: str, user: str, certify: bool, run_id: str) -> dict[str, Any]:
    """One user's share of a team run, in a worker (a process of the pool or a dask worker): their
    due days built and, with ``certify``, certified, under their warehouse lock (so another run
    or a user_memory run of the same user waits). Never raises: one user's failure stays theirs."""
    private_files()
    member = Team(root).member(user)
    said: list[str] = []
    verdict = None
    try:
        with warehouse_lock(member.home, f"team run {run_id[:8]}", said.append):
            built = {"user": user, **build_due_days(member)}
            if certify:
                verdict = user_verdict(member, built)
    except Exception as exc:  # noqa: BLE001 - reported in the user's certificate and the team's
        built = {"user": user, FAILED: {"kind": type(exc).__name__, "message": str(exc)}}
        if certify:
            verdict = user_verdict(member, built)
    return {"user": user, "said": said, "verdict": verdict, FAILED: built.get(FAILED), "worker": _worker(),
            "days built": len(built.get("days", {})), "days unchanged": len(built.get("unchanged", []))}


def _worker() -> str:
    """host:pid of the process doing a user's work (in the run's log: which machine did what)."""
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def _lost(root: str, user: str, certify: bool, why: str) -> dict[str, Any]:
    """A user whose worker died (or whose task the cluster gave up on): failed, in their own
    certificate and the team's line, as a failing build would be."""
    built = {"user": user, FAILED: {"kind": "WorkerLost", "message": why}}
    verdict = user_verdict(Team(root).member(user), built) if certify else None
    return {"user": user, "said": [], "verdict": verdict, FAILED: built[FAILED], "days built": 0, "days unchanged": 0}


RETRIES = 1  # a pool whose worker died is started again once for the users it had not finished


def _on_processes(root: str, users: list[str], certify: bool, run_id: str, workers: int,
                  warn: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    """Each user's work in a pool of ``workers`` processes on this machine (fresh interpreters:
    each imports the pipeline once for all the users it takes, instead of once per step)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    todo, tries = list(users), 0
    while todo:
        lost: list[str] = []
        with ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo))),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(user_work, root, u, certify, run_id): u for u in todo}
            for future in as_completed(futures):
                try:
                    yield future.result()
                except BrokenProcessPool:
                    lost.append(futures[future])
        todo, tries = sorted(lost), tries + 1
        if todo:
            warn(f"a worker process of the pool ended (killed, or out of memory) before {len(todo)} user(s) "
                 f"finished: {', '.join(todo)}" + ("; starting the pool again for them" if tries <= RETRIES else ""))
        if todo and tries > RETRIES:
            for u in todo:
                yield _lost(root, u, certify, "its worker process ended before it finished, twice")
            return


def _on_dask(root: str, users: list[str], certify: bool, run_id: str, address: str) -> Iterator[dict[str, Any]]:
    """Each user's work as one task on a dask.distributed cluster. Task keys carry the run id: two
    runs on one cluster (two teams, or a nightly and a manual run of one team) never share a
    result, which dagster-dask's keys of job and step name did (dagster-io/dagster#21418)."""
    from dask.distributed import Client, as_completed

    with Client(address, timeout="60s") as client:
        futures = {client.submit(user_work, root, u, certify, run_id, key=f"af-team-{run_id}-{step_name(u)}",
                                 pure=False): u for u in users}
        for future in as_completed(list(futures)):
            try:
                yield future.result()
            except Exception as exc:  # noqa: BLE001 - KilledWorker and the like: that user's failure
                yield _lost(root, futures[future], certify, f"the cluster gave up on its task ({type(exc).__name__})")


CELERY_POLL_S = 0.5  # s between looks at the users' task states in the result backend
CELERY_TASK = "af_team.user_work"  # user_work, as the team's Celery workers register it (assets/team_celery.py)


def _on_celery(root: str, users: list[str], certify: bool, run_id: str, broker: str) -> Iterator[dict[str, Any]]:
    """Each user's work as one task for the team's Celery workers (assets/team_celery.py), its id
    carrying the run id; their outcomes as they come in. Sent by name: this side needs no worker
    code, only the broker."""
    import time

    from celery import Celery

    app = Celery("af_team_client", broker=broker, backend=broker)
    pending = {app.send_task(CELERY_TASK, args=[root, u, certify, run_id], task_id=f"af-team-{run_id}-{step_name(u)}"): u
               for u in users}
    try:
        while pending:
            done = [r for r in pending if r.ready()]
            for result in done:
                user = pending.pop(result)
                try:
                    yield result.get(propagate=True)
                except Exception as exc:  # noqa: BLE001 - the task failed outside user_work's own net
                    yield _lost(root, user, certify, f"its Celery task failed ({type(exc).__name__})")
                finally:
                    result.forget()  # the backend keeps no result of ours after the run read it
            if pending and not done:
                time.sleep(CELERY_POLL_S)
    finally:
        for result in pending:  # the run stopped early: the users not done are not left queued
            result.revoke()


def _settled(member: Member, certify: bool) -> dict[str, Any] | None:
    """What a user with nothing due contributes, decided here without a worker: no day to build
    (the single-user unchanged-day rule) and, with ``certify``, a certificate that stands as it is
    (_standing: what certify_user would reuse). None
    when anything is due, or when in doubt (the worker decides then, under the user's lock)."""
    from assets.certify import unchanged_days

    home = member.home
    try:
        days = log_days(home) if home.exists() else []
        if not days:
            return None  # pending, or a damaged log: the worker says which
        todo, skipped = unchanged_days(home, days)
        if todo:
            return None
        out: dict[str, Any] = {"user": member.user, "said": [], "verdict": None, FAILED: None, "days built": 0,
                               "days unchanged": len(skipped)}
        if not certify:
            return out
        previous = _previous_certificate(home)
        standing = _standing(member, previous, days, _carried(previous, skipped))
        return None if standing is None else {**out, "verdict": standing}
    except Exception:  # noqa: BLE001 - a warehouse being written, a log being sealed: let the worker see
        return None


def _users(context: dg.OpExecutionContext, work: TeamWork, team_root: TeamRoot, certify: bool) -> dict[str, Any]:
    """The body of the team's users step: who has work due, that work spread over the pool or the
    cluster, each user's outcome logged (and, certified, materialized as their user_memory
    partition) as it comes in."""
    private_files()
    if work.executor not in EXECUTORS:
        raise dg.Failure(description=f"unknown executor {work.executor!r}: one of {', '.join(EXECUTORS)}")
    if work.executor == "dask" and not work.dask_address:
        raise dg.Failure(description="the dask executor needs dask_address (the scheduler of the cluster)")
    if work.executor == "celery" and not work.broker:
        raise dg.Failure(description="the celery executor needs broker (the team's Celery broker, e.g. redis://...)")
    team = Team(team_root.root)
    register_users(context.instance, team)
    outcomes, due = [], []
    for m in team.members():
        settled = _settled(m, certify)
        if settled is None:
            due.append(m.user)
        else:
            outcomes.append(settled)
    context.log.info(f"{len(due)} of {len(due) + len(outcomes)} user(s) have days to build or certify; "
                     f"on {work.executor}")
    if due:
        if work.executor == "dask":
            run = _on_dask(team_root.root, due, certify, context.run_id, work.dask_address)
        elif work.executor == "celery":
            run = _on_celery(team_root.root, due, certify, context.run_id, work.broker)
        else:
            run = _on_processes(team_root.root, due, certify, context.run_id, work.workers, context.log.warning)
        for outcome in run:
            for line in outcome["said"]:
                context.log.warning(f"{outcome['user']}: {line}")
            outcomes.append(outcome)
            _report(context, outcome, team_root.root)
    for outcome in outcomes:
        if outcome["user"] not in due:
            _report(context, outcome, team_root.root)
    return {"outcomes": sorted(outcomes, key=lambda o: o["user"])}


def _report(context: dg.OpExecutionContext, outcome: dict[str, Any], root: str) -> None:
    user, failed, verdict = outcome["user"], outcome[FAILED], outcome["verdict"]
    if failed:
        context.log.error(f"{user}: the build failed: {failed['kind']}: {failed['message']}")
    else:
        where = f" (worker {outcome['worker']})" if outcome.get("worker") else ""
        context.log.info(f"{user}: built {outcome['days built']} day(s), {outcome['days unchanged']} unchanged{where}")
    if verdict is None:
        return
    say = context.log.info if verdict["verdict"] != "fail" else context.log.error
    say(f"{user}: {verdict['verdict']} ({verdict['days']} day(s)){_problem(verdict)}")
    if not failed and verdict["verdict"] != team_cert.PENDING:
        # the UI's user_memory partition for this user: built and certified by this run
        context.log_event(dg.AssetMaterialization(
            asset_key=team_assets(root).user_memory.key, partition=user,
            metadata={"days": verdict["days"], "verdict": verdict["verdict"], "days built": outcome["days built"],
                      "days unchanged": outcome["days unchanged"],
                      "days certified now": int(verdict.get("days_judged", 0))}))


@dg.op(description="Build and certify every user with days due, each in their own folder, spread over the "
       "executor's workers (processes here, or a dask cluster); users with nothing due stand as certified.")
def build_and_certify_users(context: dg.OpExecutionContext, config: TeamWork, team: TeamRoot) -> dict[str, Any]:
    return _users(context, config, team, certify=True)


@dg.op(description="Build every user with days due (no certification), spread over the executor's workers.")
def build_users(context: dg.OpExecutionContext, config: TeamWork, team: TeamRoot) -> dict[str, Any]:
    return _users(context, config, team, certify=False)


@dg.op(description="The team certificate: every user's verdict, in <team>/team-certificate.json.")
def team_certificate(context: dg.OpExecutionContext, users: dict[str, Any], team: TeamRoot) -> dict[str, Any]:
    private_files()
    verdicts = [o["verdict"] for o in users["outcomes"]]
    cert = team_cert.write(Team(team.root), verdicts)
    context.log.info(f"team: {cert['verdict']} ({cert['passed']}/{cert['users']} users pass)")
    built = [v["user"] for v in verdicts if v["verdict"] != team_cert.PENDING and v.get("days")]
    return {"verdict": cert["verdict"], "failed": cert["failed"], "built": sorted(built),
            "new_days": sum(o["days built"] for o in users["outcomes"])}


@dg.op(description="Every user built (no certification): the routines are mined over those that built.")
def all_built(users: dict[str, Any]) -> dict[str, Any]:
    return {"built": sorted(o["user"] for o in users["outcomes"] if not o[FAILED]),
            "new_days": sum(o["days built"] for o in users["outcomes"])}


ROUTINES_STAMP = ".team-routines.stamp"  # what the routine table was mined from (routines_stamp)


def routines_stamp(team: Team, users: list[str]) -> str:
    """A digest of what the team routines are mined from: the code version and, per user that
    built, their log's chain head (a sealing, an amendment or a forget changes it)."""
    from capture.files import canonical_json

    heads = {m.user: EventLog(m.home).chain_head() for m in team.members() if m.user in users}
    return hashlib.sha256(canonical_json({"code": code_version(), "users": heads}).encode("utf-8")).hexdigest()


@dg.op(description="Routines mined over the action streams of every user that built, in <team>/team-routines.json "
       "(mined again only when a user built a day or a user's log changed since the last mining).")
def team_routines(context: dg.OpExecutionContext, done: dict[str, Any], team: TeamRoot) -> dict[str, Any]:
    import json

    from capture.files import atomic_write

    private_files()
    root = Team(team.root)
    stamp = routines_stamp(root, done["built"])
    path = root.root / ROUTINES_STAMP
    if not done["new_days"] and root.routines_path.is_file() and path.is_file() and path.read_text().strip() == stamp:
        # mining every user's whole history again would give the same table: a nightly with
        # nothing new is seconds, not minutes per year of history (docs/scale.md)
        table = json.loads(root.routines_path.read_text(encoding="utf-8"))
        context.log.info(f"team routines: unchanged, no user built a day since they were mined "
                         f"({table['routines_total']} over {table['users']} users)")
        return {"routines": table["routines_total"]}
    table = write_team_routines(root, users=done["built"], warn=context.log.warning)
    atomic_write(path, (stamp + "\n").encode("utf-8"), mode=0o600)
    context.log.info(f"team routines: {table['routines_total']} over {table['users']} users")
    return {"routines": table["routines_total"]}


@dg.op(description="Fails the run when the team certificate fails (after the certificate and the routines "
       "are written), naming the users that failed.")
def team_verdict(certified: dict[str, Any], routines: dict[str, Any]) -> dict[str, Any]:
    if certified["verdict"] != "pass":
        who = ", ".join(certified["failed"]) or "no user passed"
        raise dg.Failure(description=f"the team certificate says {certified['verdict']}: {who} "
                         "(each user's certificate.json says why)")
    return {"verdict": certified["verdict"]}


@dg.graph(description="Build and certify the team's users, then the team certificate and routines.")
def team_build() -> None:
    certified = team_certificate(build_and_certify_users())
    team_verdict(certified, team_routines(certified))


@dg.graph(description="Build the team's users (no certificates), then the team routines.")
def team_build_only() -> None:
    team_routines(all_built(build_users()))


def write_team_routines(team: Team, top: int | None = 50, users: list[str] | None = None,
                        warn: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Mine the routines over the users' action streams (``users``: those that built; default
    every registered user), each warehouse read under its lock (a user being certified meanwhile
    is waited for). A user whose warehouse cannot be read is left out and named through ``warn``."""
    from af_pipeline.routines.team import mine_team  # numpy: only when the routines are mined
    from capture.files import atomic_write, canonical_json

    streams = {}
    for m in team.members():
        if users is not None and m.user not in users:
            continue
        try:
            with warehouse_lock(m.home, "team routines", warn):
                streams[m.user] = team_work.user_action_days(m.home)
        except Exception as exc:  # noqa: BLE001 - one unreadable warehouse leaves that user out, not the team
            warn(f"{m.user}: left out of the team routines: {type(exc).__name__}: {exc}")
    table = mine_team(streams, top=top)
    atomic_write(team.routines_path, (canonical_json(table) + "\n").encode("utf-8"), mode=0o600)
    return table


def team_job(root: str, certify: bool = True) -> dg.JobDefinition:
    """The whole-team job of the team at ``root``: the same few steps whatever the number of users
    (their work is spread by the users step itself, so Dagster plans and records 4 steps a run,
    not 2 per user), in-process (the users step's workers are the parallel part)."""
    graph = team_build if certify else team_build_only
    return graph.to_job(name=graph.name, resource_defs={"team": TeamRoot(root=root)},
                        executor_def=dg.in_process_executor)


def users_step(certify: bool) -> str:
    return "build_and_certify_users" if certify else "build_users"


def team_key(root: str | os.PathLike[str]) -> str:
    """The team's name within a Dagster deployment: its root folder's name and a hash of the
    root's path (``east_1a2b3c``). Several team roots can share one deployment (one Postgres,
    one webserver, one code location each): their asset keys and user partitions are apart."""
    path = Path(root).resolve()
    slug = re.sub(r"[^a-z0-9_]", "_", path.name.lower()) or "team"
    return f"{slug}_{hashlib.sha256(str(path).encode('utf-8')).hexdigest()[:6]}"


@dataclass(frozen=True)
class TeamAssets:
    """One team's partitioned definitions: its users (the dynamic partitions ``af_users_<key>``),
    the ``<key>/user_memory`` asset over them and the job that materializes one user."""

    partitions: dg.DynamicPartitionsDefinition
    user_memory: dg.AssetsDefinition
    job: Any  # what dg.define_asset_job returns (its class is not exported by dagster)


@functools.cache
def team_assets(root: str) -> TeamAssets:
    """The definitions of the team at ``root`` (made once per process: one definition each)."""
    key = team_key(root)
    users = dg.DynamicPartitionsDefinition(name=f"af_users_{key}")

    @dg.asset(name="user_memory", key_prefix=[key], partitions_def=users, group_name="team", kinds={"duckdb"},
              description="One user's memory: every day of their log built and certified in their own folder.")
    def user_memory(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        private_files()
        member = Team(root).member(context.partition_key)
        with warehouse_lock(member.home, f"team run {context.run.run_id[:8]}", context.log.warning):
            built = build_due_days(member)
        verdict = certify_user(member, built["unchanged"])
        return dg.MaterializeResult(metadata={
            "days": verdict["days"], "verdict": verdict["verdict"], "days built": len(built["days"]),
            "days unchanged": len(built["unchanged"]), "days certified now": int(verdict.get("days_judged", 0))})

    job = dg.define_asset_job(
        "user_memory_job", selection=[user_memory],
        description="Build and certify one user (a partition of the team's users): what the team_users sensor launches.")
    return TeamAssets(users, user_memory, job)


def new_users(instance: Any, team: Team) -> list[str]:
    """Registered users that are not yet partitions of the team's users, in registry order."""
    have = set(instance.get_dynamic_partitions(team_assets(str(team.root)).partitions.name))
    return [m.user for m in team.members() if m.user not in have]


def unregister_user(instance: Any, team: Team, user: str) -> bool:
    """Take a removed user out of the team's user partitions (their materializations stay in the
    instance's history); False when they were no partition."""
    name = team_assets(str(team.root)).partitions.name
    if user not in instance.get_dynamic_partitions(name):
        return False
    instance.delete_dynamic_partition(name, user)
    return True


def register_users(instance: Any, team: Team) -> None:
    """Make every registered user a partition of the team's users (added once; never removed here).
    Two runs of a new team starting together both find a user missing and both add them: the
    partitions' unique index refuses the second, which is no failure once every user is there."""
    new = new_users(instance, team)
    if not new:
        return
    try:
        instance.add_dynamic_partitions(team_assets(str(team.root)).partitions.name, new)
    except Exception:
        if new_users(instance, team):
            raise


def users_due(team: Team) -> list[tuple[str, str]]:
    """(user, run key) of users with a sealed day not yet published by this code.

    The key names the user and what is due (each due day's newest manifest entry and the code
    version), so one sealing launches one run, and a later sealing another."""
    out = []
    for m in team.members():
        due = days_needing_publish(m.home)
        if due:
            digest = hashlib.sha256("\n".join(f"{d} {h}" for d, h in sorted(due)).encode()).hexdigest()[:16]
            out.append((m.user, f"user-{m.user}-{digest}"))
    return out


def build_team_sensor(team: Team) -> dg.SensorDefinition:
    parts = team_assets(str(team.root))

    @dg.sensor(
        name="team_users", job=parts.job, minimum_interval_seconds=300,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Adds each user `af team add` registered as a partition of the team's users (no reload needed), "
        "then builds and certifies each user whose log sealed a day that is not published yet.",
    )
    def team_users(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        added = new_users(context.instance, team)
        # the partitions are added before the run requests are launched (one tick: add, then build)
        adds = [parts.partitions.build_add_request(added)] if added else []
        requests = [dg.RunRequest(run_key=key, partition_key=user, tags={"af/user": user})
                    for user, key in users_due(team)]
        if not requests:
            told = f"added {len(added)} user partition(s); " if added else ""
            return dg.SensorResult(dynamic_partitions_requests=adds, skip_reason=f"{told}every user's sealed days are published")
        return dg.SensorResult(dynamic_partitions_requests=adds, run_requests=requests)

    return team_users


def build_team_definitions(team: Team) -> dg.Definitions:
    """The team's code location: the same definitions for 1 user or 5,000 (users are partitions
    and the users step's work items, never ops), so loading it does not read the registry."""
    private_files()
    jobs = [team_job(str(team.root), certify) for certify in (True, False)]
    parts = team_assets(str(team.root))
    return dg.Definitions(assets=[parts.user_memory], jobs=[*jobs, parts.job], sensors=[build_team_sensor(team)])


@dg.definitions
def defs() -> dg.Definitions:
    return build_team_definitions(Team(os.environ["AF_TEAM"]))


# --- The team's instance: run and event storage in Postgres across machines --------------------

PG_URL_ENV = "AF_TEAM_PG_URL"
_YAML_HEAD = (
    "# Written by activity-frames (af team). Safe to edit; `af team` only writes it when it is missing.\n"
    + POOLS_YAML
)
# Postgres keeps run and event storage for every worker and run at once (SQLite would serialize
# them on one file and cannot be shared between machines). The URL is read from the environment
# so no password lands in a file.
_YAML_POSTGRES = f"""\
storage:
  postgres:
    postgres_url:
      env: {PG_URL_ENV}
"""


# Run monitoring (the team deployment's daemon): a run whose process or storage went away (a
# Postgres outage leaves it STARTED: its end could not be written) is failed once it has run
# longer than max_runtime_seconds, and a run launched but never started after
# start_timeout_seconds. 12 hours: a nightly of thousands of users fits; set it to what your
# team's runs take, with headroom.
TEAM_MAX_RUNTIME_S = 12 * 3600
TEAM_RUN_MONITORING_YAML = run_monitoring_yaml(
    "A run whose process or storage went away is failed after max_runtime_seconds (docs/scale.md).",
    TEAM_MAX_RUNTIME_S)


def prepare_team_instance(team: Team, postgres: bool = False) -> Path:
    """``<team>/dagster`` with its dagster.yaml (Postgres storage when asked), if missing; one
    written by an earlier release without ``run_monitoring`` gets that section added."""
    from capture.files import atomic_write

    folder = team.dagster_home
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = folder / "dagster.yaml"
    if not config.exists():
        text = _YAML_HEAD + TEAM_RUN_MONITORING_YAML + (_YAML_POSTGRES if postgres else "")
        atomic_write(config, text.encode("utf-8"), mode=0o600)
    else:
        text = config.read_text(encoding="utf-8")
        if "run_monitoring" not in text:  # present (or named in a comment) is left alone
            atomic_write(config, appended(text, TEAM_RUN_MONITORING_YAML).encode("utf-8"), mode=0o600)
    return folder


INSTANCE_LOCK = ".instance.lock"


def team_instance(team: Team) -> dg.DagsterInstance:
    """The team's Dagster instance. Opened under a lock in its folder: two `af team build` at once
    on a new team would both create its SQLite tables, and the second failed ("table ... already
    exists")."""
    import fcntl

    os.environ["DAGSTER_TELEMETRY_DISABLED"] = "1"
    folder = prepare_team_instance(team)
    fd = os.open(folder / INSTANCE_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for the few seconds of a first creation at most
        return dg.DagsterInstance.from_config(str(folder))
    finally:
        os.close(fd)


@dataclass
class TeamOutcome:
    ok: bool
    run_id: str
    executor: str
    seconds: float
    failures: list[str] = field(default_factory=list)


def run_team(team: Team, executor: str = "multiprocess", workers: int = 2, dask_address: str | None = None,
             instance: dg.DagsterInstance | None = None, certify: bool = True, broker: str | None = None) -> TeamOutcome:
    """One run of the whole team: each due user built and certified on the executor's workers,
    then the team certificate and routines."""
    import time

    from assets.certify import _failures

    if executor not in EXECUTORS:
        raise UserError(f"unknown executor {executor!r}: one of {', '.join(EXECUTORS)}")
    if not team.members():
        raise UserError(f"the team at {team.root} has no users yet; add one with `af team add`")
    inst = instance or team_instance(team)
    register_users(inst, team)
    config = {"executor": executor, "workers": workers, "dask_address": dask_address or "", "broker": broker or ""}
    started = time.monotonic()
    # the console shows warnings and errors (a lock waited for, a worker lost, a user failing):
    # each step's debug events stay in the run's log, for the UI
    run_config = {"ops": {users_step(certify): {"config": config}},
                  "loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    result = team_job(str(team.root), certify).execute_in_process(run_config=run_config, instance=inst,
                                                                   raise_on_error=False)
    return TeamOutcome(result.success, result.run_id, executor, time.monotonic() - started, _failures(result))
