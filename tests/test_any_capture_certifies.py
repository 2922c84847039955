"""Property: any capture the importers accept builds, publishes every day and certifies.

Generated per source kind as the real tools write them (ActivityWatch exports with long measured
spans, afk and web buckets, overlapping window buckets of one host, a later export that amends
sealed days, presence-only captures; RPM UI logs, which carry input and no measured spans),
landed with `af import`, then every day built by the warehouse steps the assets and the
certification rebuild share (day_work.build_day). For each day: no quality rule is broken (the
day is published), Great Expectations agrees, a second build from the log into a fresh warehouse
holds the same rows and publishes the same bytes, and the log stays append-only. The same path
through Dagster, `af build` and `af certify` is tests/test_real_captures_pipeline.py.
"""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from af_pipeline.interfaces.cli import main
from af_pipeline.warehouse import day_work, publish, store
from af_pipeline.warehouse import quality as rules
from capture.home import Home
from capture.log import EventLog
from certification import appendonly
from checks import quality

START = datetime(2026, 3, 15, 6, 0, tzinfo=UTC)
APPS = ["Code", "firefox", "Gnome-terminal", "explorer.exe", "WINWORD.EXE", "Zenity"]

# A span: seconds from START (two days) and a length from an instant to a whole working morning.
spans = st.tuples(st.integers(0, 2 * 86_400), st.one_of(st.just(0), st.integers(1, 59), st.integers(60, 600),
                                                        st.integers(600, 4 * 3600)))


def _event(offset_s: int, secs: int, data: dict) -> dict:
    return {"timestamp": (START + timedelta(seconds=offset_s)).isoformat(), "duration": float(secs), "data": data}


def _bucket(bid: str, kind: str, host: str, events: list[dict]) -> dict:
    return {"id": bid, "created": START.isoformat(), "name": None, "type": kind, "client": bid.split("_")[0],
            "hostname": host, "events": sorted(events, key=lambda e: e["timestamp"], reverse=True)}


@st.composite
def aw_exports(draw) -> tuple[dict, dict]:
    """(an earlier export, a later one holding it and more): one host, one or two window buckets
    (overlapping), an afk bucket, maybe a browser bucket; or presence only."""
    host = "desk"
    presence_only = draw(st.booleans()) and draw(st.booleans())
    n_buckets = 0 if presence_only else draw(st.integers(1, 2))
    later: dict = {}
    earlier: dict = {}
    for b in range(n_buckets):
        bid = f"aw-watcher-window_{host}" + ("" if b == 0 else ".local")
        events = [_event(o, s, {"app": draw(st.sampled_from(APPS)), "title": f"t{i}"})
                  for i, (o, s) in enumerate(draw(st.lists(spans, min_size=1, max_size=8)))]
        cut = draw(st.integers(0, len(events)))
        later[bid] = _bucket(bid, "currentwindow", host, events)
        earlier[bid] = _bucket(bid, "currentwindow", host, events[:cut])
    afk = [_event(o, s, {"status": draw(st.sampled_from(["afk", "not-afk"]))})
           for o, s in draw(st.lists(spans, min_size=1 if presence_only else 0, max_size=5))]
    later[f"aw-watcher-afk_{host}"] = _bucket(f"aw-watcher-afk_{host}", "afkstatus", host, afk)
    earlier[f"aw-watcher-afk_{host}"] = _bucket(f"aw-watcher-afk_{host}", "afkstatus", host, afk)
    if not presence_only and draw(st.booleans()):
        tabs = [_event(o, s, {"url": f"https://example.org/p/{i}", "title": f"p{i}", "audible": False,
                              "incognito": False}) for i, (o, s) in enumerate(draw(st.lists(spans, max_size=4)))]
        later["aw-watcher-web-firefox"] = _bucket("aw-watcher-web-firefox", "web.tab.current", "unknown", tabs)
    return {"buckets": earlier}, {"buckets": later}


RPM_HEADER = ["timeStamp", "userID", "targetApp", "eventType", "url", "content", "target.id", "target.name",
              "target.value", "target.innerText"]


def _ms(t: datetime) -> str:
    return f"{t.microsecond // 1000:03d}"


# Every form the public loggers write (the import runs with --tz UTC, so local time is UTC here).
STAMP_FORMS = {
    "extension ISO Z": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.") + _ms(t) + "Z",
    "Action Logger colon ms": lambda t: t.strftime("%Y-%m-%d %H:%M:%S:") + _ms(t),
    "spreadsheet comma": lambda t: t.strftime("%Y-%m-%d %H:%M:%S,") + _ms(t),
    "day/month/year": lambda t: t.strftime("%d/%m/%Y %H:%M:%S"),
    "epoch ms": lambda t: str(int(t.timestamp() * 1000)),
}


