"""`af record` against a real X server: Xvfb, openbox, real windows, xdotool driving input.

The recorder runs as its own process (the way a user runs it), is stopped with SIGTERM or
--duration, and what it wrote is read back from the event log. Skipped only when Xvfb, openbox
or xdotool are not installed (`make test` installs them on CI).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capture.home import Home
from capture.log import EventLog
from capture.model import DayCapture, row_to_dict

TOOLS = ("Xvfb", "openbox", "xdotool", "xprop", "xwininfo")
pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in TOOLS),
    reason=f"needs {', '.join(t for t in TOOLS if shutil.which(t) is None)} "
    "(Debian: apt-get install xvfb openbox xdotool x11-utils; `make test` installs them)",
)
ROOT = Path(__file__).resolve().parent.parent

# A tiny X client: one window per [class, title] (or [class, title, x, y] for a fixed place)
# argument, 420x320, kept open until killed. With a second argument [[x, width, height], ...] it
# first defines those RandR monitors; they last as long as this client's connection.
WINDOWS_PROGRAM = r"""
import json, sys
from Xlib import X, Xutil, display
from Xlib.ext import randr
from Xlib.protocol import rq

class SetMonitor(rq.Request):  # RandR 1.5 SetMonitor, spelled out field by field
    _request = rq.Struct(
        rq.Card8("opcode"), rq.Opcode(43), rq.RequestLength(), rq.Window("window"),
        rq.Card32("name"), rq.Bool("primary"), rq.Bool("automatic"), rq.LengthOf("outputs", 2),
        rq.Int16("x"), rq.Int16("y"), rq.Card16("width"), rq.Card16("height"),
        rq.Card32("width_mm"), rq.Card32("height_mm"), rq.List("outputs", rq.Card32Obj))

d = display.Display()
s = d.screen()
if len(sys.argv) > 2:
    outputs = s.root.xrandr_get_screen_resources().outputs
    for i, (x, width, height) in enumerate(json.loads(sys.argv[2])):
        SetMonitor(display=d.display, opcode=d.display.get_extension_major(randr.extname), window=s.root,
                   name=d.intern_atom(f"TEST-{i}"), primary=i == 0, automatic=False, x=x, y=0,
                   width=width, height=height, width_mm=width // 4, height_mm=height // 4,
                   outputs=outputs[:1] if i == 0 else [])
utf8, net_name = d.intern_atom("UTF8_STRING"), d.intern_atom("_NET_WM_NAME")
ids = []
for spec in json.loads(sys.argv[1]):
    cls, title, x, y = (spec + [0, 0])[:4]
    w = s.root.create_window(x, y, 420, 320, 0, s.root_depth, X.InputOutput, X.CopyFromParent,
                             background_pixel=s.white_pixel, event_mask=X.KeyPressMask)
    if len(spec) > 2:
        w.set_wm_normal_hints(flags=Xutil.USPosition | Xutil.PPosition, x=x, y=y)
    w.set_wm_class(cls.lower(), cls)
    w.set_wm_name(title)
    w.change_property(net_name, utf8, 8, title.encode())
    w.map()
    ids.append(w.id)
d.sync()
print(json.dumps(ids), flush=True)
while True:
    d.next_event()
