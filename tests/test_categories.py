"""Categories (tier 2): rules, ActivityWatch's export imported as it is, the pick, the document block."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import categories as C
from af_pipeline.compiler.compile import CompileOptions, compile_day
from af_pipeline.compiler.document import strip_inferred, validate
from capture.errors import UserError

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from day_fixture import golden_day  # noqa: E402

# Shaped as aw-webui's "Export categories" button writes it (aw-category-export.json).
AW_EXPORT = {
    "categories": [
        {"id": 0, "name": ["Work"], "rule": {"type": "regex", "regex": "Google Docs|libreoffice|ReText"},
         "data": {"color": "#0F0"}, "depth": 0},
        {"id": 1, "name": ["Work", "Programming"], "rule": {"type": "regex", "regex": "GitHub|Stack Overflow|vim|compile\\.py"},
         "data": {"color": "#00F"}, "depth": 1, "parent": ["Work"]},
        {"id": 2, "name": ["Comms"], "rule": {"type": "none"}, "data": {"color": "#F80"}, "depth": 0},
        {"id": 3, "name": ["Comms", "Email"], "rule": {"type": "regex", "regex": "inbox|mail", "ignore_case": True},
         "depth": 1, "parent": ["Comms"]},
        {"id": 4, "name": ["Uncategorized"], "rule": {"type": "none"}, "data": {"color": "#ccc"}, "depth": 0},
    ]
}


@pytest.fixture(scope="module")
def measured():
    return compile_day(golden_day(), CompileOptions(min_minutes=0.0))


def test_activitywatch_export_imports_as_is_and_names_the_rule_per_frame(tmp_path, measured):
    path = tmp_path / C.RULES_FILE
    path.write_text(json.dumps(AW_EXPORT), encoding="utf-8")
    rules = C.rules_in(tmp_path)
    assert rules.source == C.RULES_FILE and len(rules.rules) == 5
    doc = C.categorize(strip_inferred(measured), rules)
    validate(doc)
    of = C.categories_of(doc)
    # "compile.py - widgets" (title) matches Work > Programming; Chrome's "Pull Request" title does
    # not, but nothing else does either; Mail's "Inbox (3)" matches only with ignore_case
    assert of["f-0001"]["label"] == "Work > Programming" and of["f-0001"]["rule"] == "categories.json#2"
    assert of["f-0002"]["label"] == "Comms > Email" and "ignore case" in of["f-0002"]["pattern"]
    assert "f-0004" not in of  # zsh: no rule, so Uncategorized in totals
    assert dict((label, n) for label, _m, n in C.totals(doc))["Uncategorized"] == 2
    assert rules.colors()["Work > Programming"] == "#00F"
    assert doc["inferred"][C.NAMESPACE]["items"][0]["confidence"] == "medium"  # the user's own rules


def test_the_server_settings_classes_list_imports_too():
    rules = C.parse_rules({"classes": AW_EXPORT["categories"]}, "settings.json")
    assert [r.category for r in rules.rules][:2] == [("Work",), ("Work", "Programming")]


def test_deepest_category_wins_then_the_earlier_rule(measured):
    rules = C.parse_rules({"rules": [
        {"category": "Work", "app": "^Code$"},
        {"category": "Work > Editing", "title": "compile"},
        {"category": "Other > Editor", "any": "Code"},
    ]}, "mine.json")
    pick = C.frame_categories(measured, rules)
    assert pick["f-0001"].name == "mine.json#2"  # depth 2 beats depth 1; the earlier depth-2 rule wins


def test_every_given_pattern_must_match(measured):
    rules = C.parse_rules({"rules": [{"category": "Review", "app": "Chrome", "site": "^github\\.com$"},
                                     {"category": "Review", "app": "Chrome", "site": "^nowhere$"}]}, "r.json")
    pick = C.frame_categories(measured, rules)
    assert set(pick) == {"f-0003"} and pick["f-0003"].name == "r.json#1"


@pytest.mark.parametrize("data, says", [
    ({"rules": [{"category": "A", "app": "("}]}, "rule 1: the app pattern /(/ is not a valid regular expression"),
    ({"rules": [{"category": "A"}]}, "rule 1 needs at least one non-empty pattern"),
    ({"rules": [{"category": "A", "url": "x"}]}, "rule 1 has unknown keys ['url']"),
    ({"rules": [{"category": "A >  ", "app": "x"}]}, "has an empty name"),
    ({"categories": [{"name": ["A"], "rule": {"type": "glob", "regex": "x"}}]}, "has rule type 'glob'"),
    ({"nothing": 1}, "expected {\"rules\": [...]}"),
])
def test_bad_rules_name_the_file_and_the_rule(tmp_path, data, says):
    path = tmp_path / C.RULES_FILE
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UserError) as err:
        C.rules_in(tmp_path)
    assert C.RULES_FILE in str(err.value) and says in str(err.value)


def test_an_unreadable_file_is_an_error_not_the_defaults(tmp_path):
    (tmp_path / C.RULES_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(UserError, match="categories.json is not readable JSON"):
        C.rules_in(tmp_path)
    assert C.rules_in(tmp_path / "elsewhere").source == "defaults"


_names = st.sampled_from(["Work", "Fun", "Comms", "Docs", "X"])
_rule = st.fixed_dictionaries({
    "category": st.lists(_names, min_size=1, max_size=3).map(" > ".join),
    "any": st.sampled_from(["Code", "Chrome", "zsh", "Inbox", "github", "e", "^$", "Slack"]),
    "ignore_case": st.booleans(),
})


@settings(max_examples=60, deadline=None)
@given(st.lists(_rule, min_size=1, max_size=8))
def test_categories_never_touch_the_measured_tier_and_each_frame_has_one_category(measured, raw):
    base = strip_inferred(measured)
    doc = C.categorize(base, C.parse_rules({"rules": raw}, "h.json"))
    validate(doc)
    assert strip_inferred(doc) == base
    items = doc.get("inferred", {}).get(C.NAMESPACE, {}).get("items", [])
    cited = [fid for it in items for fid in it["evidence"]["frames"]]
    assert len(cited) == len(set(cited))  # no frame in two categories
    minutes = {f["id"]: f["active_min"] for f in base["frames"]}
    for it in items:
        assert it["minutes"] == pytest.approx(sum(minutes[f] for f in it["evidence"]["frames"]), abs=0.01)
        assert C.SEP.join(it["category"]) == it["label"]
    # the pick is the deepest matching category: no matching rule is deeper than the one chosen
    rules = C.parse_rules({"rules": raw}, "h.json")
    for f in base["frames"]:
        chosen = C.frame_categories(base, rules).get(f["id"])
        values = [f["app"], *(w["title"] for w in f.get("windows", [])), *([f["site"]] if f.get("site") else [])]
        import re
        depths = [len(r.category) for r in rules.rules
                  if any(re.search(r.patterns[0][1], v, re.IGNORECASE if r.ignore_case else 0) for v in values)]
        assert (chosen is None) == (not depths)
        if chosen is not None:
            assert len(chosen.category) == max(depths)


def test_the_compiled_document_carries_the_default_categories_in_the_inferred_tier(measured):
    block = measured["inferred"][C.NAMESPACE]
    assert "rules: defaults" in block["generator"]
    assert {it["confidence"] for it in block["items"]} == {"speculative"}
    assert "category" not in json.dumps(strip_inferred(measured))  # nothing leaks into the measured tier


def test_frames_differing_only_in_titles_are_told_apart_when_a_rule_reads_titles():
    # frames with the same app and site are matched once when no rule reads titles (the
    # defaults); a rule on titles, or on any field, still sees each frame's own titles
    frames = [{"id": f"f-{i}", "app": "Code", "windows": [{"title": t, "minutes": 1.0}]}
              for i, t in enumerate(["notes.txt", "compile.py", "README"])]
    doc = {"frames": frames}
    assert set(C.frame_categories(doc, C.default_rules())) == {"f-0", "f-1", "f-2"}
    for field in ("title", "any"):
        rules = C.parse_rules({"rules": [{"category": "Build", field: r"compile\.py"}]}, "t.json")
        assert set(C.frame_categories(doc, rules)) == {"f-1"}


_words = ["code", "mail", "x.com", "docs", "Slack", "news"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(_words), min_size=1, max_size=3),
                          st.lists(st.sampled_from(["app", "title", "site", "any"]), min_size=1, max_size=2),
                          st.lists(st.sampled_from(_words), min_size=1, max_size=2)), min_size=1, max_size=8),
       st.dictionaries(st.sampled_from(["app", "title", "site"]), st.lists(st.sampled_from(_words + ["other"]), max_size=3)))
def test_the_pick_is_the_deepest_rule_whose_every_pattern_matches_then_the_first(specs, given_values):
    """The matcher's pick against its definition: among the rules every pattern of which finds a
    match in its field's values (any: all fields), the deepest, and of those the first."""
    rules = C.parse_rules([{"name": f"r{i}", "category": path, "rule": {"type": "regex", "regex": "|".join(words)}}
                           for i, (path, _fields, words) in enumerate(specs)], "test")
    rules = C.CategoryRules(tuple(C.Rule(r.name, r.category, tuple((f, rx) for f in fields for _, rx in r.patterns[:1]),
                                         r.ignore_case) for r, (_p, fields, _w) in zip(rules.rules, specs, strict=True)),
                            rules.source, rules.sha256)
    values = {k: given_values.get(k, []) for k in ("app", "title", "site")}
    every = values["app"] + values["title"] + values["site"]
    import re

    def matches(rule):
        return all(any(re.search(rx, v, re.IGNORECASE if rule.ignore_case else 0)
                       for v in (every if field == "any" else values[field])) for field, rx in rule.patterns)

    fitting = [r for r in rules.rules if matches(r)]
    want = min(fitting, key=lambda r: (-len(r.category), rules.rules.index(r))) if fitting else None
    assert C._Matcher(rules).pick_values(values) == want


