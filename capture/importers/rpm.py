"""Import a robotic-process-mining UI log (action-logger CSV: one user action per row), read-only.

Columns used (matched case-insensitively; others are ignored): ``timeStamp``, ``userID``,
``targetApp``, ``eventType``, ``url``, ``content``, ``target.workbookName``,
``target.sheetName``, ``target.id``, ``target.tagName``, ``target.type``, ``target.name``,
``target.value``, ``target.innerText``, ``target.title``, ``target.checked``.

Each row except clipboard rows (``targetApp`` OS-Clipboard) gives a snapshot at its time: app =
targetApp, window = "<workbook> - <sheet>" for spreadsheets, url = url, trigger = eventType.
Each row whose eventType is an action gives an input event:

- click* / getCell / selectOptions ... -> click, with the element's role (textfield, button,
  link, checkbox, cell ...) and a stable, meaningful name: the form field's name (or id, or its
  visible text) or, for a spreadsheet cell, its column ("column B"); the exact cell or HTML id
  goes to element_automation_id.
- copy / cut / paste -> clipboard with that exact operation; the clipboard content is the
  event's text (sensitive: never emitted without opt-in).
- editField / editCell / changeField / typing ... -> text, whose text is the field's new value
  (typed content; password fields are never copied).
Rows are referenced by the line they start on (``<source_id>:line:<n>``).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from capture.errors import UserError
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
    source_fingerprint,
    stream_infos,
)
from capture.model import InputEvent, Snapshot
from capture.timeutil import BadTimestamp, parse_ts

WHAT = "an RPM UI-log CSV (timeStamp, userID, targetApp, eventType, ... columns)"
REQUIRED = ("timestamp", "targetapp", "eventtype")
MAX_FIELD = 10 * 1024 * 1024  # a CSV field larger than this is not a UI-log field: the file is refused
CLIPBOARD_APPS = frozenset({"os-clipboard", "clipboard"})
CLIPBOARD_EVENTS = {"copy": "copy", "cut": "cut", "paste": "paste", "copycell": "copy", "pastecell": "paste"}
TEXT_EVENTS = frozenset({"editfield", "editcell", "editcellsheet", "changefield", "typing", "type", "typed",
                         "input", "settext", "entertext", "edittext"})
CLICK_EVENTS = frozenset({"getcell", "getrange", "selectcell", "selectrange", "selectoptions", "selectoption",
                          "mouseclick", "doubleclick", "link", "submit", "check", "uncheck"})
_CELL = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d{1,7})$")
_TEXT_INPUTS = {"text", "email", "tel", "number", "search", "url", "date", "datetime-local", "month",
                "week", "time", "password", ""}


def read_rpm(
    path: Path,
    *,
    tz: str | None = None,
    source_id: str | None = None,
    progress: ProgressFn | None = None,
) -> ImportBatch:
    """Read an RPM UI-log CSV into one batch (the file is only read)."""
    p = check_readable(Path(path), WHAT)
    kind = sniff(p)
    if kind != "text":
        raise UserError(f"{p} is not a CSV UI log: {HINT[kind]}")
    old_limit = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD)
    try:
        with open(p, encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
            return _read(fh, p, tz, source_id, Progress(f"rpm {p.name}", progress))
    except csv.Error as exc:
        raise UserError(f"{p} is not a readable CSV ({exc})") from None
    except OSError as exc:
        raise UserError(f"{p} cannot be read ({exc.strerror or exc})") from None
    finally:
        csv.field_size_limit(old_limit)


def _read(fh: io.TextIOBase, p: Path, tz: str | None, source_id: str | None, say: Progress) -> ImportBatch:
    first = fh.readline()
    delimiter = ";" if first.count(";") > first.count(",") else ","
    header = next(csv.reader([first], delimiter=delimiter), [])
    cols = {name.strip().lower(): i for i, name in enumerate(header)}
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        shown = ", ".join(h.strip() for h in header[:8]) or "(nothing)"
        raise UserError(
            f"{p} line 1 is not an RPM UI-log header: it lacks {', '.join(missing)} "
            f"(found: {shown}{', ...' if len(header) > 8 else ''})"
        )
    reader = csv.reader(fh, delimiter=delimiter)
    batch = ImportBatch(source_id="", recorder="rpm")
    text = Texts(batch, surrogates=True)
    days = DaySeen(tz)
    clock = ClockWatch(batch, "rows")
    seen: set[tuple[str, ...]] = set()
    file = str(p)
    fingerprint_row: list[str] | None = None
    last_stream: str | None = None
    consumed = 0  # lines the reader has consumed after the header

    def get(row: list[str], name: str) -> str:
        i = cols.get(name)
        return row[i] if i is not None and i < len(row) else ""

    pending: list[tuple[int, list[str]]] = []
    for row in reader:
        start_line = consumed + 2  # 1-based file line: the header is line 1
        consumed = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if fingerprint_row is None:
            fingerprint_row = row
        pending.append((start_line, row))
    batch.source_id = source_id or f"rpm:{p.name}:{source_fingerprint(header, fingerprint_row or [])}"
    sid = batch.source_id

    for n, (line, row) in enumerate(pending, 1):
        if n % 5000 == 0:
            say.tick("rows", n, len(pending))
        where = f"line {line}"
        if len(row) != len(header):
            batch.note("rows with a different number of fields than the header (read by position)")
        key = tuple(row)
        if key in seen:
            batch.note("duplicate rows skipped (identical to an earlier row)")
            continue
        seen.add(key)
        try:
            ts = parse_ts(get(row, "timestamp"))
        except BadTimestamp as exc:
            batch.quarantine(file, where, "unreadable timestamp", str(exc))
            continue
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
        ev = _input(event.lower(), row, get, text, batch, sheet)
        if ev is None:
            batch.note(f"rows whose eventType {event!r} is not an input action (snapshot only)")
            continue
        kind, fields = ev
        batch.inputs.append(InputEvent(
            ref=f"{sid}:line:{line}:input", ts_us=ts, kind=kind,
            stream=stream,
            app=None if is_clipboard_app else app, window=window, url=url, **fields,
        ))
    clock.finish()
    batch.streams = stream_infos(sid, days.first, {})
    return batch


def _input(event: str, row: list[str], get: Any, text: Texts, batch: ImportBatch,
           sheet: str | None) -> tuple[str, dict[str, Any]] | None:
    tag = get(row, "target.tagname").strip().upper()
    typ = get(row, "target.type").strip().lower()
    html_id = text(get(row, "target.id").strip(), 256, "target.id")
    fields: dict[str, Any] = {"element_automation_id": html_id}
    cell = _CELL.match(html_id or "") if sheet or event in ("getcell", "editcell") else None
    if cell:
        fields["element_role"] = "cell"
        fields["element_name"] = f"column {cell.group(1).upper()}"
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
