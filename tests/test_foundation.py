"""Timestamps, local days and the offline tokenizer: the ground everything stands on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from af_pipeline.compiler import tokens
from capture.home import Home
from capture.timeutil import BadTimestamp, day_bounds, iso_utc, local_day, parse_ts


def test_three_screenpipe_timestamp_forms_agree():
    a = parse_ts("2026-03-15T18:25:55.123456+00:00")
    b = parse_ts("2026-03-15 18:25:55.123456")
    c = parse_ts("2026-03-15T18:25:55.123456Z")
    assert a == b == c
    assert iso_utc(a) == "2026-03-15T18:25:55.123456Z"


def test_offsets_are_applied_not_compared_as_text():
    # 20:00+02:00 is 18:00Z: earlier than 19:00Z although its text sorts later.
    assert parse_ts("2026-03-15T20:00:00+02:00") < parse_ts("2026-03-15 19:00:00")


@pytest.mark.parametrize("bad", ["", "yesterday", "2026-13-01 00:00:00", "1970-01-01T00:00:00Z", None, True])
def test_bad_timestamps_say_why(bad):
    with pytest.raises(BadTimestamp):
        parse_ts(bad)


def test_dst_days_have_23_and_25_hours():
    s, e = day_bounds("2026-03-29", "Europe/Paris")
    assert (e - s) // 3_600_000_000 == 23
    s, e = day_bounds("2026-10-25", "Europe/Paris")
    assert (e - s) // 3_600_000_000 == 25


@given(st.integers(min_value=parse_ts("2000-01-01 00:00:00"), max_value=parse_ts("2090-01-01 00:00:00")))
def test_local_day_contains_its_instant(ts):
    day = local_day(ts, "America/New_York")
    s, e = day_bounds(day, "America/New_York")
    assert s <= ts < e


def test_home_zone_is_recorded_once(tmp_path):
    h = Home(tmp_path / "h")
    h.init(tz="Asia/Tokyo")
    assert Home(tmp_path / "h").settings().tz == "Asia/Tokyo"
    with pytest.raises(ValueError, match="cannot change"):
        h.init(tz="Europe/Paris")


def test_zone_comes_from_the_folder_not_the_process(tmp_path):
    Home(tmp_path / "h").init(tz="Asia/Tokyo")
    code = (
        "from capture.home import Home; from capture.timeutil import local_day, parse_ts;"
        f"tz=Home({str(tmp_path / 'h')!r}).settings().tz;"
        "print(local_day(parse_ts('2026-03-15 20:00:00Z'), tz))"
    )
    out = subprocess.run([sys.executable, "-c", code], env={"TZ": "America/Los_Angeles", "PATH": ""},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "2026-03-16"


def test_cl100k_counts_offline_and_matches_known_values():
    assert tokens.count("hello world") == 2
    assert tokens.count("") == 0
    # a known cl100k segmentation: "tiktoken is great!" -> 6 tokens
    assert tokens.count("tiktoken is great!") == 6


def test_cl100k_ranks_are_the_official_files_token_rank_lines():
    """The ranks the encoding is built from: each line of the official file, its base64 token
    decoded with base64.b64decode (the plain reading the fast one must equal)."""
    import base64
    import gzip
    import importlib.util

    spec = importlib.util.find_spec("bpe_openai")
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations)))
    raw = gzip.decompress((folder / "data" / "cl100k_base.tiktoken.gz").read_bytes())
    plain = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            plain[base64.b64decode(token)] = int(rank)
    ranks = tokens._ranks()
    assert ranks == plain and list(ranks) == list(plain) and len(ranks) == 100_256


def test_a_home_stands_for_its_folder(tmp_path):
    h = Home(tmp_path / "h")
    assert str(h) == str(tmp_path / "h") and Home(h).root == h.root