# -- issue 36: a malformed file is a sentence naming the file; no rule can make the build spin ---


_CATEGORIZE = """
import json, sys
from af_pipeline.compiler import categories as C
given = json.load(sys.stdin)
doc = C.categorize(given["doc"], C.parse_rules({"rules": given["rules"]}, "t.json"))
print(json.dumps({fid: item["label"] for item in doc.get("inferred", {}).get(C.NAMESPACE, {}).get("items", [])
                  for fid in item["evidence"]["frames"]}))
"""


def categorized_in_a_subprocess(rules, titles):
    """Each title's category label (as a one-frame-per-title document is categorized), worked out
    in a child process given a minute: a rule that backtracks fails the test instead of hanging it."""
    import subprocess

    doc = {"frames": [{"id": f"f{i}", "app": "x", "windows": [{"title": t}], "active_min": 1.0}
                      for i, t in enumerate(titles)]}
    done = subprocess.run([sys.executable, "-c", _CATEGORIZE], input=json.dumps({"rules": rules, "doc": doc}),
                          capture_output=True, text=True, timeout=60, check=True)
    labels = json.loads(done.stdout)
    return [labels.get(f"f{i}") for i in range(len(titles))]


N = 50_000


# (pattern, a long title it does not match, one it matches): in Python's re, which backtracks, the
# first takes longer than the universe's age; RE2 runs in time linear in the title
@pytest.mark.parametrize("rx, miss, hit", [
    ("(a+)+$", "a" * N + "b", "b" + "a" * N),
    ("(a|aa)+$", "a" * N + "!", "!" + "a" * N),
    ("(a|a)*b", "a" * N, "a" * N + "b"),
    ("(x+x+)+y", "x" * N, "x" * N + "y"),
    ("(a{2,})+z", "a" * N, "a" * N + "z"),
    ("(a|b+)*c$", "ab" * (N // 2), "ab" * (N // 2) + "c"),
    ("^(\\w+\\s?)*$", "word " * (N // 5) + "!", "word " * (N // 5)),
])
def test_a_pattern_that_backtracks_in_python_is_kept_and_a_50000_char_title_is_categorized(tmp_path, rx, miss, hit):
    (tmp_path / C.RULES_FILE).write_text(json.dumps({"rules": [{"category": "A", "title": rx}]}), encoding="utf-8")
    assert C.rules_in(tmp_path).rules[0].patterns == (("title", rx),)
    rules = [{"category": "Other", "app": "^x$"}, {"category": "Other > Matched", "title": rx}]
    assert categorized_in_a_subprocess(rules, [miss, hit]) == ["Other", "Other > Matched"]


@pytest.mark.parametrize("rx", ["a+b+", "gimp(-[0-9.]+)?", "(?:ab)+", "^(ab|cd){2,5}$", "(x*y)*", "(?i)pull request"])
def test_ordinary_patterns_are_kept(tmp_path, rx):
    (tmp_path / C.RULES_FILE).write_text(json.dumps({"rules": [{"category": "A", "title": rx}]}), encoding="utf-8")
    assert C.rules_in(tmp_path).rules[0].patterns == (("title", rx),)


@pytest.mark.parametrize("rx, says", [
    ("GitHub(?= - )", "uses a look-around or back-reference, which category rules do not support: rules run in "
                      "linear time"),
    ("(?<!Re: )Inbox", "uses a look-around or back-reference"),
    ("(?!Draft)Inbox", "uses a look-around or back-reference"),
    ("(ab)\\1", "uses a look-around or back-reference"),
    ("(?P<w>ab)(?P=w)", "uses a look-around or back-reference"),
    ("a++b", "uses a possessive repeat or an atomic group"),
    ("(?>a+)+", "uses a possessive repeat or an atomic group"),
    ("[\\W_]", "uses \\W inside a character class"),
])
def test_a_pattern_re2_cannot_run_is_refused_naming_the_file_the_rule_and_the_category(tmp_path, rx, says):
    path = tmp_path / C.RULES_FILE
    path.write_text(json.dumps({"rules": [{"category": "A", "app": "x"}, {"category": "Mail > Inbox", "title": rx}]}),
                    encoding="utf-8")
    with pytest.raises(UserError) as err:
        C.rules_in(tmp_path)
    assert str(err.value).startswith(f"{path}: rule 2 (Mail > Inbox): the title pattern /{rx}/ {says}")
    # ActivityWatch's export: the same sentence, with its category's name
    path.write_text(json.dumps({"categories": [{"name": ["Work", "Review"], "rule": {"type": "regex", "regex": rx}}]}),
                    encoding="utf-8")
    with pytest.raises(UserError) as err:
        C.rules_in(tmp_path)
    assert str(err.value).startswith(f"{path}: category 1 (Work > Review): the any pattern /{rx}/ {says}")


def test_an_invalid_pattern_says_what_re2_found(tmp_path):
    path = tmp_path / C.RULES_FILE
    path.write_text(json.dumps({"rules": [{"category": "A", "app": "x{3,2}"}]}), encoding="utf-8")
    with pytest.raises(UserError, match=r"rule 1: the app pattern /x\{3,2\}/ is not a valid regular expression "
                                        r"\(RE2 syntax: invalid repetition size: \{3,2\}\)"):
        C.rules_in(tmp_path)


# Rules are written in Python's syntax and were matched by Python's re: what they match must not move.
_ascii_atoms = st.one_of(
    st.sampled_from(list("abcAB1 _-") + ["\\.", ".", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B",
                                          "[abc]", "[^ab]", "[a-c1]", "[\\d_]", "[\\w-]", "[^\\s]", "[.]", "\\-"]),
)


def _regex(atoms):
    def concat(parts):
        return "".join(parts)

    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=4).map(concat),
            st.lists(inner, min_size=2, max_size=3).map(lambda alts: "(" + "|".join(alts) + ")"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "*?", "+?", "{2}", "{1,3}", "{,2}", "{2,}"])).map(
                lambda t: "(?:" + t[0] + ")" + t[1]),
        ),
        max_leaves=8,
    ).flatmap(lambda body: st.sampled_from([body, "^" + body, body + "$", "^" + body + "$", body + "\\Z"]))