"""


class Desktop:
    def __init__(self, number: int):
        self.display = f":{number}"
        self.env = dict(os.environ, DISPLAY=self.display)

    def xdotool(self, *args: str) -> str:
        out = subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True, timeout=10)
        return out.stdout.strip()

    def activate(self, wid: int) -> None:
        self.xdotool("windowactivate", "--sync", str(wid))
        self.wait_active(wid)

    def wait_active(self, wid: int) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.xdotool("getactivewindow") == str(wid):
                return
            time.sleep(0.05)
        raise AssertionError(f"window {wid} never became active")

    def rect(self, wid: int) -> tuple[int, int, int, int]:
        from capture.x11 import X11Desktop

        x = X11Desktop(self.display)
        try:
            info = x.describe(x.d.create_resource_object("window", wid))
        finally:
            x.close()
        assert info is not None
        return info.x, info.y, info.width, info.height

    def click_in(self, wid: int) -> tuple[int, int]:
        x, y, w, h = self.rect(wid)
        cx, cy = x + w // 2, y + h // 2
        # (no --sync: it waits for a motion that never comes when the pointer is already there)
        self.xdotool("mousemove", str(cx), str(cy), "click", "1")
        return cx, cy

    def type(self, text: str) -> None:
        self.xdotool("type", "--delay", "20", text)

    def open_windows(self, specs: list[list[Any]], monitors: list[list[int]] | None = None,
                     ) -> tuple[subprocess.Popen[str], list[int]]:
        args = [json.dumps(specs)] + ([json.dumps(monitors)] if monitors else [])
        proc = subprocess.Popen([sys.executable, "-c", WINDOWS_PROGRAM, *args], env=self.env,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        ids = json.loads(proc.stdout.readline())
        for wid in ids:  # mapped and managed by the window manager
            deadline = time.monotonic() + 5
            while "Map State: IsViewable" not in subprocess.run(
                    ["xwininfo", "-id", str(wid)], env=self.env, capture_output=True, text=True).stdout:
                assert time.monotonic() < deadline, f"window {wid} never mapped"
                time.sleep(0.05)
        return proc, ids


@contextlib.contextmanager
def x_session(size: str) -> Iterator[Desktop]:
    """Xvfb on a display it picks itself (-displayfd: no race with other test runs) plus openbox."""
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{size}x24", "-nolisten", "tcp"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    procs: list[subprocess.Popen[Any]] = [xvfb]
    try:
        ready, _, _ = select.select([read_fd], [], [], 15)
        assert ready, "Xvfb did not start"
        number = int(os.read(read_fd, 32).decode().strip())
        d = Desktop(number)
        procs.append(subprocess.Popen(["openbox"], env=d.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        while "_NET_SUPPORTING_WM_CHECK(WINDOW)" not in subprocess.run(
                ["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], env=d.env, capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline, "openbox did not start"
            time.sleep(0.1)
        yield d
    finally:
        os.close(read_fd)
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with x_session("1280x800") as d:
        yield d


def _signal_masks(pid: int) -> str:
    """Each thread's pending, blocked and caught signals (hex masks, /proc/PID/task/TID/status)."""
    lines = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        with contextlib.suppress(OSError):
            status = (task / "status").read_text().splitlines()
            keep = [ln for ln in status if ln.startswith(("Name:", "SigPnd:", "ShdPnd:", "SigBlk:", "SigCgt:"))]
            lines.append(f"{task.name}: " + " ".join(" ".join(ln.split()) for ln in keep))
    return "\n".join(lines)


class Recording:
    """`af record` running in its own process."""

    def __init__(self, desktop: Desktop, home: Path, *args: str):
        self.home = home
        cmd = [sys.executable, "-m", "af_pipeline.interfaces.cli", "record", "--home", str(home), "--tz", "UTC",
               "--display", desktop.display, "--json", *args]
        env = dict(os.environ, PYTHONFAULTHANDLER="1")  # a hung recorder can be made to show its threads
        for var in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE"):  # --display alone must be enough
            env.pop(var, None)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        assert self.proc.stderr is not None
        ready, _, _ = select.select([self.proc.stderr], [], [], 20)
        line = self.proc.stderr.readline() if ready else ""
        assert "recording" in line, f"recorder did not start: {line!r}"

    def wait_for(self, condition: Any, timeout: float = 90) -> None:
        """Wait until what the recorder has written to the log satisfies ``condition`` (it
        writes every few seconds; a loaded machine may take longer)."""
        deadline = time.monotonic() + timeout
        cap = None
        while time.monotonic() < deadline:
            log = EventLog(Home(self.home)) if (self.home / "af.json").exists() else None
            days = [s.day for s in log.days()] if log is not None else []
            cap = log.read_day(days[-1]) if days else None  # type: ignore[union-attr]
            if cap is not None and condition(cap):
                return
            assert self.proc.poll() is None, "the recorder exited early"
            time.sleep(0.1)
        # what was there, so a failure says which part never came
        seen = "nothing" if cap is None else (
            f"snapshots {[(s.stream, s.app, s.focused, s.trigger) for s in cap.snapshots]}, "
            f"inputs {[(e.kind, e.stream, e.app) for e in cap.inputs]}")
        raise AssertionError(f"the recorder never wrote what the test waited for; the log held {seen}")

    def stop(self, sig: int | None = signal.SIGTERM) -> dict[str, Any]:
        if sig is not None:
            self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=40)
        except subprocess.TimeoutExpired:
            # clean-clone CI once saw a recorder not end within 40 s of SIGTERM, printing nothing:
            # its threads' stacks (faulthandler, on SIGABRT) say where it waits, and their signal
            # masks whether the SIGTERM is pending, blocked or was never caught
            masks = _signal_masks(self.proc.pid)
            self.proc.send_signal(signal.SIGABRT)
            _out, err = self.proc.communicate(timeout=20)
            raise AssertionError(f"the recorder did not stop within 40 s; its threads' signal masks:\n{masks}\n"
                                 f"their stacks:\n{err}") from None
        assert self.proc.returncode == 0, err
        return json.loads(out)  # type: ignore[no-any-return]

    def day(self) -> DayCapture:
        log = EventLog(Home(self.home))
        days = [s.day for s in log.days()]
        assert len(days) == 1, days
        return log.read_day(days[0])


