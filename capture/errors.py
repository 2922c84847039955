"""Errors a user can cause, each meant to be printed as one sentence (never a traceback)."""

import errno
import re


class AfError(Exception):
    """Base of the errors the command line turns into a message and an exit code."""

    exit_code = 2


class UserError(AfError):
    """Bad usage or bad input: the message says what and where (exit 2)."""

    exit_code = 2


class CheckFailed(AfError):
    """A verification or certification check failed (exit 1)."""

    exit_code = 1


def no_space(error: BaseException | str) -> str | None:
    """"no space left on device at PATH" if ``error`` (or its text) is a full disk, else None.

    Python raises OSError(ENOSPC) with the file name; DuckDB and Dagster only carry the text
    ("Could not write file \"PATH\": No space left on device")."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        where = error.filename or "the data folder"
        return f"no space left on device at {where}"
    text = str(error)
    if "No space left on device" not in text and "ENOSPC" not in text and "Errno 28" not in text:
        return None
    m = re.search(r"""(?:file|directory)\s+\\*["']([^"'\\]+)""", text) or re.search(r"""\[Errno 28\][^:]*:\s*'([^']+)'""", text)
    return f"no space left on device at {m.group(1) if m else 'the data folder'}"
