"""Answerers for the QA benchmark.

``BlockReader`` answers from the context block's text and nothing else: it never sees the
document, the log or the oracle, so what it gets right is exactly what the block carries. It
reads the block format of docs/context-block.md (``AF-CONTEXT v1``): the ``summary:`` line, the
``apps:`` table (both minute columns, found by their header) and the ``domains:`` table.

``LLMReader`` sends a representation (block, document or raw rows) and the day's questions to a
real model over HTTP, either the Anthropic Messages API or any OpenAI-compatible chat
completions endpoint, configured by environment variables:

- ``AF_QA_LLM_URL``   endpoint, e.g. https://api.anthropic.com/v1/messages or
                      http://localhost:8000/v1/chat/completions
- ``AF_QA_LLM_KEY``   API key (optional for local endpoints)
- ``AF_QA_LLM_MODEL`` model name
- ``AF_QA_LLM_API``   anthropic | openai (default: anthropic when the URL says so, else openai)

Tests never need it; it uses urllib only.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from af_pipeline.interfaces.qa.questions import Question
from capture.errors import UserError

BLOCK_MAGIC = "AF-CONTEXT v1"
_SECTIONS = ("apps:", "domains:", "blind spots:", "gaps:", "categories", "frames:", "omitted:")


@dataclass
class ParsedBlock:
    day: str | None = None
    start: str | None = None  # HH:MM
    app_count: int | None = None
    active_min: float | None = None  # summed over monitor streams
    timeline_min: float | None = None  # all monitors on one timeline, each instant once
    dual_monitor_min: float | None = None  # wall minutes two streams were active at once
    # in block order: (app, minutes per monitor, minutes on one timeline); None when not stated
    apps: list[tuple[str, float | None, float | None]] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)


def _norm(name: str) -> str:
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "-": the block does not state it


def _minute_columns(header: str) -> tuple[int | None, int | None]:
    """Positions of the per-monitor and the one-timeline minutes in a table header such as
    ``apps: app | min per monitor | min on one timeline | frames (...)``. A block written before
    the timeline column existed has ``app | minutes | frames``: per monitor only."""
    cells = [c.strip() for c in header.split(":", 1)[1].split(" | ")]
    per_monitor = timeline = None
    for i, c in enumerate(cells):
        if c.startswith("min") and "timeline" in c:
            timeline = i
        elif c == "minutes" or (c.startswith("min") and "per monitor" in c):
            per_monitor = i
    return per_monitor, timeline


def parse_block(text: str) -> ParsedBlock:
    """The facts a block states, read from its text alone."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != BLOCK_MAGIC:
        raise ValueError(f"not a context block (first line is not {BLOCK_MAGIC!r})")
    out = ParsedBlock()
    section = None
    app_cols: tuple[int | None, int | None] = (None, None)
    for line in lines[1:]:
        s = line.strip()
        head = next((h for h in _SECTIONS if s.startswith(h)), None)
        if head is not None:
            section = head
            if head == "apps:":
                app_cols = _minute_columns(s)
            continue
        if s.startswith("day "):
            out.day = s.split()[1]
            continue
        if s.startswith("summary:"):
            section = None
            for cell in s[len("summary:"):].split("|"):
                parts = cell.split()
                if len(parts) >= 2 and parts[0] == "start" and re.match(r"^\d{2}:\d{2}", parts[1]):
                    out.start = parts[1][:5]
                elif len(parts) >= 2 and parts[0] == "apps" and parts[1].isdigit():
                    out.app_count = int(parts[1])
                elif len(parts) >= 2 and parts[0] == "active":
                    out.active_min = _number(parts[1])
                elif len(parts) >= 2 and parts[0] == "timeline":
                    out.timeline_min = _number(parts[1])
                elif len(parts) >= 2 and parts[0] == "dual-monitor":
                    out.dual_monitor_min = _number(parts[1])
            continue
        cells = [c.strip() for c in s.split(" | ")]
        if section == "apps:" and len(cells) >= 2:
            pm, tl = app_cols
            out.apps.append((
                cells[0],
                _number(cells[pm]) if pm is not None and pm < len(cells) else None,
                _number(cells[tl]) if tl is not None and tl < len(cells) else None,
            ))
        elif section == "domains:" and cells and cells[0]:
            out.domains.append(cells[0].lower())
    return out


