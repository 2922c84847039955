"""The QA oracle: ground truth about a day computed by SQL over raw capture rows.

It is deliberately independent of the compiler (paper 6.2): no sessionization, no frames, no
flicker merge, no per-monitor streams. One SQL text (``ORACLE_SQL``, DuckDB dialect) reads a
relation ``capture_rows(ts_us, stream, app, url)`` of foreground snapshot rows and returns, for
the local day ``[$start_us, $end_us)``:

- dwell per row = min(gap to the next row, $cap_us = 60 s), over all monitors interleaved into one stream
  (ties in time ordered by stream, app, url so both engines agree); the last row of the day
  earns nothing because nothing after it says how long it lasted;
- per-app dwell, first row and row count; distinct apps are the app rows;
- per-host dwell for http(s) URLs, the host cut out of the URL by string functions that exist in
  both engines (scheme, then the leading run of host characters, minus ``www.``).

The same text runs (a) on DuckDB over the log's sealed Parquet segments and (b) transpiled by
sqlglot to SQLite, directly on a screenpipe database (its ``frames`` table, focused rows), whose
text timestamps an SQL adapter converts to microseconds. Python does only what SQL cannot do
portably: it maps each host to its registrable domain with the Public Suffix List (IP addresses
and hosts the list does not know stay as they are) and formats the first activity in the user's
zone. Everything else is SQL.
"""

from __future__ import annotations

import ipaddress
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import duckdb
import sqlglot

from capture.errors import UserError
from capture.model import Snapshot
from capture.timeutil import day_bounds, hhmm, local_day, parse_day

DWELL_CAP_US = 60 * 1_000_000

# The oracle, written once (DuckDB dialect, only constructs that sqlglot maps onto SQLite).
ORACLE_SQL = """
WITH day_rows AS (
    SELECT ts_us, COALESCE(stream, '') AS stream, app, COALESCE(url, '') AS url
    FROM capture_rows
    WHERE ts_us >= $start_us AND ts_us < $end_us AND app IS NOT NULL AND TRIM(app) <> ''
),
timed AS (
    SELECT ts_us, app, url,
           LEAD(ts_us) OVER (ORDER BY ts_us, stream, app, url) AS next_us
    FROM day_rows
),
credited AS (
    SELECT ts_us, app, LOWER(url) AS u,
           CASE WHEN next_us IS NULL THEN 0
                WHEN next_us - ts_us > $cap_us THEN $cap_us
                ELSE next_us - ts_us END AS dwell_us
    FROM timed
),
after_scheme AS (
    SELECT dwell_us, ts_us,
           CASE WHEN u LIKE 'https://%' THEN SUBSTR(u, 9)
                WHEN u LIKE 'http://%' THEN SUBSTR(u, 8)
                WHEN u LIKE '%://%' THEN ''
                ELSE u END AS rest
    FROM credited
    WHERE u <> ''
),
host_cut AS (
    SELECT dwell_us, ts_us,
           SUBSTR(rest, 1, LENGTH(rest) - LENGTH(LTRIM(rest, 'abcdefghijklmnopqrstuvwxyz0123456789.-_'))) AS h
    FROM after_scheme
),
hosts AS (
    SELECT dwell_us, ts_us,
           CASE WHEN h LIKE 'www.%' THEN SUBSTR(h, 5) ELSE h END AS host
    FROM host_cut
)
SELECT 'app' AS kind, app AS name, SUM(dwell_us) AS dwell_us, COUNT(*) AS n_rows, MIN(ts_us) AS first_us
FROM credited
GROUP BY app
UNION ALL
SELECT 'host' AS kind, host AS name, SUM(dwell_us) AS dwell_us, COUNT(*) AS n_rows, MIN(ts_us) AS first_us
FROM hosts
WHERE host LIKE '%.%'
GROUP BY host
ORDER BY kind, name
"""

