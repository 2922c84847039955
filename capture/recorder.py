"""``af record``: our own event-driven recorder for X11 desktops (paper 4.1).

Two parts:

- :class:`Recorder`, the capture rules as a state machine. It is fed plain facts (the focused
  window, a click at a point on a window, a key, the clock) and produces capture-schema rows:
  a snapshot on interaction (click, scroll gesture, end of a typing burst, app or window switch,
  title change), a heartbeat snapshot after 30 s without input, input rows, StreamInfo per
  monitor and local day. Exclusion rules are applied here, before any row exists.
- :func:`record`, the live loop: pynput listeners for mouse and keyboard, python-xlib for the
  focused window (:mod:`capture.x11`), mss for monitors and optional screenshots, and the event
  log, appended in small batches so that a crash loses at most the last couple of seconds.

Refs are ``recorder:<host>:<session>:<seq>`` with one sequence for every row of a session.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import os
import queue
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from capture.errors import CheckFailed, UserError
from capture.home import Home
from capture.model import CaptureBatch, InputEvent, Snapshot, StreamInfo
from capture.timeutil import local_day, zone
from capture.x11 import UNKNOWN_WINDOW, Monitor, ServerClock, WindowInfo, monitor_for

US = 1_000_000
HEARTBEAT_US = 30 * US  # a snapshot after this long without input or snapshot (paper 4.1)
BURST_GAP_US = 2 * US  # a pause this long ends a typing burst
BURST_MAX_US = 30 * US  # a burst longer than this is cut, so long typing still yields snapshots
SCROLL_GAP_US = 600_000  # wheel notches closer than this are one scroll gesture
SNAPSHOT_GAP_US = US  # interaction snapshots of one window at most this often
# Around each excluded stretch, input this close to its edges is dropped too: the window manager
# reports a focus change a little after keys already go to the new window.
GUARD_US = 500_000
# A stretch of unknown focus shorter than this is a window manager's hand-over (openbox sets
# _NET_ACTIVE_WINDOW to None and then to the new window, a millisecond apart): input in it is
# dropped, but it is no excluded stretch of its own.
HANDOVER_US = 50_000
# Which window had the focus when is kept this long, for input that reaches the recorder after a
# later focus change (a listener thread starved of CPU); older input is dropped as unknown.
FOCUS_HISTORY_US = 120 * US
FLUSH_S = 2.0  # rows go to the log this often (or less often, see FLUSH_COST_FACTOR)
FLUSH_COST_FACTOR = 4.0  # after an append that took s seconds, wait at least 4 s before the next
POLL_S = 0.05  # the main loop wakes up this often to read focus and handle input
MONITOR_CHECK_S = 10.0  # screen layout is re-read this often
VISIBLE_CHECK_S = 1.0  # with several monitors, what the unfocused ones show is read this often
MAX_TYPED_TEXT = 8192  # characters in one text row (the importers' cap)

EXCLUDED_APP = "(excluded)"
RECORDER = "recorder"

# Modifier bits on key rows (screenpipe's mask, what the compiler reads).
MOD_SHIFT, MOD_CTRL, MOD_ALT, MOD_CMD = 1, 2, 4, 8
COMMAND_MODS = MOD_CTRL | MOD_ALT | MOD_CMD
_MODIFIER_KEYS = {
    "shift": MOD_SHIFT, "shift_l": MOD_SHIFT, "shift_r": MOD_SHIFT,
    "ctrl": MOD_CTRL, "ctrl_l": MOD_CTRL, "ctrl_r": MOD_CTRL,
    "alt": MOD_ALT, "alt_l": MOD_ALT, "alt_r": MOD_ALT,
    "cmd": MOD_CMD, "cmd_l": MOD_CMD, "cmd_r": MOD_CMD,
    # AltGr types characters on most layouts: a modifier key, but not a command one.
    "alt_gr": 0,
}
_LOCK_KEYS = frozenset({"caps_lock", "num_lock", "scroll_lock"})
_TYPED_NAMED = {"space": " ", "enter": "\n", "tab": "\t"}
_CLIPBOARD = {"c": "copy", "x": "cut", "v": "paste"}

# Password managers and credential prompts, matched against WM_CLASS (either part), ignoring
# case, spaces, hyphens and underscores. `xprop WM_CLASS` shows a window's class.
DEFAULT_EXCLUDED_APPS: tuple[str, ...] = (
    "KeePassXC", "KeePassX", "KeePass", "KeePass2", "1Password", "Bitwarden", "Enpass",
    "Proton Pass", "LastPass", "Dashlane", "NordPass", "KWalletManager", "kwalletmanager5",
    "Seahorse", "gcr-prompter", "pinentry", "pinentry-gtk-2", "pinentry-gnome3", "pinentry-qt",
    "pinentry-qt5", "polkit-gnome-authentication-agent-1", "polkit-kde-authentication-agent-1",
    "polkit-mate-authentication-agent-1", "lxpolkit", "Tor Browser",
)
# Private browsing windows, matched anywhere in the title, ignoring case (Firefox, Chrome and
# Chromium, Edge, Brave). Over-matching (a page titled "Incognito mode explained") errs on the
# safe side: that window is not recorded.
DEFAULT_EXCLUDED_TITLES: tuple[str, ...] = (
    r"\bprivate browsing\b",
    r"\bincognito\b",
    r"\binprivate\b",
    r"\bprivate window\b",
    # Brave: its private new tab page is "New Private Tab" (in Tor windows too), its windows "Private
    # Window" / "Private Window with Tor" (matched above), a private window's title "... (Private)".
    r"\bprivate tab\b",
    r"\(private\)",
)


def _norm_app(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).casefold()


@dataclass(frozen=True)
class Exclusions:
    """Which windows are never recorded: by app (WM_CLASS) or by a title pattern."""

    apps: frozenset[str]  # normalised (see _norm_app)
    titles: tuple[re.Pattern[str], ...]

    @classmethod
    def build(cls, apps: Iterable[str] = (), titles: Iterable[str] = (), defaults: bool = True) -> Exclusions:
        """Rules from --exclude-app / --exclude-title (plus the built-in ones); UserError on a bad one."""
        names = list(DEFAULT_EXCLUDED_APPS if defaults else ()) + list(apps)
        normalised = set()
        for name in names:
            n = _norm_app(name)
            if not n:
                raise UserError(f"--exclude-app {name!r} names no app (give a WM_CLASS such as KeePassXC)")
            normalised.add(n)
        patterns = []
        for text in list(DEFAULT_EXCLUDED_TITLES if defaults else ()) + list(titles):
            if not text.strip():
                raise UserError("--exclude-title '' would match every window; give a pattern")
            try:
                patterns.append(re.compile(text, re.IGNORECASE))
            except re.error as exc:
                raise UserError(f"--exclude-title {text!r} is not a valid regular expression ({exc})") from None
        return cls(frozenset(normalised), tuple(patterns))

    def excludes(self, window: WindowInfo | None) -> bool:
        if window is None:
            return False
        if _norm_app(window.app) in self.apps or (window.instance and _norm_app(window.instance) in self.apps):
            return True
        title = window.title or ""
        return any(p.search(title) for p in self.titles)


@dataclass
class Stats:
    """What a session captured and what it left out, for the summary."""

    snapshots: int = 0  # of recorded windows
    heartbeats: int = 0
    excluded_markers: int = 0  # "(excluded)" snapshots
    excluded_stretches: int = 0
    excluded_inputs: int = 0  # input events dropped because an excluded window had them
    unknown_stretches: int = 0  # stretches whose focused window was never seen (a stalled recorder)
    unknown_inputs: int = 0  # input events dropped because their window cannot be known
    inputs: dict[str, int] = field(default_factory=dict)
    streams: int = 0

    def count_input(self, kind: str) -> None:
        self.inputs[kind] = self.inputs.get(kind, 0) + 1


@dataclass
class _Burst:
    """Keys typed into one window without a pause of BURST_GAP_US."""

    window: WindowInfo
    stream: str | None
    first_us: int
    last_us: int
    chars: list[tuple[int, str]] = field(default_factory=list)  # (time, character)


@dataclass
class _Scroll:
    window: WindowInfo | None
    sign: int
    last_us: int


SnapshotHook = Callable[[Snapshot, Monitor | None], None]


class Recorder:
    """The capture rules, fed with facts in time order; rows collect until :meth:`take`."""

    def __init__(
        self,
        *,
        host: str,
        session: str,
        tz: str,
        exclusions: Exclusions,
        typed_text: bool = True,
        on_snapshot: SnapshotHook | None = None,
    ):
        self.source_id = f"{RECORDER}:{host}:{session}"
        self.session = session
        self._zone = zone(tz)
        self.exclusions = exclusions
        self.typed_text = typed_text
        self.on_snapshot = on_snapshot
        self.stats = Stats()
        self._seq = 0  # rows numbered so far (refs)
        self._frames = 0  # snapshots so far (frame ids)
        self._rows: list[Snapshot | InputEvent | StreamInfo] = []
        self._monitors: list[Monitor] = []
        self._stream_rows: set[tuple[str, str, int, int]] = set()  # (day, stream, w, h) written
        self._focus: WindowInfo | None = None
        self._focus_excluded = False
        self._focus_since: int | None = None  # when the current focus began
        # (start, window, why not recorded: None, "excluded", "unknown" or "handover") of recent
        # focus stretches, oldest first: input is judged by its own time, even when it is handled
        # after a later focus change.
        self._history: list[tuple[int, WindowInfo | None, str | None]] = []
        self._history_floor: int | None = None  # history before this was forgotten
        self._frame_id: str | None = None
        self._last_snapshot_us: int | None = None  # of the focused window
        # per stream: (window id, title, excluded) of its latest snapshot, and when it was taken
        self._shown: dict[str, tuple[tuple[int, str | None, bool], int]] = {}
        self._last_interaction: tuple[int, int] | None = None  # (window id, time) of the last one
        self._last_input_us: int | None = None
        self._title_pending = False
        self._mods = 0
        self._burst: _Burst | None = None
        self._scroll: _Scroll | None = None

    # -- ids and rows ---------------------------------------------------------------------

    def _ref(self) -> str:
        # Refs are numbered when rows leave (take), so input dropped by the exclusion guard leaves
        # no gap in the sequence that would count what was typed next to an excluded window.
        return ""

    def _stream_of(self, window: WindowInfo | None) -> Monitor | None:
        if window is None:
            return self._monitors[0] if self._monitors else None
        return monitor_for(self._monitors, *window.center())

    def _snapshot(self, ts: int, trigger: str, heartbeat: bool = False) -> None:
        """A snapshot of the focused window (input rows point at the latest one)."""
        window = self._focus
        if window is None:
            return
        snap = self._write_snapshot(ts, window, self._focus_excluded, self._stream_of(window), trigger,
                                    heartbeat=heartbeat, focused=True)
        self._frame_id = snap.source_frame_id
        self._last_snapshot_us = ts
        self._title_pending = False

    def _write_snapshot(self, ts: int, window: WindowInfo, excluded: bool, monitor: Monitor | None,
                        trigger: str, *, heartbeat: bool, focused: bool) -> Snapshot:
        stream = monitor.stream if monitor else "monitor_1"
        self._frames += 1
        snap = Snapshot(
            ref=self._ref(),
            ts_us=ts,
            stream=stream,
            app=EXCLUDED_APP if excluded else window.app,
            window=None if excluded else window.title,
            focused=focused,
            trigger="excluded" if excluded else trigger,
            heartbeat=heartbeat,
            source_frame_id=f"{self.session}:f{self._frames}",
        )
        self._rows.append(snap)
        self._shown[stream] = ((window.wid, None if excluded else window.title, excluded), ts)
        if excluded:
            self.stats.excluded_markers += 1
        else:
            self.stats.snapshots += 1
            self.stats.heartbeats += heartbeat
            if self.on_snapshot is not None:
                self.on_snapshot(snap, monitor)
        return snap

    def _interaction_snapshot(self, ts: int, trigger: str) -> None:
        """A snapshot for an interaction, at most one per SNAPSHOT_GAP_US and window."""
        if self._focus is None or self._focus_excluded:
            return
        last = self._last_interaction
        if last is not None and last[0] == self._focus.wid and ts - last[1] < SNAPSHOT_GAP_US:
            return
        self._last_interaction = (self._focus.wid, ts)
        self._snapshot(ts, trigger)

    def _input(self, ts: int, kind: str, window: WindowInfo | None, monitor: Monitor | None, **values: Any) -> None:
        self._rows.append(InputEvent(
            ref=self._ref(),
            ts_us=ts,
            kind=kind,
            stream=monitor.stream if monitor else None,
            app=window.app if window else None,
            window=window.title if window else None,
            source_frame_id=self._frame_id,
            **values,
        ))
        self.stats.count_input(kind)

    def _drop_recent_input(self, since_us: int, why: str) -> None:
        """Forget input at or after since_us (it may belong to a window that turned out excluded)."""
        kept = [r for r in self._rows if not (isinstance(r, InputEvent) and r.ts_us >= since_us)]
        dropped = len(self._rows) - len(kept)
        if dropped:
            for r in self._rows:
                if isinstance(r, InputEvent) and r.ts_us >= since_us:
                    self.stats.inputs[r.kind] -= 1
            self._rows = kept
            if why == "unknown":
                self.stats.unknown_inputs += dropped
            else:
                self.stats.excluded_inputs += dropped

    def _stretch_at(self, ts: int) -> tuple[int, WindowInfo | None, str | None] | None:
        """The focus stretch that held at ts (None before the first one)."""
        found = None
        for stretch in self._history:
            if stretch[0] > ts:
                break
            found = stretch
        return found

    def _private_at(self, ts: int) -> str | None:
        """Why input at ts must not be kept: "excluded", "unknown" (its window cannot be known), or None."""
        if self._history_floor is not None and ts < self._history_floor:
            return "unknown"
        stretch = self._stretch_at(ts)
        if stretch is not None and stretch[2] is not None:
            return "excluded" if stretch[2] == "excluded" else "unknown"
        # An excluded (or unknown) stretch that began just after ts: the window manager reports a
        # focus change a little after keys already go to the new window.
        for start, _window, why in self._history:
            if why in ("excluded", "unknown") and ts < start <= ts + GUARD_US:
                return str(why)
        return None

    def _pointer_private(self, ts: int, target: WindowInfo | None) -> str | None:
        """Why a click or scroll over target at ts must not be kept (None: keep it)."""
        if self.exclusions.excludes(target):
            return "excluded"
        why = self._private_at(ts)
        # While an excluded window has the focus, a click on another (recorded) window is kept: it
        # is that window's. Not so over no window, or when handled after the stretch ended.
        late = self._focus_since is not None and ts < self._focus_since
        if why == "excluded" and target is not None and not late:
            return None
        return why

    def _drop(self, why: str) -> None:
        if why == "unknown":
            self.stats.unknown_inputs += 1
        else:
            self.stats.excluded_inputs += 1

    # -- facts ----------------------------------------------------------------------------

    def set_monitors(self, ts: int, monitors: list[Monitor]) -> None:
        """The screen layout (mss); a StreamInfo per monitor per local day and size."""
        self._monitors = list(monitors)
        self._stream_infos(ts)

    def _stream_infos(self, ts: int) -> None:
        day = local_day(ts, self._zone)
        for m in self._monitors:
            key = (day, m.stream, m.width, m.height)
            if key not in self._stream_rows:
                self._stream_rows.add(key)
                self._rows.append(StreamInfo(ref=self._ref(), ts_us=ts, stream=m.stream,
                                             width_px=m.width, height_px=m.height))
                self.stats.streams += 1

    def _remember(self, ts: int, window: WindowInfo | None, why: str | None) -> None:
        self._history.append((ts, window, why))
        cutoff = ts - FOCUS_HISTORY_US
        keep = 0
        while keep + 1 < len(self._history) and self._history[keep + 1][0] <= cutoff:
            keep += 1
        if keep:
            del self._history[:keep]
            self._history_floor = self._history[0][0]

    def handover(self, ts: int, until: int) -> None:
        """From ts until a focus change at until, the window manager handed the focus over and the
        window in between was never seen: input in it is dropped, nothing else changes."""
        if until - ts >= HANDOVER_US:
            raise ValueError("a handover is shorter than HANDOVER_US; use focus(ts, UNKNOWN_WINDOW)")
        self._remember(ts, UNKNOWN_WINDOW, "handover")

    def focus(self, ts: int, window: WindowInfo | None) -> None:
        """The focused window from ts on (None: nothing has focus; UNKNOWN_WINDOW: never seen)."""
        before, was_excluded = self._focus, self._focus_excluded
        unknown = window is UNKNOWN_WINDOW
        excluded = unknown or self.exclusions.excludes(window)
        same = before is not None and window is not None and before.wid == window.wid
        if same and before == window and excluded == was_excluded:
            return
        self._focus_since = ts
        self._remember(ts, window, "unknown" if unknown else "excluded" if excluded else None)
        if excluded and not was_excluded:
            # Whatever was typed just before the window manager told us is not trusted either.
            self._drop_recent_input(ts - GUARD_US, "unknown" if unknown else "excluded")
            if self._burst is not None:
                if same:  # the title turned private: nothing typed in this window is kept
                    self._burst = None
                else:
                    self._burst.chars = [(t, c) for t, c in self._burst.chars if t < ts - GUARD_US]
            if unknown:
                self.stats.unknown_stretches += 1
            else:
                self.stats.excluded_stretches += 1
        elif unknown and before is not UNKNOWN_WINDOW:
            self.stats.unknown_stretches += 1
        if not same or excluded != was_excluded:
            self._end_burst(ts, snapshot=False)
            self._end_scroll(ts, snapshot=False)
        self._focus, self._focus_excluded = window, excluded
        if window is None:
            return
        if excluded:
            if not was_excluded or not same:
                self._snapshot(ts, "excluded")
            return
        if before is None or was_excluded or before.app != window.app:
            if before is not None or self._last_snapshot_us is not None:
                self._input(ts, "app_switch", window, self._stream_of(window))
            self._snapshot(ts, "app_switch" if self._last_snapshot_us is not None else "start")
        elif not same:
            self._input(ts, "window_focus", window, self._stream_of(window))
            self._snapshot(ts, "window_focus")
        elif before.title != window.title:
            self._title_pending = True  # taken by tick(), at most once per SNAPSHOT_GAP_US
        # (a move or resize alone is no snapshot; the next one names the new monitor)

    def click(self, ts: int, x: int, y: int, button: str, target: WindowInfo | None) -> None:
        """A mouse button went down at desktop point (x, y) over target."""
        self._last_input_us = ts
        why = self._pointer_private(ts, target)
        if why is not None:
            self._drop(why)
            return
        self._end_burst(ts)
        self._end_scroll(ts, snapshot=False)
        monitor = monitor_for(self._monitors, x, y)
        lx, ly = (x - monitor.left, y - monitor.top) if monitor else (x, y)
        self._input(ts, "click", target, monitor, x=lx, y=ly, button=button)
        self._interaction_snapshot(ts, "click")

    def scroll(self, ts: int, x: int, y: int, dx: int, dy: int, target: WindowInfo | None) -> None:
        """Wheel notches: one scroll row per gesture (same window and direction, short pauses)."""
        self._last_input_us = ts
        why = self._pointer_private(ts, target)
        if why is not None:
            self._drop(why)
            return
        sign = (dy > 0) - (dy < 0) or 2 * ((dx > 0) - (dx < 0))
        cur = self._scroll
        if cur is not None and cur.sign == sign and ts - cur.last_us <= SCROLL_GAP_US and \
                (cur.window.wid if cur.window else None) == (target.wid if target else None):
            cur.last_us = ts
            return
        self._end_scroll(ts)
        monitor = monitor_for(self._monitors, x, y)
        lx, ly = (x - monitor.left, y - monitor.top) if monitor else (x, y)
        self._input(ts, "scroll", target, monitor, x=lx, y=ly)
        self._scroll = _Scroll(target, sign, ts)

    def key(self, ts: int, *, name: str | None, char: str | None, code: int | None, pressed: bool = True) -> None:
        """A key went down (or up: only modifiers care). ``name`` is set for named keys."""
        bit = _MODIFIER_KEYS.get(name or "")
        if bit is not None:
            self._mods = (self._mods | bit) if pressed else (self._mods & ~bit)
            return
        if not pressed or name in _LOCK_KEYS:
            return
        self._last_input_us = ts
        why = self._private_at(ts)
        if why is not None:
            self._drop(why)
            return
        window = self._focus
        late = self._focus_since is not None and ts < self._focus_since
        if late:
            # Handled after a later focus change (its listener thread was starved): it belongs to
            # the window of its own time. Its key row is kept; its character joins no text row,
            # since that window's typing burst has already been written.
            stretch = self._stretch_at(ts)
            window = stretch[1] if stretch is not None else None
        monitor = self._stream_of(window)
        shortcut = bool(self._mods & COMMAND_MODS)
        if shortcut and char is not None and len(char) == 1 and 1 <= ord(char) <= 26:
            char = chr(ord(char) + 96)  # some X setups report Ctrl+C as the control character 0x03
        printable = name is None and char is not None and char.isprintable()
        typed = None
        if not shortcut:
            typed = char if printable else _TYPED_NAMED.get(name or "")
        # Without typed text, a character key's code would spell the text: only shortcuts and
        # named keys (Return, BackSpace, arrows, ...) keep theirs.
        keep_code = self.typed_text or shortcut or name is not None
        self._input(ts, "key", window, monitor,
                    key_code=code if keep_code else None,
                    modifiers=self._mods if keep_code else None)
        if shortcut and self._mods & MOD_CTRL and not self._mods & (MOD_ALT | MOD_CMD) and char:
            op = _CLIPBOARD.get(char.lower())
            if op is not None:
                # The shortcut, not the clipboard: what was copied is never read.
                self._input(ts, "clipboard", window, monitor, clipboard_op=op)
        if window is None or late:
            return
        burst = self._burst
        if burst is not None and (burst.window.wid != window.wid or ts - burst.first_us >= BURST_MAX_US):
            self._end_burst(ts)
            burst = None
        if burst is None:
            burst = self._burst = _Burst(window, monitor.stream if monitor else None, ts, ts)
        burst.last_us = ts
        if not self.typed_text:
            return
        if typed is not None:
            burst.chars.append((ts, typed))
        elif name == "backspace" and burst.chars:
            burst.chars.pop()

    def tick(self, now: int) -> None:
        """Time passes: end bursts and gestures, take a pending title snapshot, beat the heart."""
        self._stream_infos(now)
        if self._burst is not None and now - self._burst.last_us >= BURST_GAP_US:
            self._end_burst(now)
        if self._scroll is not None and now - self._scroll.last_us >= SCROLL_GAP_US:
            self._end_scroll(now)
        if self._title_pending and (self._last_snapshot_us is None or now - self._last_snapshot_us >= SNAPSHOT_GAP_US):
            self._snapshot(now, "title_change")
        if self._focus is None:
            return
        # No focused stream goes 30 s without a snapshot. Without input in that time it is a
        # heartbeat; with input (typing or scrolling on without a pause) an ordinary one. An
        # excluded stretch beats the same way whatever happens in it, saying nothing about input.
        if now - (self._last_snapshot_us or 0) < HEARTBEAT_US:
            return
        if self._focus_excluded or now - (self._last_input_us or 0) >= HEARTBEAT_US:
            self._snapshot(now, "idle", heartbeat=True)
        else:
            self._snapshot(now, "typing" if self._burst else "scroll" if self._scroll else "input")

    def visible(self, ts: int, windows: list[WindowInfo]) -> None:
        """The visible windows, bottom to top: monitors other than the focused one get snapshots too.

        Each monitor is its own stream (paper 4.1). The topmost window centred on a monitor is
        what that monitor shows; it is snapshotted (focused=False) when it changes and every 30 s
        while it stays, under the same exclusion rules.
        """
        if len(self._monitors) < 2:
            return
        focus_monitor = self._stream_of(self._focus) if self._focus is not None else None
        top: dict[str, WindowInfo] = {}
        for w in windows:
            m = monitor_for(self._monitors, *w.center())
            if m is not None:
                top[m.stream] = w
        for m in self._monitors:
            shows = top.get(m.stream)
            if shows is None or (focus_monitor is not None and m.stream == focus_monitor.stream):
                continue
            excluded = self.exclusions.excludes(shows)
            shown = self._shown.get(m.stream)
            if shown is None or shown[0] != (shows.wid, None if excluded else shows.title, excluded):
                self._write_snapshot(ts, shows, excluded, m, "visible", heartbeat=False, focused=False)
            elif ts - shown[1] >= HEARTBEAT_US:
                self._write_snapshot(ts, shows, excluded, m, "idle", heartbeat=True, focused=False)

    def close(self, now: int) -> None:
        """The session ends: pending typing and scrolling become rows."""
        self._end_burst(now)
        self._end_scroll(now, snapshot=False)

    def _end_burst(self, ts: int, snapshot: bool = True) -> None:
        burst, self._burst = self._burst, None
        if burst is None:
            return
        text = "".join(c for _t, c in burst.chars)[:MAX_TYPED_TEXT]
        if self.typed_text and text:
            monitor = monitor_for(self._monitors, *burst.window.center())
            self._input(burst.last_us, "text", burst.window, monitor, text=text)
        if snapshot:
            self._interaction_snapshot(min(ts, burst.last_us + BURST_GAP_US), "typing")

    def _end_scroll(self, ts: int, snapshot: bool = True) -> None:
        gesture, self._scroll = self._scroll, None
        if gesture is not None and snapshot:
            self._interaction_snapshot(min(ts, gesture.last_us + SCROLL_GAP_US), "scroll")

    # -- output ---------------------------------------------------------------------------

    def take(self, before_us: int | None = None) -> CaptureBatch:
        """The rows so far (only those older than before_us, when given) as a batch for the log.

        Holding the newest rows back for GUARD_US lets a late-reported excluded window still
        take back the input typed just before it was seen.
        """
        if before_us is None:
            out, self._rows = self._rows, []
        else:
            out = [r for r in self._rows if r.ts_us < before_us]
            self._rows = [r for r in self._rows if r.ts_us >= before_us]
        batch = CaptureBatch(source_id=self.source_id, recorder=RECORDER)
        for r in out:
            self._seq += 1
            r = dataclasses.replace(r, ref=f"{self.source_id}:{self._seq}")
            if isinstance(r, Snapshot):
                batch.snapshots.append(r)
            elif isinstance(r, InputEvent):
                batch.inputs.append(r)
            else:
                batch.streams.append(r)
        return batch


# ---------------------------------------------------------------------------- the live loop


@dataclass(frozen=True)
class RecordOptions:
    exclusions: Exclusions
    typed_text: bool = True
    screenshots: bool = False
    duration_s: float | None = None


@dataclass
class Summary:
    session: str
    source_id: str
    display: str
    monitors: list[str]
    stats: Stats
    landed: dict[str, int]
    screenshots: int
    screenshots_skipped: int  # an excluded window was visible on that monitor
    days: list[str]
    days_sealed: list[str]
    seconds: float
    quarantined: int = 0
    quarantine_reasons: dict[str, int] = field(default_factory=dict)


def host_name() -> str:
    """This machine's name as a ref part (no colons or spaces)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", socket.gethostname()).strip("-") or "host"


