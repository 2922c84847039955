"""``af synth``: a seeded sample capture in screenpipe's current SQLite layout, plus its truth.

The simulated user works office days (morning, lunch, afternoon, sometimes an evening stint),
switches among dozens of apps and thousands of pages, sometimes docks a second monitor, types
on an AZERTY keyboard on some days, and repeats five routines. The recorder model follows the
paper's corpus (sections 4.1, 6): one row per interaction or visual change, an ``idle``
heartbeat after about 30 s without one, one stream per monitor.

Determinism: every random draw comes from a ``random.Random`` seeded by (seed, day) or
(seed, "world"); no global random state, no clock, no hash order. Day N of a corpus is the same
whatever the number of days generated, so a small corpus is a prefix of a larger one.

``truth.json`` records what was planted (routines with their ui_events ids, flicker detours,
capture gaps, AZERTY days, click resolution classes) and what was produced (per-day counts,
apps, domains, first activity, dual-monitor minutes).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import lzma
import math
import os
import pickle
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from capture.errors import UserError
from capture.screenpipe_schema import CLIPBOARD_CODES, CURRENT_DDL
from capture.synth_world import (
    APPS,
    AZERTY_AS_QWERTY,
    BROWSER,
    BROWSERS,
    CHANNELS,
    EXPENSE_URL,
    REPOS,
    SCREENS,
    SITE_WEIGHTS,
    TEXT_SNIPPETS,
    WORDS,
    Pools,
    Template,
    Templates,
    make_pools,
    page,
    pick,
    resolve_click,
)
from capture.timeutil import parse_day, zone

GENERATOR_VERSION = 1
DB_NAME = "screenpipe.sqlite"
TRUTH_NAME = "truth.json"
HEARTBEAT_S = 30.0
MAX_DAYS = 3660
SESSION_GAP_US = 300 * 1_000_000
ABSENT_APPS = ("Adobe Photoshop", "Microsoft Outlook", "Steam", "Final Cut Pro", "Blender")
ABSENT_DOMAINS = ("netflix.com", "facebook.com", "tiktok.com", "instagram.com", "twitch.tv")
M1, M2 = "monitor_1", "monitor_2"
_US = 1_000_000

# Routine definitions: the step sequence every occurrence follows (targets are element names).
ROUTINES: dict[str, dict[str, Any]] = {
    "compose_message": {
        "description": "compose a message in Mail or Gmail: Compose, To, Subject, Send",
        "steps": [("click", "Compose"), ("type", "To"), ("type", "Subject"), ("click", "Send")],
    },
    "close_window": {
        "description": "close a document window without saving, in Preview or TextEdit, often several in a row",
        "steps": [("click", "File"), ("click", "Close Window"), ("click", "Don't Save")],
    },
    "expense_entry": {
        "description": "copy an amount in Excel, paste it into the expense web form in Chrome, submit",
        "steps": [("click", "Amount"), ("copy", "Amount"), ("switch", BROWSER), ("click", "Expense amount"),
                  ("paste", "Expense amount"), ("click", "Submit")],
    },
    "mail_calendar_mail": {
        "description": "URL-level: Gmail inbox, then the calendar week, then the inbox again, in Chrome",
        "granularity": "url",
        "steps": [("visit", "mail.google.com"), ("visit", "calendar.google.com"), ("visit", "mail.google.com")],
    },
    "jira_to_slack": {
        "description": "copy a Jira issue link in Chrome, paste it into #eng-backend in Slack, send",
        "steps": [("click", "Copy link"), ("copy", "Copy link"), ("switch", "Slack"),
                  ("click", "Message #eng-backend"), ("paste", "Message #eng-backend"), ("click", "Send now")],
    },
}

# Windows virtual key codes for what the recorder writes; shifted characters set modifier bit 1.
_VK = {" ": 32, ".": 190, ",": 188, ";": 186, "-": 189, "/": 191, "'": 222, "=": 187, "\n": 13, "\t": 9}
_VK_SHIFT = {"@": 50, ":": 186, "#": 51, "!": 49, "(": 57, ")": 48, "*": 56, "_": 189, '"': 222, "?": 191, ">": 190}
MOD_SHIFT, MOD_CMD = 1, 8


def _key(ch: str) -> tuple[int, int]:
    if "a" <= ch <= "z":
        return ord(ch.upper()), 0
    if "A" <= ch <= "Z":
        return ord(ch), MOD_SHIFT
    if "0" <= ch <= "9":
        return ord(ch), 0
    if ch in _VK:
        return _VK[ch], 0
    if ch in _VK_SHIFT:
        return _VK_SHIFT[ch], MOD_SHIFT
    return 0, 0


@dataclass
class SynthResult:
    out_dir: Path
    db_path: Path
    truth_path: Path
    days: int
    active_days: int
    frames: int
    ui_events: int
    elements: int
    routine_occurrences: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "out_dir": str(self.out_dir), "db_path": str(self.db_path), "truth_path": str(self.truth_path),
            "days": self.days, "active_days": self.active_days,
            "rows": {"frames": self.frames, "ui_events": self.ui_events, "elements": self.elements},
            "routine_occurrences": dict(self.routine_occurrences),
        }


Progress = Callable[[int, int, str, dict[str, int]], None]


class Screen:
    """What a monitor shows: app, view (template), window title, URL."""

    __slots__ = ("app", "view", "window", "url", "tpl")

    def __init__(self, app: str, view: str, window: str, url: str | None, tpl: Template):
        self.app, self.view, self.window, self.url, self.tpl = app, view, window, url, tpl


class World:
    """Everything fixed for the whole corpus: entity pools, templates, app weights."""

    def __init__(self, seed: int):
        rng = random.Random(f"af-synth/{seed}/world")
        self.pools: Pools = make_pools(rng)
        self.templates = Templates()
        self.apps = [a for a, _w, _m in APPS]
        self.app_weights = [w for _a, w, _m in APPS]
        self.m2_apps = [a for a, _w, m in APPS if m]
        self.m2_weights = [w for _a, w, m in APPS if m]
        self.families = [f for f, _w in SITE_WEIGHTS]
        self.family_weights = [w for _f, w in SITE_WEIGHTS]


class DaySim:
    """Simulates one local day; rows and events are collected, then finalised in time order."""

    def __init__(self, world: World, seed: int, index: int, day: str, tz: str):
        self.w = world
        self.day = day
        self.index = index
        self.rng = random.Random(f"af-synth/{seed}/day/{day}")
        d = parse_day(day)
        self.weekday = d.weekday()
        # office hours are well clear of DST switches (at night), so noon's offset holds all day
        off = zone(tz).utcoffset(datetime(d.year, d.month, d.day, 12))
        assert off is not None
        midnight = (d - date(1970, 1, 1)).days * 86400
        self.base_us = (midnight - int(off.total_seconds())) * _US
        self.offset_s = int(off.total_seconds())
        # rows: [t, seq, stream, screen, trigger, tree ('json'|'elements'|'ocr'|None)]
        self.rows: list[list[Any]] = []
        # events: [t, seq, stream, type, x, y, dx, dy, button, clicks, key_code, modifiers, text,
        #          text_length, app, window, url, role, name, autoid, bounds, row_ref]
        self.events: list[list[Any]] = []
        self.seq = 0
        self.screens: dict[str, Screen | None] = {M1: None, M2: None}
        self.stale: dict[str, tuple[str, float] | None] = {M1: None, M2: None}
        self.in_routine = False
        self.occurrences: dict[str, list[dict[str, Any]]] = {k: [] for k in ROUTINES}
        self.flickers: list[dict[str, Any]] = []
        self.idle_stretches: list[tuple[float, float, str]] = []
        self.breaks: list[tuple[float, float, str]] = []
        self.sessions: list[tuple[float, float]] = []
        self.docked: list[tuple[float, float]] = []
        self.clicks: list[tuple[int, str, str | None]] = []  # (event index, class, intended name)
        self.stale_events: list[int] = []
        # day 2 of every corpus is an AZERTY day (if it has activity), others one in eight
        layout_draw = 0.0 if index == 1 else self.rng.random()
        self.kind = self._kind()
        # a layout only shows in typing, so only days with activity are AZERTY days
        self.azerty = self.kind in ("work", "light") and layout_draw < 0.12

    # ---- plan -----------------------------------------------------------------------------
    def _kind(self) -> str:
        r = self.rng.random()
        if self.weekday >= 5:
            return "off" if r < 0.72 else ("light" if r < 0.93 else "idle_only")
        if self.index == 0:
            return "work"  # a small corpus should start with a full day
        return "work" if r < 0.93 else ("idle_only" if r < 0.96 else "off")

    def plan(self) -> None:
        rng = self.rng
        if self.kind == "off":
            return
        if self.kind in ("light", "idle_only"):
            s = rng.uniform(10.0, 16.0) * 3600
            self.sessions.append((s, s + rng.uniform(25, 110) * 60))
            return
        dock = rng.random() < 0.7
        start = rng.gauss(9.0, 0.35) * 3600
        lunch = rng.uniform(12.2, 13.0) * 3600
        lunch_len = rng.uniform(40, 75) * 60
        end = rng.uniform(17.6, 19.5) * 3600
        cuts = [(lunch, lunch + lunch_len, "lunch")]
        for lo, hi in ((start + 3600, lunch - 1800), (lunch + lunch_len + 3600, end - 1800)):
            if rng.random() < 0.6 and hi > lo:
                b = rng.uniform(lo, hi)
                cuts.append((b, b + rng.uniform(6, 16) * 60, "break"))
        cuts.sort()
        t = start
        for a, b, why in cuts:
            self.sessions.append((t, a))
            self.breaks.append((a, b, why))
            t = b
        self.sessions.append((t, end))
        if rng.random() < 0.25:
            es = rng.uniform(20.3, 21.5) * 3600
            self.breaks.append((end, es, "evening"))
            self.sessions.append((es, es + rng.uniform(20, 70) * 60))
        if dock:
            span = self.sessions[-1][1] - self.sessions[0][0]
            length = min(span * 0.7, rng.uniform(2.2, 5.0) * 3600)
            ds = rng.uniform(self.sessions[0][0], self.sessions[0][0] + span - length)
            self.docked.append((ds, ds + length))

    def is_docked(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.docked)

    # ---- primitives -----------------------------------------------------------------------
    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def add_row(self, t: float, stream: str, trigger: str, scr: Screen, tree: bool | None = None) -> int:
        rng = self.rng
        if tree is None:
            share = 0.7 if trigger != "idle" else 0.15
            tree = rng.random() < share
        if tree:
            mode: str | None = "json" if rng.random() < 0.2 else "elements"
        else:
            mode = "ocr" if trigger != "idle" and rng.random() < 0.4 else None
        self.rows.append([t, self._next_seq(), stream, scr, trigger, mode])
        return len(self.rows) - 1

    def add_event(self, t: float, stream: str, etype: str, scr: Screen, *, x: int | None = None,
                  y: int | None = None, dx: int | None = None, dy: int | None = None, button: int | None = None,
                  clicks: int | None = None, key_code: int | None = None, modifiers: int | None = None,
                  text: str | None = None, role: str | None = None, name: str | None = None,
                  autoid: str | None = None, bounds: str | None = None, row: int = -1) -> int:
        app = scr.app
        stale = self.stale[stream]
        if stale is not None and etype != "app_switch" and t > stale[1]:
            # the first event after the switch was captured still names the previous app
            self.stale[stream] = None
            if not self.in_routine:
                app = stale[0]
                self.stale_events.append(len(self.events))
        self.events.append([t, self._next_seq(), stream, etype, x, y, dx, dy, button, clicks, key_code, modifiers,
                            text, None if text is None or etype not in ("text", "clipboard") else len(text),
                            app, scr.window, scr.url, role, name, autoid, bounds, row])
        return len(self.events) - 1

    def screen(self, app: str, view: str, window: str, url: str | None = None) -> Screen:
        return Screen(app, view, window, url, self.w.templates.get(app, view))

    def random_screen(self, stream: str, app: str | None = None) -> Screen:
        rng, w = self.rng, self.w
        if app is None:
            if stream == M2:
                app = rng.choices(w.m2_apps, w.m2_weights)[0]
            else:
                app = rng.choices(w.apps, w.app_weights)[0]
        if app in BROWSERS:
            fam = rng.choices(w.families, w.family_weights)[0]
            return self.web(app, fam)
        return self.screen(app, "main", self.window_title(app))

    def web(self, app: str, family: str) -> Screen:
        url, title, view = page(self.rng, self.w.pools, family)
        return self.screen(app, view, title, url)

    def window_title(self, app: str) -> str:
        rng = self.rng
        if app in ("Cursor", "Visual Studio Code", "Xcode"):
            repo = rng.choice(REPOS[:5]).split("/")[1]
            return f"{rng.choice(WORDS)}_{rng.choice(WORDS)}.py — {repo}"
        if app in ("Terminal", "iTerm2"):
            return f"jane@mbp: ~/src/{rng.choice(REPOS[:5]).split('/')[1]} — zsh — 120×40"
        if app == "Slack":
            return f"#{rng.choice(CHANNELS)} (Channel) - Acme - Slack"
        if app == "Mail":
            return f"Inbox – {rng.randrange(200, 4000)} messages"
        if app == "Spotify":
            return f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} - Spotify"
        if app == "Zoom":
            return "Zoom Meeting"
        if app in ("Preview", "TextEdit", "Microsoft Word", "Keynote"):
            return f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{rng.randrange(1, 99)}.{'pdf' if app == 'Preview' else 'txt'}"
        if app == "Microsoft Excel":
            return f"{rng.choice(WORDS).title()}.xlsx"
        return f"{app} — {rng.choice(WORDS).title()}"

    def gap(self) -> float:
        """Seconds to the user's next action: mostly quick, sometimes a reading pause."""
        r = self.rng.random()
        if r < 0.885:
            return min(26.0, self.rng.lognormvariate(math.log(2.75), 0.85))
        return self.rng.uniform(31.0, 100.0)

    def switch_to(self, t: float, stream: str, scr: Screen, tree: bool | None = None) -> float:
        cur = self.screens[stream]
        if cur is scr:
            return t  # already there
        self.stale[stream] = None
        if cur is not None and cur.app == scr.app:
            if cur.app in BROWSERS:
                # another tab or page in the same browser: a click, then the page's own capture
                t = self.click(t, stream, cur)
                t += self.rng.uniform(0.4, 1.5)
                self.screens[stream] = scr
                self.add_row(t, stream, "visual_change", scr, tree)
                return t
            # another window of the same app
            self.screens[stream] = scr
            row = self.add_row(t + self.rng.uniform(0.05, 0.3), stream, "visual_change", scr, tree)
            self.add_event(t, stream, "window_focus", scr, text=scr.window, row=row)
            return t + 0.3
        self.screens[stream] = scr
        row = self.add_row(t + self.rng.uniform(0.05, 0.3), stream, "app_switch", scr, tree)
        self.add_event(t, stream, "app_switch", scr, text=scr.app, row=row)
        if self.rng.random() < 0.3:
            self.add_event(t + 0.01, stream, "window_focus", scr, text=scr.window, row=row)
        if cur is not None and not self.in_routine and self.rng.random() < 0.12:
            self.stale[stream] = (cur.app, self.rows[row][0])
        return t + 0.3

    def _pixel(self, stream: str, b: tuple[float, float, float, float], fx: float, fy: float) -> tuple[int, int]:
        w, h = SCREENS[stream]
        return int((b[0] + b[2] * fx) * w), int((b[1] + b[3] * fy) * h)

    def _bounds_json(self, stream: str, b: tuple[float, float, float, float]) -> str:
        w, h = SCREENS[stream]
        # Accessibility APIs report float points; one decimal keeps the size derivable from them.
        return (f'{{"left":{round(b[0] * w, 1)},"top":{round(b[1] * h, 1)},'
                f'"width":{round(b[2] * w, 1)},"height":{round(b[3] * h, 1)}}}')

    def click(self, t: float, stream: str, scr: Screen, target: str | None = None, moves: bool = True) -> float:
        """A click that triggers a capture; the row carries the tree as it was when clicked."""
        rng = self.rng
        tpl = scr.tpl
        w, h = SCREENS[stream]
        if moves and rng.random() < 0.7:
            for k in range(rng.randrange(1, 4)):
                self.add_event(t - 0.9 + 0.25 * k, stream, "move", scr, x=rng.randrange(w), y=rng.randrange(h))
        if target is not None:
            node = tpl.by_name[target]
            cls = "named" if rng.random() < 0.7 else "exact"
        else:
            node = rng.choice(tpl.leaves)
            r = rng.random()
            cls = ("named" if r < 0.55 else "exact" if r < 0.75 else "tolerance" if r < 0.84
                   else "none" if r < 0.9 else "no_tree")
        role, name, _p, _d, b = tpl.nodes[node]
        assert b is not None
        x, y = self._pixel(stream, b, rng.uniform(0.2, 0.8), rng.uniform(0.25, 0.75))
        if cls == "tolerance":
            placed = self._near(stream, tpl, node)
            if placed is None:
                cls = "exact"
            else:
                x, y = placed
        elif cls in ("none", "no_tree"):
            x, y = self._far(stream, tpl)
        row = self.add_row(t + rng.uniform(0.04, 0.25), stream, "click", scr, tree=cls != "no_tree")
        button = 1 if rng.random() < 0.04 else 0
        count = 2 if rng.random() < 0.06 else 1
        if cls == "named":
            autoid = f"{role[2:].lower()}-{(name or '').lower().replace(' ', '-')}" if rng.random() < 0.5 else None
            self.add_event(t, stream, "click", scr, x=x, y=y, button=button, clicks=count, role=role, name=name,
                           autoid=autoid, bounds=self._bounds_json(stream, b), row=row)
        else:
            ev = self.add_event(t, stream, "click", scr, x=x, y=y, button=button, clicks=count, row=row)
            self.clicks.append((ev, cls, name if cls in ("exact", "tolerance") else None))
        return t + 0.3

    def _near(self, stream: str, tpl: Template, node: int) -> tuple[int, int] | None:
        """A point 8-32 px right of or below the leaf, outside every leaf, nearest to this one."""
        w, h = SCREENS[stream]
        b = tpl.nodes[node][4]
        assert b is not None
        for _ in range(6):
            d = self.rng.uniform(8, 32)
            if self.rng.random() < 0.6:
                x, y = (b[0] + b[2]) * w + d, (b[1] + b[3] * self.rng.uniform(0.3, 0.7)) * h
            else:
                x, y = (b[0] + b[2] * self.rng.uniform(0.2, 0.8)) * w, (b[1] + b[3]) * h + min(d, 9.0)
            xi, yi = int(x), int(y)
            cls, got = resolve_click(tpl, xi, yi, w, h)
            if cls == "tolerance" and got == node:
                return xi, yi
        return None

    def _far(self, stream: str, tpl: Template) -> tuple[int, int]:
        w, h = SCREENS[stream]
        for _ in range(30):
            x, y = int(self.rng.uniform(0.15, 0.99) * w), int(self.rng.uniform(0.12, 0.99) * h)
            if resolve_click(tpl, x, y, w, h)[0] == "none":
                return x, y
        return int(0.19 * w), int(0.985 * h)

    def type_text(self, t: float, stream: str, scr: Screen, text: str, fld: str | None = None,
                  enter: bool = False, row_tree: bool | None = None) -> float:
        rng = self.rng
        role = name = None
        if fld is None and scr.tpl.fields and rng.random() < 0.8:
            fld = scr.tpl.nodes[rng.choice(scr.tpl.fields)][1]
        if fld is not None:
            role, name = scr.tpl.nodes[scr.tpl.by_name[fld]][0], fld
        recorded = "".join(AZERTY_AS_QWERTY.get(c, c) for c in text) if self.azerty else text
        for ch in recorded:
            code, mods = _key(ch)
            self.add_event(t, stream, "key", scr, key_code=code, modifiers=mods, text=ch, role=role, name=name)
            t += rng.uniform(0.07, 0.26)
        if enter:
            self.add_event(t, stream, "key", scr, key_code=13, modifiers=0, role=role, name=name)
            t += 0.1
        row = self.add_row(t + rng.uniform(0.2, 0.6), stream, "typing", scr, row_tree)
        self.add_event(t, stream, "text", scr, text=recorded, role=role, name=name, row=row)
        return t + 0.6

    def scroll(self, t: float, stream: str, scr: Screen) -> float:
        rng = self.rng
        w, h = SCREENS[stream]
        x, y = rng.randrange(int(0.3 * w), int(0.9 * w)), rng.randrange(int(0.2 * h), int(0.9 * h))
        sign = -1 if rng.random() < 0.8 else 1
        for _ in range(rng.randrange(1, 4)):
            self.add_event(t, stream, "scroll", scr, x=x, y=y, dx=0, dy=sign * rng.randrange(30, 400))
            t += rng.uniform(0.08, 0.35)
        self.add_row(t + 0.2, stream, "visual_change", scr)
        return t + 0.3

    def clip(self, t: float, stream: str, scr: Screen, op: str, text: str, keys: bool = True,
             fld: str | None = None) -> float:
        role = scr.tpl.nodes[scr.tpl.by_name[fld]][0] if fld else None
        if keys:
            code = {"copy": 67, "cut": 88, "paste": 86}[op]
            self.add_event(t, stream, "key", scr, key_code=code, modifiers=MOD_CMD, role=role, name=fld)
            t += 0.05
        self.add_event(t, stream, "clipboard", scr, modifiers=CLIPBOARD_CODES[op], text=text, role=role, name=fld)
        return t + 0.2

    # ---- activities -----------------------------------------------------------------------
    def work(self, t: float, end: float, stream: str, scr: Screen, min_s: float = 25.0) -> float:
        """A stretch of ordinary work in one context, ending by end at the latest."""
        rng = self.rng
        t = self.switch_to(t, stream, scr)
        dur = max(min_s, min(1200.0, rng.lognormvariate(math.log(130), 0.9)))
        stop = min(end, t + dur)
        app = scr.app
        kind = ("browser" if app in BROWSERS else "editor" if app in ("Cursor", "Visual Studio Code", "Xcode")
                else "shell" if app in ("Terminal", "iTerm2") else
                "chat" if app in ("Slack", "Messages", "WhatsApp", "Discord", "Microsoft Teams") else "other")
        weights = {"browser": (35, 7, 25, 12, 4, 22), "editor": (22, 24, 15, 12, 8, 27),
                   "shell": (10, 36, 15, 6, 10, 31), "chat": (30, 21, 22, 12, 3, 20),
                   "other": (40, 10, 22, 14, 5, 15)}[kind]
        while True:
            t += self.gap()
            if t >= stop:
                break
            cur = self.screens[stream]
            assert cur is not None
            a = rng.choices(("click", "type", "scroll", "move", "clip", "visual"), weights)[0]
            if a == "click":
                t = self.click(t, stream, cur)
                if kind == "browser" and rng.random() < 0.4:
                    fam = self._family(cur) if rng.random() < 0.88 else rng.choices(
                        self.w.families, self.w.family_weights)[0]
                    new = self.web(cur.app, fam)
                    t += rng.uniform(0.5, 2.0)
                    self.screens[stream] = new
                    self.add_row(t, stream, "visual_change", new)
            elif a == "type":
                text = rng.choice(TEXT_SNIPPETS)
                if kind == "browser" and cur.view == "search":
                    text = pick(rng, self.w.pools.queries)
                t = self.type_text(t, stream, cur, text, enter=kind in ("shell", "chat") or rng.random() < 0.2)
            elif a == "scroll":
                t = self.scroll(t, stream, cur)
            elif a == "move":
                w, h = SCREENS[stream]
                for _ in range(rng.randrange(2, 7)):
                    self.add_event(t, stream, "move", cur, x=rng.randrange(w), y=rng.randrange(h))
                    t += rng.uniform(0.1, 0.5)
            elif a == "clip":
                op = rng.choices(("copy", "paste", "cut"), (5, 4, 1))[0]
                t = self.clip(t, stream, cur, op, rng.choice(TEXT_SNIPPETS + tuple(WORDS)))
            else:
                self.add_row(t, stream, "visual_change", cur)
        return min(t, end)

    def _family(self, scr: Screen) -> str:
        host = urlsplit(scr.url or "").hostname or ""
        for fam, probe in (("linkedin", "linkedin"), ("github", "github"), ("gmail", "mail.google"),
                           ("gdocs", "docs.google"), ("gsearch", "www.google.com/search"), ("youtube", "youtube"),
                           ("jira", "atlassian"), ("linear", "linear.app"), ("stackoverflow", "stackoverflow"),
                           ("localhost", "localhost"), ("x", "x.com"), ("reddit", "reddit")):
            if probe in host or probe in (scr.url or ""):
                return fam
        return self.rng.choices(self.w.families, self.w.family_weights)[0]

    def idle(self, t: float, end: float, stream: str) -> float:
        """Reading or watching: the display stays awake, no input, heartbeats keep the stream alive."""
        rng = self.rng
        scr = self.web(BROWSER, rng.choice(("youtube", "bbc", "gdocs", "wikipedia", "notion")))
        t = self.switch_to(t, stream, scr)
        length = min(end - t, rng.uniform(3, 14) * 60)
        if length > 60:
            self.idle_stretches.append((t, t + length, stream))
        return t + max(length, 0.0)

    def meeting(self, t: float, end: float, stream: str) -> float:
        rng = self.rng
        scr = rng.choice((self.screen("Zoom", "main", "Zoom Meeting"), self.web(BROWSER, "gmeet")))
        t = self.switch_to(t, stream, scr)
        stop = min(end, t + rng.uniform(15, 45) * 60)
        while True:
            t += rng.uniform(4, 40)
            if t >= stop:
                break
            if rng.random() < 0.1:
                t = self.click(t, stream, scr)
            else:
                self.add_row(t, stream, "visual_change", scr)
        return min(t, end)

    def flicker(self, t: float, end: float, stream: str) -> float:
        """A -> B -> A with B under 20 s: glance at a message, then back."""
        rng = self.rng
        a = self.screens[stream]
        if a is None or end - t < 120:
            return self.work(t, end, stream, self.random_screen(stream))
        t = self.work(t, end, stream, a, min_s=20)
        a = self.screens[stream]
        assert a is not None
        if rng.random() < 0.65:
            b = self.screen(rng.choice(("Slack", "Messages", "Spotify", "Mail", "Calendar")), "main", "")
            b.window = self.window_title(b.app)
        else:
            b = self.web(BROWSER, rng.choice(("x", "gmail", "gcal", "youtube"))) if a.app == BROWSER else \
                self.screen("Finder", "main", self.window_title("Finder"))
        if b.app == a.app and _site(b.url) == _site(a.url):
            return t  # same frame key (by host or by registrable domain): not a detour
        t += rng.uniform(1.0, 3.0)
        start_rows = len(self.rows)
        t = self.switch_to(t, stream, b)
        b_start = self.rows[start_rows][0]
        if rng.random() < 0.5:
            t = self.click(t + rng.uniform(1.5, 4.0), stream, b, moves=False)
        t += rng.uniform(1.5, 6.0)
        t = min(t, b_start + 16.0)
        b_rows = list(range(start_rows, len(self.rows)))
        back_row = len(self.rows)
        t = self.switch_to(t, stream, a, tree=False)
        self.flickers.append({"stream": stream, "a": a, "b": b, "b_rows": b_rows, "back_row": back_row,
                              "start": b_start})
        return self.work(t, end, stream, a, min_s=40)

    # ---- routines ---------------------------------------------------------------------------
    def _mark(self) -> tuple[int, int]:
        return len(self.events), len(self.rows)

    def _since(self, mark: tuple[int, int]) -> tuple[list[int], list[int]]:
        """Events and rows added since mark: one routine step."""
        return list(range(mark[0], len(self.events))), list(range(mark[1], len(self.rows)))

    def _occurrence(self, name: str, stream: str, first_event: int, steps: list[tuple[list[int], list[int]]],
                    app: str) -> None:
        self.occurrences[name].append({"stream": stream, "first_event": first_event, "steps": steps,
                                       "last_event": len(self.events) - 1, "app": app})

    def routine_compose(self, t: float, stream: str) -> float:
        rng = self.rng
        if rng.random() < 0.5:
            main = self.screen("Mail", "main", self.window_title("Mail"))
            compose = self.screen("Mail", "compose", "New Message")
        else:
            main = self.screen(BROWSER, "gmail_inbox", "Inbox (12) - jane@acme.com - Gmail",
                               "https://mail.google.com/mail/u/0/#inbox")
            compose = self.screen(BROWSER, "gmail_compose", "New Message - jane@acme.com - Gmail",
                                  "https://mail.google.com/mail/u/0/#inbox?compose=new")
        t = self.work(t, t + 600, stream, main, min_s=10)
        if self.screens[stream] is not main:  # browsed away meanwhile: back to the inbox first
            t = self.switch_to(t + 1.0, stream, main)
        t += rng.uniform(1.5, 4.0)
        self.in_routine = True
        steps: list[tuple[list[int], list[int]]] = []
        first = len(self.events)
        mark = self._mark()
        t = self.click(t, stream, main, "Compose", moves=False)
        steps.append(self._since(mark))
        self.screens[stream] = compose
        self.add_row(t + rng.uniform(0.3, 0.9), stream, "visual_change", compose, tree=True)
        t += rng.uniform(1.5, 3.5)
        person = pick(rng, self.w.pools.people).split("-")
        to = f"{person[0]}.{person[1]}@{rng.choice(('acme.com', 'globex.io', 'gmail.com'))}"
        mark = self._mark()
        t = self.type_text(t, stream, compose, to, fld="To", row_tree=True)
        steps.append(self._since(mark))
        t += rng.uniform(0.8, 2.5)
        subject = f"{rng.choice(WORDS)} {rng.choice(WORDS)}".capitalize()
        mark = self._mark()
        t = self.type_text(t, stream, compose, subject, fld="Subject", row_tree=True)
        steps.append(self._since(mark))
        t += rng.uniform(1.0, 3.0)
        mark = self._mark()
        t = self.click(t, stream, compose, "Send", moves=False)
        steps.append(self._since(mark))
        self.in_routine = False
        self._occurrence("compose_message", stream, first, steps, main.app)
        self.screens[stream] = main
        self.add_row(t + rng.uniform(0.4, 1.2), stream, "visual_change", main)
        return t + 1.5

    def routine_close(self, t: float, stream: str) -> float:
        rng = self.rng
        app = rng.choice(("Preview", "TextEdit"))
        doc = self.screen(app, "main", self.window_title(app))
        t = self.work(t, t + 300, stream, doc, min_s=10)
        for _ in range(rng.randrange(2, 5)):
            t += rng.uniform(1.5, 4.0)
            self.in_routine = True
            steps: list[tuple[list[int], list[int]]] = []
            first = len(self.events)
            mark = self._mark()
            t = self.click(t, stream, doc, "File", moves=False)
            steps.append(self._since(mark))
            menu = self.screen(app, "file_menu", doc.window)
            self.screens[stream] = menu
            t += rng.uniform(0.8, 2.0)
            mark = self._mark()
            t = self.click(t, stream, menu, "Close Window", moves=False)
            steps.append(self._since(mark))
            sheet = self.screen(app, "save_sheet", doc.window)
            self.screens[stream] = sheet
            self.add_row(t + 0.4, stream, "visual_change", sheet, tree=True)
            t += rng.uniform(1.0, 2.5)
            mark = self._mark()
            t = self.click(t, stream, sheet, "Don't Save", moves=False)
            steps.append(self._since(mark))
            self.in_routine = False
            self._occurrence("close_window", stream, first, steps, app)
            doc = self.screen(app, "main", self.window_title(app))
            self.screens[stream] = doc
            self.add_row(t + 0.5, stream, "visual_change", doc, tree=True)
        return t + 1.0

    def routine_expense(self, t: float, stream: str) -> float:
        rng = self.rng
        sheet = self.screen("Microsoft Excel", "main", "Expenses.xlsx")
        form = self.screen(BROWSER, "expense_form", "New claim - Acme Expenses", EXPENSE_URL)
        t = self.work(t, t + 300, stream, sheet, min_s=10)
        t += rng.uniform(1.5, 4.0)
        amount = f"{rng.randrange(5, 900)}.{rng.randrange(0, 100):02d}"
        self.in_routine = True
        steps: list[tuple[list[int], list[int]]] = []
        first = len(self.events)
        mark = self._mark()
        t = self.click(t, stream, sheet, "Amount", moves=False)
        steps.append(self._since(mark))
        t += rng.uniform(0.6, 1.8)
        mark = self._mark()
        t = self.clip(t, stream, sheet, "copy", amount, fld="Amount")
        steps.append(self._since(mark))
        t += rng.uniform(0.8, 2.5)
        mark = self._mark()
        t = self.switch_to(t, stream, form, tree=True)
        steps.append(self._since(mark))
        t += rng.uniform(1.0, 3.0)
        mark = self._mark()
        t = self.click(t, stream, form, "Expense amount", moves=False)
        steps.append(self._since(mark))
        t += rng.uniform(0.5, 1.5)
        mark = self._mark()
        t = self.clip(t, stream, form, "paste", amount, fld="Expense amount")
        steps.append(self._since(mark))
        t += rng.uniform(1.0, 3.0)
        mark = self._mark()
        t = self.click(t, stream, form, "Submit", moves=False)
        steps.append(self._since(mark))
        self.in_routine = False
        self._occurrence("expense_entry", stream, first, steps, "Microsoft Excel")
        done = self.screen(BROWSER, "expense_form", "Claim submitted - Acme Expenses", EXPENSE_URL + "?submitted=1")
        self.screens[stream] = done
        self.add_row(t + 0.8, stream, "visual_change", done)
        return t + 1.5

    def routine_jira(self, t: float, stream: str) -> float:
        rng = self.rng
        issue = self.web(BROWSER, "jira")
        slack = self.screen("Slack", "channel_eng", "#eng-backend (Channel) - Acme - Slack")
        t = self.work(t, t + 400, stream, issue, min_s=15)
        now = self.screens[stream]
        if now is not None and now.view == "jira_issue":
            issue = now
        else:  # browsed away from the issue meanwhile: back to it first
            t = self.switch_to(t + 1.0, stream, issue)
        t += rng.uniform(1.5, 4.0)
        link = issue.url or ""
        self.in_routine = True
        steps: list[tuple[list[int], list[int]]] = []
        first = len(self.events)
        mark = self._mark()
        t = self.click(t, stream, issue, "Copy link", moves=False)
        steps.append(self._since(mark))
        t += 0.2
        mark = self._mark()
        t = self.clip(t, stream, issue, "copy", link, keys=False, fld="Copy link")
        steps.append(self._since(mark))
        t += rng.uniform(0.8, 2.5)
        mark = self._mark()
        t = self.switch_to(t, stream, slack, tree=True)
        steps.append(self._since(mark))
        t += rng.uniform(1.0, 2.5)
        mark = self._mark()
        t = self.click(t, stream, slack, "Message #eng-backend", moves=False)
        steps.append(self._since(mark))
        t += rng.uniform(0.5, 1.5)
        mark = self._mark()
        t = self.clip(t, stream, slack, "paste", link, fld="Message #eng-backend")
        steps.append(self._since(mark))
        t += rng.uniform(1.0, 3.0)
        mark = self._mark()
        t = self.click(t, stream, slack, "Send now", moves=False)
        steps.append(self._since(mark))
        self.in_routine = False
        self._occurrence("jira_to_slack", stream, first, steps, BROWSER)
        self.add_row(t + 0.6, stream, "visual_change", slack)
        return t + 1.5

    def routine_triangle(self, t: float, stream: str) -> float:
        """Mail, then the calendar, then mail again, in Chrome: a URL-level routine."""
        rng = self.rng
        inbox = self.screen(BROWSER, "gmail_inbox", "Inbox (12) - jane@acme.com - Gmail",
                            "https://mail.google.com/mail/u/0/#inbox")
        week = rng.randrange(1, 29)
        cal = self.screen(BROWSER, "calendar", "Google Calendar - Week",
                          f"https://calendar.google.com/calendar/u/0/r/week/2026/6/{week}")
        steps: list[tuple[list[int], list[int]]] = []
        first = len(self.events)
        self.in_routine = True
        for scr in (inbox, cal, inbox):
            mark = self._mark()
            t = self.switch_to(t, stream, scr, tree=True)
            steps.append(self._since(mark))
            stop = t + rng.uniform(25, 70)  # long enough to be a frame of its own, not a flicker
            while True:
                t += rng.uniform(4, 14)
                if t >= stop:
                    break
                t = self.scroll(t, stream, scr)
            t += rng.uniform(0.5, 2.0)
        self.in_routine = False
        self._occurrence("mail_calendar_mail", stream, first, steps, BROWSER)
        return t

    # ---- the day ------------------------------------------------------------------------------
    def run(self) -> None:
        self.plan()
        if self.kind == "idle_only":
            s, e = self.sessions[0]
            scr = self.random_screen(M1, BROWSER if self.rng.random() < 0.5 else "Finder")
            self.screens[M1] = scr
            self.add_row(s, M1, "idle", scr, tree=False)
            self.idle_stretches.append((s, e, M1))
            return
        rng = self.rng
        pending: list[str] = []
        if self.kind == "work":
            pending += ["compose_message"] * rng.randrange(2, 7)
            pending += ["close_window"] * rng.choice((0, 1, 1, 2))
            pending += ["expense_entry"] * rng.choice((0, 1, 1, 2))
            pending += ["jira_to_slack"] * rng.choice((0, 1, 2, 2, 3))
            pending += ["mail_calendar_mail"] * rng.choice((0, 0, 1, 1, 2))
            rng.shuffle(pending)
        meetings = 0
        last_routine = False
        for s, e in self.sessions:
            t = s
            first = True
            while t < e - 20:
                stream = M1
                if self.is_docked(t) and rng.random() < 0.35 and not first:
                    stream = M2
                r = rng.random()
                if first:
                    t = self.work(t, e, stream, self.random_screen(stream))
                    first = False
                    continue
                if pending and not last_routine and stream == M1 and r < 0.13 and e - t > 300:
                    name = pending.pop()
                    fn = {"compose_message": self.routine_compose, "close_window": self.routine_close,
                          "expense_entry": self.routine_expense, "jira_to_slack": self.routine_jira,
                          "mail_calendar_mail": self.routine_triangle}[name]
                    t = fn(t, stream)
                    last_routine = True
                    continue
                last_routine = False
                if 0.13 <= r < 0.19:
                    t = self.flicker(t, e, stream)
                elif 0.19 <= r < 0.225:
                    t = self.idle(t, e, stream)
                elif 0.225 <= r < 0.24 and meetings < 2 and self.kind == "work" and e - t > 1200:
                    meetings += 1
                    t = self.meeting(t, e, stream)
                else:
                    t = self.work(t, e, stream, self.random_screen(stream))
                t += rng.uniform(0.5, 4.0)

    # ---- finalise -----------------------------------------------------------------------------
    def fill(self) -> None:
        """Heartbeats after ~30 s without a capture, per stream, within each session and dock."""
        rng = self.rng
        for stream in (M1, M2):
            spans = []
            for s, e in self.sessions:
                if stream == M1:
                    spans.append((s, e))
                else:
                    for a, b in self.docked:
                        lo, hi = max(s, a), min(e, b)
                        if hi - lo > 60:
                            spans.append((lo, hi))
            rows = sorted((r for r in self.rows if r[2] == stream), key=lambda r: (r[0], r[1]))
            times = [r[0] for r in rows]
            for lo, hi in spans:
                i = bisect.bisect_left(times, lo)
                j = bisect.bisect_right(times, hi)
                inside = rows[i:j]
                if stream == M2 and (not inside or inside[0][0] - lo > 2.0):
                    prev = rows[i - 1][3] if i > 0 else self.random_screen(M2, "Slack")
                    inside.insert(0, [lo, self._next_seq(), M2, prev, "visual_change", None])
                    self.rows.append(inside[0])
                if not inside:
                    continue
                if stream == M2:
                    # the side monitor changes on its own (chat messages, dashboards, video)
                    starts = [r[0] for r in inside]
                    extra = []
                    t = lo + rng.expovariate(1 / 20.0)
                    while t < hi:
                        k = bisect.bisect_right(starts, t) - 1
                        mode = "elements" if rng.random() < 0.3 else None
                        extra.append([t, self._next_seq(), M2, inside[max(k, 0)][3], "visual_change", mode])
                        t += rng.expovariate(1 / 20.0)
                    self.rows.extend(extra)
                    inside = sorted(inside + extra, key=lambda r: (r[0], r[1]))
                marks = [r[0] for r in inside] + [hi]
                for k, r in enumerate(inside):
                    a, b = r[0], marks[k + 1]
                    scr = r[3]
                    while b - a > HEARTBEAT_S + 1.5:
                        a += HEARTBEAT_S + rng.uniform(0.0, 1.2)
                        if a >= b:
                            break
                        self.rows.append([a, self._next_seq(), stream, scr, "idle",
                                          "elements" if rng.random() < 0.1 else None])