# screenpipe -> capture_rows, in SQLite. Timestamps are text in three shapes
# ("2026-03-15T18:25:55.123456+00:00", "2026-03-15 18:25:55", "...Z"): whole seconds come from
# strftime('%s') on the text without its fraction (strftime would round the fraction to
# milliseconds), the microseconds from the fraction's digits. Anything else becomes NULL and is
# counted as unreadable. An unnamed monitor is monitor_1, as screenpipe names its first one; the
# other values are taken as they are. The rows land in TEMP tables (the connection's own
# temporary storage, never the database file), indexed by time, so a day's query reads only its
# own rows.
SCREENPIPE_ROWS_SQL = """
CREATE TEMP TABLE screenpipe_rows AS
WITH named AS (
    -- 2024 layout: app, window and focus of a frame live in its first ocr_text row that names an app
    {ocr_sql}
),
raw AS (
    SELECT f.id, CAST(f.timestamp AS TEXT) AS t,
           COALESCE(NULLIF(TRIM({device_col}), ''), NULLIF(TRIM({chunk_device}), '')) AS device_name,
           COALESCE(n.app_name, {app_col}) AS app_name,
           COALESCE(n.window_name, {window_col}) AS window_name, {url_col} AS browser_url,
           CASE WHEN n.frame_id IS NOT NULL THEN n.focused ELSE {focused_col} END AS focused,
           CASE WHEN n.frame_id IS NOT NULL THEN 'ocr'
                WHEN {has_trigger} AND ({trigger_col} IS NOT NULL OR {chunk_col} IS NULL) THEN 'event'
                ELSE 'video' END AS layout
    FROM main.frames f
    LEFT JOIN named n ON n.frame_id = f.id
    {chunk_join}
),
split AS (
    SELECT id, t, device_name, app_name, window_name, browser_url, focused, layout,
           CASE WHEN SUBSTR(t, 20, 1) = '.' THEN SUBSTR(t, 21) ELSE '' END AS frac_tail,
           CASE WHEN SUBSTR(t, 20, 1) = '.' THEN LTRIM(SUBSTR(t, 21), '0123456789')
                ELSE SUBSTR(t, 20) END AS zone_part
    FROM raw
),
parsed AS (
    SELECT id, device_name, app_name, window_name, browser_url, focused, layout,
           CAST(strftime('%s', SUBSTR(t, 1, 19) || TRIM(zone_part)) AS INTEGER) AS secs,
           SUBSTR(SUBSTR(frac_tail, 1, LENGTH(frac_tail) - LENGTH(zone_part)) || '000000', 1, 6) AS micros
    FROM split
    WHERE LENGTH(t) >= 19
)
SELECT id, secs * 1000000 + CAST(micros AS INTEGER) AS ts_us,
       COALESCE(device_name, 'monitor_1') AS stream,
       app_name AS app, window_name AS window, browser_url AS url, focused, layout
FROM parsed
WHERE secs IS NOT NULL AND app_name IS NOT NULL AND app_name <> '';
"""

# Which rows are foreground observations is decided per row, since a database upgraded across
# screenpipe's eras holds every layout in one table (the importer reads them the same way, see
# docs/importers.md):
# - 'event' (event-driven capture): every row not marked unfocused counts; a row recorded twice
#   identically counts once;
# - 'ocr' (2024: names in ocr_text, one row per window, each with its own insert time): a row
#   counts when its window was focused;
# - 'video' (2025: one row per visible window per cycle, sharing the cycle's time): per cycle and
#   monitor the first focused row counts; a lone row whose focus was not recorded counts too.
FOREGROUND_SQL = """
CREATE TEMP TABLE capture_rows AS
SELECT DISTINCT ts_us, stream, app, window, url FROM screenpipe_rows
WHERE layout = 'event' AND COALESCE(focused, 1) = 1
UNION ALL
SELECT ts_us, stream, app, window, url FROM screenpipe_rows
WHERE layout = 'ocr' AND focused = 1
UNION ALL
SELECT ts_us, stream, app, window, url
FROM (
    SELECT ts_us, stream, app, window, url,
           ROW_NUMBER() OVER (PARTITION BY ts_us, stream ORDER BY id) AS nth
    FROM (
        SELECT id, ts_us, stream, app, window, url, focused,
               COUNT(*) OVER (PARTITION BY ts_us, stream) AS cycle_rows
        FROM screenpipe_rows WHERE layout = 'video'
    )
    WHERE focused = 1 OR (focused IS NULL AND cycle_rows = 1)
)
WHERE nth = 1;
CREATE INDEX temp.capture_rows_ts ON capture_rows (ts_us);
"""


