"""Import a robotic-process-mining UI log (action-logger CSV: one user action per row), read-only.

Two generations of the logger are read: the Action Logger CSV (comma-separated, quoted, a url on
every browser row) and the older RPA UI-Logger CSV (semicolon-separated, ``NA`` placeholders,
``tab activated`` / ``focus window changed`` / ``link`` rows, no url on action rows). Files may
be UTF-8 (with or without a byte-order mark) or UTF-16 with a byte-order mark.

Columns used (matched case-insensitively; others are ignored): ``timeStamp``, ``userID``,
``targetApp``, ``eventType``, ``url``, ``content``, ``target.workbookName``,
``target.sheetName``, ``target.id``, ``target.tagName``, ``target.type``, ``target.name``,
``target.value``, ``target.innerText``, ``target.title``, ``target.checked``.

Each row except clipboard rows (``targetApp`` OS-Clipboard) gives a snapshot at its time: app =
targetApp, window = "<workbook> - <sheet>" for spreadsheets, url = url (or, when the row has
none, the page that app last showed on that stream), trigger = eventType. Navigation rows
(``link``, ``navigate_to``, ``tab activated``, ``focus window changed`` ...) are snapshots only:
the page changed, nothing was clicked. Each row whose eventType is an action gives an input event:

- click* / getCell / getRange / selectOptions ... -> click, with the element's role (textfield,
  button, link, checkbox, cell, range ...) and a stable, meaningful name: the form field's name
  (or id, or its visible text) or, for a spreadsheet cell or range, its column(s) ("column B",
  "columns A-H"); the exact cell or HTML id goes to element_automation_id.
- copy / cut / paste / copyCell / copyRange -> clipboard with that exact operation; the clipboard
  content is the event's text (sensitive: never emitted without opt-in). A copy names its source
  element: its own target, or for a clipboard-monitor row the cell or field selected just before
  whose value holds the copied text.
- editField / editCell / editRange / changeField / typing ... -> text, whose text is the field's
  new value (typed content; password fields are never copied).

Rows are referenced by the line they start on (``<source_id>:line:<n>``); the source id carries a
hash of the whole file. Unusable rows are quarantined with their line and reason: unreadable or
wild timestamps (far from both neighbours, which agree with each other), fields over the size
limit, and every line swallowed by an unterminated quote.
"""

from __future__ import annotations

import csv
import io
import re
from bisect import bisect_right
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from capture.errors import UserError
from capture.files import sha256_file
from capture.importers.common import (
    HINT,
    MAX_APP,
    MAX_TYPED_TEXT,
    MAX_URL,
    MAX_WINDOW,
    ClockWatch,
    DaySeen,
    ImportBatch,
    Progress,
    ProgressFn,
    Texts,
    check_readable,
    sniff,
    stream_infos,
)
from capture.model import InputEvent, Snapshot
from capture.timeutil import MAX_YEAR, MIN_YEAR, BadTimestamp, parse_ts, zone

WHAT = "an RPM UI-log CSV (timeStamp, userID, targetApp, eventType, ... columns)"
REQUIRED = ("timestamp", "targetapp", "eventtype")
MAX_FIELD = 10 * 1024 * 1024  # a CSV field larger than this is not a UI-log field: its row is quarantined
CLIPBOARD_APPS = frozenset({"os-clipboard", "clipboard"})
CLIPBOARD_EVENTS = {"copy": "copy", "cut": "cut", "paste": "paste", "copycell": "copy", "copyrange": "copy",
                    "cutcell": "cut", "cutrange": "cut", "pastecell": "paste", "pasterange": "paste"}
TEXT_EVENTS = frozenset({"editfield", "editcell", "editcellsheet", "editrange", "changefield", "typing", "type",
                         "typed", "input", "settext", "entertext", "edittext"})
CLICK_EVENTS = frozenset({"getcell", "getrange", "selectcell", "selectrange", "selectoptions", "selectoption",
                          "mouseclick", "doubleclick", "submit", "check", "uncheck"})
# Rows that select what a following clipboard copy takes (their target.value is the text).
SELECT_EVENTS = frozenset({"getcell", "getrange", "selectcell", "selectrange"})
# The page (or tab, or window) changed: the row's url is where the user now is, nothing was
# clicked. The older UI logger writes ``link`` when a click on a link has loaded its target.
NAVIGATION_EVENTS = frozenset({"link", "navigate_to", "tab activated", "focus window changed", "start_page",
                               "selecttab", "createnewtab", "createtab", "closetab", "reload", "form_submit"})
