"""Held-out fault trial (issue 36): "nothing doubled, nothing lost, nobody else's folder",
measured on faults the tests never run.

usage: python bench/faults/run_faults.py [--work /tmp/faults] [--af PATH] [--only CASE ...] [--list]

The tests (tests/test_faults_*.py, test_sync_new_host.py, test_home_adoption.py, test_views.py)
fix their own parameters; every case here uses others and other combinations: other retention
fractions over three rounds, a restore with rows synced after the backup and rows never synced,
a restore over days sealed with `af log seal` (new rows land as amendments), a move as well as a
copy, seeded random sequences with seals (seeds 101..110), other damaged lines, other Host headers
and CRLF forms, other foreign folders and commands, other ActivityWatch versions and a clock that
repeats 20 minutes.

Each case runs the real CLI (`af`, a subprocess per command) in a fresh data folder under
--work/<case>/. The truth is the fault generator's: the events the source held when a pass
read it, by their content (a screenpipe frame's unique window label, its element texts and
its click's time; an ActivityWatch event's span and app). What landed is read from the log
(capture.log.EventLog) and its quarantine. Per case:

  events      source events a pass could read (frames, AW events, requests, refusals asked)
  once        landed exactly once (a frame: its snapshot, its 3 labelled elements, its click)
  doubled     landed more than once (any of its rows twice, or an instant of an AW event covered
              twice by its rows)
  lost        never landed and not quarantined
  quarantined refused into the quarantine (reasons listed below the table)
  tracebacks  commands whose stdout or stderr held "Traceback (most recent call last)"
  adopted     a foreign folder written into or chmod-ed
  exits       commands with an exit code the case did not expect

Prints the table (and the failures) and writes --work/faults.md; exit 1 if any case doubled,
lost, printed a traceback, adopted a folder or failed one of its checks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # the tests' screenpipe builder, imported, not copied

from capture.home import Home  # noqa: E402
from capture.log import EventLog  # noqa: E402
from capture.model import CAPTURE_SCHEMA_VERSION  # noqa: E402

DEFAULT_AF = str(REPO / ".venv" / "bin" / "af")
TRACEBACK = "Traceback (most recent call last)"
ELEMENT_TEXTS = 3  # sample_tree(label): the label, "<label> send", "<label> body" (and two blank nodes)
SEEDS = range(101, 111)


# -- running af ---------------------------------------------------------------------------------


@dataclass
class Result:
    case: str
    events: int | None = None
    once: int | None = None
    doubled: int | None = None
    lost: int | None = None
    quarantined: int | None = None
    reasons: Counter[str] = field(default_factory=Counter)
    commands: int = 0
    tracebacks: list[str] = field(default_factory=list)
    adopted: list[str] | None = None
    exits: list[str] = field(default_factory=list)  # unexpected exit codes
    failures: list[str] = field(default_factory=list)  # other checks the case makes
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.doubled or self.lost or self.tracebacks or self.adopted or self.exits or self.failures)


class Case:
    """One case's folder, its commands and what they printed."""

    def __init__(self, name: str, af: str, work: Path):
        self.name, self.af_path = name, af
        self.dir = work / name
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self.home = self.dir / "home"
        self.result = Result(name)
        self.env = {k: v for k, v in os.environ.items() if k != "AF_HOME"}
        self.env["XDG_CACHE_HOME"] = str(self.dir / "user-cache")  # af mcp's handshake record

    def af(self, *args: str, expect: tuple[int, ...] = (0,), env: dict[str, str] | None = None,
           stdin: str | None = None, timeout: float = 600) -> dict[str, Any]:
        cmd = [self.af_path, *args]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=stdin,
                               env={**self.env, **(env or {})}, cwd=self.dir)
            rc: int | str = p.returncode
            out, err = p.stdout, p.stderr
        except subprocess.TimeoutExpired as exc:
            rc = "timeout"
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return self.record(" ".join(cmd[1:]), rc, out, err, expect)

    def record(self, what: str, rc: int | str, out: str, err: str, expect: tuple[int, ...]) -> dict[str, Any]:
        self.result.commands += 1
        if TRACEBACK in out or TRACEBACK in err:
            self.result.tracebacks.append(f"af {what}")
        if rc not in expect:
            last = (err.strip() or out.strip()).splitlines()[-1:] or [""]
            self.result.exits.append(f"af {what}: exit {rc} (expected {'/'.join(map(str, expect))}): {last[0][:200]}")
        return {"rc": rc, "stdout": out, "stderr": err}

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.result.failures.append(what)
        return ok


