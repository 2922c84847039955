"""af synth: determinism, the paper's corpus shape, and that what truth.json says was planted is there."""

from __future__ import annotations

import json
import math
import re
import sqlite3
import statistics
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.synth import (
    DB_NAME,
    ROUTINES,
    SAMPLE_PARAMS,
    TRUTH_NAME,
    Writer,
    bundled_sample,
    generate,
)
from capture.synth_world import AZERTY_AS_QWERTY
from capture.timeutil import parse_ts, to_datetime

TABLES = ("frames", "ui_events", "elements")


def same_table(a: Path, b: Path, table: str, where: str = "") -> bool:
    """Both databases hold exactly the same rows in table (optionally filtered), compared in SQL."""
    con = sqlite3.connect(f"file:{a}?mode=ro", uri=True)
    con.execute("ATTACH DATABASE ? AS other", (f"file:{b}?mode=ro",))
    n_a = con.execute(f"SELECT count(*) FROM main.{table} {where}").fetchone()[0]
    n_b = con.execute(f"SELECT count(*) FROM other.{table} {where}").fetchone()[0]
    diff = con.execute(f"SELECT count(*) FROM (SELECT * FROM main.{table} {where} "
                       f"EXCEPT SELECT * FROM other.{table} {where})").fetchone()[0]
    con.close()
    return n_a == n_b and diff == 0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Six days (Monday to Saturday) with seed 11: enough for every shape target."""
    out = tmp_path_factory.mktemp("synth6")
    generate(6, 11, out)
    con = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True)
    truth = json.loads((out / TRUTH_NAME).read_text(encoding="utf-8"))
    yield out, con, truth
    con.close()


# ---- determinism ---------------------------------------------------------------------------------

def test_same_seed_same_output_and_another_seed_differs(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate(1, 5, a)
    generate(1, 5, b)
    generate(1, 6, c)
    assert (a / TRUTH_NAME).read_bytes() == (b / TRUTH_NAME).read_bytes()
    for t in TABLES:
        assert same_table(a / DB_NAME, b / DB_NAME, t), t
    assert (a / TRUTH_NAME).read_bytes() != (c / TRUTH_NAME).read_bytes()
    assert not same_table(a / DB_NAME, c / DB_NAME, "frames")


def test_a_second_process_gives_the_same_corpus(tmp_path):
    generate(1, 9, tmp_path / "one", parallel=False)
    generate(1, 9, tmp_path / "two", parallel=True)
    assert (tmp_path / "one" / TRUTH_NAME).read_bytes() == (tmp_path / "two" / TRUTH_NAME).read_bytes()
    for t in TABLES:
        assert same_table(tmp_path / "one" / DB_NAME, tmp_path / "two" / DB_NAME, t), t


def test_a_short_corpus_is_a_prefix_of_a_longer_one(tmp_path, corpus):
    out6, _con, truth6 = corpus
    generate(1, 11, tmp_path)
    truth1 = json.loads((tmp_path / TRUTH_NAME).read_text(encoding="utf-8"))
    assert truth1["days"][0] == truth6["days"][0]
    last = truth1["days"][0]["frame_id_range"][1]
    assert same_table(tmp_path / DB_NAME, out6 / DB_NAME, "frames", f"WHERE id <= {last}")


def test_bundled_sample_is_what_the_generator_makes(tmp_path):
    sample = bundled_sample()
    generate(out_dir=tmp_path, **SAMPLE_PARAMS)
    assert (sample / TRUTH_NAME).read_bytes() == (tmp_path / TRUTH_NAME).read_bytes()
    for t in TABLES:
        assert same_table(sample / DB_NAME, tmp_path / DB_NAME, t), (
            f"table {t} of the bundled sample differs from the generator's output: "
            "run capture.synth.refresh_bundled_sample()")
    assert sum(p.stat().st_size for p in (Path(__file__).parents[1] / "capture/data/sample").iterdir()) < 3_200_000


# ---- shape ---------------------------------------------------------------------------------------

def test_heartbeats_are_about_a_fifth_of_rows(corpus):
    _out, con, _truth = corpus
    total, idle = con.execute("SELECT count(*), sum(capture_trigger = 'idle') FROM frames").fetchone()
    assert 0.15 <= idle / total <= 0.25


def test_gaps_within_a_stream_match_the_paper(corpus):
    _out, con, _truth = corpus
    times: dict[str, list[int]] = {}
    for ts, dev in con.execute("SELECT timestamp, device_name FROM frames"):
        times.setdefault(dev, []).append(parse_ts(ts))
    assert set(times) == {"monitor_1", "monitor_2"}
    gaps: list[float] = []
    for ts in times.values():
        ts.sort()
        gaps += [(b - a) / 1e6 for a, b in zip(ts, ts[1:], strict=False) if b - a <= 300e6]
    gaps.sort()
    assert 4.0 <= statistics.median(gaps) <= 8.0
    assert 20.0 <= gaps[int(0.9 * len(gaps))] <= 40.0


def test_truth_shape_and_absent_facts_agree_with_the_tables(corpus):
    _out, con, truth = corpus
    total, idle = con.execute("SELECT count(*), sum(capture_trigger = 'idle') FROM frames").fetchone()
    assert truth["shape"]["heartbeat_share"] == round(idle / total, 4)
    (urls,) = con.execute("SELECT count(DISTINCT browser_url) FROM frames").fetchone()
    assert truth["shape"]["distinct_urls"] == urls
    apps = {a for (a,) in con.execute("SELECT DISTINCT app_name FROM frames")}
    assert not apps & set(truth["absent"]["apps"])
    for dom in truth["absent"]["domains"]:
        assert con.execute("SELECT count(*) FROM frames WHERE browser_url LIKE ?", (f"%{dom}%",)).fetchone()[0] == 0


def test_two_monitors_for_a_share_of_captured_minutes(corpus):
    _out, con, truth = corpus
    minutes: dict[int, set[str]] = {}
    for ts, dev in con.execute("SELECT timestamp, device_name FROM frames"):
        minutes.setdefault(parse_ts(ts) // 60_000_000, set()).add(dev)
    dual = sum(len(v) == 2 for v in minutes.values())
    assert 0.15 <= dual / len(minutes) <= 0.35
    assert sum(d["dual_monitor_minutes"] for d in truth["days"]) == dual


def test_dozens_of_apps_and_at_least_twenty_site_families(corpus):
    _out, con, _truth = corpus
    apps = {a for (a,) in con.execute("SELECT DISTINCT app_name FROM frames")}
    assert len(apps) >= 30
    assert {"Google Chrome", "Slack", "Cursor", "Terminal", "Mail", "Finder", "Notion", "Figma"} <= apps
    hosts = Counter()
    urls = set()
    for (u,) in con.execute("SELECT browser_url FROM frames WHERE browser_url IS NOT NULL"):
        urls.add(u)
        hosts[re.sub(r"^https?://([^/:?#]+).*$", r"\1", u)] += 1
    assert len(hosts) >= 20
    assert len(urls) >= 500
    for host in ("www.linkedin.com", "github.com", "mail.google.com", "docs.google.com", "localhost",
                 "acme.atlassian.net", "chatgpt.com", "claude.ai"):
        assert host in hosts, host
    assert all(u for (u,) in con.execute("SELECT browser_url FROM frames WHERE app_name NOT IN "
                                         "('Google Chrome', 'Safari') AND browser_url IS NOT NULL")) is True
    assert con.execute("SELECT count(*) FROM frames WHERE app_name NOT IN ('Google Chrome','Safari') "
                       "AND browser_url IS NOT NULL").fetchone()[0] == 0


def test_working_days_have_a_lunch_gap_and_start_in_the_morning(corpus):
    _out, _con, truth = corpus
    work = [d for d in truth["days"] if d["kind"] == "work"]
    assert len(work) >= 4
    for d in work:
        assert any(g["reason"] == "lunch" and g["seconds"] > 300 for g in d["capture_gaps"]), d["day"]
        assert "07:30:00" <= d["first_activity_local"] <= "10:30:00"


def test_timestamps_mix_three_forms_all_readable_and_ids_follow_time(corpus):
    _out, con, _truth = corpus
    for table in ("frames", "ui_events"):
        forms = Counter()
        last = -1
        for _id, ts in con.execute(f"SELECT id, timestamp FROM {table} ORDER BY id"):
            forms["offset" if ts.endswith("+00:00") else "z" if ts.endswith("Z") else "space" if " " in ts else "?"] += 1
            us = parse_ts(ts)
            assert us >= last, (table, _id)
            last = us
        assert forms["?"] == 0 and forms["space"] > 0 and forms["z"] > 0
        assert forms["offset"] > 0.75 * sum(forms.values())


def test_truth_counts_match_the_tables(corpus):
    _out, con, truth = corpus
    tz = truth["tz"]
    for d in truth["days"]:
        if not d["frames"]:
            continue
        lo, hi = d["frame_id_range"]
        n, idle, first = con.execute("SELECT count(*), sum(capture_trigger='idle'), min(id) FROM frames "
                                     "WHERE id BETWEEN ? AND ?", (lo, hi)).fetchone()
        assert (n, idle) == (d["frames"], d["heartbeat_frames"])
        (ts,) = con.execute("SELECT timestamp FROM frames WHERE id = ?", (first,)).fetchone()
        assert to_datetime(parse_ts(ts), tz).strftime("%H:%M:%S") == d["first_activity_local"]
        assert to_datetime(parse_ts(ts), tz).date().isoformat() == d["day"]
        apps = [a for (a,) in con.execute("SELECT DISTINCT app_name FROM frames WHERE id BETWEEN ? AND ? "
                                          "ORDER BY 1", (lo, hi))]
        assert apps == d["apps"]
        if d["ui_event_id_range"]:
            a, b = d["ui_event_id_range"]
            assert con.execute("SELECT count(*) FROM ui_events WHERE id BETWEEN ? AND ?", (a, b)).fetchone()[0] == \
                d["ui_events"]
    assert con.execute("SELECT count(*) FROM elements").fetchone()[0] == sum(d["elements"] for d in truth["days"])


# ---- input events and element trees ------------------------------------------------------------

def test_every_event_type_with_its_packed_columns(corpus):
    _out, con, _truth = corpus
    types = {t for (t,) in con.execute("SELECT DISTINCT event_type FROM ui_events")}
    assert {"click", "key", "text", "scroll", "clipboard", "app_switch", "move", "window_focus"} <= types
    ops = {m for (m,) in con.execute("SELECT DISTINCT modifiers FROM ui_events WHERE event_type = 'clipboard'")}
    assert ops == {99, 118, 120}
    assert con.execute("SELECT count(*) FROM ui_events WHERE event_type = 'app_switch' "
                       "AND (text_content IS NULL OR text_content != app_name)").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM ui_events WHERE event_type = 'text' AND "
                       "(text_content IS NULL OR text_length != length(text_content))").fetchone()[0] == 0
    orphans = con.execute("SELECT count(*) FROM ui_events e LEFT JOIN frames f ON f.id = e.frame_id "
                          "WHERE f.id IS NULL").fetchone()[0]
    assert orphans == 0


def _tree(con: sqlite3.Connection, frame_id: int) -> list[tuple[str | None, tuple[float, ...] | None]]:
    """(name, bounds) of every node of a frame's accessibility tree, from elements rows or JSON."""
    rows = con.execute("SELECT text, left_bound, top_bound, width_bound, height_bound FROM elements "
                       "WHERE frame_id = ? AND source = 'accessibility' ORDER BY sort_order", (frame_id,)).fetchall()
    if rows:
        return [(r[0], None if r[1] is None else tuple(r[1:])) for r in rows]
    (raw,) = con.execute("SELECT accessibility_tree_json FROM frames WHERE id = ?", (frame_id,)).fetchone()
    if raw is None:
        return []
    out = []
    stack = [json.loads(raw)]
    while stack:
        node = stack.pop()
        b = node["bounds"]
        out.append((node["name"], None if b is None else (b["left"], b["top"], b["width"], b["height"])))
        stack.extend(node["children"])
    return out


