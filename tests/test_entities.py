"""Entity typing: URL -> (kind, entity, domain), the public-suffix site, totality, templates."""

from __future__ import annotations

import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from af_pipeline.compiler.entities import MAX_ENTITY, PageRef, coverage, site_of, type_url

# One row per page type a user meets: (url, kind, entity, domain). Every host family is here.
TABLE: list[tuple[str, str, str | None, str]] = [
    # professional network
    ("https://www.linkedin.com/in/jane-doe/", "profile", "jane-doe", "linkedin.com"),
    ("https://www.linkedin.com/in/ren%C3%A9-dupont-4a2b1c/details/experience/", "profile", "rené-dupont-4a2b1c", "linkedin.com"),
    ("https://www.linkedin.com/company/acme/about/", "company", "acme", "linkedin.com"),
    ("https://www.linkedin.com/search/results/people/?keywords=cto%20paris&origin=GLOBAL", "people_search", "cto paris", "linkedin.com"),
    ("https://www.linkedin.com/jobs/view/3812345678/", "job", "3812345678", "linkedin.com"),
    ("https://www.linkedin.com/jobs/search/?keywords=data+engineer", "job_search", "data engineer", "linkedin.com"),
    ("https://www.linkedin.com/feed/update/urn:li:activity:7123456789/", "post", "urn:li:activity:7123456789", "linkedin.com"),
    ("https://www.linkedin.com/messaging/thread/2-abc==/", "message", "2-abc==", "linkedin.com"),
    # code hosting
    ("https://github.com/acme/widgets", "repo", "acme/widgets", "github.com"),
    ("https://github.com/acme/widgets/pull/42/files", "pull_request", "acme/widgets#42", "github.com"),
    ("https://github.com/acme/widgets/issues/7", "issue", "acme/widgets#7", "github.com"),
    ("https://github.com/search?q=parse_qsl&type=code", "code_search", "parse_qsl", "github.com"),
    ("https://github.com/notifications", "notifications", None, "github.com"),
    ("https://github.com/settings/tokens", "settings", "tokens", "github.com"),
    ("https://github.com/acme/widgets/blob/main/src/app.py", "file", "acme/widgets:src/app.py", "github.com"),
    ("https://github.com/acme/widgets/actions/runs/98765", "ci_run", "acme/widgets/runs/98765", "github.com"),
    ("https://github.com/torvalds", "profile", "torvalds", "github.com"),
    ("https://gitlab.com/group/sub/proj/-/merge_requests/15", "pull_request", "group/sub/proj!15", "gitlab.com"),
    ("https://gitlab.com/group/proj/-/issues/3", "issue", "group/proj#3", "gitlab.com"),
    ("https://gitlab.acme.io/platform/api/-/pipelines/1234", "ci_run", "platform/api/pipelines/1234", "acme.io"),
    ("https://bitbucket.org/team/repo/pull-requests/9", "pull_request", "team/repo#9", "bitbucket.org"),
    # Google Workspace
    ("https://docs.google.com/document/d/1AbCdEf/edit", "doc", "1AbCdEf", "google.com"),
    ("https://docs.google.com/spreadsheets/u/1/d/1XyZ/edit#gid=0", "sheet", "1XyZ", "google.com"),
    ("https://docs.google.com/presentation/d/1Pq/edit#slide=id.p", "slides", "1Pq", "google.com"),
    ("https://drive.google.com/drive/folders/0BxFolder", "folder", "0BxFolder", "google.com"),
    ("https://mail.google.com/mail/u/0/#inbox", "inbox", "inbox", "google.com"),
    ("https://mail.google.com/mail/u/0/#inbox/FMfcgzQVxyzabcdefghijk", "email", "FMfcgzQVxyzabcdefghijk", "google.com"),
    ("https://mail.google.com/mail/u/0/#search/invoice+march", "search", "invoice march", "google.com"),
    ("https://calendar.google.com/calendar/u/0/r/week/2026/3/16", "calendar", "week", "google.com"),
    ("https://calendar.google.com/calendar/event?eid=abc123", "event", "abc123", "google.com"),
    ("https://meet.google.com/abc-defg-hij", "meeting", "abc-defg-hij", "google.com"),
    ("https://www.google.com/maps/place/Eiffel+Tower/@48.85,2.29,17z", "map", "Eiffel Tower", "google.com"),
    ("https://maps.google.com/?q=Gare+de+Lyon", "map", "Gare de Lyon", "google.com"),
    ("https://www.google.com/search?q=public+suffix+list&hl=en", "search", "public suffix list", "google.com"),
    ("https://www.google.co.uk/search?q=tide+times", "search", "tide times", "google.co.uk"),
    ("https://gemini.google.com/app/4f1c2d", "ai_chat", "4f1c2d", "google.com"),
    ("https://accounts.google.com/v3/signin/identifier?continue=x", "sign_in", None, "google.com"),
    # Microsoft 365
    ("https://outlook.office.com/mail/inbox/id/AAQkAGI2", "email", "AAQkAGI2", "office.com"),
    ("https://outlook.live.com/mail/0/", "inbox", "inbox", "live.com"),
    ("https://outlook.office.com/calendar/view/week", "calendar", "week", "office.com"),
    ("https://teams.microsoft.com/l/meetup-join/19%3ameeting_abc/0", "meeting", None, "microsoft.com"),
    ("https://acme.sharepoint.com/:w:/r/sites/team/Shared%20Documents/Plan.docx?d=w1", "doc", "Plan.docx", "sharepoint.com"),
    # meetings and chat
    ("https://us02web.zoom.us/j/81234567890?pwd=xyz", "meeting", "81234567890", "zoom.us"),
    ("https://app.slack.com/client/T0123ABC/C0456DEFG", "channel", "C0456DEFG", "slack.com"),
    ("https://app.slack.com/client/T0123ABC/D0789HIJK", "message", "D0789HIJK", "slack.com"),
    ("https://acme.slack.com/archives/C0456DEFG/p1700000000123456", "message", "C0456DEFG", "slack.com"),
    ("https://discord.com/channels/1234/5678", "channel", "1234/5678", "discord.com"),
    ("https://discord.com/channels/@me/999", "message", "999", "discord.com"),
    ("https://web.whatsapp.com/", "message", None, "whatsapp.com"),
    # video and social
    ("https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s", "video", "dQw4w9WgXcQ", "youtube.com"),
    ("https://youtu.be/dQw4w9WgXcQ", "video", "dQw4w9WgXcQ", "youtu.be"),
    ("https://www.youtube.com/@veritasium/videos", "channel", "@veritasium", "youtube.com"),
    ("https://www.youtube.com/results?search_query=duckdb+tutorial", "search", "duckdb tutorial", "youtube.com"),
    ("https://x.com/jack/status/20", "post", "@jack/20", "x.com"),
    ("https://twitter.com/jack", "profile", "@jack", "twitter.com"),
    ("https://x.com/search?q=%23python&src=typed_query", "search", "#python", "x.com"),
    ("https://www.reddit.com/r/Python/", "community", "r/Python", "reddit.com"),
    ("https://www.reddit.com/r/Python/comments/1abcde/some_title/", "post", "r/Python/1abcde", "reddit.com"),
    ("https://www.facebook.com/groups/12345/posts/67890/", "post", "12345/67890", "facebook.com"),
    ("https://www.facebook.com/zuck", "profile", "zuck", "facebook.com"),
    ("https://www.instagram.com/p/Cx1yZ2/", "post", "Cx1yZ2", "instagram.com"),
    ("https://www.instagram.com/natgeo/", "profile", "@natgeo", "instagram.com"),
    ("https://news.ycombinator.com/item?id=39000000", "post", "39000000", "ycombinator.com"),
    # trackers and project tools
    ("https://acme.atlassian.net/browse/PAY-1234", "ticket", "PAY-1234", "atlassian.net"),
    ("https://acme.atlassian.net/jira/software/projects/PAY/boards/3?selectedIssue=PAY-77", "ticket", "PAY-77", "atlassian.net"),
    ("https://acme.atlassian.net/wiki/spaces/ENG/pages/123456/Release+Process", "wiki_page", "Release Process", "atlassian.net"),
    ("https://linear.app/acme/issue/ENG-42/fix-login-redirect", "ticket", "ENG-42", "linear.app"),
    ("https://trello.com/b/AbC123/roadmap-2026", "board", "roadmap 2026", "trello.com"),
    ("https://acme.zendesk.com/agent/tickets/5150", "ticket", "5150", "zendesk.com"),
    # design
    ("https://www.figma.com/design/AbCdEf123/Mobile-App-v2?node-id=1-2", "design_file", "Mobile App v2", "figma.com"),
    ("https://www.figma.com/file/XyZ987/Brand", "design_file", "Brand", "figma.com"),
    # dashboards
    ("https://grafana.acme.io/d/abc123/api-latency?orgId=1", "dashboard", "api-latency", "acme.io"),
    ("https://acme.grafana.net/d/xyz/checkout", "dashboard", "checkout", "grafana.net"),
    ("https://app.datadoghq.com/dashboard/abc-123-def/web-overview", "dashboard", "web overview", "datadoghq.com"),
    ("https://eu-west-1.console.aws.amazon.com/ec2/home?region=eu-west-1", "dashboard", "ec2", "amazon.com"),
    # AI chat
    ("https://chatgpt.com/c/67a1b2c3-d4e5-f6a7", "ai_chat", "67a1b2c3-d4e5-f6a7", "chatgpt.com"),
    ("https://claude.ai/chat/0f1e2d3c", "ai_chat", "0f1e2d3c", "claude.ai"),
    ("https://claude.ai/new", "ai_chat", None, "claude.ai"),
    ("https://www.perplexity.ai/search/what-is-duckdb-Ab12Cd", "ai_chat", "what-is-duckdb-Ab12Cd", "perplexity.ai"),
    # local development
    ("http://localhost:3000/dashboard", "local_dev", "localhost:3000", "localhost:3000"),
    ("http://127.0.0.1:8000/api/items?id=3", "local_dev", "127.0.0.1:8000", "127.0.0.1:8000"),
    ("localhost:5173/", "local_dev", "localhost:5173", "localhost:5173"),
    ("http://[::1]:8080/", "local_dev", "[::1]:8080", "[::1]:8080"),
    # reference and knowledge
    ("https://stackoverflow.com/questions/123456/how-to-parse-a-url", "question", "how-to-parse-a-url", "stackoverflow.com"),
    ("https://en.wikipedia.org/wiki/Public_Suffix_List", "article", "Public Suffix List", "wikipedia.org"),
    ("https://fr.m.wikipedia.org/wiki/%C3%89cole", "article", "École", "wikipedia.org"),
    ("https://www.notion.so/acme/Q3-Roadmap-0123456789abcdef0123456789abcdef", "doc", "Q3 Roadmap", "notion.so"),
    ("https://pypi.org/project/publicsuffixlist/", "package", "publicsuffixlist", "pypi.org"),
    ("https://docs.python.org/3/library/urllib.parse.html", "documentation", "urllib.parse", "python.org"),
    # commerce
    ("https://www.amazon.com/Some-Book-Title/dp/B08N5WRWNW/ref=sr_1_1", "product", "B08N5WRWNW", "amazon.com"),
    ("https://www.amazon.co.uk/s?k=usb+c+hub", "search", "usb c hub", "amazon.co.uk"),
    ("https://www.ebay.com/itm/1234567890", "product", "1234567890", "ebay.com"),
    # search engines
    ("https://www.bing.com/search?q=duckdb+json", "search", "duckdb json", "bing.com"),
    ("https://duckduckgo.com/?q=privacy+browser&ia=web", "search", "privacy browser", "duckduckgo.com"),
    # news
    ("https://www.bbc.co.uk/news/technology-68000000", "article", "technology-68000000", "bbc.co.uk"),
    ("https://www.theguardian.com/technology/2026/mar/15/ai-memory-agents", "article", "ai-memory-agents", "theguardian.com"),
    # events
    ("https://calendly.com/jane/30min", "event", "jane/30min", "calendly.com"),
    ("https://www.meetup.com/python-paris/events/300000000/", "event", "300000000", "meetup.com"),
    # research, jobs, raw files, redirects
    ("https://arxiv.org/abs/2608.05784v2", "paper", "2608.05784v2", "arxiv.org"),
    ("https://dl.acm.org/doi/10.1145/123.456", "paper", "10.1145/123.456", "acm.org"),
    ("https://www.indeed.com/viewjob?jk=abc123", "job", "abc123", "indeed.com"),
    ("https://boards.greenhouse.io/acme/jobs/4012", "job", "4012", "greenhouse.io"),
    ("https://raw.githubusercontent.com/acme/widgets/main/README.md", "file", "acme/widgets:README.md",
     "raw.githubusercontent.com"),
    ("https://pkg.go.dev/github.com/acme/tool", "package", "github.com/acme/tool", "go.dev"),
    ("https://acme.notion.site/Public-Page-0123456789abcdef0123456789abcdef", "doc", "Public Page", "acme.notion.site"),
    ("https://www.google.com/url?q=https://example.com/x", "redirect", None, "google.com"),
    ("https://example.com/out?q=https%3A%2F%2Fother.org", "page", None, "example.com"),  # a link, not a search
    ("https://rooms.example.com/rooms/123", "page", None, "example.com"),  # "rooms" is not a meeting
    ("https://shop.example.com/collections/shoes", "category", "shoes", "example.com"),
    ("https://expenses.acme-corp.com/claims/new", "create", "claims", "acme-corp.com"),
    ("https://colab.research.google.com/drive/1AbC", "notebook", "1AbC", "google.com"),
    ("https://mail.google.com/chat/u/0/#chat/space/AAAA", "channel", "AAAA", "google.com"),
    ("https://github.com/orgs/acme/projects/3/views/1", "board", "acme/projects/3", "github.com"),
    ("https://acme-my.sharepoint.com/:w:/r/personal/jane/_layouts/15/Doc.aspx?sourcedoc=%7Babc%7D&file=Plan.docx",
     "doc", "Plan.docx", "sharepoint.com"),
    ("https://acme.webex.com/acme/j.php?MTID=m123", "meeting", "m123", "webex.com"),
    ("https://acme.pagerduty.com/incidents/Q1ABC", "incident", "Q1ABC", "pagerduty.com"),
    ("https://www.quora.com/What-is-DuckDB", "question", "What is DuckDB", "quora.com"),
    ("https://www.airbnb.com/rooms/123", "listing", "123", "airbnb.com"),
    ("https://play.google.com/store/apps/details?id=com.slack", "product", "com.slack", "google.com"),
    # generic search parameter layer
    ("https://shop.example.com/catalog?query=red+shoes", "search", "red shoes", "example.com"),
    ("https://example.org/?s=dagster", "search", "dagster", "example.org"),
    ("https://kagi.com/search?q=offline+tokenizer", "search", "offline tokenizer", "kagi.com"),
    # heuristics on sites without a parser
    ("https://login.example.com/u/login?state=abc", "sign_in", None, "example.com"),
    ("https://app.example.com/signin", "sign_in", None, "example.com"),
    ("https://dashboard.stripe.com/payments", "dashboard", None, "stripe.com"),
    ("https://webmail.example.net/", "inbox", None, "example.net"),
    ("https://calendar.example.com/", "calendar", None, "example.com"),
    ("https://example.com/meeting/xyz-123", "meeting", "xyz-123", "example.com"),
    ("https://blog.example.com/2026/03/15/shipping-frames", "article", "shipping-frames", "example.com"),
    ("https://example.readthedocs.io/en/latest/usage.html", "documentation", "usage", "example.readthedocs.io"),
    ("https://docs.example.com/auth/overview", "documentation", "overview", "example.com"),  # docs about auth
    ("https://www.bbc.co.uk/weather/2643743", "weather", "2643743", "bbc.co.uk"),
    ("https://app.example.com/#/settings/profile", "settings", None, "example.com"),  # single-page app route
    ("https://app.example.com/#!/search?q=red+shoes", "search", "red shoes", "example.com"),
    # fallback
    ("https://api.example.com/v1/users/3", "page", None, "example.com"),
    ("https://example.com/", "page", None, "example.com"),
    ("https://foo.github.io/project/", "page", None, "foo.github.io"),
    # host-less schemes
    ("about:blank", "new_tab", None, ""),
    ("chrome://settings/privacy", "browser_page", "settings", ""),
    ("file:///home/me/Report%20Q1.pdf", "local_file", "Report Q1.pdf", ""),
    ("javascript:void(0)", "page", None, ""),
]


