"""Default categories take each platform's app names (issue 35): Windows process names, macOS app
and bundle names, X11 WM_CLASS values; case does not matter, nor a Windows ``.exe``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import categories as C

PROGRAMMING, TERMINAL = "Work > Programming", "Work > Programming > Terminal"
DOCS, EMAIL, FILES, BROWSING = "Work > Documents", "Comms > Email", "System > Files", "Browsing"

WINDOWS = [("Code.exe", PROGRAMMING), ("powershell.exe", TERMINAL), ("chrome.exe", BROWSING),
           ("WINWORD.EXE", DOCS), ("OUTLOOK.EXE", EMAIL), ("explorer.exe", FILES), ("msedge.exe", BROWSING),
           ("WindowsTerminal.exe", TERMINAL), ("EXCEL.EXE", DOCS), ("POWERPNT.EXE", DOCS), ("Slack.exe", "Comms > Chat"),
           ("pwsh.exe", TERMINAL), ("idea64.exe", PROGRAMMING), ("firefox.exe", BROWSING)]  # fmt: skip
MACOS = [("com.microsoft.VSCode", PROGRAMMING), ("Google Chrome", BROWSING), ("Terminal", TERMINAL),
         ("iTerm2", TERMINAL), ("Code", PROGRAMMING), ("Finder", FILES), ("Safari", BROWSING),
         ("com.apple.Safari", BROWSING), ("com.googlecode.iterm2", TERMINAL), ("Microsoft Word", DOCS),
         ("Microsoft Outlook", EMAIL), ("com.apple.finder", FILES), ("Mail", EMAIL)]  # fmt: skip
LINUX = [("code", PROGRAMMING), ("Code", PROGRAMMING), ("gnome-terminal-server", TERMINAL), ("firefox", BROWSING),
         ("Navigator", BROWSING), ("org.gnome.Nautilus", FILES), ("google-chrome", BROWSING),
         ("Google-chrome", BROWSING), ("konsole", TERMINAL), ("jetbrains-pycharm", PROGRAMMING),
         ("libreoffice-writer", DOCS), ("soffice.bin", DOCS), ("thunderbird", EMAIL)]  # fmt: skip


def category_of(app: str, site: str | None = None) -> str | None:
    doc: dict[str, Any] = {"frames": [{"id": "f-0001", "app": app, "site": site, "windows": [], "active_min": 1.0}]}
    rule = C.frame_categories(doc, C.default_rules()).get("f-0001")
    return rule.label if rule else None


@pytest.mark.parametrize(("app", "label"), WINDOWS)
def test_windows_process_names(app: str, label: str) -> None:
    assert category_of(app) == label


@pytest.mark.parametrize(("app", "label"), MACOS)
def test_macos_app_and_bundle_names(app: str, label: str) -> None:
    assert category_of(app) == label


@pytest.mark.parametrize(("app", "label"), LINUX)
def test_linux_wm_class(app: str, label: str) -> None:
    assert category_of(app) == label


def test_a_site_rule_says_more_than_the_browser() -> None:
    assert category_of("chrome.exe", "github.com") == "Work > Programming > Code hosting"
    assert category_of("Navigator", "google.com") == "Search"  # as deep as Browsing, and earlier
    assert category_of("Google Chrome", "example.org") == BROWSING


def test_names_that_only_look_alike_stay_uncategorized() -> None:
    for app in ("codec.exe", "barcode", "Terminal Velocity.exe", "com.example.notes", "explorer2", "xcode-helper"):
        assert category_of(app) is None, app


def test_a_users_rule_takes_the_short_name_too() -> None:
    rules = C.parse_rules({"rules": [{"category": "Mine", "app": "^Code$"}]}, "categories.json")
    doc = {"frames": [{"id": "f-1", "app": "Code.exe", "site": None, "windows": [], "active_min": 1.0},
                      {"id": "f-2", "app": "code.exe", "site": None, "windows": [], "active_min": 1.0}]}  # fmt: skip
    # The short name of Code.exe is Code; the rule asked for case to count, so code.exe is not Code.
    assert sorted(C.frame_categories(doc, rules)) == ["f-1"]


NAMES = [app for app, _label in WINDOWS + MACOS + LINUX]


@given(st.sampled_from(NAMES), st.sampled_from(["", ".exe", ".EXE", ".Exe"]), st.sampled_from(["same", "upper", "lower", "swap"]))
@settings(max_examples=150, deadline=None)
def test_case_and_exe_never_change_the_category(app: str, suffix: str, case: str) -> None:
    base = app[:-4] if app.lower().endswith(".exe") else app
    changed = {"same": base, "upper": base.upper(), "lower": base.lower(), "swap": base.swapcase()}[case] + suffix
    assert category_of(changed) == category_of(app) is not None


# Issue 40: the same app under each platform's names, and the title rules the defaults add.
SAME_APP = [
    (PROGRAMMING, ["Code.exe", "Code", "code", "Visual Studio Code", "com.microsoft.VSCode", "code-oss", "VSCodium"]),
    (PROGRAMMING, ["pycharm64.exe", "PyCharm", "jetbrains-pycharm", "com.jetbrains.pycharm", "pycharm-community"]),
    (PROGRAMMING, ["Notepad++.exe", "notepad++"]),
    (TERMINAL, ["powershell.exe", "WindowsTerminal.exe", "cmd.exe", "mintty.exe", "pwsh", "Windows Terminal"]),
    (TERMINAL, ["gnome-terminal-server", "Gnome-terminal", "konsole", "org.gnome.Ptyxis", "kitty", "Alacritty"]),
    (TERMINAL, ["iTerm2", "com.googlecode.iterm2", "Terminal", "com.apple.Terminal", "Ghostty", "WezTerm"]),
    (BROWSING, ["firefox.exe", "firefox", "Firefox", "Navigator", "org.mozilla.firefox", "firefox-esr"]),
    (BROWSING, ["chrome.exe", "Google Chrome", "google-chrome", "Chromium", "com.google.Chrome"]),
    (BROWSING, ["msedge.exe", "Microsoft Edge", "microsoft-edge", "com.microsoft.edgemac"]),
    (DOCS, ["WINWORD.EXE", "Microsoft Word", "com.microsoft.Word", "libreoffice-writer", "soffice.bin"]),
    (DOCS, ["Acrobat.exe", "AcroRd32.exe", "Preview", "evince", "org.gnome.Evince", "okular"]),
    (EMAIL, ["OUTLOOK.EXE", "olk.exe", "Microsoft Outlook", "thunderbird", "Mail", "com.apple.mail"]),
    ("Comms > Chat", ["ms-teams.exe", "Teams.exe", "Microsoft Teams", "Slack.exe", "Slack", "com.tinyspeck.slackmacgap",
                      "us.zoom.xos", "Zoom.exe"]),
    (FILES, ["explorer.exe", "Finder", "com.apple.finder", "org.gnome.Nautilus", "dolphin", "thunar"]),
    ("System", ["Taskmgr.exe", "SearchHost.exe", "LockApp.exe", "Activity Monitor", "gnome-system-monitor",
                "System Settings", "gnome-control-center"]),
    ("System > Remote", ["mstsc.exe", "Microsoft Remote Desktop", "remmina", "org.remmina.Remmina"]),
    ("Media > Music", ["Spotify.exe", "Spotify", "com.spotify.client", "spotify", "Music"]),
    ("Media > Video", ["vlc.exe", "VLC", "org.videolan.VLC", "vlc", "mpv"]),
]
_SEPARATORS = [" - ", " · ", " | ", " — ", " / "]


def _cased(name: str, how: str) -> str:
    return {"same": name, "upper": name.upper(), "lower": name.lower(), "swap": name.swapcase()}[how]


@given(st.sampled_from(SAME_APP), st.data(), st.sampled_from(["same", "upper", "lower", "swap"]),
       st.sampled_from(["", ".exe", ".EXE"]))
@settings(max_examples=300, deadline=None)
def test_every_platforms_name_of_an_app_lands_in_one_category(group, data, case, suffix):
    label, names = group
    name = data.draw(st.sampled_from(names))
    base = name[:-4] if name.lower().endswith(".exe") else name
    assert category_of(_cased(base, case) + suffix) == label, (name, case, suffix)


def title_of(app: str, title: str, site: str | None = None) -> str | None:
    doc: dict[str, Any] = {"frames": [{"id": "f-0001", "app": app, "site": site, "windows": [{"title": title}],
                                       "active_min": 1.0}]}
    rule = C.frame_categories(doc, C.default_rules()).get("f-0001")
    return rule.label if rule else None


NOT_BROWSERS = [n for label, names in SAME_APP if label != BROWSING for n in names]


@given(st.sampled_from(NOT_BROWSERS), st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_a_window_title_never_moves_an_app_that_is_not_a_browser(app, title):
    # title rules read browsers' (and Windows store apps') titles only: "GitHub" in an editor's
    # title is still programming in an editor, not code hosting
    assert title_of(app, title) == category_of(app)


SITE_TITLES = [("GitHub", "Work > Programming > Code hosting"), ("Stack Overflow", "Work > Programming > Reference"),
               ("YouTube", "Media > Video"), ("Gmail", EMAIL), ("Google Docs", DOCS), ("Reddit", "Social"),
               ("Slack", "Comms > Chat"), ("Jira", "Work > Planning"), ("YouTube Music", "Media > Music")]
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 ", min_size=0, max_size=20)


@given(st.sampled_from(["firefox.exe", "chrome.exe", "msedge.exe", "Firefox", "Navigator", "Safari"]),
       st.sampled_from(SITE_TITLES), _WORD, st.sampled_from(_SEPARATORS), st.sampled_from(_SEPARATORS),
       st.sampled_from(["same", "upper", "lower"]))
@settings(max_examples=300, deadline=None)
def test_a_browser_title_naming_a_site_as_its_own_part_takes_that_sites_category(app, site, page, sep, tail, case):
    name, label = site
    page = page.strip() or "Home"
    for title in (f"{page}{sep}{_cased(name, case)}{tail}Mozilla Firefox", f"{_cased(name, case)}{tail}{page}",
                  f"{page}{sep}{_cased(name, case)}"):
        assert title_of(app, title) == label, title
    # glued into a word, the name is not the site: the frame stays a browser's
    assert title_of(app, f"{page}x{name.replace(' ', '')}x - Google Chrome") in (BROWSING, label)
    assert title_of(app, f"zz{name.replace(' ', '')}zz") == BROWSING


def test_a_known_site_says_more_than_its_title():
    assert title_of("firefox.exe", "Watch later - YouTube — Mozilla Firefox", "github.com") == \
        "Work > Programming > Code hosting"


@pytest.mark.parametrize(("title", "label"), [("Settings", "System"), ("Calculator", "System > Utilities"),
                                              ("Movies & TV", "Media > Video"), ("Photos", None)])
def test_windows_store_apps_are_known_by_their_hosts_title(title, label):
    assert title_of("ApplicationFrameHost.exe", title) == label
