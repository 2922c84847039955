"""Categories on every platform, and `af categories` (issue 40): a Windows PC's ActivityWatch
export (tests/aw_windows_day.py, the shape aw-server exports) goes through `af import` and `af
build`, and the default rules leave under 10 % of its minutes uncategorized; the command lists
the rules in force, imports ActivityWatch's export, tries a rule against the day and names the
apps no rule takes, on that real data folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from aw_windows_day import DAY, export

from af_pipeline.compiler import categories as C
from af_pipeline.compiler.document import strip_inferred
from af_pipeline.interfaces import cli
from af_pipeline.interfaces.memory import Memory

# as aw-webui's Settings > Categorization > Export writes it
AW_EXPORT = {"categories": [
    {"id": 0, "name": ["Work"], "rule": {"type": "regex", "regex": "Google Docs|libreoffice|ReText"},
     "data": {"color": "#0F0"}},
    {"id": 1, "name": ["Work", "Programming"],
     "rule": {"type": "regex", "regex": "GitHub|Stack Overflow|Visual Studio Code|PowerShell", "ignore_case": True}},
    {"id": 2, "name": ["Comms"], "rule": {"type": "none"}, "data": {"color": "#9FF"}},
    {"id": 3, "name": ["Comms", "Email"], "rule": {"type": "regex", "regex": "Outlook|Gmail"}},
    {"id": 4, "name": ["Uncategorized"], "rule": {"type": "none"}, "data": {"color": "#CCC"}},
]}


def af(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    said = capsys.readouterr()
    return code, said.out, said.err


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A data folder holding the Windows day, imported and built as a user does it."""
    root = tmp_path_factory.mktemp("windows")
    src = root / "aw-buckets-export.json"
    src.write_text(json.dumps(export()), encoding="utf-8")
    home = root / "home"
    assert cli.main(["import", "activitywatch", str(src), "--home", str(home), "--tz", "UTC"]) == 0
    assert cli.main(["build", "--home", str(home)]) == 0
    return home


@pytest.fixture()
def home(built, tmp_path) -> Path:
    """A copy of the built folder a test may change (import rules into)."""
    shutil.copytree(built, tmp_path / "home")
    return tmp_path / "home"


def _published(home: Path) -> dict:
    return json.loads((home / "published" / DAY / "document.json").read_text(encoding="utf-8"))


def test_a_windows_activitywatch_day_is_under_ten_percent_uncategorized(built, capsys):
    doc = _published(built)
    assert {f["app"] for f in doc["frames"]} >= {"Code.exe", "powershell.exe", "firefox.exe", "WindowsTerminal.exe",
                                                  "cmd.exe", "OUTLOOK.EXE", "ApplicationFrameHost.exe"}
    rows = {label: m for label, m, _n in C.totals(doc)}
    total = sum(rows.values())
    assert rows.get(C.UNCATEGORIZED, 0) / total < 0.10, rows
    of = C.categories_of(doc)
    label = {f["id"]: of[f["id"]]["label"] if f["id"] in of else None for f in doc["frames"]}
    by_app: dict[str, set] = {}
    for f in doc["frames"]:
        by_app.setdefault(f["app"], set()).add(label[f["id"]])
    assert by_app["Code.exe"] == {"Work > Programming"}
    for term in ("powershell.exe", "WindowsTerminal.exe", "cmd.exe", "mintty.exe"):
        assert by_app[term] == {"Work > Programming > Terminal"}, term
    assert by_app["explorer.exe"] == {"System > Files"}
    # no web watcher on this PC: the browser's titles name the site
    titled = {(f["windows"][0]["title"].split(" — ")[0], label[f["id"]]) for f in doc["frames"] if f["app"] == "firefox.exe"}
    assert ("Pull requests · acme/webshop · GitHub", "Work > Programming > Code hosting") in titled
    assert ("Lo-fi beats to code to - YouTube", "Media > Video") in titled
    # the command counts what the published document says
    code, out, _ = af(capsys, "categories", "uncategorized", "--day", DAY, "--home", str(built), "--json")
    assert code == 0
    said = json.loads(out)
    assert said["uncategorized_minutes"] == pytest.approx(rows.get(C.UNCATEGORIZED, 0), abs=0.02)
    assert said["share"] < 10 and [a["app"] for a in said["apps"]] == ["javaw.exe", "AcmeTimesheet.exe"]
    assert said["apps"][0]["title"] == "Oracle SQL Developer : orders"


def test_list_names_the_defaults_then_the_imported_file(home, tmp_path, capsys):
    code, out, _ = af(capsys, "categories", "list", "--home", str(home))
    assert code == 0 and "the built-in defaults (no categories.json" in out and "defaults#1" in out
    code, out, _ = af(capsys, "categories", "list", "--home", str(home), "--json")
    listed = json.loads(out)
    assert listed["source"] == "defaults" and listed["sha256"] == C.default_rules().sha256
    assert len(listed["rules"]) == len(C.default_rules().rules)

    src = tmp_path / "aw-category-export.json"
    src.write_text(json.dumps(AW_EXPORT), encoding="utf-8")
    code, out, _ = af(capsys, "categories", "import", str(src), "--home", str(home))
    assert code == 0 and "imported 5 rules (ActivityWatch format)" in out
    assert (home / C.RULES_FILE).read_bytes() == src.read_bytes()  # as exported, byte for byte
    code, out, _ = af(capsys, "categories", "list", "--home", str(home), "--json")
    listed = json.loads(out)
    assert listed["source"] == str(home / C.RULES_FILE) and listed["format"] == "ActivityWatch"
    assert [r["category"] for r in listed["rules"]][:2] == [["Work"], ["Work", "Programming"]]
    assert listed["rules"][0]["color"] == "#0F0" and listed["rules"][2]["patterns"] == []


