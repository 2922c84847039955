"""The data folder (``--home`` / ``AF_HOME``): log, warehouse, published artifacts, settings.

The user's time zone is recorded here once, when the folder is created (the machine's zone at
that moment, or an explicit one), and every later run reads it from here whatever ``TZ`` the
process has: day boundaries must not move because a shell exported another zone.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from capture.timeutil import zone

SETTINGS_FILE = "af.json"
DEFAULT_GRACE_HOURS = 6.0


@dataclass(frozen=True)
class Settings:
    tz: str
    grace_hours: float = DEFAULT_GRACE_HOURS
    settings_version: int = 1


def machine_zone() -> str:
    """Best effort IANA name of the machine's zone, falling back to UTC."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz or tz == "UTC":
        try:
            zone(tz)
            return tz
        except ValueError:
            pass
    try:
        link = os.readlink("/etc/localtime")
        if "zoneinfo/" in link:
            name = link.split("zoneinfo/", 1)[1]
            zone(name)
            return name
    except (OSError, ValueError):
        pass
    try:
        name = Path("/etc/timezone").read_text(encoding="utf-8").strip()
        zone(name)
        return name
    except (OSError, ValueError):
        return "UTC"


class Home:
    """Paths inside one data folder."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root).expanduser().resolve()

    # A Home stands for its folder wherever a path is expected (str(), open(), subprocess args),
    # so passing one where a path goes can never create a folder named after the object.
    def __fspath__(self) -> str:
        return str(self.root)

    def __str__(self) -> str:
        return str(self.root)

    def __repr__(self) -> str:
        return f"Home({str(self.root)!r})"

    @property
    def settings_path(self) -> Path:
        return self.root / SETTINGS_FILE

    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    @property
    def warehouse_path(self) -> Path:
        return self.root / "warehouse.duckdb"

    @property
    def published_dir(self) -> Path:
        return self.root / "published"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    @property
    def certificate_path(self) -> Path:
        return self.root / "certificate.json"

    def exists(self) -> bool:
        return self.settings_path.is_file()

    def init(self, tz: str | None = None, grace_hours: float | None = None) -> Settings:
        """Create the folder if needed; an existing folder keeps its recorded zone."""
        if self.exists():
            current = self.settings()
            if tz is not None and tz != current.tz:
                raise ValueError(
                    f"{self.root} already records time zone {current.tz}; "
                    f"it cannot change to {tz} (day partitions would move)"
                )
            return current
        chosen = tz or machine_zone()
        zone(chosen)
        settings = Settings(tz=chosen, grace_hours=DEFAULT_GRACE_HOURS if grace_hours is None else grace_hours)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.settings_path.with_suffix(".tmp")
        payload = dict(asdict(settings), created_unix=int(time.time()))
        tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.settings_path)
        return settings

    def settings(self) -> Settings:
        try:
            data = json.loads(self.settings_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{self.root} is not an activity-frames data folder yet "
                f"(no {SETTINGS_FILE}); import something first or run `af demo`"
            ) from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{self.settings_path} is not valid JSON ({exc})") from None
        return Settings(
            tz=str(data["tz"]),
            grace_hours=float(data.get("grace_hours", DEFAULT_GRACE_HOURS)),
            settings_version=int(data.get("settings_version", 1)),
        )


def resolve_home(explicit: str | None) -> Home:
    root = explicit or os.environ.get("AF_HOME") or str(Path.home() / ".activity-frames")
    return Home(root)