class BlockReader:
    """Deterministic answers from a day's context block text.

    The block states two minute columns per app (docs/context-block.md). ``minutes="timeline"``
    (the default) reads "min on one timeline": every monitor's rows interleaved and each instant
    credited once, the construct "how many minutes in X" asks about. ``minutes="per_monitor"``
    reads "min per monitor", the paper's per-stream tenure, where an app shown on a second screen
    earns time while the user works on the first; the report shows that reading beside the
    headline to measure what the convention costs on multi-monitor days.
    """

    COLUMNS = ("timeline", "per_monitor")

    def __init__(self, minutes: str = "timeline") -> None:
        if minutes not in self.COLUMNS:
            raise ValueError(f"minutes must be one of {self.COLUMNS}, not {minutes!r}")
        self.timeline = minutes == "timeline"
        self.name = "block" if minutes == "timeline" else "block (per-monitor column)"

    def answer(self, q: Question, block_text: str) -> str | None:
        b = parse_block(block_text)
        stated: list[tuple[str, float]] = []
        for name, per_monitor, timeline in b.apps:
            m = timeline if self.timeline else per_monitor
            if m is not None:
                stated.append((name, m))
        minutes = {_norm(name): m for name, m in stated}
        if q.category == "dominant_app":
            # most minutes in the column read; equal minutes keep the block's order
            best = max(stated, key=lambda am: am[1], default=None)
            return best[0] if best is not None else None
        if q.category == "dominant_minutes":
            m = minutes.get(_norm(q.subject or ""))
            return None if m is None else f"{m:.1f}"
        if q.category == "app_count":
            return str(b.app_count if b.app_count is not None else len(b.apps))
        if q.category == "pairwise":
            a, c = q.options
            ma, mc = minutes.get(_norm(a)), minutes.get(_norm(c))
            if ma is None and mc is None:
                return None
            return a if (ma or 0.0) >= (mc or 0.0) else c
        if q.category in ("domain_visited", "absent_domain"):
            d = (q.subject or "").lower()
            hit = any(x == d or x.endswith("." + d) for x in b.domains)
            return "yes" if hit else "no"
        if q.category == "start_time":
            return b.start
        if q.category == "absent_app":
            p = _norm(q.subject or "")
            hit = any(p and (p in k or (k and k in p)) for k in map(_norm, (a[0] for a in b.apps)))
            return "yes" if hit else "no"
        return None


# ---------------------------------------------------------------------- a real model over HTTP

SYSTEM_PROMPT = (
    "You answer questions about one person's computer activity using only the text you are given. "
    "Minutes mean active screen time. Reply with one JSON object mapping each question id to a short "
    "answer: an application name, a number of minutes (digits only), a local time HH:MM, or yes/no. "
    "No other text."
)


@dataclass(frozen=True)
class LLMConfig:
    url: str
    model: str
    key: str | None
    api: str  # anthropic | openai
    timeout_s: float = 120.0
    max_tokens: int = 1024

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LLMConfig:
        e = os.environ if env is None else env
        url = e.get("AF_QA_LLM_URL", "").strip()
        model = e.get("AF_QA_LLM_MODEL", "").strip()
        if not url or not model:
            raise UserError(
                "the llm answerer needs AF_QA_LLM_URL and AF_QA_LLM_MODEL (and usually AF_QA_LLM_KEY); "
                "see docs/qa-benchmark.md"
            )
        api = e.get("AF_QA_LLM_API", "").strip().lower() or ("anthropic" if "anthropic" in url else "openai")
        if api not in ("anthropic", "openai"):
            raise UserError(f"AF_QA_LLM_API must be anthropic or openai, not {api!r}")
        return cls(url=url, model=model, key=e.get("AF_QA_LLM_KEY") or None, api=api)


def build_request(cfg: LLMConfig, representation: str, questions: Sequence[Question]) -> tuple[dict[str, str], dict[str, Any]]:
    """(headers, body) of one request answering one day's questions."""
    asked = "\n".join(f"{q.id}: {q.text}" for q in questions)
    user = f"<activity>\n{representation}\n</activity>\n\nQuestions:\n{asked}"
    headers = {"content-type": "application/json"}
    if cfg.api == "anthropic":
        if cfg.key:
            headers["x-api-key"] = cfg.key
        headers["anthropic-version"] = "2023-06-01"
        body: dict[str, Any] = {
            "model": cfg.model, "max_tokens": cfg.max_tokens, "system": SYSTEM_PROMPT,
            "messages": [{"role": "user", "content": user}],
        }
    else:
        if cfg.key:
            headers["authorization"] = f"Bearer {cfg.key}"
        body = {
            "model": cfg.model, "max_tokens": cfg.max_tokens,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}],
        }
    return headers, body


def response_text(api: str, payload: dict[str, Any]) -> str:
    if api == "anthropic":
        return "".join(p.get("text", "") for p in payload.get("content", []) if p.get("type") == "text")
    choices = payload.get("choices") or [{}]
    return str((choices[0].get("message") or {}).get("content") or "")


def parse_answers(text: str, questions: Sequence[Question]) -> dict[str, str | None]:
    """The JSON object in a model's reply; missing ids answer None."""
    m = re.search(r"\{.*\}", text, re.DOTALL)
    data: dict[str, Any] = {}
    if m:
        try:
            loaded = json.loads(m.group(0))
            data = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            data = {}
    out: dict[str, str | None] = {}
    for q in questions:
        v = data.get(q.id)
        out[q.id] = None if v is None else str(v)
    return out


class LLMReader:
    """One request per day: the representation plus that day's questions."""

    name = "llm"

    def __init__(self, cfg: LLMConfig) -> None:
        self.cfg = cfg

    def answer_day(self, representation: str, questions: Sequence[Question]) -> dict[str, str | None]:
        headers, body = build_request(self.cfg, representation, questions)
        req = urllib.request.Request(self.cfg.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.cfg.timeout_s) as resp:  # noqa: S310 - operator-configured URL
                payload = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            raise UserError(f"{self.cfg.url} answered HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ValueError) as exc:
            raise UserError(f"could not reach {self.cfg.url}: {exc}") from None
        return parse_answers(response_text(self.cfg.api, payload), questions)