def session_id(now_ns: int, pid: int) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_ns // 1_000_000_000)) + f"-{pid}"


def _now_us() -> int:
    return time.time_ns() // 1000


class _Writer:
    """Appends batches to the event log; keeps them while another process holds the log."""

    def __init__(self, home: Home, say: Callable[[str], None]):
        from capture.log import EventLog  # DuckDB via the log: only when recording starts

        self.log = EventLog(home)
        self.say = say
        self.waiting: list[CaptureBatch] = []
        self.landed: dict[str, int] = {}
        self.days: set[str] = set()
        self.sealed: list[str] = []
        self.quarantined = 0  # rows the log refused (e.g. for a day sealed while recording)
        self.reasons: dict[str, int] = {}
        self._warned = False

    def write(self, batch: CaptureBatch, *, seal: bool = False) -> bool:
        if batch.count():
            self.waiting.append(batch)
        elif seal and not self.waiting:
            try:
                self.sealed.extend(self.log.seal_due())
            except UserError as exc:
                if "being written by" not in str(exc):
                    raise
                return False
            return True
        while self.waiting:
            try:
                report = self.log.append(self.waiting[0], seal=seal and len(self.waiting) == 1)
            except UserError as exc:
                if "being written by" not in str(exc):
                    raise
                if not self._warned:
                    self.say(f"{exc}; keeping rows in memory until it is free")
                    self._warned = True
                return False
            self.waiting.pop(0)
            self._warned = False
            for k, v in report.landed.items():
                self.landed[k] = self.landed.get(k, 0) + v
            self.days.update(report.days_touched)
            self.sealed.extend(report.days_sealed)
            self.quarantined += report.quarantined
            for reason, n in report.quarantine_reasons.items():
                self.reasons[reason] = self.reasons.get(reason, 0) + n
        return True


