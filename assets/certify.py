"""Running builds and certification through Dagster, and writing the certificate.

``af build`` and ``af certify`` call these. Both use the data folder's own Dagster instance
(``<home>/dagster``, telemetry off) and the in-process executor. A build over a day range is one
run (a single-run backfill); certification runs the checks-only ``certify`` job once over the
whole day range, each check recording its result on every day partition. For one day that is
exactly what ``dagster job execute -m assets.definitions -a defs -j certify --tags
'{"dagster/partition": "DAY"}'`` does from a shell.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from af_pipeline.warehouse import publish
from af_pipeline.warehouse.days import log_days
from af_pipeline.warehouse.version import code_version
from capture.errors import UserError, no_space
from capture.files import atomic_write
from capture.home import Home
from capture.log import EventLog
from capture.timeutil import parse_day
from certification import history, rebuild

CERTIFICATE_VERSION = 1
# The console shows warnings and errors only: a range run records hundreds of events (one per
# check and day), and printing each as a debug line costs seconds. The run's full event log is
# still stored in the instance for the UI.
_QUIET_RUN = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
# `af build` and `af certify` say what failed themselves (each step, day and check with its reason):
# Dagster's own ERROR lines and stack traces stay in the run's log (the UI), not on the console.
_SILENT = {"console": {"config": {"log_level": "CRITICAL"}}}


def _run_config(verbose: bool, stages: bool) -> dict[str, Any]:
    """Dagster's console log in full (--verbose), else silent with one line per stage (build)."""
    if verbose:
        return {}
    loggers: dict[str, Any] = dict(_SILENT)
    if stages:
        loggers["progress"] = {"config": {"enabled": True}}
    return {"loggers": loggers}
Progress = Callable[[str], None]


def _quiet() -> None:
    # Partitioned asset checks are a Dagster preview feature; the warning is not for our users.
    warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec.*")
    warnings.filterwarnings("ignore", category=DeprecationWarning)


def select_days(home: Home, first: str | None, last: str | None) -> list[str]:
    """The log's days within [first, last] (each defaults to the log's first / last day)."""
    for label, value in (("--from", first), ("--to", last)):
        if value is not None:
            try:
                parse_day(value)
            except ValueError as exc:
                raise UserError(f"{label}: {exc}") from None
    days = log_days(home)
    if not days:
        raise UserError(f"the event log in {home.root} has no days yet; import a capture first (`af import`)")
    lo, hi = first or days[0], last or days[-1]
    if lo > hi:
        raise UserError(f"--from {lo} is after --to {hi}")
    chosen = [d for d in days if lo <= d <= hi]
    if not chosen:
        raise UserError(f"the event log has no days between {lo} and {hi} (it has {days[0]} .. {days[-1]})")
    return chosen


@dataclass
class BuildOutcome:
    ok: bool
    days: list[str]
    seconds: float
    run_id: str  # "" when every day was unchanged and no run was made
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # unchanged days left as they were (assets/unchanged.py)
    published: list[str] = field(default_factory=list)  # days whose files this run wrote or found current
    withheld: dict[str, str] = field(default_factory=dict)  # day -> why it was not published


def _failures(result: Any) -> list[str]:
    """One line per failed step, and per failed check and day: '<day> <check>: <reason>'."""
    out = []
    for ev in result.all_events:
        if ev.event_type_value == "ASSET_CHECK_EVALUATION":
            data = ev.asset_check_evaluation_data
            if not data.passed:
                where = f"{data.partition} " if data.partition else ""
                out.append(f"{where}{data.check_name}: {data.description or 'failed'}")
        elif ev.event_type_value == "STEP_FAILURE":
            err = ev.step_failure_data.error
            msg = err.message.strip().splitlines()[0] if err else "failed"
            said = _user_error_in(err)  # a sentence of ours (a bad categories.json, ...), not Dagster's wrapper
            if said:
                msg = said
            full = _no_space_in(err)
            if full:
                msg = full
            if "blocking asset check" not in msg:
                out.append(f"step {ev.step_key}: {msg}")
    return out


def _interrupted(result: Any) -> bool:
    """Whether a run stopped because of a SIGINT (Ctrl-C): Dagster catches it and fails the
    step it interrupted with DagsterExecutionInterruptedError, then ends the run."""
    from assets.dagster_adapter import interruption

    return any(ev.event_type_value == "STEP_FAILURE" and interruption(ev.step_failure_data.error)
               for ev in result.all_events)


# The errors whose message is a sentence for the user (capture/errors.py and its subclasses).
_SENTENCES = ("UserError", "SettingsError", "CheckFailed")