@pytest.mark.parametrize(("url", "kind", "entity", "domain"), TABLE, ids=[row[0][:60] for row in TABLE])
def test_table(url: str, kind: str, entity: str | None, domain: str) -> None:
    ref = type_url(url)
    assert (ref.kind, ref.entity, ref.domain) == (kind, entity, domain)


def test_table_is_broad() -> None:
    assert len(TABLE) >= 60
    host_typed = {type_url(u).domain for u, *_ in TABLE if type_url(u).layer == "host"}
    assert len(host_typed) >= 30  # bespoke parsers for at least 30 sites are exercised


@pytest.mark.parametrize(
    ("url", "site"),
    [
        ("https://www.bbc.co.uk/news", "bbc.co.uk"),
        ("https://news.bbc.co.uk/", "bbc.co.uk"),
        ("https://foo.github.io/x", "foo.github.io"),
        ("https://example.com.au/shop", "example.com.au"),
        ("https://a.b.example.com.au/", "example.com.au"),
        ("http://localhost:3000/x", "localhost:3000"),
        ("http://localhost/", "localhost"),
        ("http://127.0.0.1:8000/", "127.0.0.1:8000"),
        ("http://[::1]:8080/", "[::1]:8080"),
        ("https://bücher.de/", "bücher.de"),
        ("https://xn--bcher-kva.de/", "bücher.de"),
        ("https://WWW.Example.COM./path", "example.com"),
        ("https://ｅｘａｍｐｌｅ.com/x", "example.com"),  # full-width letters, as IDNA maps them
        ("https://пример.рф/", "пример.рф"),
        ("https://user:pw@sub.example.co.jp:8443/", "example.co.jp"),
        ("github.com/acme/widgets", "github.com"),
        ("https://co.uk/", "co.uk"),
        ("http://intranet/wiki", "intranet"),
        ("about:blank", None),
        ("", None),
        (None, None),
        ("not a url", None),
        ("http://[::1/", None),
    ],
)
def test_site_of(url: str | None, site: str | None) -> None:
    assert site_of(url) == site


