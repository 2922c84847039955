"""The action stream: enriched input events reduced to named UI actions (paper 7.1).

One action is one thing the user did to one target:

- ``click:<name> [<role>]``  a click, named by its resolved element (``click:? @<app>`` if the
  click could not be resolved to a named element);
- ``type:<field>``            a run of key/text events into one field is ONE action; the typed
  text never appears in the symbol or anywhere else in an action;
- ``paste:<field>``, ``copy:<source> [<role>]``, ``cut:<source> [<role>]``  clipboard operations;
  a copy names the cell or field it was copied from when the capture names it (an RPM log's
  getCell, a focused element), else it is plain ``copy`` / ``cut``;
- ``app:<app>``               an app switch or window focus change;
- ``nav:<template>``          the page moved to another URL template (typed by
  af_pipeline.compiler.entities, so ``/issues/123`` and ``/issues/456`` are the same template).

Mouse moves, scrolls and keyboard shortcuts (control or command held) are not actions. Sessions are cut at gaps over 90 s, and an action
identical to the one before it is collapsed into it (its ``repeat`` count goes up). Every action
keeps its evidence: the day, the stream and the refs of the input rows it came from.

Everything here is pure and deterministic: inputs are sorted with total keys (time, stream, ref).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

SESSION_GAP_US = 90 * 1_000_000  # paper 7.1: sessions are cut at inter-action gaps over 90 s
# Modifier bits of key events (screenpipe's mask: 1 shift, 2 control, 4 alt/option, 8 command).
SHORTCUT_MODIFIERS = 2 | 8
MAX_NAME_CHARS = 80
# A spreadsheet cell reference such as A2 or $B$17: the row is data (which record), the column is
# the target (which field), so cells are named by column: A{row}.
_CELL = re.compile(r"^\$?([A-Z]{1,3})\$?([0-9]{1,7})$")
_SPACE = re.compile(r"\s+")

OPS = ("click", "type", "paste", "copy", "cut", "app", "nav")


class EnrichedLike(Protocol):
    """What actions need from af_pipeline.compiler.enrich.EnrichedInput (duck-typed on purpose)."""

    @property
    def event(self) -> Any: ...  # capture.model.InputEvent
    @property
    def stream(self) -> str | None: ...
    @property
    def app(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def target_name(self) -> str | None: ...
    @property
    def target_role(self) -> str | None: ...
    @property
    def resolution(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Action:
    """One UI action with its evidence. ``symbol`` is what the miner compares."""

    symbol: str
    op: str  # one of OPS
    target: str | None  # element name / field / app / URL template; None if nothing names it
    role: str | None
    named: bool  # whether ``target`` counts as a named target for the >= 2 targets rule
    app: str | None
    url: str | None  # authoritative URL at the action (from the nearest snapshot)
    url_template: str | None
    day: str
    stream: str
    ts_us: int  # first input event of the action
    end_us: int  # last input event of the action
    session: int  # session number within the day, from 0
    refs: tuple[str, ...]  # input rows the action was built from
    repeat: int = 1  # how many identical actions were collapsed into this one

    def evidence(self) -> dict[str, Any]:
        return {"day": self.day, "stream": self.stream, "refs": list(self.refs)}


def clean_name(name: str | None) -> str | None:
    """A target name as a symbol component: whitespace collapsed, bounded, cells by column."""
    if name is None:
        return None
    text = _SPACE.sub(" ", str(name)).strip()
    if not text:
        return None
    cell = _CELL.match(text)
    if cell:
        return f"{cell.group(1)}{{row}}"
    if len(text) > MAX_NAME_CHARS:
        text = text[: MAX_NAME_CHARS - 1] + "…"
    return text


def _default_template(url: str) -> str | None:
    # Imported here so actions stay usable (with an explicit template function) on their own.
    from af_pipeline.compiler.entities import type_url

    ref = type_url(url)
    return str(ref.template) if ref.template else None


@dataclass
class _Builder:
    """Mutable state while one day's events are folded into actions."""

    day: str
    template_of: Callable[[str], str | None]
    actions: list[Action] = field(default_factory=list)
    session: int = 0
    last_ts: int | None = None
    # The field keyboard input goes to, per (stream, app): the last clicked or pasted element.
    focus: dict[tuple[str, str], tuple[str, str | None]] = field(default_factory=dict)
    last_context: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # (app, template)
    _templates: dict[str, str | None] = field(default_factory=dict)
    _names: dict[str, str | None] = field(default_factory=dict)
    _more_refs: list[str] = field(default_factory=list)
    _end: int = 0
    _repeats: int = 0

    def template(self, url: str | None) -> str | None:
        if not url:
            return None
        if url not in self._templates:
            self._templates[url] = self.template_of(url)
        return self._templates[url]

    def push(self, new: Action) -> None:
        prev = self.actions[-1] if self.actions else None
        # A run of identical actions (a held key, a double click, typing on into the same field)
        # is one action; sessions are never merged across a cut. Merges accumulate here and are
        # folded into the action once, when the run ends.
        if prev is not None and prev.symbol == new.symbol and prev.session == new.session:
            self._more_refs.extend(new.refs)
            self._end = new.end_us
            if new.op != "type":
                self._repeats += 1
            return
        self._fold()
        self.actions.append(new)

    def _fold(self) -> None:
        if self._more_refs or self._repeats:
            prev = self.actions[-1]
            self.actions[-1] = replace(
                prev,
                end_us=self._end,
                refs=prev.refs + tuple(self._more_refs),
                repeat=prev.repeat + self._repeats,
            )
            self._more_refs = []
            self._repeats = 0

    def finish(self) -> list[Action]:
        self._fold()
        return self.actions

    def name(self, raw: str | None) -> str | None:
        if raw is None:
            return None
        if raw not in self._names:
            self._names[raw] = clean_name(raw)
        return self._names[raw]