def _user_error_in(err: Any) -> str | None:
    """The message of one of our own errors in a step error's chain (Dagster wraps what a step
    raises in DagsterExecutionStepExecutionError, whose message names only the op)."""
    seen = 0
    while err is not None and seen < 20:
        if getattr(err, "cls_name", None) in _SENTENCES:
            text = (getattr(err, "message", "") or "").strip()
            # "capture.errors.UserError: <sentence>\n": the sentence
            return text.split(": ", 1)[1] if ": " in text.splitlines()[0] else text
        err = getattr(err, "cause", None) or getattr(err, "context", None)
        seen += 1
    return None


def _no_space_in(err: Any) -> str | None:
    """A full disk anywhere in a step error's chain (Dagster wraps the OSError / DuckDB error)."""
    seen = 0
    while err is not None and seen < 20:
        found = no_space(getattr(err, "message", "") or "")
        if found:
            return found
        err = getattr(err, "cause", None) or getattr(err, "context", None)
        seen += 1
    return None


def unchanged_days(home: Home, days: list[str]) -> tuple[list[str], list[str]]:
    """(days to build, unchanged days) before any run: the warehouse is read, not written."""
    import duckdb

    from assets import unchanged

    stored: dict[str, tuple[str, str, str]] = {}
    if home.warehouse_path.exists():
        con = duckdb.connect(str(home.warehouse_path), read_only=True)
        try:
            stored = unchanged.stored_state(con, days)
        finally:
            con.close()
    return unchanged.split(home.published_dir, EventLog(home), days, code_version(), stored)


def run_build(
    home: Home, days: list[str], progress: Progress = lambda _m: None, verbose: bool = False, stages: bool = False,
    force: bool = False,
) -> BuildOutcome:
    """Materialize every asset for the days in one run (single-run backfill, in-process).

    ``days`` are days of the log (select_days). Days published from the segments the log holds
    now by this code version are skipped (assets/unchanged.py) unless ``force``; the run covers
    the day partitions from the first day left to build to the last (unchanged days in between
    are skipped by its steps), and no run is made when none is left. ``stages`` prints one line
    per finished step; ``verbose`` prints Dagster's own console log instead."""
    _quiet()
    from assets.dagster_adapter import quick_run_storage
    from assets.definitions import BUILD_JOB, build_definitions  # Dagster (~2 s): only when a run is made
    from assets.instance import exclusive_run, instance
    from assets.partitions import keys_in_range, register_days

    inst = instance(home)
    defs = build_definitions(home)
    job = defs.resolve_job_def(BUILD_JOB)
    with exclusive_run(home, inst, "af build", progress), quick_run_storage(inst):
        register_days(inst, log_days(home))  # a range run spans the partitions between its ends
        days = keys_in_range(inst, days[0], days[-1])  # calendar days without capture are no partitions
        if not days:
            raise UserError(f"the event log in {home.root} has no days in the range to build")
        started = time.monotonic()
        todo, skipped = (days, []) if force else unchanged_days(home, days)
        if skipped:
            from assets.unchanged import REASON

            progress(f"skipping {len(skipped)} unchanged day(s), {REASON} ({code_version()}); "
                     "`af build --force` rebuilds them")
        if not todo:
            return BuildOutcome(True, days, time.monotonic() - started, "", [], skipped)
        todo = [d for d in days if todo[0] <= d <= todo[-1]]
        progress(f"building {len(todo)} day(s) {todo[0]} .. {todo[-1]} in one Dagster run")
        tags = {"dagster/asset_partition_range_start": todo[0], "dagster/asset_partition_range_end": todo[-1]}
        if force:
            from assets.unchanged import FORCE_TAG

            tags[FORCE_TAG] = "true"
        try:
            with _without_storage_noise(verbose):
                result = job.execute_in_process(
                    instance=inst, tags=tags, raise_on_error=False, run_config=_run_config(verbose, stages)
                )
        except Exception as exc:  # the run's own storage failed: a full disk is said as such
            full = _disk_full(home, exc)
            if full is None:
                raise
            return BuildOutcome(False, days, time.monotonic() - started, "not stored", [full], skipped)
    if _interrupted(result):
        # Ctrl-C: nothing failed; `af` says "interrupted" and exits 130, the run stays in the
        # instance (the UI) as failed, and the next build does what this one did not
        raise KeyboardInterrupt
    failures = _failures(result)
    published, withheld = _published(result)
    return BuildOutcome(result.success and not failures, days, time.monotonic() - started, result.run_id, failures,
                        skipped, published, withheld)


def _published(result: Any) -> tuple[list[str], dict[str, str]]:
    """(days published, {day: why not}) from the run's published_day materializations."""
    from assets.unchanged import UNCHANGED
    published, withheld = [], {}
    for ev in result.all_events:
        if ev.event_type_value != "ASSET_MATERIALIZATION":
            continue
        mat = ev.event_specific_data.materialization
        if mat.asset_key.to_user_string() != "published_day" or not mat.partition:
            continue
        reason = mat.metadata.get("withheld")
        if reason is not None:
            withheld[mat.partition] = str(reason.value)
        elif UNCHANGED not in mat.metadata and "skipped" not in mat.metadata:  # not built again: not published now
            published.append(mat.partition)
    return sorted(published), dict(sorted(withheld.items()))


