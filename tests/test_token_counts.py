"""The cheaper exact token counts: tokens.count_repetitive is tokens.count, on any text, and the
raw rows' JSON (built with numpy's timestamps) is the text it always was."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import emit, tokens
from capture.model import DayCapture, Snapshot
from capture.timeutil import iso_utc

# What moves cl100k's pre-tokenizer: separators, quotes, apostrophes (contractions), newlines
# and other whitespace, digits, letters of other scripts, marks, emoji, special-token text.
_BITS = [", ", ",", " ", ":", ": ", '"', '\\"', "'s", "'LL", "\n", "\r\n", "\t", "  ", "{", "}", "[", "]",
         "0", "123", "4567", "a", "Ab", "é", "ü", "д", "中文", "\u0301", "😀", "<|endoftext|>", "-", "_", ".", "/"]
texts = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(_BITS), max_size=40).map("".join),
    st.lists(st.one_of(st.sampled_from(_BITS), st.text(max_size=6)), max_size=30).map("".join),
)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_count_repetitive_is_the_count_of_any_text(text):
    assert tokens.count_repetitive(text) == tokens.count(text)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.one_of(texts, st.none(), st.booleans(), st.integers()), min_size=1, max_size=5),
                max_size=8),
       st.integers(min_value=1, max_value=4))
def test_count_repetitive_is_the_count_of_json_lists_of_repeated_rows(rows, repeat):
    """The shape it is used on: json.dumps of rows (ensure_ascii off), some rows repeated."""
    text = json.dumps([dict(enumerate(r)) for r in rows] * repeat, ensure_ascii=False)
    assert tokens.count_repetitive(text) == tokens.count(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(texts, st.sampled_from(["", " ", "\t", "\u2028", "\x85", "a ", " a", "x\u3000", ")", "'s"])),
                max_size=8))
def test_lines_that_add_up_count_as_the_sum_of_their_own_counts(lines):
    """The context block's shortcut: when lines_add_up, the joined lines' count is the sum of each
    line's with its newline (and whitespace-only or multi-line lines are refused)."""
    if tokens.lines_add_up(lines):
        assert tokens.count("\n".join(lines) + "\n") == sum(tokens.count(line + "\n") for line in lines)
    else:
        assert not lines or any(not line.strip() or "\n" in line or "\r" in line for line in lines)


_DT_MIN_US = int((datetime(1, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()) * 10**6
_DT_MAX_US = int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC))
                 .total_seconds()) * 10**6 + 999_999


@settings(deadline=None)
@given(st.lists(st.one_of(st.integers(min_value=_DT_MIN_US, max_value=_DT_MAX_US),
                          st.integers(min_value=-(10**15), max_value=4 * 10**15)), max_size=20))
def test_timestamps_formatted_together_are_iso_utc(ts):
    assert emit.iso_utc_all(ts) == [iso_utc(t) for t in ts]


def _snapshot(i: int, ts_us: int, app: str, window: str | None, url: str | None, focused: bool) -> Snapshot:
    return Snapshot(ref=f"s{i}", ts_us=ts_us, stream="monitor_1", app=app, window=window, url=url,
                    focused=focused, source_frame_id=str(i) if i % 3 else None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=4 * 10**15), texts, st.one_of(st.none(), texts),
                          st.one_of(st.none(), texts), st.booleans()), max_size=12))
def test_raw_rows_are_the_json_and_the_count_of_the_whole_list(rows):
    snaps = [_snapshot(i, *r) for i, r in enumerate(rows)]
    cap = DayCapture(day="2026-06-01", tz="UTC", snapshots=snaps)
    expected = json.dumps([{"id": s.source_frame_id or s.ref, "timestamp": iso_utc(s.ts_us), "app_name": s.app,
                            "window_name": s.window, "browser_url": s.url, "device_name": s.stream,
                            "focused": s.focused} for s in snaps], ensure_ascii=False)
    assert emit.raw_rows_json(cap) == expected
    assert emit.raw_rows_tokens(cap) == tokens.count(expected)


ids = st.one_of(st.from_regex(r"[0-9]{1,12}", fullmatch=True), texts,
                st.sampled_from(["", "0", "007", "1234567", "١٢٣", "²3", "12a", "3 4", "5, 6", "-7", "8.5"]))
stamps_us = st.one_of(
    st.integers(min_value=0, max_value=4 * 10**15),
    st.integers(min_value=_DT_MIN_US, max_value=_DT_MAX_US),
    st.integers(min_value=0, max_value=4 * 10**9).map(lambda s: s * 10**6),  # whole seconds: .000000
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(ids, stamps_us, texts, st.one_of(st.none(), texts), st.one_of(st.none(), texts),
                          texts, st.booleans()), min_size=1, max_size=12),
       st.integers(min_value=1, max_value=3))
def test_raw_rows_tokens_counted_by_parts_is_the_count_of_the_json(rows, repeat):
    """Decimal ids, ids of any other text, stamps of every shape iso_utc writes, repeated rows."""
    snaps = [Snapshot(ref=f"r{i}", ts_us=ts, stream=stream, app=app, window=window, url=url, focused=focused,
                      source_frame_id=frame_id or None)
             for i, (frame_id, ts, app, window, url, stream, focused) in enumerate(rows * repeat)]
    cap = DayCapture(day="2026-06-01", tz="UTC", snapshots=snaps)
    assert emit.raw_rows_tokens(cap) == tokens.count(emit.raw_rows_json(cap))
