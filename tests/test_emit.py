"""Emitters: canonical JSON, YAML round trip, the context block's budget and answers, determinism."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import emit, tokens
from af_pipeline.compiler.compile import CompileOptions, compile_day
from capture.model import DayCapture, InputEvent, Snapshot

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent / "golden"))
from day_fixture import golden_day  # noqa: E402

T0 = 1_773_648_000_000_000  # 2026-03-16T08:00:00Z
US = 1_000_000


@pytest.fixture(scope="module")
def doc():
    return compile_day(golden_day())


def test_canonical_bytes_leave_out_generated_at_only(doc):
    stamped = dict(doc, generated_at="2026-03-17T10:00:00Z")
    assert emit.canonical_bytes(stamped) == emit.canonical_bytes(doc)
    assert emit.canonical_bytes(doc) == emit.to_json(doc).encode("utf-8")
    text = emit.to_json(stamped)
    assert '"generated_at":"2026-03-17T10:00:00Z"' in text and text.endswith("}\n")
    assert json.loads(text) == stamped
    changed = dict(doc, day="2026-03-17")
    assert emit.canonical_bytes(changed) != emit.canonical_bytes(doc)


json_values = st.recursive(
    st.none() | st.booleans() | st.text(max_size=8)
    | st.integers(min_value=-(2**70), max_value=2**70)  # past 64 bits orjson refuses: the slow path
    | st.floats(allow_nan=False, allow_infinity=False)  # tiny and huge magnitudes included
    | st.sampled_from([1e-05, -3.2e-07, 5e-05, 1e16, 0.01, -0.0]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=5), st.sampled_from(["", "\ud800", "0.00001", "a\u202eb"]))
def test_document_json_is_canonical_json_for_any_value(doc, odd):
    # to_json's fast path (orjson) gives canonical_json's text, or falls back to it: for any
    # value, tiny floats, big integers and lone surrogates included (bidi controls escaped)
    doc = dict(doc, note=odd) if odd else doc
    assert emit.to_json(doc) == emit.escape_bidi(json.dumps(doc, sort_keys=True, separators=(",", ":"),
                                                            ensure_ascii=False, allow_nan=False) + "\n")


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from([b"0", b"1", b"9", b".", b"e", b"-", b":", b",", b"[", b'"', b"0.0000", b"e-", b"x", b"\xc3\xa9"]),
                max_size=30).map(b"".join))
def test_the_c_tiny_number_check_is_emits(raw):
    """The C check of orjson's text (_speedups.c) answers as emit._tiny_number does."""
    if emit._c is None:
        pytest.skip("the C module was not built (no C compiler)")
    assert emit._c.tiny_number(raw) is emit._tiny_number(raw)


# -- the Markdown frames table in C (_speedups.md_frames) against emit.md_frame_rows -------------

_MD_SAMPLES = ["Button 12", "  static text #3 ", "StaticText", "list item", "LISTITEM#", "Paragraph\t7", "row#",
               "rows", "div 1 2", "\u017fection", "\u212aelvin", "a|b", 'say "hi"', "x" * 70, "\u00e9" * 45,
               "\u202e evil", "tab\there", "\x1cfield\x1f", "", " ", "Cell\u00a012",
               "\x00\x1f\x20\x7e\x7f\x9f\xa0 \u2029\u202a\u202e\u202f\u2065\u2066\u2069\u206a"]  # each edge
_md_texts = st.one_of(st.text(alphabet=st.characters(exclude_categories=()), max_size=70),  # controls, surrogates
                      st.sampled_from(_MD_SAMPLES))
_md_ints = st.one_of(st.integers(0, 3), st.integers(-5, 10**20))
_md_frames = st.lists(st.fixed_dictionaries(
    {"id": st.sampled_from(["f-0001", "f-0120"]), "start": st.just("09:00:00"), "end": st.just("09:12:57"),
     "app": _md_texts, "active_min": st.floats(allow_nan=False, min_value=-1e6, max_value=1e6),
     "input": st.fixed_dictionaries({"keys": _md_ints, "clicks": _md_ints},
                                    optional={k: _md_ints for k in ("text", "scrolls", "copies", "pastes")})},
    optional={
        "site": _md_texts, "input_recorded": st.booleans(), "typed_text": _md_texts,
        "windows": st.lists(st.fixed_dictionaries({}, optional={"title": _md_texts}), max_size=2),
        "pages": st.lists(st.fixed_dictionaries({"kind": _md_texts, "count": _md_ints}, optional={"entity": _md_texts}),
                          max_size=10),
        "clicked": st.lists(st.fixed_dictionaries(
            {"target": _md_texts, "resolution": st.sampled_from(["exact", "tolerance", "zone", "recorded"]),
             "count": _md_ints}, optional={"role": _md_texts}), max_size=6),
        "interruptions": st.lists(st.fixed_dictionaries({"app": _md_texts, "seconds": _md_ints},
                                                        optional={"site": _md_texts}), max_size=4)}), max_size=4)


