"""The simulated user's world for ``af synth``: apps, web sites, entity pools, screen layouts.

Everything here is data plus pure functions of a ``random.Random`` the caller owns, so a seed
fixes the whole world. Screen layouts are templates: each screen kind (an app view or a web
page kind) has one accessibility tree whose leaves carry normalised bounds; containers carry
none, so a click either falls inside a leaf, near one, or nowhere (see ``resolve_click``).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field

# Real screen sizes per monitor (pixels). Click x/y and element_bounds on ui_events use them.
SCREENS: dict[str, tuple[int, int]] = {"monitor_1": (1512, 982), "monitor_2": (2560, 1440)}
TOLERANCE_PX = 40.0  # the paper's tolerance ring (section 4.3)

BROWSER = "Google Chrome"

FIRST = (
    "jane alex maria tom lucas emma noah chloe hugo lea paul sara omar ines leo nina marc julie "
    "yuki raj anna ivan sofia mateo amir zoe felix clara ravi elena diego mia louis nora karim "
    "lina theo eva arjun maya jonas ada sam lena oscar iris"
).split()
LAST = (
    "doe martin smith garcia dubois rossi kim chen nguyen patel muller lopez bernard moreau "
    "petit silva novak weber tanaka khan costa roux fischer laurent ito haddad meyer leroy "
    "olsen sato ferreira blanc morel duval park santos"
).split()
COMPANIES = (
    "acme globex initech umbrella hooli stark wayne vandelay soylent cyberdyne tyrell wonka "
    "aperture gringotts oscorp pied-piper massive-dynamic nakatomi dunder-mifflin prestige "
    "blue-sun monarch virtucon zorg sterling-cooper bluth genco krusty duff"
).split()
WORDS = (
    "pipeline deploy latency cache parser schema frames routine replay token budget invoice "
    "roadmap hiring design review metrics dashboard incident release migration onboarding "
    "pricing contract meeting notes draft feedback launch sprint backlog query index vector "
    "memory agent context report quarterly customer support billing export import sync"
).split()
SEARCH_TOPICS = (
    "python dataclass slots", "duckdb parquet append", "sqlite wal readonly", "cto paris",
    "dagster partitions", "tiktoken offline", "best ramen paris", "zoneinfo dst", "react useeffect",
    "rust borrow checker", "postgres vacuum", "kubernetes ingress", "weather paris", "flight lisbon",
    "hypothesis stateful testing", "mcp server python", "screen recorder macos", "vector database",
    "playwright chromium", "gx expectations", "typescript generics", "ssh agent forwarding",
)
REPOS = (
    "acme/activity-frames", "acme/api", "acme/web", "acme/infra", "acme/design-system",
    "duckdb/duckdb", "dagster-io/dagster", "python/cpython", "openai/tiktoken", "astral-sh/ruff",
    "pallets/flask", "tiangolo/fastapi", "vercel/next.js", "rust-lang/rust", "microsoft/vscode",
)
CHANNELS = ("eng-backend", "general", "design", "incidents", "random", "product", "sales", "hiring")
SUBREDDITS = ("python", "programming", "MachineLearning", "paris", "LocalLLaMA", "dataengineering")
TEXT_SNIPPETS = (
    "looks good to me", "can you take a look", "shipping this today", "thanks!", "on it",
    "let me check the logs", "meeting moved to 3pm", "fixed in the latest build", "see thread",
    "git status", "npm run dev", "pytest -x", "def parse_rows(self):", "return frames",
    "select count(*) from frames", "docker compose up", "make test", "ls -la",
)

# name, weight, may live on the second monitor, views
APPS: tuple[tuple[str, float, bool], ...] = (
    (BROWSER, 34.0, True), ("Cursor", 12.0, False), ("Slack", 10.0, True), ("Terminal", 7.0, False),
    ("Mail", 4.0, True), ("Finder", 3.0, False), ("Notion", 3.0, True), ("Figma", 2.0, False),
    ("Zoom", 1.5, True), ("Spotify", 1.5, True), ("Calendar", 1.5, True), ("Messages", 1.2, True),
    ("Microsoft Excel", 1.5, False), ("Microsoft Word", 0.8, False), ("Preview", 1.2, False),
    ("TextEdit", 0.6, False), ("1Password", 0.7, False), ("System Settings", 0.4, False),
    ("Linear", 1.0, True), ("Discord", 0.6, True), ("WhatsApp", 0.7, True), ("Obsidian", 0.8, True),
    ("Postman", 0.6, False), ("Docker Desktop", 0.5, False), ("TablePlus", 0.6, False),
    ("Activity Monitor", 0.3, True), ("Notes", 0.6, True), ("Reminders", 0.3, True),
    ("Photos", 0.2, False), ("Keynote", 0.4, False), ("Microsoft Teams", 0.5, True),
    ("Xcode", 0.3, False), ("Loom", 0.3, False), ("ChatGPT", 0.9, True), ("Claude", 0.9, True),
    ("Safari", 0.8, True), ("iTerm2", 0.8, False), ("Visual Studio Code", 0.8, False),
    ("Grafana Desktop", 0.2, True), ("Raycast", 0.4, False),
)
BROWSERS = {BROWSER, "Safari"}

# Per app: toolbar buttons, sidebar rows, content (role, name) leaves for its main view.
APP_UI: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "Cursor": (("Explorer", "Search", "Source Control", "Run", "Extensions", "Chat"),
               ("src", "tests", "docs", "pyproject.toml", "README.md", "Makefile"),
               (("AXTextArea", "Editor"), ("AXButton", "Accept"), ("AXButton", "Reject"),
                ("AXTextField", "Ask Cursor"), ("AXTabGroup", "Open Editors"), ("AXStaticText", "Problems"))),
    "Slack": (("Home", "DMs", "Activity", "Later", "Search"),
              tuple("#" + c for c in CHANNELS),
              (("AXTextField", "Message"), ("AXButton", "Send"), ("AXButton", "Reply in thread"),
               ("AXButton", "Add reaction"), ("AXStaticText", "Messages"), ("AXLink", "Huddle"))),
    "Terminal": (("New Tab", "Split", "Clear"), ("zsh", "ssh prod", "python"),
                 (("AXTextArea", "Shell"), ("AXStaticText", "Output"))),
    "Mail": (("Get Mail", "Compose", "Archive", "Delete", "Reply", "Forward", "Flag"),
             ("Inbox", "Drafts", "Sent", "Junk", "Archive", "Newsletters"),
             (("AXTextField", "Search"), ("AXStaticText", "Message list"), ("AXStaticText", "Message body"),
              ("AXButton", "Reply All"), ("AXLink", "Unsubscribe"))),
    "Finder": (("Back", "Forward", "View", "Share", "Tags"),
               ("Recents", "Applications", "Desktop", "Documents", "Downloads", "iCloud Drive"),
               (("AXTextField", "Search"), ("AXStaticText", "Files"), ("AXButton", "Open"),
                ("AXButton", "Move to Trash"))),
    "Microsoft Excel": (("Home", "Insert", "Formulas", "Data", "Review", "Save"),
                        ("Sheet1", "Expenses", "Summary"),
                        (("AXCell", "Date"), ("AXCell", "Vendor"), ("AXCell", "Amount"), ("AXCell", "Category"),
                         ("AXTextField", "Formula Bar"), ("AXButton", "Sort"))),
    "Preview": (("File", "Edit", "View", "Go", "Tools", "Window"),
                ("Thumbnails", "Page 1", "Page 2", "Page 3"),
                (("AXImage", "Document"), ("AXButton", "Markup"), ("AXButton", "Rotate"), ("AXButton", "Share"))),
    "TextEdit": (("File", "Edit", "Format", "View", "Window"), (),
                 (("AXTextArea", "Document"), ("AXPopUpButton", "Font"), ("AXButton", "Bold"))),
}
GENERIC_UI = (("Back", "Forward", "Share", "Settings", "Search"),
              ("Home", "Recent", "Favorites", "Library", "Shared"),
              (("AXTextField", "Search"), ("AXButton", "New"), ("AXButton", "Open"), ("AXStaticText", "Content"),
               ("AXLink", "Details"), ("AXButton", "More")))
BROWSER_CHROME = ("Back", "Forward", "Reload", "Address and search bar", "Bookmarks", "Extensions")

# Special screens used by the routines (app, view) -> (toolbar, sidebar, content)
SPECIAL_UI: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    ("Mail", "compose"): (("Send", "Attach", "Format", "Photo"), (),
                          (("AXTextField", "To"), ("AXTextField", "Cc"), ("AXTextField", "Subject"),
                           ("AXTextArea", "Message body"), ("AXButton", "Send"))),
    ("Preview", "file_menu"): (("File", "Edit", "View", "Go", "Tools", "Window"), (),
                               (("AXMenuItem", "New Window"), ("AXMenuItem", "Open…"), ("AXMenuItem", "Close Window"),
                                ("AXMenuItem", "Save"), ("AXMenuItem", "Export as PDF…"), ("AXMenuItem", "Print…"))),
    ("Preview", "save_sheet"): (("File", "Edit", "View"), (),
                                (("AXStaticText", "Do you want to keep this new document?"), ("AXButton", "Don't Save"),
                                 ("AXButton", "Cancel"), ("AXButton", "Save"))),
    ("TextEdit", "file_menu"): (("File", "Edit", "Format", "View", "Window"), (),
                                (("AXMenuItem", "New"), ("AXMenuItem", "Open…"), ("AXMenuItem", "Close Window"),
                                 ("AXMenuItem", "Save…"), ("AXMenuItem", "Print…"))),
    ("TextEdit", "save_sheet"): (("File", "Edit"), (),
                                 (("AXStaticText", "Do you want to save the changes?"), ("AXButton", "Don't Save"),
                                  ("AXButton", "Cancel"), ("AXButton", "Save"))),
    ("Slack", "channel_eng"): (("Home", "DMs", "Activity", "Later", "Search"), tuple("#" + c for c in CHANNELS),
                               (("AXTextField", "Message #eng-backend"), ("AXButton", "Send now"),
                                ("AXButton", "Reply in thread"), ("AXStaticText", "Messages"))),
}


@dataclass
class Pools:
    """Entities the user meets again and again; their sizes set how many distinct URLs a corpus has."""

    people: list[str]
    companies: list[str]
    queries: list[str]
    video_ids: list[str]
    doc_ids: list[str]
    threads: list[str]
    tweets: list[tuple[str, str]]
    reddit: list[tuple[str, str, str]]
    so_questions: list[tuple[int, str]]
    asins: list[str]
    notion_pages: list[str]
    figma_files: list[tuple[str, str]]
    chats: list[str]
    meet_codes: list[str]
    zoom_ids: list[str]
    dashboards: list[tuple[str, str]]
    places: list[str]
    articles: list[str]


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _b64(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for _ in range(n))


def _slug(rng: random.Random, k: int) -> str:
    return "-".join(rng.choice(WORDS) for _ in range(k))


def make_pools(rng: random.Random) -> Pools:
    people = sorted({f"{rng.choice(FIRST)}-{rng.choice(LAST)}-{_hex(rng, 6)}" for _ in range(1600)})
    rng.shuffle(people)
    queries = list(SEARCH_TOPICS) + [f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(500)]
    return Pools(
        people=people,
        companies=list(COMPANIES),
        queries=queries,
        video_ids=[_b64(rng, 11) for _ in range(500)],
        doc_ids=[_b64(rng, 44) for _ in range(260)],
        threads=[_hex(rng, 16) for _ in range(900)],
        tweets=[(f"{rng.choice(FIRST)}{rng.choice(LAST)}", str(rng.randrange(10**18, 2 * 10**18))) for _ in range(400)],
        reddit=[(rng.choice(SUBREDDITS), _hex(rng, 7).lstrip("0") or "1x", _slug(rng, 4).replace("-", "_"))
                for _ in range(300)],
        so_questions=[(rng.randrange(10**6, 8 * 10**7), _slug(rng, 5)) for _ in range(350)],
        asins=["B0" + _b64(rng, 8).upper().replace("-", "X").replace("_", "Y") for _ in range(200)],
        notion_pages=[f"{_slug(rng, 3).title()}-{_hex(rng, 32)}" for _ in range(150)],
        figma_files=[(_b64(rng, 22), _slug(rng, 2).title()) for _ in range(60)],
        chats=[f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 12)}" for _ in range(500)],
        meet_codes=[f"{_lower(rng, 3)}-{_lower(rng, 4)}-{_lower(rng, 3)}" for _ in range(60)],
        zoom_ids=[str(rng.randrange(10**10, 10**11)) for _ in range(40)],
        dashboards=[(_b64(rng, 9), _slug(rng, 2)) for _ in range(40)],
        places=[f"{rng.choice(WORDS).title()}+{rng.choice(LAST).title()}" for _ in range(120)],
        articles=[f"c{_b64(rng, 10).lower()}o" for _ in range(300)],
    )


def _lower(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))


def pick(rng: random.Random, pool: list, skew: float = 2.2):  # type: ignore[type-arg]
    """A pool member, favouring the front: people revisit a few things often and many once."""
    return pool[int(len(pool) * rng.random() ** skew)]


# Site families: name, weight, registrable domain (documentation only; truth derives its own).
SITE_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("linkedin", 9), ("github", 12), ("gmail", 7), ("gdocs", 6), ("gcal", 3), ("gmeet", 1),
    ("zoom", 0.6), ("gsearch", 9), ("youtube", 3), ("x", 2.5), ("reddit", 2), ("slack_web", 1),
    ("notion", 2), ("figma", 1.5), ("jira", 3), ("linear", 2), ("chatgpt", 3), ("claude", 3),
    ("localhost", 4), ("stackoverflow", 2.5), ("maps", 0.8), ("bbc", 1.2), ("grafana", 1.5),
    ("amazon", 1), ("wikipedia", 1.2), ("hn", 1.2),
)


def page(rng: random.Random, pools: Pools, family: str) -> tuple[str, str, str]:
    """(url, title, view) of one page in a site family; view names the screen template."""
    if family == "linkedin":
        r = rng.random()
        if r < 0.55:
            p = pick(rng, pools.people)
            name = " ".join(w.title() for w in p.split("-")[:2])
            return f"https://www.linkedin.com/in/{p}/", f"{name} | LinkedIn", "profile"
        if r < 0.75:
            c = pick(rng, pools.companies, 1.5)
            return f"https://www.linkedin.com/company/{c}/", f"{c.title()}: Overview | LinkedIn", "company"
        q = pick(rng, pools.queries)
        return (f"https://www.linkedin.com/search/results/people/?keywords={q.replace(' ', '%20')}",
                f"Search: {q} | LinkedIn", "search")
    if family == "github":
        repo = pick(rng, list(REPOS), 1.6)
        r = rng.random()
        if r < 0.3:
            return f"https://github.com/{repo}", f"GitHub - {repo}", "repo"
        if r < 0.55:
            n = rng.randrange(1, 900)
            return f"https://github.com/{repo}/pull/{n}", f"PR #{n} · {repo}", "pull"
        if r < 0.75:
            n = rng.randrange(1, 1500)
            return f"https://github.com/{repo}/issues/{n}", f"Issue #{n} · {repo}", "issue"
        if r < 0.85:
            q = pick(rng, pools.queries)
            return f"https://github.com/search?q={q.replace(' ', '+')}&type=code", f"Code search results · {q}", "search"
        if r < 0.95:
            return "https://github.com/notifications", "Notifications", "notifications"
        return "https://github.com/settings/profile", "Your profile", "settings"
    if family == "gmail":
        if rng.random() < 0.4:
            return "https://mail.google.com/mail/u/0/#inbox", "Inbox (12) - jane@acme.com - Gmail", "gmail_inbox"
        t = pick(rng, pools.threads, 1.3)
        return f"https://mail.google.com/mail/u/0/#inbox/{t}", f"Re: {_slug(rng, 2)} - jane@acme.com - Gmail", "gmail_thread"
    if family == "gdocs":
        d = pick(rng, pools.doc_ids, 1.8)
        kind = ("document", "spreadsheets", "presentation")[sum(map(ord, d)) % 3]
        label = {"document": "Google Docs", "spreadsheets": "Google Sheets", "presentation": "Google Slides"}[kind]
        return f"https://docs.google.com/{kind}/d/{d}/edit", f"{d[:6]} notes - {label}", "doc"
    if family == "gcal":
        day = rng.randrange(1, 29)
        return f"https://calendar.google.com/calendar/u/0/r/week/2026/6/{day}", "Google Calendar - Week", "calendar"
    if family == "gmeet":
        c = pick(rng, pools.meet_codes)
        return f"https://meet.google.com/{c}", f"Meet - {c}", "meeting"
    if family == "zoom":
        z = pick(rng, pools.zoom_ids)
        return f"https://zoom.us/j/{z}", "Launch Meeting - Zoom", "meeting"
    if family == "gsearch":
        q = pick(rng, pools.queries, 1.4)
        return f"https://www.google.com/search?q={q.replace(' ', '+')}", f"{q} - Google Search", "search"
    if family == "youtube":
        v = pick(rng, pools.video_ids)
        return f"https://www.youtube.com/watch?v={v}", f"{_slug(rng, 3).replace('-', ' ')} - YouTube", "video"
    if family == "x":
        user, sid = pick(rng, pools.tweets)
        if rng.random() < 0.3:
            return "https://x.com/home", "Home / X", "feed"
        return f"https://x.com/{user}/status/{sid}", f"{user} on X", "post"
    if family == "reddit":
        sub, pid, slug = pick(rng, pools.reddit)
        return f"https://www.reddit.com/r/{sub}/comments/{pid}/{slug}/", f"{slug.replace('_', ' ')} : r/{sub}", "post"
    if family == "slack_web":
        ch = rng.randrange(100, 999)
        return f"https://app.slack.com/client/T024BE7LD/C0{ch}ABCD", "Slack | acme", "chat"
    if family == "notion":
        p = pick(rng, pools.notion_pages)
        return f"https://www.notion.so/acme/{p}", p.rsplit("-", 1)[0].replace("-", " "), "doc"
    if family == "figma":
        key, name = pick(rng, pools.figma_files)
        return f"https://www.figma.com/design/{key}/{name}", f"{name} – Figma", "design"
    if family == "jira":
        n = int(400 * rng.random() ** 1.5) + 1
        return f"https://acme.atlassian.net/browse/PROJ-{n}", f"[PROJ-{n}] {_slug(rng, 3)} - Jira", "jira_issue"
    if family == "linear":
        n = int(600 * rng.random() ** 1.5) + 1
        return f"https://linear.app/acme/issue/ENG-{n}/{_slug(rng, 3)}", f"ENG-{n} {_slug(rng, 2)}", "issue"
    if family == "chatgpt":
        return f"https://chatgpt.com/c/{pick(rng, pools.chats, 1.2)}", "ChatGPT", "ai_chat"
    if family == "claude":
        return f"https://claude.ai/chat/{pick(rng, pools.chats, 1.2)}", "Claude", "ai_chat"
    if family == "localhost":
        if rng.random() < 0.6:
            path = rng.choice(("", "dashboard", "settings", "frames", f"day/2026-06-{rng.randrange(1, 29):02d}"))
            return f"http://localhost:3000/{path}", "Activity Frames (dev)", "local_dev"
        path = rng.choice(("docs", "api/frames", "api/health", f"api/days/{rng.randrange(1, 61)}"))
        return f"http://localhost:8000/{path}", "FastAPI - Swagger UI", "local_dev"
    if family == "stackoverflow":
        qid, slug = pick(rng, pools.so_questions)
        return f"https://stackoverflow.com/questions/{qid}/{slug}", f"{slug.replace('-', ' ')} - Stack Overflow", "post"
    if family == "maps":
        return f"https://www.google.com/maps/place/{pick(rng, pools.places)}", "Google Maps", "maps"
    if family == "bbc":
        return f"https://www.bbc.co.uk/news/articles/{pick(rng, pools.articles)}", "BBC News", "article"
    if family == "grafana":
        uid, slug = pick(rng, pools.dashboards)
        return f"https://grafana.acme.io/d/{uid}/{slug}?orgId=1", f"{slug} - Dashboards - Grafana", "dashboard"
    if family == "amazon":
        return f"https://www.amazon.com/dp/{pick(rng, pools.asins)}", "Amazon.com", "product"
    if family == "wikipedia":
        w = rng.choice(WORDS).title() + "_" + rng.choice(WORDS)
        return f"https://en.wikipedia.org/wiki/{w}", f"{w.replace('_', ' ')} - Wikipedia", "article"
    if family == "hn":
        return f"https://news.ycombinator.com/item?id={rng.randrange(40_000_000, 45_000_000)}", "Hacker News", "post"
    raise KeyError(family)


# Named leaves per web view; routines rely on these names.
VIEW_UI: dict[str, tuple[tuple[str, str], ...]] = {
    "profile": (("AXButton", "Connect"), ("AXButton", "Message"), ("AXButton", "More"), ("AXLink", "Experience"),
                ("AXStaticText", "About")),
    "company": (("AXButton", "Follow"), ("AXLink", "People"), ("AXLink", "Jobs"), ("AXStaticText", "Overview")),
    "search": (("AXTextField", "Search"), ("AXLink", "Result 1"), ("AXLink", "Result 2"), ("AXLink", "Result 3"),
               ("AXButton", "Next")),
    "repo": (("AXLink", "Code"), ("AXLink", "Issues"), ("AXLink", "Pull requests"), ("AXButton", "Star"),
             ("AXStaticText", "README.md")),
    "pull": (("AXLink", "Files changed"), ("AXButton", "Review changes"), ("AXButton", "Merge pull request"),
             ("AXTextArea", "Leave a comment"), ("AXButton", "Comment")),
    "issue": (("AXTextArea", "Leave a comment"), ("AXButton", "Comment"), ("AXButton", "Close issue"),
              ("AXLink", "Assignees")),
    "notifications": (("AXLink", "Inbox"), ("AXButton", "Mark as done"), ("AXLink", "Notification 1")),
    "settings": (("AXTextField", "Name"), ("AXButton", "Update profile")),
    "gmail_inbox": (("AXButton", "Compose"), ("AXLink", "Inbox"), ("AXLink", "Starred"), ("AXTextField", "Search mail"),
                    ("AXRow", "Conversation 1"), ("AXRow", "Conversation 2")),
    "gmail_thread": (("AXButton", "Compose"), ("AXButton", "Reply"), ("AXButton", "Archive"),
                     ("AXStaticText", "Message body")),
    "gmail_compose": (("AXTextField", "To"), ("AXTextField", "Subject"), ("AXTextArea", "Message Body"),
                      ("AXButton", "Send"), ("AXButton", "Discard draft")),
    "doc": (("AXTextArea", "Document content"), ("AXButton", "Share"), ("AXMenuItem", "File"),
            ("AXButton", "Comment")),
    "calendar": (("AXButton", "Create"), ("AXButton", "Today"), ("AXStaticText", "Event"), ("AXButton", "Join")),
    "meeting": (("AXButton", "Mute"), ("AXButton", "Stop video"), ("AXButton", "Leave call"), ("AXButton", "Chat")),
    "video": (("AXButton", "Play"), ("AXButton", "Subscribe"), ("AXLink", "Up next")),
    "feed": (("AXButton", "Post"), ("AXTextArea", "What is happening?!"), ("AXLink", "For you")),
    "post": (("AXButton", "Reply"), ("AXButton", "Like"), ("AXTextArea", "Add a comment")),
    "chat": (("AXTextField", "Message"), ("AXButton", "Send")),
    "design": (("AXButton", "Share"), ("AXButton", "Present"), ("AXStaticText", "Canvas")),
    "jira_issue": (("AXButton", "Copy link"), ("AXButton", "Assign to me"), ("AXLink", "Issue key"),
                   ("AXTextArea", "Add a comment"), ("AXButton", "Transition")),
    "ai_chat": (("AXTextArea", "Message"), ("AXButton", "Send message"), ("AXButton", "New chat"),
                ("AXStaticText", "Response")),
    "local_dev": (("AXButton", "Refresh"), ("AXLink", "Frames"), ("AXTextField", "Day"), ("AXButton", "Try it out")),
    "maps": (("AXTextField", "Search Google Maps"), ("AXButton", "Directions")),
    "article": (("AXStaticText", "Headline"), ("AXLink", "Related")),
    "dashboard": (("AXButton", "Time range"), ("AXButton", "Refresh dashboard"), ("AXStaticText", "Panel")),
    "product": (("AXButton", "Add to Cart"), ("AXButton", "Buy Now"), ("AXStaticText", "Price")),
    "expense_form": (("AXTextField", "Vendor"), ("AXTextField", "Expense amount"), ("AXPopUpButton", "Category"),
                     ("AXButton", "Submit"), ("AXButton", "Cancel")),
}
EXPENSE_URL = "https://expenses.acme-corp.com/claims/new"


@dataclass
class Template:
    """One screen's accessibility tree, precomputed once and stamped onto many frames."""

    key: str
    # (role, name, parent index, depth, bounds or None); index 0 is the window (name = window title)
    nodes: list[tuple[str, str | None, int | None, int, tuple[float, float, float, float] | None]]
    leaves: list[int] = field(default_factory=list)  # indexes of nodes with bounds
    by_name: dict[str, int] = field(default_factory=dict)
    json_prefix: str = ""
    json_suffix: str = ""
    fields: list[int] = field(default_factory=list)  # text inputs (typing targets)

    def tree_json(self, title: str) -> str:
        return self.json_prefix + json.dumps(title, ensure_ascii=False) + self.json_suffix