def record(
    home: Home,
    options: RecordOptions,
    *,
    display: str,
    stop: threading.Event,
    progress: Callable[[str], None] | None = None,
) -> Summary:
    """Record the X display until ``stop`` is set or the duration has passed."""
    say = progress or (lambda _m: None)
    with _one_recorder(home):
        return _record_display(home, options, display, stop, say)


RECORDER_LOCK = "recorder.lock"


@contextlib.contextmanager
def _one_recorder(home: Home) -> Iterator[None]:
    """One recorder per data folder: a second one would write every snapshot twice."""
    path = home.root / RECORDER_LOCK
    with open(path, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise UserError(f"{holder} is already recording into {home.root}; stop it first") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"af record (process {os.getpid()})\n")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _record_display(home: Home, options: RecordOptions, display: str, stop: threading.Event,
                    say: Callable[[str], None]) -> Summary:
    # pynput picks its backend from $DISPLAY when imported; set it first, and check it works.
    os.environ["DISPLAY"] = display
    from capture.x11 import X11Desktop, read_monitors  # Xlib: only on an X11 desktop

    desktop = X11Desktop(display)
    previous_hook = threading.excepthook

    def quiet_hook(args: threading.ExceptHookArgs) -> None:
        # pynput's listener threads die with the X connection; the main loop notices and says
        # so in one sentence, so their tracebacks would only be noise.
        from Xlib import error as xerror  # Xlib: only on an X11 desktop

        if args.exc_type is not None and issubclass(args.exc_type, (xerror.ConnectionClosedError, OSError)):
            return
        previous_hook(args)

    threading.excepthook = quiet_hook
    try:
        return _record(home, options, display, desktop, read_monitors, stop, say)
    finally:
        threading.excepthook = previous_hook
        desktop.close()