# Below this much free space a SQLite "disk I/O error" is the disk being full: SQLite reports a
# failed extension of its WAL or shared-memory file that way, not as ENOSPC.
_FULL_BELOW_BYTES = 1 << 20


def _disk_full(home: Home, exc: BaseException) -> str | None:
    seen: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(seen) < 20 and cause not in seen:  # Dagster and SQLAlchemy wrap it
        seen.append(cause)
        cause = cause.__cause__ or cause.__context__
    for e in seen:
        found = no_space(e)
        if found:
            return found
    if any("disk I/O error" in str(e) or "database or disk is full" in str(e) for e in seen):
        try:
            free = shutil.disk_usage(home.root).free
        except OSError:
            return None
        if free < _FULL_BELOW_BYTES:
            return f"no space left on device at {home.root} ({free:,} bytes free; the Dagster run's storage could not grow)"
    return None


def full_disk_sentence(home: Home, found: str) -> str:
    """One sentence naming the folder that is full, from no_space's "no space left on device at
    PATH" (PATH the file being written, a folder, or none known: the data folder)."""
    where = found.removeprefix("no space left on device at ").strip()
    extra = ""
    if " (" in where:
        where, extra = where.split(" (", 1)
        extra = " (" + extra
    if not where or where == "the data folder":
        path = Path(home.root)
    else:
        path = Path(where)
    folder = path if path.is_dir() else path.parent
    what = f" (writing {path.name})" if path != folder else ""
    return (f"no space left on device: the file system holding {folder} is full{what}{extra}; "
            "free some space and run it again")


def disk_full(home: Home, exc: BaseException) -> str | None:
    """full_disk_sentence of an exception that is a full disk (anywhere in its chain), else None."""
    found = _disk_full(home, exc)
    return full_disk_sentence(home, found) if found else None


class _StorageNoise(io.TextIOBase):
    """sys.stderr during a run, without the lines Dagster writes itself when it cannot store a
    log record or an event batch (SQLAlchemy's "database or disk is full", its SQL and its link:
    Dagster then stores them one by one, or fails the run): af build and af certify
    say what happened in one sentence instead. Everything else goes through."""

    NOISE = ("Exception while writing logger call to event log", "Exception while storing event batch",
             "Falling back to storing multiple single-event storage requests")

    def __init__(self, out: Any) -> None:
        super().__init__()
        self.out = out
        self.dropped = 0

    def write(self, text: str) -> int:
        if any(n in text for n in self.NOISE):
            self.dropped += 1
            return len(text)
        return int(self.out.write(text))

    def flush(self) -> None:
        self.out.flush()

    def fileno(self) -> int:
        return int(self.out.fileno())


@contextlib.contextmanager
def _without_storage_noise(verbose: bool) -> Iterator[None]:
    if verbose:  # Dagster's own console log, all of it
        yield
        return
    kept = sys.stderr
    sys.stderr = _StorageNoise(kept)
    try:
        yield
    finally:
        sys.stderr = kept


def _artifacts(home: Home, day: str) -> dict[str, Any]:
    manifest = publish.read_manifest(home.published_dir, day) or {}
    return {
        "sealed": bool(manifest.get("sealed", False)),
        "canonical_sha256": manifest.get("canonical_sha256"),
        "files": {name: meta.get("sha256") for name, meta in sorted(manifest.get("files", {}).items())},
    }


def _tags(days: list[str]) -> dict[str, str]:
    if len(days) == 1:  # one partition: Dagster records each check's result on that partition
        return {"dagster/partition": days[0]}
    return {"dagster/asset_partition_range_start": days[0], "dagster/asset_partition_range_end": days[-1]}