@settings(max_examples=400, deadline=None)
@given(_md_frames, st.booleans())
def test_the_c_markdown_frame_rows_are_emits(frames, typed):
    """Every piece of a row: cells cut at 40 or 60 characters, quotes, pipes, control and
    bidi characters, whitespace of every kind, generic click targets in ASCII and beyond."""
    if emit._c is None:
        pytest.skip("the C module was not built (no C compiler)")
    assert emit._c.md_frames(frames, typed, emit._telling) == emit.md_frame_rows(frames, typed)


@pytest.mark.parametrize("text", _MD_SAMPLES)
def test_the_c_markdown_frame_rows_show_each_text_as_emit_does(text):
    if emit._c is None:
        pytest.skip("the C module was not built (no C compiler)")
    frames = [{"id": "f-0001", "start": "09:00:00", "end": "09:10:00", "app": text, "site": text, "active_min": 1.5,
               "input": {"keys": 1, "clicks": 2, "text": 3}, "windows": [{"title": text}], "typed_text": text,
               "pages": [{"kind": "issue", "count": 2, "entity": text}],
               "clicked": [{"target": text, "resolution": "exact", "count": 1}, {"target": "OK", "resolution": "zone", "count": 1}],
               "interruptions": [{"app": text, "seconds": 4, "site": text}]}]
    assert emit._c.md_frames(frames, True, emit._telling) == emit.md_frame_rows(frames, True)


def test_markdown_of_frames_the_c_module_does_not_take_is_emits(doc):
    frames = [dict(f, active_min=int(f["active_min"])) for f in doc["frames"]]  # ints, not floats
    frames[-1]["pages"] = ({"kind": "search", "count": 2},)  # a tuple, not a list
    doc = dict(doc, frames=frames)
    rows = emit.md_frame_rows(frames, False)
    assert rows[0].split(" | ")[4] == f"{frames[0]['active_min']}.00"
    assert emit.to_markdown(doc).count("\n| f-") == len(rows) and all(r in emit.to_markdown(doc) for r in rows)


def test_a_floor_that_is_not_a_finite_number_is_refused():
    # a NaN floor would reach the document's options, and a document's floats are all finite
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="finite number"):
            compile_day(golden_day(), CompileOptions(min_minutes=bad))


def test_yaml_reads_back_as_the_document(doc):
    stamped = dict(doc, generated_at="2026-03-17T10:00:00Z")
    assert yaml.safe_load(emit.to_yaml(stamped)) == stamped


odd_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12) | st.sampled_from(
    ["yes", "No", "null", "~", "1.5", "10:00", "- x", "a: b", "#c", "x #y", "'q'", '"', "\x85", "\u2028", " t",
     "t ", "@x", "%x", "!x", "&a", "*a", "?", "{}", "[]", "0x1F", "1e3", ".inf", "2026-03-16", "=", "<<", "\ufeff"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(odd_text, odd_text), min_size=1, max_size=6))
def test_yaml_round_trips_any_app_and_window_text(pairs):
    rows = [Snapshot(ref=f"y:frames:{i}", ts_us=T0 + i * 20 * US, stream="m1", app=a, window=w)
            for i, (a, w) in enumerate(pairs)]
    d = compile_day(DayCapture(day="2026-03-16", tz="UTC", snapshots=rows))
    assert yaml.safe_load(emit.to_yaml(d)) == d
    emit.to_markdown(d)


def test_markdown_has_the_ledger_and_every_frame(doc):
    md = emit.to_markdown(doc)
    assert md.startswith("# Activity on 2026-03-16 (Europe/Paris)\n")
    for a in doc["apps"]:
        assert f"| {a['app']} | {a['minutes']:.1f} |" in md
    for f in doc["frames"]:
        assert f"| {f['id']} |" in md


def parse_block(text: str) -> dict:
    """A block-only reader written from docs/context-block.md alone."""
    lines = text.splitlines()
    assert lines[0] == "AF-CONTEXT v1"
    out: dict = {"apps": [], "domains": []}
    section = None
    for line in lines[1:]:
        if line.startswith("summary: "):
            fields = dict(part.strip().split(" ", 1) for part in line[len("summary: "):].split(" | "))
            out["start"], out["app_count"] = fields["start"], int(fields["apps"])
        elif line.startswith(("apps:", "domains:", "gaps:", "frames:", "blind spots:", "omitted:")):
            section = line.split(":", 1)[0]
        elif section == "apps":
            name, per_monitor, timeline, _frames = line.split(" | ")
            out["apps"].append((name, float(per_monitor), float(timeline)))
        elif section == "domains":
            out["domains"].append(line.split(" | ")[0])
    return out