def _resolve(tree, x, y, w, h):
    """Independent reading of the paper's rule: smallest containing element, else nearest within 40 px."""
    inside = [(b[2] * b[3], n) for n, b in tree if b and b[0] * w <= x <= (b[0] + b[2]) * w
              and b[1] * h <= y <= (b[1] + b[3]) * h]
    if inside:
        return "exact", min(inside)[1]
    near = []
    for n, b in tree:
        if b:
            dx = max(b[0] * w - x, 0, x - (b[0] + b[2]) * w)
            dy = max(b[1] * h - y, 0, y - (b[1] + b[3]) * h)
            if math.hypot(dx, dy) <= 40:
                near.append((math.hypot(dx, dy), b[2] * b[3], n))
    return ("tolerance", min(near)[2]) if near else ("none", None)


def test_anonymous_clicks_resolve_as_truth_says(corpus):
    _out, con, truth = corpus
    screens = {k: (v["width_px"], v["height_px"]) for k, v in truth["screens"].items()}
    seen = Counter()
    for d in truth["days"][:2]:
        clicks = d["anonymous_clicks"]
        checks = [(int(k), "exact", v) for k, v in clicks["exact"].items()]
        checks += [(int(k), "tolerance", v) for k, v in clicks["tolerance"].items()]
        checks += [(k, "none", None) for k in clicks["none"]] + [(k, "no_tree", None) for k in clicks["no_tree"]]
        for eid, cls, name in checks:
            x, y, fid, ename = con.execute("SELECT x, y, frame_id, element_name FROM ui_events WHERE id = ?",
                                           (eid,)).fetchone()
            assert ename is None
            (dev,) = con.execute("SELECT device_name FROM frames WHERE id = ?", (fid,)).fetchone()
            tree = _tree(con, fid)
            if cls == "no_tree":
                assert tree == []
            else:
                assert _resolve(tree, x, y, *screens[dev]) == (cls, name), (eid, cls)
            seen[cls] += 1
    assert min(seen[c] for c in ("exact", "tolerance", "none", "no_tree")) >= 10


