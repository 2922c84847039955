"""Keyboard layout maps: repair key text recorded as QWERTY while the user typed another layout.

Some capture stacks decode physical key positions as US QWERTY whatever layout the user runs.
The operator names the layout they type on (``--layout azerty``); the map is never inferred.
Maps live in af_pipeline/compiler/layouts/<name>.json as ``{"name", "description", "map": {recorded:
typed}}`` with single-character keys; translation is simultaneous (``str.translate``), so
swapped keys (q <-> a) do not chain.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from capture.errors import UserError

DEFAULT_LAYOUT = "identity"


def available() -> list[str]:
    """Names of the shipped layouts."""
    folder = resources.files("af_pipeline.compiler").joinpath("layouts")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


@lru_cache(maxsize=32)
def table(name: str = DEFAULT_LAYOUT) -> dict[int, str]:
    """The translation table for ``name`` (a shipped layout or a path to a .json map)."""
    if name.endswith(".json") or "/" in name:
        path = Path(name)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"keyboard layout file {path} cannot be read ({exc.strerror})") from None
        where = str(path)
    else:
        if name not in available():
            raise UserError(f"unknown keyboard layout {name!r} (shipped: {', '.join(available())})")
        text = resources.files("af_pipeline.compiler").joinpath("layouts", f"{name}.json").read_text(encoding="utf-8")
        where = f"layouts/{name}.json"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"keyboard layout {where} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    mapping = data.get("map") if isinstance(data, dict) else None
    if not isinstance(mapping, dict):
        raise UserError(f"keyboard layout {where} has no \"map\" object")
    out: dict[int, str] = {}
    for key, value in mapping.items():
        if not isinstance(key, str) or len(key) != 1 or not isinstance(value, str):
            raise UserError(
                f"keyboard layout {where}: entry {key!r} must map one character to a string"
            )
        out[ord(key)] = value
    return out


def translate(text: str | None, kind: str, tbl: dict[int, str]) -> str | None:
    """Key text as the user typed it. Named keys ("Return", "BackSpace") are left alone."""
    if text is None or not tbl:
        return text
    if kind == "key" and len(text) != 1:
        return text
    return text.translate(tbl)