def busy_day(apps: int = 30, domains: int = 60, rows: int = 2800) -> DayCapture:
    snaps, inputs = [], []
    for i in range(rows):
        app = f"App {i % apps}" if i % 3 else "Firefox"
        url = f"https://site{(i // 3) % domains}.example.com/page/{i % 7}" if app == "Firefox" else None
        snaps.append(Snapshot(ref=f"busy:frames:{i}", ts_us=T0 + i * 12 * US, stream=f"monitor_{1 + i % 2}",
                              app=app, window=f"{app} window {i % 5}", url=url, heartbeat=i % 11 == 0))
        for k in range(3):
            inputs.append(InputEvent(ref=f"busy:ui:{i}:{k}", ts_us=T0 + i * 12 * US + k * US,
                                     kind=("key", "click", "scroll")[k], stream=f"monitor_{1 + i % 2}", x=10, y=10))
    return DayCapture(day="2026-03-16", tz="Europe/Paris", snapshots=snaps, inputs=inputs)


def test_block_keeps_ledger_domains_and_start_within_budget():
    cap = busy_day()
    d = compile_day(cap)
    for budget in (400, 1500, 4000):
        block = emit.context_block(d, budget)
        parsed = parse_block(block)
        assert [a[0] for a in parsed["apps"]] == [a["app"] for a in d["apps"]]  # every app, ranked
        assert parsed["domains"] == [x["domain"] for x in d["domains"]]  # every visited domain
        assert parsed["app_count"] == len(d["apps"]) and parsed["start"] == d["coverage"]["first_activity"]
        assert tokens.count(block) <= budget or budget == 400  # the mandatory part alone may not fit 400
        # both minute columns, first the app with the most time on the one timeline
        top = max(d["apps"], key=lambda a: a["timeline_minutes"])
        assert parsed["apps"][0] == (top["app"], round(top["minutes"], 1), round(top["timeline_minutes"], 1))
        assert all(tl < pm for _a, pm, tl in parsed["apps"])  # monitors take turns every 12 s: 24 s per monitor
    small, large = emit.context_block(d, 1500), emit.context_block(d, 4000)
    assert small.count("\nf-") < large.count("\nf-")  # frames are what the budget trades away
    assert "frames" in small.splitlines()[-1] and "not shown" in small.splitlines()[-1]


def test_block_counted_by_its_lines_is_the_block_counted_whole(doc, monkeypatch):
    """The block sums its lines' counts (tokens.lines_add_up) instead of tokenizing the joined
    text: at every budget, tight ones that trim frames included, it is the same block."""
    d = compile_day(busy_day())
    budgets = (60, 300, 420, 700, 1000, 1500, 2500, 4000)
    by_lines = [emit.context_block(x, b) for x in (doc, d) for b in budgets]
    monkeypatch.setattr(tokens, "lines_add_up", lambda lines: False)
    assert by_lines == [emit.context_block(x, b) for x in (doc, d) for b in budgets]


def test_block_is_a_hundred_times_smaller_than_raw_rows():
    cap = busy_day()
    raw = json.dumps({"snapshots": [vars_of(s) for s in cap.snapshots],
                      "inputs": [vars_of(e) for e in cap.inputs]}, ensure_ascii=False)
    block = emit.context_block(compile_day(cap))
    assert tokens.count(raw) >= 100 * tokens.count(block)


def vars_of(row) -> dict:
    return {k: getattr(row, k) for k in row.__slots__}


def test_budget_drops_frames_longest_kept(doc):
    tight = emit.context_block(doc, budget_tokens=tokens.count(emit.context_block(doc, 10_000)) - 30)
    shown = [line.split(" | ")[0] for line in tight.splitlines() if line.startswith("f-")]
    longest = sorted(doc["frames"], key=lambda f: -f["active_min"])[: len(shown)]
    assert sorted(shown) == sorted(f["id"] for f in longest) and len(shown) < len(doc["frames"])


SCRIPT = r"""
import hashlib, json, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {golden!r})
from day_fixture import golden_day
from af_pipeline.compiler.compile import CompileOptions, compile_day
from af_pipeline.compiler import emit
out = {{}}
for floor in (0.0, 1.0):
    d = compile_day(golden_day(), CompileOptions(min_minutes=floor))
    out[str(floor)] = [hashlib.sha256(emit.canonical_bytes(d)).hexdigest()] + [
        hashlib.sha256(emit.render(d, f).encode()).hexdigest() for f in emit.FORMATS]
print(json.dumps(out, sort_keys=True))
"""