def test_named_click_bounds_are_pixels_of_the_trees_normalised_bounds(corpus):
    _out, con, truth = corpus
    rows = con.execute("SELECT e.element_name, e.element_bounds, e.frame_id, f.device_name FROM ui_events e "
                       "JOIN frames f ON f.id = e.frame_id WHERE e.event_type = 'click' "
                       "AND e.element_name IS NOT NULL LIMIT 300").fetchall()
    assert len(rows) == 300
    checked = 0
    for name, bounds, fid, dev in rows:
        same_name = [b for n, b in _tree(con, fid) if b and n == name]
        px = json.loads(bounds)
        if same_name:
            w, h = truth["screens"][dev]["width_px"], truth["screens"][dev]["height_px"]
            assert any(abs(px["left"] - b[0] * w) <= 0.06 and abs(px["top"] - b[1] * h) <= 0.06
                       and abs(px["width"] - b[2] * w) <= 0.06 and abs(px["height"] - b[3] * h) <= 0.06
                       for b in same_name), (name, px)
            checked += 1
    assert checked > 250  # clicks on frames without a recorded tree are the rest


# ---- what was planted -------------------------------------------------------------------------------

def _step_ok(con, action: str, target: str, ids: list[int], frames: list[int], anonymous: dict[str, str]) -> bool:
    if action == "visit":  # URL-level step: the page it lands on
        (url,) = con.execute("SELECT browser_url FROM frames WHERE id = ?", (frames[-1],)).fetchone()
        return url.split("/")[2] == target
    evs = [con.execute("SELECT event_type, element_name, text_content, modifiers FROM ui_events WHERE id = ?",
                       (i,)).fetchone() for i in ids]
    kinds = [e[0] for e in evs]
    if action == "click":
        return kinds == ["click"] and (evs[0][1] == target or anonymous.get(str(ids[0])) == target)
    if action == "type":
        return "text" in kinds and all(k in ("key", "text") for k in kinds) and all(e[1] == target for e in evs)
    if action in ("copy", "paste"):
        code = 99 if action == "copy" else 118
        return any(e[0] == "clipboard" and e[3] == code and e[1] == target for e in evs)
    if action == "switch":
        return kinds[0] == "app_switch" and evs[0][2] == target
    raise AssertionError(action)


