"""The recorder's capture rules (capture.recorder.Recorder), fed facts with explicit times.

The live X11 test (tests/test_recorder_x11.py) drives the same rules through a real X server;
here every rule is exercised at exact timestamps, including ones a live test cannot wait for
(30 s heartbeats, local midnight).
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture.errors import UserError
from capture.log import EventLog
from capture.model import InputEvent, Snapshot, StreamInfo, row_to_dict
from capture.recorder import (
    BURST_GAP_US,
    EXCLUDED_APP,
    GUARD_US,
    HEARTBEAT_US,
    Exclusions,
    Recorder,
)
from capture.timeutil import parse_ts
from capture.x11 import RESYNC_US, SERVER_WRAP, UNKNOWN_WINDOW, Monitor, ServerClock, WindowInfo

T0 = parse_ts("2026-03-15T10:00:00Z")
S = 1_000_000
EDITOR = WindowInfo(1, "Code", "code", "notes.md - Code", 0, 0, 1000, 700)
BROWSER = WindowInfo(2, "Firefox", "Navigator", "Docs - Mozilla Firefox", 1280, 0, 1000, 700)
VAULT = WindowInfo(3, "KeePassXC", "keepassxc", "Passwords.kdbx - KeePassXC", 100, 100, 600, 400)
PRIVATE = WindowInfo(4, "Firefox", "Navigator", "Bank - Mozilla Firefox Private Browsing", 0, 0, 900, 600)
MONITORS = [Monitor("monitor_1", 0, 0, 1280, 800), Monitor("monitor_2", 1280, 0, 1920, 1080)]


def recorder(typed_text: bool = True, tz: str = "UTC", exclusions: Exclusions | None = None) -> Recorder:
    r = Recorder(host="testhost", session="s1", tz=tz, exclusions=exclusions or Exclusions.build(),
                 typed_text=typed_text)
    r.set_monitors(T0, MONITORS)
    return r


def type_text(r: Recorder, t: int, text: str, step: int = 100_000) -> int:
    for ch in text:
        r.key(t, name=None, char=ch, code=ord(ch))
        t += step
    return t


def rows(r: Recorder) -> tuple[list[Snapshot], list[InputEvent], list[StreamInfo]]:
    b = r.take()
    return b.snapshots, b.inputs, b.streams


# ------------------------------------------------------------------------------ exclusion rules


def test_default_rules_exclude_password_managers_and_private_windows():
    ex = Exclusions.build()
    assert ex.excludes(VAULT)
    assert ex.excludes(WindowInfo(9, "1Password", "1password", "1Password"))
    assert ex.excludes(WindowInfo(9, "Bitwarden", "bitwarden", "Bitwarden"))
    assert ex.excludes(WindowInfo(9, "Pinentry-gtk-2", "pinentry-gtk-2", "Enter passphrase"))
    assert ex.excludes(PRIVATE)
    assert ex.excludes(WindowInfo(9, "Google-chrome", "google-chrome", "New Tab - Google Chrome (Incognito)"))
    assert not ex.excludes(EDITOR)
    assert not ex.excludes(BROWSER)
    assert not ex.excludes(None)


def test_user_rules_match_wm_class_either_part_and_title_regex():
    ex = Exclusions.build(apps=["signal desktop", "Thunderbird"], titles=[r"payroll|salary"], defaults=False)
    assert ex.excludes(WindowInfo(9, "Signal", "signal-desktop", "Signal"))  # instance part, spaces/hyphens ignored
    assert ex.excludes(WindowInfo(9, "thunderbird", None, "Inbox"))
    assert ex.excludes(WindowInfo(9, "Code", "code", "PAYROLL 2026.xlsx"))
    assert not ex.excludes(VAULT)  # defaults turned off
    assert not ex.excludes(EDITOR)


@pytest.mark.parametrize("apps,titles,message", [
    ([], ["(unclosed"], "--exclude-title '(unclosed' is not a valid regular expression"),
    ([], [" "], "would match every window"),
    (["  "], [], "names no app"),
])
def test_bad_rules_are_usage_errors(apps, titles, message):
    with pytest.raises(UserError, match=re.escape(message)):
        Exclusions.build(apps=apps, titles=titles)


@given(st.text(alphabet="abc XYZ-", max_size=12), st.sampled_from(["incognito", "InCoGnItO", "Private Browsing",
                                                                   "PRIVATE WINDOW", "InPrivate"]),
       st.text(alphabet="abc XYZ-", max_size=12))
def test_private_marker_anywhere_in_a_title_excludes(prefix, marker, suffix):
    title = f"{prefix} {marker} {suffix}"
    assert Exclusions.build().excludes(WindowInfo(5, "AnyBrowser", None, title))


def test_brave_private_windows_are_excluded():
    """Brave's private new tab page is "New Private Tab" (its Tor windows' too, brave-core's
    IDS_NEW_INCOGNITO_TAB_TITLE override); its window wording is "Private Window" and "Private
    Window with Tor"."""
    ex = Exclusions.build()
    brave = [
        "New Private Tab - Brave",
        "New Private Tab - Brave Browser",
        "Private Window with Tor - Brave",
        "Bank login - Brave (Private)",
        "Private Tab with Tor - Brave",
    ]
    for title in brave:
        assert ex.excludes(WindowInfo(9, "Brave-browser", "brave-browser", title)), title
    for title in ("New Tab - Brave", "Brave Search - Brave", "Private equity news - Brave"):
        assert not ex.excludes(WindowInfo(9, "Brave-browser", "brave-browser", title)), title


