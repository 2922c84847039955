"""The data-quality rules of a day's raw rows and frames, as SQL over the warehouse.

One home for what "a good day" means: the rules below, each stated for what a source measures,
read from each row's own fields (never from one recorder's habits):

raw rows   ids unique, keys never null; snapshots and input events in time order per (kind,
           stream) in the stored order; a measured span (an ActivityWatch event's end) or a
           presence interval never ends before it starts. Presence rows are a set of intervals
           (afk / not-afk, unlock instants), not a sequence: their order is not judged. A source
           without input events (ActivityWatch, a presence-only bucket) simply has none.
frames     ids unique, keys never null, wall time never negative, active time never above wall
           time, a frame never starts before the previous frame of its stream ended, and active
           time never above what the snapshots within the frame's span can earn: a heartbeat /
           instant snapshot (no ``end_us``: screenpipe, the recorder, RPM logs) at most the
           dwell rule's 90 s, a measured row exactly its span. Rows of a flicker interruption
           inside the span count too, so the bound is an upper bound of the frame's own rows.

The warehouse steps use :func:`failing_days` to keep a day that breaks a rule from being
published (af_pipeline/warehouse/day_work.py, ``published_day``); the Dagster checks
(checks/quality.py) judge the same rules with Great Expectations, using :func:`screen` to spare
GX a batch every row of which passes. tests/test_quality_screen.py holds both SQL forms to GX:
what the screen passes GX passes, and a day :func:`violations` names is one GX fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from af_pipeline.compiler.sessionize import PAPER_RULES, US
from af_pipeline.warehouse import store

RAW_QUALITY = "raw_rows_quality"
FRAMES_QUALITY = "frames_quality"
DWELL_CAP_US = PAPER_RULES.dwell_s * US  # the most an instant snapshot earns (paper 4.2), in microseconds
SHOWN_IDS = 3  # row ids a reason names; the count is always complete


def quiet(con: Any) -> None:
    """No DuckDB progress bar: on a busy machine a scan passes its two-second threshold and the
    bar lands on stdout, in the middle of `af certify --json`."""
    con.execute("SET enable_progress_bar = false")


def _in_days(days: Sequence[str]) -> str:
    return ", ".join("'" + d.replace("'", "''") + "'" for d in days)


def raw_sql(days: Sequence[str], con: Any = None) -> str:
    """Snapshots, input events and presence rows of the days, each snapshot and input event with
    its predecessor in its (kind, stream). With the warehouse connection, only the days' own
    files are read (store.days_relation)."""
    inside = _in_days(days)
    if con is not None:
        snapshots, inputs, presence = (store.days_relation(con, k, days) for k in ("snapshots", "inputs", "presence"))
    else:
        snapshots, inputs, presence = "raw_snapshots", "raw_inputs", "raw_presence"
    return f"""
        SELECT day, 'snapshots' AS kind, seq, ref, ts_us, stream AS stream_key, app AS what,
               lag(ts_us) OVER (PARTITION BY day, stream ORDER BY seq) AS prev_ts_us, end_us
        FROM {snapshots} WHERE day IN ({inside})
        UNION ALL
        SELECT day, 'inputs' AS kind, seq, ref, ts_us, COALESCE(stream, '') AS stream_key, kind AS what,
               lag(ts_us) OVER (PARTITION BY day, COALESCE(stream, '') ORDER BY seq) AS prev_ts_us,
               CAST(NULL AS BIGINT) AS end_us
        FROM {inputs} WHERE day IN ({inside})
        UNION ALL
        SELECT day, 'presence' AS kind, seq, ref, ts_us, COALESCE(stream, '') AS stream_key, status AS what,
               CAST(NULL AS BIGINT) AS prev_ts_us, end_us
        FROM {presence} WHERE day IN ({inside})
    """


def frames_sql(days: Sequence[str], con: Any = None) -> str:
    """The days' frames, each with what the snapshots within its span can earn (``earn_cap_us``)
    and the end of the previous frame of its stream."""
    inside = _in_days(days)
    snapshots = store.days_relation(con, "snapshots", days) if con is not None else "raw_snapshots"
    return f"""
        WITH f AS (SELECT * FROM frames WHERE day IN ({inside})),
        earn AS (
            SELECT day, stream, ts_us,
                   CASE WHEN end_us IS NULL THEN {DWELL_CAP_US} ELSE greatest(end_us - ts_us, 0) END AS cap_us
            FROM {snapshots} WHERE day IN ({inside})
        ),
        cap AS (
            SELECT f.day, f.frame_id, CAST(sum(earn.cap_us) AS BIGINT) AS earn_cap_us
            FROM f JOIN earn ON earn.day = f.day AND earn.stream = f.stream
                            AND earn.ts_us BETWEEN f.start_us AND f.end_us
            GROUP BY ALL
        )
        SELECT f.day, f.frame_id, f.stream, f.app, f.start_us, f.end_us, f.wall_us, f.active_us, f.snapshots,
               COALESCE(cap.earn_cap_us, 0) AS earn_cap_us,
               lag(f.end_us) OVER (PARTITION BY f.day, f.stream ORDER BY f.start_us, f.seq) AS prev_end_us
        FROM f LEFT JOIN cap ON cap.day = f.day AND cap.frame_id = f.frame_id
    """


@dataclass(frozen=True)
class Rule:
    """One expectation: its kind, its columns and what a failing row means, in words."""

    kind: str  # unique | not_null | at_least_zero | pair (A >= B) | pair_if_both (A >= B where both are set)
    columns: tuple[str, ...]
    says: str

    def expr(self) -> str:
        """The rule in the columns' own terms, for a reason: 'wall_us >= active_us'."""
        if self.kind == "unique":
            return f"{self.columns[0]} unique"
        if self.kind == "not_null":
            return f"{self.columns[0]} not null"
        if self.kind == "at_least_zero":
            return f"{self.columns[0]} >= 0"
        return f"{self.columns[0]} >= {self.columns[1]}"

    def row_ok(self) -> str:
        """SQL true for a row this rule passes, as Great Expectations judges it (NULL: it fails)."""
        q = [_quote(c) for c in self.columns]
        if self.kind in ("unique", "not_null"):
            return f"{q[0]} IS NOT NULL"
        if self.kind == "at_least_zero":
            return f"({q[0]} IS NOT NULL AND {q[0]} >= 0)"
        if self.kind == "pair":
            return f"({q[0]} IS NOT NULL AND {q[1]} IS NOT NULL AND {q[0]} >= {q[1]})"
        return f"({q[0]} IS NULL OR {q[1]} IS NULL OR {q[0]} >= {q[1]})"


