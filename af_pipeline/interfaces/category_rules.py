"""The category rules of a data folder, for ``af categories``: which rules are in force and where
they come from, importing a rules file (ActivityWatch's export or this project's format) into
``<home>/categories.json``, and the day documents a rule is tried against. Matching itself is
the compiler's (af_pipeline.compiler.categories): pure, and the same as every build's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from af_pipeline.compiler import categories as C
from capture.errors import UserError
from capture.files import atomic_write
from capture.home import Home
from capture.timeutil import parse_day


@dataclass(frozen=True)
class InForce:
    rules: C.CategoryRules
    path: Path | None  # the rules file, or None for the built-in defaults
    fmt: str  # "defaults", "activity-frames" or "ActivityWatch"


def _format(data: Any) -> str:
    return "activity-frames" if isinstance(data, dict) and isinstance(data.get("rules"), list) else "ActivityWatch"


def in_force(home: Home) -> InForce:
    """The rules a build of this data folder uses (C.rules_in), and where they come from."""
    path = home.root / C.RULES_FILE
    if not path.is_file():
        return InForce(C.default_rules(), None, "defaults")
    rules = C.load_rules(path)  # a file that cannot be used: UserError naming it and the rule
    return InForce(rules, path, _format(json.loads(path.read_text(encoding="utf-8"))))


def import_rules(home: Home, source: Path, replace: bool = False) -> InForce:
    """Check ``source`` (every rule must load: UserError naming the file and the rule otherwise)
    and copy it, byte for byte, to ``<home>/categories.json``. An existing file is only replaced
    when asked: it may hold rules written by hand."""
    if not home.exists():
        raise UserError(f"{home.root} is not an activity-frames data folder (import a capture first, or pass --home)")
    if source.is_dir():
        raise UserError(f"{source} is a folder; give the JSON file ActivityWatch exported (Settings > Categorization "
                        "> Export) or a {\"rules\": [...]} file")
    C.load_rules(source)
    target = home.root / C.RULES_FILE
    if target.exists() and not replace:
        raise UserError(f"{target} already exists; pass --replace to overwrite it with {source}")
    atomic_write(target, source.read_bytes(), mode=0o600)  # names of what a person works on: private
    return in_force(home)


def days_between(known: list[str], day: str | None, start: str | None, end: str | None) -> list[str]:
    """The logged days asked for: one ``day``, or every logged day from ``start`` to ``end``
    (inclusive; either may be left out), or every logged day. UserError when a day is not a date,
    the range is empty, or the day is not in the log."""
    for name, value in (("--day", day), ("--from", start), ("--to", end)):
        if value is not None:
            try:
                parse_day(value)
            except ValueError as exc:
                raise UserError(f"{name}: {exc}") from None
    if day is not None and (start is not None or end is not None):
        raise UserError("give --day or --from/--to, not both")
    span = f"it holds {known[0]} .. {known[-1]}" if known else "it holds no day yet"
    if day is not None:
        if day not in known:
            raise UserError(f"day {day} is not in the log ({span})")
        return [day]
    if start is not None and end is not None and end < start:
        raise UserError(f"--to {end} is before --from {start}")
    days = [d for d in known if (start is None or d >= start) and (end is None or d <= end)]
    if not days:
        raise UserError(f"no logged day between {start or 'the first'} and {end or 'the last'} ({span})")
    return days
