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
from collections.abc import Sequence
from dataclasses import dataclass, replace
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
# characters of each pattern of a rule a document item carries: the cross-platform defaults list dozens
# of names per rule, which made every day's document (and each MCP answer's header) about 1,000
# tokens longer; the rule's name and the rule set's sha256 already name it exactly
PATTERN_CHARS = 40
_PATTERN_KEYS = ("any",) + FIELDS


def _brief(rx: str) -> str:
    if len(rx) <= PATTERN_CHARS:
        return rx
    head = rx[:PATTERN_CHARS]
    cut = head.rfind("|")
    return (head[:cut + 1] if cut > 0 else head) + "…"


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

    def describe(self, brief: bool = False) -> str:
        """The rule in a line; ``brief``: each pattern cut after PATTERN_CHARS characters, at an
        alternative's end where there is one (`af categories list` shows the whole rule)."""
        flags = " (ignore case)" if self.ignore_case else ""
        what = " and ".join(f"{field} ~ /{_brief(rx) if brief else rx}/" for field, rx in self.patterns)
        return f"{what or 'never (type none)'}{flags}"


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


# Written for this project: common apps and sites, deliberately coarse, in the spirit of
# ActivityWatch's default categories (which match names and titles anywhere: "GitHub|vim" takes
# any title saying vim). These are anchored instead: an app rule names whole app names, and a
# title rule reads a browser's (or a Windows store app's) title only, where a site or app is
# named as its own part. A user's own file replaces them entirely (it is easier to reason about
# one list than about overrides). App names are what each platform's recorders report, matched
# ignoring case, and also through the app's short name (see ``app_names``): Windows process names
# (``Code.exe``, ``WINWORD.EXE``), macOS app and bundle names (``Google Chrome``,
# ``com.microsoft.VSCode``), X11 WM_CLASS (``code``, ``gnome-terminal-server``, ``Navigator``,
# ``org.gnome.Nautilus``), Android app labels (``Chrome``, ``Signal``). A bundle id whose last
# part is not the app's name (``com.spotify.client``) is written out whole.


def _apps(*names: str) -> str:
    """A pattern taking exactly these app names (each a regex fragment)."""
    return "^(" + "|".join(names) + ")$"


def _titled(*names: str) -> str:
    """A pattern taking a title where one of ``names`` is a part of its own: at the start or after a
    separator (" - ", " · ", " | ", " — ", " / ", " : "), and followed by a space or the end, as browsers
    title pages ("Pull requests · acme/shop · GitHub — Mozilla Firefox"); a name inside a
    sentence ("Learn GitHub Actions") is not taken."""
    return r"(^|\s[-–—·|/:]\s)(" + "|".join(names) + r")(\s|$)"


_BROWSERS = _apps(
    "chrome", "google chrome( (beta|dev|canary))?", "google-chrome(-stable|-beta|-unstable)?", "chromium(-browser)?",
    "firefox( developer edition| nightly)?", "firefox-esr", "navigator", "librewolf", "waterfox", "floorp", "zen",
    "zen browser", "msedge", "microsoft edge", "com\\.microsoft\\.edgemac", "microsoft-edge(-stable|-beta|-dev)?", "iexplore", "safari",
    "safari technology preview", "brave", "brave browser", "brave-browser", "opera", "opera gx", "vivaldi",
    "vivaldi-stable", "arc", "orion", "thorium", "epiphany", "falkon", "qutebrowser", "duckduckgo")
# Windows runs its store apps (Settings, Calculator, Photos...) in ApplicationFrameHost.exe: the
# window title names the app.
_STORE_HOST = _apps("applicationframehost")