def test_domain_is_site() -> None:
    for url, *_ in TABLE:
        assert type_url(url).domain == (site_of(url) or "")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://github.com/acme/widgets/pull/42", "https://github.com/other/thing/pull/7"),
        ("https://github.com/a/b/issues/1", "https://github.com/c/d/issues/999"),
        ("https://www.linkedin.com/in/jane-doe/", "https://www.linkedin.com/in/john-smith-123/"),
        ("https://www.linkedin.com/search/results/people/?keywords=a", "https://www.linkedin.com/search/results/people/?keywords=b+c"),
        ("https://docs.google.com/document/d/1A/edit", "https://docs.google.com/document/d/9Z/view"),
        ("https://www.youtube.com/watch?v=aaaaaaaaaaa", "https://www.youtube.com/watch?v=bbbbbbbbbbb&t=1"),
        ("https://acme.atlassian.net/browse/PAY-1", "https://acme.atlassian.net/browse/OPS-22"),
        ("https://www.google.com/search?q=x", "https://www.google.com/search?q=y+z"),
        ("https://app.slack.com/client/T1/C0456DEFG", "https://app.slack.com/client/T1/C0999ZZZZ"),
        ("https://stackoverflow.com/questions/1/a-b", "https://stackoverflow.com/questions/22/c-d-e"),
        ("https://example.com/orders/123", "https://example.com/orders/456"),
        ("https://example.com/item/8f14e45fceea167a5a36dedd4bea2543", "https://example.com/item/c9f0f895fb98ab9159f51fd0297e236d"),
        ("https://blog.example.com/2026/03/15/one-post", "https://blog.example.com/2025/11/02/another-post"),
        ("https://shop.example.com/catalog?query=a", "https://shop.example.com/catalog?query=b"),
    ],
)
def test_template_stable_across_ids(a: str, b: str) -> None:
    ra, rb = type_url(a), type_url(b)
    assert ra.kind == rb.kind
    assert ra.template == rb.template
    assert ra.entity != rb.entity