FMT_SHARES = (0.85, 0.95)  # cumulative: "+00:00" 85 %, "Z" 10 %, space without offset 5 %


@dataclass
class DayRows:
    """One day, ready to insert: table rows with final ids, plus its truth entry and routines."""

    frames: list[tuple[Any, ...]]
    events: list[tuple[Any, ...]]
    element_stamps: list[tuple[int, int, int, int, str | None]]  # frame, template, kind, first id, title
    new_templates: list[tuple[Any, ...]]
    entry: dict[str, Any]
    occurrences: dict[str, list[dict[str, Any]]]


class Writer:
    """Owns the global id counters; turns each DaySim into rows (pure Python, no database)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.frame_id = 0
        self.event_id = 0
        self.element_id = 0
        self._minute_cache: dict[int, str] = {}
        # corpus-wide measurements for truth.json's "shape"
        self.all_urls: set[str] = set()
        self.all_hosts: set[str] = set()
        self.gaps: dict[str, list[float]] = {M1: [], M2: []}
        self._pids: dict[str, int] = {}
        self._tpl_ids: dict[str, int] = {}
        self._tpl_sizes: dict[int, tuple[int, int]] = {}
        self._new_templates: list[tuple[Any, ...]] = []

    def ts(self, us: int, fmt: int) -> str:
        """UTC text in one of the three forms screenpipe versions wrote (the minute part is cached)."""
        minute, rem = divmod(us, 60 * _US)
        key = minute * 3 + fmt
        head = self._minute_cache.get(key)
        if head is None:
            days, mins = divmod(minute, 1440)
            ds = (date(1970, 1, 1) + timedelta(days=days)).isoformat()
            head = f"{ds}{' ' if fmt == 2 else 'T'}{mins // 60:02d}:{mins % 60:02d}:"
            self._minute_cache[key] = head
        ss, frac = divmod(rem, _US)
        if fmt == 0:
            return f"{head}{ss:02d}.{frac:06d}+00:00"
        if fmt == 1:
            return f"{head}{ss:02d}.{frac:06d}Z"
        return f"{head}{ss:02d}.{frac:06d}"

    @staticmethod
    def _fmt(rng: random.Random) -> int:
        r = rng.random()
        return 0 if r < FMT_SHARES[0] else (1 if r < FMT_SHARES[1] else 2)

    def tpl_id(self, tpl: Template) -> int:
        """Register a template's tree nodes and OCR lines once."""
        tid = self._tpl_ids.get(tpl.key)
        if tid is None:
            tid = self._tpl_ids[tpl.key] = len(self._tpl_ids) + 1
            rows: list[tuple[Any, ...]] = [
                (tid, 0, i, "accessibility", role, name, parent, depth,
                 *(b if b is not None else (None, None, None, None)), None)
                for i, (role, name, parent, depth, b) in enumerate(tpl.nodes)]
            for k, i in enumerate(tpl.leaves):
                _role, name, _p, _d, b = tpl.nodes[i]
                assert b is not None
                rows.append((tid, 1, k, "ocr", None, name, None, 0, *b, round(0.82 + 0.017 * (k % 10), 3)))
            self._new_templates.extend(rows)
            self._tpl_sizes[tid] = (len(tpl.nodes), len(tpl.leaves))
        return tid

    def build_day(self, sim: DaySim) -> DayRows:
        """The day's rows with final ids, its truth entry and its routine occurrences."""
        sim.fill()
        rng = random.Random(f"af-synth/{self.seed}/format/{sim.day}")
        base = sim.base_us
        # Each row's timestamp is written in one of the three forms screenpipe versions used, all
        # with microseconds, so a reader that compares them as text (not as times) gets caught.
        fmt_of = self._fmt
        frames = sorted(((base + int(round(r[0] * _US)), 0 if r[2] == M1 else 1, r[1], k)
                         for k, r in enumerate(sim.rows)))
        id_of_row: dict[int, int] = {}
        session = f"synth-{self.seed}-{sim.day}"
        frame_rows = []
        el_rows: list[tuple[int, int, int, int, str | None]] = []
        first_element = self.element_id
        stream_times: dict[str, list[int]] = {M1: [], M2: []}
        stream_ids: dict[str, list[int]] = {M1: [], M2: []}
        seen_us: list[int] = []
        n_tree = n_json = json_nodes = 0
        for us, _s, _q, k in frames:
            r = sim.rows[k]
            fmt = fmt_of(rng)
            self.frame_id += 1
            fid = self.frame_id
            id_of_row[k] = fid
            scr: Screen = r[3]
            mode = r[5]
            tree_json = None
            if mode == "json":
                tree_json = scr.tpl.tree_json(scr.window)
                n_tree += 1
                n_json += 1
                json_nodes += len(scr.tpl.nodes)
            elif mode == "elements":
                n_tree += 1
                tid = self.tpl_id(scr.tpl)
                el_rows.append((fid, tid, 0, self.element_id + 1, scr.window))
                self.element_id += self._tpl_sizes[tid][0]
            elif mode == "ocr":
                tid = self.tpl_id(scr.tpl)
                el_rows.append((fid, tid, 1, self.element_id + 1, None))
                self.element_id += self._tpl_sizes[tid][1]
            frame_rows.append((fid, None, None, self.ts(us, fmt), None, scr.app, scr.window, 1, scr.url, r[2],
                               tree_json, r[4]))
            stream_times[r[2]].append(us)
            stream_ids[r[2]].append(fid)
            seen_us.append(us)
        # events in time order; frame_id is the row they triggered, else their stream's latest row
        evs = sorted((base + int(round(e[0] * _US)), e[1], k) for k, e in enumerate(sim.events))
        id_of_event: dict[int, int] = {}
        event_rows = []
        for us, _q, k in evs:
            e = sim.events[k]
            fmt = fmt_of(rng)
            self.event_id += 1
            id_of_event[k] = self.event_id
            frame_ref: int | None
            if e[21] >= 0:
                frame_ref = id_of_row[e[21]]
            else:
                times = stream_times[e[2]]
                j = bisect.bisect_right(times, us) - 1
                ids = stream_ids[e[2]]
                frame_ref = ids[j] if j >= 0 else (ids[0] if ids else None)
            event_rows.append((self.event_id, self.ts(us, fmt), session, (us - base) // 1000, e[3], e[4], e[5],
                               e[6], e[7], e[8], e[9], e[10], e[11], e[12], e[13], e[14],
                               self.pid(e[14]), e[15], e[16], e[17], e[18], None, None, e[19], e[20], frame_ref))
        n_elements = self.element_id - first_element
        entry = self.truth_of_day(sim, seen_us, frames, frame_rows, event_rows, n_elements, id_of_row, id_of_event,
                                  stream_times, n_tree, n_json)
        entry["tree_json_nodes"] = json_nodes
        occ: dict[str, list[dict[str, Any]]] = {}
        for name, items in sim.occurrences.items():
            occ[name] = []
            for o in items:
                steps = [[id_of_event[k] for k in ev] for ev, _rows in o["steps"]]
                step_frames = [sorted(id_of_row[k] for k in rows) for _ev, rows in o["steps"]]
                # every event from the first step's to the last step's (URL routines dwell between steps)
                ids = sorted(id_of_event[k] for k in range(o["first_event"], o["last_event"] + 1))
                first_us = evs[ids[0] - event_rows[0][0]][0]
                occ[name].append({"day": sim.day, "stream": o["stream"], "app": o["app"],
                                  "start_local": self.local(sim, first_us), "event_ids": ids,
                                  "step_event_ids": steps, "step_frame_ids": step_frames})
        new_templates, self._new_templates = self._new_templates, []
        return DayRows(frame_rows, event_rows, el_rows, new_templates, entry, occ)

    def shape(self) -> dict[str, Any]:
        """Corpus-wide measurements that need every row (the rest comes from the day entries)."""
        out: dict[str, Any] = {"distinct_urls": len(self.all_urls), "distinct_hosts": len(self.all_hosts)}
        every: list[float] = []
        for stream, g in sorted(self.gaps.items()):
            if g:
                g.sort()
                every.extend(g)
                out[f"gap_{stream}"] = {"median_s": round(statistics.median(g), 3), "p90_s": round(_p90(g), 3)}
        if every:
            every.sort()
            out["gap_all_streams"] = {"median_s": round(statistics.median(every), 3), "p90_s": round(_p90(every), 3)}
        return out


    def pid(self, app: str | None) -> int | None:
        if app is None:
            return None
        pid = self._pids.get(app)
        if pid is None:
            pid = self._pids[app] = 300 + 41 * (sum(map(ord, app)) % 997)
        return pid

    def local(self, sim: DaySim, us: int) -> str:
        s = (us // _US + sim.offset_s) % 86400
        return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"

    def truth_of_day(self, sim: DaySim, seen_us: list[int], frames: list[Any], frame_rows: list[Any],
                     event_rows: list[Any], n_elements: int, id_of_row: dict[int, int],
                     id_of_event: dict[int, int], stream_times: dict[str, list[int]], n_tree: int,
                     n_json: int) -> dict[str, Any]:
        """What the day holds, measured on the rows as written (times as the importer will read them)."""
        base = sim.base_us
        apps = sorted({f[5] for f in frame_rows})
        urls = {f[8] for f in frame_rows if f[8]}
        hosts = sorted({(urlsplit(u).hostname or "") for u in urls})
        minutes: dict[int, set[str]] = {}
        for us, f in zip(seen_us, frame_rows, strict=True):
            minutes.setdefault((us // _US + sim.offset_s) // 60, set()).add(f[9])
        dual = sum(1 for v in minutes.values() if len(v) > 1)
        heart = sum(1 for f in frame_rows if f[11] == "idle")
        self.all_urls.update(urls)
        self.all_hosts.update(h for h in hosts if h)
        stream_gaps = {}
        for stream, times in stream_times.items():
            g = sorted((b - a) / _US for a, b in zip(times, times[1:], strict=False) if b - a <= SESSION_GAP_US)
            self.gaps[stream].extend(g)
            if g:
                stream_gaps[stream] = {"median_s": round(statistics.median(g), 3), "p90_s": round(_p90(g), 3)}
        types = Counter(e[4] for e in event_rows)
        gaps = []
        for a, b in zip(seen_us, seen_us[1:], strict=False):
            if b - a > 300 * _US:
                why = "unplanned"
                for s, e, reason in sim.breaks:
                    if base + (s - 120) * _US <= a and b <= base + (e + 120) * _US:
                        why = reason
                gaps.append({"start_local": self.local(sim, a), "end_local": self.local(sim, b),
                             "seconds": round((b - a) / _US, 3), "reason": why})
        us_of_id = {f[0]: us for us, f in zip(seen_us, frame_rows, strict=True)}
        flick = []
        for f in sim.flickers:
            b_ids = [id_of_row[i] for i in f["b_rows"]]
            back = id_of_row[f["back_row"]]
            a_scr, b_scr = f["a"], f["b"]
            flick.append({"stream": f["stream"], "a_app": a_scr.app, "a_host": _host(a_scr.url),
                          "b_app": b_scr.app, "b_host": _host(b_scr.url),
                          "start_local": self.local(sim, us_of_id[b_ids[0]]),
                          "seconds": round((us_of_id[back] - us_of_id[b_ids[0]]) / _US, 3),
                          "b_frame_ids": b_ids, "return_frame_id": back})
        clicks: dict[str, Any] = {"exact": {}, "tolerance": {}, "none": [], "no_tree": []}
        for k, cls, name in sim.clicks:
            if cls in ("exact", "tolerance"):
                clicks[cls][str(id_of_event[k])] = name
            else:
                clicks[cls].append(id_of_event[k])
        clicks["none"].sort()
        clicks["no_tree"].sort()
        clicks["named"] = sum(1 for e in event_rows if e[4] == "click" and e[20] is not None)
        idle = [{"start_local": self.local(sim, base + int(s * _US)), "minutes": round((e - s) / 60, 2),
                 "stream": st} for s, e, st in sim.idle_stretches]
        return {
            "day": sim.day, "kind": sim.kind, "azerty": sim.azerty,
            "frames": len(frame_rows), "heartbeat_frames": heart,
            "frames_by_trigger": dict(sorted(Counter(f[11] for f in frame_rows).items())),
            "stream_gaps": stream_gaps,
            "frames_by_stream": {M1: len(stream_times[M1]), M2: len(stream_times[M2])},
            "frames_with_tree": n_tree, "frames_with_tree_json": n_json,
            "ui_events": len(event_rows), "ui_events_by_type": dict(sorted(types.items())),
            "elements": n_elements,
            "apps": apps, "hosts": [h for h in hosts if h], "domains": sorted({_domain(h) for h in hosts if h}),
            "distinct_urls": len(urls),
            "first_activity_local": self.local(sim, seen_us[0]) if seen_us else None,
            "last_activity_local": self.local(sim, seen_us[-1]) if seen_us else None,
            "captured_minutes": len(minutes), "dual_monitor_minutes": dual,
            "capture_gaps": gaps, "idle_stretches": idle, "flicker_detours": flick,
            "anonymous_clicks": clicks,
            "stale_app_event_ids": sorted(id_of_event[k] for k in sim.stale_events),
            "frame_id_range": [frame_rows[0][0], frame_rows[-1][0]] if frame_rows else None,
            "ui_event_id_range": [event_rows[0][0], event_rows[-1][0]] if event_rows else None,
        }


class Sink:
    """Inserts DayRows into the database; element rows are stamped out from templates in SQL."""

    def __init__(self, con: sqlite3.Connection):
        self.con = con
        # Templates' element rows (kind 0: accessibility tree, 1: OCR lines) and, per day, which
        # frame gets which template at which first id.
        con.execute("CREATE TEMP TABLE tpl_el(tpl INTEGER, kind INTEGER, i INTEGER, source TEXT, role TEXT, "
                    "text TEXT, parent INTEGER, depth INTEGER, l REAL, t REAL, w REAL, h REAL, conf REAL, "
                    "PRIMARY KEY (tpl, kind, i)) WITHOUT ROWID")
        con.execute("CREATE TEMP TABLE day_el(frame_id INTEGER PRIMARY KEY, tpl INTEGER, kind INTEGER, "
                    "base INTEGER, title TEXT)")

    def insert(self, rows: DayRows) -> None:
        cur = self.con.cursor()
        cur.executemany("INSERT INTO temp.tpl_el VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows.new_templates)
        cur.executemany("INSERT INTO frames VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows.frames)
        cur.executemany("INSERT INTO ui_events VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        rows.events)
        cur.execute("DELETE FROM temp.day_el")
        cur.executemany("INSERT INTO temp.day_el VALUES (?,?,?,?,?)", rows.element_stamps)
        # Stamping template rows in SQL is several times faster than binding 2M tuples from Python;
        # both orders come from primary keys, so no sort is needed and ids arrive ascending.
        cur.execute(
            "INSERT INTO elements SELECT d.base + n.i, d.frame_id, n.source, n.role,"
            " CASE WHEN n.i = 0 AND n.kind = 0 THEN d.title ELSE n.text END, d.base + n.parent, n.depth,"
            " n.l, n.t, n.w, n.h, n.conf, n.i"
            " FROM temp.day_el d JOIN temp.tpl_el n ON n.tpl = d.tpl AND n.kind = d.kind"
            " ORDER BY d.frame_id, n.i")

def _host(url: str | None) -> str | None:
    return urlsplit(url).hostname if url else None


def _site(url: str | None) -> str | None:
    """Registrable domain of a URL's host: mail.google.com and www.google.com are one site."""
    host = _host(url)
    return _domain(host) if host else None


_PSL: Any = None


def _domain(host: str) -> str:
    global _PSL
    if _PSL is None:
        from publicsuffixlist import (
            PublicSuffixList,  # the suffix list takes ~0.6 s to load: only when first needed
        )

        _PSL = PublicSuffixList()
    return _PSL.privatesuffix(host) or host  # type: ignore[no-any-return]


def _split_ddl() -> tuple[list[str], list[str]]:
    stmts = [s.strip() for s in CURRENT_DDL.split(";") if s.strip()]
    return [s for s in stmts if not s.startswith("CREATE INDEX")], [s for s in stmts if s.startswith("CREATE INDEX")]


def generate(days: int, seed: int, out_dir: Path, start_day: str = "2026-06-01", tz: str = "Europe/Paris",
             progress: Progress | None = None, *, parallel: bool | None = None) -> SynthResult:
    """Write out_dir/screenpipe.sqlite and out_dir/truth.json for days local days from start_day.

    parallel: simulate in a second process while this one writes SQLite (the default for
    corpora of PARALLEL_MIN_DAYS days or more on a multi-core machine). The output is the same
    either way.
    """
    if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= MAX_DAYS:
        raise UserError(f"--days must be a whole number from 1 to {MAX_DAYS}, not {days!r}")
    try:
        parse_day(start_day)
        zone(tz)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out_dir = Path(out_dir)
    try:
        return _write(days, seed, out_dir, start_day, tz, progress, parallel)
    except (OSError, sqlite3.Error) as exc:  # unwritable folder, disk full, ...
        raise UserError(f"cannot write the sample into {out_dir}: {exc}") from None


def _write(days: int, seed: int, out_dir: Path, start_day: str, tz: str, progress: Progress | None,
           parallel: bool | None) -> SynthResult:
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"{out_dir} exists and is not a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    db_path, truth_path = out_dir / DB_NAME, out_dir / TRUTH_NAME
    if db_path.exists() and not _ours(truth_path):
        raise UserError(f"{db_path} exists and was not written by af synth (no matching {TRUTH_NAME}); "
                        "choose another --out folder")
    tmp = out_dir / (DB_NAME + ".partial")
    for p in (tmp, Path(str(tmp) + "-journal")):
        if p.exists():
            p.unlink()
    if parallel is None:
        parallel = days >= PARALLEL_MIN_DAYS and (os.cpu_count() or 1) > 1
    job = (seed, days, start_day, tz)
    truth_days: list[dict[str, Any]] = []
    occurrences: dict[str, list[dict[str, Any]]] = {k: [] for k in ROUTINES}
    shape: dict[str, Any] = {}
    con = sqlite3.connect(tmp, isolation_level=None)
    try:
        # Nothing reads the file until it is complete and renamed: no journal, no fsync.
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA temp_store=MEMORY")
        # a page cache as big as a 61-day corpus: pages are written once, at commit
        con.execute("PRAGMA cache_size=-512000")
        tables, indexes = _split_ddl()
        for s in tables:
            con.execute(s)
        con.execute("BEGIN")
        sink = Sink(con)
        items = _produce_elsewhere(job) if parallel else _produce(*job)
        with contextlib.closing(items):  # on any error, close it now: that stops a child process
            for item in items:
                if isinstance(item, dict):
                    shape = item
                    continue
                sink.insert(item)
                entry = item.entry
                for name, occ in item.occurrences.items():
                    occurrences[name].extend(occ)
                truth_days.append(entry)
                if progress is not None:
                    progress(len(truth_days), days, entry["day"], {"frames": entry["frames"],
                                                                   "ui_events": entry["ui_events"],
                                                                   "elements": entry["elements"]})
        for s in indexes:
            con.execute(s)
        con.execute("COMMIT")
    finally:
        con.close()
    os.replace(tmp, db_path)
    truth = _truth(seed, days, start_day, tz, truth_days, occurrences, shape)
    truth_path.write_text(json.dumps(truth, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    t = truth["totals"]
    return SynthResult(out_dir=out_dir, db_path=db_path, truth_path=truth_path, days=days,
                       active_days=t["active_days"], frames=t["frames"], ui_events=t["ui_events"],
                       elements=t["elements"],
                       routine_occurrences={k: len(v) for k, v in occurrences.items()})


PARALLEL_MIN_DAYS = 8


def _produce(seed: int, days: int, start_day: str, tz: str) -> Generator[DayRows | dict[str, Any], None, None]:
    """Each day's rows in order, then the corpus-wide shape measurements."""
    world = World(seed)
    writer = Writer(seed)
    first = parse_day(start_day)
    for i in range(days):
        sim = DaySim(world, seed, i, (first + timedelta(days=i)).isoformat(), tz)
        sim.run()
        yield writer.build_day(sim)
    yield writer.shape()


def produce_to(stream: BinaryIO, job: tuple[int, int, str, str]) -> None:
    """The child's side of a parallel run (see capture/synth_worker.py): pickled items on stream.

    Items are plain tuples, ("day", fields of DayRows) or ("shape", dict), so they unpickle
    without any class lookups.
    """
    for item in _produce(*job):
        if isinstance(item, DayRows):
            payload: tuple[str, Any] = ("day", (item.frames, item.events, item.element_stamps, item.new_templates,
                                                item.entry, item.occurrences))
        else:
            payload = ("shape", item)
        pickle.dump(payload, stream, protocol=pickle.HIGHEST_PROTOCOL)
    stream.flush()


def _produce_elsewhere(job: tuple[int, int, str, str]) -> Generator[DayRows | dict[str, Any], None, None]:
    """Run the simulation in a child Python (a plain subprocess, so callers need no main guard)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "capture.synth_worker", json.dumps(list(job))],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env)
        assert proc.stdout is not None
        done = False
        try:
            while not done:
                try:
                    kind, data = pickle.load(proc.stdout)
                except EOFError:
                    break
                if kind == "day":
                    yield DayRows(*data)
                else:
                    done = True
                    yield data
        finally:
            if proc.poll() is None and not done:
                proc.kill()
            proc.stdout.close()
            code = proc.wait()
        if not done:
            err.seek(0)
            detail = err.read().decode("utf-8", "replace").strip().splitlines()[-5:]
            raise RuntimeError(f"af synth: the generating process stopped (exit code {code}): " + " | ".join(detail))


def _p90(sorted_values: list[float]) -> float:
    """Nearest-rank 90th percentile of an ascending list."""
    return sorted_values[min(len(sorted_values) - 1, int(0.9 * len(sorted_values)))]


def _truth(seed: int, days: int, start_day: str, tz: str, day_entries: list[dict[str, Any]],
           occurrences: dict[str, list[dict[str, Any]]], measured: dict[str, Any]) -> dict[str, Any]:
    totals: Counter[str] = Counter()
    apps: set[str] = set()
    domains: set[str] = set()
    for d in day_entries:
        for k in ("frames", "ui_events", "elements", "tree_json_nodes", "heartbeat_frames", "captured_minutes",
                  "dual_monitor_minutes"):
            totals[k] += d[k]
        apps.update(d["apps"])
        domains.update(d["domains"])
    shape: dict[str, Any] = {
        "heartbeat_share": round(totals["heartbeat_frames"] / max(1, totals["frames"]), 4),
        "dual_monitor_share_of_minutes": round(totals["dual_monitor_minutes"] / max(1, totals["captured_minutes"]), 4),
        "distinct_apps": len(apps), "distinct_domains": len(domains),
        "note": "gaps are per stream, in seconds, counting only gaps up to 300 s; p90 is nearest-rank",
    } | measured
    return {
        "tz": tz,
        "generator": {"name": "af synth", "version": GENERATOR_VERSION, "seed": seed, "days": days,
                      "start_day": start_day, "tz": tz},
        "screens": {s: {"width_px": w, "height_px": h} for s, (w, h) in SCREENS.items()},
        "keyboard": {"azerty_days": [d["day"] for d in day_entries if d["azerty"]],
                     "recorded_as": dict(sorted(AZERTY_AS_QWERTY.items()))},
        "routines": {name: {"description": spec["description"], "granularity": spec.get("granularity", "action"),
                            "steps": [{"action": a, "target": t} for a, t in spec["steps"]],
                            "occurrences": occurrences[name]} for name, spec in ROUTINES.items()},
        "totals": dict(sorted(totals.items())) | {
            "active_days": sum(1 for d in day_entries if d["frames"]),
            "apps": sorted(apps), "domains": sorted(domains),
        },
        "shape": shape,
        # never generated: for "did the user open X?" probes that must be answered no
        "absent": {"apps": list(ABSENT_APPS), "domains": list(ABSENT_DOMAINS)},
        "days": day_entries,
    }


def _ours(truth_path: Path) -> bool:
    try:
        data = json.loads(truth_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("generator", {}).get("name") == "af synth"


# ---- the bundled sample -------------------------------------------------------------------------
SAMPLE_DIR = Path(__file__).parent / "data" / "sample"
SAMPLE_PARAMS: dict[str, Any] = {"days": 5, "seed": 7, "start_day": "2026-06-01", "tz": "Europe/Paris"}
PACKED_DB = DB_NAME + ".xz"


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "activity-frames"


def bundled_sample() -> Path:
    """A folder holding the bundled sample's screenpipe.sqlite and truth.json, ready to import.

    The package ships the database xz-compressed (a few MB instead of ~35); the first call
    unpacks it into a cache folder named after the packed files' digest, later calls reuse it.
    """
    packed = SAMPLE_DIR / PACKED_DB
    truth = SAMPLE_DIR / TRUTH_NAME
    if not packed.is_file() or not truth.is_file():
        raise UserError(f"the bundled sample is missing from {SAMPLE_DIR} (reinstall activity-frames)")
    digest = hashlib.sha256(packed.read_bytes() + truth.read_bytes()).hexdigest()[:16]
    for root in (_cache_root(), Path(tempfile.gettempdir()) / "activity-frames"):
        target = root / f"sample-{digest}"
        if (target / DB_NAME).is_file() and (target / TRUTH_NAME).is_file():
            return target
        try:
            target.mkdir(parents=True, exist_ok=True)
            tmp = target / (DB_NAME + f".partial-{os.getpid()}")
            with lzma.open(packed) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            shutil.copyfile(truth, target / TRUTH_NAME)
            os.replace(tmp, target / DB_NAME)
            return target
        except OSError:
            continue  # an unwritable cache: try the temporary folder
    raise UserError(f"cannot unpack the bundled sample into {_cache_root()} or the temporary folder")


def refresh_bundled_sample() -> Path:
    """Regenerate the bundled sample from SAMPLE_PARAMS (run after changing the generator)."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(out_dir=Path(tmp), **SAMPLE_PARAMS)
        SAMPLE_DIR.mkdir(parents=True, exist_ok=True)
        with open(Path(tmp) / DB_NAME, "rb") as src, lzma.open(SAMPLE_DIR / PACKED_DB, "wb", preset=9) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        shutil.copyfile(Path(tmp) / TRUTH_NAME, SAMPLE_DIR / TRUTH_NAME)
    return SAMPLE_DIR
