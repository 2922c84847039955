"""Categories: rules that name what a frame was for (tier 2, inferred), and their matching.

A rule maps patterns over a frame's app, window titles and site to a category path such as
``("Work", "Programming")``. Which category a frame is in is an interpretation, not a
measurement, so categories live in the document's inferred tier (namespace ``af.categories``):
one item per (category, rule) naming the rule, the frames it matched and their minutes. The
measured tier never changes.

Rules come from ``<data folder>/categories.json`` when there is one, else the defaults below.
That file is either this project's format::

    {"rules": [{"category": "Work > Programming", "app": "Code|PyCharm", "ignore_case": true},
               {"category": "Work > Review", "site": "^github\\.com$", "title": "Pull Request"}]}

(a rule matches when every pattern it gives matches its field: ``app``, ``title`` (any of the
frame's window titles), ``site``; ``any`` matches any of them), or ActivityWatch's own export
(aw-webui "Export categories", ``{"categories": [{"name": [...], "rule": {"type": "regex",
"regex": ..., "ignore_case": ...}, "data": {"color": ...}}]}``, or the server settings'
``classes`` list), imported as it is: a regex rule matches any field, like ActivityWatch, and
``type: none`` rules never match (they only name a parent).

Picking, as ActivityWatch picks: of all rules that match, the deepest category wins; between
equally deep ones, the earlier rule. Matching is pure and ordered (no hash order): the same
document and rules give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import re2

from capture.errors import UserError

NAMESPACE = "af.categories"
RULES_FILE = "categories.json"
GENERATOR = "activity-frames categories 1"
UNCATEGORIZED = "Uncategorized"
SEP = " > "
FIELDS = ("app", "title", "site")
_PATTERN_KEYS = ("any",) + FIELDS


@dataclass(frozen=True)
class Rule:
    name: str  # how evidence names the rule: "<source>#<1-based index>"
    category: tuple[str, ...]
    patterns: tuple[tuple[str, str], ...]  # (field or "any", regex); empty: never matches
    ignore_case: bool = False
    color: str | None = None

    @property
    def label(self) -> str:
        return SEP.join(self.category)

    def describe(self) -> str:
        flags = " (ignore case)" if self.ignore_case else ""
        what = " and ".join(f"{field} ~ /{rx}/" for field, rx in self.patterns) or "never (type none)"
        return f"{what}{flags}"


@dataclass(frozen=True)
class CategoryRules:
    rules: tuple[Rule, ...]
    source: str  # "defaults", or the rules file's name
    sha256: str  # of the rules' canonical JSON: names the rule set in every document

    def colors(self) -> dict[str, str]:
        """Colours the rules give (ActivityWatch's data.color), by category label."""
        out: dict[str, str] = {}
        for r in self.rules:
            if r.color and r.label not in out:
                out[r.label] = r.color
        return out


def _canonical(rules: list[dict[str, Any]]) -> str:
    return json.dumps(rules, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _path(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(">")]
    elif isinstance(value, list) and all(isinstance(p, str) for p in value):
        parts = [p.strip() for p in value]
    else:
        raise UserError(f"{where}: the category must be a path like \"Work > Programming\" or a list of names")
    if not parts or any(not p for p in parts):
        raise UserError(f"{where}: the category {value!r} has an empty name")
    return tuple(parts)


# Rules run on Google's RE2, which matches in time linear in the text whatever the pattern (no
# backtracking): no rule can make a build spin on a long title, and no heuristic has to guess
# which patterns might. What RE2 cannot run in linear time (look-around, back-references,
# possessive or atomic repeats) is refused when the rules are loaded.
_LINEAR = "which category rules do not support: rules run in linear time (RE2 syntax)"


def _unsupported(why: str) -> str | None:
    """What the sentence says of a feature RE2 refuses for being nonlinear, from RE2's own
    message ("<what>: <the part of the pattern>"); None for plain syntax errors."""
    what, _, part = why.partition(": ")
    if (what == "invalid perl operator" and part.startswith(("(?=", "(?!", "(?<=", "(?<!", "(?P"))) or (
            what == "invalid escape sequence" and part[1:2].isdigit() and part[1:2] != "0"):
        return f"uses a look-around or back-reference, {_LINEAR}"
    if (what == "invalid perl operator" and part.startswith("(?>")) or (
            what == "bad repetition operator" and part.endswith("+")):
        return f"uses a possessive repeat or an atomic group, {_LINEAR}: write a+ for a++"
    return None


# Python's \d, \w and \s know all of Unicode (what rules were written against), RE2's only ASCII:
# each is written out as the Unicode classes Python means (the same characters, for every code
# point Python's Unicode knows); \Z, \uXXXX and {,n} become RE2's spelling of the same.
_WORD, _SPACE = r"\p{L}\p{N}_", r"\t-\r\x1c-\x1f\x85\p{Z}"
_IN_CLASS = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": _WORD, "s": _SPACE}
_OUTSIDE = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": f"[{_WORD}]", "W": f"[^{_WORD}]", "s": f"[{_SPACE}]",
            "S": f"[^{_SPACE}]", "Z": r"\z"}
_HEXES = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))")
_UPTO = re.compile(r"\{,(\d*)\}")