OUTLIER_US = 30 * 60 * 1_000_000  # a row this far from both neighbours (which agree) has a wild clock
COPY_SOURCE_WINDOW_US = 60 * 1_000_000  # how far back a copy's selecting row may be
_CELL = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d{1,7})$")
_RANGE = re.compile(r"^\$?([A-Za-z]{1,3})\$?\d{1,7}:\$?([A-Za-z]{1,3})\$?\d{1,7}$")
# A line inside a quoted field that starts like a row of its own: the quote was never closed.
_ROW_START = re.compile(r"[\r\n]\"?(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\d{1,2}[/.]\d{1,2}[/.]\d{4}[T ]\d{1,2}:\d\d)")
_TEXT_INPUTS = {"text", "email", "tel", "number", "search", "url", "date", "datetime-local", "month",
                "week", "time", "password", ""}


# ---------------------------------------------------------------------------------------------
# Time stamps
#
# What the loggers write: the Action Logger's browser extension ISO 8601 UTC with "Z"
# (2019-10-21T00:10:08.994Z); the Action Logger / SmartRPA desktop side the local time with a
# colon before the milliseconds and no zone (2020-04-09 17:22:00:365); logs re-saved by a
# spreadsheet the local time with a comma or dot fraction, or a day/month/year date
# (09/04/2020 17:22:00); exports of other tools epoch milliseconds (1586445720365).
# Zone-less stamps are local time of the source's zone (--source-tz, else the data folder's).