def dump(cap: DayCapture) -> str:
    return json.dumps([row_to_dict(r) for k in ("snapshots", "inputs", "streams") for r in getattr(cap, k)])


def test_records_windows_clicks_typing_and_never_excluded_windows(desktop, tmp_path):
    proc, (alpha, beta, vault, payroll) = desktop.open_windows([
        ["AlphaApp", "Alpha document"],
        ["BetaApp", "Beta notes"],
        ["KeePassXC", "Passwords.kdbx - KeePassXC"],  # excluded by default
        ["Sheets", "Payroll 2026"],  # excluded by --exclude-title below
    ])
    try:
        desktop.activate(alpha)
        rec = Recording(desktop, tmp_path / "home", "--exclude-title", "payroll", "--exclude-app", "NoSuchApp")
        alpha_click = desktop.click_in(alpha)
        desktop.type("alpha words")
        time.sleep(0.8)  # longer than the exclusion guard before the next switch
        desktop.activate(vault)
        desktop.type("hunter2secret")
        desktop.click_in(vault)
        desktop.activate(beta)
        time.sleep(0.3)
        beta_click = desktop.click_in(beta)
        desktop.type("beta text")
        time.sleep(0.8)
        desktop.activate(payroll)
        desktop.type("salary99")
        desktop.activate(alpha)
        time.sleep(2.5)  # the typing burst ends, then a flush
        summary = rec.stop()
    finally:
        proc.kill()
        proc.wait()
    cap = rec.day()

    apps = [(s.app, s.window) for s in cap.snapshots]
    assert ("AlphaApp", "Alpha document") in apps
    assert ("BetaApp", "Beta notes") in apps
    assert apps[0] == ("AlphaApp", "Alpha document") and cap.snapshots[0].trigger == "start"
    # Excluded windows: an "(excluded)" marker per stretch, without a title, and nothing else.
    markers = [s for s in cap.snapshots if s.app == "(excluded)"]
    assert len(markers) == 2 and all(s.window is None for s in markers)
    everything = dump(cap)
    for secret in ("KeePass", "Passwords.kdbx", "hunter2", "Payroll", "Sheets", "salary"):
        assert secret not in everything
    assert summary["excluded_stretches"] == 2 and summary["excluded_inputs_dropped"] > 0

    texts = {e.app: e.text for e in cap.inputs if e.kind == "text"}
    assert texts == {"AlphaApp": "alpha words", "BetaApp": "beta text"}
    clicks = [e for e in cap.inputs if e.kind == "click"]
    assert [(c.app, c.x, c.y, c.button, c.stream) for c in clicks] == [
        ("AlphaApp", *alpha_click, "left", "monitor_1"),
        ("BetaApp", *beta_click, "left", "monitor_1"),
    ]
    assert all(0 <= c.x < 1280 and 0 <= c.y < 800 for c in clicks if c.x is not None and c.y is not None)
    assert {e.app for e in cap.inputs if e.kind == "app_switch"} == {"AlphaApp", "BetaApp"}
    assert [(s.stream, s.width_px, s.height_px) for s in cap.streams] == [("monitor_1", 1280, 800)]
    # Every row carries the recorder's ref; the summary counts what landed.
    assert all(r.ref.startswith(summary["source_id"] + ":") for r in [*cap.snapshots, *cap.inputs, *cap.streams])
    assert summary["landed"]["snapshots"] == len(cap.snapshots)
    assert summary["landed"]["inputs"] == len(cap.inputs)
    assert cap.recorders == ["recorder"]


