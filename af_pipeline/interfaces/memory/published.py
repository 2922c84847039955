"""The one trust rule for published days: served only when every file matches its manifest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from af_pipeline.interfaces.memory.captures import Captures
from af_pipeline.interfaces.memory.core import (
    DEFAULT_MIN_MINUTES,
    Tampered,
    _is_day,
)
from capture.files import sha256_file


class Published(Captures):
    """Published days, checked against their manifests."""

    # ------------------------------------------------------------------ published artifacts (trust rule)

    def published_dir(self, day: str) -> Path:
        return self.home.published_dir / day

    def published_days(self) -> list[str]:
        root = self.home.published_dir
        if not root.is_dir():
            return []
        return [p.name for p in sorted(root.iterdir()) if _is_day(p.name) and (p / "manifest.json").is_file()]

    def published_manifest(self, day: str) -> dict[str, Any] | None:
        path = self.published_dir(day) / "manifest.json"
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise Tampered(f"{path} is not readable JSON ({exc}): refusing the published day; "
                           "rebuild it with `af build`") from None
        if not isinstance(data, dict):
            raise Tampered(f"{path} is not a manifest object: refusing the published day; rebuild it with `af build`")
        return data

    def verified_file(self, day: str, name: str) -> Path | None:
        """A published file whose sha256 matches the day's manifest; None when the day is not
        published or the manifest does not list the file. A listed file that is missing or
        differs raises Tampered: it is refused, never served."""
        manifest = self.published_manifest(day)
        if manifest is None:
            return None
        entry = (manifest.get("files") or {}).get(name)
        expected = entry.get("sha256") if isinstance(entry, dict) else None
        if not expected:
            return None
        path = self.published_dir(day) / name
        if not path.is_file():
            raise Tampered(f"{path} is listed in its manifest but missing: refusing it; rebuild with `af build`")
        actual = sha256_file(path)
        if actual != expected:
            raise Tampered(
                f"{path} does not match its manifest (sha256 {actual[:12]}, published {str(expected)[:12]}): "
                "it was changed after publication and is refused; rebuild with `af build`, or compile "
                "from the log (`--live`)"
            )
        return path

    def _servable(self, day: str, min_minutes: float, typed: bool) -> bool:
        """Whether a day is answered from its published files: the log's day is sealed, the
        manifest says sealed, and the options asked for are the ones published."""
        if typed or abs(min_minutes - DEFAULT_MIN_MINUTES) > 1e-9 or not self.log.segment_paths(day):
            return False
        manifest = self.published_manifest(day)
        return bool(manifest and manifest.get("sealed"))

    def _stat_key(self, day: str) -> tuple[Any, ...]:
        out = []
        for name in ("manifest.json", "document.json"):
            try:
                st = (self.published_dir(day) / name).stat()
            except FileNotFoundError:
                return ()
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(out)

    def _published_document(self, day: str, min_minutes: float) -> dict[str, Any] | None:
        # verified once per file version (a changed file gets another size or mtime, and is
        # verified again): hashing every published day on every search would cost more than it
        stat = self._stat_key(day)
        hit = self._published.get(day)
        if hit is not None and stat and hit[0] == stat:
            doc: dict[str, Any] = hit[1]
        else:
            path = self.verified_file(day, "document.json")
            if path is None:
                return None
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise Tampered(f"{path} is not readable JSON ({exc}); rebuild with `af build`") from None
            if not isinstance(doc, dict):
                raise Tampered(f"{path} is not a document object; rebuild with `af build`")
            self._published[day] = (stat, doc)
        built = (doc.get("provenance") or {}).get("options") or {}
        floor = built.get("min_minutes")
        if built.get("include_typed_text") or not isinstance(floor, (int, float)) or \
                abs(float(floor) - min_minutes) > 1e-9:
            return None  # published with other options: compile with the ones asked for
        return doc