def test_templates_distinguish_page_types() -> None:
    pr = type_url("https://github.com/a/b/pull/1").template
    issue = type_url("https://github.com/a/b/issues/1").template
    assert pr != issue


def test_entities_are_decoded_and_bounded() -> None:
    long_query = "x" * 5000
    ref = type_url(f"https://www.google.com/search?q={long_query}")
    assert ref.entity is not None and len(ref.entity) <= MAX_ENTITY
    ref = type_url("https://www.google.com/search?q=caf%C3%A9%20%0Acr%C3%A8me")
    assert ref.entity == "café crème"  # decoded, control characters and newlines collapsed


def test_cache_returns_equal_values() -> None:
    url = "https://github.com/acme/widgets/pull/42"
    assert type_url(url) is type_url(url)
    assert isinstance(type_url(url), PageRef)


# ----------------------------------------------------------------------------------- totality

_schemes = st.sampled_from(["http://", "https://", "", "HTTP://", "ftp://", "javascript:", "data:text/html,",
                            "file://", "chrome://", "about:", "mailto:", "view-source:", "slack://", "//"])
_hosts = st.one_of(
    st.from_regex(r"[a-z0-9\-]{1,12}(\.[a-z0-9\-]{1,10}){0,3}", fullmatch=True),
    st.sampled_from(["localhost", "127.0.0.1", "[::1]", "[fe80::1%25eth0]", "[::1", "0.0.0.0", "bücher.de",
                     "xn--bcher-kva.de", "xn--zz.com", "github.com", "www.linkedin.com", "mail.google.com",
                     "a..b", ".", "co.uk", "foo.github.io", "ｅｘａｍｐｌｅ.com", "例え.テスト", "%41.com",
                     "acme.atlassian.net", "app.slack.com", "www.youtube.com", "x.com", "999.999.999.999"]),
    st.text(max_size=12),
)
_ports = st.one_of(st.just(""), st.integers(min_value=-5, max_value=99999).map(lambda p: f":{p}"),
                   st.sampled_from([":", ":abc", ":8080:9"]))
