"""The team's Dagster definitions: every user's days built and certified, routines across users.

One code location per team root (workspace-team.yaml; ``AF_TEAM`` names the root). Users are
the dynamic partitions ``af_users`` (``af team add`` registers them): the per-user run of the
``user_memory`` asset builds and certifies one user. The ``team_build_<executor>`` jobs do the
whole team in one run, one build step and one certify step per user, then the team certificate
and the cross-user routine table; the same graph under each executor, so which one runs is a
matter of configuration (``af team build --executor``):

- ``multiprocess``: steps in subprocesses of one machine (``max_concurrent`` of them);
- ``dask``: steps on a dask.distributed cluster (``cluster: {existing: {address: ...}}``), on as
  many machines as it has workers; each worker must see the team root's folders (shared disk).

Why steps are per user and not per (user, day): DuckDB allows one writer per file, and a
user's days share that user's warehouse, so a user's days are one writer's sequence anyway;
between users there is nothing shared, which is what the executors spread. The graph is static
(built from the registry when the code location loads: dagster-dask runs no dynamic fan-out).
Under the multiprocess executor a step's pool is its user's (``af_user:<name>``, one slot each
by the instance's dagster.yaml), so two runs never write one user's warehouse at once; the
dask executor enforces no pools, and there (and for processes outside Dagster) the user's
warehouse file lock (assets/instance.py) holds the same line.
"""


import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from af_pipeline.routines.team import mine_team
from af_pipeline.warehouse import team as team_work
from af_pipeline.warehouse.days import log_days
from af_pipeline.warehouse.version import code_version
from assets import unchanged
from assets.instance import POOLS_YAML, warehouse_lock
from assets.sensors import days_needing_publish
from capture.errors import UserError
from capture.home import Home, private_files
from capture.log import EventLog
from capture.team import Member, Team
from certification import team as team_cert

USERS = dg.DynamicPartitionsDefinition(name="af_users")
EXECUTORS = ("multiprocess", "dask")
USER_POOL_PREFIX = "af_user:"


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
    due = [d for d in days if d not in carried]
    if not due:
        if previous is not None and (previous.get("log") or {}).get("chain_head") == EventLog(home).chain_head():
            return {**team_cert.summary(member.user, previous), "reused": True}
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


def _pool(member: Member, pooled: bool) -> str | None:
    return f"{USER_POOL_PREFIX}{member.user}" if pooled else None


def _op_suffix(pooled: bool) -> str:
    # The unpooled (dask) variant of a user's op is another definition: one code location holds
    # both executors' jobs, and Dagster requires one definition per op name in it.
    return "" if pooled else "_unpooled"


def _build_op(member: Member, pooled: bool) -> dg.OpDefinition:
    name = step_name(member.user)

    @dg.op(name=f"build_{name}{_op_suffix(pooled)}", pool=_pool(member, pooled), tags={"af/user": member.user},
           description=f"Build every day of {member.user}'s log into their own warehouse and published/.")
    def build(context: dg.OpExecutionContext) -> dict[str, Any]:
        private_files()
        home = member.home
        try:
            with warehouse_lock(home, f"team run {context.run_id[:8]}", context.log.warning):
                out = build_due_days(member)
        except Exception as exc:  # noqa: BLE001 - a user's failure is theirs: the team's steps go on (below)
            context.log.error(f"{member.user}: the build failed: {type(exc).__name__}: {exc}")
            return {"user": member.user, FAILED: {"kind": type(exc).__name__, "message": str(exc)}}
        context.log.info(f"{member.user}: built {len(out['days'])} day(s), {len(out['unchanged'])} unchanged")
        return {"user": member.user, **out}

    return build


