"""What the recorder asks an X11 desktop: the focused window and when it changed, the window
under the pointer, the visible windows and the monitors, and the X server's clock.

Window facts come from python-xlib on one connection owned by the recorder's main thread
(pynput's listeners keep their own connections). Windows can vanish between two requests; every
query treats a vanished window as "no window" instead of failing.

Time: input events and focus changes carry the X server's own timestamps (milliseconds since
the server started, wrapping at 2**32), so which window a key belongs to is decided by when the
server saw it, not by when a (possibly stalled) Python thread got to it. :class:`ServerClock`
maps those timestamps to the recorder's clock (microseconds since the epoch).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from typing import Any

from capture.errors import UserError

# Caps on what a window may tell us (the same caps the importers apply).
MAX_APP = 256
MAX_TITLE = 1024
# The focused window's geometry and state are read in full this often (its title every time).
DESCRIBE_EVERY_S = 1.0
# How deep below a top-level frame the client window is looked for (window managers reparent
# the client into one or two frame windows).
_CLIENT_SEARCH_DEPTH = 3

NO_DISPLAY = "no X display: set DISPLAY or pass --display"

SERVER_WRAP = 1 << 32  # X timestamps are CARD32 milliseconds
# The offset between the server's clock and the wall clock is re-taken when it grows by more than
# this: a suspend (the server's monotonic clock stops while the wall clock runs on) or the wall
# clock set forward. Smaller moves are round-trip jitter and drift. A wall clock set back is not
# followed: times must never run backwards (input is judged by its time against the focus
# history, and an earlier time would find another window).
RESYNC_US = 1_000_000
# A poll re-reads the active window until no focus change happened while it read (bounded).
_POLL_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class WindowInfo:
    """A top-level client window as the recorder sees it; geometry in root (desktop) pixels."""

    wid: int
    app: str  # WM_CLASS class part ("Firefox"), else its instance part, else "(unknown)"
    instance: str | None  # WM_CLASS instance part ("Navigator")
    title: str | None  # _NET_WM_NAME, else WM_NAME
    x: int = 0
    y: int = 0
    width: int = 0
    height: int = 0
    hidden: bool = False  # minimised (_NET_WM_STATE_HIDDEN)
    # The window manager's decorations around it (_NET_FRAME_EXTENTS: left, right, top, bottom):
    # a title bar shows the title, so "on screen" and "under the pointer" include it.
    frame: tuple[int, int, int, int] = (0, 0, 0, 0)

    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2

    def outer(self) -> tuple[int, int, int, int]:
        """(x, y, width, height) including the decorations."""
        left, right, top, bottom = self.frame
        return self.x - left, self.y - top, self.width + left + right, self.height + top + bottom

    def covers(self, x: int, y: int) -> bool:
        ox, oy, ow, oh = self.outer()
        return ox <= x < ox + ow and oy <= y < oy + oh


@dataclass(frozen=True, slots=True)
class Monitor:
    """One monitor: the recorder's stream ``monitor_<n>`` and its rectangle on the desktop."""

    stream: str
    left: int
    top: int
    width: int
    height: int

    def contains(self, x: int, y: int) -> bool:
        return self.left <= x < self.left + self.width and self.top <= y < self.top + self.height

    def intersects(self, w: WindowInfo) -> bool:
        x, y, width, height = w.outer()
        return x < self.left + self.width and self.left < x + width and y < self.top + self.height and self.top < y + height


# The window of a stretch of time whose focused window cannot be known: the active window changed
# more than once between two reads (the recorder was stalled), so the windows in between were
# never seen. Input in such a stretch is dropped (capture.recorder).
UNKNOWN_WINDOW = WindowInfo(-1, "(unknown)", None, None)