@dataclass(frozen=True, slots=True)
class _Where:
    """Where and when an input event happened: shared by the actions built from it."""

    app: str | None
    url: str | None
    url_template: str | None
    day: str
    stream: str
    ts: int
    session: int
    ref: str

    def action(self, op: str, target: str | None, role: str | None, named: bool) -> Action:
        return Action(
            symbol=symbol_of(op, target, role, self.app),
            op=op,
            target=target,
            role=role,
            named=named and target is not None,
            app=self.app,
            url=self.url,
            url_template=self.url_template,
            day=self.day,
            stream=self.stream,
            ts_us=self.ts,
            end_us=self.ts,
            session=self.session,
            refs=(self.ref,),
        )


def symbol_of(op: str, target: str | None, role: str | None, app: str | None) -> str:
    """An action's symbol (op:target [role]); the team table rebuilds it around a generalised target."""
    if op in ("copy", "cut") and target is None:
        return op
    if target is None:
        return f"{op}:? @{app or '?'}"
    if op in ("click", "copy", "cut") and role:
        return f"{op}:{target} [{role}]"
    return f"{op}:{target}"


def actions_for_day(
    day: str,
    enriched: Iterable[EnrichedLike],
    template_of: Callable[[str], str | None] | None = None,
    session_gap_us: int = SESSION_GAP_US,
) -> list[Action]:
    """The actions of one day, from its enriched input events (any order; sorted here)."""
    rows = sorted(enriched, key=lambda e: (int(e.event.ts_us), e.stream or "", str(e.event.ref)))
    b = _Builder(day=day, template_of=template_of or _default_template)
    for e in rows:
        ev = e.event
        kind = str(ev.kind)
        if kind in ("move", "scroll"):
            continue
        ts = int(ev.ts_us)
        if b.last_ts is not None and ts - b.last_ts > session_gap_us:
            b.session += 1
            b.focus.clear()
            b.last_context.clear()
        b.last_ts = ts
        stream = e.stream or ev.stream or "?"
        # The nearest snapshot is authoritative; a source without snapshots (an RPM log) only
        # has what the recorder wrote on the event itself.
        app = e.app or ev.app
        url = e.url or ev.url
        tmpl = b.template(url)
        ref = str(ev.ref)
        resolution = (e.resolution or "").lower()
        if kind == "click":
            name, role = b.name(e.target_name), b.name(e.target_role)
        else:
            # Enrichment resolves clicks only; keys and clipboard rows carry the focused element
            # the recorder saw, when it saw one.
            name = b.name(e.target_name or ev.element_name)
            role = b.name(e.target_role or ev.element_role)
        # Zone and unresolved clicks keep the action but name no target; rows with no recorded
        # resolution (keys, clipboard) name their element when the recorder gave one.
        named = name is not None and resolution not in ("zone", "unresolved")

        where = _Where(app=app, url=url, url_template=tmpl, day=day, stream=stream, ts=ts, session=b.session, ref=ref)

        def add(op: str, target: str | None, trole: str | None, is_named: bool, at: _Where = where) -> None:
            b.push(at.action(op, target, trole, is_named))

        # A change of URL template inside the same app on a stream is a navigation, emitted
        # before the action that happened on the new page. Arriving in a browser from another
        # app is an app switch, not a navigation, and the first page of a session is neither.
        context = (app or "", tmpl)
        before = b.last_context.get(stream)
        b.last_context[stream] = context
        if tmpl is not None and before is not None and before[0] == context[0] and before[1] not in (None, tmpl):
            add("nav", tmpl, None, True)

        focus_key = (stream, app or "")
        if kind == "click":
            if named:
                b.focus[focus_key] = (name or "", role)
                add("click", name, role, True)
            else:
                b.focus.pop(focus_key, None)
                # An unresolved (or zone-only) click is still an action, just not a named target.
                add("click", None, None, False)
        elif kind == "key" and (ev.modifiers or 0) & SHORTCUT_MODIFIERS:
            # A shortcut (ctrl/cmd held) is not typing; what it does to the clipboard arrives as
            # its own clipboard event, and its keys say nothing that could be replayed safely.
            continue
        elif kind in ("key", "text"):
            if name is not None:
                field_name, field_role = name, role
            elif focus_key in b.focus:
                field_name, field_role = b.focus[focus_key]
            else:
                field_name, field_role = "", None
            add("type", field_name or None, field_role, bool(field_name))
        elif kind == "clipboard":
            op = str(ev.clipboard_op or "").lower()
            if op == "paste":
                fname, frole = (name, role) if name is not None else b.focus.get(focus_key, ("", None))
                add("paste", fname or None, frole, bool(fname))
            elif op in ("copy", "cut"):
                # The source is part of the step ("copy column A" then "paste Name"), when the
                # recorder named it; a copy from nowhere known stays anonymous.
                add(op, name, role if name is not None else None, named)
            else:
                continue
        elif kind in ("app_switch", "window_focus"):
            # The recorder's own app field names the app switched to; screenpipe keeps it in the
            # text column for app_switch rows (an app name, not typed text).
            raw_app = ev.app or (ev.text if kind == "app_switch" else None) or app
            target = b.name(raw_app)
            add("app", target, None, target is not None)
        else:
            continue
    return b.finish()


def sessions(actions: Sequence[Action]) -> list[list[Action]]:
    """Actions split into their sessions (day and session number), in order."""
    out: list[list[Action]] = []
    key: tuple[str, int] | None = None
    for a in actions:
        k = (a.day, a.session)
        if k != key:
            out.append([])
            key = k
        out[-1].append(a)
    return out