@dataclass
class OracleDay:
    """What the oracle says about one local day (minutes rounded to 0.01 for display only)."""

    day: str
    app_dwell_us: dict[str, int] = field(default_factory=dict)
    app_rows: dict[str, int] = field(default_factory=dict)
    host_dwell_us: dict[str, int] = field(default_factory=dict)
    first_us: int | None = None
    rows: int = 0

    @property
    def active(self) -> bool:
        return self.rows > 0

    @property
    def total_minutes(self) -> float:
        return sum(self.app_dwell_us.values()) / 60e6

    def app_minutes(self) -> dict[str, float]:
        return {a: us / 60e6 for a, us in self.app_dwell_us.items()}

    @property
    def distinct_apps(self) -> int:
        return len(self.app_dwell_us)

    def ranked_apps(self) -> list[tuple[str, float]]:
        """Apps by dwell, most first; ties by name so the order is total."""
        return sorted(self.app_minutes().items(), key=lambda kv: (-kv[1], kv[0]))

    def domain_minutes(self) -> dict[str, float]:
        """Registrable domains (Public Suffix List) with their summed dwell; the product surfaces
        of one company's domain (ORACLE_SURFACES) are counted under their own host."""
        out: dict[str, float] = {}
        for host, us in self.host_dwell_us.items():
            dom = surface_domain(host)
            out[dom] = out.get(dom, 0.0) + us / 60e6
        return out

    def first_local(self, tz: str) -> str | None:
        return None if self.first_us is None else hhmm(self.first_us, tz)

    def to_json(self, tz: str) -> dict[str, Any]:
        return {
            "day": self.day,
            "rows": self.rows,
            "total_minutes": round(self.total_minutes, 2),
            "distinct_apps": self.distinct_apps,
            "first_activity": self.first_local(tz),
            "apps": [{"app": a, "minutes": round(m, 2)} for a, m in self.ranked_apps()],
            "domains": {d: round(m, 2) for d, m in sorted(self.domain_minutes().items())},
        }


@lru_cache(maxsize=1)
def _psl() -> Any:
    from publicsuffixlist import (
        PublicSuffixList,  # the suffix list takes ~0.6 s to load: only when first needed
    )

    return PublicSuffixList()


# The oracle's own statement of the surface rule (written apart from the compiler's SURFACES):
# under a google.<suffix> registrable domain, these first labels left of it name their own place.
ORACLE_SURFACES = {"google": ("mail", "docs", "drive", "calendar", "meet", "chat", "keep", "sheets", "slides")}


@lru_cache(maxsize=4096)
def surface_domain(host: str) -> str:
    """``mail.google.com`` -> ``mail.google.com``; ``www.google.com`` -> ``google.com``."""
    dom = registrable_domain(host)
    rest = host.strip(".").lower()[: -len(dom)].rstrip(".")
    label = rest.rsplit(".", 1)[-1] if rest else ""
    if label and label in ORACLE_SURFACES.get(dom.split(".", 1)[0], ()):
        return f"{label}.{dom}"
    return dom


@lru_cache(maxsize=4096)
def registrable_domain(host: str) -> str:
    """The registrable domain of a host (``mail.google.com`` -> ``google.com``)."""
    host = host.strip(".").lower()
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    dom = _psl().privatesuffix(host)
    return str(dom) if dom else host


def sqlite_sql() -> str:
    """ORACLE_SQL in SQLite's dialect, as sqlglot writes it."""
    return _transpiled()


@lru_cache(maxsize=1)
def _transpiled() -> str:
    return str(sqlglot.transpile(ORACLE_SQL, read="duckdb", write="sqlite")[0])


def _collect(day: str, rows: Iterable[Sequence[Any]]) -> OracleDay:
    out = OracleDay(day=day)
    for kind, name, dwell_us, n_rows, first_us in rows:
        if kind == "app":
            out.app_dwell_us[str(name)] = int(dwell_us)
            out.app_rows[str(name)] = int(n_rows)
            out.rows += int(n_rows)
            out.first_us = int(first_us) if out.first_us is None else min(out.first_us, int(first_us))
        else:
            out.host_dwell_us[str(name)] = int(dwell_us)
    return out


# ---------------------------------------------------------------- runner (a): DuckDB on the log