class ServerClock:
    """X server timestamps (CARD32 ms, wrapping) to the recorder's clock (integer µs since the epoch).

    Fed pairs (server time, wall time) read together; deterministic given those pairs. The map is
    piecewise: an offset holds from the server time it was taken at, so events before a resync
    keep their times; offsets only grow, so it never runs backwards.
    """

    def __init__(self) -> None:
        self._anchor: int | None = None  # unwrapped server ms of the latest observation
        self._pieces: list[tuple[int, int]] = []  # (from unwrapped ms, offset µs)

    def unwrap(self, t: int) -> int:
        """The unwrapped value of a 32-bit server time: the one nearest the latest observation."""
        t %= SERVER_WRAP
        if self._anchor is None:
            return t
        delta = (t - self._anchor) % SERVER_WRAP
        if delta >= SERVER_WRAP // 2:
            delta -= SERVER_WRAP
        return self._anchor + delta

    def observe(self, server_ms: int, wall_us: int) -> None:
        """The server's time read (a round trip) just before wall_us."""
        ms = self.unwrap(server_ms)
        self._anchor = ms if self._anchor is None else max(self._anchor, ms)
        offset = wall_us - ms * 1000
        if not self._pieces:
            self._pieces.append((ms, offset))
            return
        start, current = self._pieces[-1]
        if offset - current > RESYNC_US and ms > start:
            self._pieces.append((ms, offset))
            del self._pieces[:-8]  # events older than a few resyncs are long handled

    def to_us(self, server_ms: int) -> int:
        if not self._pieces:
            raise RuntimeError("ServerClock.to_us before the first observation")
        ms = self.unwrap(server_ms)
        piece = self._pieces[0]
        for p in self._pieces:
            if p[0] <= ms:
                piece = p
        return ms * 1000 + piece[1]


@dataclass(frozen=True)
class FocusPoll:
    """What one :meth:`X11Desktop.poll` saw."""

    server_ms: int  # the server's time at the end of the poll (32-bit)
    # Changes of the active window since the previous poll, in order: (server time, window from
    # then on); UNKNOWN_WINDOW where the window in effect from that time was never seen.
    changes: list[tuple[int, WindowInfo | None]]
    current: WindowInfo | None  # the focused window as read now
    stable: bool  # current is the window since the last change (no change while reading it)


def monitor_for(monitors: list[Monitor], x: int, y: int) -> Monitor | None:
    """The monitor holding a desktop point; a point off every monitor goes to the nearest one."""
    if not monitors:
        return None
    for m in monitors:
        if m.contains(x, y):
            return m

    def distance(m: Monitor) -> int:
        dx = max(m.left - x, 0, x - (m.left + m.width - 1))
        dy = max(m.top - y, 0, y - (m.top + m.height - 1))
        return dx * dx + dy * dy

    return min(monitors, key=lambda m: (distance(m), m.stream))


def read_monitors(display_name: str | None) -> list[Monitor]:
    """Every monitor mss reports (its entry 0 is the union of all of them and is skipped)."""
    import mss

    with mss.MSS(display=display_name) as grabber:
        found = grabber.monitors[1:]
    return [
        Monitor(f"monitor_{i}", int(m["left"]), int(m["top"]), int(m["width"]), int(m["height"]))
        for i, m in enumerate(found, start=1)
    ]


def display_name(explicit: str | None) -> str:
    """The display to record: --display, else $DISPLAY; a UserError when there is neither."""
    name = explicit if explicit is not None else os.environ.get("DISPLAY", "")
    if not name.strip():
        raise UserError(NO_DISPLAY)
    return name.strip()