def test_routines_are_planted_step_by_step_with_noise_between(corpus):
    _out, con, truth = corpus
    anonymous: dict[str, str] = {}
    for d in truth["days"]:
        anonymous.update(d["anonymous_clicks"]["exact"])
    assert set(truth["routines"]) == set(ROUTINES)
    for name, routine in truth["routines"].items():
        occ = routine["occurrences"]
        assert len(occ) >= 3, name
        steps = [(s["action"], s["target"]) for s in routine["steps"]]
        assert len({t for _a, t in steps}) >= 2  # the paper's two-named-target rule
        for o in occ:
            assert len(o["step_event_ids"]) == len(steps)
            for (action, target), ids, frames in zip(steps, o["step_event_ids"], o["step_frame_ids"], strict=True):
                assert frames or action in ("copy", "paste"), (name, action)  # clipboard captures nothing
                assert _step_ok(con, action, target, ids, frames, anonymous), (name, o["day"], action, target)
            # contiguous: no other event between the first and the last of an occurrence
            assert o["event_ids"] == list(range(o["event_ids"][0], o["event_ids"][-1] + 1))
            if routine["granularity"] == "action":
                assert sorted(i for ids in o["step_event_ids"] for i in ids) == o["event_ids"]
        if name not in ("close_window", "mail_calendar_mail"):  # loops / page visits may run back to back
            for a, b in zip(occ, occ[1:], strict=False):
                assert b["event_ids"][0] > a["event_ids"][-1] + 1, name


