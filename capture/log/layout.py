"""Where things are under ``<home>/log/``: file names, day folders and sealed segment names.

    open/<day>/<kind>.jsonl        rows of a day still open, one JSON object a line, fsync'd
    open/<day>/sources.jsonl       which source / recorder contributed to that day
    sealed/<day>/<kind>.parquet    a sealed day: one Parquet file per row kind, sorted, never rewritten
    sealed/<day>+<k>/              amendment k of a sealed day (capture that arrived after the seal)
    sealed/<day>/sources.json      the sealed day's sources and recorders
    manifest.jsonl                 one entry per sealed segment, each chained to the previous by sha256
    quarantine.jsonl               rows that could not land, with their reason
    watermarks.json                per imported source: where its last complete import ended
    .lock                          held (flock) by the one process writing
"""

from __future__ import annotations

from typing import Any

from capture.timeutil import parse_day

MANIFEST = "manifest.jsonl"
QUARANTINE = "quarantine.jsonl"
WATERMARKS = "watermarks.json"
LOCK = ".lock"
SOURCES_OPEN = "sources.jsonl"
SOURCES_SEALED = "sources.json"
# Capture that arrives for a day already sealed (a second device, a second tool, late rows) is
# sealed as an amendment: a further segment of that day in sealed/<day>+<k>/, chained in the
# manifest after the earlier ones, which stay untouched.
AMEND_SEP = "+"


def is_day(name: str) -> bool:
    if len(name) != 10:
        return False
    try:
        parse_day(name)
    except ValueError:
        return False
    return True


def segment_name(day: str, amendment: int = 0) -> str:
    """The folder of a sealed segment under sealed/: the day itself, then ``<day>+<k>`` for amendment k."""
    return day if amendment == 0 else f"{day}{AMEND_SEP}{amendment}"


def parse_segment_name(name: str) -> tuple[str, int] | None:
    """(day, amendment) of a sealed segment's folder name, or None if it is not one."""
    day, sep, k = name.partition(AMEND_SEP)
    if not is_day(day):
        return None
    if not sep:
        return day, 0
    if not k.isdigit() or k.startswith("0") or len(k) > 6:
        return None
    return day, int(k)


def amendment_of(entry: dict[str, Any]) -> int:
    """The amendment number a manifest entry records (0: the day's first sealed segment)."""
    k = entry.get("amendment", 0)
    return k if type(k) is int and k >= 0 else -1