def _certify_op(member: Member, pooled: bool) -> dg.OpDefinition:
    name = step_name(member.user)

    @dg.op(name=f"certify_{name}{_op_suffix(pooled)}", pool=_pool(member, pooled), tags={"af/user": member.user},
           description=f"Certify {member.user}'s folder: the single-user checks, one certificate in their folder.")
    def certify(context: dg.OpExecutionContext, built: dict[str, Any]) -> dict[str, Any]:
        private_files()
        verdict = user_verdict(member, built)
        say = context.log.info if verdict["verdict"] != "fail" else context.log.error
        say(f"{member.user}: {verdict['verdict']} ({verdict['days']} day(s)){_problem(verdict)}")
        if FAILED not in built and verdict["verdict"] != team_cert.PENDING:
            # the UI's user_memory partition for this user: built and certified by this run
            context.log_event(dg.AssetMaterialization(
                asset_key=user_memory.key, partition=member.user,
                metadata={"days": verdict["days"], "verdict": verdict["verdict"],
                          "days built": len(built.get("days", {})), "days unchanged": len(built.get("unchanged", [])),
                          "days certified now": int(verdict.get("days_judged", 0))}))
        return verdict

    return certify


@dataclass
class TeamOps:
    """The op definitions of a team's jobs, made once: every job of the code location that uses an
    op uses this one definition of it (a second definition under the same name fails the load)."""

    team: Team
    users: dict[bool, tuple[dict[str, dg.OpDefinition], dict[str, dg.OpDefinition]]] = field(default_factory=dict)
    shared: dict[str, dg.OpDefinition] = field(default_factory=dict)

    def user_ops(self, pooled: bool) -> tuple[dict[str, dg.OpDefinition], dict[str, dg.OpDefinition]]:
        """(user -> build op, user -> certify op) of the pooled or unpooled variant."""
        if pooled not in self.users:
            members = self.team.members()
            self.users[pooled] = ({m.user: _build_op(m, pooled) for m in members},
                                  {m.user: _certify_op(m, pooled) for m in members})
        return self.users[pooled]

    def team_ops(self) -> dict[str, dg.OpDefinition]:
        if not self.shared:
            self.shared = _team_ops(self.team)
        return self.shared


def _team_ops(team: Team) -> dict[str, dg.OpDefinition]:
    members = team.members()
    root = str(team.root)
    inputs = [f"u_{step_name(m.user)}" for m in members]

    @dg.op(ins={name: dg.In(dict) for name in inputs},
           description="The team certificate: every user's verdict, in <team>/team-certificate.json.")
    def team_certificate(context: dg.OpExecutionContext, **verdicts: dict[str, Any]) -> dict[str, Any]:
        private_files()
        cert = team_cert.write(Team(root), list(verdicts.values()))
        context.log.info(f"team: {cert['verdict']} ({cert['passed']}/{cert['users']} users pass)")
        built = [v["user"] for v in verdicts.values() if v["verdict"] != team_cert.PENDING and v.get("days")]
        return {"verdict": cert["verdict"], "failed": cert["failed"], "built": sorted(built)}

    @dg.op(description="Routines mined over the action streams of every user that built, in "
           "<team>/team-routines.json.")
    def team_routines(context: dg.OpExecutionContext, certified: dict[str, Any]) -> dict[str, Any]:
        private_files()
        table = write_team_routines(Team(root), users=certified["built"], warn=context.log.warning)
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

    @dg.op(ins={name: dg.In(dict) for name in inputs},
           description="Every user built (no certification): the routines wait for all of them.")
    def all_built(**built: dict[str, Any]) -> dict[str, Any]:
        return {"users": len(built), "built": sorted(b["user"] for b in built.values() if FAILED not in b)}

    return {"team_certificate": team_certificate, "team_routines": team_routines, "all_built": all_built,
            "team_verdict": team_verdict}


def team_graph(team: Team, certify: bool = True, pooled: bool = True, ops: TeamOps | None = None,
               name: str | None = None) -> dg.GraphDefinition:
    ops = ops or TeamOps(team)
    builds, certifies = ops.user_ops(pooled)
    shared = ops.team_ops()
    team_certificate, team_routines = shared["team_certificate"], shared["team_routines"]
    team_verdict, all_built = shared["team_verdict"], shared["all_built"]

    @dg.graph(name=name or ("team_build" if certify else "team_build_only"))
    def graph() -> None:
        if certify:
            verdicts = {f"u_{step_name(u)}": certifies[u](builds[u]()) for u in sorted(builds)}
            certified = team_certificate(**verdicts)
            team_verdict(certified, team_routines(certified))
        else:
            team_routines(all_built(**{f"u_{step_name(u)}": builds[u]() for u in sorted(builds)}))

    return graph