def wait_stopped(pid: int) -> None:
    """Until every thread of pid is stopped (SIGSTOP is acted on asynchronously)."""
    deadline = time.monotonic() + 10
    while True:
        states = []
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):
                states.append(task.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0])
        if states and all(st in "tT" for st in states):
            return
        assert time.monotonic() < deadline, f"process {pid} did not stop: {states}"
        time.sleep(0.01)


def test_stalled_recorder_keeps_no_keystroke_of_an_excluded_window(desktop, tmp_path):
    """The whole recorder process is stopped (SIGSTOP: its loop and its listener threads) while a
    password manager is focused, typed into and left for another window. When it resumes it sees
    only the window now focused: the vault's keystrokes must not become that window's text."""
    proc, (alpha, beta, vault) = desktop.open_windows([
        ["AlphaApp", "Alpha document"],
        ["BetaApp", "Beta notes"],
        ["KeePassXC", "Passwords.kdbx - KeePassXC"],
    ])
    try:
        desktop.activate(alpha)
        rec = Recording(desktop, tmp_path / "home")
        desktop.type("alpha words")
        rec.proc.send_signal(signal.SIGSTOP)
        try:
            wait_stopped(rec.proc.pid)
            desktop.activate(vault)
            desktop.type("hunter2secret")
            desktop.activate(beta)
        finally:
            rec.proc.send_signal(signal.SIGCONT)
        desktop.type("beta words")
        summary = rec.stop()
    finally:
        proc.kill()
        proc.wait()
    cap = rec.day()
    everything = dump(cap)
    for secret in ("KeePass", "Passwords.kdbx", "hunter2", "secret"):
        assert secret not in everything
    texts = [(e.app, e.text) for e in cap.inputs if e.kind == "text"]
    # Alpha's last keys were typed right before the unseen switch: the guard may drop some.
    assert all(app == "AlphaApp" and "alpha words".startswith(text or "") for app, text in texts[:-1])
    assert texts[-1] == ("BetaApp", "beta words")
    keys = [e for e in cap.inputs if e.kind == "key"]
    assert len([k for k in keys if k.app == "BetaApp"]) == len("beta words")
    assert len([k for k in keys if k.app == "AlphaApp"]) <= len("alpha words")
    assert len(keys) <= len("alpha words") + len("beta words")
    # The vault was never seen: its stretch is unknown, a marker holds its time, its keys are
    # dropped and counted.
    assert summary["unknown_stretches"] >= 1
    assert summary["unknown_inputs_dropped"] >= len("hunter2secret")
    assert any(s.app == "(excluded)" and s.window is None for s in cap.snapshots)


def test_no_typed_text_and_screenshots(desktop, tmp_path, capsys):
    proc, (alpha,) = desktop.open_windows([["AlphaApp", "Alpha document"]])
    vault_proc = None
    try:
        desktop.activate(alpha)
        # A generous --duration bounds a run that goes wrong; the test stops it itself once the
        # recorder has written what it must (a loaded machine may take many seconds for that).
        rec = Recording(desktop, tmp_path / "home", "--no-typed-text", "--screenshots", "--duration", "600")
        # A second recorder on the same data folder would write everything twice: refused.
        from af_pipeline.interfaces import cli

        assert cli.main(["record", "--home", str(tmp_path / "home"), "--display", desktop.display]) == 2
        assert "is already recording into" in capsys.readouterr().err
        desktop.click_in(alpha)
        desktop.type("topsecret")
        rec.wait_for(lambda cap: len([e for e in cap.inputs if e.kind == "key"]) >= len("topsecret"))
        # A password manager opens (and takes focus); back in Alpha it is still on screen.
        vault_proc, (vault,) = desktop.open_windows([["KeePassXC", "Passwords.kdbx - KeePassXC"]])
        desktop.wait_active(vault)
        rec.wait_for(lambda cap: any(s.app == "(excluded)" for s in cap.snapshots))
        desktop.activate(alpha)
        desktop.click_in(alpha)
        rec.wait_for(lambda cap: any(e.kind == "click" for e in cap.inputs
                                     if e.ts_us > max(s.ts_us for s in cap.snapshots if s.app == "(excluded)")))
        summary = rec.stop()
    finally:
        for p in (proc, vault_proc):
            if p is not None:
                p.kill()
                p.wait()
    cap = rec.day()
    keys = [e for e in cap.inputs if e.kind == "key"]
    assert len(keys) == len("topsecret")
    assert all(k.key_code is None and k.text is None for k in keys)
    assert not [e for e in cap.inputs if e.kind == "text"]
    assert "topsecret" not in dump(cap) and summary["typed_text"] is False

    # Screenshots: PNGs of 1280x800 for snapshots taken before the vault was open, none after.
    assert (tmp_path / "home" / "screens").stat().st_mode & 0o777 == 0o700
    shots = sorted((tmp_path / "home" / "screens").rglob("*.png"))
    assert len(shots) == summary["screenshots"] >= 1
    png = shots[0].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (1280, 800)
    assert summary["screenshots_skipped"] >= 1
    frames = {s.source_frame_id for s in cap.snapshots if s.app == "AlphaApp"}
    assert {p.stem.replace("_", ":") for p in shots} <= frames