def _day_checks(result: Any, days: list[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each day's verdict per check, from the run's evaluations (each check records one per day)."""
    per_day: dict[str, dict[str, Any]] = {day: {} for day in days}
    other_env: dict[str, str] = {}
    for ev in result.all_events:
        if ev.event_type_value != "ASSET_CHECK_EVALUATION":
            continue
        data = ev.asset_check_evaluation_data
        meta = {k: v.value for k, v in data.metadata.items()}
        for k in ("other process TZ", "other process PYTHONHASHSEED"):
            if k in meta:
                other_env[k.split()[-1]] = str(meta[k])
        # An evaluation on no partition (none of ours) would speak for every day of the run.
        for day in [data.partition] if data.partition else days:
            if day in per_day:
                per_day[day][data.check_name] = {
                    "passed": bool(data.passed),
                    "problem": None if data.passed else data.description,
                    "details": None if data.passed else meta.get("details"),
                    # a failure caused by another check's failure on the day (checks/invariants.py)
                    "consequence_of": None if data.passed else meta.get("consequence of"),
                }
    return per_day, other_env


def run_certify(
    home: Home, days: list[str], progress: Progress = lambda _m: None, verbose: bool = False,
    carried: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the checks-only job over the days in one run; return the certificate (also written to the folder).

    The run covers every day partition from the first day to the last (a partition is a day of
    the log, or one that was: a day removed from the log is still judged), and the certificate
    gives each of them its verdict: none is checked unreported. ``carried``: day -> entry of an
    earlier certificate for days not judged again (a team run's unchanged days: see
    assets/team.py); they join the certificate marked ``carried`` and count in its verdict."""
    _quiet()

    started = time.monotonic()
    # The independent rebuild (the longest part) starts first, in other processes, so it runs
    # while this one imports Dagster and Great Expectations and runs the append-only and
    # data-quality checks; the two checks that need it wait for it. It rebuilds the days being
    # certified, no others: its cost follows the days, not the length of the log.
    rebuild.start(home, False, days)
    # Dagster, the definitions and Great Expectations are imported only now, while the rebuild
    # already runs (this module imports none of them: importing Dagster alone is ~1.5 s of CPU).
    from assets.dagster_adapter import quick_run_storage
    from assets.definitions import CERTIFY_JOB, build_definitions
    from assets.instance import exclusive_run, instance
    from assets.partitions import keys_in_range, register_days
    from checks import invariants, quality

    inst = instance(home)
    register_days(inst, log_days(home))
    days = keys_in_range(inst, days[0], days[-1]) if days else days
    defs = build_definitions(home)
    job = defs.resolve_job_def(CERTIFY_JOB)
    expected = {*invariants.INVARIANTS, quality.RAW_QUALITY, quality.FRAMES_QUALITY}
    data_folder = (defs.resources or {}).get("data_folder")
    # A no-op unless the definitions build with the typed-text opt-in (then that build is started).
    rebuild.start(home, bool(getattr(data_folder, "include_typed_text", False)), days)
    # One run for the whole range: Dagster's per-run overhead (~1.7 s) is paid once and each check
    # reads the warehouse once; every check still evaluates every day and can fail any of them.

    with exclusive_run(home, inst, "af certify", progress), quick_run_storage(inst), _without_storage_noise(verbose):
        result = job.execute_in_process(
            instance=inst, tags=_tags(days), raise_on_error=False,
            run_config=_QUIET_RUN if verbose else _run_config(False, False),
        )
    if _interrupted(result):
        raise KeyboardInterrupt  # no certificate: the checks were cut short, not failed
    checks_by_day, other_env = _day_checks(result, days)
    failed_steps = [f for f in _failures(result) if f.startswith("step ")]
    per_day: dict[str, Any] = {}
    for day in days:
        checks = checks_by_day[day]
        missing = sorted(expected - set(checks))
        errors = failed_steps + [f"check {name} was not evaluated" for name in missing]
        ok = not errors and all(c["passed"] for c in checks.values())
        per_day[day] = {
            "passed": ok,
            "run_id": result.run_id,
            "checks": dict(sorted(checks.items())),
            "errors": errors,
            "artifacts": _artifacts(home, day),
        }
        if not ok:
            progress(f"  {day}: FAIL")
    passed = sum(1 for d in per_day.values() if d["passed"])
    progress(f"{passed}/{len(days)} day(s) pass ({time.monotonic() - started:.1f} s)")
    for day, entry in sorted((carried or {}).items()):
        if day not in per_day:
            per_day[day] = {**entry, "carried": True}
    per_day = dict(sorted(per_day.items()))
    log = EventLog(home)
    cert = {
        "certificate_version": CERTIFICATE_VERSION,
        # a run Dagster failed never passes, even if no single day explains why
        "verdict": "pass" if result.success and all(d["passed"] for d in per_day.values()) else "fail",
        "run_succeeded": bool(result.success),
        "certified_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "code_version": code_version(),
        "tz": log.tz,
        "log": {"chain_head": log.chain_head(), "entries": len(log.chain_entries()),
                "sealed_days": len({e["day"] for e in log.manifest()}),
                # forgetting is the one change of a sealed day the chain accepts: named here
                "redacted_days": sorted({e["day"] for e in log.manifest() if e.get("redacted_by")})},
        "other_process": other_env,
        "days": per_day,
        "seconds": round(time.monotonic() - started, 2),
    }
    write_certificate(home, cert)

    history.record(home, cert)  # the certified head is kept even when a later certificate replaces this one
    return cert


def write_certificate(home: Home, cert: dict[str, Any]) -> None:
    atomic_write(home.certificate_path, (json.dumps(cert, indent=2, sort_keys=True) + "\n").encode("utf-8"))