def write_team_routines(team: Team, top: int | None = 50, users: list[str] | None = None,
                        warn: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Mine the routines over the users' action streams (``users``: those that built; default
    every registered user), each warehouse read under its lock (a user being certified meanwhile
    is waited for). A user whose warehouse cannot be read is left out and named through ``warn``."""
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


def _executor(kind: str) -> dg.ExecutorDefinition:
    if kind == "multiprocess":
        return dg.multiprocess_executor
    if kind == "dask":
        from dagster_dask import dask_executor

        return dask_executor  # type: ignore[no-any-return]
    raise ValueError(f"unknown executor {kind!r} (one of {', '.join(EXECUTORS)})")


def team_job_name(root: str, kind: str, certify: bool = True) -> str:
    """``team_build_<executor>`` (``team_build_only_...`` without certification). On dask the name
    also carries a key of the team root: dagster-dask names a step's task ``<job>.<step>`` on the
    cluster (dagster-io/dagster#21418), so two teams' runs at once, with the same user names,
    would be handed each other's results unless their job names differ."""
    name = f"team_build_{kind}" if certify else f"team_build_only_{kind}"
    if kind == "dask":
        name += "_" + hashlib.sha256(str(Path(root).resolve()).encode("utf-8")).hexdigest()[:8]
    return name


def team_job(root: str, kind: str, certify: bool = True, ops: TeamOps | None = None) -> dg.JobDefinition:
    """The whole-team job on one executor (module level: workers rebuild it from these args).
    ``ops``: the code location's op definitions, shared by all its jobs."""
    name = team_job_name(root, kind, certify)
    # dagster-dask neither enforces pools nor can ship a run that names them (dask walks the run
    # record's tuples, and Dagster's op-concurrency record refuses iteration): on dask the one
    # writer per warehouse is the user's warehouse file lock, and one step chain per user per run.
    graph = team_graph(Team(root), certify, pooled=kind != "dask", ops=ops, name=name)
    return graph.to_job(name=name, executor_def=_executor(kind))


@dg.asset(partitions_def=USERS, group_name="team", kinds={"duckdb"},
          description="One user's memory: every day of their log built and certified in their own folder.")
def user_memory(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    private_files()
    team = Team(os.environ["AF_TEAM"])
    member = team.member(context.partition_key)
    with warehouse_lock(member.home, f"team run {context.run.run_id[:8]}", context.log.warning):
        built = build_due_days(member)
    verdict = certify_user(member, built["unchanged"])
    return dg.MaterializeResult(metadata={
        "days": verdict["days"], "verdict": verdict["verdict"], "days built": len(built["days"]),
        "days unchanged": len(built["unchanged"]), "days certified now": int(verdict.get("days_judged", 0))})


def new_users(instance: Any, team: Team) -> list[str]:
    """Registered users that are not yet partitions of ``af_users``, in registry order."""
    have = set(instance.get_dynamic_partitions(USERS.name))
    return [m.user for m in team.members() if m.user not in have]


def register_users(instance: Any, team: Team) -> None:
    """Make every registered user a partition of ``af_users`` (added once; never removed here)."""
    new = new_users(instance, team)
    if new:
        instance.add_dynamic_partitions(USERS.name, new)


USER_MEMORY_JOB = dg.define_asset_job(
    "user_memory_job", selection=[user_memory],
    description="Build and certify one user (a partition of af_users): what the team_users sensor launches.",
)


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
    @dg.sensor(
        name="team_users", job=USER_MEMORY_JOB, minimum_interval_seconds=300,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Adds each user `af team add` registered as a partition of af_users (no reload needed), "
        "then builds and certifies each user whose log sealed a day that is not published yet.",
    )
    def team_users(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        added = new_users(context.instance, team)
        # the partitions are added before the run requests are launched (one tick: add, then build)
        adds = [USERS.build_add_request(added)] if added else []
        requests = [dg.RunRequest(run_key=key, partition_key=user, tags={"af/user": user})
                    for user, key in users_due(team)]
        if not requests:
            told = f"added {len(added)} user partition(s); " if added else ""
            return dg.SensorResult(dynamic_partitions_requests=adds, skip_reason=f"{told}every user's sealed days are published")
        return dg.SensorResult(dynamic_partitions_requests=adds, run_requests=requests)

    return team_users


def build_team_definitions(team: Team) -> dg.Definitions:
    private_files()
    ops = TeamOps(team)
    jobs = [team_job(str(team.root), kind, certify, ops) for kind in EXECUTORS for certify in (True, False)]
    return dg.Definitions(assets=[user_memory], jobs=[*jobs, USER_MEMORY_JOB], sensors=[build_team_sensor(team)])


@dg.definitions
def defs() -> dg.Definitions:
    return build_team_definitions(Team(os.environ["AF_TEAM"]))


# --- The team's instance: run and event storage in Postgres across machines --------------------

PG_URL_ENV = "AF_TEAM_PG_URL"
_YAML_HEAD = (
    "# Written by activity-frames (af team). Safe to edit; `af team` only writes it when it is missing.\n"
    + POOLS_YAML
    + "# One slot per pool: each user's steps are in the pool af_user:<name>, so one writer per warehouse.\n"
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


def prepare_team_instance(team: Team, postgres: bool = False) -> Path:
    """``<team>/dagster`` with its dagster.yaml (Postgres storage when asked), if missing."""
    from capture.files import atomic_write

    folder = team.dagster_home
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = folder / "dagster.yaml"
    if not config.exists():
        atomic_write(config, (_YAML_HEAD + (_YAML_POSTGRES if postgres else "")).encode("utf-8"), mode=0o600)
    return folder


def team_instance(team: Team) -> dg.DagsterInstance:
    os.environ["DAGSTER_TELEMETRY_DISABLED"] = "1"
    return dg.DagsterInstance.from_config(str(prepare_team_instance(team)))


@dataclass
class TeamOutcome:
    ok: bool
    run_id: str
    executor: str
    seconds: float
    failures: list[str] = field(default_factory=list)


def run_team(team: Team, executor: str = "multiprocess", executor_config: dict[str, Any] | None = None,
             instance: dg.DagsterInstance | None = None, certify: bool = True) -> TeamOutcome:
    """One run of the whole team on the chosen executor: build, certify, team certificate, routines."""
    import time

    from assets.certify import _failures

    if executor not in EXECUTORS:
        raise UserError(f"unknown executor {executor!r}: one of {', '.join(EXECUTORS)}")
    if not team.members():
        raise UserError(f"the team at {team.root} has no users yet; add one with `af team add`")
    inst = instance or team_instance(team)
    register_users(inst, team)
    recon = dg.build_reconstructable_job("assets.team", "team_job", reconstructable_args=(str(team.root), executor, certify))  # type: ignore[arg-type]
    with _one_dask_run(team, inst, team_job_name(str(team.root), executor, certify)) if executor == "dask" \
            else contextlib.nullcontext():
        started = time.monotonic()
        result = dg.execute_job(recon, instance=inst, run_config={"execution": {"config": executor_config or {}}},
                                raise_on_error=False)
    return TeamOutcome(result.success, result.run_id, executor, time.monotonic() - started, _failures(result))


DASK_LOCK = "dask-run.lock"
_IN_PROGRESS = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED")


@contextlib.contextmanager
def _one_dask_run(team: Team, inst: dg.DagsterInstance, job_name: str) -> Iterator[None]:
    """One dask run of a team's job at a time: a second one would share the first's task keys on
    the cluster (team_job_name) and be handed its results. Held by a lock file in the team root
    (this machine) and refused when the instance records one in progress (another machine)."""
    import fcntl

    path = team.root / DASK_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"another dask run of the team at {team.root} is in progress on this machine; "
                            "wait for it: two at once would be handed each other's results by dagster-dask") from None
        statuses = [dg.DagsterRunStatus[s] for s in _IN_PROGRESS]
        running = inst.get_run_records(filters=dg.RunsFilter(job_name=job_name, statuses=statuses), limit=1)
        if running:
            run = running[0].dagster_run
            raise UserError(f"dask run {run.run_id[:8]} of the team at {team.root} is {run.status.value.lower()} "
                            "(by its instance); wait for it, or mark it failed in the UI if its process is gone: "
                            "two at once would be handed each other's results by dagster-dask")
        yield
    finally:
        os.close(fd)
