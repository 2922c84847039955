"""No output carries a raw bidirectional control from captured text (a window title with U+202E
shows what follows it reversed): JSON and YAML escape them (the value reads back the same),
Markdown and the context block show them as spaces; the C module and Python write the same."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import emit
from af_pipeline.compiler.compile import CompileOptions, compile_day

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from day_fixture import golden_day  # noqa: E402

BIDI_CHARS = ["\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]
RAW = set(BIDI_CHARS)

texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)) | st.sampled_from(BIDI_CHARS), max_size=20)
titled = st.tuples(texts, st.sampled_from(BIDI_CHARS), texts).map("".join)  # at least one bidi control


def _raw(text: str) -> set[str]:
    return RAW & set(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(titled, min_size=1, max_size=4), st.booleans())
def test_no_format_prints_a_raw_bidi_control_from_any_title(titles, typed):
    day = golden_day()
    snaps = [replace(s, window=titles[i % len(titles)], app=titles[(i + 1) % len(titles)] if i % 7 == 0 else s.app)
             for i, s in enumerate(day.snapshots)]
    doc = compile_day(replace(day, snapshots=snaps), CompileOptions(include_typed_text=typed))
    for fmt in emit.FORMATS:
        out = emit.render(doc, fmt, include_typed_text=typed)
        assert not _raw(out), (fmt, sorted(_raw(out)))
    assert not _raw(emit.canonical_bytes(doc).decode("utf-8"))
    # the escapes read back as the same values
    assert json.loads(emit.to_json(doc, typed)) == json.loads(json.dumps(emit._measured(doc, typed)))
    assert yaml.safe_load(emit.to_yaml(doc, typed)) == emit._measured(doc, typed)


def test_a_right_to_left_override_in_a_title_is_written_as_its_escape():
    day = golden_day()
    snaps = [replace(s, window="invoice\u202etxt.exe") for s in day.snapshots]
    doc = compile_day(replace(day, snapshots=snaps))
    assert "invoice\\u202etxt.exe" in emit.to_json(doc)
    assert '"invoice\\u202Etxt.exe"' in emit.to_yaml(doc) or '"invoice\\u202etxt.exe"' in emit.to_yaml(doc)
    assert "invoice txt.exe" in emit.to_markdown(doc)
    assert "invoice txt.exe" in emit.context_block(doc)
    if emit._c is not None:  # the C module's YAML is Python's
        assert emit._c.dump(emit._measured(doc, False)) == emit.yaml_text(emit._measured(doc, False))