def _round(v: float) -> float:
    return round(v, 4)


def build_template(key: str, toolbar: tuple[str, ...], sidebar: tuple[str, ...],
                   content: tuple[tuple[str, str], ...], browser: bool) -> Template:
    nodes: list[tuple[str, str | None, int | None, int, tuple[float, float, float, float] | None]] = [
        ("AXWindow", None, None, 0, None)
    ]
    tb = tuple(BROWSER_CHROME) + toolbar if browser else toolbar
    # Real trees are mostly text: pad lists and content with unnamed-looking rows.
    side = [("AXRow", n) for n in sidebar][:9]
    if sidebar:
        side += [("AXRow", f"Row {k + 1}") for k in range(len(side), 8)]
    body = list(content)[:15]
    body += [("AXStaticText", f"Paragraph {k + 1}") for k in range(len(body), 14)]
    groups = (("AXToolbar", "Toolbar", [("AXButton", n) for n in tb][:11]),
              ("AXGroup", "Sidebar", side),
              ("AXGroup", "Content", body))
    for g_role, g_name, items in groups:
        if not items:
            continue
        gi = len(nodes)
        nodes.append((g_role, g_name, 0, 1, None))
        for k, (role, name) in enumerate(items):
            # Sizes vary by role, as on real screens (and so pixel rounding does not bias one way).
            if g_name == "Toolbar":
                b = (0.02 + 0.087 * k, 0.045, 0.072, 0.034)
            elif g_name == "Sidebar":
                b = (0.01, 0.13 + 0.055 * k, 0.13, 0.038)
            else:
                width, height = {"AXTextField": (0.45, 0.04), "AXTextArea": (0.6, 0.047),
                                 "AXStaticText": (0.5, 0.03), "AXLink": (0.28, 0.027), "AXRow": (0.6, 0.042),
                                 "AXCell": (0.14, 0.031), "AXImage": (0.5, 0.045)}.get(role, (0.1, 0.036))
                b = (0.24, 0.13 + 0.055 * k, width, height)
            nodes.append((role, name, gi, 2, (_round(b[0]), _round(b[1]), _round(b[2]), _round(b[3]))))
    t = Template(key=key, nodes=nodes)
    for i, (role, label, _p, _d, bounds) in enumerate(nodes):
        if bounds is not None:
            t.leaves.append(i)
            t.by_name.setdefault(label or "", i)
            if role in ("AXTextField", "AXTextArea"):
                t.fields.append(i)
    marker = "\x00TITLE\x00"
    tree = _nest(nodes, marker)
    text = json.dumps(tree, ensure_ascii=False, separators=(",", ":"))
    quoted = json.dumps(marker)
    t.json_prefix, t.json_suffix = text.split(quoted, 1)
    return t