# -- screenpipe: the tests' database builder, driven by a generator that keeps the truth ----------


class Screenpipe:
    """A current-layout screenpipe database (tests/test_faults_source_rewrites.Db, built on
    tests/screenpipe_eras.py from screenpipe's own migrations) and the truth: every frame label
    a pass could read. A label gone before any pass read it is no event anybody could land."""

    def __init__(self, case: Case, name: str = "db.sqlite"):
        from test_faults_source_rewrites import Db  # the tests' generator: imported, not copied

        self.case = case
        self.db = Db(case.dir / name)
        self.registered: Path | None = None
        self.expected: set[str] = set()
        self.written: set[str] = set()

    @property
    def path(self) -> Path:
        return Path(self.db.path)

    def append(self, k: int) -> None:
        self.db.capture(k)
        self.written |= self.db.events()

    def frames(self) -> int:
        return int(self.db.era.con.execute("SELECT COUNT(*) FROM frames").fetchone()[0])

    def delete_fraction(self, fraction: float) -> int:
        """screenpipe's retention: the oldest ``fraction`` of the frames, with their rows."""
        k = int(round(self.frames() * fraction))
        if k:
            self.db.delete_oldest(k)
        return k

    def vacuum(self) -> None:
        self.db.vacuum()

    def backup(self, to: Path) -> None:
        self.db.backup(to)

    def restore(self, frm: Path) -> None:
        self.db.restore(frm)

    def move(self, to: Path, keep: bool) -> None:
        """Copy (keep) or move the database to ``to`` and go on capturing there."""
        from screenpipe_eras import EraDB

        self.db.era.con.commit()
        self.db.era.con.close()
        to.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copyfile if keep else shutil.move)(str(self.path), str(to))
        self.db.path = to
        self.db.era.path = to
        self.db.era.con = EraDB._connect(to)

    def sync(self, expect: tuple[int, ...] = (0,)) -> dict[str, Any]:
        """One `af sync` pass; the first (and one after a move) registers the database."""
        self.expected |= self.db.events()  # what the source holds when it is read
        self.db.era.con.commit()
        if self.registered != self.path:
            self.registered = self.path
            return self.case.af("sync", "screenpipe", str(self.path), "--home", str(self.case.home), "--tz", "UTC",
                                expect=expect)
        return self.case.af("sync", "--home", str(self.case.home), expect=expect)

    def seal(self) -> None:
        """`af log seal` every day the log holds: later capture for them lands as amendments."""
        for d in EventLog(Home(self.case.home)).days():
            if not d.sealed:
                self.case.af("log", "seal", d.day, "--home", str(self.case.home))

    def measure(self) -> None:
        """Events expected against the log: once, doubled, lost, quarantined."""
        log = EventLog(Home(self.case.home))
        windows: Counter[str] = Counter()
        texts: Counter[str] = Counter()
        clicks: Counter[int] = Counter()
        for d in log.days():
            cap = log.read_day(d.day)
            windows.update(str(s.window) for s in cap.snapshots)
            texts.update(str(e.text) for e in cap.elements if e.text)
            clicks.update(i.ts_us for i in cap.inputs)
        quarantined: set[str] = set()
        r = self.case.result
        for row in log.quarantine_rows():
            blob = json.dumps(row)
            hits = {m for m in re.findall(r'\\"window\\": \\"(w[0-9]+)\\"', blob)} | \
                   {f"w{m}" for m in re.findall(r'\\"text\\": \\"t([0-9]+)', blob)}
            hits &= self.expected
            if hits:
                quarantined |= hits
                r.reasons[str(row.get("reason"))[:90]] += 1
        click_ts = self._click_times()
        once = doubled = lost = 0
        for label in sorted(self.expected):
            n = int(label[1:])
            rows = (windows[label], texts[f"t{n}"] + texts[f"t{n} send"] + texts[f"t{n} body"],
                    clicks[click_ts.get(label, -1)])
            if rows == (1, ELEMENT_TEXTS, 1):
                once += 1
            elif max(rows[0], rows[2], rows[1] - ELEMENT_TEXTS + 1) > 1:
                doubled += 1
                if len(r.notes) < 8:
                    r.notes.append(f"{label} landed {rows[0]}x, {rows[1]} labelled elements, click {rows[2]}x")
            elif label not in quarantined:
                lost += 1
                if len(r.notes) < 8:
                    r.notes.append(f"{label} lost: snapshot {rows[0]}, labelled elements {rows[1]}, click {rows[2]}")
        stray = set(windows) - self.written
        if stray:
            r.failures.append(f"rows the source never held: {sorted(stray)[:5]}")
        gone = self.written - self.expected
        if gone:
            r.notes.append(f"{len(gone)} frame(s) deleted or rolled back before any pass could read them "
                           "(no event to land)")
        r.events, r.once, r.doubled, r.lost, r.quarantined = len(self.expected), once, doubled, lost, len(quarantined)

    def _click_times(self) -> dict[str, int]:
        """Each frame's click time as the log writes it (the frame's time plus 1 s, in us)."""
        from test_faults_source_rewrites import T0

        return {f"w{n}": int((T0 + timedelta(seconds=7 * n + 1)).timestamp() * 1_000_000)
                for n in range(self.db.n)}

    def close(self) -> None:
        self.db.close()


