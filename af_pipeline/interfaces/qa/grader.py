"""Grading answers against the oracle (paper 6.2).

Default tolerance: numbers within 30 %, times within 45 minutes. Strict band: 10 % and 15
minutes. Apps and yes/no must match (apps compared case- and punctuation-insensitively; a
verbose answer counts when it names exactly one of the candidates).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from af_pipeline.interfaces.qa.questions import Question

DEFAULT = {"number": 0.30, "time": 45.0}
STRICT = {"number": 0.10, "time": 15.0}

_NUM = re.compile(r"-?\d+(?:[.,]\d+)?")
_TIME = re.compile(r"\b(\d{1,2})[:h.](\d{2})\s*([ap]\.?m\.?)?", re.IGNORECASE)


@dataclass(frozen=True)
class Grade:
    question_id: str
    category: str
    answer: str | None
    expected: str | float
    correct: bool
    correct_strict: bool
    error: float | None  # relative error (numbers) or minutes off (times)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.question_id,
            "category": self.category,
            "answer": self.answer,
            "expected": self.expected,
            "correct": self.correct,
            "correct_strict": self.correct_strict,
            "error": None if self.error is None else round(self.error, 4),
        }


def _norm(text: str) -> str:
    t = text.casefold().strip()
    for suffix in (".app", ".exe"):
        if t.endswith(suffix):
            t = t[: -len(suffix)]
    return "".join(ch for ch in t if ch.isalnum())


def parse_number(answer: str) -> float | None:
    m = _NUM.search(answer.replace(",", "") if re.search(r"\d,\d{3}", answer) else answer)
    return float(m.group(0).replace(",", ".")) if m else None


def parse_time(answer: str) -> int | None:
    """Minutes after midnight of the first HH:MM (12-hour clock accepted)."""
    m = _TIME.search(answer)
    if not m:
        return None
    h, mi = int(m.group(1)), int(m.group(2))
    ampm = (m.group(3) or "").lower().replace(".", "")
    if ampm == "pm" and h < 12:
        h += 12
    elif ampm == "am" and h == 12:
        h = 0
    if h > 23 or mi > 59:
        return None
    return h * 60 + mi


def parse_yesno(answer: str) -> str | None:
    t = answer.strip().casefold()
    m = re.match(r"[^a-z]*(yes|no)\b", t)
    return m.group(1) if m else None


def _app_match(answer: str, expected: str, options: tuple[str, ...]) -> bool:
    a = _norm(answer)
    if not a:
        return False
    if a == _norm(expected):
        return True
    # verbose answers: accept when exactly one candidate name occurs in them and it is the right one
    cands = options or (expected,)
    named = [c for c in cands if _norm(c) and _norm(c) in a]
    return named == [expected]


def grade(q: Question, answer: str | None) -> Grade:
    ok = strict = False
    err: float | None = None
    if answer is not None and answer.strip():
        if q.kind == "app":
            ok = strict = _app_match(answer, str(q.expected), q.options)
        elif q.kind == "yesno":
            ok = strict = parse_yesno(answer) == q.expected
        elif q.kind == "number":
            n = parse_number(answer)
            exp = float(q.expected)
            if n is not None:
                err = abs(n - exp) / exp if exp else (0.0 if n == 0 else float("inf"))
                ok = err <= DEFAULT["number"] + 1e-9
                strict = err <= STRICT["number"] + 1e-9
        elif q.kind == "time":
            t = parse_time(answer)
            exp_t = parse_time(str(q.expected))
            if t is not None and exp_t is not None:
                err = float(abs(t - exp_t))
                ok = err <= DEFAULT["time"]
                strict = err <= STRICT["time"]
    return Grade(q.id, q.category, answer, q.expected, ok, strict, err)