_paths = st.lists(st.one_of(st.text(max_size=10), st.sampled_from(["in", "pull", "d", "-", "%", "%zz", "%E2%82",
                                                                   "@me", "wiki", "search", "c", "r"])),
                  max_size=6).map(lambda parts: "/" + "/".join(parts))
_queries = st.one_of(st.just(""), st.text(max_size=20).map(lambda t: "?" + t),
                     st.sampled_from(["?q=%", "?q=%FF%FE", "?q=&q=", "?=x", "?keywords=" + "é" * 300, "?v=&&&"]))
_fragments = st.one_of(st.just(""), st.text(max_size=15).map(lambda t: "#" + t), st.just("#inbox/" + "A" * 20))
urlish = st.builds(lambda *p: "".join(p), _schemes, _hosts, _ports, _paths, _queries, _fragments)


def _check(ref: PageRef) -> None:
    assert isinstance(ref, PageRef)
    assert ref.kind and ref.layer in ("host", "search_param", "heuristic", "fallback")
    assert ref.entity is None or 0 < len(ref.entity) <= MAX_ENTITY
    assert isinstance(ref.domain, str) and isinstance(ref.template, str)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_total_on_any_text(text: str) -> None:
    _check(type_url(text))
    site = site_of(text)
    assert site is None or isinstance(site, str)