def _record(home: Home, options: RecordOptions, display: str, desktop: Any,
            read_monitors: Callable[[str], list[Monitor]], stop: threading.Event,
            say: Callable[[str], None]) -> Summary:
    try:
        from pynput import keyboard, mouse  # pynput connects to the display on import: only when recording
    except ImportError as exc:
        raise UserError(f"cannot listen to input on {display}: {exc}".split("\n")[0]) from None
    settings = home.settings()
    started_ns = time.time_ns()
    session = session_id(started_ns, os.getpid())
    writer = _Writer(home, say)
    # Appends and PNG encoding run on this thread, so the main loop keeps reading focus every
    # POLL_S however slow the disk or the log is (a missed focus change could misattribute keys).
    worker = _Worker()
    shots = _Screenshots(home, display, desktop, options.exclusions, worker) if options.screenshots else None
    core = Recorder(host=host_name(), session=session, tz=settings.tz, exclusions=options.exclusions,
                    typed_text=options.typed_text, on_snapshot=shots.take if shots else None)
    # Each input event is stamped with the X server's time of it (second field): which window it
    # belongs to is decided by that, however late this process gets to it.
    events: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
    mouse_listener, keyboard_listener = _timed_listeners(mouse, keyboard, display)

    def on_click(x: int, y: int, button: Any, pressed: bool, injected: bool = False) -> None:
        if pressed:
            events.put(("click", mouse_listener.event_time, int(x), int(y), getattr(button, "name", str(button))))

    def on_scroll(x: int, y: int, dx: int, dy: int, injected: bool = False) -> None:
        events.put(("scroll", mouse_listener.event_time, int(x), int(y), int(dx), int(dy)))

    def on_key(key: Any, pressed: bool) -> None:
        name = getattr(key, "name", None)  # keyboard.Key members have a name, KeyCode has not
        code = getattr(key, "vk", None) if name is None else getattr(getattr(key, "value", None), "vk", None)
        char = getattr(key, "char", None) if name is None else None
        events.put(("key", keyboard_listener.event_time, name, char, code, pressed))

    clock = ServerClock()
    first = desktop.poll()
    clock.observe(first.server_ms, _now_us())
    listeners = [
        mouse_listener(on_click=on_click, on_scroll=on_scroll),
        keyboard_listener(on_press=lambda k, injected=False: on_key(k, True),
                          on_release=lambda k, injected=False: on_key(k, False)),
    ]
    for lis in listeners:
        lis.start()
        ready = threading.Thread(target=lis.wait, daemon=True)
        ready.start()
        ready.join(5.0)
        if ready.is_alive() or not lis.is_alive():
            for other in listeners:
                other.stop()
            raise UserError(f"cannot listen to input on {display}: the X server needs the RECORD extension")

    monitors = read_monitors(display)
    now = clock.to_us(first.server_ms)
    core.set_monitors(now, monitors)
    core.focus(now, first.current)
    if os.environ.get("XDG_SESSION_TYPE", "").lower() == "wayland" or os.environ.get("WAYLAND_DISPLAY"):
        say("this is a Wayland session: only X11 (XWayland) windows and their input can be seen; "
            "log in with an X11 session to record everything")
    sizes = ", ".join(f"{m.stream} {m.width}x{m.height}" for m in monitors)
    say(f"recording {display} ({sizes}) into {home.root}; session {session}; Ctrl-C to stop")
    deadline = None if options.duration_s is None else time.monotonic() + options.duration_s
    next_flush = time.monotonic() + FLUSH_S
    next_monitors = time.monotonic() + MONITOR_CHECK_S
    next_visible = time.monotonic()
    next_status = time.monotonic() + 60.0
    from Xlib import error as xerror  # Xlib: only on an X11 desktop

    worker.start()
    try:
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            batch: list[tuple[Any, ...]] = []
            try:
                batch.append(events.get(timeout=POLL_S))
                while True:
                    batch.append(events.get_nowait())
            except queue.Empty:
                pass
            # Focus is polled after the events were taken: every focus change before they
            # happened is then known, with the server's time of it, and they are fed in the
            # server's order.
            polled = desktop.poll()
            clock.observe(polled.server_ms, _now_us())
            now = max(clock.to_us(polled.server_ms), now)
            _feed(core, clock, polled, batch, desktop.window_at)
            if polled.stable:
                core.focus(now, polled.current)  # a title change, or no EWMH window manager
            core.tick(now)
            mono = time.monotonic()
            if mono >= next_monitors:
                next_monitors = mono + MONITOR_CHECK_S
                monitors = read_monitors(display)
                core.set_monitors(now, monitors)
            if len(monitors) > 1 and mono >= next_visible:
                next_visible = mono + VISIBLE_CHECK_S
                core.visible(now, desktop.visible_windows())
            if worker.error is not None:
                raise worker.error
            if mono >= next_flush and worker.idle():
                taken = core.take(before_us=now - GUARD_US)
                worker.submit(functools.partial(writer.write, taken))
                # Appending costs more as the log grows (it checks refs across the log); waiting
                # a few times that cost keeps the recorder's share of a core small.
                next_flush = mono + max(FLUSH_S, FLUSH_COST_FACTOR * worker.last_cost)
            if not all(lis.is_alive() for lis in listeners):
                say(f"input listening on {display} stopped (the X server closed the connection); "
                    "saving what was recorded")
                break
            if mono >= next_status:
                next_status = mono + 60.0
                st = core.stats
                say(f"{st.snapshots} snapshots, {sum(st.inputs.values())} inputs, "
                    f"{st.excluded_stretches} excluded stretches so far")
    except (xerror.ConnectionClosedError, xerror.DisplayError) as exc:
        say(f"the X display {display} went away ({exc}); saving what was recorded")
    finally:
        for lis in listeners:
            try:
                lis.stop()
            except (xerror.ConnectionClosedError, OSError):
                pass  # the display is already gone; the listener thread ends with it
        worker.finish()
        core.close(_now_us())
        _final_write(writer, core, say)
        if worker.error is not None:
            raise worker.error
    return Summary(
        session=session,
        source_id=core.source_id,
        display=display,
        monitors=[f"{m.stream} {m.width}x{m.height}" for m in monitors],
        stats=core.stats,
        landed=dict(sorted(writer.landed.items())),
        screenshots=shots.saved if shots else 0,
        screenshots_skipped=shots.skipped if shots else 0,
        days=sorted(writer.days),
        days_sealed=sorted(writer.sealed),
        seconds=round((time.time_ns() - started_ns) / 1e9, 1),
        quarantined=writer.quarantined,
        quarantine_reasons=dict(sorted(writer.reasons.items())),
    )