def _re2_syntax(rx: str) -> str:
    r"""``rx`` (Python's syntax, as rules are written) in RE2's syntax, meaning the same; a
    ``\W`` or ``\S`` inside a character class has no RE2 spelling: ValueError."""
    out: list[str] = []
    i, n, in_class = 0, len(rx), False
    while i < n:
        c = rx[i]
        if c == "\\" and i + 1 < n:
            e = rx[i + 1]
            if m := _HEXES.match(rx, i):
                out.append("\\x{" + (m.group(1) or m.group(2)) + "}")
                i = m.end()
                continue
            if in_class and e in "WS":
                raise ValueError(f"uses \\{e} inside a character class [...], which RE2 cannot spell with "
                                 "Unicode's letters and spaces; write it outside the class (e.g. (?:\\W|x))")
            out.append((_IN_CLASS if in_class else _OUTSIDE).get(e, rx[i:i + 2]))
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            start = i + 1 + (rx[i + 1:i + 2] == "^")
            lead = rx[i:start] + ("]" if rx[start:start + 1] == "]" else "")  # a leading ] is itself
            out.append(lead)
            i += len(lead)
            continue
        if c == "]" and in_class:
            in_class = False
        elif c == "{" and not in_class and (m := _UPTO.match(rx, i)):
            out.append("{0," + m.group(1) + "}")
            i = m.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _options(ignore_case: bool) -> Any:
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.never_capture = True  # only whether it matches is asked
    options.log_errors = False  # the refusal is a UserError sentence, not RE2's line on stderr
    return options


def _re2(rx: str, ignore_case: bool) -> Any:
    return re2.compile(_re2_syntax(rx), _options(ignore_case))


def _compiled(patterns: tuple[tuple[str, str], ...], ignore_case: bool, where: str,
              category: tuple[str, ...]) -> None:
    for field, rx in patterns:
        try:
            _re2(rx, ignore_case)
        except (re2.error, ValueError) as exc:
            why = exc.args[0].decode("utf-8", "replace") if isinstance(exc.args[0], bytes) else str(exc)
            if not isinstance(exc, re2.error):
                raise UserError(f"{where} ({SEP.join(category)}): the {field} pattern /{rx}/ {why}") from None
            said = _unsupported(why)
            if said is not None:
                raise UserError(f"{where} ({SEP.join(category)}): the {field} pattern /{rx}/ {said}") from None
            raise UserError(f"{where}: the {field} pattern /{rx}/ is not a valid regular expression "
                            f"(RE2 syntax: {why})") from None