def test_no_display_is_a_clear_usage_error(tmp_path, desktop, monkeypatch, capsys):
    from af_pipeline.interfaces import cli

    monkeypatch.delenv("DISPLAY", raising=False)
    base = ["record", "--home", str(tmp_path / "h"), "--duration", "1"]
    assert cli.main(base) == 2
    err = capsys.readouterr().err
    assert "no X display: set DISPLAY or pass --display" in err and "Traceback" not in err
    # A display nobody serves: the same sentence, naming the display.
    unused = f":{int(desktop.display[1:]) + 4000}"
    assert cli.main([*base, "--display", unused]) == 2
    err = capsys.readouterr().err
    assert "no X display" in err and unused in err
    assert not (tmp_path / "h").exists()  # no data folder is created for a run that cannot start


def test_two_monitors_are_two_streams(tmp_path):
    """Monitors 1280x800 and 1024x768 side by side: each is a stream with its own size, clicks are
    in the pixels of their monitor, and the unfocused monitor is snapshotted too."""
    with x_session("2304x800") as dual:
        proc, (alpha, beta) = dual.open_windows(
            [["AlphaApp", "Alpha document", 100, 100], ["BetaApp", "Beta notes", 1500, 100]],
            monitors=[[0, 1280, 800], [1280, 1024, 768]])
        try:
            dual.activate(alpha)
            rec = Recording(dual, tmp_path / "home")
            # the unfocused monitor is looked at once a second: wait until that is in the log
            rec.wait_for(lambda cap: any(s.stream == "monitor_2" and s.app == "BetaApp" and not s.focused
                                         for s in cap.snapshots))
            # landed, not just sent: the click and the focus moving to BetaApp are polled apart. A
            # clean-clone CI run once saw neither land in 90 s (cause not pinned down; the test
            # is about streams, not that), so a click that does not land is made again, same point.
            clicks_made = 0
            for attempt in range(3):
                bx, by = dual.click_in(beta)
                clicks_made += 1
                try:
                    rec.wait_for(lambda cap: any(e.kind == "click" for e in cap.inputs) and any(
                        (s.stream, s.app, s.focused, s.trigger) == ("monitor_2", "BetaApp", True, "app_switch")
                        for s in cap.snapshots), timeout=30)
                    break
                except AssertionError:
                    if attempt == 2 or rec.proc.poll() is not None:  # (a recorder that exited: no retry)
                        raise
            summary = rec.stop()
        finally:
            proc.kill()
            proc.wait()
    cap = rec.day()
    assert sorted((s.stream, s.width_px, s.height_px) for s in cap.streams) == [
        ("monitor_1", 1280, 800), ("monitor_2", 1024, 768)]
    assert summary["monitors"] == ["monitor_1 1280x800", "monitor_2 1024x768"]
    snaps = [(s.stream, s.app, s.focused, s.trigger) for s in cap.snapshots]
    assert snaps[0] == ("monitor_1", "AlphaApp", True, "start")
    assert ("monitor_2", "BetaApp", False, "visible") in snaps
    assert ("monitor_2", "BetaApp", True, "app_switch") in snaps
    clicks = [(e.stream, e.x, e.y, e.app) for e in cap.inputs if e.kind == "click"]
    # one row per click made (no more), each in monitor_2's own pixels over BetaApp
    assert 1 <= len(clicks) <= clicks_made and set(clicks) == {("monitor_2", bx - 1280, by, "BetaApp")}