_PROGRAMMING = _apps(
    "code", "code - oss", "code-oss", "code - insiders", "code-insiders", "vscode", "vscodium", "codium",
    "visual studio code", "devenv", "visual studio", "cursor", "windsurf", "zed", "fleet", "pycharm.*",
    "intellij.*", "jetbrains-.*", "idea(64)?", "webstorm(64)?", "goland(64)?", "clion(64)?", "rider(64)?",
    "phpstorm(64)?", "rubymine(64)?", "datagrip(64)?", "rustrover(64)?", "xcode", "android studio", "studio64",
    "eclipse", "netbeans(64)?", "qtcreator", "codeblocks", "sublime text", "sublime_text", "sublime merge",
    "sublime_merge", "emacs", "g?vim", "nvim", "nvim-qt", "neovide", "kate", "notepad\\+\\+", "geany", "spyder",
    "rstudio", "matlab", "ghidra", "scite", "postman", "insomnia", "bruno", "dbeaver", "ssms", "azuredatastudio",
    "azure data studio", "pgadmin4", "docker desktop", "github desktop", "githubdesktop", "gitkraken", "sourcetree",
    "fork", "unity", "unity hub", "godot.*")
_TERMINALS = _apps(
    "terminal", "iterm2?", "alacritty", "kitty", "wezterm(-gui)?", "konsole", "gnome-terminal(-server)?", "kgx",
    "gnome-console", "ptyxis", "xfce4-terminal", "terminator", "xterm", "urxvt", "rxvt", "st", "foot", "tilix",
    "qterminal", "lxterminal", "mate-terminal", "guake", "yakuake", "tilda", "warp", "ghostty", "hyper", "tabby",
    "windows terminal", "windowsterminal", "wt", "openconsole", "powershell", "powershell_ise", "pwsh", "cmd",
    "conhost", "mintty", "git-bash", "git bash", "bash", "wsl", "ubuntu[0-9.]*", "putty", "mobaxterm", "securecrt",
    "termius")
_DOCUMENTS = _apps(
    "libreoffice.*", "soffice(\\.bin)?", "microsoft (word|excel|powerpoint|onenote)", "word", "winword", "excel",
    "powerpoint", "powerpnt", "onenote", "wps", "pages", "numbers", "keynote", "obsidian", "notion", "logseq",
    "joplin", "typora", "acrobat", "acrord32", "adobe acrobat.*", "acrobat reader", "sumatrapdf", "foxitpdfreader",
    "foxit pdf reader", "preview", "evince", "okular", "zathura", "atril", "xreader", "notepad", "textedit",
    "gedit", "gnome-text-editor", "mousepad", "kwrite", "xed", "pluma", "wordpad")
_DESIGN = _apps(
    "figma", "gimp(-[0-9.]+)?", "inkscape", "krita", "blender", "adobe photoshop.*", "photoshop",
    "adobe illustrator.*", "illustrator", "adobe indesign.*", "indesign", "sketch", "affinity (designer|photo|publisher).*",
    "mspaint", "paint", "paintdotnet", "paint\\.net", "pinta", "darktable", "rawtherapee", "lightroom",
    "adobe lightroom.*", "penpot", "draw\\.io", "canva")
_VIDEO_WORK = _apps(
    "kdenlive", "resolve", "davinci resolve", "adobe premiere pro.*", "premiere pro", "final cut pro", "imovie",
    "shotcut", "openshot", "obs", "obs64", "obs studio", "handbrake")
_AUDIO_WORK = _apps("audacity", "reaper", "ableton live.*", "fl64", "fl studio.*", "logic pro", "garageband",
                    "ardour[0-9]*", "bitwig studio")
_EMAIL = _apps("mail", "outlook", "olk", "microsoft outlook", "hxoutlook", "thunderbird", "betterbird", "evolution",
               "geary", "kmail", "mailspring", "spark", "airmail", "claws-mail", "mutt", "neomutt", "alpine", "gmail")