def test_flicker_detours_are_short_returns_to_the_same_context(corpus):
    _out, con, truth = corpus
    detours = [f for d in truth["days"] for f in d["flicker_detours"]]
    assert len(detours) >= 10
    for f in detours:
        assert f["seconds"] < 20
        first = f["b_frame_ids"][0]
        ts_b, = con.execute("SELECT timestamp FROM frames WHERE id = ?", (first,)).fetchone()
        ts_r, app_r, dev_r = con.execute("SELECT timestamp, app_name, device_name FROM frames WHERE id = ?",
                                         (f["return_frame_id"],)).fetchone()
        assert (app_r, dev_r) == (f["a_app"], f["stream"])
        assert 0 < (parse_ts(ts_r) - parse_ts(ts_b)) / 1e6 < 20
        prev = con.execute("SELECT app_name FROM frames WHERE device_name = ? AND id < ? ORDER BY id DESC LIMIT 1",
                           (f["stream"], first)).fetchone()
        assert prev[0] == f["a_app"]
        # a different frame key whether the site is the host or its registrable domain
        assert f["b_app"] != f["a_app"] or _site(f["b_host"]) != _site(f["a_host"])


def _site(host: str | None) -> str | None:
    if host is None:
        return None
    parts = host.split(".")
    return ".".join(parts[-3:]) if host.endswith(".co.uk") else ".".join(parts[-2:])


def test_azerty_days_record_qwerty_positions(corpus):
    _out, con, truth = corpus
    azerty = set(truth["keyboard"]["azerty_days"])
    assert "2026-06-02" in azerty and len(azerty) < len(truth["days"])
    domains = ("acme.com", "globex.io", "gmail.com")
    mapped = tuple("".join(AZERTY_AS_QWERTY.get(c, c) for c in dom) for dom in domains)
    changed = tuple(d for d, m in zip(domains, mapped, strict=True) if d != m)  # globex.io has no a/q/z/w/m
    n_changed = 0
    for o in truth["routines"]["compose_message"]["occurrences"]:
        to_ids = o["step_event_ids"][1]
        marks = ",".join("?" * len(to_ids))
        (typed,) = con.execute(f"SELECT text_content FROM ui_events WHERE event_type = 'text' AND id IN ({marks})",
                               to_ids).fetchone()
        keys = "".join(c for (c,) in con.execute("SELECT text_content FROM ui_events WHERE event_type = 'key' "
                                                 f"AND id IN ({marks}) ORDER BY id", to_ids))
        assert keys == typed
        if o["day"] in azerty:
            assert typed.endswith(mapped) and not typed.endswith(changed), typed
            n_changed += typed.endswith(tuple(m for m in mapped if m not in domains))
        else:
            assert typed.endswith(domains) and not typed.endswith(mapped[0]), typed
    assert n_changed >= 1
    # the key code is the physical (QWERTY) key of the recorded letter
    for text, code in con.execute("SELECT text_content, key_code FROM ui_events WHERE event_type = 'key' "
                                  "AND text_content BETWEEN 'a' AND 'z' AND length(text_content) = 1 LIMIT 500"):
        assert code == ord(text.upper())