class X11Desktop:
    """A python-xlib connection answering the recorder's questions about windows."""

    def __init__(self, name: str):
        from Xlib import display, error  # Xlib: optional off Linux; only when a display is opened

        self._error = error
        try:
            self.d: Any = display.Display(name)
        except (error.DisplayError, error.ConnectionClosedError, OSError) as exc:
            raise UserError(f"{NO_DISPLAY} (cannot open {name!r}: {str(exc).strip() or type(exc).__name__})") from None
        self.name = name
        self.root = self.d.screen().root
        atom = self.d.intern_atom
        self._active = atom("_NET_ACTIVE_WINDOW")
        self._stacking = atom("_NET_CLIENT_LIST_STACKING")
        self._clients = atom("_NET_CLIENT_LIST")
        self._net_name = atom("_NET_WM_NAME")
        self._utf8 = atom("UTF8_STRING")
        self._wm_state = atom("WM_STATE")
        self._net_state = atom("_NET_WM_STATE")
        self._hidden = atom("_NET_WM_STATE_HIDDEN")
        self._extents = atom("_NET_FRAME_EXTENTS")
        self._active_cache: tuple[WindowInfo, float] | None = None
        # Focus changes come as PropertyNotify of _NET_ACTIVE_WINDOW on the root, stamped by the
        # server; they queue on this connection however long the recorder is stalled. A tiny
        # unmapped window of our own gives the server's current time the ICCCM way (a
        # zero-length property append answers with a stamped PropertyNotify), and marks a point
        # in the event stream.
        from Xlib import X  # Xlib: optional off Linux

        self._clock_atom = atom("_AF_RECORDER_CLOCK")
        try:
            self.root.change_attributes(event_mask=X.PropertyChangeMask)
            self._clock_window = self.root.create_window(
                -10, -10, 1, 1, 0, X.CopyFromParent, X.InputOnly, X.CopyFromParent,
                event_mask=X.PropertyChangeMask)
            self.d.sync()
        except (error.XError, error.ConnectionClosedError) as exc:
            raise UserError(f"cannot watch focus changes on {name!r}: {exc}") from None

    def close(self) -> None:
        try:
            self.d.close()
        except Exception:  # closing a connection the server already dropped
            pass

    # -- the questions ----------------------------------------------------------------------

    def poll(self) -> FocusPoll:
        """Focus changes since the last poll, with their server times, and the focused window now.

        The active window is read between two marks in the event stream; when no change lies
        between them, what was read is the window since the last change. Windows in effect
        between earlier changes of the same poll were never read: they are UNKNOWN_WINDOW.
        """
        times: list[int] = []
        now = self._mark(times)
        current: WindowInfo | None = None
        stable = False
        for _ in range(_POLL_ATTEMPTS):
            seen = len(times)
            current = self.active_window()
            now = self._mark(times)
            if len(times) == seen:
                stable = True
                break
        changes: list[tuple[int, WindowInfo | None]] = [(t, UNKNOWN_WINDOW) for t in times]
        if changes and stable:
            changes[-1] = (times[-1], current)
        return FocusPoll(now, changes, current, stable)

    def _mark(self, times: list[int]) -> int:
        """Put a mark in the event stream and read events up to it; the mark's server time.

        The server's times of _NET_ACTIVE_WINDOW changes read on the way are appended to times.
        """
        from Xlib import X  # Xlib: optional off Linux

        self._clock_window.change_property(self._clock_atom, self._clock_atom, 8, b"", mode=X.PropModeAppend)
        self.d.flush()
        while True:
            ev = self.d.next_event()
            if ev.type != X.PropertyNotify:
                continue
            if ev.window.id == self._clock_window.id and ev.atom == self._clock_atom:
                return int(ev.time)
            if ev.atom == self._active and ev.window.id == self.root.id:
                times.append(int(ev.time))

    def active_window(self) -> WindowInfo | None:
        """The focused client window (EWMH _NET_ACTIVE_WINDOW, else the X input focus)."""
        wid = self._window_property(self.root, self._active)
        if wid is None:
            try:
                focus = self.d.get_input_focus().focus
            except self._error.XError:
                return None
            if isinstance(focus, int) or focus is None or focus.id == self.root.id:
                return None
            client = self._client_above(focus)
            return self.describe(client) if client is not None else None
        if wid == 0:
            return None
        window = self.d.create_resource_object("window", wid)
        now = time.monotonic()
        cached = self._active_cache
        if cached is not None and cached[0].wid == wid and now - cached[1] < DESCRIBE_EVERY_S:
            # The focus is read 20 times a second: between full reads only the title can change
            # fast enough to matter (one round trip instead of about nine).
            try:
                title = self._title(window)
            except self._error.XError:
                return None
            return dataclasses.replace(cached[0], title=title)
        info = self.describe(window)
        self._active_cache = (info, now) if info is not None else None
        return info

    def window_at(self, x: int, y: int) -> WindowInfo | None:
        """The client window under a desktop point, topmost first (None over the bare desktop)."""
        for info in reversed(self.visible_windows()):
            if info.covers(x, y):
                return info
        return None

    def visible_windows(self) -> list[WindowInfo]:
        """Mapped, not minimised client windows, bottom to top (EWMH stacking order)."""
        ids = self._list_property(self.root, self._stacking) or self._list_property(self.root, self._clients)
        out = []
        for wid in ids:
            info = self.describe(self.d.create_resource_object("window", wid))
            if info is not None and not info.hidden and info.width > 0 and info.height > 0:
                out.append(info)
        return out

    def describe(self, window: Any) -> WindowInfo | None:
        """App, title, geometry and state of one client window (None if it is gone)."""
        try:
            attrs = window.get_attributes()
            if attrs.map_state == 0:  # IsUnmapped: nothing to see
                return None
            wm_class = window.get_wm_class()
            title = self._title(window)
            geo = window.get_geometry()
            pos = self.root.translate_coords(window, 0, 0)
            states = self._list_property(window, self._net_state)
            extents = self._list_property(window, self._extents)
        except self._error.XError:
            return None
        instance = _clean(wm_class[0], MAX_APP) if wm_class else None
        cls = _clean(wm_class[1], MAX_APP) if wm_class and len(wm_class) > 1 else None
        return WindowInfo(
            wid=int(window.id),
            app=cls or instance or "(unknown)",
            instance=instance,
            title=title,
            x=int(pos.x),
            y=int(pos.y),
            width=int(geo.width),
            height=int(geo.height),
            hidden=self._hidden in states,
            frame=(extents[0], extents[1], extents[2], extents[3]) if len(extents) == 4 else (0, 0, 0, 0),
        )

    # -- property helpers -------------------------------------------------------------------

    def _title(self, window: Any) -> str | None:
        from Xlib import X, Xatom  # Xlib: optional off Linux

        prop = window.get_full_property(self._net_name, self._utf8)
        if prop is not None and prop.value:
            return _clean(_decode(prop.value, "utf-8"), MAX_TITLE)
        prop = window.get_full_property(Xatom.WM_NAME, X.AnyPropertyType)
        if prop is None or not prop.value:
            return None
        # STRING is Latin-1 by the ICCCM; COMPOUND_TEXT and UTF8_STRING are read as UTF-8 (their
        # ASCII subset is identical, and anything else is replaced rather than guessed).
        encoding = "latin-1" if prop.property_type == Xatom.STRING else "utf-8"
        return _clean(_decode(prop.value, encoding), MAX_TITLE)

    def _window_property(self, window: Any, atom: int) -> int | None:
        values = self._list_property(window, atom)
        return int(values[0]) if values else None

    def _list_property(self, window: Any, atom: int) -> list[int]:
        from Xlib import X  # Xlib: optional off Linux

        try:
            prop = window.get_full_property(atom, X.AnyPropertyType)
        except self._error.XError:
            return []
        if prop is None or prop.format != 32:
            return []
        return [int(v) for v in prop.value]

    def _client_above(self, window: Any) -> Any | None:
        """The client window (the one with WM_STATE) at or above a focused sub-window."""
        from Xlib import X  # Xlib: optional off Linux

        current = window
        for _ in range(16):
            try:
                if current.get_full_property(self._wm_state, X.AnyPropertyType) is not None:
                    return current
                parent = current.query_tree().parent
            except self._error.XError:
                return None
            if parent is None or isinstance(parent, int) or parent.id == self.root.id:
                return self._client_below(current, _CLIENT_SEARCH_DEPTH)
            current = parent
        return None

    def _client_below(self, window: Any, depth: int) -> Any | None:
        from Xlib import X  # Xlib: optional off Linux

        try:
            if window.get_full_property(self._wm_state, X.AnyPropertyType) is not None:
                return window
            children = window.query_tree().children if depth > 0 else []
        except self._error.XError:
            return None
        for child in children:
            found = self._client_below(child, depth - 1)
            if found is not None:
                return found
        return None


def _decode(value: Any, encoding: str) -> str:
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8", "replace")
    return raw.decode(encoding, errors="replace")


def _clean(text: Any, limit: int) -> str | None:
    """A single-line, bounded, valid-Unicode text (None when empty)."""
    if text is None:
        return None
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    s = "".join(ch if ch.isprintable() else " " for ch in s).strip()
    s = s.encode("utf-8", "replace").decode("utf-8")
    return s[:limit] or None
