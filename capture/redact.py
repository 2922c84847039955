"""What the quarantine may keep of a row it could not use: never what the user typed.

A quarantined row is kept as a short excerpt so a person can see why it was refused. Rows of
input events, accessibility trees and UI logs carry typed text, clipboard contents and the
values of form fields; those are replaced by ``[redacted]`` before anything is written, and a
row that concerns a password field (by role, name or flag) is replaced entirely. See
docs/security.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

REDACTED = "[redacted]"
PASSWORD_ROW = "[password field row redacted]"
# Field names (any case, any source) whose values are what the user typed, copied or entered.
SECRET_KEYS = frozenset({
    "text", "text_content", "textcontent", "value", "values", "field_value", "clipboard",
    "clipboard_content", "clipboard_text", "content", "typed", "typed_text", "key_text", "keys",
    "input", "input_text", "password", "secret", "selected_text", "selection", "target.value",
    "target.innertext", "innertext",
})
# A row naming any of these (role, element name, flag) belongs to a password field.
_PASSWORD = re.compile(r"pass(?:word|wd|code|phrase)|securetext|secure[ _-]text|mot de passe|kennwort", re.IGNORECASE)
_FLAG_KEYS = frozenset({"is_password", "ispassword", "password_field", "secure", "is_secure"})
# "key": "value" / 'key': 'value' pairs inside text that is not parseable JSON (a cut excerpt, a repr).
_PAIR = re.compile(
    r"""(["'])(?P<key>[A-Za-z_.]+)\1(\s*[:=]\s*)(["'])(?:\\.|(?!\4).)*\4""",
    re.DOTALL,
)


def _is_password(obj: Any) -> bool:
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = str(k).lower()
            if key in _FLAG_KEYS and v not in (None, False, 0, "", "false", "0"):
                return True
            if key not in SECRET_KEYS and _is_password(v):  # a typed value saying "password" is no flag
                return True
        return False
    if isinstance(obj, list | tuple):
        return any(_is_password(v) for v in obj)
    return isinstance(obj, str) and bool(_PASSWORD.search(obj))


def _redact(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: (REDACTED if str(k).lower() in SECRET_KEYS and v not in (None, "") else _redact(v))
                for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_redact(v) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def redact_text(text: str) -> str:
    """A text with the secret values of any JSON (or repr) it holds replaced."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
            if isinstance(parsed, dict | list):
                return PASSWORD_ROW if _is_password(parsed) else json.dumps(_redact(parsed), ensure_ascii=False)
        except (ValueError, RecursionError):
            pass  # not JSON, or nested too deep to walk: the key-value pattern below still applies

    def pair(m: re.Match[str]) -> str:
        if m.group("key").lower() not in SECRET_KEYS:
            return m.group(0)
        q, sep, vq = m.group(1), m.group(3), m.group(4)
        return f"{q}{m.group('key')}{q}{sep}{vq}{REDACTED}{vq}"

    return _PAIR.sub(pair, text)


def redact_row(raw: Any) -> Any:
    """``raw`` (a dict, list, tuple or text) as the quarantine may keep it."""
    if _is_password(raw):
        return PASSWORD_ROW
    return _redact(raw)


def excerpt_text(raw: Any) -> str:
    """The redacted text form of ``raw`` (its repr unless it is text)."""
    kept = redact_row(raw)
    return kept if isinstance(kept, str) else repr(kept)
