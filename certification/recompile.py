"""Byte-identical recompile: the same log and code give the same bytes in another process.

The other process is certification.rebuild's independent build (another TZ, another
PYTHONHASHSEED, reading the log itself). A day passes when every published file agrees with it
byte for byte: the canonical document (document.json compared without generated_at, the one
field allowed to differ), document.yaml, document.md and context.txt; and when the warehouse's
document has the same canonical hash.
"""

from __future__ import annotations

import json
from pathlib import Path

from af_pipeline.compiler.emit import canonical_bytes
from af_pipeline.warehouse import publish
from capture.files import sha256_bytes, sha256_file


def canonical_sha_of_file(path: Path) -> str:
    try:
        return sha256_bytes(canonical_bytes(json.loads(path.read_text(encoding="utf-8"))))
    except (OSError, ValueError) as exc:
        return f"unreadable ({exc})"


def compare_warehouse(fresh_published: Path, day: str, warehouse_sha: str | None) -> list[str]:
    """The warehouse document against the other process's, when that process published the day
    (a day neither build published, one a quality rule kept back, has nothing to compare to)."""
    theirs = publish.read_manifest(fresh_published, day)
    if theirs is None:
        return []
    want = str(theirs["canonical_sha256"])
    if warehouse_sha != want:
        return [f"{day}: the warehouse document hashes to {str(warehouse_sha)[:12]}, a recompile to {want[:12]}"]
    return []


def compare(published_dir: Path, fresh_published: Path, day: str, warehouse_sha: str | None) -> list[str]:
    """Differences between a day's published files (and warehouse document) and the other process's."""
    theirs = publish.read_manifest(fresh_published, day)
    if theirs is None:
        return [f"{day}: the independent recompile produced nothing for this day"]
    want = str(theirs["canonical_sha256"])
    problems = compare_warehouse(fresh_published, day, warehouse_sha)
    folder = published_dir / day
    if publish.read_manifest(published_dir, day) is None:
        return problems + [f"{day}: nothing is published (published/{day}/manifest.json is missing)"]
    # A published document.json is its canonical bytes: when its hash is the recompile's, so is
    # its canonical form's, and nothing needs parsing (a file written otherwise is parsed).
    path = folder / "document.json"
    got = want if path.is_file() and sha256_file(path) == want else canonical_sha_of_file(path)
    if got != want:
        problems.append(f"{day}: published document.json is canonically {got[:12]}, a recompile gives {want[:12]}")
    for name, meta in sorted(theirs["files"].items()):
        if name == "document.json":
            continue
        path = folder / name
        actual = sha256_file(path) if path.is_file() else "missing"
        if actual != meta["sha256"]:
            problems.append(f"{day}: published {name} is {actual[:12]}, a recompile gives {str(meta['sha256'])[:12]}")
    return problems
