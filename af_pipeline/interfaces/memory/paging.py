"""Answers that fit: token caps, pages and their cursors, lines the reader left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from af_pipeline.compiler import tokens
from af_pipeline.interfaces.memory.core import (
    DEFAULT_MAX_TOKENS,
    MIN_MAX_TOKENS,
    SKIPPED_SHOWN,
    BadArgument,
)
from capture.files import canonical_json
from capture.model import SkippedLine


def with_skipped(answer: Any, skipped: Sequence[SkippedLine]) -> Any:
    """An answer with the open-segment lines its reads left out named (Memory.noting_skipped):
    a JSON answer gains ``log_warning`` (one sentence) and ``skipped_lines`` (file, line and
    reason of the first SKIPPED_SHOWN); a text answer ends with the sentence."""
    if not skipped:
        return answer
    from capture.log.opensegments import skipped_sentence

    sentence = skipped_sentence(skipped)
    if isinstance(answer, str):
        return f"{answer.rstrip(chr(10))}\n\n{sentence}\n"
    if isinstance(answer, dict):
        return {**answer, "log_warning": sentence, "skipped_lines": [s.to_json() for s in skipped[:SKIPPED_SHOWN]]}
    return answer


def fit(payload: dict[str, Any], max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    """The payload cut to max_tokens by dropping the tail of its longest list (top level or one
    level down), repeatedly; ``truncated`` says how many items each list lost."""
    out = json.loads(canonical_json(payload))  # a copy, never the cached document
    cut: dict[str, int] = {}
    while tokens.count(canonical_json(out)) > max_tokens:
        lists = [(k, None, v) for k, v in out.items() if isinstance(v, list) and v]
        lists += [(k, k2, v2) for k, v in out.items() if isinstance(v, dict)
                  for k2, v2 in v.items() if isinstance(v2, list) and v2]
        if not lists:
            break
        k, k2, longest = max(lists, key=lambda t: (len(canonical_json(t[2])), t[0], t[1] or ""))
        n = max(1, len(longest) // 10)
        del longest[-n:]
        name = k if k2 is None else f"{k}.{k2}"
        cut[name] = cut.get(name, 0) + n
    if cut:
        out["truncated"] = dict(sorted(cut.items()))
        out["truncated_note"] = f"items left out to stay under {max_tokens} tokens: ask with a smaller top"
    return out


def _check_max_tokens(max_tokens: int) -> None:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or \
            not MIN_MAX_TOKENS <= max_tokens <= DEFAULT_MAX_TOKENS:
        raise BadArgument(f"max_tokens must be between {MIN_MAX_TOKENS} and {DEFAULT_MAX_TOKENS}, not {max_tokens!r}")


def _digest(key: tuple[Any, ...]) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()[:8]


def _make_cursor(offset: int, key: tuple[Any, ...]) -> str:
    return f"{offset}.{_digest(key)}"


def _cursor_offset(cursor: str | None, key: tuple[Any, ...]) -> int:
    """A cursor is bound to the question it pages: one from another question is refused."""
    if cursor is None or cursor == "":
        return 0
    m = re.match(r"^([0-9]+)\.([0-9a-f]{8})$", str(cursor))
    if not m:
        raise BadArgument(f"cursor {cursor!r} is not a cursor from this server (pass next_cursor as given)")
    if m.group(2) != _digest(key):
        raise BadArgument(f"cursor {cursor!r} belongs to another question: repeat the same arguments with it")
    return int(m.group(1))


def _page(head: dict[str, Any], list_key: str, items: list[Any], max_tokens: int, cursor: str | None,
          key: tuple[Any, ...], lean: Sequence[str] = (), limit: int | None = None) -> dict[str, Any]:
    """head plus as many items (from the cursor on) as fit max_tokens (cl100k, compact JSON).
    Pages after the first carry only the head's ``lean`` keys; a first page whose head leaves no
    room for an item carries the head alone (the next page goes on from the same item)."""
    offset = _cursor_offset(cursor, key)
    if offset > len(items):
        raise BadArgument(f"cursor {cursor!r} is past the end ({len(items)} items)")
    first = cursor is None or cursor == ""
    shown = head if first or not lean else {k: head[k] for k in lean if k in head}
    base = dict(shown, total=len(items), offset=offset, next_cursor=_make_cursor(10**9, key))
    base[list_key] = []
    room = max_tokens - tokens.count(canonical_json(base))
    if room <= 0:
        raise BadArgument(f"max_tokens {max_tokens} is too small for this answer's header "
                          f"({max_tokens - room} tokens); ask with a larger max_tokens")
    # estimate with ~3 characters a token (measured on documents), then check the real count
    take, est = 0, 0.0
    for it in items[offset:offset + limit] if limit else items[offset:]:
        cost = len(canonical_json(it)) / 2.9 + 1
        if est + cost > room * 0.97:
            break
        est += cost
        take += 1
    def build(n: int) -> dict[str, Any]:
        out = dict(base, **{list_key: items[offset:offset + n]})
        out["next_cursor"] = _make_cursor(offset + n, key) if offset + n < len(items) else None
        return out

    while take > 0:
        out = build(take)
        if tokens.count(canonical_json(out)) <= max_tokens:
            return out
        take -= max(1, take // 10)
    # nothing fits beside the first page's head: the head alone; later pages always progress
    return build(0 if first else min(1, len(items) - offset))
