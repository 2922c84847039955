"""What the recorder asks an X11 desktop: the focused window, the window under the pointer,
the visible windows and the monitors.

Window facts come from python-xlib on one connection owned by the recorder's main thread
(pynput's listeners keep their own connections). Windows can vanish between two requests; every
query treats a vanished window as "no window" instead of failing.
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
        from Xlib import display, error

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

    def close(self) -> None:
        try:
            self.d.close()
        except Exception:  # closing a connection the server already dropped
            pass

    # -- the questions ----------------------------------------------------------------------

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
        from Xlib import X, Xatom

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
        from Xlib import X

        try:
            prop = window.get_full_property(atom, X.AnyPropertyType)
        except self._error.XError:
            return []
        if prop is None or prop.format != 32:
            return []
        return [int(v) for v in prop.value]

    def _client_above(self, window: Any) -> Any | None:
        """The client window (the one with WM_STATE) at or above a focused sub-window."""
        from Xlib import X

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
        from Xlib import X

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