# -- the cases -------------------------------------------------------------------------------------


def case_retention(c: Case) -> None:
    """Three retention rounds (35 %, 62 %, 48 % of the frames, the oldest) with VACUUM, each
    followed by new capture and a pass."""
    src = Screenpipe(c)
    src.append(17)
    src.sync()
    for fraction, more in ((0.35, 9), (0.62, 11), (0.48, 6)):
        src.delete_fraction(fraction)
        src.vacuum()
        src.append(more)
        src.sync()
    src.append(2)
    src.sync()
    src.measure()
    src.close()


def case_restore(c: Case) -> None:
    """A backup taken mid-way; rows synced after it, rows never synced; the restore; new rows
    reuse the ids; passes; then a retention round on top of the reused ids."""
    src = Screenpipe(c)
    src.append(14)
    src.sync()
    src.backup(c.dir / "backup.sqlite")
    src.append(9)
    src.sync()  # these nine are logged, then rolled back by the restore
    src.append(5)  # never read: gone with the restore
    src.restore(c.dir / "backup.sqlite")
    src.append(13)  # ids 15.. again, other rows
    src.sync()
    src.append(3)
    src.sync()
    src.delete_fraction(0.4)
    src.vacuum()
    src.append(4)
    src.sync()
    src.measure()
    src.close()


def case_copy_and_move(c: Case) -> None:
    """The database copied to another path and synced from there, then moved again (the old
    path gone) and synced from its new place."""
    src = Screenpipe(c)
    src.append(11)
    src.sync()
    src.delete_fraction(0.3)
    src.append(4)
    src.sync()
    src.move(c.dir / "copied" / "screenpipe.db", keep=True)
    src.append(6)
    src.sync()
    src.move(c.dir / "moved" / "elsewhere" / "db.sqlite", keep=False)
    src.append(5)
    # the registered copy is gone (moved away): a pass says so in a sentence naming it (exit 2,
    # bad input) and crashes on nothing; the moved database is registered and followed
    gone = str(c.dir / "copied" / "screenpipe.db")
    res = c.af("sync", "--home", str(c.home), expect=(0, 1, 2))
    c.check(res["rc"] == 0 or gone in res["stderr"] + res["stdout"], "a pass with a vanished source does not name it")
    src.sync()
    src.append(2)
    src.sync(expect=(0, 1, 2))  # every registered source is passed over, the vanished one too
    c.result.notes.append("a pass over a vanished registered source exits 2 naming it; the others are still synced")
    src.measure()
    src.close()


def case_restore_sealed(c: Case) -> None:
    """The restore on days the log has sealed: new rows reuse ids of rows the log holds and land
    as amendments of the sealed days."""
    src = Screenpipe(c)
    src.append(10)
    src.sync()
    src.seal()
    src.backup(c.dir / "backup.sqlite")
    src.append(7)
    src.sync()  # amendments of the sealed day
    src.restore(c.dir / "backup.sqlite")
    src.append(9)  # ids 11.. again
    src.sync()
    src.seal()
    src.append(2)
    src.sync()
    src.measure()
    src.close()


OPS = ("append", "append", "append", "delete", "vacuum", "backup", "restore", "sync", "sync", "seal")