_CHAT = _apps(
    "slack", "com\\.tinyspeck\\.slackmacgap", "discord", "microsoft teams.*", "teams", "ms-teams", "msteams",
    "com\\.microsoft\\.teams2?", "us\\.zoom\\.xos", "signal", "signal beta", "telegram.*",
    "whatsapp", "element", "element-desktop", "zoom(\\.us)?", "zoom workplace", "skype", "webex", "ciscocollabhost",
    "mattermost", "rocket\\.chat", "messenger", "wechat", "weixin", "viber", "zulip", "beeper", "ferdium", "rambox",
    "nheko", "neochat", "pidgin", "hexchat")
_MUSIC = _apps("spotify", "com\\.spotify\\.client", "music", "itunes", "apple music", "foobar2000", "aimp", "winamp", "musicbee", "amarok",
               "clementine", "strawberry", "elisa", "rhythmbox", "lollypop", "audacious", "deezer", "tidal",
               "youtube music", "cider")
_VIDEO = _apps("vlc", "mpv", "netflix", "youtube", "mpc-hc(64)?", "mpc-be(64)?", "potplayermini(64)?", "video\\.ui",
               "movies & tv", "quicktime player", "iina", "totem", "celluloid", "smplayer", "haruna", "plex",
               "plex htpc", "kodi", "prime video", "disney\\+", "tv")
_GAMES = _apps("steam", "steamwebhelper", "epicgameslauncher", "battle\\.net", "gog galaxy", "galaxyclient",
               "minecraft.*", "rimworld.*", "lutris", "heroic", "ubisoft connect", "xbox")
_SOCIAL = _apps("instagram", "facebook", "reddit", "twitter", "x", "linkedin", "mastodon", "bluesky", "threads",
                "tiktok")
_FILES = _apps(
    "explorer", "finder", "nautilus", "dolphin", "thunar", "nemo", "pcmanfm(-qt)?", "caja", "files",
    "totalcmd(64)?", "total commander", "dopus", "directory opus", "doublecmd", "double commander", "winscp",
    "filezilla", "cyberduck", "onedrive", "dropbox", "google drive", "nextcloud")
_REMOTE = _apps("mstsc", "msrdc", "microsoft remote desktop", "windows app", "remmina", "vncviewer", "tigervnc.*",
                "teamviewer", "anydesk", "rustdesk", "vmconnect", "vmware.*", "virtualbox(vm)?", "virt-manager",
                "parallels desktop")
# The operating system's own windows: start menus and launchers, search, lock screens, settings,
# task managers and system monitors.
_SYSTEM = _apps(
    "searchhost", "searchapp", "searchui", "shellexperiencehost", "startmenuexperiencehost", "lockapp", "logonui",
    "textinputhost", "taskmgr", "systemsettings", "control", "mmc", "regedit", "perfmon", "resmon", "msconfig",
    "system settings", "system preferences", "activity monitor", "spotlight", "dock", "loginwindow",
    "control center", "controlcenter", "notificationcenter", "gnome-shell", "plasmashell", "krunner",
    "gnome-control-center", "systemsettings5?", "gnome-system-monitor", "ksysguard", "plasma-systemmonitor",
    "xfce4-panel", "xfce4-settings-manager", "rofi", "dmenu", "ulauncher", "albert", "alfred", "raycast")
_UTILITIES = _apps(
    "calculator", "calculatorapp", "gnome-calculator", "kcalc", "galculator", "qalculate.*", "snippingtool",
    "screenclippinghost", "screensketch", "screenshot", "gnome-screenshot", "spectacle", "flameshot", "sharex",
    "greenshot", "keepass.*", "keepassxc", "1password", "bitwarden", "proton pass", "7zfm", "winrar",
    "the unarchiver", "file-roller", "ark")

