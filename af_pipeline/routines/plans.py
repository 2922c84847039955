"""Replay plans for mined routines, their token cost, and the R ladder (paper 7.1-7.3).

For each routine the compiler emits two artifacts, deterministically and with no model:

- a GUARDED SKILL PLAN: one step per action with its operation, target and accessibility role,
  guards (expected element role+name, app, URL template) so replay can fail safe, and variable
  SLOTS where the routine typed or pasted a value (replay fills them with the request's values;
  the values seen at capture time are never stored);
- a MINIMAL REPLAY SCRIPT: the same steps with the guards stripped, one short line each.

Both are counted in cl100k tokens. R = C_agent(k) / tokens, with C_agent(k) = k (wh/750 + 350 +
180), the modeled cost of a screenshot-driven agent re-deriving k steps. R_inject uses the plan,
R_info the script. C_agent and the three-arm comparison are MODELED, never billed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from af_pipeline.compiler import tokens
from af_pipeline.routines.miner import Routine, Step
from capture.files import canonical_json

PLAN_VERSION = 1
RESOLUTIONS: tuple[tuple[int, int], ...] = ((1280, 800), (1512, 982), (1728, 1117))
TYPICAL_RESOLUTION = (1512, 982)
CONTEXT_READ_TOKENS = 350
REASONING_TOKENS = 180
# Sonnet-class list prices per million tokens and the output share of an agent step (paper 7.3).
PRICE_IN_PER_MTOK = 3.0
PRICE_OUT_PER_MTOK = 15.0
OUTPUT_FRACTION = 0.07
MODELED_LABEL = "MODELED: priced from compiled artifacts and token counts, not billed"

BROWSERS = frozenset(
    {
        "arc", "brave", "brave browser", "chrome", "chromium", "firefox", "google chrome",
        "microsoft edge", "edge", "msedge", "opera", "safari", "vivaldi",
    }
)  # fmt: skip

# Accessibility roles of the platforms we read (macOS AX, UIA, HTML tags from RPM loggers)
# mapped onto the ARIA roles a browser's accessibility tree exposes.
_ROLE_MAP = {
    "a": "link", "axlink": "link", "hyperlink": "link", "link": "link",
    "axbutton": "button", "button": "button", "pushbutton": "button", "push button": "button",
    "submit": "button", "axmenubutton": "button", "axpopupbutton": "button",
    "axtextfield": "textbox", "axtextarea": "textbox", "edit": "textbox", "input": "textbox",
    "text": "textbox", "textbox": "textbox", "textfield": "textbox", "textarea": "textbox",
    "searchbox": "searchbox", "axsearchfield": "searchbox",
    "axcheckbox": "checkbox", "checkbox": "checkbox", "axradiobutton": "radio", "radio": "radio",
    "axcombobox": "combobox", "combobox": "combobox", "select": "combobox",
    "axmenuitem": "menuitem", "menuitem": "menuitem", "axtab": "tab", "tab": "tab",
    "cell": "cell", "axcell": "cell", "gridcell": "gridcell",
}  # fmt: skip
# Words that make a step consequential: the executor performs such a step only with an explicit
# --allow-destructive. Matched as whole words in the target's name, case-insensitively.
DESTRUCTIVE_WORDS = (
    "send", "delete", "remove", "pay", "purchase", "buy", "checkout", "post", "publish",
    "submit", "transfer", "discard", "trash", "erase", "destroy", "archive", "unsubscribe",
    "confirm",
)  # fmt: skip
_DESTRUCTIVE = re.compile(r"\b(" + "|".join(DESTRUCTIVE_WORDS) + r")\b", re.IGNORECASE)
_SLUG = re.compile(r"[^a-z0-9]+")


def aria_role(role: str | None) -> str | None:
    if role is None:
        return None
    key = role.strip().lower()
    return _ROLE_MAP.get(key, key or None)


def is_browser(app: str | None) -> bool:
    return app is not None and app.strip().lower() in BROWSERS


def looks_destructive(name: str | None) -> bool:
    return bool(name) and _DESTRUCTIVE.search(name or "") is not None


def _slot_name(target: str | None, taken: dict[str, str], index: int) -> str:
    key = target or f"#{index}"
    if key in taken:
        return taken[key]
    base = _SLUG.sub("_", (target or "").lower()).strip("_")[:40] or f"value_{index}"
    name = base
    n = 2
    while name in taken.values():
        name = f"{base}_{n}"
        n += 1
    taken[key] = name
    return name


def _step_plan(i: int, s: Step, slots: dict[str, str]) -> dict[str, Any]:
    role = aria_role(s.role)
    op = {"type": "fill", "paste": "fill", "app": "focus_app", "nav": "expect_url"}.get(s.op, s.op)
    step: dict[str, Any] = {"i": i, "op": op, "source_op": s.op}
    if s.target is not None:
        step["target"] = s.target
    if role:
        step["role"] = role
    if s.op in ("type", "paste"):
        step["slot"] = _slot_name(s.target, slots, i)
    if s.op in ("copy", "cut") and s.target is not None:
        # Where the value comes from is a parameter of the plan ("copy column A" of which row):
        # replay is told the source, the capture's own cell or record is never stored.
        step["source"] = "from_" + (_SLUG.sub("_", s.target.lower()).strip("_")[:40] or f"step_{i}")
    guard: dict[str, Any] = {}
    if s.app:
        guard["app"] = s.app
    if s.url_template:
        guard["url_template"] = s.url_template
    if s.op in ("click", "type", "paste") and s.named and s.target is not None and role:
        guard["element"] = {"role": role, "name": s.target}
    step["guard"] = guard
    step["surface"] = "web" if is_browser(s.app) else "desktop"
    if s.op == "click" and looks_destructive(s.target):
        step["destructive"] = True
    return step


def guard_matched(step: dict[str, Any]) -> bool:
    """A step replay can check fully: an element guard (role + name) and an expected app."""
    g = step.get("guard", {})
    return "element" in g and "app" in g


def compile_plan(routine: Routine, name: str | None = None) -> dict[str, Any]:
    """The guarded skill plan of a routine, as a JSON-ready dict (deterministic)."""
    slots: dict[str, str] = {}
    steps = [_step_plan(i + 1, s, slots) for i, s in enumerate(routine.steps)]
    start_template = next((s.url_template for s in routine.steps if s.url_template), None)
    slot_list: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    last_source: str | None = None
    for st in steps:
        if "source" in st:
            last_source = st["source"]
            if last_source not in {x["name"] for x in sources}:
                sources.append({"name": last_source, "target": st.get("target"), "role": st.get("role"),
                                "first_step": st["i"], "fills": []})
        if "slot" in st and st["slot"] not in {x["name"] for x in slot_list}:
            slot_list.append({"name": st["slot"], "field": st.get("target"), "first_step": st["i"]})
        if st.get("source_op") == "paste" and last_source is not None:
            # The value pasted here is the one copied from that source.
            st["from"] = last_source
            src = next(x for x in sources if x["name"] == last_source)
            if st["slot"] not in src["fills"]:
                src["fills"].append(st["slot"])
    return {
        "plan_version": PLAN_VERSION,
        "routine": routine.id,
        "name": name or describe(routine),
        "k": routine.k,
        "occurrences": routine.count,
        "start_url_template": start_template,
        "slots": slot_list,
        "sources": sources,
        "steps": steps,
    }


def describe(routine: Routine) -> str:
    """A short human name: the named targets in order, at most four ("copy column A -> paste
    Name" for clipboard steps)."""
    seen: list[str] = []
    # A routine that moves values by the clipboard is named by what it moves, from where to where.
    clip = any(s.op in ("copy", "cut") and s.named for s in routine.steps)
    for s in routine.steps:
        if clip and s.op not in ("copy", "cut", "paste"):
            continue
        label = f"{s.op} {s.target}" if clip else s.target
        if s.named and label and label not in seen:
            seen.append(label)
    head = " -> ".join(seen[:4])
    return head + (" ..." if len(seen) > 4 else "")


def minimal_script(plan: dict[str, Any]) -> str:
    """The plan without guards: one line per step, slots as {name}, copy sources as <name>."""
    lines = []
    for st in plan["steps"]:
        parts = [st["source_op"]]
        if st.get("target"):
            parts.append(str(st["target"]))
        if st.get("source"):
            parts.append("<" + st["source"] + ">")
        if st.get("slot"):
            parts.append("{" + st["slot"] + "}")
        lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


def plan_text(plan: dict[str, Any]) -> str:
    """The canonical bytes of a plan: what is injected, hashed and token-counted."""
    return canonical_json(plan)


# ---------------------------------------------------------------------------------------------
# The R ladder


def c_agent(k: int, width: int, height: int) -> float:
    """Modeled tokens a memoryless screenshot agent spends re-deriving k steps (paper eq. 2)."""
    return k * (width * height / 750 + CONTEXT_READ_TOKENS + REASONING_TOKENS)


def _res_key(res: tuple[int, int]) -> str:
    return f"{res[0]}x{res[1]}"


@dataclass(frozen=True)
class PlanCost:
    routine: str
    k: int
    occurrences: int
    plan_tokens: int
    script_tokens: int
    guard_coverage: float  # share of steps that are guard-matched

    def r_inject(self, res: tuple[int, int] = TYPICAL_RESOLUTION) -> float:
        return c_agent(self.k, *res) / self.plan_tokens

    def r_info(self, res: tuple[int, int] = TYPICAL_RESOLUTION) -> float:
        return c_agent(self.k, *res) / self.script_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "routine": self.routine,
            "k": self.k,
            "occurrences": self.occurrences,
            "plan_tokens": self.plan_tokens,
            "script_tokens": self.script_tokens,
            "guard_coverage": self.guard_coverage,
            "r_inject": {_res_key(r): round(self.r_inject(r), 1) for r in RESOLUTIONS},
            "r_info": {_res_key(r): round(self.r_info(r), 1) for r in RESOLUTIONS},
        }