def case_interleaved(seed: int) -> Callable[[Case], None]:
    def run(c: Case) -> None:
        """Appends, retention, VACUUM, backups, restores and passes in a seeded random order."""
        rnd = random.Random(seed)
        src = Screenpipe(c)
        backup = c.dir / "backup.sqlite"
        have_backup = False
        src.append(rnd.randint(3, 9))
        src.sync()
        steps = []
        for _ in range(rnd.randint(9, 14)):
            op = rnd.choice(OPS)
            if op == "append":
                k = rnd.randint(1, 9)
                src.append(k)
                steps.append(f"append {k}")
            elif op == "delete" and src.frames():
                f = rnd.choice((0.1, 0.25, 0.3, 0.5, 0.7))
                steps.append(f"delete {src.delete_fraction(f)}")
            elif op == "vacuum":
                src.vacuum()
                steps.append("vacuum")
            elif op == "backup":
                src.backup(backup)
                have_backup = True
                steps.append("backup")
            elif op == "restore" and have_backup:
                src.restore(backup)
                steps.append("restore")
            elif op == "sync" and src.frames():
                src.sync()
                steps.append("sync")
            elif op == "seal":
                src.seal()
                steps.append("seal")
        src.append(1)
        src.sync()
        c.result.notes.insert(0, f"seed {seed}: " + ", ".join(steps))
        src.measure()
        src.close()

    return run


def case_damaged_lines(c: Case) -> None:
    """Lines no reader may choke on, appended to today's open segments after a pass: bytes that
    are not UTF-8, `null`, a newer capture schema on inputs, a snapshot missing its time, an
    element of the wrong types. `af day`, `af context`, `af log status` and the MCP tools answer,
    name the lines, print no traceback; a later pass still lands on the damaged day."""
    src = Screenpipe(c)
    src.append(8)
    src.sync()
    open_dir = c.home / "log" / "open"
    days = sorted(p.name for p in open_dir.iterdir() if (p / "snapshots.jsonl").exists())
    if not c.check(bool(days), "no open day after the pass"):
        return
    day = days[-1]
    folder = open_dir / day

    def first(kind: str) -> dict[str, Any]:
        return dict(json.loads((folder / f"{kind}.jsonl").read_bytes().splitlines()[0]))

    def lines(kind: str) -> int:
        return len((folder / f"{kind}.jsonl").read_bytes().splitlines())

    snap, inp, elem = first("snapshots"), first("inputs"), first("elements")
    bad: list[tuple[str, bytes]] = [
        ("snapshots", b"\xff\xfe\x00 not text\n"),
        ("snapshots", b"null\n"),
        ("snapshots", json.dumps({k: v for k, v in snap.items() if k != "ts_us"} | {"ref": "held-out:no-ts"}).encode()
         + b"\n"),
        ("inputs", json.dumps(inp | {"ref": "held-out:newer", "capture_schema": CAPTURE_SCHEMA_VERSION + 2,
                                     "pen_pressure": 0.7}).encode() + b"\n"),
        ("elements", json.dumps(elem | {"ref": "held-out:types", "depth": "deep", "left": [1]}).encode() + b"\n"),
    ]
    named: set[tuple[str, int]] = set()
    for kind, line in bad:
        named.add((f"log/open/{day}/{kind}.jsonl", lines(kind) + 1))
        with open(folder / f"{kind}.jsonl", "ab") as f:
            f.write(line)
    count = f"{len(bad)} line(s)"
    for argv in (["day", day], ["day", day, "-f", "json"], ["context", "--day", day], ["log", "status"]):
        res = c.af(*argv, "--home", str(c.home))
        said = res["stderr"] + res["stdout"]
        c.check(count in said and any(f"{f} line {n}" in said for f, n in named),
                f"af {' '.join(argv)} does not name the {len(bad)} skipped lines")
    res = c.af("log", "status", "--json", "--home", str(c.home))
    try:
        listed = {(s["file"], s["line"]) for d in json.loads(res["stdout"])["days"] for s in d.get("skipped_lines", [])}
    except (ValueError, KeyError, TypeError):
        listed = set()
    c.check(listed == named, f"af log status --json lists {sorted(listed)}, not the {len(bad)} skipped lines")
    c.check(_mcp_names_lines(c, day, named), "an MCP answer does not name every skipped line")
    src.append(3)  # capture still lands on the damaged day
    src.sync()
    src.measure()
    src.close()


