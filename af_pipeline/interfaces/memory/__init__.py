"""The read model: "the memory for this period", one answer for the CLI and the MCP server.

``Memory(home)`` is the only way ``af day``, ``af context`` and every MCP tool read the user's
activity. It owns the rules they share:

- **Periods.** A period is one local day (``"today"``, ``"yesterday"``, ``YYYY-MM-DD``), the last
  N hours, or ``start``/``end`` (ISO times; without an offset they are in the user's zone). A
  period is at most 31 days long (``MAX_PERIOD_DAYS``); search ranges may cover a year.
- **One trust rule.** A day whose log is sealed and whose ``published/<day>/manifest.json`` says
  sealed is served from its published files, each checked against the sha256 its manifest
  records. A published file that does not match (edited by hand, truncated, missing) is refused
  with ``Tampered`` naming the file; it is never printed, and never silently replaced by a live
  compilation (the caller may ask for ``live`` explicitly). Anything else (today, an open day,
  an unpublished day, other compile options) is compiled on request from the log with the same
  pure functions the build uses.
- **Stable frame ids.** A frame is always a frame of its day's document. Outside a single day's
  raw document, ids are day-qualified (``2026-06-03/f-0003``): the same frame keeps the same id
  whatever period it is served in. A bare ``f-0003`` is only accepted together with its day.
- **One patterns algorithm.** Workflow patterns and routines come from ``af_pipeline.routines``
  (``report.day_actions`` and the miner, the same code as ``af routines``), over the period's
  action streams.

Everything here is read-only: the log and the published folder are only read.
"""

from __future__ import annotations

from typing import Any

from af_pipeline.compiler import tokens
from af_pipeline.compiler.emit import DEFAULT_BUDGET
from af_pipeline.interfaces.memory.core import (
    CACHED_DAYS,
    CACHED_DOCS,
    CACHED_PIECES,
    CACHED_ROWS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_MINUTES,
    MAX_HOURS,
    MAX_PERIOD_DAYS,
    MAX_SEARCH_DAYS,
    MAX_STEPS,
    BadArgument,
    FrameRef,
    Period,
    Tampered,
)
from af_pipeline.interfaces.memory.paging import fit, with_skipped
from af_pipeline.interfaces.memory.patterns import Patterns
from af_pipeline.interfaces.memory.tools import Tools
from capture.errors import AfError

__all__ = [
    "CACHED_DAYS", "CACHED_DOCS", "CACHED_ROWS", "CACHED_PIECES", "DEFAULT_BUDGET", "DEFAULT_MAX_TOKENS", "DEFAULT_MIN_MINUTES",
    "MAX_HOURS", "MAX_PERIOD_DAYS", "MAX_SEARCH_DAYS", "MAX_STEPS", "BadArgument", "FrameRef", "Memory", "Period",
    "Tampered", "fit", "with_skipped",
]


class Memory(Tools, Patterns):
    """Read-only access to one data folder: periods, trust rule, documents and lookups.

``home`` is a ``capture.home.Home`` or the data folder's path. ``clock`` returns "now" in UTC
microseconds (frozen in tests and replays); it only resolves "today" and "the last N hours",
never anything inside a document.

    Its parts, one concern each: core (periods), captures, published (the trust rule),
    documents, lookup, tools, patterns; paging holds the answers' caps and cursors.
    """

    # ------------------------------------------------------------------ capabilities

    def capabilities(self) -> dict[str, Any]:
        days = self.days()
        return {
            "tz": self.tz,
            "today": self.today(),
            "covered": {"first_day": days[0] if days else None, "last_day": days[-1] if days else None,
                        "days": len(days)},
            "published_days": len(self.published_days()),
            "typed_text": "included (the operator enabled it)" if self.include_typed_text else "never included",
            "limits": {"max_period_days": MAX_PERIOD_DAYS, "max_hours": MAX_HOURS,
                       "max_search_days": MAX_SEARCH_DAYS, "default_max_tokens": DEFAULT_MAX_TOKENS},
        }

    def prepare(self) -> None:
        """Pay what any first answer about today pays: the compiler's imports (numpy, the suffix
        list), the tokenizer and today's rows. Best effort, as ``warm``."""
        from af_pipeline.compiler.compile import compile_day  # noqa: F401

        tokens.encoding()
        try:
            self.day_capture(self.today())
        except (AfError, OSError, ValueError):
            return

    def warm(self, index_days: int = CACHED_DOCS - 10) -> None:
        """Pay one-time costs before the first question: the tokenizer, the compiler's imports,
        today's document, then the search index of the most recent days, newest first (the
        lock is taken day by day, so questions are answered in between). Best effort: a
        failure here surfaces on the call that needs it."""
        self.prepare()
        try:
            with self.lock:
                self.day_document(self.today())
            days = [d for d in self.days() if d <= self.today()]
        except (AfError, OSError, ValueError):
            return
        for d in reversed(days[-index_days:] if index_days > 0 else []):
            try:
                with self.lock:
                    self.search_index(d)
            except (AfError, OSError, ValueError):
                continue
