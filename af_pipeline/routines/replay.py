"""Parametric replay: run a guarded skill plan in a real browser, with no model in the loop.

The plan's structure replays deterministically while its slots carry the request's values
(paper 7.3). Every step is grounded by accessibility role and name (``page.get_by_role``), never
by element ids or coordinates, so a page whose ids change between loads still grounds. Before
every action the step's guards are checked: the app must be a browser, the page must be at the
expected URL template, and exactly one visible element must have the expected role and name. A
guard miss stops the run at once: no further action is performed, and the transcript says why.

Dry run is the default: steps are grounded and guards checked, nothing is clicked or typed.
Steps that look destructive (see plans.DESTRUCTIVE_WORDS) and clicks that would submit a form
are performed only with ``allow_destructive``. Replay spends zero model tokens and says so.
Slot values never appear in the transcript (only slot names do).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from af_pipeline.routines.plans import is_browser, looks_destructive
from capture.errors import UserError

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
DEFAULT_TIMEOUT_MS = 3000
_KNOWN_OPS = ("click", "fill", "copy", "cut", "focus_app", "expect_url")
# A click submits a form when the element is a submit control inside a form.
_SUBMITS_JS = "e => !!(e.form && (e.type === 'submit' || e.type === 'image'))"


@dataclass
class StepRecord:
    i: int
    op: str
    target: str | None
    role: str | None
    status: str  # performed | checked | skipped | guard-miss | refused | failed | not-reached
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "i": self.i,
            "op": self.op,
            "target": self.target,
            "role": self.role,
            "status": self.status,
            "detail": self.detail,
        }


@dataclass
class Transcript:
    plan: str
    mode: str  # dry-run | execute
    url: str | None
    slots: list[str]
    outcome: str = "completed"  # completed | checked | stopped | refused
    stop_reason: str | None = None
    actions_performed: int = 0
    steps: list[StepRecord] = field(default_factory=list)
    model_tokens: int = 0  # replay never calls a model

    @property
    def ok(self) -> bool:
        return self.outcome in ("completed", "checked")

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "mode": self.mode,
            "url": self.url,
            "slots": self.slots,
            "outcome": self.outcome,
            "stop_reason": self.stop_reason,
            "actions_performed": self.actions_performed,
            "model_tokens": self.model_tokens,
            "steps": [s.to_dict() for s in self.steps],
        }

    def to_text(self) -> str:
        lines = [f"replay of plan {self.plan} ({self.mode}) on {self.url or '(no page)'}"]
        for s in self.steps:
            what = f"{s.op} {s.target!r}" + (f" [{s.role}]" if s.role else "")
            lines.append(f"  {s.i:>2}. {what:<48} {s.status}" + (f": {s.detail}" if s.detail else ""))
        lines.append(f"outcome: {self.outcome}" + (f" ({self.stop_reason})" if self.stop_reason else ""))
        lines.append(f"actions performed: {self.actions_performed}")
        lines.append("model tokens spent: 0 (deterministic replay, no model in the loop)")
        return "\n".join(lines) + "\n"


class GuardMiss(Exception):
    pass


def load_plan(path: str | Path) -> dict[str, Any]:
    """Read and validate a plan file; a bad file is a UserError naming the file and the problem."""
    p = Path(path)
    try:
        plan = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"plan file {p} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"plan file {p} cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"plan file {p} is not JSON (line {exc.lineno}: {exc.msg})") from None
    validate_plan(plan, str(p))
    return plan  # type: ignore[no-any-return]


def validate_plan(plan: Any, where: str = "plan") -> None:
    if not isinstance(plan, dict) or not isinstance(plan.get("steps"), list) or not plan["steps"]:
        raise UserError(f"{where} is not a replay plan (expected an object with a non-empty 'steps' list)")
    for n, st in enumerate(plan["steps"], start=1):
        if not isinstance(st, dict) or st.get("op") not in _KNOWN_OPS:
            raise UserError(
                f"{where}: step {n} has op {st.get('op') if isinstance(st, dict) else st!r}; "
                f"expected one of {', '.join(_KNOWN_OPS)}"
            )
        if st["op"] in ("click", "fill") and st.get("surface", "web") == "web":
            el = st.get("guard", {}).get("element")
            if not isinstance(el, dict) or not el.get("role") or not el.get("name"):
                raise UserError(
                    f"{where}: step {n} ({st['op']} {st.get('target')!r}) has no element guard "
                    "with a role and a name, so it cannot be grounded safely"
                )
        if st["op"] == "fill" and not st.get("slot"):
            raise UserError(f"{where}: step {n} fills a field but names no slot")


def parse_slots(pairs: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UserError(f"--slot {pair!r} is not NAME=VALUE")
        out[name.strip()] = value
    return out


def _source_steps(steps: list[dict[str, Any]]) -> set[int]:
    """Off-browser steps that only fetch a value the request now supplies through a slot:
    copy/cut, a desktop click right before a copy, and app switches."""
    src: set[int] = set()
    for idx, st in enumerate(steps):
        if st["op"] in ("copy", "cut", "focus_app"):
            src.add(idx)
        elif st.get("surface") == "desktop" and st["op"] == "click":
            nxt = steps[idx + 1] if idx + 1 < len(steps) else None
            if nxt is not None and nxt["op"] in ("copy", "cut"):
                src.add(idx)
    return src


def preflight(plan: dict[str, Any], slots: dict[str, str], execute: bool, allow_destructive: bool) -> str | None:
    """Why the plan must not start at all (zero actions), or None."""
    steps = plan["steps"]
    wanted = sorted({st["slot"] for st in steps if st.get("slot")})
    missing = [s for s in wanted if s not in slots]
    if missing:
        return "missing slot value(s): " + ", ".join(missing) + " (give --slot NAME=VALUE)"
    unknown = sorted(set(slots) - set(wanted))
    if unknown:
        return "unknown slot(s): " + ", ".join(unknown) + "; this plan has: " + (", ".join(wanted) or "none")
    sources = _source_steps(steps)
    for idx, st in enumerate(steps):
        if st.get("surface") == "desktop" and idx not in sources:
            return (
                f"step {st['i']} ({st['op']} {st.get('target')!r}) happens in "
                f"{st.get('guard', {}).get('app') or 'a desktop app'}; this executor drives a web browser only"
            )
    if execute and not allow_destructive:
        for st in steps:
            if st["op"] == "click" and (st.get("destructive") or looks_destructive(st.get("target"))):
                return (
                    f"step {st['i']} clicks {st.get('target')!r}, which looks destructive; "
                    "rerun with --allow-destructive to perform it"
                )
    return None


def _default_template(url: str) -> str | None:
    # deferred: the public suffix list (~0.6 s) only when a guard checks a URL
    from af_pipeline.compiler.entities import type_url

    ref = type_url(url)
    return str(ref.template) if ref.template else None


def run_plan(
    plan: dict[str, Any],
    slots: dict[str, str],
    page: Any,
    *,
    execute: bool = False,
    allow_destructive: bool = False,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    template_of: Callable[[str], str | None] | None = None,
) -> Transcript:
    """Run (or, by default, dry-run) a plan on an open Playwright page."""
    from playwright.sync_api import Error as PlaywrightError  # Playwright: only when a replay runs

    validate_plan(plan)
    tmpl = template_of or _default_template
    steps: list[dict[str, Any]] = plan["steps"]
    tr = Transcript(
        plan=str(plan.get("routine") or plan.get("name") or "plan"),
        mode="execute" if execute else "dry-run",
        url=page.url,
        slots=sorted(slots),
    )
    refusal = preflight(plan, slots, execute, allow_destructive)
    if refusal:
        tr.outcome, tr.stop_reason = "refused", refusal
        for st in steps:
            tr.steps.append(StepRecord(st["i"], st["op"], st.get("target"), st.get("role"), "not-reached"))
        return tr
    sources = _source_steps(steps)
    stopped = False
    for idx, st in enumerate(steps):
        rec = StepRecord(st["i"], st["op"], st.get("target"), st.get("role"), "checked")
        tr.steps.append(rec)
        if stopped:
            rec.status = "not-reached"
            continue
        if idx in sources:
            rec.status = "skipped"
            rec.detail = "off-page step: its value arrives through a slot" if st["op"] != "focus_app" else "app switch"
            continue
        try:
            locator = _check_guards(st, page, timeout_ms, tmpl)
            if st["op"] == "expect_url":
                rec.detail = "page is at the expected URL template"
                continue
            assert locator is not None
            submits = st["op"] == "click" and bool(locator.evaluate(_SUBMITS_JS))
            if not execute:
                rec.detail = "grounded; guards hold (dry run: nothing performed)"
                if submits and not allow_destructive:
                    rec.detail += "; submits a form, so --execute needs --allow-destructive"
                continue
            if submits and not allow_destructive:
                rec.status = "refused"
                rec.detail = "this click would submit a form; rerun with --allow-destructive"
                tr.outcome, tr.stop_reason = "stopped", f"step {st['i']}: {rec.detail}"
                stopped = True
                continue
            try:
                if st["op"] == "click":
                    locator.click(timeout=timeout_ms)
                    _settle(page, timeout_ms)
                    rec.detail = "clicked"
                else:
                    locator.fill(slots[st["slot"]], timeout=timeout_ms)
                    rec.detail = f"filled slot {st['slot']!r}"
            except PlaywrightError as exc:
                # The element grounded but refused the action (covered, disabled, not fillable).
                rec.status = "failed"
                rec.detail = f"the page refused the action: {str(exc).splitlines()[0][:200]}"
                tr.outcome = "stopped"
                tr.stop_reason = f"step {st['i']} failed: {rec.detail}; no further action performed"
                stopped = True
                continue
            rec.status = "performed"
            tr.actions_performed += 1
        except GuardMiss as miss:
            rec.status = "guard-miss"
            rec.detail = str(miss)
            tr.outcome = "stopped"
            tr.stop_reason = f"guard miss at step {st['i']}: {miss}; no further action performed"
            stopped = True
        except PlaywrightError as exc:
            # The page changed under the check itself (navigated away, element detached).
            rec.status = "guard-miss"
            rec.detail = f"the page changed while checking: {str(exc).splitlines()[0][:200]}"
            tr.outcome = "stopped"
            tr.stop_reason = f"guard miss at step {st['i']}: {rec.detail}; no further action performed"
            stopped = True
    if not stopped:
        tr.outcome = "completed" if execute else "checked"
    return tr


def _settle(page: Any, timeout_ms: int) -> None:
    from playwright.sync_api import Error as PlaywrightError  # Playwright: only when a replay runs

    try:
        page.wait_for_load_state("load", timeout=timeout_ms)
    except PlaywrightError:
        pass  # a click that starts no navigation leaves nothing to wait for


def _check_guards(st: dict[str, Any], page: Any, timeout_ms: int, tmpl: Callable[[str], str | None]) -> Any:
    from playwright.sync_api import Error as PlaywrightError  # Playwright: only when a replay runs

    guard = st.get("guard", {})
    app = guard.get("app")
    if app and not is_browser(app):
        raise GuardMiss(f"step expects app {app!r}; this executor drives a web browser")
    expected = guard.get("url_template")
    if expected:
        try:
            page.wait_for_url(lambda u: tmpl(u) == expected, timeout=timeout_ms)
        except PlaywrightError:
            raise GuardMiss(
                f"page is at URL template {tmpl(page.url)!r}, expected {expected!r}"
            ) from None
    if st["op"] == "expect_url":
        return None
    el = guard["element"]
    role, name = str(el["role"]), str(el["name"])
    locator = page.get_by_role(role, name=name, exact=True)
    try:
        locator.first.wait_for(state="visible", timeout=timeout_ms)
    except PlaywrightError:
        raise GuardMiss(f"no visible {role} named {name!r} on the page") from None
    n = locator.count()
    if n != 1:
        raise GuardMiss(f"{n} elements are a {role} named {name!r}; grounding must be unique")
    return locator


def launch(playwright: Any) -> Any:
    """Debian's Chromium, headless (Playwright's own browser download is not available here)."""
    if not Path(CHROMIUM).exists():
        raise UserError(f"{CHROMIUM} is missing; install it with: apt-get install chromium chromium-driver")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))


def replay(
    plan_path: str | Path,
    slots: dict[str, str],
    url: str | None = None,
    *,
    execute: bool = False,
    allow_destructive: bool = False,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> Transcript:
    """Open a browser on ``url`` and run the plan there (what ``af replay`` does)."""
    plan = load_plan(plan_path)
    refusal = preflight(plan, slots, execute, allow_destructive)
    if refusal:
        # Refused before any browser starts: nothing can have been performed.
        tr = Transcript(
            plan=str(plan.get("routine") or plan.get("name") or "plan"),
            mode="execute" if execute else "dry-run",
            url=url,
            slots=sorted(slots),
            outcome="refused",
            stop_reason=refusal,
        )
        tr.steps = [StepRecord(st["i"], st["op"], st.get("target"), st.get("role"), "not-reached") for st in plan["steps"]]
        return tr
    target = url or plan.get("start_url")
    if not target:
        raise UserError(
            f"give --url: plan {plan_path} records the URL template "
            f"{plan.get('start_url_template')!r}, not an address to open"
        )
    from playwright.sync_api import Error as PlaywrightError  # Playwright: only when a replay runs
    from playwright.sync_api import sync_playwright  # Playwright: only when a replay runs

    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            page = browser.new_page()
            try:
                page.goto(str(target), timeout=max(timeout_ms, 10000))
            except PlaywrightError as exc:
                raise UserError(f"cannot open {target}: {str(exc).splitlines()[0]}") from None
            return run_plan(
                plan, slots, page, execute=execute, allow_destructive=allow_destructive, timeout_ms=timeout_ms
            )
        finally:
            browser.close()