@dataclass(frozen=True)
class Spec:
    """One check's rules over one SELECT (raw_sql or frames_sql)."""

    check: str
    id_column: str
    rules: tuple[Rule, ...]

    def columns(self) -> set[str]:
        return {c for r in self.rules for c in r.columns}

    def of_kind(self, kind: str) -> list[Rule]:
        return [r for r in self.rules if r.kind == kind]

    def row_ok(self) -> str:
        """SQL true for a row every rule passes (NULL counts as a failure)."""
        return "COALESCE(" + " AND ".join(r.row_ok() for r in self.rules) + ", FALSE)"


def _keys(columns: Sequence[str]) -> tuple[Rule, ...]:
    return tuple(Rule("not_null", (c,), f"{c} is missing") for c in columns)


RAW = Spec(RAW_QUALITY, "ref", (
    Rule("unique", ("ref",), "a row id repeats"),
    *_keys(("day", "ref", "ts_us", "stream_key", "what")),
    Rule("pair_if_both", ("ts_us", "prev_ts_us"), "a row is stored before an earlier row of its stream"),
    Rule("pair_if_both", ("end_us", "ts_us"), "a measured span or presence interval ends before it starts"),
))
FRAMES = Spec(FRAMES_QUALITY, "frame_id", (
    Rule("unique", ("frame_id",), "a frame id repeats"),
    *_keys(("frame_id", "stream", "app", "start_us", "end_us")),
    Rule("at_least_zero", ("wall_us",), "wall time is negative"),
    Rule("pair", ("wall_us", "active_us"), "active time is above wall time"),
    Rule("pair", ("earn_cap_us", "active_us"),
         "active time is above what the frame's snapshots can earn (90 s per instant snapshot, "
         "its span per measured one)"),
    Rule("pair_if_both", ("start_us", "prev_end_us"), "a frame starts before the previous one of its stream ended"),
))
# Types whose values compare in DuckDB exactly as GX compares them in pandas (no NaN, no rounding
# that could turn a pass into a failure): anything else is left to GX.
_SCREENABLE = ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT",
               "VARCHAR")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def select(spec: Spec, days: Sequence[str], con: Any = None) -> str:
    return raw_sql(days, con) if spec is RAW else frames_sql(days, con)