def plan_cost(plan: dict[str, Any]) -> PlanCost:
    steps = plan["steps"]
    covered = sum(1 for st in steps if guard_matched(st))
    return PlanCost(
        routine=plan["routine"],
        k=int(plan["k"]),
        occurrences=int(plan["occurrences"]),
        plan_tokens=tokens.count(plan_text(plan)),
        script_tokens=tokens.count(minimal_script(plan)),
        guard_coverage=round(covered / len(steps), 4) if steps else 0.0,
    )


def quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (the common 'type 7' definition)."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "median": round(quantile(values, 0.5), 1),
        "q1": round(quantile(values, 0.25), 1),
        "q3": round(quantile(values, 0.75), 1),
    }


_K_BUCKETS = (("3-4", 3, 4), ("5-8", 5, 8), ("9-15", 9, 15), ("16+", 16, 10**9))


def ladder(costs: Sequence[PlanCost]) -> dict[str, Any]:
    """Medians and interquartile ranges of R_inject and R_info at each screen size."""
    out: dict[str, Any] = {
        "routines": len(costs),
        "numerator": "C_agent(k) = k*(w*h/750 + 350 + 180), MODELED",
        "plan_tokens": _summary([c.plan_tokens for c in costs]),
        "script_tokens": _summary([c.script_tokens for c in costs]),
        "guard_coverage": {
            "median": round(quantile([c.guard_coverage for c in costs], 0.5), 4),
        },
        "r_inject": {_res_key(r): _summary([c.r_inject(r) for c in costs]) for r in RESOLUTIONS},
        "r_info": {_res_key(r): _summary([c.r_info(r) for c in costs]) for r in RESOLUTIONS},
        "r_info_by_k": {},
    }
    for label, lo, hi in _K_BUCKETS:
        sel = [c.r_info() for c in costs if lo <= c.k <= hi]
        if sel:
            out["r_info_by_k"][label] = {"routines": len(sel), "median": round(quantile(sel, 0.5), 1)}
    return out