def parse_rules(data: Any, source: str) -> CategoryRules:
    """Rules from parsed JSON (this project's format or ActivityWatch's); UserError names the
    source and the rule for anything unusable (nothing is silently dropped)."""
    rules: list[Rule] = []
    plain: list[dict[str, Any]] = []
    if isinstance(data, dict) and isinstance(data.get("rules"), list):
        for i, raw in enumerate(data["rules"], start=1):
            where = f"{source}: rule {i}"
            if not isinstance(raw, dict):
                raise UserError(f"{where} is not an object")
            unknown = sorted(set(raw) - {"category", "ignore_case", "color", *_PATTERN_KEYS})
            if unknown:
                raise UserError(f"{where} has unknown keys {unknown} (known: category, {', '.join(_PATTERN_KEYS)}, "
                                "ignore_case, color)")
            category = _path(raw.get("category"), where)
            patterns = tuple((k, raw[k]) for k in _PATTERN_KEYS if k in raw)
            if not patterns or not all(isinstance(rx, str) and rx for _, rx in patterns):
                raise UserError(f"{where} needs at least one non-empty pattern ({', '.join(_PATTERN_KEYS)})")
            ignore_case = raw.get("ignore_case", False)
            if not isinstance(ignore_case, bool):
                raise UserError(f"{where}: ignore_case must be true or false")
            color = raw.get("color")
            _compiled(patterns, ignore_case, where, category)
            rules.append(Rule(f"{source}#{i}", category, patterns, ignore_case,
                              color if isinstance(color, str) else None))
    else:
        classes = data.get("categories", data.get("classes")) if isinstance(data, dict) else data
        if not isinstance(classes, list):
            raise UserError(f"{source}: expected {{\"rules\": [...]}} or ActivityWatch's export "
                            "({\"categories\": [...]} or a list of classes)")
        for i, raw in enumerate(classes, start=1):
            where = f"{source}: category {i}"
            if not isinstance(raw, dict) or not isinstance(raw.get("rule"), dict):
                raise UserError(f"{where} has no rule object (ActivityWatch classes have name and rule)")
            category = _path(raw.get("name"), where)
            rule = raw["rule"]
            kind = rule.get("type")
            ignore_case = rule.get("ignore_case", False)
            if not isinstance(ignore_case, bool):
                raise UserError(f"{where} ({SEP.join(category)}): ignore_case must be true or false")
            if kind == "regex":
                rx = rule.get("regex")
                if not isinstance(rx, str) or not rx:
                    raise UserError(f"{where} ({SEP.join(category)}) is a regex rule without a regex")
                patterns = (("any", rx),)
            elif kind in ("none", None):
                patterns = ()
            else:
                raise UserError(f"{where} ({SEP.join(category)}) has rule type {kind!r}; known: regex, none")
            _compiled(patterns, ignore_case, where, category)
            color = (raw.get("data") or {}).get("color") if isinstance(raw.get("data"), dict) else None
            rules.append(Rule(f"{source}#{i}", category, patterns, ignore_case,
                              color if isinstance(color, str) else None))
    for r in rules:
        plain.append({"category": list(r.category), "patterns": [list(p) for p in r.patterns],
                      "ignore_case": r.ignore_case, "color": r.color})
    sha = hashlib.sha256(_canonical(plain).encode("utf-8")).hexdigest()
    return CategoryRules(tuple(rules), source, sha)


def load_rules(path: Path) -> CategoryRules:
    """The rules of a file (UserError naming the file, by its full path, and where it can the
    rule or the line, when it cannot be used)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except json.JSONDecodeError as exc:  # its message names the line and column
        raise UserError(f"{path} is not readable JSON ({exc})") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path} is not readable JSON ({exc})") from None
    try:
        return parse_rules(data, path.name)
    except UserError as exc:
        text = str(exc)  # "<file name>: rule N ...": the rules keep the file's name, the sentence its path
        raise UserError(str(path) + text[len(path.name):] if text.startswith(path.name) else text) from None


def rules_in(folder: Path | str) -> CategoryRules:
    """The data folder's rules: its categories.json when present, else the defaults."""
    path = Path(folder) / RULES_FILE
    return load_rules(path) if path.is_file() else default_rules()