class DuckDBOracle:
    """Runs the oracle on DuckDB over sealed Parquet snapshot segments (open days: their rows)."""

    def __init__(self, cap_us: int = DWELL_CAP_US) -> None:
        self.cap_us = cap_us
        self.con = duckdb.connect(":memory:")

    def close(self) -> None:
        self.con.close()

    def day_from_parquet(self, day: str, snapshot_parquet: Path | Sequence[Path], tz: str) -> OracleDay:
        """A sealed day from its snapshot Parquet file(s): a day with amendments has one per segment."""
        files = [snapshot_parquet] if isinstance(snapshot_parquet, Path) else list(snapshot_parquet)
        paths = ", ".join("'" + str(p).replace("'", "''") + "'" for p in files)
        self.con.execute(
            "CREATE OR REPLACE TEMP VIEW capture_rows AS "
            f"SELECT ts_us, stream, app, url FROM read_parquet([{paths}]) WHERE focused"
        )
        return self._run(day, tz)

    def day_from_rows(self, day: str, snapshots: Sequence[Snapshot], tz: str) -> OracleDay:
        """For a day the log has not sealed yet: the same SQL over its rows loaded into DuckDB."""
        self.con.execute("DROP VIEW IF EXISTS capture_rows")
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE capture_rows_t "
            "(ts_us BIGINT, stream VARCHAR, app VARCHAR, url VARCHAR)"
        )
        data = [(s.ts_us, s.stream, s.app, s.url) for s in snapshots if s.focused]
        if data:
            self.con.executemany("INSERT INTO capture_rows_t VALUES (?, ?, ?, ?)", data)
        self.con.execute("CREATE OR REPLACE TEMP VIEW capture_rows AS SELECT * FROM capture_rows_t")
        return self._run(day, tz)

    def _run(self, day: str, tz: str) -> OracleDay:
        start, end = day_bounds(day, tz)
        params = {"start_us": start, "end_us": end, "cap_us": self.cap_us}
        rows = self.con.execute(ORACLE_SQL, params).fetchall()
        return _collect(day, rows)


def oracle_log_day(log: Any, day: str, runner: DuckDBOracle | None = None) -> OracleDay:
    """Oracle of one day of an EventLog: its sealed snapshot Parquet, or its open rows."""
    own = runner is None
    r = runner or DuckDBOracle()
    try:
        segs = log.segment_files(day, "snapshots")
        if segs and all(Path(p).exists() for p in segs):
            return r.day_from_parquet(day, segs, log.tz)
        return r.day_from_rows(day, log.read_day(day, lazy_elements=True).snapshots, log.tz)
    finally:
        if own:
            r.close()


# ---------------------------------------------------------------- runner (b): SQLite on screenpipe