def _feed(core: Recorder, clock: ServerClock, polled: Any, batch: list[tuple[Any, ...]],
          window_at: Callable[[int, int], WindowInfo | None]) -> None:
    """Focus changes and input events of one loop turn, to the recorder in the server's time order.

    A focus change sorts before input of the same millisecond (the safe side: such a key counts
    for the window that was just entered). An unknown stretch shorter than HANDOVER_US before the
    next change is the window manager's hand-over, no stretch of its own.
    """
    items: list[tuple[int, int, int, tuple[Any, ...]]] = []
    changes = polled.changes
    for i, (t, window) in enumerate(changes):
        items.append((clock.to_us(t), 0, i, ("focus", window, clock.to_us(changes[i + 1][0]) if i + 1 < len(changes) else None)))
    for i, ev in enumerate(batch):
        items.append((clock.to_us(ev[1]), 1, i, ev))
    items.sort(key=lambda item: item[:3])
    for ts, _order, _i, ev in items:
        if ev[0] == "focus":
            window, until = ev[1], ev[2]
            if window is UNKNOWN_WINDOW and until is not None and until - ts < HANDOVER_US:
                core.handover(ts, until)
            else:
                core.focus(ts, window)
        elif ev[0] == "click":
            core.click(ts, ev[2], ev[3], ev[4], window_at(ev[2], ev[3]))
        elif ev[0] == "scroll":
            core.scroll(ts, ev[2], ev[3], ev[4], ev[5], window_at(ev[2], ev[3]))
        else:
            core.key(ts, name=ev[2], char=ev[3], code=ev[4], pressed=ev[5])