_ISO_LOCAL = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,:](\d{1,9}))?)?$")
_SLASHED = re.compile(r"^(\d{1,2})([/.])(\d{1,2})\2(\d{4})[T ,]\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,:](\d{1,9}))?)?"
                      r"(?:\s*([AaPp])\.?[Mm]\.?)?$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)


class Stamps:
    """Reads the time stamps of one file: absolute ones (a zone or offset, epoch numbers) as they
    are, zone-less ones as local time in ``zone``; the day/month order of slashed dates is decided
    once for the whole file (``order``), never per row."""

    def __init__(self, zone_name: str, order: str | None):
        self.zone_name = zone_name
        self.zone: ZoneInfo = zone(zone_name)
        self.order = order  # "dmy", "mdy", or None (no slashed date, or the file does not say)
        self.zoneless = 0
        self.undecided = False  # no date of the file says which order: read day/month, counted
        self.undecided_rows = 0

    @staticmethod
    def decide_order(texts: list[tuple[int, str]], given: str | None, p: Path) -> tuple[str | None, bool]:
        """(order, ambiguous): from --date-order, else from the dates whose day is above 12.

        A file whose dates say both (one row 13/04, another 04/13) is refused: it cannot be read
        one way, and reading each row its own way would be a silent guess."""
        day_first = month_first = None
        slashed = False
        for line, text in texts:
            m = _SLASHED.match(text.strip())
            if not m:
                continue
            slashed = True
            a, b = int(m.group(1)), int(m.group(3))
            if a > 12 >= b and day_first is None:
                day_first = (line, text.strip())
            elif b > 12 >= a and month_first is None:
                month_first = (line, text.strip())
        if given or not slashed:
            return given, False
        if day_first and month_first:
            raise UserError(
                f"{p}: its dates contradict each other: line {day_first[0]} ({day_first[1]!r}) is day/month, "
                f"line {month_first[0]} ({month_first[1]!r}) month/day; pass --date-order dmy or mdy"
            )
        if day_first:
            return "dmy", False
        if month_first:
            return "mdy", False
        return "dmy", True

    def __call__(self, value: str) -> int:
        text = value.strip()
        m = _ISO_LOCAL.match(text)
        if m:
            y, mo, d, h, mi, sec, frac = m.groups()
            return self._local(int(y), int(mo), int(d), int(h), int(mi), sec, frac, text)
        m = _SLASHED.match(text)
        if m:
            a, _, b, y, h, mi, sec, frac, ampm = m.groups()
            day, month = (int(a), int(b)) if self.order != "mdy" else (int(b), int(a))
            self.undecided_rows += self.undecided
            hour = int(h)
            if ampm:
                if not 1 <= hour <= 12:
                    raise BadTimestamp(f"timestamp {text[:40]!r} has hour {hour} with AM/PM")
                hour = hour % 12 + (12 if ampm.lower() == "p" else 0)
            return self._local(int(y), month, day, hour, int(mi), sec, frac, text)
        return parse_ts(text)  # a zone or offset (Z, +02:00) or an epoch number: absolute

    def _local(self, year: int, month: int, day: int, hour: int, minute: int, sec: str | None,
               frac: str | None, text: str) -> int:
        if not MIN_YEAR <= year <= MAX_YEAR:
            raise BadTimestamp(f"timestamp {text[:40]!r} has year {year}, outside {MIN_YEAR}-{MAX_YEAR}")
        try:
            dt = datetime(year, month, day, hour, minute, int(sec or 0), int((frac or "").ljust(6, "0")[:6]),
                          tzinfo=self.zone)
        except ValueError as exc:
            raise BadTimestamp(f"timestamp {text[:40]!r} is not a real date/time ({exc})") from None
        self.zoneless += 1
        return (dt - _EPOCH) // _ONE_US


def read_rpm(
    path: Path,
    *,
    tz: str | None = None,
    source_id: str | None = None,
    progress: ProgressFn | None = None,
    source_tz: str | None = None,
    date_order: str | None = None,
    zone_origin: str = "the data folder's zone",
) -> ImportBatch:
    """Read an RPM UI-log CSV into one batch (the file is only read).

    Time stamps without a zone are local time in ``source_tz`` if given, else in ``tz`` (the data
    folder's zone; ``zone_origin`` says where it came from in the note); ``date_order`` ("dmy",
    "mdy") reads day/month dates a file leaves undecided."""
    if date_order not in (None, "dmy", "mdy"):
        raise UserError(f"--date-order {date_order!r} is not dmy or mdy")
    try:
        stamps = Stamps(source_tz or tz or "UTC", date_order)
    except ValueError as exc:
        raise UserError(f"--source-tz: {exc}" if source_tz else str(exc)) from None
    origin = "--source-tz" if source_tz else zone_origin
    p = check_readable(Path(path), WHAT)
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise UserError(f"{p} cannot be read ({exc.strerror or exc})") from None
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        # Excel's "Unicode text" export: UTF-16 with a byte-order mark (its NULs are not binary).
        encoding, errors = "utf-16", "replace"
    else:
        kind = sniff(p)
        if kind != "text":
            raise UserError(f"{p} is not a CSV UI log: {HINT[kind]}")
        encoding, errors = "utf-8-sig", "surrogateescape"
    digest = _content_digest(p)
    old_limit = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD)
    try:
        with open(p, encoding=encoding, errors=errors, newline="") as fh:
            batch = _read(fh, p, tz, source_id or f"rpm:{p.name}:{digest}", Progress(f"rpm {p.name}", progress), stamps)
    except csv.Error as exc:
        raise UserError(f"{p} is not a readable CSV ({exc})") from None
    except UnicodeError as exc:
        raise UserError(f"{p} cannot be decoded as {encoding} ({exc})") from None
    except OSError as exc:
        raise UserError(f"{p} cannot be read ({exc.strerror or exc})") from None
    finally:
        csv.field_size_limit(old_limit)
    if stamps.undecided_rows:
        batch.note("dates like 03/04/2020 whose order no date of the file decides: read as day/month "
                   "(pass --date-order mdy for month/day)", stamps.undecided_rows)
    if stamps.zoneless:
        batch.note(f"time stamps carry no zone: read as {stamps.zone_name} ({origin}); "
                   f"pass --source-tz to change", stamps.zoneless)
    return batch


def _content_digest(p: Path) -> str:
    """A hash of the whole file: two different logs saved under one name are two sources."""
    try:
        return sha256_file(p)[:12]
    except OSError as exc:
        raise UserError(f"{p} cannot be read ({exc.strerror or exc})") from None


