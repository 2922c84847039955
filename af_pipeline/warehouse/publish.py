"""published/<day>/: the files agents read, written atomically, append-only once the day is sealed.

Layout of one day::

    published/<day>/document.json   the schema v1 document (its canonical bytes: compact, keys sorted)
    published/<day>/document.yaml   the same document as YAML
    published/<day>/document.md     a Markdown rendering for people
    published/<day>/context.txt     the token-budgeted context block for system prompts
    published/<day>/view.html       the day as a self-contained page for people (af_pipeline/compiler/view.py)
    published/<day>/manifest.json   sha256 and size of each file above, the canonical document hash,
                                    whether the day was sealed, and the log segments it came from

Beside the days, outside every day's folder and so in no manifest::

    published/days.js               the published days, for the pages' links to the previous and next
                                    day, the week and the index (rewritten when a day is added)
    published/index.html            the days by week, drawn from days.js (its bytes name no day)

A day's files never name another day: a new day changes days.js, never an earlier day's bytes.

Every file is a function of the capture and the code alone (no wall-clock stamp), so publishing
a day again with the same content is a no-op on any day, sealed or open: nothing is written and
the files keep their mtimes. Each file is written to a temporary name and renamed into place;
manifest.json is renamed last, so a reader that trusts the manifest never sees a half-written
day. Once a day is published *sealed*, its files never change: publishing different content is
refused. The one exception
is an amendment: when the log has sealed further segments for the day since (late capture), the
day is compiled again from all its segments and published anew; its manifest then lists every
segment, the earlier ones with unchanged hashes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from af_pipeline.compiler import view
from capture.errors import CheckFailed
from capture.files import atomic_write, sha256_bytes, sha256_file

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
DAYS_JS = "days.js"
INDEX = "index.html"
ARTIFACTS = ("document.json", "document.yaml", "document.md", "context.txt", "view.html")


@dataclass(frozen=True)
class Published:
    day: str
    folder: Path
    manifest: dict[str, Any]
    written: bool  # False when an identical sealed day was already there


def read_manifest(published_dir: Path, day: str) -> dict[str, Any] | None:
    path = published_dir / day / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CheckFailed(f"{path} is not a readable manifest ({exc})") from None
    return data if isinstance(data, dict) else None


def manifest_for(
    day: str,
    files: dict[str, bytes],
    *,
    canonical_sha256: str,
    sealed: bool,
    segments: dict[str, str],
    code_version: str,
) -> dict[str, Any]:
    return {
        "manifest_version": MANIFEST_VERSION,
        "day": day,
        "sealed": sealed,
        "canonical_sha256": canonical_sha256,
        "code_version": code_version,
        "segments": dict(sorted(segments.items())),
        "files": {name: {"sha256": sha256_bytes(data), "bytes": len(data)} for name, data in sorted(files.items())},
    }


def _same_content(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Equal up to document.json, which in folders published before its bytes lost their
    generated_at differs only by that stamp when the canonical hash agrees."""
    if old.get("canonical_sha256") != new.get("canonical_sha256") or old.get("segments") != new.get("segments"):
        return False
    of, nf = old.get("files", {}), new.get("files", {})
    return set(of) == set(nf) and all(
        of[name].get("sha256") == nf[name]["sha256"] for name in nf if name != "document.json"
    )


def amends(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether ``new`` was compiled from the segments ``old`` was, unchanged, plus at least one
    more: the day was amended in the log since, and its published files follow the amendment."""
    before, after = old.get("segments") or {}, new.get("segments") or {}
    return isinstance(before, dict) and len(after) > len(before) and all(
        after.get(name) == sha for name, sha in before.items()
    )


def publish_day(
    published_dir: Path,
    day: str,
    files: dict[str, bytes],
    *,
    canonical_sha256: str,
    sealed: bool,
    segments: dict[str, str],
    code_version: str,
) -> Published:
    """Write one day's artifacts (see the module docstring for the append-only rule)."""
    folder = published_dir / day
    new = manifest_for(
        day, files, canonical_sha256=canonical_sha256, sealed=sealed, segments=segments, code_version=code_version
    )
    old = read_manifest(published_dir, day)
    if old == new and not verify_day(published_dir, day):
        write_days_list(published_dir)
        return Published(day, folder, old, written=False)  # the same bytes are there: keep them
    if old is not None and old.get("sealed") and not amends(old, new):
        if _same_content(old, new):
            write_days_list(published_dir)
            return Published(day, folder, old, written=False)
        raise CheckFailed(
            f"published/{day} belongs to a sealed day and would change (canonical sha256 "
            f"{old.get('canonical_sha256', '?')[:12]} -> {canonical_sha256[:12]}); sealed artifacts are "
            f"append-only. If the compiler changed on purpose, move {folder} aside and build again"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(files):
        atomic_write(folder / name, files[name])
    atomic_write(folder / MANIFEST, (json.dumps(new, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    write_days_list(published_dir)
    return Published(day, folder, new, written=True)


def days_list_bytes(days: list[str]) -> bytes:
    """published/days.js for these days: links relative to the list itself."""
    return view.days_script(days, "{}/view.html", INDEX + "#{}", INDEX).encode("utf-8")


def write_days_list(published_dir: Path) -> None:
    """days.js and index.html beside the days, each written only when its bytes change.

    Each publisher lists the days after its own manifest is in place, writes, and lists again
    until what it wrote is what it sees: of two builds publishing at once, the one that writes
    last has seen both manifests, so no lock is needed and no day is left out."""
    index = view.index_page().encode("utf-8")
    if _read(published_dir / INDEX) != index:
        atomic_write(published_dir / INDEX, index)
    for _ in range(8):
        want = days_list_bytes(published_days(published_dir))
        if _read(published_dir / DAYS_JS) == want:
            return
        atomic_write(published_dir / DAYS_JS, want)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def verify_day(published_dir: Path, day: str) -> list[str]:
    """Problems with one published day's files against its manifest (empty when intact)."""
    manifest = read_manifest(published_dir, day)
    if manifest is None:
        return [f"published/{day}/{MANIFEST} is missing"]
    problems = []
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != set(ARTIFACTS):
        problems.append(f"published/{day}/{MANIFEST} lists {sorted(files or [])}, expected {list(ARTIFACTS)}")
        files = files if isinstance(files, dict) else {}
    for name, meta in sorted(files.items()):
        path = published_dir / day / name
        if not path.is_file():
            problems.append(f"published/{day}/{name} is missing")
            continue
        actual = sha256_file(path)
        if actual != meta.get("sha256"):
            problems.append(
                f"published/{day}/{name} was changed: sha256 {actual[:12]}, its manifest records "
                f"{str(meta.get('sha256'))[:12]}"
            )
    return problems


def published_days(published_dir: Path) -> list[str]:
    if not published_dir.is_dir():
        return []
    return sorted(p.name for p in published_dir.iterdir() if p.is_dir() and (p / MANIFEST).exists())