# ---- command line and errors --------------------------------------------------------------------------

def test_cli_writes_and_summarises(tmp_path, capsys):
    assert cli.main(["synth", "--days", "1", "--seed", "3", "--out", str(tmp_path / "o"), "--json"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["days"] == 1 and summary["rows"]["frames"] > 1000
    assert "routine_occurrences" in summary and "seconds" in summary
    assert "day 1/1 2026-06-01" in err
    assert cli.main(["synth", "--days", "1", "--seed", "3", "--out", str(tmp_path / "o")]) == 0  # replaces its own
    assert "frames:" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    (["--tz", "Mars/Olympus"], "unknown time zone"),
    (["--start-day", "2026-13-01"], "is not a day"),
    (["--days", "0"], "--days must be"),
])
def test_cli_bad_arguments_say_why(tmp_path, capsys, args, message):
    assert cli.main(["synth", "--out", str(tmp_path), *args]) == 2
    assert message in capsys.readouterr().err


def test_refuses_to_overwrite_a_database_it_did_not_write(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"someone's data")
    with pytest.raises(UserError, match="not written by af synth"):
        generate(1, 1, tmp_path)
    assert (tmp_path / DB_NAME).read_bytes() == b"someone's data"


@settings(max_examples=200, deadline=None)
@given(us=st.integers(min_value=946_684_800_000_000, max_value=4_102_444_799_999_999), fmt=st.sampled_from([0, 1, 2]))
def test_every_timestamp_form_reads_back_exactly(us, fmt):
    w = Writer(0)
    assert parse_ts(w.ts(us, fmt)) == us


@pytest.mark.parametrize(("tz", "day"), [("America/Los_Angeles", "2026-06-01"), ("Asia/Kolkata", "2026-06-01"),
                                         ("Europe/Paris", "2026-03-30")])
def test_days_follow_the_users_zone(tmp_path, tz, day):
    # Monday after the spring DST change in Paris; LA evenings fall on the next UTC day; Kolkata is +05:30.
    generate(1, 4, tmp_path, start_day=day, tz=tz)
    con = sqlite3.connect(f"file:{tmp_path / DB_NAME}?mode=ro", uri=True)
    local = [to_datetime(parse_ts(ts), tz) for (ts,) in con.execute("SELECT timestamp FROM frames")]
    con.close()
    assert {d.date().isoformat() for d in local} == {day}
    assert 7 <= min(local).hour <= 10 and max(local).hour >= 17


def test_stale_attribution_events_name_the_previous_app(corpus):
    _out, con, truth = corpus
    stale = [i for d in truth["days"] for i in d["stale_app_event_ids"]]
    assert len(stale) >= 20
    for eid in stale:
        app, frame_app = con.execute("SELECT e.app_name, f.app_name FROM ui_events e JOIN frames f "
                                     "ON f.id = e.frame_id WHERE e.id = ?", (eid,)).fetchone()
        assert app != frame_app


@settings(max_examples=300, deadline=None)
@given(x=st.floats(min_value=0, max_value=1512), y=st.floats(min_value=0, max_value=982),
       view=st.sampled_from(["main", "compose", "file_menu"]), app=st.sampled_from(["Mail", "Preview", "Slack"]))
def test_generator_resolver_agrees_with_an_independent_reading(x, y, view, app):
    from capture.synth_world import Templates, resolve_click

    tpl = Templates().get(app, view)
    cls, node = resolve_click(tpl, x, y, 1512, 982)
    tree = [(n[1], n[4]) for n in tpl.nodes]
    want_cls, want_name = _resolve(tree, x, y, 1512, 982)
    assert cls == want_cls
    if node is not None:
        assert tpl.nodes[node][1] == want_name


def test_an_unwritable_folder_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="exists and is not a folder"):
        generate(1, 1, blocker)
    with pytest.raises(UserError, match="cannot write the sample into"):
        generate(1, 1, blocker / "below")