# Written for this project: common apps and sites, deliberately coarse. A user's own file
# replaces them entirely (it is easier to reason about one list than about overrides). App names
# are what each platform's recorders report, matched ignoring case, and also through the app's
# short name (see ``app_names``): Windows process names (``Code.exe``, ``WINWORD.EXE``), macOS
# app and bundle names (``Google Chrome``, ``com.microsoft.VSCode``), X11 WM_CLASS (``code``,
# ``gnome-terminal-server``, ``Navigator``, ``org.gnome.Nautilus``).
_DEFAULTS: list[dict[str, Any]] = [
    {"category": "Work > Programming", "ignore_case": True,
     "app": r"^(code|code - oss|code-oss|vscode|vscodium|visual studio code|devenv|cursor|pycharm.*|"
            r"intellij.*|jetbrains-.*|idea(64)?|webstorm(64)?|goland(64)?|clion(64)?|xcode|android studio|studio64|"
            r"sublime text|sublime_text|emacs|g?vim|nvim|zed|kate)$"},
    {"category": "Work > Programming > Terminal", "ignore_case": True,
     "app": r"^(terminal|iterm2?|alacritty|kitty|wezterm(-gui)?|konsole|gnome-terminal(-server)?|"
            r"xfce4-terminal|terminator|xterm|tilix|warp|windows terminal|windowsterminal|wt|powershell|"
            r"powershell_ise|pwsh|cmd|conhost)$"},
    {"category": "Work > Programming > Code hosting", "ignore_case": True,
     "site": r"^(github\.com|gitlab\.com|bitbucket\.org|codeberg\.org|sr\.ht)$"},
    {"category": "Work > Programming > Reference", "ignore_case": True,
     "site": r"^(stackoverflow\.com|stackexchange\.com|python\.org|mozilla\.org|readthedocs\.io|"
             r"docs\.rs|pypi\.org|npmjs\.com)$"},
    {"category": "Work > Documents", "ignore_case": True,
     "app": r"^(libreoffice.*|soffice(\.bin)?|microsoft (word|excel|powerpoint|onenote)|word|winword|excel|"
            r"powerpoint|powerpnt|onenote|pages|numbers|keynote|obsidian|notion)$"},
    {"category": "Work > Documents", "ignore_case": True,
     "site": r"^(docs\.google\.com|notion\.so|overleaf\.com|office\.com)$"},
    {"category": "Work > Design", "ignore_case": True,
     "app": r"^(figma|gimp(-[0-9.]+)?|inkscape|krita|blender|adobe photoshop.*|photoshop|sketch)$"},
    {"category": "Comms > Email", "ignore_case": True,
     "app": r"^(mail|outlook|olk|microsoft outlook|thunderbird|evolution)$"},
    {"category": "Comms > Email", "ignore_case": True, "site": r"^(mail\.google\.com|outlook\.live\.com|proton\.me)$"},
    {"category": "Comms > Chat", "ignore_case": True,
     "app": r"^(slack|discord|microsoft teams|teams|ms-teams|signal|telegram.*|whatsapp|element|zoom(\.us)?|"
            r"skype)$"},
    {"category": "Comms > Chat", "ignore_case": True, "site": r"^(slack\.com|discord\.com|teams\.microsoft\.com|zoom\.us)$"},
    {"category": "Search", "ignore_case": True, "site": r"^(google\.com|bing\.com|duckduckgo\.com|ecosia\.org|kagi\.com)$"},
    {"category": "Media > Video", "ignore_case": True, "app": r"^(vlc|mpv|netflix)$"},
    {"category": "Media > Video", "ignore_case": True, "site": r"^(youtube\.com|netflix\.com|vimeo\.com|twitch\.tv)$"},
    {"category": "Media > Music", "ignore_case": True, "app": r"^(spotify|music|rhythmbox)$"},
    {"category": "Social", "ignore_case": True,
     "site": r"^(twitter\.com|x\.com|facebook\.com|instagram\.com|reddit\.com|linkedin\.com|mastodon\.social|"
             r"bsky\.app)$"},
    {"category": "System > Files", "ignore_case": True,
     "app": r"^(explorer|finder|nautilus|dolphin|thunar|nemo|pcmanfm(-qt)?|caja)$"},
    # Last: a site rule above says more than the browser; a browser with no site known (an
    # ActivityWatch capture without its web watcher) is still browsing, not uncategorized.
    {"category": "Browsing", "ignore_case": True,
     "app": r"^(chrome|google chrome|google-chrome|chromium(-browser)?|firefox|firefox-esr|navigator|msedge|"
            r"microsoft edge|safari|brave(-browser)?|opera|vivaldi(-stable)?|arc)$"},
]