_DEFAULTS: list[dict[str, Any]] = [
    {"category": "Work > Programming", "ignore_case": True, "app": _PROGRAMMING},
    {"category": "Work > Programming > Terminal", "ignore_case": True, "app": _TERMINALS},
    {"category": "Work > Programming > Code hosting", "ignore_case": True,
     "site": r"^(github\.com|gitlab\.com|bitbucket\.org|codeberg\.org|sr\.ht)$"},
    {"category": "Work > Programming > Code hosting", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("GitHub", "GitLab", "Bitbucket", "Codeberg", "Gitea", "SourceHut")},
    {"category": "Work > Programming > Reference", "ignore_case": True,
     "site": r"^(stackoverflow\.com|stackexchange\.com|python\.org|mozilla\.org|readthedocs\.io|"
             r"docs\.rs|pypi\.org|npmjs\.com)$"},
    {"category": "Work > Programming > Reference", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("Stack Overflow", "Stack Exchange", "Super User", "Server Fault", "Ask Ubuntu", "MDN Web Docs",
                      "MDN", r"Python [0-9.]+ documentation", "Read the Docs", "Docs\\.rs", "PyPI", "npm",
                      "Microsoft Learn")},
    {"category": "Work > Planning", "ignore_case": True, "app": _apps("linear", "jira", "trello", "asana", "clickup")},
    {"category": "Work > Planning", "ignore_case": True,
     "site": r"(^|\.)(atlassian\.net|linear\.app|trello\.com|asana\.com|clickup\.com)$"},
    {"category": "Work > Planning", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("Jira", "Linear", "Trello", "Asana", "ClickUp")},
    {"category": "Work > Documents", "ignore_case": True, "app": _DOCUMENTS},
    {"category": "Work > Documents", "ignore_case": True,
     "site": r"^(docs\.google\.com|notion\.so|overleaf\.com|office\.com)$"},
    {"category": "Work > Documents", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("Google Docs", "Google Sheets", "Google Slides", "Google Drive", "Notion", "Overleaf",
                      "Confluence", "Word", "Excel", "PowerPoint", "OneNote")},
    {"category": "Work > Design", "ignore_case": True, "app": _DESIGN},
    {"category": "Work > Video", "ignore_case": True, "app": _VIDEO_WORK},
    {"category": "Work > Audio", "ignore_case": True, "app": _AUDIO_WORK},
    {"category": "Comms > Email", "ignore_case": True, "app": _EMAIL},
    {"category": "Comms > Email", "ignore_case": True, "site": r"^(mail\.google\.com|outlook\.live\.com|proton\.me)$"},
    {"category": "Comms > Email", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("Gmail", "Outlook", "Proton Mail", "Fastmail", "Yahoo Mail")},
    {"category": "Comms > Chat", "ignore_case": True, "app": _CHAT},
    {"category": "Comms > Chat", "ignore_case": True, "site": r"^(slack\.com|discord\.com|teams\.microsoft\.com|zoom\.us)$"},
    {"category": "Comms > Chat", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("Slack", "Microsoft Teams", "Discord", "WhatsApp", "Messenger", "Telegram( Web)?", "Element",
                      "Google Chat", "Google Meet", "Zoom")},
    {"category": "Search", "ignore_case": True, "site": r"^(google\.com|bing\.com|duckduckgo\.com|ecosia\.org|kagi\.com)$"},
    {"category": "Search", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("Google Search", "DuckDuckGo", "Ecosia", "Kagi Search", "Startpage")},
    # Music before video: "YouTube Music" is also a YouTube title, and the earlier of two equally
    # deep rules wins
    {"category": "Media > Music", "ignore_case": True, "app": _MUSIC},
    {"category": "Media > Music", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("Spotify", "Deezer", "SoundCloud", "YouTube Music", "Apple Music", "TIDAL", "Bandcamp")},
    {"category": "Media > Video", "ignore_case": True, "app": _VIDEO},
    {"category": "Media > Video", "ignore_case": True, "site": r"^(youtube\.com|netflix\.com|vimeo\.com|twitch\.tv)$"},
    {"category": "Media > Video", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("YouTube", "Netflix", "Twitch", "Vimeo", "Prime Video", "Disney\\+", "Plex")},
    {"category": "Media > Games", "ignore_case": True, "app": _GAMES},
    {"category": "Media > Games", "ignore_case": True, "app": _apps("javaw?"), "title": _titled("Minecraft.*")},
    {"category": "Social", "ignore_case": True, "app": _SOCIAL},
    {"category": "Social", "ignore_case": True,
     "site": r"^(twitter\.com|x\.com|facebook\.com|instagram\.com|reddit\.com|linkedin\.com|mastodon\.social|"
             r"bsky\.app)$"},
    {"category": "Social", "ignore_case": True, "app": _BROWSERS,
     "title": _titled("Reddit", "Facebook", "Instagram", "LinkedIn", "Mastodon", "Bluesky", "Hacker News", "X",
                      "Twitter")},
    {"category": "System > Files", "ignore_case": True, "app": _FILES},
    {"category": "System > Remote", "ignore_case": True, "app": _REMOTE},
    {"category": "System > Utilities", "ignore_case": True, "app": _UTILITIES},
    {"category": "System", "ignore_case": True, "app": _SYSTEM},
    # store apps, by the title their host window carries
    {"category": "System", "ignore_case": True, "app": _STORE_HOST,
     "title": _apps("settings", "microsoft store", "windows security", "task manager")},
    {"category": "System > Utilities", "ignore_case": True, "app": _STORE_HOST,
     "title": _apps("calculator", "snipping tool", "sticky notes", "clock", "alarms & clock")},
    {"category": "Media > Video", "ignore_case": True, "app": _STORE_HOST,
     "title": _titled("Movies & TV", "Media Player", "Netflix")},
    {"category": "Comms > Email", "ignore_case": True, "app": _STORE_HOST, "title": _titled("Mail", "Outlook")},
    # Last: a site or title rule above says more than the browser; a browser with neither known
    # (an ActivityWatch capture without its web watcher) is still browsing, not uncategorized.
    {"category": "Browsing", "ignore_case": True, "app": _BROWSERS},
]