@settings(max_examples=600, deadline=None)
@given(urlish)
def test_total_on_url_like_strings(url: str) -> None:
    ref = type_url(url)
    _check(ref)
    assert ref.domain == (site_of(url) or "")
    assert type_url(url) == ref  # a pure function: the same answer every time


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40)
       .map(lambda t: "https://" + t))
@example("https://www.google.com/search?q=a\ud800b")
@example("https://a\udc80.com/x")
def test_every_field_is_writable_as_utf8(url: str) -> None:
    ref = type_url(url)
    for value in (ref.kind, ref.entity or "", ref.domain, ref.template, site_of(url) or ""):
        value.encode("utf-8")  # lone surrogates would make documents unwritable


def test_total_on_non_strings() -> None:
    for value in (None, 42, b"https://github.com", ["x"]):
        _check(type_url(value))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- coverage

def test_coverage_counts_distinct_urls_and_kinds() -> None:
    urls = [
        "https://github.com/a/b/pull/1",
        "https://github.com/a/b/pull/1",  # duplicate: one distinct URL
        "https://www.linkedin.com/in/jane/",
        "https://example.com/x",
        "https://example.com/y",
        "",
        None,
    ]
    report = coverage(urls)  # type: ignore[arg-type]
    assert report.distinct == 4
    assert report.typed == 2
    assert report.blank == 2
    assert report.percent == "50.0%"
    assert dict(report.kinds) == {"page": 2, "pull_request": 1, "profile": 1}
    assert report.typed_kinds == 2
    assert dict(report.layers) == {"host": 2, "fallback": 2}
    assert report.generic_domains == (("example.com", 2),)
    assert report.to_dict()["typed_percent"] == "50.0%"