def _agrees(rx, ignore_case, texts):
    import re

    python = re.compile(rx, re.IGNORECASE if ignore_case else 0)
    rules = C.parse_rules({"rules": [{"category": "A", "title": rx, "ignore_case": ignore_case}]}, "t.json")
    m = C._Matcher(rules)
    for text in texts:
        picked = m.pick_values({"app": [], "title": [text], "site": []})
        assert (picked is not None) == bool(python.search(text)), (rx, ignore_case, text)


@settings(max_examples=400, deadline=None)
@given(_regex(_ascii_atoms), st.booleans(), st.lists(st.text(alphabet="abcAB1 2_-.\txyz", min_size=1, max_size=12), max_size=6))
def test_rule_matching_agrees_with_pythons_re_on_ascii_text(rx, ignore_case, texts):
    _agrees(rx, ignore_case, texts)


@settings(max_examples=200, deadline=None)
@given(_regex(st.sampled_from(["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[\\d\\s]", "[^\\w]", "é", "\\u00e9", "ß",
                               "[à-ÿ]", "Ж", "."])),
       st.booleans(), st.lists(st.text(alphabet="aé É ß\u00a0\u2003٣5Жж_-\u3000xΣσς", min_size=1, max_size=10), max_size=6))
def test_rule_matching_agrees_with_pythons_re_on_unicode_digits_letters_and_spaces(rx, ignore_case, texts):
    _agrees(rx, ignore_case, texts)