@lru_cache(maxsize=1)
def default_rules() -> CategoryRules:
    return parse_rules({"rules": _DEFAULTS}, "defaults")


# -- matching ---------------------------------------------------------------------------------


_BUNDLE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z0-9_-]+){2,}$")  # com.microsoft.VSCode
_SUFFIX = re.compile(r"\.(exe|app|desktop)$", re.IGNORECASE)


def app_names(app: str) -> list[str]:
    """The names an app value is matched by: itself, then its short names when they differ:
    without a Windows ``.exe`` (also ``.app``, ``.desktop``), and the last part of a macOS bundle
    id / reverse-DNS WM_CLASS (``com.microsoft.VSCode`` -> ``VSCode``, ``org.gnome.Nautilus`` ->
    ``Nautilus``). Rules are matched against each, so ``^code$`` takes ``Code.exe``."""
    names = [app]
    bare = _SUFFIX.sub("", app.strip())
    # the bare name too when it is a bundle id: a rule naming one whole (com.spotify.client)
    # takes it with a suffix as well
    for short in (bare, bare.rsplit(".", 1)[1] if _BUNDLE.match(bare) else ""):
        if short and short not in names:
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
            "pattern": rule.describe(brief=True),
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


# -- editing and testing rules (af categories) ------------------------------------------------


TESTED = "the tested rule"  # how evidence names a rule given on the command line