@st.composite
def rpm_logs(draw) -> list[dict[str, str]]:
    """An RPM UI log in one timestamp form: clicks and edits in a browser and in Excel."""
    rows = []
    form = draw(st.sampled_from(sorted(STAMP_FORMS)))  # one logger wrote the whole file
    # a logger appends rows as they happen (rows out of file order are the outlier rule's business)
    for i, offset in enumerate(sorted(draw(st.lists(st.integers(0, 2 * 86_400), min_size=1, max_size=25)))):
        app = draw(st.sampled_from(["Chrome", "Excel"]))
        event = draw(st.sampled_from(["clickButton", "editField", "copy", "paste", "getCell", "changeField"]))
        ts = STAMP_FORMS[form](START + timedelta(seconds=offset, milliseconds=draw(st.integers(0, 999))))
        rows.append({"timeStamp": ts, "userID": "u1", "targetApp": app, "eventType": event,
                     "url": "https://crm.example.org/form" if app == "Chrome" else "", "content": "",
                     "target.id": f"f{i % 4}", "target.name": f"field{i % 4}", "target.value": "",
                     "target.innerText": ""})
    return rows


def _import(home: Path, kind: str, path: Path) -> int:
    return _import_json(home, kind, path)[0]


def _import_json(home: Path, kind: str, path: Path) -> tuple[int, dict]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["import", kind, str(path), "--home", str(home), "--tz", "UTC", "--quiet", "--json"])
    return code, json.loads(out.getvalue() or "{}")


def _build_all(home: Home, warehouse: Path, published: Path) -> list[str]:
    log = EventLog(home)
    days = sorted(d.day for d in log.days())
    con = duckdb.connect(str(warehouse))
    try:
        for day in days:
            day_work.build_day(con, log, day, published, False, "property")
        assert rules.failing_days(con, days) == {}, rules.failing_days(con, days)
        for spec in (rules.RAW, rules.FRAMES):  # GX, the judge of `af certify`, agrees
            frame = con.execute(rules.select(spec, days, con)).df()
            found = quality.validate_days(spec.check, frame, quality.expectations(spec), days)
            assert not any(found.values()), found
        digests = store.digests(con, days)
    finally:
        con.close()
    return [json.dumps(digests, sort_keys=True), *days]


def _certifies(home: Home, tmp: Path) -> None:
    """Every day published; a rebuild from the log equal in rows and bytes; append-only holds."""
    first, *days = _build_all(home, tmp / "a.duckdb", home.published_dir)
    assert days
    again, *_ = _build_all(home, tmp / "b.duckdb", tmp / "fresh")
    assert first == again  # rebuild equals incremental, table by table
    log = EventLog(home)
    for day in days:
        ours, theirs = publish.read_manifest(home.published_dir, day), publish.read_manifest(tmp / "fresh", day)
        assert ours is not None, f"{day} was not published"
        assert theirs is not None and ours["files"] == theirs["files"]  # byte-identical
        assert appendonly.check_day(log, home.published_dir, day) == []


SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])


@SETTINGS
@given(aw_exports())
def test_any_activitywatch_export_the_importer_accepts_certifies(tmp_path_factory, exports):
    earlier, later = exports
    tmp = tmp_path_factory.mktemp("aw")
    home = tmp / "home"
    codes = []
    for name, doc in (("earlier.json", earlier), ("later.json", later)):  # the later export amends sealed days
        (tmp / name).write_text(json.dumps(doc))
        codes.append(_import(home, "activitywatch", tmp / name))
    assume(Home(home).root.exists() and EventLog(Home(home)).days())
    assert set(codes) <= {0, 2}
    _certifies(Home(home), tmp)


@SETTINGS
@given(rpm_logs())
def test_any_rpm_log_the_importer_accepts_certifies(tmp_path_factory, rows):
    tmp = tmp_path_factory.mktemp("rpm")
    path = tmp / "log.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=RPM_HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    home = tmp / "home"
    code, summary = _import_json(home, "rpm", path)
    assert code == 0 and summary["quarantined"] == 0, summary["quarantine_reasons"]
    assert summary["landed"]["snapshots"] == len(rows)  # every form is read, none left behind
    _certifies(Home(home), tmp)
