"""The code version a build and a certificate name: what produced these bytes.

It is the package version plus a sha256 over the source of what decides output bytes: the
version itself (af_pipeline/about.py), the compiler, the routine miner and plans, the warehouse
(day work, store, publisher) and capture (schema, importers, log). Any edit to them changes it,
so a certificate says exactly which code it certifies, with or without git, and every Dagster
asset carries it as its code_version (the UI marks materializations made by other code stale).
The interfaces (CLI, MCP, QA), the Dagster wiring (assets/, checks/) and certification/ are left
out: editing them changes no published byte, so it must not make every day look stale.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from af_pipeline.about import __version__

SOURCES = (
    "af_pipeline/about.py",
    "af_pipeline/compiler",
    "af_pipeline/routines",
    "af_pipeline/warehouse",
    "capture",
)
_ROOT = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=1)
def code_version() -> str:
    h = hashlib.sha256()
    for source in SOURCES:
        top = _ROOT / source
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            # .c: the compiler's C module writes the YAML (its source ships in the wheel)
            if path.is_file() and path.suffix in (".py", ".c", ".json", ".yaml", ".txt") and "__pycache__" not in path.parts:
                h.update(path.relative_to(_ROOT).as_posix().encode("utf-8") + b"\0")
                h.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{__version__}+{h.hexdigest()[:16]}"