def screenpipe_rows_sql(con: sqlite3.Connection) -> str:
    """SCREENPIPE_ROWS_SQL for this database's columns (any era, or several in one file)."""
    cols = {r[1] for r in con.execute("PRAGMA main.table_info(frames)")}
    tables = {r[0] for r in con.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
    ocr_cols = {r[1] for r in con.execute("PRAGMA main.table_info(ocr_text)")} if "ocr_text" in tables else set()
    chunk_cols = ({r[1] for r in con.execute("PRAGMA main.table_info(video_chunks)")}
                  if "video_chunks" in tables else set())

    def col(name: str, where: set[str], alias: str = "f") -> str:
        return f"{alias}.{name}" if name in where else "NULL"

    if {"frame_id", "app_name"} <= ocr_cols:
        ocr_sql = (
            f"SELECT o.frame_id, o.app_name, {col('window_name', ocr_cols, 'o')} AS window_name, "
            f"{col('focused', ocr_cols, 'o')} AS focused FROM main.ocr_text o "
            "WHERE o.app_name IS NOT NULL AND o.app_name <> '' AND o.rowid = (SELECT MIN(o2.rowid) "
            "FROM main.ocr_text o2 WHERE o2.frame_id = o.frame_id AND o2.app_name IS NOT NULL "
            "AND o2.app_name <> '')"
        )
    else:
        ocr_sql = "SELECT NULL AS frame_id, NULL AS app_name, NULL AS window_name, NULL AS focused WHERE 0"
    chunked = "video_chunk_id" in cols and "device_name" in chunk_cols
    sql = SCREENPIPE_ROWS_SQL.format(
        ocr_sql=ocr_sql,
        device_col=col("device_name", cols),
        chunk_device="vc.device_name" if chunked else "NULL",
        chunk_join="LEFT JOIN main.video_chunks vc ON vc.id = f.video_chunk_id" if chunked else "",
        app_col=col("app_name", cols),
        window_col=col("window_name", cols),
        url_col=col("browser_url", cols),
        focused_col=col("focused", cols),
        has_trigger="1" if "capture_trigger" in cols else "0",
        trigger_col=col("capture_trigger", cols),
        chunk_col=col("video_chunk_id", cols),
    )
    return sql


class ScreenpipeOracle:
    """Runs the transpiled oracle directly on a screenpipe SQLite file, opened read-only."""

    def __init__(self, db_path: str | Path, cap_us: int = DWELL_CAP_US) -> None:
        self.cap_us = cap_us
        self.path = Path(db_path)
        if not self.path.is_file():
            raise UserError(f"{self.path}: no such screenpipe database")
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        try:
            self.con = sqlite3.connect(uri, uri=True)
            cols = {r[1] for r in self.con.execute("PRAGMA main.table_info(frames)")}
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path}: not a readable SQLite database ({exc})") from None
        if not {"id", "timestamp"} <= cols:
            raise UserError(
                f"{self.path}: table frames lacks column(s) "
                f"{', '.join(sorted({'id', 'timestamp'} - cols))}; not a screenpipe database"
            )
        sql = screenpipe_rows_sql(self.con)
        # TEMP tables live in the connection's own temporary storage: the database file is not written.
        self.con.executescript(sql + FOREGROUND_SQL)

    def close(self) -> None:
        self.con.close()

    def layouts(self) -> dict[str, int]:
        """Readable rows per layout the rows were decided by (event, ocr, video)."""
        return dict(self.con.execute("SELECT layout, COUNT(*) FROM screenpipe_rows GROUP BY layout ORDER BY layout"))

    def counts(self) -> dict[str, int]:
        """Rows in frames, how many had an unreadable time (excluded), and the foreground rows kept."""
        def one(sql: str) -> int:
            row = self.con.execute(sql).fetchone()
            return int(row[0]) if row else 0

        total = one("SELECT COUNT(*) FROM main.frames")
        readable = one("SELECT COUNT(*) FROM screenpipe_rows")
        return {"frames_rows": total, "unreadable": total - readable,
                "foreground_rows": one("SELECT COUNT(*) FROM capture_rows")}

    def days(self, tz: str) -> list[str]:
        """Local days that have at least one readable foreground row."""
        lo, hi = self.con.execute("SELECT MIN(ts_us), MAX(ts_us) FROM capture_rows").fetchone() or (None, None)
        if lo is None or hi is None:
            return []
        first, last = parse_day(local_day(int(lo), tz)), parse_day(local_day(int(hi), tz))
        out = []
        d = first
        while d <= last:
            start, end = day_bounds(d.isoformat(), tz)
            n = self.con.execute(
                "SELECT COUNT(*) FROM capture_rows WHERE ts_us >= ? AND ts_us < ?", (start, end)
            ).fetchone()
            if n and n[0]:
                out.append(d.isoformat())
            d = d.fromordinal(d.toordinal() + 1)
        return out

    def day(self, day: str, tz: str) -> OracleDay:
        start, end = day_bounds(day, tz)
        params = {"start_us": start, "end_us": end, "cap_us": self.cap_us}
        rows = self.con.execute(sqlite_sql(), params).fetchall()
        return _collect(day, rows)


def agree(a: OracleDay, b: OracleDay) -> list[str]:
    """Differences between two oracle results of the same day (empty when they agree exactly)."""
    diffs = []
    if a.app_dwell_us != b.app_dwell_us:
        keys = sorted(set(a.app_dwell_us) | set(b.app_dwell_us))
        bad = [k for k in keys if a.app_dwell_us.get(k) != b.app_dwell_us.get(k)]
        diffs.append(f"{a.day}: app dwell differs for {', '.join(bad[:5])}")
    if a.host_dwell_us != b.host_dwell_us:
        diffs.append(f"{a.day}: host dwell differs")
    if a.first_us != b.first_us:
        diffs.append(f"{a.day}: first activity differs ({a.first_us} vs {b.first_us})")
    if a.rows != b.rows:
        diffs.append(f"{a.day}: {a.rows} vs {b.rows} rows")
    return diffs