def _rows(reader: Any, batch: ImportBatch, file: str) -> list[tuple[int, list[str]]]:
    """(first line, fields) of every non-empty row; rows the CSV parser cannot take are quarantined.

    A quoted field that swallows lines which look like rows of their own is an unterminated quote:
    that row and every line it swallowed are quarantined (their lines named), so nothing lands
    as one giant field.
    """
    out: list[tuple[int, list[str]]] = []
    consumed = 0  # lines the reader has consumed after the header
    while True:
        start_line = consumed + 2  # 1-based file line: the header is line 1
        try:
            row = next(reader)
        except StopIteration:
            return out
        except csv.Error as exc:
            consumed = reader.line_num
            reason = f"field longer than {MAX_FIELD:,} characters" if "field limit" in str(exc) \
                else f"malformed CSV ({exc})"
            batch.quarantine(file, f"line {start_line}", reason)
            continue
        consumed = reader.line_num
        end_line = consumed + 1
        if end_line > start_line and any(_ROW_START.search(cell) for cell in row if "\n" in cell or "\r" in cell):
            lines = "\n".join(row).splitlines()
            batch.quarantine(file, f"line {start_line}",
                             f"malformed CSV: unterminated quote (its field runs over lines {start_line + 1}-"
                             f"{end_line}, which hold rows of their own)", lines[0] if lines else "")
            for n in range(start_line + 1, end_line + 1):
                i = n - start_line
                batch.quarantine(file, f"line {n}", f"malformed CSV: inside the unterminated quote of line {start_line}",
                                 lines[i] if i < len(lines) else None)
            continue
        if any(cell.strip() for cell in row):
            out.append((start_line, row))