def test_imported_rules_change_the_inferred_tier_only(home, tmp_path, capsys):
    src = tmp_path / "aw.json"
    src.write_text(json.dumps(AW_EXPORT), encoding="utf-8")
    assert af(capsys, "categories", "import", str(src), "--home", str(home))[0] == 0
    live = Memory(home).day_document(DAY, live=True)[0]  # compiled now, under the imported rules
    published = _published(home)
    assert strip_inferred(live)["frames"] == strip_inferred(published)["frames"]
    assert live["inferred"][C.NAMESPACE]["items"][0]["rule"].startswith("categories.json#")
    assert live["inferred"][C.NAMESPACE] != published["inferred"][C.NAMESPACE]


def test_import_refuses_what_it_cannot_use_and_keeps_the_users_file(home, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"categories": [AW_EXPORT["categories"][0],
                                              {"name": ["Work", "Loops"], "rule": {"type": "regex", "regex": "(a)\\1"}}]}))
    code, _out, err = af(capsys, "categories", "import", str(bad), "--home", str(home))
    assert code == 2 and f"{bad}: category 2 (Work > Loops)" in err and "back-reference" in err
    broken = tmp_path / "broken.json"
    broken.write_text('{"categories": [')
    code, _out, err = af(capsys, "categories", "import", str(broken), "--home", str(home))
    assert code == 2 and f"{broken} is not readable JSON" in err and "line 1" in err
    code, _out, err = af(capsys, "categories", "import", str(tmp_path / "nope.json"), "--home", str(home))
    assert code == 2 and "nope.json does not exist" in err
    assert not (home / C.RULES_FILE).exists()  # nothing written by a refused import

    mine = home / C.RULES_FILE
    mine.write_text(json.dumps({"rules": [{"category": "Mine", "app": "Code"}]}))
    good = tmp_path / "aw.json"
    good.write_text(json.dumps(AW_EXPORT))
    code, _out, err = af(capsys, "categories", "import", str(good), "--home", str(home))
    assert code == 2 and "already exists; pass --replace" in err and "Mine" in mine.read_text()
    code, _out, _err = af(capsys, "categories", "import", str(good), "--home", str(home), "--replace")
    assert code == 0 and mine.read_bytes() == good.read_bytes()


def test_test_says_which_frames_a_rule_would_take_and_from_where(built, capsys):
    code, out, _ = af(capsys, "categories", "uncategorized", "--home", str(built), "--json")
    javaw = next(a for a in json.loads(out)["apps"] if a["app"] == "javaw.exe")
    code, out, _ = af(capsys, "categories", "test", "title:Oracle SQL Developer", "--category",
                      "Work > Programming > Databases", "--day", DAY, "--home", str(built), "--json")
    assert code == 0
    tried = json.loads(out)
    assert tried["taken"] == {"frames": javaw["frames"], "minutes": javaw["minutes"]}
    assert [(g["category"], g["taken_frames"]) for g in tried["from"]] == [(C.UNCATEGORIZED, javaw["frames"])]
    assert {f["app"] for f in tried["frames"]} == {"javaw.exe"}

    # a shallow rule matching firefox takes nothing: every firefox frame is in a deeper or
    # earlier category already; the same as a category as deep as theirs, added first, ties and wins
    code, out, _ = af(capsys, "categories", "test", "app:^firefox", "--day", DAY, "--home", str(built), "--json")
    shallow = json.loads(out)
    assert shallow["matched"]["frames"] > 0 and shallow["taken"]["frames"] == 0
    code, out, _ = af(capsys, "categories", "test", '{"category": "Leisure > Browsing", "app": "^firefox"}',
                      "--first", "--day", DAY, "--home", str(built), "--json")
    first = json.loads(out)
    taken = {g["category"] for g in first["from"] if g["taken_frames"]}
    assert "Media > Video" in taken and "Work > Programming > Code hosting" not in taken

    code, out, _ = af(capsys, "categories", "test", "title:YouTube", "--day", DAY, "--home", str(built))
    assert code == 0 and "it matches" in out and "stays in Media > Video" in out and "Lo-fi beats" in out


def test_bad_rules_and_days_are_refused_with_exit_2(built, capsys):
    for args, said in [
        (["test", "title:(", "--day", DAY], "the title pattern /(/ is not a valid regular expression"),
        (["test", "{not json", "--day", DAY], "not readable JSON"),
        (["test", '{"category": "X", "colour": "red", "app": "a"}', "--day", DAY], "unknown keys ['colour']"),
        (["test", "x", "--day", "2026-03-18"], f"day 2026-03-18 is not in the log (it holds {DAY} .. {DAY})"),
        (["test", "x", "--day", "2026-3-1"], "--day:"),
        (["uncategorized", "--from", "2026-03-18"], "no logged day between 2026-03-18 and the last"),
        (["uncategorized", "--day", DAY, "--from", DAY], "give --day or --from/--to, not both"),
        (["uncategorized", "--from", "2026-03-20", "--to", "2026-03-10"], "--to 2026-03-10 is before --from"),
    ]:
        code, _out, err = af(capsys, "categories", *args, "--home", str(built))
        assert code == 2 and said in err, (args, err)
    code, out, _ = af(capsys, "categories", "uncategorized", "--from", "2026-03-01", "--to", DAY, "--home", str(built))
    assert code == 0 and out.startswith(f"{DAY}: ")
    with pytest.raises(SystemExit) as ended:
        cli.main(["categories", "test", "--help"])
    assert ended.value.code == 0 and "would take it" in capsys.readouterr().out
