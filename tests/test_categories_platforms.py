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
