"""The schema v1 document: validation, tier 2, floor, exact evidence, visits, ledger, privacy."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import emit
from af_pipeline.compiler.compile import CompileOptions, compile_day
from af_pipeline.compiler.document import (
    InvalidDocument,
    add_inferred,
    decode_refs,
    encode_refs,
    strip_inferred,
    validate,
)
from capture.model import DayCapture, Snapshot
from capture.timeutil import parse_ts

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from day_fixture import golden_day  # noqa: E402

T0 = parse_ts("2026-03-16T08:00:00Z")
US = 1_000_000


@pytest.fixture(scope="module")
def doc():
    return compile_day(golden_day())


def test_compiled_document_validates_and_covers_the_day(doc):
    validate(doc)
    cov = doc["coverage"]
    assert cov["first_activity"] == "08:58:00" and cov["distinct_apps"] == 5
    assert [g["start"] for g in cov["gaps"]] == ["09:04:00"]
    assert cov["dual_monitor_min"] > 0
    assert cov["presence_only"]["minutes"] == 2.0  # four 30 s heartbeat rows without input
    kinds = {b["kind"] for b in doc["blind_spots"]}
    assert {"multi_monitor_double_credit", "presence_not_attention", "off_screen_work",
            "screen_size_unknown", "typed_text_excluded"} <= kinds
    prov = doc["provenance"]
    assert prov["segments"] == [{"file": "sealed/2026-03-16/snapshots.parquet", "sha256": "ab" * 32}]
    assert prov["options"] == {"min_minutes": 0.0, "include_typed_text": False, "layout": "identity"}


def test_ledger_accounts_for_every_credited_minute(doc):
    total = sum(a["minutes"] for a in doc["apps"])
    assert abs(total - doc["coverage"]["active_min"]) < 0.01 * len(doc["apps"])
    slack = next(a for a in doc["apps"] if a["app"] == "Slack")
    assert (slack["frames"], slack["interruptions"], slack["minutes"]) == (0, 1, 0.2)
    assert [a["app"] for a in doc["apps"]][:2] == ["Google Chrome", "Code"]


def test_page_counts_are_visits(doc):
    chrome = next(f for f in doc["frames"] if f["app"] == "Google Chrome")
    # six pull-request snapshots in two runs (the search detour splits them): two visits
    assert chrome["pages"] == [{"kind": "pull_request", "entity": "acme/widgets#42", "count": 2}]
    assert {d["domain"]: d["visits"] for d in doc["domains"]} == {"github.com": 2, "google.com": 1}
    one_run = [Snapshot(ref=f"t:f:{i}", ts_us=T0 + i * 10 * US, stream="m", app="Firefox",
                        url="https://github.com/acme/widgets/pull/42") for i in range(5)]
    (f,) = compile_day(DayCapture(day="2026-03-16", tz="UTC", snapshots=one_run))["frames"]
    assert f["pages"][0]["count"] == 1


def test_resolved_clicks_and_reattributed_input(doc):
    code = next(f for f in doc["frames"] if f["app"] == "Code")
    assert {(c["target"], c["resolution"]) for c in code["clicked"]} == {
        ("Run", "recorded"), ("Save", "exact"), ("Save", "tolerance"), ("bottom-right", "zone")}
    assert code["input"]["keys"] == 7  # the recorder said Slack; the snapshot says Code
    (detour,) = code["interruptions"]
    assert detour["app"] == "Slack" and detour["input"]["text"] == 1 and detour["seconds"] == 12
    assert doc["coverage"]["clicks"] == {"recorded": 1, "exact": 1, "tolerance": 1, "zone": 1, "unresolved": 1}


def test_evidence_names_exactly_each_frames_rows(doc):
    cap = golden_day()
    seen: list[str] = []
    for f in doc["frames"]:
        seen += decode_refs(f["evidence"]["snapshots"])
        for it in f.get("interruptions", []):
            seen += decode_refs(it["evidence"]["snapshots"])
    assert sorted(seen) == sorted(s.ref for s in cap.snapshots)  # every row once, nothing else
    mail = next(f for f in doc["frames"] if f["app"] == "Mail")
    # Mail's rows are interleaved with monitor 1's ids: no range may swallow those
    assert decode_refs(mail["evidence"]["snapshots"]) == sorted(
        s.ref for s in cap.snapshots if s.stream == "monitor_2")


@given(st.lists(st.one_of(
    st.integers(0, 60).map(lambda i: f"src:frames:{i}"),
    st.integers(0, 9).map(lambda i: f"other:{i}"),
    st.text(max_size=6),
), max_size=40))
def test_evidence_encoding_is_exact(refs):
    assert decode_refs(encode_refs(refs)) == sorted(set(refs))


def test_floor_omits_reports_and_keeps_ids():
    full = compile_day(golden_day())
    floored = compile_day(golden_day(), CompileOptions(min_minutes=2.0))
    validate(floored)
    kept = {f["id"]: f for f in floored["frames"]}
    assert kept and all(f["active_min"] >= 2.0 for f in kept.values())
    assert all(full_f == kept[full_f["id"]] for full_f in full["frames"] if full_f["id"] in kept)
    dropped = [f for f in full["frames"] if f["id"] not in kept]
    assert floored["omitted"]["frames"] == len(dropped) > 0
    assert floored["omitted"]["minutes"] == pytest.approx(sum(f["active_min"] for f in dropped), abs=0.02)
    assert floored["apps"] == full["apps"]  # the ledger never loses time to the floor
    with pytest.raises(ValueError):
        compile_day(golden_day(), CompileOptions(min_minutes=-1))


def _item(**kw):
    item = {"label": "code review", "confidence": "medium", "evidence": {"frames": ["f-0001"]}}
    item.update(kw)
    return item


def test_inferred_blocks_must_be_namespaced_tagged_and_evidenced(doc):
    with_tier2 = add_inferred(doc, "org.example.tasks", "tasker 1.0", [_item()])
    validate(with_tier2)
    assert strip_inferred(with_tier2) == strip_inferred(doc)  # the measured tier, categories gone too
    validate(strip_inferred(with_tier2))
    bad = [
        ("tasks", [_item()]),  # not namespaced
        ("org.example", [_item(confidence="certain")]),
        ("org.example", [_item(evidence={})]),
        ("org.example", [{"label": "x", "confidence": "high"}]),
        ("org.example", [_item(evidence={"frames": ["f-9999"]})]),  # cites a frame that is not there
    ]
    for ns, items in bad:
        with pytest.raises(InvalidDocument):
            add_inferred(doc, ns, "tasker", items)


def test_schema_rejects_unknown_top_level_fields(doc):
    broken = copy.deepcopy(doc)
    broken["intent"] = "prospecting"  # interpretation outside the inferred block
    with pytest.raises(InvalidDocument, match="intent"):
        validate(broken)


def test_typed_text_needs_both_opt_ins():
    secret = "hello world"
    plain = compile_day(golden_day())
    assert secret not in emit.canonical_bytes(plain).decode()
    for fmt in emit.FORMATS:  # emit opt-in alone cannot reveal what the build left out
        assert secret not in emit.render(plain, fmt, include_typed_text=True)
    opted = compile_day(golden_day(), CompileOptions(include_typed_text=True))
    validate(opted)
    for fmt in emit.FORMATS:  # build opt-in alone: nothing leaves without the emit opt-in
        assert secret not in emit.render(opted, fmt)
    assert secret in emit.render(opted, "json", include_typed_text=True)
    assert secret in emit.render(opted, "context", include_typed_text=True)
    code = next(f for f in opted["frames"] if f["app"] == "Code")
    assert code["typed_text"].startswith("fix qa[Return]hello world")
    assert code["interruptions"][0]["typed_text"] == "lgtm"


def test_layout_map_applies_to_typed_text():
    opted = compile_day(golden_day(), CompileOptions(include_typed_text=True, layout="azerty"))
    code = next(f for f in opted["frames"] if f["app"] == "Code")
    assert code["typed_text"].startswith("fix aq[Return]hello zorld")  # q <-> a, w -> z
    assert opted["provenance"]["options"]["layout"] == "azerty"


def test_timeline_ledger_credits_each_instant_once(doc):
    # golden day: Mail on monitor 2 (08:58:20-08:59:40) beside Code and a Slack detour on
    # monitor 1. On one timeline each row earns the time to the next row on either monitor:
    # Code 131 s, Mail 43 s, Slack 6 s (worked out by hand from tests/golden/day_fixture.py).
    tl = {a["app"]: a["timeline_minutes"] for a in doc["apps"]}
    pm = {a["app"]: a["minutes"] for a in doc["apps"]}
    assert tl == {"Google Chrome": 3.0, "Code": round(131 / 60, 2), "Terminal": 1.67,
                  "Mail": round(43 / 60, 2), "Slack": 0.1}
    assert (pm["Code"], pm["Mail"], pm["Slack"]) == (2.8, 1.33, 0.2)  # per-monitor tenure unchanged
    assert doc["coverage"]["timeline_min"] == 7.67 and doc["coverage"]["active_min"] == 9.0
    assert {d["domain"]: d["timeline_minutes"] for d in doc["domains"]} == {"github.com": 2.75, "google.com": 0.25}


apps = st.sampled_from(["Code", "Slack", "Google Chrome", "Mail"])
urls = st.none() | st.sampled_from(["https://github.com/a/b", "https://www.bbc.co.uk/news", "not a url",
                                    "https://mail.google.com/mail/u/0/#inbox"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), apps, urls, st.sampled_from(["m1", "m2"]), st.booleans()),
                min_size=0, max_size=40), st.sampled_from([0.0, 0.5, 3.0]))
def test_every_compiled_document_validates(spec, floor):
    rows, t = [], T0
    for i, (dt, app, url, stream, hb) in enumerate(spec):
        t += dt * US
        rows.append(Snapshot(ref=f"p:frames:{i}", ts_us=t, stream=stream, app=app, url=url, heartbeat=hb))
    d = compile_day(DayCapture(day="2026-03-16", tz="America/New_York", snapshots=rows),
                    CompileOptions(min_minutes=floor))
    validate(d)
    json.dumps(d, allow_nan=False)


def _ledgers(d: dict) -> tuple[dict, dict, dict, dict]:
    return ({a["app"]: a["minutes"] for a in d["apps"]}, {a["app"]: a["timeline_minutes"] for a in d["apps"]},
            {x["domain"]: x["minutes"] for x in d["domains"]}, {x["domain"]: x["timeline_minutes"] for x in d["domains"]})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 400), apps, urls, st.sampled_from(["m1", "m2", "m3"])),
                min_size=1, max_size=50))
def test_timeline_ledger_is_the_ledger_of_all_monitors_seen_as_one(spec):
    rows, t = [], T0
    for i, (dt, app, url, stream) in enumerate(spec):
        t += dt * US  # distinct times: no tie for the (time, stream, ref) order to break
        rows.append(Snapshot(ref=f"p:frames:{i}", ts_us=t, stream=stream, app=app, url=url))
    multi = compile_day(DayCapture(day="2026-03-16", tz="UTC", snapshots=rows))
    one = compile_day(DayCapture(day="2026-03-16", tz="UTC", snapshots=[
        Snapshot(ref=r.ref, ts_us=r.ts_us, stream="all", app=r.app, url=r.url) for r in rows]))
    pm1, tl1, dpm1, dtl1 = _ledgers(one)
    pm, tl, dpm, dtl = _ledgers(multi)
    assert tl1 == pm1 and dtl1 == dpm1  # one stream: the two ledgers are the same numbers
    assert tl == pm1 and dtl == dpm1  # the timeline ledger is the one-stream ledger of the same rows
    assert multi["coverage"]["timeline_min"] == one["coverage"]["active_min"]
    assert abs(sum(tl.values()) - multi["coverage"]["timeline_min"]) <= 0.005 * len(tl) + 1e-9
    # the ledger is listed by timeline time, so its first app is the one-timeline dominant app
    assert [a["timeline_minutes"] for a in multi["apps"]] == sorted(tl.values(), reverse=True)


@given(st.lists(st.one_of(st.integers(0, 300).map(str), st.just("007"), st.just("")), min_size=1, max_size=30),
       st.sampled_from(["src:frames:", "", "x1:", "a-"]))
def test_shared_prefix_fast_path_matches_encode_refs(tails, prefix):
    from af_pipeline.compiler.document import common_ref_ids, id_runs

    refs = [prefix + t for t in tails]
    shared = common_ref_ids(refs)
    if shared is not None:
        assert [{"prefix": shared[0], "ids": id_runs(shared[1])}] == encode_refs(refs)


_ref_tails = st.one_of(st.integers(0, 10**6).map(str), st.integers(0, 10**40).map(str),
                       st.sampled_from(["", "0", "00", "007", "999999999999999999", "1000000000000000000", "12a",
                                        "\u0663", "1\u0663", " 1", "+1", "-1", "\uff11", "1.5"]))
_ref_heads = st.one_of(st.sampled_from(["", "src:frames:", "x1:", "a-", "\u00e9:", "\U0001f600:", "9", "p:1"]),
                       st.text(max_size=6))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_ref_heads, _ref_tails).map("".join), max_size=25))
def test_the_c_ref_ids_are_the_python_definitions(refs):
    """common_ref_ids in C (_speedups.c) gives what common_ref_ids_py does: prefixes of any
    width of unicode, ids past int64, leading zeros, empty tails and non-ASCII digits."""
    from af_pipeline.compiler import document

    if document._c is None:
        pytest.skip("the C module was not built (no C compiler)")
    assert document._c.ref_ids(refs) == document.common_ref_ids_py(refs)


def test_ref_ids_of_refs_the_c_module_does_not_take_are_pythons():
    from af_pipeline.compiler.document import common_ref_ids

    class Ref(str):
        pass

    assert common_ref_ids([Ref("a:1"), "a:2"]) == ("a:", [1, 2])
    assert common_ref_ids(("a:1", "a:3")) == ("a:", [1, 3])  # a tuple, not a list


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(st.integers(0, 40), min_size=1, max_size=40),
                 st.lists(st.integers(2**62 - 40, 2**62 - 1), min_size=1, max_size=40)),  # int64's last ids
       st.lists(st.lists(st.integers(0, 39), min_size=1, max_size=12), max_size=8))
def test_id_runs_of_many_groups_at_once_are_each_groups_id_runs(ids, groups):
    """The day's frames and interruptions get their evidence in one pass (in C where the package
    was built with a compiler, else numpy): the same text as id_runs of each group alone
    (repeated ids, gaps, single ids, one run)."""
    import numpy as np

    from af_pipeline.compiler import document
    from af_pipeline.compiler.document import id_runs, id_runs_by_group, id_runs_of_groups

    groups = [[p % len(ids) for p in g] for g in groups]
    expected = [id_runs([ids[p] for p in g]) for g in groups]
    assert id_runs_by_group(np.asarray(ids, dtype=np.int64), groups) == expected
    assert id_runs_of_groups(ids, groups) == expected
    if document._c is not None:
        assert document._c.id_runs(ids, groups) == expected


def test_ids_past_int64_take_each_groups_own_runs():
    from af_pipeline.compiler.document import id_runs_of_groups

    assert id_runs_of_groups([1, 2**62, 2**70], [[0], [1, 2]]) is None  # evidence() then encodes each group


@pytest.mark.parametrize("base", [0, 2**70])  # ids past int64 take the per-frame path
def test_frame_evidence_names_its_rows(base):
    from af_pipeline.compiler.document import decode_refs

    t0 = parse_ts("2026-03-16T08:00:00Z")
    apps = ["Code", "Code", "Mail", "Code", "Code", "Mail", "Mail", "Code"]
    rows = [Snapshot(ref=f"r:frames:{base + 3 * i}", ts_us=t0 + i * 20 * US, stream=f"m{i % 2}", app=a)
            for i, a in enumerate(apps * 3)]
    d = compile_day(DayCapture(day="2026-03-16", tz="UTC", snapshots=rows), CompileOptions(min_minutes=0))
    named = [r for f in d["frames"] for r in decode_refs(f["evidence"]["snapshots"])]
    named += [r for f in d["frames"] for it in f.get("interruptions", []) for r in decode_refs(it["evidence"]["snapshots"])]
    assert sorted(named) == sorted(r.ref for r in rows)


def test_dst_day_uses_local_wall_clock():
    # 2026-03-29 in Paris: 02:00 CET jumps to 03:00 CEST (00:59:50Z -> 01:00:10Z straddles it)
    rows = [Snapshot(ref=f"d:frames:{i}", ts_us=parse_ts("2026-03-29T00:59:50Z") + i * 10 * US, stream="m",
                     app="Code") for i in range(3)]
    d = compile_day(DayCapture(day="2026-03-29", tz="Europe/Paris", snapshots=rows))
    assert d["window"] == {"start": "2026-03-29T00:00:00+01:00", "end": "2026-03-30T00:00:00+02:00"}
    (f,) = d["frames"]
    assert (f["start"], f["end"]) == ("01:59:50", "03:00:10")
    assert f["active_min"] == round(20 / 60, 2)


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False))
def test_row_order_never_changes_the_bytes(rnd):
    from af_pipeline.compiler import emit
    from af_pipeline.compiler.enrich import enrich

    base = golden_day()
    shuffled = golden_day()
    for rows in (shuffled.snapshots, shuffled.inputs, shuffled.elements, shuffled.streams):
        rnd.shuffle(rows)  # unsorted elements take the grouping path, not the binary search
    assert emit.canonical_bytes(compile_day(shuffled)) == emit.canonical_bytes(compile_day(base))
    assert enrich(shuffled, "azerty") == enrich(base, "azerty")


def test_compile_restores_the_garbage_collector_as_it_found_it():
    import gc

    from capture.errors import UserError

    assert gc.isenabled()
    compile_day(golden_day())
    assert gc.isenabled()
    with pytest.raises(UserError):
        compile_day(golden_day(), CompileOptions(layout="no-such-layout"))
    assert gc.isenabled()  # also when the compile fails
    gc.disable()
    try:
        compile_day(golden_day())
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.sampled_from(["m1", "m2"]),
                          st.sampled_from([None, "", "https://x.com/a", "https://y.org/", "https://x.com/b"])),
                min_size=1, max_size=40))
def test_domain_minutes_and_visits_are_the_row_by_row_ledger(rows):
    """The ledger's domains (bincounts over site codes) against its definition row by row: a
    visit is a run of adjacent rows of one stream on the domain, ended by a session break."""
    from af_pipeline.compiler import compile as C

    t0 = parse_ts("2026-03-16T08:00:00Z")
    snaps = [Snapshot(ref=f"r:frames:{i}", ts_us=t0 + (t * 7 if t <= 40 else t * 400) * US, stream=s, app="Web", url=u)
             for i, (t, s, u) in enumerate(rows)]
    cap = DayCapture(day="2026-03-16", tz="UTC", snapshots=snaps)
    framing = C.frame_day(cap)
    day_rows, tl = framing.rows, framing.timeline
    ledger = C._ledger(day_rows, tl, framing.slots, C.PAPER_RULES)
    us: dict[str, int] = {}
    tl_us: dict[str, int] = {}
    visits: dict[str, int] = {}
    sites, prev_row, brk = day_rows.sites, tl.prev_a.tolist(), tl.brk_a.tolist()
    for p, site in enumerate(sites):
        if site is None:
            continue
        us[site] = us.get(site, 0) + tl.credit[p]
        tl_us[site] = tl_us.get(site, 0) + ledger.tl_credit[p]
        prev = prev_row[p]
        if prev < 0 or sites[prev] != site or brk[prev]:
            visits[site] = visits.get(site, 0) + 1
    assert (ledger.domain_us, ledger.domain_tl, ledger.domain_visits) == (us, tl_us, visits)