def rule_from_text(text: str, category: str | None = None, ignore_case: bool = True) -> Rule:
    """The rule ``af categories test`` tries, from what a person types: a rule object of this
    project's format (``{"category": "Fun", "title": "YouTube"}``) or of ActivityWatch's
    (``{"name": ["Fun"], "rule": {"type": "regex", "regex": "YouTube"}}``), or a pattern:
    ``app:REGEX``, ``title:REGEX``, ``site:REGEX`` or a bare ``REGEX`` (any field, as
    ActivityWatch's rules match). A pattern's category is ``category`` (default "Tested") and it
    ignores case unless told not to; a rule object says both itself. UserError says what is
    wrong with it."""
    text = text.strip()
    if not text:
        raise UserError("the rule is empty: give a pattern (e.g. title:YouTube) or a JSON rule object")
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"{TESTED} starts with {{ but is not readable JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise UserError(f"{TESTED} must be one JSON object")
        if category is not None:  # the object's own category, unless the command line gives one
            obj = dict(obj, **({"name": _path(category, TESTED)} if "rule" in obj else {"category": category}))
        data = {"categories": [obj]} if "rule" in obj else {"rules": [obj]}
        rules = parse_rules(data, TESTED)
        (rule,) = rules.rules
        if not rule.patterns:
            raise UserError(f"{TESTED} ({rule.label}) is a 'none' rule: it never matches anything")
        return replace(rule, name=TESTED)
    field, sep, rx = text.partition(":")
    if not sep or field not in _PATTERN_KEYS:  # a bare pattern: a colon in it is part of the regex
        field, rx = "any", text
    raw = {"category": category or "Tested", field: rx, "ignore_case": ignore_case}
    (rule,) = parse_rules({"rules": [raw]}, TESTED).rules
    return replace(rule, name=TESTED)


@dataclass(frozen=True)
class TrialFrame:
    day: str
    frame: dict[str, Any]
    before: Rule | None  # the rule that categorizes it now (None: Uncategorized)
    takes: bool  # whether the tested rule, added to the rules, would categorize it instead


def trial(docs: Sequence[tuple[str, dict[str, Any]]], rule: Rule, rules: CategoryRules,
          first: bool = False) -> list[TrialFrame]:
    """Which frames of the (day, document) pairs ``rule`` matches, in day and frame order, each
    with the rule that categorizes it under ``rules`` and whether ``rule``, added last (or
    ``first``) to ``rules``, would take it: the pick is the usual one, deepest then earliest, so a
    rule only takes frames whose category is shallower (or equally deep and, added first, later)."""
    alone = _Matcher(CategoryRules((rule,), TESTED, ""))
    now = _matcher(rules)
    added = (rule, *rules.rules) if first else (*rules.rules, rule)
    both = _Matcher(CategoryRules(added, TESTED, ""))
    out: list[TrialFrame] = []
    for day, doc in docs:
        for f in doc["frames"]:
            values = _values(f)
            if alone.pick_values(values) is None:
                continue
            out.append(TrialFrame(day, f, now.pick_values(values), both.pick_values(values) is rule))
    return out


@dataclass(frozen=True)
class AppShare:
    app: str
    minutes: float  # per monitor, uncategorized
    frames: int
    days: int
    title: str | None  # the window title with the most of its uncategorized minutes, to write a rule from


def uncategorized_apps(docs: Sequence[tuple[str, dict[str, Any]]], rules: CategoryRules) -> tuple[list[AppShare], float]:
    """The apps of frames no rule takes, most minutes first (then by name), and the documents'
    total minutes (per monitor), so a share can be given."""
    m = _matcher(rules)
    us: dict[str, list[Any]] = {}  # app -> [us, frames, days, {title: us}]
    total = 0
    for day, doc in docs:
        for f in doc["frames"]:
            t = round(f["active_min"] * 60_000_000)  # integer sums: no float drift
            total += t
            if m.pick_values(_values(f)) is not None:
                continue
            acc = us.setdefault(f["app"], [0, 0, set(), {}])
            acc[0] += t
            acc[1] += 1
            acc[2].add(day)
            for w in f.get("windows", ()):
                if w.get("title"):
                    acc[3][w["title"]] = acc[3].get(w["title"], 0) + t
    rows = []
    for app, (t, n, days, titles) in us.items():
        title = min(titles.items(), key=lambda kv: (-kv[1], kv[0]))[0] if titles else None
        rows.append(AppShare(app, round(t / 60_000_000, 2), n, len(days), title))
    rows.sort(key=lambda r: (-r.minutes, r.app))
    return rows, round(total / 60_000_000, 2)