def _mcp_names_lines(c: Case, day: str, named: set[tuple[str, int]]) -> bool:
    """get_activity, get_day_summary, search_activity and get_context through the official MCP
    client over stdio (`af mcp`, the tests' session helper): no error, every JSON answer lists
    each skipped line, the context block counts them."""
    import anyio
    from test_faults_log import _ask  # the tests' official stdio client session, imported

    calls: list[tuple[str, dict[str, Any]]] = [("get_activity", {"day": day}), ("get_day_summary", {"day": day}),
                                               ("search_activity", {"query": "Code"}),
                                               ("get_context", {"day": day})]
    errlog = c.dir / "mcp-stderr.txt"
    now = datetime.now(UTC).isoformat(timespec="seconds")

    try:
        answers = anyio.run(lambda: _ask(Home(c.home), now, calls, errlog))
    except Exception as exc:  # the session itself failed: reported, not raised
        c.record("mcp (stdio client)", f"session failed: {exc!r}"[:200], "", errlog.read_text(), (0,))
        return False
    text = "\n".join(t for _, t in answers)
    c.record("mcp (stdio client)", 0, text, errlog.read_text(), (0,))
    ok = True
    for (name, _), (err, answer) in zip(calls, answers, strict=True):
        if err:
            c.result.failures.append(f"MCP {name} answered an error: {answer[:160]}")
            ok = False
        elif answer.startswith("{"):
            listed = {(s["file"], s["line"]) for s in json.loads(answer).get("skipped_lines", [])}
            if name != "search_activity" or listed:
                ok &= listed == named
        else:
            ok &= f"{len(named)} line(s)" in answer
    return ok


def case_serve_hosts(c: Case) -> None:
    """`af serve` answers its own origin only: other names (with its port too) get 421, CRLF
    and other forms of ?d= get 400, and nothing injected reaches a header."""
    from test_views import _free_port, _listening, _raw, _until  # the tests' HTTP helpers, imported

    Home(c.home).init(tz="UTC")
    port = _free_port()
    out_path, err_path = c.dir / "serve.out", c.dir / "serve.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen([c.af_path, "serve", "--port", str(port), "--home", str(c.home)],
                                stdout=out, stderr=err, env=c.env)
    try:
        try:
            _until(lambda: proc.poll() is not None or _listening(port), 60, "af serve listening")
        except AssertionError:
            pass
        if not c.check(proc.poll() is None and _listening(port), "af serve did not start"):
            return
        ours = f"127.0.0.1:{port}"
        asks: list[tuple[str | None, str, int]] = [
            (ours, "/", 200), (f"localhost:{port}", "/days.json", 200),
            ("evil.example", "/", 421), ("localhost.evil.example", "/", 421),
            (f"localhost.evil.example:{port}", "/days.json", 421), (f"127.0.0.2:{port}", "/", 421),
            (f"attacker.test:{port}", "/days.json", 421), (f"localhost:{port}@evil.example", "/", 421),
            (f"0.0.0.0:{port}", "/", 421), (f"localhost:{port + 7}", "/", 421), (f"{ours}.", "/", 421),
            (ours, "/day?d=2026-03-16%0D%0ALocation:%20http://evil.example/", 400),
            (ours, "/day?d=%0d%0aSet-Cookie:%20held=out", 400),
            (ours, "/day?d=2026-03-16%0d", 400),
            (ours, "/day?d=2026-03-16%250d%250aX-Held:%20out", 400),
            (ours, "/day?d=2026-03-16%E2%80%A8X-Held:%20out", 400),
        ]
        for host, target, want in asks:
            raw = f"GET {target} HTTP/1.1\r\n".encode() + (f"Host: {host}\r\n".encode() if host else b"") + \
                b"Connection: close\r\n\r\n"
            try:
                status, headers, _body = _raw(port, raw)
            except (OSError, ValueError, IndexError) as exc:
                c.result.failures.append(f"Host {host} {target}: {exc!r}")
                continue
            injected = bool({"location", "set-cookie", "x-held"} & set(headers))
            c.check(status == want and not injected, f"Host {host!r} GET {target}: {status}, expected {want}"
                    + (" with an injected header" if injected else ""))
        c.result.events, c.result.once = len(asks), len(asks) - len(c.result.failures)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        c.record(f"serve --port {port}", proc.returncode, out_path.read_text(errors="replace"),
                 err_path.read_text(errors="replace"), (0, -signal.SIGINT, 130))


def _tree(root: Path) -> dict[str, tuple[int, int, bytes | None]]:
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_mode, st.st_uid, p.read_bytes() if p.is_file() and not p.is_symlink()
                                         else None)
    return out