def _timed_listeners(mouse: Any, keyboard: Any, display: str) -> tuple[Any, Any]:
    """pynput's X listeners, made to keep the X server's timestamp of the event being handled.

    pynput hands callbacks a key or a position but not the event; its X backend parses each
    recorded event in ``_handle_message`` and calls back from there, on the same thread, so the
    time is taken there. Without that hook input could only be timed by the callback's clock,
    which misplaces keys when the process is starved: refused rather than recorded wrongly.
    """
    classes = []
    for base in (mouse.Listener, keyboard.Listener):
        if not callable(getattr(base, "_handle_message", None)):
            raise UserError(f"cannot time input on {display}: this pynput ({base.__module__}) does not "
                            "expose X events; install pynput 1.7 or 1.8")

        class Timed(base):  # type: ignore[misc, valid-type]
            event_time = 0  # the X server time (ms) of the event being handled

            def _handle_message(self, display: Any, event: Any, injected: bool) -> None:
                type(self).event_time = int(event.time)
                super()._handle_message(display, event, injected)

        Timed.__name__ = f"Timed{base.__name__}"
        classes.append(Timed)
    return classes[0], classes[1]


def _final_write(writer: _Writer, core: Recorder, say: Callable[[str], None]) -> None:
    """Flush everything; wait up to 30 s for another writer to let go of the log."""
    last = core.take()
    deadline = time.monotonic() + 30.0
    while not writer.write(last, seal=True):
        if not writer.waiting:
            return  # every row landed; only the sealing of past days waits for a later run
        last = CaptureBatch(source_id=core.source_id, recorder=RECORDER)
        if time.monotonic() > deadline:
            lost = sum(b.count() for b in writer.waiting)
            raise CheckFailed(f"the event log stayed busy; {lost} recorded rows could not be saved")
        time.sleep(0.5)