def _outliers(stamps: list[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Rows whose time is far off both neighbours while the neighbours agree: {index: (prev, next)}.

    One wild timestamp (a clock jump on one row) would otherwise stretch the day; a real pause
    moves every later row, so its next neighbour never comes back.
    """
    out: dict[int, tuple[int, int]] = {}
    for j in range(1, len(stamps) - 1):
        prev, cur, nxt = stamps[j - 1][1], stamps[j][1], stamps[j + 1][1]
        if abs(nxt - prev) <= OUTLIER_US and min(abs(cur - prev), abs(cur - nxt)) > OUTLIER_US \
                and (cur > prev) == (cur > nxt):
            out[stamps[j][0]] = (j - 1, j + 1)
    return out


def _read(fh: io.TextIOBase, p: Path, tz: str | None, source_id: str, say: Progress, stamps: Stamps) -> ImportBatch:
    first = fh.readline()
    delimiter = ";" if first.count(";") > first.count(",") else ","
    header = next(csv.reader([first], delimiter=delimiter), [])
    cols = {name.strip().lower(): i for i, name in enumerate(header) if name.strip()}
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        shown = ", ".join(h.strip() for h in header[:8]) or "(nothing)"
        raise UserError(
            f"{p} line 1 is not an RPM UI-log header: it lacks {', '.join(missing)} "
            f"(found: {shown}{', ...' if len(header) > 8 else ''})"
        )
    width = max(cols.values()) + 1
    batch = ImportBatch(source_id=source_id, recorder="rpm")
    file = str(p)
    pending = _rows(csv.reader(fh, delimiter=delimiter), batch, file)
    batch.source_rows = len(batch.quarantined) + len(pending)  # malformed rows and parsed ones
    text = Texts(batch, surrogates=True)
    days = DaySeen(tz)
    clock = ClockWatch(batch, "rows")
    seen: set[tuple[str, ...]] = set()
    sid = batch.source_id

    def get(row: list[str], name: str) -> str:
        i = cols.get(name)
        return row[i] if i is not None and i < len(row) else ""

    # The day/month order of slashed dates is the file's, decided from all its dates at once.
    stamps.order, stamps.undecided = Stamps.decide_order([(line, get(row, "timestamp")) for line, row in pending],
                                                         stamps.order, p)
    # Timestamps first: an outlier is judged against its neighbours in file order.
    rows: list[tuple[int, list[str], int]] = []
    for line, row in pending:
        where = f"line {line}"
        if len(row) != len(header) and (len(row) < width or any(c.strip() for c in row[width:])):
            batch.note("rows with a different number of fields than the header (read by position)")
        key = tuple(row)
        if key in seen:
            batch.note("duplicate rows skipped (identical to an earlier row)")
            batch.source_rows -= 1  # a duplicate is neither read again nor quarantined
            continue
        seen.add(key)
        try:
            ts = stamps(get(row, "timestamp"))
        except BadTimestamp as exc:
            batch.quarantine(file, where, "unreadable timestamp", str(exc))
            continue
        except (OverflowError, ValueError) as exc:
            batch.quarantine(file, where, "unreadable timestamp", f"{get(row, 'timestamp')[:40]!r}: {exc}")
            continue
        rows.append((line, row, ts))
    wild = _outliers([(i, ts) for i, (_, _, ts) in enumerate(rows)])
    for i, (a, b) in sorted(wild.items()):
        line, row, ts = rows[i]
        ahead = (ts - rows[a][2]) // 60_000_000
        side = f"{ahead} minutes ahead of" if ahead > 0 else f"{-ahead} minutes behind"
        batch.quarantine(file, f"line {line}", "timestamp outlier: far from both neighbouring rows",
                         f"{get(row, 'timestamp').strip()} is {side} line {rows[a][0]} and line {rows[b][0]}")

    last_stream: str | None = None
    last_url: dict[tuple[str, str], str] = {}  # (stream, app) -> the page the app last showed
    selections: list[tuple[str, int, int, dict[str, Any], str]] = []  # (stream, ts, line, element, value)
    copies: list[tuple[int, str, int, str]] = []  # (input index, stream, ts, content) of copies with no source
    for n, (line, row, ts) in enumerate(rows, 1):
        if n % 5000 == 0:
            say.tick("rows", n, len(rows))
        if n - 1 in wild:
            continue
        where = f"line {line}"
        app = text(get(row, "targetapp").strip(), 100_000, "targetApp")
        event = (text(get(row, "eventtype").strip(), 128, "eventType") or "")
        if app is None:
            batch.quarantine(file, where, "row has no targetApp", ",".join(row))
            continue
        if len(app) > MAX_APP:
            batch.quarantine(file, where, f"targetApp longer than {MAX_APP} characters", app)
            continue
        if not event:
            batch.quarantine(file, where, "row has no eventType", ",".join(row))
            continue
        clock.see(ts)
        user = (text(get(row, "userid").strip(), 128, "userID") or "")
        is_clipboard_app = app.lower() in CLIPBOARD_APPS
        stream = f"rpm:{user}" if user else (last_stream or "rpm")
        url = text(get(row, "url").strip(), MAX_URL, "url")
        if url:
            last_url[(stream, app)] = url
        elif not is_clipboard_app and (stream, app) in last_url:
            # The older UI logger writes the URL only on tab/focus/navigation rows; the actions
            # that follow happened on that page.
            url = last_url[(stream, app)]
            batch.note("rows without a url: the app's last page carried forward")
        workbook = text(get(row, "target.workbookname").strip(), MAX_WINDOW, "target.workbookName")
        sheet = text(get(row, "target.sheetname").strip(), MAX_WINDOW, "target.sheetName")
        window = " - ".join(x for x in (workbook, sheet) if x) or None
        if window is None:
            window = text(get(row, "title").strip(), MAX_WINDOW, "title")
        if not is_clipboard_app:
            last_stream = stream
            batch.snapshots.append(Snapshot(
                ref=f"{sid}:line:{line}", ts_us=ts, stream=stream, app=app, window=window, url=url,
                focused=True, trigger=event, heartbeat=False,
            ))
            days.see(stream, ts)
        low = event.lower()
        if low in NAVIGATION_EVENTS:
            batch.note(f"rows whose eventType {event!r} is a navigation to its url (snapshot only)")
            continue
        ev = _input(low, row, get, text, batch, sheet)
        if ev is None:
            batch.note(f"rows whose eventType {event!r} is not an input action (snapshot only)")
            continue
        kind, fields = ev
        if not is_clipboard_app and fields.get("element_name") and (low in SELECT_EVENTS or kind == "click"):
            value = get(row, "target.value").strip()
            if value:
                selections.append((stream, ts, line, _element(fields), value))
        if kind == "clipboard" and fields.get("clipboard_op") in ("copy", "cut") and not fields.get("element_name"):
            content = get(row, "content").strip()
            if content:
                copies.append((len(batch.inputs), stream, ts, content))
        batch.inputs.append(InputEvent(
            ref=f"{sid}:line:{line}:input", ts_us=ts, kind=kind,
            stream=stream,
            app=None if is_clipboard_app else app, window=window, url=url, **fields,
        ))
    _copy_sources(batch, selections, copies)
    clock.finish()
    if not batch.snapshots and not batch.inputs:
        reasons = sorted({q.reason for q in batch.quarantined})
        raise UserError(f"{p}: no usable row ({len(batch.quarantined)} quarantined"
                        + (f": {'; '.join(reasons[:3])}" if reasons else "") + ")")
    batch.streams = stream_infos(sid, days.first, {})
    return batch


def _element(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: fields.get(k) for k in ("element_role", "element_name", "element_automation_id")}


def _copy_sources(batch: ImportBatch, selections: list[tuple[str, int, int, dict[str, Any], str]],
                  copies: list[tuple[int, str, int, str]]) -> None:
    """Name the cell or field a clipboard copy came from, when the log shows it.

    The clipboard monitor writes the copied text but not where it came from; the row that
    selected the source (getCell, a field click) carries the same text in target.value, a moment
    earlier (sometimes logged after the copy, so matching is by time, not by row order).
    """
    if not copies:
        return
    selections.sort(key=lambda s: (s[0], s[1], s[2]))
    keys = [(s[0], s[1]) for s in selections]
    for index, stream, ts, content in copies:
        i = bisect_right(keys, (stream, ts))
        while i > 0:
            i -= 1
            s_stream, s_ts, _, element, value = selections[i]
            if s_stream != stream or ts - s_ts > COPY_SOURCE_WINDOW_US:
                break
            if content in value:
                batch.inputs[index] = replace(batch.inputs[index], **element)
                batch.note("copies whose source cell or field is named by the row that selected it")
                break


def _input(event: str, row: list[str], get: Any, text: Texts, batch: ImportBatch,
           sheet: str | None) -> tuple[str, dict[str, Any]] | None:
    tag = get(row, "target.tagname").strip().upper()
    typ = get(row, "target.type").strip().lower()
    html_id = text(get(row, "target.id").strip(), 256, "target.id")
    fields: dict[str, Any] = {"element_automation_id": html_id}
    spreadsheet = bool(sheet) or event in ("getcell", "editcell", "copycell", "getrange", "copyrange")
    cell = _CELL.match(html_id or "") if spreadsheet else None
    span = _RANGE.match(html_id or "") if spreadsheet and cell is None else None
    if cell:
        fields["element_role"] = "cell"
        fields["element_name"] = f"column {cell.group(1).upper()}"
    elif span:
        # A range is named by its columns, like a cell: the rows say which records.
        lo, hi = span.group(1).upper(), span.group(2).upper()
        fields["element_role"] = "range"
        fields["element_name"] = f"column {lo}" if lo == hi else f"columns {lo}-{hi}"
    elif tag or typ or html_id or get(row, "target.name").strip():
        fields["element_role"] = _role(tag, typ)
        fields["element_name"] = _label(row, get, text, tag)
    if event in CLIPBOARD_EVENTS:
        fields["clipboard_op"] = CLIPBOARD_EVENTS[event]
        fields["text"] = text(get(row, "content"), MAX_TYPED_TEXT, "content")
        return "clipboard", fields
    if event in TEXT_EVENTS:
        if typ == "password":
            batch.note("password field edits (value not imported)")
        else:
            value = get(row, "target.value")
            fields["text"] = text(value if value != "" else get(row, "content"), MAX_TYPED_TEXT, "target.value")
        return "text", fields
    if event.startswith("click") or event in CLICK_EVENTS:
        fields["button"] = "left"
        return "click", fields
    return None


def _role(tag: str, typ: str) -> str | None:
    if tag == "INPUT":
        if typ in ("checkbox", "radio"):
            return typ
        if typ in ("submit", "button", "reset", "image"):
            return "button"
        return "textfield" if typ in _TEXT_INPUTS else typ or "textfield"
    return {"TEXTAREA": "textfield", "SELECT": "combobox", "BUTTON": "button", "A": "link", "OPTION": "option",
            "LABEL": "label", "IMG": "image"}.get(tag, tag.lower() or None)


def _label(row: list[str], get: Any, text: Texts, tag: str) -> str | None:
    """The element's most stable human-meaningful name."""
    name, html_id = get(row, "target.name").strip(), get(row, "target.id").strip()
    inner, title = get(row, "target.innertext").strip(), get(row, "target.title").strip()
    order = (inner, name, html_id, title) if tag in ("BUTTON", "A") else (name, html_id, inner, title)
    for candidate in order:
        if candidate:
            return text(" ".join(candidate.split()), 256, "element name")
    return None