def case_foreign_folder(c: Case) -> None:
    """--home, AF_HOME and `af team add --create` at folders somebody else owns (no af.json):
    each command refused (exit 2, no traceback), the folder's contents and modes unchanged."""
    aw = c.dir / "aw.json"
    aw.write_text(json.dumps({"buckets": {"aw-watcher-window_h": {"type": "currentwindow", "hostname": "h", "events": [
        {"timestamp": "2026-03-20T10:00:00Z", "duration": 30, "data": {"app": "Code", "title": "x"}}]}}}))
    db = c.dir / "sp.sqlite"
    src = Screenpipe(c, "sp.sqlite")
    src.append(2)
    src.close()

    def folder(name: str, mode: int, files: dict[str, str], link: bool = False) -> Path:
        root = c.dir / "foreign" / name
        root.mkdir(parents=True)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        if link:
            (root / "current").symlink_to(c.dir)
        for p in [root, *(q for q in root.rglob("*") if q.is_dir() and not q.is_symlink())]:
            p.chmod(mode)
        return root

    team: Path | None = c.dir / "team"
    if c.af("team", "init", str(team))["rc"] != 0:
        team = None
    tries: list[tuple[Path, list[str], dict[str, str]]] = []
    f1 = folder("project", 0o750, {"src/main.c": "int main(void){return 0;}\n", "README": "mine\n"})
    tries.append((f1, ["sync", "screenpipe", str(db), "--home", str(f1), "--tz", "UTC"], {}))
    f2 = folder("dotfiles-only", 0o775, {".profile": "export X=1\n"})
    tries.append((f2, ["import", "activitywatch", str(aw), "--quiet"], {"AF_HOME": str(f2)}))
    f3 = folder("with-link", 0o711, {"data.bin": "\x00\x01"}, link=True)
    tries.append((f3, ["log", "status", "--home", str(f3)], {}))
    f4 = folder("shared-docs", 0o755, {"docs/a.md": "# a\n"})
    tries.append((f4, ["day", "today"], {"AF_HOME": str(f4)}))
    f5 = folder("nested", 0o770, {"a/b/c.txt": "c\n"})
    tries.append((f5, ["mcp", "--home", str(f5)], {}))
    f6 = folder("serve-here", 0o755, {"index.html": "<p>hi</p>\n"})
    tries.append((f6, ["serve", "--port", "0", "--home", str(f6)], {}))
    if team is not None:
        f7 = folder("team-member", 0o755, {"notes.txt": "bob's\n"})
        tries.append((f7, ["team", "add", "carol", str(f7), "--create", "--tz", "UTC", "--team", str(team)], {}))
    # AF_HOME foreign and --home foreign at once: the explicit one decides, and is refused too
    f8 = folder("explicit", 0o755, {"x": "x\n"})
    tries.append((f8, ["import", "activitywatch", str(aw), "--home", str(f8), "--quiet"], {"AF_HOME": str(f2)}))
    adopted = []
    for root, argv, env in tries:
        before = _tree(root)
        res = c.af(*argv, env=env, expect=(2,), stdin="", timeout=60)
        said = res["stderr"].strip()
        c.check(str(root) in said and len(said.splitlines()) == 1,
                f"af {' '.join(argv[:2])} at {root.name}: no one-sentence refusal naming it ({said[:160]!r})")
        if _tree(root) != before or (root / "af.json").exists():
            adopted.append(root.name)
    c.result.events = len(tries)
    c.result.once = len(tries) - len(adopted)
    c.result.adopted = adopted


def _aw_export(path: Path, events: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"buckets": {"aw-watcher-window_laptop": {
        "id": "aw-watcher-window_laptop", "type": "currentwindow", "client": "aw-watcher-window",
        "hostname": "laptop", "events": events}}}), encoding="utf-8")


def _aw_event(eid: int, start: datetime, seconds: float, app: str) -> dict[str, Any]:
    return {"id": eid, "timestamp": start.isoformat(), "duration": seconds, "data": {"app": app, "title": f"{app} {eid}"}}


