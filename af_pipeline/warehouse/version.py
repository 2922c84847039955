"""The code version a build and a certificate name: what produced these bytes.

It is the package version plus a sha256 over the source of the packages that decide output
bytes (the compiler, the capture schema and log reader, the warehouse and publisher). Any edit
to them changes it, so a certificate says exactly which code it certifies, with or without git.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from af_pipeline.about import __version__

PACKAGES = ("af_pipeline", "capture", "assets")
_ROOT = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=1)
def code_version() -> str:
    h = hashlib.sha256()
    for pkg in PACKAGES:
        for path in sorted((_ROOT / pkg).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json", ".yaml", ".txt") and "__pycache__" not in path.parts:
                h.update(path.relative_to(_ROOT).as_posix().encode("utf-8") + b"\0")
                h.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{__version__}+{h.hexdigest()[:16]}"