@lru_cache(maxsize=1)
def default_rules() -> CategoryRules:
    return parse_rules({"rules": _DEFAULTS}, "defaults")


# -- matching ---------------------------------------------------------------------------------


_BUNDLE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z0-9_-]+){2,}$")  # com.microsoft.VSCode
_SUFFIX = re.compile(r"\.(exe|app|desktop)$", re.IGNORECASE)


def app_names(app: str) -> list[str]:
    """The names an app value is matched by: itself, then its short name when that differs:
    without a Windows ``.exe`` (also ``.app``, ``.desktop``), or the last part of a macOS bundle
    id / reverse-DNS WM_CLASS (``com.microsoft.VSCode`` -> ``VSCode``, ``org.gnome.Nautilus`` ->
    ``Nautilus``). Rules are matched against each, so ``^code$`` takes ``Code.exe``."""
    names = [app]
    short = _SUFFIX.sub("", app.strip())
    if _BUNDLE.match(short):
        short = short.rsplit(".", 1)[1]
    if short and short != app:
        names.append(short)
    return names


def _values(frame: dict[str, Any]) -> dict[str, list[str]]:
    return {
        "app": app_names(frame["app"]) if frame.get("app") else [],
        "title": [w["title"] for w in frame.get("windows", ()) if w.get("title")],
        "site": [frame["site"]] if frame.get("site") else [],
    }


class _Matcher:
    def __init__(self, rules: CategoryRules):
        self.rules = rules.rules
        self.compiled = [
            [(field, _re2(rx, r.ignore_case)) for field, rx in r.patterns]
            for r in rules.rules
        ]
        # whether any rule reads window titles: if none does, frames differing only in their titles
        # are matched alike (the defaults read apps and sites only)
        self.titles = any(field in ("title", "any") for r in rules.rules for field, _rx in r.patterns)

    def pick(self, frame: dict[str, Any]) -> Rule | None:
        return self.pick_values(_values(frame))

    def pick_values(self, values: dict[str, list[str]]) -> Rule | None:
        # RE2 reads UTF-8; a lone surrogate (a title cut mid-pair) is passed through, never an error
        utf8 = {k: [v.encode("utf-8", "surrogatepass") for v in vs] for k, vs in values.items()}
        every = utf8["app"] + utf8["title"] + utf8["site"]
        best: Rule | None = None
        depth = -1  # the depth of best
        # loops, not nested generators: this runs for every distinct frame of a day
        for rule, pats in zip(self.rules, self.compiled, strict=True):
            if not pats or len(rule.category) <= depth:
                continue  # an equally deep earlier rule already won
            for field, p in pats:  # every pattern must match one of its field's values
                for v in every if field == "any" else utf8[field]:
                    if p.search(v):
                        break
                else:
                    break
            else:
                best, depth = rule, len(rule.category)
        return best


