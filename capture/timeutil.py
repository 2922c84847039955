"""Timestamps and local days.

Timestamps are parsed into integer microseconds UTC; they are never compared as strings. Local
days come from the configured user zone (DST-aware, via zoneinfo), never from the machine's TZ.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

US = 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Accepts "2026-03-15T18:25:55.123456+00:00", "2026-03-15 18:25:55", "...Z", with any fraction
# length and any UTC offset. A value with no offset is UTC (screenpipe writes UTC).
_TS = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$"
)
# Plausible capture years: anything outside is a broken clock, not data.
MIN_YEAR = 1990
MAX_YEAR = 2100


class BadTimestamp(ValueError):
    """A timestamp the parser cannot read; the message says why."""


def parse_ts(value: object) -> int:
    """Parse a timestamp (string, epoch seconds/ms/us/ns number, or datetime) to UTC microseconds."""
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        return _to_us(dt)
    if isinstance(value, bool) or value is None:
        raise BadTimestamp(f"timestamp is {value!r}, not a time")
    if isinstance(value, (int, float)):
        return _epoch_number(float(value))
    if not isinstance(value, str):
        raise BadTimestamp(f"timestamp of type {type(value).__name__} is not readable")
    text = value.strip()
    m = _TS.match(text)
    if not m:
        if re.fullmatch(r"-?\d+(\.\d+)?", text):
            return _epoch_number(float(text))
        raise BadTimestamp(f"timestamp {text[:40]!r} is not ISO-8601 (YYYY-MM-DD HH:MM:SS[.f][Z|+HH:MM])")
    year, month, day, hour, minute = (int(m.group(i)) for i in range(1, 6))
    second = int(m.group(6) or 0)
    frac = (m.group(7) or "").ljust(6, "0")[:6]
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise BadTimestamp(f"timestamp {text[:40]!r} has year {year}, outside {MIN_YEAR}-{MAX_YEAR}")
    try:
        dt = datetime(year, month, day, hour, minute, min(second, 59), int(frac or 0), tzinfo=UTC)
    except ValueError as exc:
        raise BadTimestamp(f"timestamp {text[:40]!r} is not a real date/time ({exc})") from None
    offset = m.group(8)
    if offset and offset not in ("Z", "z"):
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        hours = int(digits[:2])
        minutes = int(digits[2:4] or 0)
        dt = dt - sign * timedelta(hours=hours, minutes=minutes)
    return _to_us(dt)


def _epoch_number(num: float) -> int:
    # Pick the unit by magnitude: seconds, milliseconds, microseconds or nanoseconds.
    a = abs(num)
    if a < 1e11:
        us = num * US
    elif a < 1e14:
        us = num * 1000
    elif a < 1e17:
        us = num
    else:
        us = num / 1000
    us_int = int(round(us))
    year = (_EPOCH + timedelta(microseconds=us_int)).year if -6e16 < us_int < 4e18 else 0
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise BadTimestamp(f"epoch value {num!r} is outside {MIN_YEAR}-{MAX_YEAR}")
    return us_int


def _to_us(dt: datetime) -> int:
    delta = dt.astimezone(UTC) - _EPOCH
    return (delta.days * 86400 + delta.seconds) * US + delta.microseconds


def zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {tz!r} (use an IANA name such as Europe/Paris)") from None


def to_datetime(ts_us: int, tz: str | ZoneInfo = "UTC") -> datetime:
    z = zone(tz) if isinstance(tz, str) else tz
    return (_EPOCH + timedelta(microseconds=ts_us)).astimezone(z)


def local_day(ts_us: int, tz: str | ZoneInfo) -> str:
    """The user's calendar day (YYYY-MM-DD) that contains ts_us."""
    return to_datetime(ts_us, tz).date().isoformat()


def day_bounds(day: str, tz: str | ZoneInfo) -> tuple[int, int]:
    """[start, end) of a local day in UTC microseconds; 23 or 25 hours long across DST changes."""
    z = zone(tz) if isinstance(tz, str) else tz
    d = parse_day(day)
    start = datetime(d.year, d.month, d.day, tzinfo=z)
    nxt = d + timedelta(days=1)
    end = datetime(nxt.year, nxt.month, nxt.day, tzinfo=z)
    return _to_us(start), _to_us(end)


def parse_day(day: str) -> date:
    try:
        return date.fromisoformat(day)
    except (TypeError, ValueError):
        raise ValueError(f"{day!r} is not a day (expected YYYY-MM-DD)") from None


def iso_utc(ts_us: int) -> str:
    """Canonical UTC text with microseconds, e.g. 2026-03-15T18:25:55.123456Z."""
    return to_datetime(ts_us).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def hhmm(ts_us: int, tz: str | ZoneInfo) -> str:
    return to_datetime(ts_us, tz).strftime("%H:%M")


def hhmmss(ts_us: int, tz: str | ZoneInfo) -> str:
    return to_datetime(ts_us, tz).strftime("%H:%M:%S")


def next_day(day: str) -> str:
    """The calendar day after ``day`` (YYYY-MM-DD); ValueError for anything else."""
    return (parse_day(day) + timedelta(days=1)).isoformat()


def days_between(first: str, last: str) -> list[str]:
    a, b = parse_day(first), parse_day(last)
    return [(a + timedelta(days=i)).isoformat() for i in range((b - a).days + 1)]
