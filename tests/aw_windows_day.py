"""A working day on a Windows PC as ActivityWatch exports it (issue 40): the buckets of
aw-watcher-window and aw-watcher-afk in the web UI's export (GET /api/0/export), newest event
first, apps as Windows reports them (process file names: ``Code.exe``, ``WINWORD.EXE``,
``ApplicationFrameHost.exe`` for store apps) and no web watcher, so browsers are known by their
window titles only. The same shape as tests/test_real_captures_pipeline.py's windows_dump, over
a whole day: mail and chat in the morning, code, terminals and the browser, a meeting, the
shell's own windows (start menu, search, lock screen, task manager), a lunch away, music.

The schedule is drawn from a seeded generator: the same bytes every run."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

DAY = "2026-03-17"
HOST = "DESKTOP-7Q2LK3M"

# (app, title) pools a period draws from, with weights; titles as each app writes them on Windows
_FF, _CH, _ED = " — Mozilla Firefox", " - Google Chrome", " - Work - Microsoft Edge"
CODING = [
    (30, "Code.exe", "orders.py - webshop - Visual Studio Code"),
    (14, "Code.exe", "test_orders.py - webshop - Visual Studio Code"),
    (6, "WindowsTerminal.exe", "pwsh in webshop"),
    (4, "powershell.exe", "Windows PowerShell"),
    (2, "cmd.exe", r"C:\WINDOWS\system32\cmd.exe"),
    (3, "mintty.exe", "MINGW64:/c/Users/jane/src/webshop"),
    (5, "firefox.exe", "Pull requests · acme/webshop · GitHub" + _FF),
    (4, "firefox.exe", "python - How do I mock datetime.now? - Stack Overflow" + _FF),
    (3, "firefox.exe", "unittest.mock — mock object library — Python 3.13 documentation" + _FF),
    (2, "chrome.exe", "WEB-412 Refunds over 30 days - Jira" + _CH),
    (2, "Postman.exe", "Postman"),
    (2, "Slack.exe", "webshop-dev (Channel) - Acme - Slack"),
    (1, "Notepad++.exe", r"C:\Users\jane\notes\todo.md - Notepad++"),
    (1, "explorer.exe", "webshop"),
    (1, "SearchHost.exe", "Search"),
    (1, "StartMenuExperienceHost.exe", "Start"),
    (1, "ShellExperienceHost.exe", "New notification"),
    (1, "firefox.exe", "python re2 - Google Search" + _FF),
    (2, "rider64.exe", "Billing – InvoiceService.cs"),
    (2, "DBeaver.exe", "DBeaver 24.1.0 - <webshop> orders"),
    (1, "Docker Desktop.exe", "Docker Desktop"),
    (1, "GitHubDesktop.exe", "GitHub Desktop"),
    (1, "putty.exe", "deploy@build-01: ~"),
    (1, "mstsc.exe", "build-01 - Remote Desktop Connection"),
    (1, "KeePassXC.exe", "Passwords.kdbx - KeePassXC"),
    (1, "javaw.exe", "Oracle SQL Developer : orders"),  # no default rule names it: uncategorized
]
OFFICE = [
    (20, "OUTLOOK.EXE", "Inbox - jane.doe@acme.example - Outlook"),
    (12, "ms-teams.exe", "Chat | Priya Raman | Microsoft Teams"),
    (10, "WINWORD.EXE", "Q2 plan.docx - Word"),
    (8, "EXCEL.EXE", "budget-2026.xlsx - Excel"),
    (5, "msedge.exe", "Q2 roadmap - Google Docs" + _ED),
    (3, "msedge.exe", "Mail - Jane Doe - Outlook" + _ED),
    (3, "Acrobat.exe", "invoice-0412.pdf - Adobe Acrobat Reader (64-bit)"),
    (2, "ApplicationFrameHost.exe", "Calculator"),
    (2, "explorer.exe", "Downloads"),
    (1, "Taskmgr.exe", "Task Manager"),
    (1, "ApplicationFrameHost.exe", "Settings"),
    (2, "notepad.exe", "meeting-notes.txt - Notepad"),
    (1, "SnippingTool.exe", "Snipping Tool"),
    (1, "SearchHost.exe", "Search"),
    (2, "POWERPNT.EXE", "Q2 review.pptx - PowerPoint"),
    (2, "ONENOTE.EXE", "Team notebook - OneNote"),
    (1, "SumatraPDF.exe", "spec-v3.pdf - SumatraPDF"),
    (1, "7zFM.exe", "C:\\Users\\jane\\Downloads\\logs.zip\\"),
    (1, "OneDrive.exe", "Microsoft OneDrive"),
    (2, "AcmeTimesheet.exe", "Timesheet - week 12"),  # an in-house app: uncategorized
]
BREAK = [
    (6, "firefox.exe", "Lo-fi beats to code to - YouTube" + _FF),
    (5, "firefox.exe", "r/Python - Reddit" + _FF),
    (3, "Spotify.exe", "Spotify Premium"),
    (3, "chrome.exe", "Hacker News" + _CH),
    (2, "WhatsApp.exe", "WhatsApp"),
    (1, "firefox.exe", "Home / X" + _FF),
    (2, "Discord.exe", "#general | Friends - Discord"),
    (1, "vlc.exe", "talk.mp4 - VLC media player"),
    (1, "steam.exe", "Steam"),
]
MEETING = [
    (10, "Zoom.exe", "Zoom Meeting"),
    (2, "ms-teams.exe", "Weekly sync | Microsoft Teams"),
    (1, "OUTLOOK.EXE", "Calendar - jane.doe@acme.example - Outlook"),
]

# (start HH:MM, end HH:MM, pool, shortest and longest event in seconds)
_PERIODS = [
    ("08:31", "09:20", OFFICE, 5, 180),
    ("09:20", "11:30", CODING, 5, 300),
    ("11:30", "12:00", MEETING, 120, 1200),
    ("12:55", "13:15", BREAK, 10, 240),
    ("13:15", "15:40", CODING, 5, 300),
    ("15:40", "16:30", OFFICE, 5, 180),
    ("16:30", "17:45", CODING, 5, 300),
]
LUNCH = ("12:00", "12:55")  # away: the lock screen, then nothing


def _at(hhmm: str) -> datetime:
    h, m = map(int, hhmm.split(":"))
    y, mo, d = map(int, DAY.split("-"))
    return datetime(y, mo, d, h, m, tzinfo=UTC)


def _event(start: datetime, secs: float, data: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": start.isoformat(), "duration": secs, "data": data}


def window_events(seed: int = 40) -> list[tuple[datetime, float, str, str]]:
    """The day's window events, oldest first: (start, seconds, app, title)."""
    rnd = random.Random(seed)
    out: list[tuple[datetime, float, str, str]] = [(_at("08:30"), 65.0, "LockApp.exe", "Windows Default Lock Screen")]
    for start, end, pool, lo, hi in _PERIODS:
        t, stop = _at(start), _at(end)
        weights = [w for w, _a, _t in pool]
        while t < stop:
            _w, app, title = rnd.choices(pool, weights)[0]
            if out and (out[-1][2], out[-1][3]) == (app, title):
                continue  # the watcher merges an unchanged window into one event
            secs = min(float(rnd.randint(lo, hi)), (stop - t).total_seconds())
            out.append((t, secs, app, title))
            t += timedelta(seconds=secs)
    out.append((_at(LUNCH[0]), 40.0, "LockApp.exe", "Windows Default Lock Screen"))
    out.sort(key=lambda e: e[0])
    return out


def _bucket(bid: str, kind: str, client: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": bid, "created": "2026-03-01T08:00:00.000000+00:00", "name": None, "type": kind,
            "client": client, "hostname": HOST, "data": {}, "events": events}


def export() -> dict[str, Any]:
    """The export's JSON: window and afk buckets, each newest event first, as aw-server writes it."""
    win = [_event(s, secs, {"app": app, "title": title}) for s, secs, app, title in window_events()]
    afk = [_event(_at("08:30"), (_at(LUNCH[0]) - _at("08:30")).total_seconds(), {"status": "not-afk"}),
           _event(_at(LUNCH[0]), (_at(LUNCH[1]) - _at(LUNCH[0])).total_seconds(), {"status": "afk"}),
           _event(_at(LUNCH[1]), (_at("17:45") - _at(LUNCH[1])).total_seconds(), {"status": "not-afk"})]
    return {"buckets": {
        f"aw-watcher-window_{HOST}": _bucket(f"aw-watcher-window_{HOST}", "currentwindow", "aw-watcher-window",
                                             win[::-1]),
        f"aw-watcher-afk_{HOST}": _bucket(f"aw-watcher-afk_{HOST}", "afkstatus", "aw-watcher-afk", afk[::-1]),
    }}