def test_same_bytes_in_other_processes_zones_and_hash_seeds():
    script = SCRIPT.format(root=str(ROOT), golden=str(Path(__file__).parent / "golden"))
    outputs = set()
    for tz, seed in (("America/New_York", "1"), ("Asia/Kolkata", "4242")):
        env = dict(os.environ, TZ=tz, PYTHONHASHSEED=seed, LC_ALL="C")
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
        outputs.add(proc.stdout)
    assert len(outputs) == 1
    here = {}
    for floor in (0.0, 1.0):
        d = compile_day(golden_day(), CompileOptions(min_minutes=floor))
        here[str(floor)] = [hashlib.sha256(emit.canonical_bytes(d)).hexdigest()] + [
            hashlib.sha256(emit.render(d, f).encode()).hexdigest() for f in emit.FORMATS]
    assert json.loads(outputs.pop()) == here


def test_render_rejects_unknown_formats(doc):
    with pytest.raises(ValueError, match="unknown format"):
        emit.render(doc, "xml")


def test_a_block_of_part_of_a_day_names_its_window():
    """The last two hours are not the whole day: the block's day line says which window it covers;
    a whole day's block has no window note (the goldens)."""
    from af_pipeline.compiler.emit import context_block

    doc = json.loads((Path(__file__).parent / "golden" / "golden-day.json").read_text())
    assert "| window" not in context_block(doc).splitlines()[1]
    doc["window"] = {"start": "2026-03-16T08:00:00+01:00", "end": "2026-03-16T10:00:00+01:00"}
    assert context_block(doc).splitlines()[1].startswith("day 2026-03-16 | window 08:00-10:00 | tz ")
    doc["window"] = {"start": "2026-03-10T00:00:00+01:00", "end": "2026-03-17T00:00:00+01:00"}
    assert "| window 2026-03-10 00:00 - 2026-03-17 00:00 |" in context_block(doc).splitlines()[1]


# -- the YAML text in C (af_pipeline/compiler/_speedups.c) against emit.yaml_text ---------------

_yaml_keys = st.one_of(st.text(max_size=12), st.sampled_from(["a", "b", "yes", "No", "null", "x y", "x ", "A1", "id"]))
_yaml_strings = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=16),  # surrogates and controls too
    st.sampled_from(["", " ", "on", "OFF", "True", "Google Chrome", "a-b_c.d/e(f)@g+h", "09:12:57", "-x", "x:y",
                     "\u2028", "\x7f", "\x85", "\ufeff", "tab\there", 'q"uote', "back\\slash", "é", "😀"]))
_yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**30), max_value=10**30),
                          st.floats(), st.sampled_from([0.0, -0.0, 1e16, 1e-7, 0.5, 3.59, 2.0**60]), _yaml_strings)
_yaml_docs = st.dictionaries(_yaml_keys, st.recursive(
    _yaml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_yaml_keys, inner, max_size=4)),
    max_leaves=25), max_size=6)


@pytest.mark.skipif(emit._c is None, reason="the C module was not built (no C compiler)")
@settings(max_examples=500, deadline=None)
@given(_yaml_docs)
def test_the_c_yaml_text_is_emits_text(doc):
    assert emit._c.dump(doc) == emit.yaml_text(doc)


def c_extensions_can_be_built() -> bool:
    """Whether this machine has what the install needs to build a C extension: a compiler and
    Python's headers (the extension is optional: without them emit.py writes the YAML)."""
    import shutil
    import sysconfig

    return bool(shutil.which("cc") or shutil.which("gcc")) and Path(sysconfig.get_paths()["include"], "Python.h").is_file()


def test_the_c_module_is_built_where_it_can_be():
    if c_extensions_can_be_built():
        assert emit._c is not None, "pip install -e . did not build af_pipeline/compiler/_speedups.c"


def test_yaml_of_what_the_c_module_does_not_take_is_emits():
    class Text(str):
        pass

    doc = {"a": Text("yes"), "b": [{"c": 1}, ("t",)], "d": {}}
    with pytest.raises(TypeError, match="cannot write tuple"):
        emit.to_yaml(doc)
    doc["b"] = [{"c": 1}, Text("x")]
    assert emit.to_yaml(doc) == emit.yaml_text(doc) == 'a: "yes"\nb:\n- c: 1\n- x\nd: {}\n'
    with pytest.raises(TypeError):  # keys other than strs: emit.py refuses them, as before
        emit.to_yaml({1: "x", 2: "y"})


def test_the_golden_day_yaml_is_the_same_from_both(doc):
    assert emit.to_yaml(doc) == emit.yaml_text(doc)
    assert yaml.safe_load(emit.to_yaml(doc)) == doc
