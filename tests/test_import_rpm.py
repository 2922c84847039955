"""RPM UI-log importer: the real StudentRecord.csv and bad input."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capture.errors import UserError
from capture.importers.rpm import read_rpm

STUDENT = Path(__file__).resolve().parent / "data" / "rpm" / "StudentRecord.csv"  # vendored real RPM log (Apache-2.0, see its README)
HEADER = ["timeStamp", "userID", "targetApp", "eventType", "url", "content", "target.workbookName",
          "target.sheetName", "target.id", "target.className", "target.tagName", "target.type", "target.name",
          "target.value", "target.innerText", "target.checked", "target.href", "target.option", "target.title",
          "target.innerHTML"]


def write_csv(path: Path, rows: list[dict[str, str]], header: list[str] = HEADER) -> Path:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def test_student_record_maps_the_copy_paste_routine() -> None:
    before = STUDENT.read_bytes()
    b = read_rpm(STUDENT)
    assert STUDENT.read_bytes() == before
    assert b.recorder == "rpm" and b.source_id.startswith("rpm:StudentRecord.csv:")
    assert not b.quarantined
    # 2,409 actions: each is one input event; the 357 OS-Clipboard rows are not screen snapshots.
    assert len(b.inputs) == 2409 and len(b.snapshots) == 2409 - 357
    kinds = Counter((e.kind, e.clipboard_op) for e in b.inputs)
    assert kinds[("clipboard", "copy")] == 364 and kinds[("clipboard", "paste")] == 504
    assert kinds[("text", None)] == 542
    assert kinds[("click", None)] == 506 + 50 + 49 + 40 + 354
    # First rows: getCell A2 in Excel, copy "John", click the form field, paste "John", edit it.
    first = sorted(b.inputs, key=lambda e: int(e.ref.split(":line:")[1].split(":")[0]))[:5]
    assert [(e.kind, e.clipboard_op, e.app, e.element_role, e.element_name) for e in first] == [
        ("click", None, "Excel", "cell", "column A"),
        ("clipboard", "copy", None, None, None),
        ("click", None, "Chrome", "textfield", "SingleLine"),
        ("clipboard", "paste", "Chrome", "textfield", "SingleLine"),
        ("text", None, "Chrome", "textfield", "SingleLine"),
    ]
    assert first[0].element_automation_id == "A2" and first[0].window == "StudentRecords.xlsx - Sheet1"
    assert first[1].text == "John" and first[3].text == "John" and first[4].text == "John"
    assert first[0].ref.endswith(":line:2:input")  # the header is line 1
    snap = {s.ref: s for s in b.snapshots}[first[2].ref.removesuffix(":input")]
    assert snap.url == "https://forms.zoho.com/universityofmelbourne/form/NewRecord"
    assert snap.trigger == "clickTextField" and snap.stream == "rpm:vleno"
    names = {e.element_name for e in b.inputs if e.app == "Chrome"}
    assert {"SingleLine", "Address_City", "date", "Email", "Submit", "Add another response.", "DecisionBox"} <= names
    # The log has rows out of order (getCell logged late): kept, and reported.
    assert b.notes["rows: clock went backwards (rows kept; the log sorts them)"] == 350
    assert read_rpm(STUDENT).source_id == b.source_id


def row(ts: str = "2024-05-02T10:00:00.000Z", **kw: str) -> dict[str, str]:
    base = {"timeStamp": ts, "userID": "u1", "targetApp": "Chrome", "eventType": "clickButton"}
    base.update({k.replace("__", "."): v for k, v in kw.items()})
    return base


def test_bad_rows_are_quarantined_with_line_numbers(tmp_path: Path) -> None:
    rows = [
        row(),
        row(),  # exact duplicate
        row(ts="tomorrow"),
        row(targetApp=""),
        row(eventType=""),
        row(targetApp="X" * 400),
        row(eventType="editField", target__tagName="INPUT", target__type="password", target__value="hunter2"),
        row(eventType="editField", target__name="comment", target__value="v" * 20_000),
        row(eventType="navigate_to", url="https://example.org"),
        row(ts="2024-05-02T09:00:00.000Z", eventType="selectOptions", target__tagName="SELECT",
            target__name="country"),
        row(eventType="paste", content="multi\nline\nvalue", target__name="notes", target__tagName="TEXTAREA"),
        row(eventType="cut", targetApp="OS-Clipboard", userID="", content="x"),
    ]
    p = write_csv(tmp_path / "log.csv", rows)
    b = read_rpm(p)
    q = {(x.row, x.reason) for x in b.quarantined}
    assert q == {("line 4", "unreadable timestamp"), ("line 5", "row has no targetApp"),
                 ("line 6", "row has no eventType"), ("line 7", "targetApp longer than 256 characters")}
    assert all(x.source == str(p) for x in b.quarantined)
    assert b.notes["duplicate rows skipped (identical to an earlier row)"] == 1
    assert b.notes["password field edits (value not imported)"] == 1
    assert b.notes["target.value: truncated to 8192 characters"] == 1
    assert b.notes["rows whose eventType 'navigate_to' is not an input action (snapshot only)"] == 1
    assert b.notes["rows: clock went backwards (rows kept; the log sorts them)"] == 1
    ev = {e.ref.split(":line:")[1]: e for e in b.inputs}
    assert ev["8:input"].kind == "text" and ev["8:input"].text is None  # the password never leaves the file
    assert ev["9:input"].kind == "text" and len(ev["9:input"].text or "") == 8192
    assert ev["11:input"].kind == "click" and ev["11:input"].element_role == "combobox"
    # a quoted multi-line field: the next row still carries its own starting line number
    assert ev["12:input"].clipboard_op == "paste" and ev["12:input"].text == "multi\nline\nvalue"
    assert ev["15:input"].clipboard_op == "cut" and ev["15:input"].app is None
    assert ev["15:input"].stream == "rpm:u1"
    assert "10:input" not in ev and any(s.ref.endswith(":line:10") for s in b.snapshots)


def test_invalid_utf8_is_replaced_and_counted(tmp_path: Path) -> None:
    p = tmp_path / "latin1.csv"
    p.write_bytes(",".join(HEADER).encode() + b"\n2024-05-02T10:00:00Z,u1,Excel,getCell,,,Caf\xe9.xlsx,S,B7\n")
    b = read_rpm(p)
    [s] = b.snapshots
    assert s.window == "Caf\ufffd.xlsx - S"
    assert b.notes["target.workbookName: invalid UTF-8 replaced with U+FFFD"] == 1
    assert b.inputs[0].element_name == "column B"


def test_wrong_files_are_user_errors(tmp_path: Path) -> None:
    js = tmp_path / "export.json"
    js.write_text('{"buckets": {}}')
    with pytest.raises(UserError, match="activitywatch"):
        read_rpm(js)
    other = tmp_path / "other.csv"
    other.write_text("name,age\nann,3\n")
    with pytest.raises(UserError, match=r"other.csv line 1 is not an RPM UI-log header: it lacks timestamp"):
        read_rpm(other)
    huge = tmp_path / "huge.csv"
    huge.write_text(",".join(HEADER) + '\n2024-05-02T10:00:00Z,u,App,copy,,"' + "x" * (11 * 1024 * 1024) + '"\n')
    with pytest.raises(UserError, match="huge.csv is not a readable CSV"):
        read_rpm(huge)
    assert csv.field_size_limit() == 131072  # the module-wide limit is restored


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["copy", "cut", "paste", "editField", "clickTextField", "getCell", "openTab"]),
                min_size=1, max_size=30))
def test_every_row_is_accounted_for(tmp_path_factory, events: list[str]) -> None:
    rows = [row(ts=f"2024-05-02T10:{i // 60:02d}:{i % 60:02d}.000Z", eventType=e, target__id=f"B{i + 2}",
                target__sheetName="S")
            for i, e in enumerate(events)]
    b = read_rpm(write_csv(tmp_path_factory.mktemp("rpm") / "l.csv", rows))
    assert len(b.snapshots) == len(events)
    ops = [e.clipboard_op for e in sorted(b.inputs, key=lambda e: e.ts_us) if e.kind == "clipboard"]
    assert ops == [e for e in events if e in ("copy", "cut", "paste")]
    assert len(b.inputs) + b.notes.get("rows whose eventType 'openTab' is not an input action (snapshot only)", 0) \
        == len(events)
