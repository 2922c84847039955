"""`af stats`: the entity coverage report over the event log or a URL list; offline public suffixes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from af_pipeline.interfaces import cli
from capture.log import EventLog
from capture.model import CaptureBatch, Snapshot
from capture.timeutil import day_bounds, parse_ts

MIN = 60_000_000

DAY1_URLS = [
    "https://github.com/acme/widgets/pull/1",
    "https://github.com/acme/widgets/pull/1",  # the same page again: one distinct URL
    "https://www.linkedin.com/in/jane-doe/",
    "https://example.com/about-us",
    None,  # a non-browser snapshot
]
DAY2_URLS = [
    "https://www.google.com/search?q=duckdb",
    "https://example.com/about-us",  # also seen on day 1
    "https://intranet.acme.local/x/y",
]


def _batch(day: str, urls: list[str | None]) -> CaptureBatch:
    start, _ = day_bounds(day, "Europe/Paris")
    b = CaptureBatch(source_id="test:stats", recorder="synth")
    for i, url in enumerate(urls):
        b.snapshots.append(Snapshot(f"test:stats:{day}:{i}", start + 9 * 60 * MIN + i * MIN, "monitor_0",
                                    "Firefox" if url else "Terminal", "w", url))
    return b


def _json(capsys) -> dict:
    out = capsys.readouterr().out
    return json.loads(out[out.index("{"):])


def _log(home) -> None:
    log = EventLog(home)
    log.append(_batch("2026-03-15", DAY1_URLS), now_us=parse_ts("2026-03-16T12:00:00Z"))
    log.append(_batch("2026-03-16", DAY2_URLS), now_us=parse_ts("2026-03-16T12:00:00Z"))


def test_stats_over_the_whole_log(home, capsys):
    _log(home)
    assert cli.main(["stats", "--home", str(home.root), "--json"]) == 0
    report = _json(capsys)
    assert report["scope"]["days"] == 2 and report["scope"]["snapshots"] == 8
    assert report["distinct_urls"] == 5  # duplicates and the repeat across days count once
    assert report["typed_urls"] == 3
    assert report["typed_percent"] == "60.0%"
    assert report["kinds"] == {"page": 2, "pull_request": 1, "profile": 1, "search": 1}
    assert report["generic_domains"] == {"acme.local": 1, "example.com": 1}
    assert report["blank_values"] == 1


def test_stats_one_day_and_text_output(home, capsys):
    _log(home)
    assert cli.main(["stats", "--home", str(home.root), "--day", "2026-03-15"]) == 0
    out = capsys.readouterr().out
    assert "2026-03-15 (1 day, 5 snapshots, 4 with a URL)" in out
    assert "typed non-generic  2 (66.7%) over 2 kinds" in out
    assert "pull_request" in out and "example.com" in out


def test_stats_unknown_day_and_missing_home_are_usage_errors(home, tmp_path, capsys):
    _log(home)
    assert cli.main(["stats", "--home", str(home.root), "--day", "2026-04-01"]) == 2
    err = capsys.readouterr().err
    assert "2026-04-01 is not in the log" in err and "2026-03-15 .. 2026-03-16" in err
    assert cli.main(["stats", "--home", str(home.root), "--day", "15/03/2026"]) == 2
    assert "'15/03/2026' is not a day (expected YYYY-MM-DD)" in capsys.readouterr().err
    assert cli.main(["stats", "--home", str(tmp_path / "nowhere")]) == 2
    assert "not an activity-frames data folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # argparse refuses --day with --all
        cli.main(["stats", "--home", str(home.root), "--day", "2026-04-01", "--all"])
    assert exc.value.code == 2


def test_stats_on_a_url_list(tmp_path, capsys):
    listing = tmp_path / "history.txt"
    listing.write_text("https://claude.ai/chat/abc\n\nhttps://example.com/\nhttps://claude.ai/chat/abc\n",
                       encoding="utf-8")
    assert cli.main(["stats", "--urls", str(listing), "--json"]) == 0
    report = _json(capsys)
    assert report["distinct_urls"] == 2 and report["kinds"] == {"ai_chat": 1, "page": 1}
    assert report["blank_values"] == 1
    assert cli.main(["stats", "--urls", str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt: no such file" in capsys.readouterr().err


def test_empty_log_says_so(home, capsys):
    assert cli.main(["stats", "--home", str(home.root)]) == 0
    assert "No URLs to type." in capsys.readouterr().out


def test_public_suffix_list_is_offline_and_deterministic():
    """site_of must work with no network at all and give the same answers in a fresh process."""
    code = textwrap.dedent(
        """
        import socket
        def refuse(*a, **k):
            raise OSError("network access attempted")
        socket.socket = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from af_pipeline.compiler.entities import site_of
        urls = ["https://www.bbc.co.uk/", "https://foo.github.io/", "https://shop.example.com.au/",
                "https://xn--bcher-kva.de/", "https://a.b.c.sharepoint.com/"]
        print("|".join(site_of(u) for u in urls))
        """
    )
    env = dict(os.environ, PYTHONHASHSEED="123", no_proxy="*", http_proxy="http://0.0.0.0:9",
               https_proxy="http://0.0.0.0:9")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           check=True).stdout for _ in range(2)}
    assert runs == {"bbc.co.uk|foo.github.io|example.com.au|bücher.de|sharepoint.com\n"}


def test_typing_is_identical_across_hash_seeds_and_zones():
    """Pure function of the URL: another process, hash seed or time zone gives the same references."""
    code = textwrap.dedent(
        """
        from af_pipeline.compiler.entities import coverage, type_url
        from tests.test_entities import TABLE
        urls = [row[0] for row in TABLE]
        for url in urls:
            print(repr(type_url(url)))
        print(coverage(urls).to_dict())
        """
    )
    outputs = set()
    for seed, tz in (("1", "UTC"), ("4242", "Pacific/Chatham")):
        env = dict(os.environ, PYTHONHASHSEED=seed, TZ=tz)
        outputs.add(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                   check=True, cwd=os.path.dirname(os.path.dirname(__file__))).stdout)
    assert len(outputs) == 1 and "pull_request" in outputs.pop()