# ------------------------------------------------------------------------------ snapshots and input


def test_switches_clicks_and_typing_become_snapshots_and_input_rows():
    r = recorder()
    r.focus(T0, EDITOR)
    r.click(T0 + 2 * S, 300, 200, "left", EDITOR)
    t = type_text(r, T0 + 3 * S, "hello")
    r.tick(t + BURST_GAP_US)  # the pause ends the burst
    r.focus(T0 + 10 * S, BROWSER)
    r.click(T0 + 11 * S, 1280 + 50, 60, "right", BROWSER)
    snaps, inputs, streams = rows(r)
    assert [(s.app, s.window, s.trigger, s.stream) for s in snaps] == [
        ("Code", "notes.md - Code", "start", "monitor_1"),
        ("Code", "notes.md - Code", "click", "monitor_1"),
        ("Code", "notes.md - Code", "typing", "monitor_1"),
        ("Firefox", "Docs - Mozilla Firefox", "app_switch", "monitor_2"),
        ("Firefox", "Docs - Mozilla Firefox", "click", "monitor_2"),
    ]
    kinds = [e.kind for e in inputs]
    assert kinds == ["click"] + ["key"] * 5 + ["text", "app_switch", "click"]
    text = [e for e in inputs if e.kind == "text"][0]
    assert (text.text, text.app, text.window) == ("hello", "Code", "notes.md - Code")
    clicks = [e for e in inputs if e.kind == "click"]
    # Coordinates are pixels on the click's own monitor.
    assert [(c.stream, c.x, c.y, c.button) for c in clicks] == [("monitor_1", 300, 200, "left"),
                                                                 ("monitor_2", 50, 60, "right")]
    assert sorted((s.stream, s.width_px, s.height_px) for s in streams) == [
        ("monitor_1", 1280, 800), ("monitor_2", 1920, 1080)]
    refs = [x.ref for x in [*snaps, *inputs, *streams]]
    assert len(set(refs)) == len(refs) and all(x.startswith("recorder:testhost:s1:") for x in refs)


def test_typing_is_gathered_per_window_with_backspace_and_named_keys():
    r = recorder()
    r.focus(T0, EDITOR)
    t = type_text(r, T0 + S, "helo")
    r.key(t, name="backspace", char=None, code=0xFF08)
    t = type_text(r, t + 100_000, "lo")
    r.key(t, name="space", char=" ", code=0x20)
    r.key(t + 1, name="enter", char=None, code=0xFF0D)
    r.focus(t + 200_000, BROWSER)  # a switch ends the burst at once
    type_text(r, t + 300_000, "query")
    r.close(t + 10 * S)
    _, inputs, _ = rows(r)
    texts = [(e.app, e.text) for e in inputs if e.kind == "text"]
    assert texts == [("Code", "hello \n"), ("Firefox", "query")]


