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
        ("clipboard", "copy", None, "cell", "column A"),  # the copy names the cell it came from
        ("click", None, "Chrome", "textfield", "SingleLine"),
        ("clipboard", "paste", "Chrome", "textfield", "SingleLine"),
        ("text", None, "Chrome", "textfield", "SingleLine"),
    ]
    assert first[0].element_automation_id == "A2" and first[0].window == "StudentRecords.xlsx - Sheet1"
    assert first[1].element_automation_id == "A2"
    # Every copy names its source: the 357 clipboard-monitor copies by the getCell that selected
    # their text (sometimes logged late), the 7 browser copies by their own target field.
    sources = Counter(e.element_role for e in b.inputs if e.clipboard_op == "copy")
    assert sources == {"cell": 357, "textfield": 7}
    assert b.notes["copies whose source cell or field is named by the row that selected it"] == 357
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
        row(ts="2024-05-02T09:59:00.000Z", eventType="selectOptions", target__tagName="SELECT",
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
    assert b.notes["rows whose eventType 'navigate_to' is a navigation to its url (snapshot only)"] == 1
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
    with pytest.raises(UserError, match=r"huge.csv: no usable row \(1 quarantined: field longer than"):
        read_rpm(huge)  # nothing lands: an error, not an empty success
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


# ------------------------------------------------------------------ the older RPA UI-Logger format

OLD = STUDENT.parent / "ui_logger_2019.csv"  # invented, shaped like the 2019 UI logger (see README)
CLAIMS = STUDENT.parent / "expense_claims_2020.csv"  # invented, Action Logger with a wild clock row


def test_older_ui_logger_csv_carries_the_page_and_reads_links_as_navigation() -> None:
    b = read_rpm(OLD)
    assert not b.quarantined and b.source_id.startswith("rpm:ui_logger_2019.csv:")
    form = "https://forms.example.org/acme/form/NewRecord/formperma/Xy12"
    # Every browser row has the page it happened on, though action rows carry no url.
    chrome = sorted((s for s in b.snapshots if s.app == "Chrome"), key=lambda s: s.ts_us)
    assert all(s.url for s in chrome)
    by_line = {int(s.ref.split(":line:")[1]): s for s in b.snapshots}
    assert by_line[8].trigger == "mouseClick" and by_line[8].url == form
    # After a `link` row the next click is on the page it loaded: site time follows the URL.
    assert by_line[17].trigger == "link" and by_line[17].url == form + "/thankyou"
    assert by_line[18].url == form + "/thankyou" and by_line[22].url == form
    # `link` rows are navigation, never a click without a target.
    refs = {int(e.ref.split(":line:")[1].split(":")[0]): e for e in b.inputs}
    assert 17 not in refs and 19 not in refs
    assert b.notes["rows whose eventType 'link' is a navigation to its url (snapshot only)"] == 8
    assert refs[18].kind == "click" and refs[18].element_name == "Add another response"
    # Copies from the clipboard monitor name the cell that was selected for them.
    copies = [e for e in b.inputs if e.clipboard_op == "copy"]
    assert [(e.element_role, e.element_name, e.element_automation_id) for e in copies[:2]] == [
        ("cell", "column A", "A2"), ("cell", "column D", "D2")]
    assert len(copies) == 8 and all(e.element_role == "cell" for e in copies)
    # Semicolons, `NA` placeholders: every action row maps.
    assert Counter(e.kind for e in b.inputs) == {"click": 4 * 6, "clipboard": 16, "text": 8}


def test_one_wild_timestamp_is_an_outlier_and_does_not_stretch_the_day() -> None:
    b = read_rpm(CLAIMS)
    [q] = b.quarantined
    assert q.row == "line 43" and q.reason == "timestamp outlier: far from both neighbouring rows"
    assert q.raw == "2020-02-25T02:59:36.236Z is 60 minutes ahead of line 42 and line 44"
    stamps = [s.ts_us for s in b.snapshots] + [e.ts_us for e in b.inputs]
    assert (max(stamps) - min(stamps)) < 10 * 60 * 1_000_000  # the task took minutes, not an hour
    # copyRange is a copy of a range, named by its columns; copyRange rows name their own source.
    ranges = [e for e in b.inputs if e.element_role == "range"]
    assert len(ranges) == 4 and {(e.kind, e.clipboard_op, e.element_name) for e in ranges} == {
        ("clipboard", "copy", "columns B-E")}
    assert ranges[0].element_automation_id == "B2:E2"


def test_source_identity_hashes_the_whole_content(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    rows = [row(eventType="clickButton", target__name="ok")]
    one = write_csv(a / "log.csv", rows)
    two = write_csv(b / "log.csv", rows + [row(ts="2024-05-02T10:00:05.000Z")])
    assert read_rpm(one).source_id != read_rpm(two).source_id  # same name, different logs
    same = write_csv(tmp_path / "log.csv", rows)
    assert read_rpm(same).source_id == read_rpm(one).source_id


def test_unterminated_quote_is_quarantined_from_its_line_on(tmp_path: Path) -> None:
    lines = [",".join(HEADER)]
    lines += [f"2024-05-02T10:00:0{i}.000Z,u1,Chrome,clickButton,,,,,,,BUTTON,,ok{i}" for i in range(3)]
    lines += ['2024-05-02T10:00:05.000Z,u1,Chrome,paste,,"oops,,,,,,INPUT,text,name']
    lines += [f"2024-05-02T10:00:1{i}.000Z,u1,Chrome,clickButton,,,,,,,BUTTON,,ok{i}" for i in range(4)]
    p = tmp_path / "broken.csv"
    p.write_text("\n".join(lines) + "\n")
    b = read_rpm(p)
    assert len(b.inputs) == 3  # the rows before the bad quote land
    assert [q.row for q in b.quarantined] == [f"line {n}" for n in range(5, 10)]
    assert b.quarantined[0].reason.startswith("malformed CSV: unterminated quote")
    assert all(q.reason == "malformed CSV: inside the unterminated quote of line 5" for q in b.quarantined[1:])
    assert all(e.text is None or "2024" not in e.text for e in b.inputs)  # no swallowed rows as typed text


def test_a_field_over_the_size_limit_quarantines_its_row_not_the_file(tmp_path: Path) -> None:
    p = tmp_path / "big.csv"
    big = "x" * (11 * 1024 * 1024)
    p.write_text(",".join(HEADER) + "\n2024-05-02T10:00:00Z,u,Chrome,clickButton,,,,,,,BUTTON,,a\n"
                 f'2024-05-02T10:00:01Z,u,Chrome,paste,,"{big}"\n2024-05-02T10:00:02Z,u,Chrome,clickButton,,,,,,,BUTTON,,b\n')
    b = read_rpm(p)
    assert [(q.row, q.reason) for q in b.quarantined] == [("line 3", "field longer than 10,485,760 characters")]
    assert sorted(e.element_name or "" for e in b.inputs) == ["a", "b"]


@pytest.mark.parametrize("encoding,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
                                          ("utf-8", b"\xef\xbb\xbf")])
def test_utf16_and_utf8_with_bom_are_read(tmp_path: Path, encoding: str, bom: bytes) -> None:
    text = ",".join(HEADER) + "\n2024-05-02T10:00:00Z,u1,Excel,getCell,,,Café.xlsx,S,B7,,,,,Zoë\n"
    p = tmp_path / "unicode.csv"
    p.write_bytes(bom + text.encode(encoding))
    b = read_rpm(p)
    [s] = b.snapshots
    assert s.window == "Café.xlsx - S" and b.inputs[0].element_name == "column B"


def test_extreme_numbers_and_timestamps_are_quarantined_with_their_reason(tmp_path: Path) -> None:
    rows = [row(ts=t) for t in ("1e308", "-1e308", "99999999999999999999999999", "9999-12-31T23:59:59Z",
                                "0001-01-01T00:00:00Z", "2024-13-45T10:00:00Z", "nan", "inf")]
    rows.append(row(ts="1714644000", eventType="clickButton", target__name="fine"))  # epoch seconds
    b = read_rpm(write_csv(tmp_path / "extreme.csv", rows))
    assert [q.row for q in b.quarantined] == [f"line {n}" for n in range(2, 10)]
    assert all(q.reason == "unreadable timestamp" for q in b.quarantined)
    assert [e.element_name for e in b.inputs] == ["fine"]