def three_arm(
    costs: Sequence[PlanCost],
    resolution: tuple[int, int] = TYPICAL_RESOLUTION,
    price_in: float = PRICE_IN_PER_MTOK,
    price_out: float = PRICE_OUT_PER_MTOK,
    output_fraction: float = OUTPUT_FRACTION,
) -> dict[str, Any]:
    """The modeled three-arm comparison over every occurrence of the given routines (paper 7.3).

    Arm A re-derives each step from a screenshot: C_agent(k) per occurrence.
    Arm B gets the compiled plan once per occurrence and acts from it: plan tokens + a context
    read per step (no screenshot) + the minimal script as its output.
    Arm C replays locally: guard-matched steps cost nothing, the rest pay the arm-A price.
    Dollars blend input and output at the given output fraction. All of it is MODELED.
    """
    blended = (price_in * (1 - output_fraction) + price_out * output_fraction) / 1e6
    a = b = c = 0.0
    for pc in costs:
        per_a = c_agent(pc.k, *resolution)
        per_b = pc.plan_tokens + pc.k * CONTEXT_READ_TOKENS + pc.script_tokens
        per_c = (1.0 - pc.guard_coverage) * per_a
        a += pc.occurrences * per_a
        b += pc.occurrences * per_b
        c += pc.occurrences * per_c

    def arm(total: float) -> dict[str, Any]:
        return {
            "tokens": round(total),
            "usd": round(total * blended, 2),
            "saving_vs_a": round(1 - total / a, 4) if a else 0.0,
            "reduction_x": round(a / total, 1) if total else None,
        }

    return {
        "label": MODELED_LABEL,
        "resolution": _res_key(resolution),
        "prices_per_mtok": {"input": price_in, "output": price_out, "output_fraction": output_fraction},
        "routines": len(costs),
        "occurrences": sum(pc.occurrences for pc in costs),
        "arm_a_rederive": arm(a),
        "arm_b_plan_injected": arm(b),
        "arm_c_local_replay": arm(c),
    }