def test_shortcuts_are_not_text_and_give_clipboard_rows():
    r = recorder()
    r.focus(T0, EDITOR)
    r.key(T0 + S, name="ctrl_l", char=None, code=0xFFE3)
    r.key(T0 + S + 1, name=None, char="c", code=ord("c"))
    r.key(T0 + S + 2, name=None, char="\x16", code=ord("v"))  # Ctrl+V as a control character
    r.key(T0 + S + 3, name="ctrl_l", char=None, code=0xFFE3, pressed=False)
    type_text(r, T0 + 2 * S, "ok")
    r.close(T0 + 5 * S)
    _, inputs, _ = rows(r)
    assert [e.clipboard_op for e in inputs if e.kind == "clipboard"] == ["copy", "paste"]
    assert [e.text for e in inputs if e.kind == "text"] == ["ok"]
    keys = [e for e in inputs if e.kind == "key"]
    assert [k.modifiers for k in keys] == [2, 2, 0, 0]  # the modifier key itself is no row


def test_no_typed_text_keeps_counts_but_no_content():
    r = recorder(typed_text=False)
    r.focus(T0, EDITOR)
    t = type_text(r, T0 + S, "secret")
    r.key(t, name="enter", char=None, code=0xFF0D)
    r.key(t + 1, name="ctrl", char=None, code=0xFFE3)
    r.key(t + 2, name=None, char="s", code=ord("s"))
    r.tick(t + BURST_GAP_US + 10)
    snaps, inputs, _ = rows(r)
    keys = [e for e in inputs if e.kind == "key"]
    assert len(keys) == 8
    assert not [e for e in inputs if e.kind == "text"]
    assert all(e.text is None for e in inputs)
    # Character keys lose their codes (they would spell the text); Enter and Ctrl+S keep theirs.
    assert [k.key_code for k in keys] == [None] * 6 + [0xFF0D, ord("s")]
    assert snaps[-1].trigger == "typing"  # the burst still marks interaction