@lru_cache(maxsize=8)
def _matcher(rules: CategoryRules) -> _Matcher:
    return _Matcher(rules)


def frame_categories(doc: dict[str, Any], rules: CategoryRules) -> dict[str, Rule]:
    """The rule that categorizes each frame of doc (by frame id); frames no rule matches are absent."""
    m = _matcher(rules)
    out: dict[str, Rule] = {}
    # a day's frames repeat a few (app, window titles, site) values: each is matched once
    seen: dict[tuple[Any, ...], Rule | None] = {}
    for f in doc["frames"]:
        values = _values(f)
        key = (*values["app"], None, *(values["title"] if m.titles else ()), None, *values["site"])
        if key in seen:
            rule = seen[key]
        else:
            rule = seen[key] = m.pick_values(values)
        if rule is not None:
            out[f["id"]] = rule
    return out


def categorize(doc: dict[str, Any], rules: CategoryRules) -> dict[str, Any]:
    """A copy of doc with the ``af.categories`` inferred block: one item per (category, rule),
    in the order minutes desc, label, rule. The measured tier is untouched; a day whose frames
    no rule matches gets no block."""
    picked = frame_categories(doc, rules)
    if not picked:
        return doc
    order = {r.name: i for i, r in enumerate(rules.rules)}
    groups: dict[str, list[dict[str, Any]]] = {}
    for f in doc["frames"]:
        rule = picked.get(f["id"])
        if rule is not None:
            groups.setdefault(rule.name, []).append(f)
    by_name = {r.name: r for r in rules.rules}
    confidence = "speculative" if rules.source == "defaults" else "medium"
    keyed = []
    for name, frames in groups.items():
        rule = by_name[name]
        us = sum(round(f["active_min"] * 60_000_000) for f in frames)  # integer sum: no float drift
        keyed.append(((-us, rule.label, order[name]), {
            "label": rule.label,
            "category": list(rule.category),
            "confidence": confidence,
            "rule": rule.name,
            "pattern": rule.describe(),
            "minutes": round(us / 60_000_000, 2),
            "evidence": {"frames": [f["id"] for f in frames]},
        }))
    keyed.sort(key=lambda k: k[0])
    items = [item for _, item in keyed]
    out = dict(doc)
    inferred = dict(doc.get("inferred", {}))
    inferred[NAMESPACE] = {
        "generator": f"{GENERATOR} (rules: {rules.source}, sha256 {rules.sha256[:12]})",
        "items": items,
    }
    out["inferred"] = inferred
    return out


# -- reading the block back -------------------------------------------------------------------


def categories_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each frame id's category item in doc (absent: uncategorized)."""
    out: dict[str, dict[str, Any]] = {}
    for item in doc.get("inferred", {}).get(NAMESPACE, {}).get("items", []):
        for fid in item["evidence"].get("frames", []):
            out.setdefault(fid, item)
    return out


def totals(doc: dict[str, Any], depth: int | None = None) -> list[tuple[str, float, int]]:
    """(category label, minutes per monitor, frames) of doc, cut to ``depth`` levels when given,
    most minutes first; frames no rule matched count as Uncategorized."""
    of = categories_of(doc)
    acc: dict[str, list[int]] = {}
    for f in doc["frames"]:
        item = of.get(f["id"])
        path = tuple(item["category"]) if item else (UNCATEGORIZED,)
        label = SEP.join(path[:depth] if depth else path)
        a = acc.setdefault(label, [0, 0])
        a[0] += round(f["active_min"] * 60_000_000)
        a[1] += 1
    rows = [(label, round(v[0] / 60_000_000, 2), v[1]) for label, v in acc.items()]
    rows.sort(key=lambda r: (-r[1], r[0]))
    return rows