def test_coverage_rounds_half_up_and_handles_empty() -> None:
    assert coverage([]).percent == "0.0%"
    urls = [f"https://github.com/o/r/issues/{i}" for i in range(5)] + [f"https://example.com/{i}" for i in range(1, 4)]
    assert coverage(urls).percent == "62.5%"
    two_thirds = ["https://github.com/o/r", "https://github.com/o/s", "https://example.com/a"]
    assert coverage(two_thirds).percent == "66.7%"


def test_coverage_is_order_independent() -> None:
    urls = [u for u, *_ in TABLE]
    assert coverage(urls) == coverage(list(reversed(urls)))


# Every registered parser, driven with its own vocabulary: the words its branches test for.
def _vocabulary() -> list[str]:
    import re
    from pathlib import Path

    import af_pipeline.compiler.entities.hosts as hosts_module

    source = Path(hosts_module.__file__).read_text(encoding="utf-8")
    words = sorted(set(re.findall(r'"([A-Za-z0-9_.:@\-]{1,24})"', source)))
    return words + ["123", "0", "u", "d", "-", "@me", "PAY-12", "C0456DEFG", "D0789HIJK", "%", "%C3%A9", "a b", ""]


def _parser_hosts() -> list[str]:
    from af_pipeline.compiler.entities import hosts as h

    out = list(h.BY_HOST) + list(h.BY_SITE) + [f"acme.{s}" for s in h.BY_SITE]
    out += [f"www.{lab}.co.uk" for lab in h.BY_LABEL] + [f"{sub}.{lab}.com" for lab in h.BY_LABEL
                                                          for sub in ("docs", "mail", "drive", "calendar", "meet",
                                                                      "maps", "console", "gemini", "signin")]
    out += [f"{p}.acme.io" for p in h.BY_PREFIX]
    return sorted(out)


_VOCAB = _vocabulary()
_word = st.one_of(st.sampled_from(_VOCAB), st.text(max_size=6))
parser_urls = st.builds(
    lambda host, segs, qk, qv, frag: f"https://{host}/{'/'.join(segs)}?{qk}={qv}#{frag}",
    st.sampled_from(_parser_hosts()),
    st.lists(_word, max_size=7),
    _word,
    _word,
    st.lists(_word, max_size=3).map("/".join),
)


@settings(max_examples=int(os.environ.get("AF_FUZZ_EXAMPLES", "800")), deadline=None)
@given(parser_urls)
def test_every_host_parser_is_total(url: str) -> None:
    ref = type_url(url)
    _check(ref)
    assert ref.domain == (site_of(url) or "")


@pytest.mark.parametrize("url,surface", [
    ("https://mail.google.com/mail/u/0/#inbox", "mail.google.com"),
    ("https://docs.google.com/document/d/1AbCdEf/edit", "docs.google.com"),
    ("https://calendar.google.com/calendar/u/0/r/week", "calendar.google.com"),
    ("https://meet.google.com/abc-defg-hij", "meet.google.com"),
    ("https://www.google.com/search?q=gmail", "google.com"),
    ("https://www.google.co.uk/maps", "google.co.uk"),
    ("https://mail.google.co.uk/mail/u/0", "mail.google.co.uk"),
    ("https://github.com/acme/widgets", "github.com"),
    ("http://10.0.0.1:8080/x", "10.0.0.1:8080"),
    (None, None),
])
def test_products_of_one_domain_are_their_own_surfaces(url, surface):
    """Gmail, Docs, Calendar and Meet are where a person was, not one "google.com"; typed page
    references keep the registrable domain."""
    from af_pipeline.compiler.entities import surface_of, type_url

    assert surface_of(url) == surface
    if url and "google" in url:
        assert type_url(url).domain.startswith("google.")