def test_heartbeat_after_30_seconds_without_input():
    r = recorder()
    r.focus(T0, EDITOR)
    for sec in range(1, 101):
        r.tick(T0 + sec * S)
    r.click(T0 + 100 * S, 10, 10, "left", EDITOR)
    r.tick(T0 + 129 * S)
    snaps, _, _ = rows(r)
    beats = [(s.ts_us - T0) // S for s in snaps if s.heartbeat]
    assert beats == [30, 60, 90]
    assert all(s.trigger == "idle" for s in snaps if s.heartbeat)
    assert not any(s.heartbeat for s in snaps if s.trigger != "idle")


def test_title_change_is_a_snapshot_at_most_once_a_second():
    r = recorder()
    r.focus(T0, EDITOR)
    for i in range(1, 6):  # five title changes within 0.5 s
        r.focus(T0 + S + i * 100_000, WindowInfo(1, "Code", "code", f"notes.md ({i}) - Code", 0, 0, 1000, 700))
        r.tick(T0 + S + i * 100_000)
    r.tick(T0 + 3 * S)
    snaps, _, _ = rows(r)
    # The first change is taken at once, the burst after it once, with the title it ended on.
    assert [(s.trigger, s.window, (s.ts_us - T0) // 100_000) for s in snaps] == [
        ("start", "notes.md - Code", 0),
        ("title_change", "notes.md (1) - Code", 11),
        ("title_change", "notes.md (5) - Code", 30),
    ]


def test_excluded_window_leaves_a_marker_and_nothing_else():
    r = recorder()
    r.focus(T0, EDITOR)
    r.focus(T0 + 5 * S, VAULT)
    type_text(r, T0 + 6 * S, "hunter2")
    r.click(T0 + 8 * S, 200, 200, "left", VAULT)
    r.scroll(T0 + 9 * S, 200, 200, 0, -1, VAULT)
    for sec in range(10, 75):
        r.key(T0 + sec * S, name=None, char="x", code=ord("x"))  # busy typing: markers still beat
        r.tick(T0 + sec * S)
    r.focus(T0 + 75 * S, EDITOR)
    r.click(T0 + 76 * S, 10, 10, "left", EDITOR)
    snaps, inputs, _ = rows(r)
    markers = [s for s in snaps if s.app == EXCLUDED_APP]
    assert [(m.ts_us - T0) // S for m in markers] == [5, 35, 65]
    assert all(m.window is None and m.trigger == "excluded" for m in markers)
    dump = json.dumps([row_to_dict(x) for x in [*snaps, *inputs]])
    for leak in ("KeePass", "Passwords.kdbx", "hunter2", "keepassxc"):
        assert leak not in dump
    assert all(e.ts_us < T0 + 5 * S or e.ts_us >= T0 + 75 * S for e in inputs)
    assert r.stats.excluded_stretches == 1
    assert r.stats.excluded_inputs == 7 + 1 + 1 + 65


def test_title_turning_private_drops_the_burst_and_guard_drops_late_reported_keys():
    r = recorder()
    r.focus(T0, BROWSER)
    type_text(r, T0 + S, "public", step=50_000)  # T0+1.0 .. T0+1.25 s
    r.tick(T0 + 4 * S)  # burst ended and kept
    t = type_text(r, T0 + 5 * S, "mybank", step=50_000)
    # The window manager reports the private title 0.3 s after the last key.
    seen = t + 250_000
    r.focus(seen, WindowInfo(2, "Firefox", "Navigator", "Bank - Private Browsing", 1280, 0, 1000, 700))
    type_text(r, t + S, "pin1234")
    r.focus(t + 3 * S, BROWSER)  # back to a normal tab: keys reported before now may be the private one's
    r.key(t + 3 * S - 1, name=None, char="z", code=ord("z"))
    type_text(r, t + 4 * S, "ok")
    r.close(t + 10 * S)
    snaps, inputs, streams = rows(r)
    assert [e.text for e in inputs if e.kind == "text"] == ["public", "ok"]
    # Dropped input leaves no gap in the ref sequence (a gap would count the keys).
    numbers = sorted(int(x.ref.rsplit(":", 1)[1]) for x in [*snaps, *inputs, *streams])
    assert numbers == list(range(1, len(numbers) + 1))
    keys = [e.ts_us for e in inputs if e.kind == "key"]
    assert not [k for k in keys if seen - GUARD_US <= k <= t + 3 * S]
    assert len(keys) == 6 + 1 + 2  # "public", the "m" typed before the guard, "ok"


def test_take_holds_back_the_newest_rows():
    r = recorder()
    r.focus(T0, EDITOR)
    r.click(T0 + S, 10, 10, "left", EDITOR)
    r.click(T0 + 2 * S, 10, 10, "left", EDITOR)
    first = r.take(before_us=T0 + 2 * S)
    assert [e.ts_us for e in first.inputs] == [T0 + S]
    assert [e.ts_us for e in r.take().inputs] == [T0 + 2 * S]


def test_stream_rows_per_local_day_and_size():
    r = recorder(tz="Europe/Paris")
    midnight = parse_ts("2026-03-15T23:00:00Z")  # 00:00 in Paris on the 16th
    r.tick(midnight - 1)
    r.tick(midnight)
    r.set_monitors(midnight + S, [Monitor("monitor_1", 0, 0, 2560, 1440), MONITORS[1]])
    _, _, streams = rows(r)
    assert [(s.stream, s.width_px, s.ts_us == midnight) for s in streams] == [
        ("monitor_1", 1280, False), ("monitor_2", 1920, False),
        ("monitor_1", 1280, True), ("monitor_2", 1920, True),
        ("monitor_1", 2560, False),
    ]


def test_each_monitor_is_its_own_stream():
    r = recorder()
    r.focus(T0, EDITOR)  # on monitor_1
    r.visible(T0 + S, [BROWSER, EDITOR])  # the browser fills monitor_2
    r.visible(T0 + 2 * S, [BROWSER, EDITOR])  # nothing changed
    for sec in range(3, 35):
        r.tick(T0 + sec * S)
        r.visible(T0 + sec * S, [BROWSER, EDITOR])
    vault_on_2 = WindowInfo(3, "KeePassXC", "keepassxc", "Passwords.kdbx - KeePassXC", 1500, 100, 600, 400)
    r.visible(T0 + 40 * S, [BROWSER, vault_on_2, EDITOR])
    r.focus(T0 + 41 * S, BROWSER)  # focus moves to monitor_2: monitor_1 still shows the editor
    r.visible(T0 + 42 * S, [EDITOR, BROWSER])
    snaps, _, _ = rows(r)
    got = [((s.ts_us - T0) // S, s.stream, s.app, s.focused, s.trigger, s.heartbeat) for s in snaps]
    assert got == [
        (0, "monitor_1", "Code", True, "start", False),
        (1, "monitor_2", "Firefox", False, "visible", False),
        (30, "monitor_1", "Code", True, "idle", True),
        (31, "monitor_2", "Firefox", False, "idle", True),
        (40, "monitor_2", EXCLUDED_APP, False, "excluded", False),
        (41, "monitor_2", "Firefox", True, "app_switch", False),
    ]


def test_title_bars_count_as_the_window():
    # openbox decorations: 1 px sides, a 20 px title bar, a 5 px bottom handle
    vault = WindowInfo(3, "KeePassXC", "keepassxc", "Passwords.kdbx - KeePassXC", 1290, 30, 600, 400,
                       frame=(1, 1, 20, 5))
    assert vault.covers(1300, 15) and vault.covers(1289, 429) and not vault.covers(1300, 9)
    assert MONITORS[1].intersects(vault) and not MONITORS[0].intersects(vault)
    bar_only = WindowInfo(3, "KeePassXC", None, None, 100, 805, 600, 400, frame=(0, 0, 20, 0))
    assert MONITORS[0].intersects(bar_only)  # the title bar (y 785..804) is on monitor_1
    r = recorder()
    r.focus(T0, EDITOR)
    r.click(T0 + S, 1300, 15, "left", vault)  # on the title bar: window_at() names the vault
    _, inputs, _ = rows(r)
    assert not [e for e in inputs if e.kind == "click"]


def test_one_monitor_has_one_stream():
    r = recorder()
    r.set_monitors(T0, MONITORS[:1])
    r.focus(T0, EDITOR)
    r.visible(T0 + S, [BROWSER, EDITOR])
    snaps, _, _ = rows(r)
    assert [(s.stream, s.app) for s in snaps] == [("monitor_1", "Code")]


# ------------------------------------------------------------------------------ server time


def test_input_is_judged_by_its_own_time_when_it_arrives_after_later_focus_changes():
    """A stalled recorder learns of the focus changes and the keys of a stretch together: the
    keys typed while the window was never seen are dropped and counted, not given to the window
    focused when the recorder woke up."""
    r = recorder()
    r.focus(T0, EDITOR)
    type_text(r, T0, "abc")  # T0 .. T0+0.2 s, in order
    r.focus(T0 + S, UNKNOWN_WINDOW)  # what had the focus from here on was never read
    r.focus(T0 + 2 * S, BROWSER)
    type_text(r, T0 + S + 200_000, "123")  # arrive late: typed in the unknown stretch
    r.key(T0 + 300_000, name=None, char="d", code=ord("d"))  # late, typed in the editor
    type_text(r, T0 + 2 * S + 100_000, "xyz")
    r.close(T0 + 5 * S)
    snaps, inputs, _ = rows(r)
    assert [(e.app, e.text) for e in inputs if e.kind == "text"] == [("Code", "abc"), ("Firefox", "xyz")]
    keys = sorted(((e.ts_us - T0) // 100_000, e.app) for e in inputs if e.kind == "key")
    assert keys == [(0, "Code"), (1, "Code"), (2, "Code"), (3, "Code"),
                    (21, "Firefox"), (22, "Firefox"), (23, "Firefox")]
    assert r.stats.unknown_inputs == 3 and r.stats.unknown_stretches == 1
    assert r.stats.excluded_inputs == 0 and r.stats.excluded_stretches == 0
    markers = [s for s in snaps if s.app == EXCLUDED_APP]
    assert [(m.ts_us - T0) // S for m in markers] == [1]


def test_unknown_stretch_guards_the_keys_just_before_it():
    # The window manager names the new window a little after keys already go to it: keys in the
    # half second before a window nobody saw are not trusted either.
    r = recorder()
    r.focus(T0, EDITOR)
    type_text(r, T0, "ok")
    type_text(r, T0 + S - 300_000, "zz")
    r.focus(T0 + S, UNKNOWN_WINDOW)
    r.focus(T0 + 2 * S, EDITOR)
    r.close(T0 + 5 * S)
    _, inputs, _ = rows(r)
    assert [e.text for e in inputs if e.kind == "text"] == ["ok"]
    assert r.stats.unknown_inputs == 2


def test_window_manager_handover_is_no_stretch():
    # openbox sets _NET_ACTIVE_WINDOW to None and a millisecond later to the new window; seen in
    # one poll, the None in between is unknown, but it is a hand-over, not a stretch to guard.
    r = recorder()
    r.focus(T0, EDITOR)
    type_text(r, T0 + 800_000, "keep")  # up to 0.1 s before the switch
    r.handover(T0 + S, T0 + S + 1000)
    r.focus(T0 + S + 1000, BROWSER)
    r.key(T0 + S + 500, name=None, char="q", code=ord("q"))  # in the hand-over itself
    type_text(r, T0 + S + 100_000, "next")
    r.close(T0 + 5 * S)
    snaps, inputs, _ = rows(r)
    assert [(e.app, e.text) for e in inputs if e.kind == "text"] == [("Code", "keep"), ("Firefox", "next")]
    assert not [s for s in snaps if s.app == EXCLUDED_APP]
    assert r.stats.unknown_stretches == 0 and r.stats.unknown_inputs == 1
    with pytest.raises(ValueError):
        r.handover(T0 + 6 * S, T0 + 7 * S)


TIMELINE_WINDOWS = [EDITOR, BROWSER, VAULT, UNKNOWN_WINDOW, None]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(TIMELINE_WINDOWS))), st.integers(1, 3_000_000),
                          st.lists(st.tuples(st.integers(0, 2_999_999), st.integers(0, 3)), max_size=6)),
                min_size=1, max_size=12))
def test_no_key_of_an_excluded_or_unknown_stretch_is_kept_however_late_it_arrives(stretches):
    """Focus stretches with keys in them, the keys reaching the recorder up to three focus changes
    late (a starved listener thread). Digits are typed only into excluded or never-seen windows:
    none may be in any row, and every one is counted as dropped."""
    r = recorder()
    t = T0
    timeline = []  # (start, window, keys at [(time, lag)])
    for index, length, keys in stretches:
        timeline.append((t, TIMELINE_WINDOWS[index], sorted((t + k % length, lag) for k, lag in keys)))
        t += length
    changes = [(start, window) for start, window, _ in timeline]
    feed: list[tuple[int, int, int, object]] = []  # (position, kind, time, what)
    for i, (start, window, keys) in enumerate(timeline):
        feed.append((2 * i, 0, start, window))
        private = window is UNKNOWN_WINDOW or r.exclusions.excludes(window)
        for ts, lag in keys:
            feed.append((2 * min(i + lag, len(timeline) - 1) + 1, 1, ts, "7" if private else "a"))
    digits = sum(1 for f in feed if f[3] == "7")
    for _pos, kind, ts, what in sorted(feed, key=lambda f: (f[0], f[2], f[1])):
        if kind == 0:
            r.focus(ts, what)  # type: ignore[arg-type]
        else:
            r.key(ts, name=None, char=str(what), code=ord(str(what)))
    r.close(t)
    batch = r.take()
    for row in batch.inputs:
        assert not (row.text and "7" in row.text), row
        assert row.kind != "key" or row.key_code != ord("7"), row
        assert row.app not in ("KeePassXC", "(unknown)"), row
    assert r.stats.excluded_inputs + r.stats.unknown_inputs >= digits
    assert changes  # (the timeline is fed in its own order)


def test_server_clock_unwraps_and_maps_to_the_wall_clock():
    clock = ServerClock()
    wall0 = T0
    start = SERVER_WRAP - 5_000  # the server's clock wraps 5 s into the session
    clock.observe(start, wall0)
    assert clock.to_us(start) == wall0
    assert clock.to_us(start + 4_000) == wall0 + 4 * S
    after_wrap = (start + 7_000) % SERVER_WRAP  # a small number again
    assert after_wrap < 5_000
    assert clock.to_us(after_wrap) == wall0 + 7 * S
    clock.observe(after_wrap, wall0 + 7 * S + 300)  # round-trip jitter moves nothing
    assert clock.to_us(after_wrap) == wall0 + 7 * S
    assert clock.to_us(start - 1_000) == wall0 - S  # a little in the past is the past


def test_server_clock_resyncs_after_a_suspend_and_never_runs_backwards():
    clock = ServerClock()
    clock.observe(1_000_000, T0)
    # Suspended for 8 hours: the server's monotonic clock stood still, the wall clock did not.
    clock.observe(1_002_000, T0 + 2 * S + 8 * 3600 * S)
    assert clock.to_us(1_001_500) == T0 + 1_500_000  # before the resume: the old offset
    assert clock.to_us(1_002_500) == T0 + 2_500_000 + 8 * 3600 * S
    # The wall clock is set back an hour: not followed, times keep running forward.
    clock.observe(1_010_000, T0 + 10 * S + 7 * 3600 * S)
    assert clock.to_us(1_010_000) > clock.to_us(1_009_999) > clock.to_us(1_002_500)
    assert clock.to_us(1_020_000) == T0 + 20 * S + 8 * 3600 * S
    assert RESYNC_US <= S


@settings(max_examples=100, deadline=None)
@given(st.integers(0, SERVER_WRAP - 1),
       st.lists(st.tuples(st.integers(0, 3_600_000), st.integers(0, 20_000)), min_size=1, max_size=30))
def test_server_clock_is_monotonic_across_wraps(start, steps):
    clock = ServerClock()
    clock.observe(start, T0)
    true_ms, last = 0, None
    for step, noise in steps:
        true_ms += step
        server = (start + true_ms) % SERVER_WRAP
        clock.observe(server, T0 + true_ms * 1000 + noise)
        mapped = clock.to_us(server)
        assert abs(mapped - (T0 + true_ms * 1000)) <= RESYNC_US + 20_000
        assert last is None or mapped >= last
        last = mapped


# ------------------------------------------------------------------------------ properties

WINDOWS = [EDITOR, BROWSER, VAULT, PRIVATE, None]
action = st.one_of(
    st.tuples(st.just("focus"), st.sampled_from(range(len(WINDOWS)))),
    st.tuples(st.just("type"), st.integers(1, 6)),
    st.tuples(st.just("click"), st.sampled_from(range(len(WINDOWS)))),
    st.tuples(st.just("scroll"), st.sampled_from(range(len(WINDOWS)))),
    st.tuples(st.just("wait"), st.integers(1, 40_000_000)),
    st.tuples(st.just("visible"), st.permutations(range(len(WINDOWS) - 1))),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(action, max_size=40), st.booleans())
def test_nothing_of_an_excluded_window_is_ever_recorded(actions, typed_text):
    """Digits are typed only into excluded windows and letters only into others: no row may
    hold a digit, name an excluded app or title, or carry input from an excluded window."""
    r = recorder(typed_text=typed_text)
    ex = r.exclusions
    t = T0
    focus: WindowInfo | None = None
    for what, arg in actions:
        t += 50_000
        if what == "focus":
            focus = WINDOWS[arg]
            r.focus(t, focus)
        elif what == "type":
            alphabet = "0123456789" if ex.excludes(focus) else "abcdefgh"
            for i in range(arg):
                ch = alphabet[i % len(alphabet)]
                r.key(t, name=None, char=ch, code=ord(ch))
                t += 30_000
        elif what in ("click", "scroll"):
            target = WINDOWS[arg]
            if target is not None and not ex.excludes(target):
                if what == "click":
                    r.click(t, target.x + 1, target.y + 1, "left", target)
                else:
                    r.scroll(t, target.x + 1, target.y + 1, 0, 1, target)
        elif what == "visible":
            r.visible(t, [WINDOWS[i] for i in arg])  # type: ignore[misc]
        else:
            t += arg
        r.tick(t)
    r.close(t)
    batch = r.take()
    excluded_words = ("KeePass", "kdbx", "Private Browsing", "Bank")
    for row in [*batch.snapshots, *batch.inputs]:
        dump = json.dumps(row_to_dict(row))
        assert not any(w in dump for w in excluded_words), dump
        if isinstance(row, InputEvent):
            assert not (row.text and re.search(r"\d", row.text)), row
            if not typed_text:
                assert row.text is None and row.kind != "text"
                assert row.kind != "key" or row.key_code is None
    for s in batch.snapshots:
        assert (s.app == EXCLUDED_APP) == (s.window is None and s.trigger == "excluded")
    refs = [x.ref for x in [*batch.snapshots, *batch.inputs, *batch.streams]]
    assert len(refs) == len(set(refs))


# ------------------------------------------------------------------------------ into the log


def test_batches_land_in_the_event_log_and_read_back(home):
    log = EventLog(home)
    r = Recorder(host="testhost", session="s1", tz=log.tz, exclusions=Exclusions.build())
    r.set_monitors(T0, MONITORS)
    r.focus(T0, EDITOR)
    r.click(T0 + S, 5, 5, "left", EDITOR)
    log.append(r.take(before_us=T0 + S), seal=False)
    type_text(r, T0 + 2 * S, "abc")
    r.close(T0 + 9 * S)
    log.append(r.take(), seal=False)
    day = log.read_day("2026-03-15")
    assert not day.sealed and day.recorders == ["recorder"]
    assert [s.trigger for s in day.snapshots] == ["start", "click", "typing"]
    assert [e.kind for e in day.inputs] == ["click", "key", "key", "key", "text"]
    assert {(s.stream, s.width_px, s.height_px) for s in day.streams} == {("monitor_1", 1280, 800),
                                                                          ("monitor_2", 1920, 1080)}
    assert HEARTBEAT_US == 30 * S


def test_rows_wait_in_memory_while_another_process_holds_the_log(home):
    """An import running next to the recorder holds the log's lock: nothing is lost, rows land after."""
    import subprocess
    import sys

    from capture.recorder import _Writer

    home.log_dir.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, sys; f = open(sys.argv[1], 'a+'); f.write('process 1 (test)'); f.flush(); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
         str(home.log_dir / ".lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        said: list[str] = []
        writer = _Writer(home, said.append)
        r = recorder(tz=writer.log.tz)
        r.focus(T0, EDITOR)
        assert writer.write(r.take()) is False
        r.click(T0 + S, 5, 5, "left", EDITOR)
        assert writer.write(r.take()) is False
        assert len(said) == 1 and "being written by" in said[0] and "keeping rows in memory" in said[0]
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    assert writer.write(r.take()) is True
    day = EventLog(home).read_day("2026-03-15")
    assert [s.trigger for s in day.snapshots] == ["start", "click"]
    assert [e.kind for e in day.inputs] == ["click"]
    assert len(day.streams) == 2


def test_rows_for_a_day_sealed_meanwhile_land_as_an_amendment(home):
    from capture.recorder import _Writer

    writer = _Writer(home, lambda _m: None)
    r = recorder(tz=writer.log.tz)
    r.focus(T0, EDITOR)
    assert writer.write(r.take())
    writer.log.seal("2026-03-15")  # `af log seal` run by hand while recording
    r.click(T0 + S, 5, 5, "left", EDITOR)
    assert writer.write(r.take())
    assert writer.quarantined == 0
    assert writer.landed == {"elements": 0, "inputs": 1, "presence": 0, "snapshots": 2, "streams": 2}
    assert [e.get("amendment", 0) for e in writer.log.day_entries("2026-03-15")] == [0, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["tick", "click", "type", "switch"]), st.integers(1, 50)),
                min_size=1, max_size=30))
def test_the_focused_stream_never_goes_30_seconds_without_a_snapshot(steps):
    """Whatever the user does or does not do, a window in focus is snapshotted at least every
    30 s (the main loop ticks many times a second; here once a second)."""
    r = recorder()
    windows = [EDITOR, WindowInfo(5, "Code", "code", "other.py - Code", 0, 0, 1000, 700), VAULT]
    current = 0
    r.focus(T0, windows[current])
    t = T0
    for what, n in steps:
        for _ in range(n):
            t += S
            if what == "click":
                r.click(t, 10, 10, "left", windows[current])
            elif what == "type":
                type_text(r, t, "ab", step=1000)
            elif what == "switch":
                current = (current + 1) % len(windows)
                r.focus(t, windows[current])
            r.tick(t)
    stamps = [s.ts_us for s in r.take().snapshots if s.stream == "monitor_1"]
    gaps = [b - a for a, b in zip(stamps, [*stamps[1:], t], strict=True)]
    assert max(gaps) <= HEARTBEAT_US + S
