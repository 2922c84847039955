"""A team root: a registry of users, each with their own data folder (``af team ...``).

The team root is a folder holding ``team.json``, which maps a user name to the path of that
user's data folder. A user's folder is an ordinary activity-frames data folder (capture/home.py):
the same layout as a single user's, so a person's own folder joins a team unchanged and can
leave it again. Nothing of a user is copied into the team root; the team's own artifacts (the
team certificate, the cross-user routine table, the team's Dagster instance) live there.

Isolation: each user's log, warehouse, published files and certificate stay in that user's
folder, which keeps its 0700 mode (docs/security.md). Two users may not share a folder, and
one user's folder may not lie inside another's, so no user's build ever writes where another
user's reader looks.

User names are Dagster partition keys, path components and table values at once, so they are
kept to a small alphabet: a lowercase letter or digit first, then lowercase letters, digits,
``-``, ``_`` or ``.``, at most 64 characters.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from capture.errors import UserError
from capture.files import atomic_write
from capture.home import Home, check_new_folder

TEAM_FILE = "team.json"
REGISTRY_LOCK = ".team.lock"
TEAM_VERSION = 1
USER_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class TeamError(UserError):
    """The team root or its registry cannot be used as asked (exit 2)."""


def check_user_name(name: str) -> str:
    """``name`` if it is a valid user name, else a TeamError saying why."""
    if not isinstance(name, str) or not USER_NAME.match(name):
        raise TeamError(
            f"user name {name!r} is not valid: use 1 to 64 characters, lowercase letters, digits, "
            "'-', '_' or '.', starting with a letter or digit (it names a Dagster partition and a folder)"
        )
    if name in (".", "..") or name.endswith("."):
        raise TeamError(f"user name {name!r} is not valid: it may not end with '.'")
    return name


@dataclass(frozen=True)
class Member:
    user: str
    path: Path

    @property
    def home(self) -> Home:
        return Home(self.path)


class Team:
    """The registry in ``<root>/team.json``."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root).expanduser().resolve()

    @property
    def registry_path(self) -> Path:
        return self.root / TEAM_FILE

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    @property
    def certificate_path(self) -> Path:
        return self.root / "team-certificate.json"

    @property
    def routines_path(self) -> Path:
        return self.root / "team-routines.json"

    def exists(self) -> bool:
        return self.registry_path.is_file()

    def init(self) -> None:
        """Create the team root (0700) with an empty registry; an existing one is kept.

        Only a new path or an empty folder becomes a team root (a non-empty folder without
        team.json is refused and left as it is)."""
        if self.exists():
            self._read()  # an unreadable registry is said now, not at the next command
            return
        try:
            check_new_folder(self.root, TEAM_FILE, "a team root",
                             "give `af team init` a new or empty folder, or an existing team root")
        except UserError as exc:
            raise TeamError(str(exc)) from None
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = self.root.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            self.root.chmod(0o700)  # mkdir's mode is masked by the umask
        self._write({})

    def _read(self) -> dict[str, str]:
        where = self.registry_path
        try:
            data = json.loads(where.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TeamError(f"{self.root} is not a team root (no {TEAM_FILE}); run `af team init {self.root}` first") from None
        except (OSError, ValueError) as exc:
            raise TeamError(f"{where} cannot be read as JSON ({exc}); fix or restore it") from None
        if not isinstance(data, dict) or data.get("team_version") != TEAM_VERSION or not isinstance(data.get("users"), dict):
            raise TeamError(f"{where}: expected {{\"team_version\": {TEAM_VERSION}, \"users\": {{...}}}}")
        users: dict[str, str] = {}
        for name, entry in data["users"].items():
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                raise TeamError(f"{where}: user {name!r}: expected {{\"path\": \"...\"}}")
            try:
                check_user_name(name)
            except TeamError as exc:
                raise TeamError(f"{where}: {exc}") from None
            users[name] = entry["path"]
        return users

    def _write(self, users: dict[str, str]) -> None:
        atomic_write(self.registry_path, registry_text(users).encode("utf-8"), mode=0o600)

    def members(self) -> list[Member]:
        """Every registered user, sorted by name."""
        return [Member(u, Path(p)) for u, p in sorted(self._read().items())]

    def member(self, user: str) -> Member:
        users = self._read()
        if user not in users:
            known = ", ".join(sorted(users)) or "none yet"
            raise TeamError(f"no user {user!r} in the team at {self.root} (users: {known}); add one with `af team add`")
        return Member(user, Path(users[user]))

    def add(self, user: str, path: str | os.PathLike[str], create_tz: str | None = None) -> Member:
        """Register ``user`` with the data folder at ``path``.

        An existing data folder joins as it is (only its mode is tightened to 0700, as every
        ``af`` command does). A path with no data folder is refused unless ``create_tz`` is given,
        then a new, empty data folder is made there in that zone: only at a new path or in an
        empty folder (a non-empty folder without af.json is refused and left as it is)."""
        check_user_name(user)
        with self._registry_lock():
            return self._add(user, Path(path).expanduser().resolve(), create_tz)

    def remove(self, user: str) -> Member:
        """Take ``user`` out of the registry. Their data folder is theirs and stays as it is; the
        team's next run neither builds them nor lists them."""
        with self._registry_lock():
            users = self._read()
            if user not in users:
                known = ", ".join(sorted(users)) or "none yet"
                raise TeamError(f"no user {user!r} in the team at {self.root} (users: {known})")
            path = users.pop(user)
            self._write(users)
        return Member(user, Path(path))

    @contextlib.contextmanager
    def _registry_lock(self) -> Iterator[None]:
        """One change of the registry at a time: two `af team add` at once each read the registry,
        and the second write would drop the first's user."""
        self.registry_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / REGISTRY_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held for the milliseconds of one add
            yield
        finally:
            os.close(fd)

    def _add(self, user: str, folder: Path, create_tz: str | None) -> Member:
        users = self._read()
        if user in users:
            raise TeamError(f"user {user!r} is already in the team at {self.root} ({users[user]}); "
                            "a user's folder cannot be swapped under the same name")
        # Where the folder may be is checked before anything is created or tightened there.
        if folder == self.root or self.root.is_relative_to(folder):
            raise TeamError(f"{folder} holds the team root {self.root}; a user's folder must be their own")
        other = _overlapping(folder, users)
        if other is not None:
            raise TeamError(f"{folder} overlaps the folder of user {other!r} ({users[other]}); "
                            "each user needs a folder of their own")
        home = Home(folder)
        if not home.exists():
            if create_tz is None:
                raise TeamError(f"{folder} is not an activity-frames data folder (no af.json): import a capture "
                                "into it first (`af import ... --home PATH`), or pass --create --tz ZONE for a new one")
            try:
                home.init(tz=create_tz)  # a new or empty folder only: a non-empty one is refused, untouched
            except ValueError as exc:
                raise TeamError(str(exc)) from None
        else:
            home.init()  # reads the settings (a broken af.json is said now) and tightens the mode
        users[user] = str(folder)
        self._write(users)
        return Member(user, folder)


def registry_text(users: dict[str, str]) -> str:
    """team.json's text: ``json.dumps(..., indent=2, sort_keys=True)`` of the registry, made a
    user at a time (with an indent, json's encoder is the slow pure-Python one: at 5,000 users
    it was most of an add)."""
    entries = [f'    {json.dumps(u, ensure_ascii=True)}: {{\n      "path": {json.dumps(p, ensure_ascii=True)}\n    }}'
               for u, p in sorted(users.items())]
    body = "{\n" + ",\n".join(entries) + "\n  }" if entries else "{}"
    return f'{{\n  "team_version": {TEAM_VERSION},\n  "users": {body}\n}}\n'


def _overlapping(folder: Path, users: dict[str, str]) -> str | None:
    """The registered user whose folder is ``folder``, holds it or lies inside it, if any: the
    folder's own ancestors are looked up, and the folders under it found by prefix in the sorted
    paths (an add costs log N, not N path comparisons: 5,000 users were minutes of adds)."""
    by_path = {p.rstrip(os.sep) or os.sep: u for u, p in users.items()}  # add writes resolved paths
    for candidate in (folder, *folder.parents):
        if str(candidate) in by_path:
            return by_path[str(candidate)]
    inside = str(folder).rstrip(os.sep) + os.sep
    paths = sorted(by_path)
    i = bisect.bisect_left(paths, inside)
    if i < len(paths) and paths[i].startswith(inside):
        return by_path[paths[i]]
    return None