def _aw_measure(c: Case, truth: list[tuple[int, datetime, float, str]]) -> None:
    """Each true event (id, start, seconds, app), known by its title ("<app> <id>"), against the
    logged rows of that title: once if it landed and no instant of it is covered twice, doubled
    if one is, lost if no row of it landed and the quarantine does not name it. A landed event
    cut short where another event held the stream at the same time is noted as trimmed."""
    log = EventLog(Home(c.home))
    spans: dict[str, list[tuple[int, int]]] = {}
    for d in log.days():
        for snap in log.read_day(d.day).snapshots:
            if snap.stream == "aw:laptop":
                spans.setdefault(str(snap.window), []).append((snap.ts_us, snap.end_us or snap.ts_us))
    q = log.quarantine_rows()
    r = c.result
    for row in q:
        r.reasons[str(row.get("reason"))[:90]] += 1
    # a quarantined event is known by its title in the row's excerpt
    quarantined = {f"{app} {eid}" for eid, _, _, app in truth for row in q
                   if re.search(rf"""['"]{re.escape(f"{app} {eid}")}['"]""", str(row.get("raw")))}
    once = doubled = lost = trimmed = 0
    us = 1_000_000
    for eid, start, seconds, app in truth:
        title = f"{app} {eid}"
        a = int(start.timestamp() * us)
        b = a + int(seconds * us)
        parts = sorted(spans.get(title, []))
        covered = sum(e - s for s, e in parts)
        union, reach = 0, a
        for s, e in parts:
            if e > reach:
                union += e - max(s, reach)
                reach = e
        outside = sum(max(0, a - s) + max(0, e - b) for s, e in parts)
        if covered > union + us or outside > us:
            doubled += 1
            r.notes.append(f"{title} at {start:%H:%M:%S} ({seconds:g} s): {len(parts)} rows cover {covered / us:g} s")
        elif not parts and title not in quarantined:
            lost += 1
            r.notes.append(f"{title} at {start:%H:%M:%S} ({seconds:g} s): no row, not quarantined")
        elif parts:
            once += 1
            trimmed += union < (b - a) - us
    if trimmed:
        r.notes.append(f"{trimmed} landed event(s) trimmed where an earlier-written event held the same instants")
    r.events, r.once, r.doubled, r.lost = len(truth), once, doubled, lost
    r.quarantined = len(quarantined & {f"{app} {eid}" for eid, _, _, app in truth})


def case_aw_versions(c: Case) -> None:
    """An export read again as its events grow (the same id, longer), with an older clipped copy
    of one event beside the grown one; synced after each version, then imported once more."""
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2, minutes=30)
    path = c.dir / "aw-export.json"
    v = [
        [_aw_event(1, t0, 45, "Code"), _aw_event(2, t0 + timedelta(seconds=45), 20, "Mail")],
        [_aw_event(1, t0, 45, "Code"), _aw_event(2, t0 + timedelta(seconds=45), 140, "Mail"),
         _aw_event(3, t0 + timedelta(seconds=185), 10, "Code")],
        [_aw_event(1, t0, 45, "Code"), _aw_event(2, t0 + timedelta(seconds=45), 140, "Mail"),
         _aw_event(3, t0 + timedelta(seconds=185), 400, "Code"),
         _aw_event(4, t0 + timedelta(seconds=585), 75, "Slack")],
        # the range read again, clipped at a later start (aw-server-rust clips to the asked range)
        [_aw_event(3, t0 + timedelta(seconds=300), 285, "Code"),
         _aw_event(4, t0 + timedelta(seconds=585), 210, "Slack")],
    ]
    for i, events in enumerate(v):
        _aw_export(path, events)
        if i == 0:
            c.af("sync", "activitywatch", str(path), "--home", str(c.home), "--tz", "UTC")
        else:
            c.af("sync", "--home", str(c.home))
    c.af("import", "activitywatch", str(path), "--home", str(c.home), "--quiet")
    truth = [(1, t0, 45.0, "Code"), (2, t0 + timedelta(seconds=45), 140.0, "Mail"),
             (3, t0 + timedelta(seconds=185), 400.0, "Code"), (4, t0 + timedelta(seconds=585), 210.0, "Slack")]
    _aw_measure(c, truth)


def case_aw_clock_back(c: Case) -> None:
    """The clock goes back 20 minutes after a pass: the events written then end 20 minutes
    before the last pass's watermark; later passes and an import of the same export."""
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    path = c.dir / "aw-export.json"
    first = [(t0 + timedelta(seconds=40 * i), 38.0, ("Code", "Browser")[i % 2]) for i in range(45)]  # 30 min
    watermark = t0 + timedelta(seconds=40 * 45)
    back = watermark - timedelta(minutes=20) - timedelta(minutes=8)  # the clock reads 20 min behind
    second = [(back + timedelta(seconds=24 * i), 22.0, "Terminal") for i in range(20)]  # ends 20 min before
    later = [(watermark + timedelta(seconds=30 * i), 25.0, "Code") for i in range(6)]

    def export(evs: list[tuple[datetime, float, str]]) -> None:
        _aw_export(path, [_aw_event(i + 1, s, d, app) for i, (s, d, app) in enumerate(evs)])

    export(first)
    c.af("sync", "activitywatch", str(path), "--home", str(c.home), "--tz", "UTC")
    export(first + second)
    c.af("sync", "--home", str(c.home))
    export(first + second + later)
    c.af("sync", "--home", str(c.home))
    c.af("import", "activitywatch", str(path), "--home", str(c.home), "--quiet")
    c.result.notes.append("the Terminal events overlap minutes Code/Browser had (the clock repeated them)")
    _aw_measure(c, [(i + 1, s, d, app) for i, (s, d, app) in enumerate(first + second + later)])