def _nest(nodes: list, title_marker: str) -> dict:  # type: ignore[type-arg]
    out: list[dict] = []  # type: ignore[type-arg]
    for i, (role, name, parent, _depth, b) in enumerate(nodes):
        node = {"role": role, "name": title_marker if i == 0 else name,
                "bounds": None if b is None else {"left": b[0], "top": b[1], "width": b[2], "height": b[3]},
                "children": []}
        out.append(node)
        if parent is not None:
            out[parent]["children"].append(node)
    return out[0]


class Templates:
    """Lazily built screen templates keyed by (app, view)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], Template] = {}

    def get(self, app: str, view: str) -> Template:
        key = (app, view)
        t = self._cache.get(key)
        if t is None:
            browser = app in BROWSERS
            if key in SPECIAL_UI:
                tb, sb, content = SPECIAL_UI[key]
            elif browser:
                tb, sb, content = (), (), VIEW_UI.get(view, VIEW_UI["article"])
            else:
                tb, sb, content = APP_UI.get(app, GENERIC_UI)
            t = build_template(f"{app}/{view}", tb, sb, content, browser)
            self._cache[key] = t
        return t


def point_rect_px(x: float, y: float, b: tuple[float, float, float, float], w: int, h: int) -> float:
    """Distance in pixels from a pixel point to a normalised rectangle (0 inside)."""
    left, top = b[0] * w, b[1] * h
    right, bottom = left + b[2] * w, top + b[3] * h
    dx = max(left - x, 0.0, x - right)
    dy = max(top - y, 0.0, y - bottom)
    return math.hypot(dx, dy)


def resolve_click(t: Template, x: float, y: float, w: int, h: int) -> tuple[str, int | None]:
    """The paper's resolution over leaves with bounds: smallest containing, else nearest within 40 px.

    Ties go to the smaller element, then to the earlier node. Returns (class, node index).
    """
    best: tuple[float, float, int] | None = None
    for i in t.leaves:
        b = t.nodes[i][4]
        assert b is not None
        left, top = b[0] * w, b[1] * h
        if left <= x <= left + b[2] * w and top <= y <= top + b[3] * h:
            cand = (0.0, b[2] * b[3], i)
            if best is None or cand < best:
                best = cand
    if best is not None:
        return "exact", best[2]
    for i in t.leaves:
        b = t.nodes[i][4]
        assert b is not None
        d = point_rect_px(x, y, b, w, h)
        if d <= TOLERANCE_PX:
            cand = (d, b[2] * b[3], i)
            if best is None or cand < best:
                best = cand
    if best is not None:
        return "tolerance", best[2]
    return "none", None


# What the recorder writes when the user types on an AZERTY keyboard but the capture stack
# decodes physical key positions as QWERTY: intended character -> recorded character.
AZERTY_AS_QWERTY: dict[str, str] = {
    "a": "q", "q": "a", "z": "w", "w": "z", "m": ";", ",": "m", ";": ",", ":": ".",
    "A": "Q", "Q": "A", "Z": "W", "W": "Z", "M": ":",
}