def screen(con: Any, select: str, spec: Spec, days: Sequence[str]) -> dict[str, int] | None:
    """Rows per day if every row of the batch passes every rule (so GX would pass every day);
    None if GX must decide (a row fails, a day has no rows, a column's type is not screenable,
    or an id repeats)."""
    quiet(con)
    types = {str(r[0]): str(r[1]) for r in con.execute(f"DESCRIBE {select}").fetchall()}
    if any(types.get(c) not in _SCREENABLE for c in spec.columns() | {"day"}):
        return None
    found = con.execute(f"SELECT day, count(*), bool_and({spec.row_ok()}) FROM ({select}) GROUP BY day").fetchall()
    rows = {str(day): int(n) for day, n, _ok in found}
    if set(rows) != set(days) or not all(ok for _d, _n, ok in found):
        return None
    for rule in spec.of_kind("unique"):  # unique over the whole batch, as GX validates it
        (dup,) = con.execute(
            f"SELECT count(*) FROM (SELECT {_quote(rule.columns[0])} FROM ({select}) GROUP BY 1 HAVING count(*) > 1)"
        ).fetchone()
        if dup:
            return None
    return rows


def violations(con: Any, select: str, spec: Spec) -> dict[str, list[str]]:
    """The rules each day's rows break, one sentence per rule with its row count and the first
    row ids (ids only: never a title, URL or typed text). Days that break none are left out.
    The sentence does not name the check: whoever prints it puts the day and check first.

    Ids repeat within a day (a repeat across days is the range check's, checks/quality.py)."""
    quiet(con)
    ident = _quote(spec.id_column)
    found: dict[str, list[str]] = {}
    for rule in spec.rules:
        if rule.kind == "unique":
            col = _quote(rule.columns[0])
            sql = (f"SELECT day, count(*), list({col} ORDER BY {col})[1:{SHOWN_IDS}] FROM "
                   f"(SELECT day, {col} FROM ({select}) WHERE {col} IS NOT NULL GROUP BY ALL HAVING count(*) > 1) "
                   "GROUP BY day ORDER BY day")
        else:
            sql = (f"SELECT day, count(*), list(COALESCE(CAST({ident} AS VARCHAR), '(no id)') ORDER BY {ident})"
                   f"[1:{SHOWN_IDS}] FROM ({select}) WHERE NOT COALESCE({rule.row_ok()}, FALSE) "
                   "GROUP BY day ORDER BY day")
        for day, n, ids in con.execute(sql).fetchall():
            rows = "row" if n == 1 else "rows"
            more = ", ..." if n > len(ids) else ""
            found.setdefault(str(day), []).append(
                f"{rule.says} (rule {rule.expr()}) on {n} {rows} "
                f"({spec.id_column} {', '.join(map(str, ids))}{more})"
            )
    return found


class Failing(NamedTuple):
    """Why a day is not published: the first check whose rule it breaks, and the sentence."""

    check: str
    reason: str


def failing_days(con: Any, days: Sequence[str]) -> dict[str, Failing]:
    """The days whose raw rows or frames break a rule: the day's work is not published
    (day_work.published_day). The reason is the first broken rule's sentence, and how many more
    there are."""
    out: dict[str, list[tuple[str, str]]] = {}
    if not days:
        return {}
    for spec in (RAW, FRAMES):
        rows = select(spec, days, con)
        if screen(con, rows, spec, days) is not None:
            continue  # every row passes every rule (the screen is stricter than the rules' queries)
        for day, problems in violations(con, rows, spec).items():
            out.setdefault(day, []).extend((spec.check, p) for p in problems)
    return {day: Failing(p[0][0], _one_sentence([t for _c, t in p])) for day, p in sorted(out.items())}


def _one_sentence(problems: list[str]) -> str:
    extra = len(problems) - 1
    return problems[0] + (f" (and {extra} more broken rule{'s' if extra > 1 else ''})" if extra else "")