class _Worker(threading.Thread):
    """Runs jobs (log appends, PNG writes) in order, off the main loop; keeps the first error."""

    def __init__(self) -> None:
        super().__init__(name="af-record-writer", daemon=True)
        self.jobs: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.last_cost = 0.0  # seconds the last job took
        self._pending = 0
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], object]) -> None:
        with self._lock:
            self._pending += 1
        self.jobs.put(job)

    def idle(self) -> bool:
        with self._lock:
            return self._pending == 0

    def run(self) -> None:
        while (job := self.jobs.get()) is not None:
            start = time.monotonic()
            try:
                if self.error is None:
                    job()
            except BaseException as exc:  # handed to the main loop, which stops and reports it
                self.error = exc
            self.last_cost = time.monotonic() - start
            with self._lock:
                self._pending -= 1

    def finish(self) -> None:
        """Let queued jobs run, then end the thread."""
        if self.is_alive():
            self.jobs.put(None)
            self.join()


class _Screenshots:
    """--screenshots: one PNG per recorded snapshot under <home>/screens/<day>/ (never excluded ones)."""

    def __init__(self, home: Home, display: str, desktop: Any, exclusions: Exclusions, worker: _Worker):
        import mss  # mss: only when screenshots are opted in

        self.dir = home.root / "screens"
        # Pixels are the most sensitive thing kept: only the user may list or read them.
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        self.desktop = desktop
        self.worker = worker
        self.exclusions = exclusions
        self.grabber = mss.MSS(display=display)
        self._zone = zone(home.settings().tz)
        self.saved = 0
        self.skipped = 0

    def take(self, snap: Snapshot, monitor: Monitor | None) -> None:
        import mss.tools  # mss: only when screenshots are opted in

        if monitor is None:
            return
        # A password manager open beside the focused window would be in the picture: skip it.
        if any(self.exclusions.excludes(w) and monitor.intersects(w) for w in self.desktop.visible_windows()):
            self.skipped += 1
            return
        shot = self.grabber.grab({"left": monitor.left, "top": monitor.top,
                                  "width": monitor.width, "height": monitor.height})
        folder = self.dir / local_day(snap.ts_us, self._zone)
        name = (snap.source_frame_id or snap.ref).replace(":", "_") + ".png"

        def write() -> None:
            folder.mkdir(parents=True, exist_ok=True)
            mss.tools.to_png(shot.rgb, shot.size, output=str(folder / name))
            self.saved += 1

        self.worker.submit(write)