def test_a_title_with_a_lone_surrogate_is_matched_not_an_error():
    rules = C.parse_rules({"rules": [{"category": "A", "title": "caf.\\Z"}]}, "t.json")
    assert C._Matcher(rules).pick_values({"app": [], "title": ["caf\ud800"], "site": []}) == rules.rules[0]


def test_matching_a_long_title_is_quick_once_loaded(tmp_path):
    """What the check is for: /(a+)+$/ against 40 a's and a b takes minutes in Python's re."""
    import time

    doc = {"frames": [{"id": "f1", "app": "x", "windows": [{"title": "a" * 40 + "b"}], "active_min": 1.0}]}
    started = time.monotonic()
    rules = C.parse_rules({"rules": [{"category": "A", "title": "a+$"}, {"category": "B", "any": "^(a|b)*b$"}]}, "t")
    assert C.frame_categories(doc, rules)["f1"].label == "B"
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("text, says", [
    ('{"rules": [\n {"category": "X", "app": "a"}\n {"category": "Y"}]}', "line 3 column 2"),
    ('{"categories": [{"name": ["A"], "rule": {"type": "regex", "regex": "a", "ignore_case": "yes"}}]}',
     "category 1 (A): ignore_case must be true or false"),
    ("\xff\xfe", "is not readable JSON"),
])
def test_a_malformed_file_is_named_by_its_path_with_the_line_or_rule(tmp_path, text, says):
    path = tmp_path / C.RULES_FILE
    path.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode("utf-8"))
    with pytest.raises(UserError) as err:
        C.rules_in(tmp_path)
    assert str(err.value).startswith(str(path)) and says in str(err.value)


def test_af_build_says_what_is_wrong_with_categories_json_not_a_dagster_error(tmp_path):
    from dagster_support import corpus, days_of, new_home

    from assets import certify as harness
    from capture.log import EventLog

    home = new_home(tmp_path)
    EventLog(home).append(corpus())
    (home.root / C.RULES_FILE).write_text(json.dumps({"rules": [{"category": "A", "title": "GitHub(?= - )"}]}),
                                          encoding="utf-8")
    out = harness.run_build(home, days_of(corpus()))
    assert not out.ok
    said = f"{home.root / C.RULES_FILE}: rule 1 (A): the title pattern /GitHub(?= - )/ uses a look-around"
    assert any(said in f for f in out.failures), out.failures
    assert not any("Dagster" in f for f in out.failures), out.failures
