"""The RPM importer on arbitrary input: it lands rows or says why in one sentence, never crashes."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture.errors import UserError
from capture.importers.rpm import read_rpm

HEADER = ["timeStamp", "userID", "targetApp", "eventType", "url", "content", "target.workbookName",
          "target.sheetName", "target.id", "target.tagName", "target.type", "target.name", "target.value"]
EVENTS = ["getCell", "copy", "copyRange", "paste", "editField", "clickTextField", "link", "tab activated",
          "mouseClick", "getRange", "", "navigate_to"]
STAMPS = st.one_of(
    st.datetimes().map(lambda d: d.isoformat() + "Z"),
    st.sampled_from(["1e308", "-1e308", "nan", "inf", "99999999999999999999999", "0", "2024-02-30T10:00:00Z",
                     "9999-12-31T23:59:59Z", "", "x"]),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
FIELD = st.one_of(st.text(max_size=30), st.sampled_from(["A2", "B2:E9", "$C$7", "INPUT", "password", "NA", '"', "\n"]))
ROW = st.tuples(STAMPS, st.sampled_from(["", "u1", "u2"]), st.sampled_from(["Excel", "Chrome", "OS-Clipboard", ""]),
                st.sampled_from(EVENTS), st.lists(FIELD, min_size=0, max_size=len(HEADER) + 2))
QUIET = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _check(p: Path) -> None:
    try:
        b = read_rpm(p)
    except UserError as exc:
        assert str(exc).strip()  # a sentence naming the file and the reason
        return
    # Whatever lands is accounted for: every row is an event, a snapshot, a quarantine or a note.
    assert b.snapshots or b.inputs
    assert all(q.source == str(p) and q.row.startswith("line ") for q in b.quarantined)


@QUIET
@given(data=st.binary(max_size=600))
def test_arbitrary_bytes_raise_only_user_errors(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "any.csv"
    p.write_bytes(data)
    _check(p)


@QUIET
@given(rows=st.lists(ROW, max_size=12), delimiter=st.sampled_from([",", ";"]),
       prefix=st.sampled_from([b"", b"\xef\xbb\xbf"]), utf16=st.booleans(), tail=st.sampled_from(["", '"', '\n"x']))
def test_arbitrary_csv_rows_raise_only_user_errors(tmp_path: Path, rows, delimiter: str, prefix: bytes,  # type: ignore[no-untyped-def]
                                                    utf16: bool, tail: str) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    w.writerow(HEADER)
    for ts, user, app, event, rest in rows:
        w.writerow([ts, user, app, event, *rest])
    text = buf.getvalue() + tail
    p = tmp_path / "rows.csv"
    p.write_bytes(b"\xff\xfe" + text.encode("utf-16-le", "surrogatepass") if utf16
                  else prefix + text.encode("utf-8", "surrogatepass"))
    _check(p)
