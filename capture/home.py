"""The data folder (``--home`` / ``AF_HOME``): log, warehouse, published artifacts, settings.

The user's time zone is recorded here once, when the folder is created (the machine's zone at
that moment, or an explicit one), and every later run reads it from here whatever ``TZ`` the
process has: day boundaries must not move because a shell exported another zone.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from capture.errors import UserError
from capture.files import atomic_write
from capture.timeutil import zone

SETTINGS_FILE = "af.json"
DEFAULT_GRACE_HOURS = 6.0
MAX_GRACE_HOURS = 168.0  # a week: a longer wait before sealing is a typo, not a setting
# The log and the warehouse hold window titles, URLs and (opted in) typed text: what `af` writes
# is readable by its user only (folders 0700, files 0600), whatever the shell's umask.
PRIVATE_UMASK = 0o077


def private_files() -> None:
    """Make every file and folder this process creates from now on private to its user."""
    os.umask(PRIVATE_UMASK)


# Characters that end the path part of a URL: Dagster's sqlite:/// URLs and DuckDB's database
# names (which take ?options) cut a path short at them.
_URL_SPECIAL = "?%#"


def url_safe(path: Path) -> Path:
    """``path``, or a private symlink to it (``<tmp>/af-<uid>/<hash>``) when it holds ``?``, ``%``
    or ``#``, for libraries that parse a file path as a URL."""
    text = str(path)
    if not any(c in text for c in _URL_SPECIAL):
        return path
    links = Path(tempfile.gettempdir()) / f"af-{os.getuid()}"
    links.mkdir(mode=0o700, exist_ok=True)
    st = links.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise UserError(f"{links} is not a private folder of this user; remove it (af links {path} from there)")
    link = links / hashlib.sha256(text.encode()).hexdigest()[:16]
    if not (link.is_symlink() and os.readlink(link) == text):
        tmp = links / f".{link.name}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(text)
        os.replace(tmp, link)
    return link


def check_buildable(path: Path) -> None:
    """Refuse a path DuckDB cannot write its database under (``af build`` would fail there).

    DuckDB (1.x) cuts a database path at ``?`` when it names the write-ahead log, so every
    commit fails; a symlink does not help (DuckDB resolves it). Every command that creates a
    data folder and the build itself say it in this one sentence, before anything is written."""
    if "?" in str(path):
        raise UserError(f"{path} contains '?', which DuckDB cannot write to; "
                        "use a data folder (--home / AF_HOME) whose path has no '?'")


def check_new_folder(root: Path, marker: str = SETTINGS_FILE, kind: str = "an activity-frames data folder",
                     instead: str = "give a new or empty folder (--home / AF_HOME), or an existing data folder") -> None:
    """Refuse to make ``root`` ``kind`` unless it is a new path or an empty folder.

    A folder that already holds something but no ``marker`` file belongs to somebody else (a
    home, a project, a system folder): initialising it would write into it and make it 0700,
    locking its other users out. Nothing is changed here, whatever the answer."""
    if not os.path.lexists(root):
        return
    if not root.is_dir():
        raise UserError(f"{root} exists and is not a folder; {instead}")
    try:
        with os.scandir(root) as entries:
            occupied = next(entries, None) is not None
    except OSError as exc:
        raise UserError(f"cannot read the folder {root} ({exc.strerror or exc}); {instead}") from None
    if occupied:
        raise UserError(f"{root} is not empty and holds no {marker}, so it is not {kind} and is left as it is; "
                        f"{instead}")


class SettingsError(UserError, ValueError):
    """af.json is unreadable or holds a value `af` cannot use (exit 2, never a traceback)."""


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
    def safe_root(self) -> Path:
        """The folder by a path without URL-special characters (see url_safe)."""
        return url_safe(self.root)

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

    def init(self, tz: str | None = None, grace_hours: float | None = None, create: bool = True) -> Settings:
        """Create the folder if needed; an existing folder keeps its recorded zone.

        Only a new path or an empty folder becomes a data folder (check_new_folder): a folder
        holding anything but no af.json is somebody else's and is refused, untouched.

        With ``create=False`` a missing folder is not created: the settings it would get are
        returned, so a command can check its input before anything lands on disk."""
        if self.exists():
            current = self.settings()
            if tz is not None and tz != current.tz:
                raise ValueError(
                    f"{self.root} already records time zone {current.tz}; "
                    f"it cannot change to {tz} (day partitions would move)"
                )
            if create:
                self._tighten()
            return current
        check_buildable(self.root)  # both before anything is written: refused up front
        check_new_folder(self.root)
        chosen = tz or machine_zone()
        zone(chosen)
        settings = Settings(tz=chosen, grace_hours=_grace(DEFAULT_GRACE_HOURS if grace_hours is None else grace_hours,
                                                           "grace_hours"))
        if not create:
            return settings
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._tighten()
        payload = dict(asdict(settings), created_unix=int(time.time()))
        atomic_write(self.settings_path, (json.dumps(payload, indent=2, sort_keys=True) + "\n").encode("utf-8"), mode=0o600)
        return settings

    def _tighten(self) -> None:
        # mkdir's mode is masked by the umask, and a folder an older version made may be 0755.
        # Only ever called on a folder this code just created or adopted empty, or on one that
        # already holds af.json: never on a folder of somebody else's (check_new_folder).
        st = self.root.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            self.root.chmod(0o700)

    def settings(self) -> Settings:
        try:
            data = json.loads(self.settings_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{self.root} is not an activity-frames data folder yet "
                f"(no {SETTINGS_FILE}); import something first or run `af demo`"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SettingsError(f"{self.settings_path} is not valid JSON ({exc}); fix or restore it") from None
        except OSError as exc:
            raise SettingsError(f"{self.settings_path} cannot be read ({exc.strerror or exc})") from None
        where = self.settings_path
        if not isinstance(data, dict):
            raise SettingsError(f"{where}: expected a JSON object, found {type(data).__name__}")
        tz = data.get("tz")
        if not isinstance(tz, str) or not tz:
            raise SettingsError(f"{where}: \"tz\" must be an IANA zone name such as \"Europe/Paris\", found {tz!r}")
        try:
            zone(tz)
        except ValueError as exc:
            raise SettingsError(f"{where}: \"tz\": {exc}") from None
        version = data.get("settings_version", 1)
        if isinstance(version, bool) or not isinstance(version, int) or version != 1:
            raise SettingsError(f"{where}: \"settings_version\" {version!r} is not one this version of af reads (1)")
        try:
            grace = _grace(data.get("grace_hours", DEFAULT_GRACE_HOURS), "grace_hours")
        except ValueError as exc:
            raise SettingsError(f"{where}: {exc}") from None
        return Settings(tz=tz, grace_hours=grace, settings_version=version)


def _grace(value: object, name: str) -> float:
    """A grace period in hours: a finite number from 0 to MAX_GRACE_HOURS (NaN compares as neither)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"\"{name}\" must be a number of hours, found {value!r}")
    hours = float(value)
    if not math.isfinite(hours) or not 0 <= hours <= MAX_GRACE_HOURS:
        raise ValueError(f"\"{name}\" must be between 0 and {MAX_GRACE_HOURS:g} hours, found {value!r}")
    return hours


def resolve_home(explicit: str | None) -> Home:
    root = explicit or os.environ.get("AF_HOME") or str(Path.home() / ".activity-frames")
    return Home(root)
