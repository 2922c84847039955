"""Errors a user can cause, each meant to be printed as one sentence (never a traceback)."""


class AfError(Exception):
    """Base of the errors the command line turns into a message and an exit code."""

    exit_code = 2


class UserError(AfError):
    """Bad usage or bad input: the message says what and where (exit 2)."""

    exit_code = 2


class CheckFailed(AfError):
    """A verification or certification check failed (exit 1)."""

    exit_code = 1