CASES: dict[str, Callable[[Case], None]] = {
    "retention-3-rounds": case_retention,
    "restore-mid-way": case_restore,
    "restore-sealed-days": case_restore_sealed,
    "copy-and-move": case_copy_and_move,
    **{f"interleaved-{s}": case_interleaved(s) for s in SEEDS},
    "damaged-lines": case_damaged_lines,
    "serve-hosts": case_serve_hosts,
    "foreign-folder": case_foreign_folder,
    "aw-growing-versions": case_aw_versions,
    "aw-clock-back-20min": case_aw_clock_back,
}


# -- report ------------------------------------------------------------------------------------


HEADER = ["case", "events", "landed once", "doubled", "lost", "quarantined", "tracebacks", "adopted", "exits",
          "checks", "result"]


def _n(v: int | None) -> str:
    return "-" if v is None else str(v)


def row(r: Result) -> list[str]:
    return [r.case, _n(r.events), _n(r.once), _n(r.doubled), _n(r.lost), _n(r.quarantined), str(len(r.tracebacks)),
            "-" if r.adopted is None else str(len(r.adopted)), f"{len(r.exits)} bad / {r.commands}",
            "ok" if not r.failures else f"{len(r.failures)} failed", "PASS" if r.ok else "FAIL"]


def table(results: list[Result]) -> str:
    lines = [HEADER, *(row(r) for r in results)]
    widths = [max(len(x[i]) for x in lines) for i in range(len(HEADER))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)).rstrip() for x in lines)


def markdown(results: list[Result], argv: list[str]) -> str:
    out = ["# Held-out fault trial (issue 36)", "",
           f"`python bench/faults/run_faults.py {' '.join(argv)}`".replace("  ", " "), "",
           "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(row(r)) + " |" for r in results]
    detail = details(results)
    if detail:
        out += ["", "## Details", "", *[f"- {line}" for line in detail]]
    return "\n".join(out) + "\n"


def details(results: list[Result]) -> list[str]:
    lines = []
    for r in results:
        for what, items in (("traceback in", r.tracebacks), ("adopted", r.adopted or []), ("exit", r.exits),
                            ("check failed", r.failures)):
            lines += [f"{r.case}: {what}: {x}" for x in items]
        lines += [f"{r.case}: quarantined {n}x: {reason}" for reason, n in sorted(r.reasons.items())]
        lines += [f"{r.case}: {x}" for x in r.notes]  # what the case did and saw
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--work", default="/tmp/faults", help="folder for the cases' data folders and faults.md")
    ap.add_argument("--af", default=DEFAULT_AF, help="the af command to run (default: the repository's venv)")
    ap.add_argument("--only", nargs="*", help="case names (or prefixes, e.g. interleaved)")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(CASES))
        return 0
    names = [n for n in CASES if not a.only or any(n == o or n.startswith(o) for o in a.only)]
    if not names:
        ap.error(f"no case matches {a.only}; see --list")
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for name in names:
        print(f"-- {name}", file=sys.stderr, flush=True)
        c = Case(name, a.af, work)
        t0 = time.monotonic()
        try:
            CASES[name](c)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the trial's own failure (or pytest's skip when the screenpipe
            # migrations are missing): a failed case, reported, never a pass
            c.result.failures.append(f"the case itself failed: {type(exc).__name__}: {exc}")
        c.result.seconds = round(time.monotonic() - t0, 1)
        r = c.result
        print(f"   {'PASS' if r.ok else 'FAIL'} in {r.seconds:g} s: events {_n(r.events)}, once {_n(r.once)}, "
              f"doubled {_n(r.doubled)}, lost {_n(r.lost)}, tracebacks {len(r.tracebacks)}", file=sys.stderr,
              flush=True)
        results.append(r)
    print(table(results))
    detail = details(results)
    if detail:
        print("\n" + "\n".join(detail))
    (work / "faults.md").write_text(markdown(results, argv), encoding="utf-8")
    print(f"\nwritten: {work / 'faults.md'}", file=sys.stderr)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
