"""Layer 1: one bespoke parser per host family.

A parser is a pure function ``(Url) -> Hit | None``: the page kind, the entity and the template,
or None to let the next layer (search parameter, heuristics, fallback) try. Register it with
``@site("site.com", ...)`` for registrable domains (and every host under them),
``@exact_host("news.ycombinator.com")`` for one host exactly, ``@label("google")`` for a brand under
any public suffix (google.co.uk, amazon.de), or ``@prefix("gitlab")`` for self-hosted instances
whose first host label names the product (gitlab.acme.com).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from af_pipeline.compiler.entities._shape import is_id, shape, tpl
from af_pipeline.compiler.entities._url import Url, clean

Hit = tuple[str, str | None, str]  # kind, entity, template
Parser = Callable[[Url], Hit | None]

BY_HOST: dict[str, Parser] = {}  # exact host (after "www." removal)
BY_SITE: dict[str, Parser] = {}  # registrable domain
BY_LABEL: dict[str, Parser] = {}  # registrable domain's label, any public suffix
BY_PREFIX: dict[str, Parser] = {}  # first host label of a self-hosted product


def _register(table: dict[str, Parser], keys: tuple[str, ...]) -> Callable[[Parser], Parser]:
    def deco(fn: Parser) -> Parser:
        for key in keys:
            if key in table:
                raise RuntimeError(f"two host parsers claim {key}")
            table[key] = fn
        return fn

    return deco


def exact_host(*hosts: str) -> Callable[[Parser], Parser]:
    """Register a parser for these hosts exactly (after "www." removal)."""
    return _register(BY_HOST, hosts)


def site(*sites: str) -> Callable[[Parser], Parser]:
    """Register a parser for these registrable domains and every host under them."""
    return _register(BY_SITE, sites)


def label(*labels: str) -> Callable[[Parser], Parser]:
    """Register a parser for a brand label under any public suffix (google.co.uk, amazon.de)."""
    return _register(BY_LABEL, labels)


def prefix(*labels: str) -> Callable[[Parser], Parser]:
    """Register a parser for self-hosted products named by the first host label (gitlab.acme.com)."""
    return _register(BY_PREFIX, labels)


def lookup(u: Url) -> Parser | None:
    fn = BY_HOST.get(u.host)
    if fn is None:
        # The host and each parent domain: pkg.go.dev before go.dev, and acme.notion.site (its own
        # registrable site, notion.site being a public suffix) still reaches the notion.site parser.
        rest = u.host
        while fn is None and "." in rest:
            fn = BY_SITE.get(rest)
            rest = rest.split(".", 1)[1]
    if fn is None:
        fn = BY_LABEL.get(u.label)
    if fn is None and u.sub:
        fn = BY_PREFIX.get(u.sub[0])
    return fn


def words(slug: str) -> str | None:
    """A title slug as words: ``Mobile-App-v2`` -> ``Mobile App v2``."""
    return clean(slug.replace("-", " ").replace("_", " ").replace("+", " "))


# --------------------------------------------------------------------------- professional network

@site("linkedin.com")
def linkedin(u: Url) -> Hit | None:
    s0, s1 = u.lseg(0), u.seg(1)
    if not u.segs:
        return "feed", None, tpl(u, "/")
    if s0 == "in" and s1:
        return "profile", clean(s1), tpl(u, "/in/{profile}")
    if s0 in ("company", "school", "showcase") and s1:
        return "company", clean(s1), tpl(u, f"/{s0}/{{company}}")
    if s0 == "search" and u.lseg(1) == "results":
        what = u.lseg(2)
        kind = {"people": "people_search", "companies": "company_search", "jobs": "job_search"}.get(what, "search")
        return kind, u.q("keywords"), tpl(u, f"/search/results/{what or 'all'}", "keywords={query}")
    if s0 == "jobs":
        if u.lseg(1) == "view" and u.seg(2):
            return "job", clean(u.seg(2)), tpl(u, "/jobs/view/{job}")
        if u.q("currentjobid"):
            return "job", u.q("currentjobid"), tpl(u, "/jobs/" + (u.lseg(1) or ""), "currentJobId={job}")
        return "job_search", u.q("keywords"), tpl(u, "/jobs/search", "keywords={query}")
    if s0 == "feed" and u.lseg(1) == "update" and u.seg(2):
        return "post", clean(u.seg(2)), tpl(u, "/feed/update/{post}")
    if s0 in ("posts", "pulse") and s1:
        return ("post" if s0 == "posts" else "article"), clean(s1), tpl(u, f"/{s0}/{{post}}")
    if s0 == "feed":
        return "feed", None, tpl(u, "/feed/")
    if s0 == "messaging":
        thread = u.seg(2) if u.lseg(1) == "thread" else None
        return "message", clean(thread), tpl(u, "/messaging/thread/{thread}" if thread else "/messaging/")
    if s0 == "sales":
        if u.lseg(1) in ("lead", "people") and u.seg(2):
            return "profile", clean(u.seg(2).split(",")[0]), tpl(u, f"/sales/{u.lseg(1)}/{{profile}}")
        if u.lseg(1) == "company" and u.seg(2):
            return "company", clean(u.seg(2)), tpl(u, "/sales/company/{company}")
        if u.lseg(1) == "search":
            return "people_search", u.q("keywords", "query"), tpl(u, "/sales/search/" + u.lseg(2))
    if s0 == "events" and s1:
        return "event", clean(s1), tpl(u, "/events/{event}")
    if s0 == "groups" and s1:
        return "community", clean(s1), tpl(u, "/groups/{group}")
    if s0 == "mynetwork":
        return "network", None, tpl(u, "/mynetwork/")
    if s0 == "notifications":
        return "notifications", None, tpl(u, "/notifications/")
    if s0 in ("settings", "mypreferences", "psettings"):
        return "settings", None, tpl(u, f"/{s0}/")
    if s0 in ("login", "checkpoint", "uas", "authwall", "signup"):
        return "sign_in", None, tpl(u, f"/{s0}")
    return None


# --------------------------------------------------------------------------- code hosting

_GH_RESERVED = frozenset(
    {"about", "account", "apps", "codespaces", "collections", "contact", "copilot", "customer-stories",
     "enterprise", "events", "explore", "features", "login", "logout", "marketplace", "new", "join",
     "organizations", "pricing", "readme", "security", "session", "sessions", "signup", "site",
     "sponsors", "stars", "topics", "trending", "watching", "password_reset", "dashboard", "users"}
)


@site("github.com")
def github(u: Url) -> Hit | None:
    if u.host == "gist.github.com":
        if len(u.segs) >= 2:
            return "gist", clean(f"{u.seg(0)}/{u.seg(1)}"), tpl(u, "/{owner}/{gist}")
        return "gist", clean(u.seg(0)), tpl(u, "/{owner}" if u.segs else "/")
    if u.host not in ("github.com", "m.github.com"):
        return None
    s0 = u.lseg(0)
    if not u.segs or s0 == "dashboard":
        return "dashboard", None, tpl(u, "/")
    if s0 == "search":
        kind = "code_search" if u.q("type") in ("code", "Code") else "search"
        return kind, u.q("q"), tpl(u, "/search", "q={query}&type=" + (u.q("type") or "").lower())
    if s0 == "notifications":
        return "notifications", u.q("query"), tpl(u, "/notifications")
    if s0 == "settings":
        return "settings", clean(u.seg(1)), tpl(u, "/settings/" + u.lseg(1))
    if s0 in ("pulls", "issues"):
        kind = "pull_request_list" if s0 == "pulls" else "issue_list"
        return kind, u.q("q"), tpl(u, f"/{s0}")
    if s0 in ("login", "session", "sessions", "signup", "join", "password_reset"):
        return "sign_in", None, tpl(u, f"/{s0}")
    if s0 in ("orgs", "users") and u.lseg(2) == "projects" and u.seg(3):
        return "board", clean(f"{u.seg(1)}/projects/{u.seg(3)}"), tpl(u, f"/{s0}/{{owner}}/projects/{{n}}")
    if s0 == "orgs" and u.seg(1):
        return "organization", clean(u.seg(1)), tpl(u, "/orgs/{org}/" + u.lseg(2))
    if s0 == "new":
        return "create", "repo", tpl(u, "/new")
    if s0 in _GH_RESERVED:
        return None
    owner = u.seg(0)
    if len(u.segs) == 1:
        return "profile", clean(owner), tpl(u, "/{owner}")
    name = u.seg(1)[:-4] if u.seg(1).endswith(".git") and len(u.seg(1)) > 4 else u.seg(1)  # clone URLs
    return _repo_page(u, f"{owner}/{name}", u.segs[2:], "/{owner}/{repo}", "#")


def _repo_page(u: Url, repo: str, rest: tuple[str, ...], base: str, mr_sep: str) -> Hit:
    """Pages inside one repository, shared by GitHub, GitLab (after /-/) and Bitbucket."""
    if not rest:
        return "repo", clean(repo), tpl(u, base)
    r0, r1 = rest[0].lower(), rest[1] if len(rest) > 1 else ""
    tab = rest[2].lower() if len(rest) > 2 else ""
    if r0 in ("pull", "merge_requests", "pull-requests", "pulls") and r1.isdigit():
        return "pull_request", clean(f"{repo}{mr_sep}{r1}"), tpl(u, f"{base}/{r0}/{{n}}" + (f"/{tab}" if tab else ""))
    if r0 in ("pulls", "merge_requests", "pull-requests"):
        return "pull_request_list", clean(repo), tpl(u, f"{base}/{r0}")
    if r0 == "issues" and r1.isdigit():
        return "issue", clean(f"{repo}#{r1}"), tpl(u, f"{base}/issues/{{n}}")
    if r0 == "issues" and r1 == "new":
        return "issue_new", clean(repo), tpl(u, f"{base}/issues/new")
    if r0 == "issues":
        return "issue_list", clean(repo), tpl(u, f"{base}/issues")
    if r0 in ("blob", "src", "raw", "blame", "edit") and len(rest) > 2:
        return "file", clean(f"{repo}:{'/'.join(rest[2:])}"), tpl(u, f"{base}/{r0}/{{ref}}/{{path}}")
    if r0 == "tree":
        return "repo", clean(repo), tpl(u, f"{base}/tree/{{ref}}" + ("/{path}" if len(rest) > 2 else ""))
    if r0 == "commit" and r1:
        return "commit", clean(f"{repo}@{r1[:12]}"), tpl(u, f"{base}/commit/{{sha}}")
    if r0 == "commits":
        return "commit_list", clean(repo), tpl(u, f"{base}/commits" + ("/{ref}" if r1 else ""))
    if r0 == "actions":
        if r1 == "runs" and tab:
            return "ci_run", clean(f"{repo}/runs/{rest[2]}"), tpl(u, f"{base}/actions/runs/{{n}}")
        return "ci_run_list", clean(repo), tpl(u, f"{base}/actions")
    if r0 in ("pipelines", "jobs", "pipelines-results") and r1:
        return "ci_run", clean(f"{repo}/{r0}/{r1}"), tpl(u, f"{base}/{r0}/{{n}}")
    if r0 in ("pipelines", "jobs"):
        return "ci_run_list", clean(repo), tpl(u, f"{base}/{r0}")
    if r0 == "search":
        return "code_search", u.q("q", "search"), tpl(u, f"{base}/search", "q={query}")
    if r0 == "settings":
        return "settings", clean(repo), tpl(u, f"{base}/settings" + (f"/{r1.lower()}" if r1 else ""))
    if r0 == "compare":
        return "compare", clean(repo), tpl(u, f"{base}/compare/{{range}}")
    if r0 == "releases":
        return "release", clean(repo), tpl(u, f"{base}/releases" + ("/tag/{tag}" if r1 == "tag" else ""))
    if r0 == "discussions" and r1.isdigit():
        return "discussion", clean(f"{repo}#{r1}"), tpl(u, f"{base}/discussions/{{n}}")
    if r0 == "wiki":
        return "wiki_page", clean(f"{repo}:{r1}") if r1 else clean(repo), tpl(u, f"{base}/wiki" + ("/{page}" if r1 else ""))
    return "repo", clean(repo), tpl(u, f"{base}/{r0}")


@site("gitlab.com")
@prefix("gitlab")
def gitlab(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if not u.segs:
        return "dashboard", None, tpl(u, "/")
    if s0 == "dashboard":
        return "dashboard", clean(u.seg(1)), tpl(u, "/dashboard/" + u.lseg(1))
    if s0 == "search":
        kind = "code_search" if u.q("scope") == "blobs" else "search"
        return kind, u.q("search"), tpl(u, "/search", "search={query}")
    if s0 == "users" and u.lseg(1) in ("sign_in", "sign_up", "password"):
        return "sign_in", None, tpl(u, "/users/" + u.lseg(1))
    if s0 == "-" and u.lseg(1) in ("profile", "user_settings"):
        return "settings", None, tpl(u, f"/-/{u.lseg(1)}")
    if "-" in u.segs:
        cut = u.segs.index("-")
        project = "/".join(u.segs[:cut])
        return _repo_page(u, project, u.segs[cut + 1:], "/{project}/-", "!")
    if len(u.segs) == 1:
        return "profile", clean(u.seg(0)), tpl(u, "/{namespace}")
    return "repo", clean("/".join(u.segs)), tpl(u, "/{project}")


@site("bitbucket.org")
def bitbucket(u: Url) -> Hit | None:
    if not u.segs or u.lseg(0) in ("account", "dashboard"):
        return "dashboard", None, tpl(u, "/" + u.lseg(0))
    if len(u.segs) == 1:
        return "profile", clean(u.seg(0)), tpl(u, "/{workspace}")
    return _repo_page(u, f"{u.seg(0)}/{u.seg(1)}", u.segs[2:], "/{workspace}/{repo}", "#")


# --------------------------------------------------------------------------- Google

def _strip_user_index(segs: tuple[str, ...]) -> tuple[str, ...]:
    """Google inserts /u/0/ for multi-account sessions: the page is the same."""
    out = list(segs)
    for i in range(len(out) - 1):
        if out[i] == "u" and out[i + 1].isdigit():
            del out[i: i + 2]
            break
    return tuple(out)


_DOC_KINDS = {"document": "doc", "spreadsheets": "sheet", "presentation": "slides", "forms": "form",
              "drawings": "drawing"}


def _gdocs(u: Url) -> Hit | None:
    segs = _strip_user_index(u.segs)
    if not segs:
        return "doc_list", None, tpl(u, "/")
    kind = _DOC_KINDS.get(segs[0].lower())
    if kind is None:
        return None
    if len(segs) >= 4 and segs[1] == "d" and segs[2] == "e":  # published forms: /forms/d/e/<id>/viewform
        return kind, clean(segs[3]), tpl(u, f"/{segs[0].lower()}/d/e/{{id}}")
    if len(segs) >= 3 and segs[1] in ("d", "e"):
        return kind, clean(segs[2]), tpl(u, f"/{segs[0].lower()}/{segs[1]}/{{id}}")
    return "doc_list", clean(kind), tpl(u, f"/{segs[0].lower()}/")


def _gdrive(u: Url) -> Hit | None:
    segs = _strip_user_index(u.segs)
    low = [s.lower() for s in segs]
    if "folders" in low and low.index("folders") + 1 < len(segs):
        return "folder", clean(segs[low.index("folders") + 1]), tpl(u, "/drive/folders/{id}")
    if len(segs) >= 3 and low[0] == "file" and low[1] == "d":
        return "file", clean(segs[2]), tpl(u, "/file/d/{id}")
    if low[:1] == ["open"] and u.q("id"):
        return "file", u.q("id"), tpl(u, "/open", "id={id}")
    if "search" in low or u.q("q"):
        return "search", u.q("q"), tpl(u, "/drive/search", "q={query}")
    return "folder", clean(segs[1] if len(segs) > 1 else None), tpl(u, "/" + "/".join(low[:2]))


def _gmail(u: Url) -> Hit | None:
    frag = u.fragment.strip("/")
    parts = [p for p in frag.split("/") if p]
    if parts and "?compose=" in parts[-1]:
        return "email_compose", None, tpl(u, "/mail/", "compose={id}")
    if u.q("compose") or (u.q("view") == "cm"):
        return "email_compose", None, tpl(u, "/mail/", "compose={id}")
    if not parts:
        if "chat" in (s.lower() for s in u.segs):
            return "message", None, tpl(u, "/chat/")
        return "inbox", "inbox", tpl(u, "/mail/#inbox")
    if parts[0].split("?")[0].lower() == "settings":
        return "settings", clean(parts[1]) if len(parts) > 1 else None, tpl(u, "/mail/#settings")
    if parts[0].lower() == "chat" and len(parts) > 2:
        kind = "message" if parts[1].lower() == "dm" else "channel"
        return kind, clean(parts[2]), tpl(u, f"/mail/#chat/{parts[1].lower()}/{{conversation}}")
    head = parts[0].split("?")[0].lower()
    if head in ("search", "advanced-search") and len(parts) > 1:
        return "search", clean(parts[1].replace("+", " ")), tpl(u, "/mail/#search/{query}")
    last = parts[-1].split("?")[0]
    if len(parts) >= 2 and len(last) >= 16 and last.isalnum():
        return "email", clean(last), tpl(u, f"/mail/#{head}/{{message}}")
    if head in ("label", "category") and len(parts) > 1:
        return "inbox", clean(parts[1].replace("+", " ")), tpl(u, f"/mail/#{head}/{{label}}")
    return "inbox", clean(head), tpl(u, f"/mail/#{head}")


def _gcal(u: Url) -> Hit | None:
    raw = _strip_user_index(u.segs)
    segs = [s.lower() for s in raw]
    eid = u.q("eid")
    if eid:
        return "event", eid, tpl(u, "/calendar/event", "eid={id}")
    if "eventedit" in segs or "event" in segs:
        key = "eventedit" if "eventedit" in segs else "event"
        idx = segs.index(key)
        ident = raw[idx + 1] if idx + 1 < len(raw) else None
        return "event", clean(ident), tpl(u, f"/calendar/r/{key}" + ("/{id}" if ident else ""))
    view = next((s for s in segs if s in ("day", "week", "month", "year", "agenda", "customday", "schedule")), None)
    return "calendar", view, tpl(u, "/calendar/r" + (f"/{view}" if view else ""))


_MEET_CODE = re.compile(r"^[a-z]{3}-[a-z]{4}-[a-z]{3}$")


def _gmeet(u: Url) -> Hit | None:
    code = u.lseg(0)
    if _MEET_CODE.match(code) or (code and code not in ("landing", "new", "_meet") and len(u.segs) == 1):
        return "meeting", clean(code), tpl(u, "/{meeting}")
    return "meeting", None, tpl(u, "/" + code)


def _gmaps(u: Url, segs: tuple[str, ...], base: str) -> Hit:
    low = [s.lower() for s in segs]
    if low[:1] == ["place"] and len(segs) > 1:
        return "map", words(segs[1]), tpl(u, base + "/place/{place}")
    if low[:1] == ["search"] and len(segs) > 1:
        return "map", words(segs[1]), tpl(u, base + "/search/{query}")
    if low[:1] == ["dir"]:
        stops = [words(s) for s in segs[1:] if not s.startswith(("@", "data="))]
        route = " → ".join(s for s in stops if s)
        return "directions", clean(route), tpl(u, base + "/dir/{route}")
    return "map", u.q("q", "query", "daddr"), tpl(u, base + "/")


@label("google")
def google(u: Url) -> Hit | None:
    sub = u.sub[0] if u.sub else ""
    if sub == "docs":
        return _gdocs(u)
    if sub == "drive":
        return _gdrive(u)
    if sub == "mail" or sub == "inbox":
        return _gmail(u)
    if sub == "calendar":
        return _gcal(u)
    if sub == "meet":
        return _gmeet(u)
    if sub == "maps":
        return _gmaps(u, u.segs[1:] if u.lseg(0) == "maps" else u.segs, "/maps")
    if sub in ("gemini", "bard", "aistudio", "notebooklm"):
        chat = u.seg(-1) if len(u.segs) >= 2 else None
        return "ai_chat", clean(chat), tpl(u, "/app/{chat}" if chat else "/" + u.lseg(0))
    if sub == "accounts":
        return "sign_in", None, tpl(u, "/" + u.lseg(0))
    if sub == "myaccount":
        return "settings", clean(u.seg(0)), tpl(u, "/" + u.lseg(0))
    if u.sub[:2] == ("console", "cloud"):
        return "dashboard", clean(u.seg(0)), tpl(u, "/" + u.lseg(0), "project={project}")
    if sub == "keep":
        return "note", clean(u.fragment.split("/")[-1]) if "/" in u.fragment else None, tpl(u, "/")
    if sub == "photos":
        return "photos", None, tpl(u, "/" + u.lseg(0))
    if sub == "colab" or u.sub[:2] == ("colab", "research"):
        nb = u.seg(1) if u.lseg(0) in ("drive", "github", "gist") else None
        return "notebook", clean(nb), tpl(u, f"/{u.lseg(0)}/{{notebook}}" if nb else "/")
    if sub == "chat":
        room = u.seg(1) if u.lseg(0) in ("room", "dm") else None
        return ("message" if u.lseg(0) == "dm" else "channel"), clean(room), tpl(u, f"/{u.lseg(0)}/{{conversation}}")
    if sub == "play" and u.q("id"):
        return "product", u.q("id"), tpl(u, "/store/apps/details", "id={app}")
    if sub in ("analytics", "lookerstudio", "datastudio", "search") and u.segs:
        report = u.seg(1) if u.lseg(0) in ("reporting", "u") else None
        return "dashboard", clean(report), tpl(u, "/" + u.lseg(0))
    if sub == "console" and u.sub[1:2] == ("firebase",):
        return "dashboard", clean(u.seg(1)) if u.lseg(0) == "project" else None, tpl(u, "/project/{project}")
    if sub == "translate":
        return "translate", u.q("text"), tpl(u, "/", "text={text}")
    if sub == "news":
        return "feed", None, tpl(u, "/" + u.lseg(0))
    if sub == "scholar":
        return "search", u.q("q"), tpl(u, "/scholar", "q={query}")
    if sub in ("", "m"):
        s0 = u.lseg(0)
        if s0 == "maps":
            return _gmaps(u, u.segs[1:], "/maps")
        if s0 in ("search", "webhp", "") and (u.q("q") or not u.segs):
            return "search", u.q("q"), tpl(u, "/search", "q={query}")
        if s0 == "url":  # a redirect: the target is typed when the browser lands there
            return "redirect", None, tpl(u, "/url", "q={target}")
    return None


# --------------------------------------------------------------------------- Microsoft 365

def _outlook(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if not low or low[0] in ("owa", "mail"):
        rest = [s for s in low[1:] if not s.isdigit()]
        raw = [s for s in u.segs[1:] if not s.isdigit()]
        if "id" in rest and rest.index("id") + 1 < len(raw):
            folder = rest[0] if rest[0] != "id" else "inbox"
            return "email", clean(raw[rest.index("id") + 1]), tpl(u, f"/mail/{folder}/id/{{message}}")
        if "compose" in rest or "new" in rest:
            return "email_compose", None, tpl(u, "/mail/deeplink/compose")
        if "search" in rest:
            return "search", u.q("q", "query"), tpl(u, "/mail/search")
        folder = rest[0] if rest else "inbox"
        return "inbox", clean(folder), tpl(u, f"/mail/{folder}")
    if low[0] == "calendar":
        if "item" in low or "read" in low or "compose" in low:
            ident = u.segs[-1] if len(u.segs) > 2 else None
            return "event", clean(ident), tpl(u, "/calendar/item/{id}")
        view = low[2] if len(low) > 2 and low[1] == "view" else None
        return "calendar", view, tpl(u, "/calendar/view" + (f"/{view}" if view else ""))
    if low[0] in ("people", "contacts"):
        return "contacts", None, tpl(u, f"/{low[0]}")
    return None


def _teams(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    frag = u.fragment.lower()
    if "meetup-join" in low or low[:1] == ["meet"] or "meeting" in frag:
        ident = u.seg(1) if low[:1] == ["meet"] else None
        return "meeting", clean(ident), tpl(u, "/meet/{id}" if ident else "/l/meetup-join/{id}")
    if low[:2] == ["l", "channel"] and len(u.segs) > 3:
        return "channel", clean(u.seg(3)), tpl(u, "/l/channel/{id}/{name}")
    if low[:2] == ["l", "message"] or low[:2] == ["l", "chat"] or "conversations" in frag or "chat" in frag:
        return "message", None, tpl(u, "/l/chat/{id}")
    if "calendar" in frag or "calendar" in low:
        return "calendar", None, tpl(u, "/_#/calendarv2")
    return "message", None, tpl(u, "/" + (low[0] if low else ""))


@site("office.com", "office365.com", "live.com", "microsoft.com", "sharepoint.com", "microsoftonline.com",
      "cloud.microsoft")
def microsoft(u: Url) -> Hit | None:
    sub = u.sub[0] if u.sub else ""
    if sub == "outlook" or u.host in ("outlook.office.com", "outlook.office365.com", "outlook.live.com"):
        return _outlook(u)
    if sub == "teams":
        return _teams(u)
    if sub == "login" or u.site == "microsoftonline.com":
        return "sign_in", None, tpl(u, "/" + u.lseg(0))
    if sub == "copilot" or (u.site == "microsoft.com" and u.lseg(0) == "copilot"):
        return "ai_chat", None, tpl(u, "/")
    if u.site == "sharepoint.com" or sub == "onedrive":
        return _sharepoint(u)
    return None


_SP_KINDS = {":w:": "doc", ":x:": "sheet", ":p:": "slides", ":b:": "file", ":o:": "note", ":f:": "folder",
             ":u:": "file", ":v:": "video", ":i:": "file"}


def _sharepoint(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if s0 in _SP_KINDS:
        kind = _SP_KINDS[s0]
        name = u.q("file") or next((s for s in reversed(u.segs) if "." in s and not s.lower().endswith(".aspx")), None)
        return kind, clean(name) or u.q("d"), tpl(u, f"/{s0}/r/{{path}}")
    name = u.q("file")
    if name and "." in name:
        ext = name.rsplit(".", 1)[1].lower()
        kind = {"docx": "doc", "doc": "doc", "xlsx": "sheet", "xls": "sheet", "pptx": "slides", "ppt": "slides"}.get(ext, "file")
        return kind, clean(name), tpl(u, "/_layouts/15/Doc.aspx", "file={name}")
    if s0 in ("sites", "teams") and u.seg(1):
        return "site", clean(u.seg(1)), tpl(u, f"/{s0}/{{site}}/" + u.lseg(2))
    ident = u.q("id")
    if s0 == "personal" or ident:
        return "folder", words(ident.rsplit("/", 1)[-1]) if ident else None, tpl(u, "/personal/{user}")
    return None


# --------------------------------------------------------------------------- meetings and chat

@site("zoom.us", "zoom.com", "zoomgov.com")
def zoom(u: Url) -> Hit | None:
    s0, s1 = u.lseg(0), u.seg(1)
    if s0 in ("j", "s", "w") and s1:
        return "meeting", clean(s1), tpl(u, f"/{s0}/{{meeting}}")
    if s0 == "wc":
        ident = next((s for s in u.segs[1:] if s.isdigit()), None)
        return "meeting", clean(ident), tpl(u, "/wc/{meeting}/join")
    if s0 == "my" and s1:
        return "meeting", clean(s1), tpl(u, "/my/{room}")
    if s0 == "rec":
        return "recording", None, tpl(u, "/rec/" + u.lseg(1) + "/{id}")
    if s0 in ("signin", "signup", "saml", "sso"):
        return "sign_in", None, tpl(u, "/" + s0)
    if s0 in ("meeting", "meetings", "webinar"):
        return "meeting_list", None, tpl(u, "/" + s0)
    if s0 in ("profile", "account", "pprofile"):
        return "settings", None, tpl(u, "/" + s0)
    return None


_SLACK_ID = re.compile(r"^[CGD][A-Z0-9]{6,}$")


@site("slack.com")
def slack(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if s0 == "client":
        conv = next((s for s in u.segs[2:] if _SLACK_ID.match(s)), None)
        if conv:
            kind = "message" if conv.startswith("D") else "channel"
            return kind, clean(conv), tpl(u, "/client/{team}/{conversation}")
        view = u.lseg(2) or None
        return "inbox", view, tpl(u, "/client/{team}" + (f"/{view}" if view else ""))
    if s0 == "archives" and u.seg(1):
        if len(u.segs) > 2:
            return "message", clean(u.seg(1)), tpl(u, "/archives/{conversation}/{message}")
        return "channel", clean(u.seg(1)), tpl(u, "/archives/{conversation}")
    if s0 == "messages" and u.seg(1):
        return "channel", clean(u.seg(1)), tpl(u, "/messages/{conversation}")
    if s0 in ("signin", "ssb", "sign_in_with_password", "workspace-signin", "get-started"):
        return "sign_in", None, tpl(u, "/" + s0)
    if s0 == "search" or u.q("query"):
        return "search", u.q("query", "q"), tpl(u, "/search")
    return None


@site("discord.com", "discord.gg", "discordapp.com")
def discord(u: Url) -> Hit | None:
    if u.site == "discord.gg" or u.lseg(0) == "invite":
        code = u.seg(-1) if u.segs else None
        return "community", clean(code), tpl(u, "/invite/{code}")
    if u.lseg(0) == "channels":
        guild, chan, msg = u.seg(1), u.seg(2), u.seg(3)
        if guild == "@me":
            return "message", clean(chan), tpl(u, "/channels/@me/{conversation}" if chan else "/channels/@me")
        if msg:
            return "message", clean(f"{guild}/{chan}/{msg}"), tpl(u, "/channels/{server}/{channel}/{message}")
        if chan:
            return "channel", clean(f"{guild}/{chan}"), tpl(u, "/channels/{server}/{channel}")
        return "community", clean(guild), tpl(u, "/channels/{server}")
    if u.lseg(0) in ("login", "register"):
        return "sign_in", None, tpl(u, "/" + u.lseg(0))
    if u.lseg(0) == "app":
        return "message", None, tpl(u, "/app")
    return None


@exact_host("web.whatsapp.com", "web.telegram.org", "messenger.com", "messages.google.com", "signal.org",
       "app.element.io", "chat.zulip.org", "web.skype.com")
def web_messaging(u: Url) -> Hit | None:
    if u.host == "messenger.com" and u.lseg(0) == "t" and u.seg(1):
        return "message", clean(u.seg(1)), tpl(u, "/t/{conversation}")
    frag = u.fragment.strip("/")
    who = frag.split("/")[-1] if frag else None
    return "message", clean(who.lstrip("@") if who and who.startswith("@") else None), tpl(u, "/")


# --------------------------------------------------------------------------- video and social

_YT_ID = re.compile(r"^[A-Za-z0-9_-]{6,}$")


@site("youtube.com", "youtu.be", "youtube-nocookie.com")
def youtube(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if u.site == "youtu.be" and u.seg(0):
        return "video", clean(u.seg(0)), tpl(u, "/{video}")
    if s0 == "watch" and u.q("v"):
        return "video", u.q("v"), tpl(u, "/watch", "v={video}")
    if s0 in ("shorts", "live", "embed", "v") and _YT_ID.match(u.seg(1)):
        return "video", clean(u.seg(1)), tpl(u, f"/{s0}/{{video}}")
    if s0 == "results":
        return "search", u.q("search_query", "q"), tpl(u, "/results", "search_query={query}")
    if u.seg(0).startswith("@"):
        return "channel", clean(u.seg(0)), tpl(u, "/{channel}" + ("/" + u.lseg(1) if len(u.segs) > 1 else ""))
    if s0 in ("channel", "c", "user") and u.seg(1):
        return "channel", clean(u.seg(1)), tpl(u, f"/{s0}/{{channel}}")
    if s0 == "playlist" and u.q("list"):
        return "playlist", u.q("list"), tpl(u, "/playlist", "list={playlist}")
    if not u.segs or s0 == "feed":
        return "feed", clean(u.seg(1)) if s0 == "feed" else None, tpl(u, "/" + "/".join(u.segs[:2]).lower())
    if s0 == "account" or s0 == "studio":
        return "settings", None, tpl(u, "/" + s0)
    return None


_X_RESERVED = frozenset({"home", "explore", "notifications", "messages", "search", "settings", "i", "compose",
                         "login", "logout", "tos", "privacy", "hashtag", "signup", "intent", "share"})


@site("x.com", "twitter.com", "t.co")
def twitter(u: Url) -> Hit | None:
    if u.site == "t.co":
        return None  # a shortened link; the browser lands on the target
    s0 = u.lseg(0)
    if not u.segs or s0 == "home":
        return "feed", None, tpl(u, "/home")
    if s0 == "search":
        return "search", u.q("q"), tpl(u, "/search", "q={query}")
    if s0 == "hashtag" and u.seg(1):
        return "search", clean("#" + u.seg(1)), tpl(u, "/hashtag/{tag}")
    if s0 == "notifications":
        return "notifications", None, tpl(u, "/notifications")
    if s0 == "messages" or (s0 == "i" and u.lseg(1) in ("chat", "messages")):
        return "message", clean(u.seg(1)) if s0 == "messages" else None, tpl(u, "/messages" + ("/{conversation}" if u.seg(1) else ""))
    if s0 == "i" and u.lseg(1) == "grok":
        return "ai_chat", u.q("conversation"), tpl(u, "/i/grok")
    if s0 == "settings":
        return "settings", clean(u.seg(1)), tpl(u, "/settings/" + u.lseg(1))
    if s0 in ("login", "logout", "signup") or (s0 == "i" and u.lseg(1) == "flow"):
        return "sign_in", None, tpl(u, "/" + s0)
    if s0 in ("explore",):
        return "feed", None, tpl(u, "/explore")
    if s0 == "i" and u.lseg(1) == "lists" and u.seg(2):
        return "feed", clean(u.seg(2)), tpl(u, "/i/lists/{list}")
    if s0 in _X_RESERVED:
        return None
    user = u.seg(0)
    if u.lseg(1) == "status" and u.seg(2):
        return "post", clean(f"@{user}/{u.seg(2)}"), tpl(u, "/{user}/status/{post}")
    return "profile", clean("@" + user), tpl(u, "/{user}" + ("/" + u.lseg(1) if len(u.segs) > 1 else ""))


@site("reddit.com", "redd.it")
def reddit(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if u.site == "redd.it" and u.seg(0):
        return "post", clean(u.seg(0)), tpl(u, "/{post}")
    if s0 == "r" and u.seg(1):
        sub = u.seg(1)
        if u.lseg(2) == "comments" and u.seg(3):
            return "post", clean(f"r/{sub}/{u.seg(3)}"), tpl(u, "/r/{subreddit}/comments/{post}" + ("/{slug}" if u.seg(4) else ""))
        if u.lseg(2) == "search":
            return "search", u.q("q"), tpl(u, "/r/{subreddit}/search", "q={query}")
        if u.lseg(2) == "wiki":
            return "wiki_page", clean(f"r/{sub}"), tpl(u, "/r/{subreddit}/wiki")
        return "community", clean(f"r/{sub}"), tpl(u, "/r/{subreddit}" + ("/" + u.lseg(2) if u.seg(2) else ""))
    if s0 in ("user", "u") and u.seg(1):
        return "profile", clean(f"u/{u.seg(1)}"), tpl(u, f"/{s0}/{{user}}")
    if s0 == "comments" and u.seg(1):
        return "post", clean(u.seg(1)), tpl(u, "/comments/{post}")
    if s0 == "search":
        return "search", u.q("q"), tpl(u, "/search", "q={query}")
    if s0 == "message" or s0 == "chat":
        return "message", None, tpl(u, "/" + s0)
    if not u.segs or s0 in ("hot", "new", "top", "best", "rising"):
        return "feed", None, tpl(u, "/" + s0)
    if s0 == "settings":
        return "settings", None, tpl(u, "/settings")
    if s0 == "login" or s0 == "register":
        return "sign_in", None, tpl(u, "/" + s0)
    return None


_FB_RESERVED = frozenset({"login", "login.php", "settings", "notifications", "friends", "watch", "marketplace",
                          "gaming", "bookmarks", "pages", "groups", "events", "messages", "search", "photo",
                          "photo.php", "profile.php", "reel", "reels", "stories", "story.php", "share",
                          "permalink.php", "help", "privacy", "ads", "business", "dialog", "sharer"})


@site("facebook.com", "fb.com", "fb.watch")
def facebook(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if not u.segs:
        return "feed", None, tpl(u, "/")
    if s0 == "profile.php" and u.q("id"):
        return "profile", u.q("id"), tpl(u, "/profile.php", "id={profile}")
    if s0 == "groups" and u.seg(1):
        if u.lseg(2) in ("posts", "permalink") and u.seg(3):
            return "post", clean(f"{u.seg(1)}/{u.seg(3)}"), tpl(u, "/groups/{group}/posts/{post}")
        return "community", clean(u.seg(1)), tpl(u, "/groups/{group}")
    if s0 == "events" and u.seg(1):
        return "event", clean(u.seg(1)), tpl(u, "/events/{event}")
    if s0 == "marketplace":
        if u.lseg(1) == "item" and u.seg(2):
            return "product", clean(u.seg(2)), tpl(u, "/marketplace/item/{item}")
        return "search", u.q("query"), tpl(u, "/marketplace/" + u.lseg(1))
    if s0 == "messages" or (s0 == "t" and u.seg(1)):
        conv = u.seg(2) if s0 == "messages" and u.lseg(1) == "t" else None
        return "message", clean(conv), tpl(u, "/messages/t/{conversation}" if conv else "/messages")
    if s0 in ("watch", "reel", "reels") or u.site == "fb.watch":
        return "video", u.q("v") or clean(u.seg(1)), tpl(u, f"/{s0}", "v={video}")
    if s0 == "search":
        return "search", u.q("q"), tpl(u, "/search/" + u.lseg(1), "q={query}")
    if s0 in ("photo", "photo.php", "permalink.php", "story.php"):
        return "post", u.q("fbid", "story_fbid"), tpl(u, f"/{s0}", "fbid={post}")
    if s0 == "notifications":
        return "notifications", None, tpl(u, "/notifications")
    if s0 == "settings":
        return "settings", None, tpl(u, "/settings")
    if s0 in ("login", "login.php"):
        return "sign_in", None, tpl(u, "/login")
    if s0 in _FB_RESERVED:
        return None
    if u.lseg(1) in ("posts", "videos") and u.seg(2):
        kind = "post" if u.lseg(1) == "posts" else "video"
        return kind, clean(f"{u.seg(0)}/{u.seg(2)}"), tpl(u, f"/{{profile}}/{u.lseg(1)}/{{id}}")
    return "profile", clean(u.seg(0)), tpl(u, "/{profile}")


@site("instagram.com")
def instagram(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if not u.segs:
        return "feed", None, tpl(u, "/")
    if s0 in ("p", "tv") and u.seg(1):
        return "post", clean(u.seg(1)), tpl(u, f"/{s0}/{{post}}")
    if s0 in ("reel", "reels") and u.seg(1):
        return "video", clean(u.seg(1)), tpl(u, "/reel/{video}")
    if s0 == "stories" and u.seg(1):
        return "story", clean("@" + u.seg(1)), tpl(u, "/stories/{user}")
    if s0 == "explore":
        if u.lseg(1) == "tags" and u.seg(2):
            return "search", clean("#" + u.seg(2)), tpl(u, "/explore/tags/{tag}")
        if u.lseg(1) == "search":
            return "search", u.q("q"), tpl(u, "/explore/search", "q={query}")
        return "feed", None, tpl(u, "/explore")
    if s0 == "direct":
        conv = u.seg(2) if u.lseg(1) == "t" else None
        return "message", clean(conv), tpl(u, "/direct/t/{conversation}" if conv else "/direct/inbox")
    if s0 == "accounts":
        kind = "sign_in" if u.lseg(1) in ("login", "emailsignup", "password") else "settings"
        return kind, None, tpl(u, "/accounts/" + u.lseg(1))
    return "profile", clean("@" + u.seg(0)), tpl(u, "/{user}")


@site("tiktok.com")
def tiktok(u: Url) -> Hit | None:
    if u.seg(0).startswith("@"):
        if u.lseg(1) == "video" and u.seg(2):
            return "video", clean(f"{u.seg(0)}/{u.seg(2)}"), tpl(u, "/{user}/video/{video}")
        return "profile", clean(u.seg(0)), tpl(u, "/{user}")
    if u.lseg(0) == "search":
        return "search", u.q("q"), tpl(u, "/search", "q={query}")
    if not u.segs or u.lseg(0) in ("foryou", "following", "explore"):
        return "feed", None, tpl(u, "/" + u.lseg(0))
    return None


@site("twitch.tv")
def twitch(u: Url) -> Hit | None:
    if u.lseg(0) == "videos" and u.seg(1):
        return "video", clean(u.seg(1)), tpl(u, "/videos/{video}")
    if u.lseg(0) == "search":
        return "search", u.q("term"), tpl(u, "/search", "term={query}")
    if not u.segs or u.lseg(0) in ("directory", "settings", "login", "subscriptions"):
        return None
    return "channel", clean(u.seg(0)), tpl(u, "/{channel}")


@site("vimeo.com")
def vimeo(u: Url) -> Hit | None:
    ident = next((s for s in u.segs if s.isdigit()), None)
    if ident:
        return "video", clean(ident), tpl(u, "/{video}")
    if u.lseg(0) == "search":
        return "search", u.q("q"), tpl(u, "/search", "q={query}")
    return None


@site("netflix.com")
def netflix(u: Url) -> Hit | None:
    if u.lseg(0) in ("watch", "title") and u.seg(1):
        return "video", clean(u.seg(1)), tpl(u, f"/{u.lseg(0)}/{{video}}")
    if u.lseg(0) == "search":
        return "search", u.q("q"), tpl(u, "/search", "q={query}")
    if u.lseg(0) in ("browse", ""):
        return "feed", None, tpl(u, "/" + u.lseg(0))
    return None


@site("spotify.com")
def spotify(u: Url) -> Hit | None:
    segs = u.segs[1:] if u.lseg(0).startswith("intl-") else u.segs
    kinds = {"track": "audio", "episode": "audio", "album": "album", "playlist": "playlist",
             "artist": "artist", "show": "podcast"}
    if segs and segs[0].lower() in kinds and len(segs) > 1:
        return kinds[segs[0].lower()], clean(segs[1]), tpl(u, f"/{segs[0].lower()}/{{id}}")
    if segs and segs[0].lower() == "search":
        return "search", clean(segs[1]) if len(segs) > 1 else None, tpl(u, "/search/{query}")
    return None


@exact_host("news.ycombinator.com")
def hackernews(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if s0 == "item" and u.q("id"):
        return "post", u.q("id"), tpl(u, "/item", "id={post}")
    if s0 == "user" and u.q("id"):
        return "profile", u.q("id"), tpl(u, "/user", "id={user}")
    if s0 in ("", "news", "newest", "front", "ask", "show", "best", "jobs"):
        return "feed", clean(s0 or None), tpl(u, "/" + s0)
    return None


@site("medium.com", "substack.com", "dev.to", "hashnode.dev", "hashnode.com")
def blogs(u: Url) -> Hit | None:
    s0 = u.seg(0)
    if u.site == "substack.com" and u.sub and u.sub[0] not in ("www", "on"):
        if u.lseg(0) == "p" and u.seg(1):
            return "article", clean(u.seg(1)), tpl(u, "/p/{article}")
        return "publication", clean(u.sub[0]), tpl(u, "/")
    if u.site == "substack.com" and s0.startswith("@"):
        return "profile", clean(s0), tpl(u, "/{user}")
    if u.site == "medium.com" and u.sub and u.sub[0] != "www" and u.seg(0):
        return "article", clean(u.seg(-1)), tpl(u, "/{article}")
    if s0.startswith("@") or (u.site == "dev.to" and len(u.segs) == 1 and s0 not in ("search", "top")):
        if len(u.segs) >= 2:
            return "article", clean(u.seg(-1)), tpl(u, "/{user}/{article}")
        return "profile", clean(s0), tpl(u, "/{user}")
    if u.lseg(0) == "p" and u.seg(1):
        return "article", clean(u.seg(1)), tpl(u, "/p/{article}")
    if u.lseg(0) == "search":
        return "search", u.q("q"), tpl(u, "/search", "q={query}")
    if len(u.segs) >= 2 and is_id(u.seg(-1)):
        return "article", clean(u.seg(-1)), tpl(u, "/{publication}/{article}")
    return None


# --------------------------------------------------------------------------- trackers and project tools

_ISSUE_KEY = re.compile(r"^[A-Z][A-Z0-9_]+-\d+$")


@site("atlassian.net", "atlassian.com", "jira.com")
@prefix("jira", "confluence", "wiki")
def atlassian(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    key = u.q("selectedissue")
    if low[:1] == ["browse"] and u.seg(1):
        return "ticket", clean(u.seg(1)), tpl(u, "/browse/{issue}")
    if key and _ISSUE_KEY.match(key):
        return "ticket", key, tpl(u, "/" + "/".join(low[:2]), "selectedIssue={issue}")
    if u.q("jql") or low[-1:] == ["issues"]:
        return "ticket_search", u.q("jql", "text"), tpl(u, "/issues", "jql={query}")
    if "boards" in low:
        proj = u.seg(low.index("projects") + 1) if "projects" in low else None
        return "board", clean(proj), tpl(u, "/jira/software/projects/{project}/boards/{n}")
    if "projects" in low and low.index("projects") + 1 < len(u.segs):
        return "project", clean(u.seg(low.index("projects") + 1)), tpl(u, "/jira/projects/{project}")
    wiki = low[1:] if low[:1] == ["wiki"] else low
    off = len(low) - len(wiki)
    if wiki[:1] == ["spaces"] and len(wiki) > 1:
        space = u.seg(off + 1)
        if len(wiki) > 3 and wiki[2] == "pages":
            title = u.seg(off + 4) if len(wiki) > 4 else u.seg(off + 3)
            return "wiki_page", words(title), tpl(u, "/wiki/spaces/{space}/pages/{page}")
        return "wiki", clean(space), tpl(u, "/wiki/spaces/{space}")
    if wiki[:1] == ["display"] and len(wiki) > 1:
        if len(wiki) > 2:
            return "wiki_page", words(u.seg(off + 2)), tpl(u, "/display/{space}/{page}")
        return "wiki", clean(u.seg(off + 1)), tpl(u, "/display/{space}")
    if "search" in wiki:
        return "search", u.q("text", "q", "jql"), tpl(u, "/wiki/search", "text={query}")
    if low[:1] == ["wiki"]:
        return "wiki", None, tpl(u, "/wiki/" + "/".join(wiki[:1]))
    if low[:1] == ["jira"] and (low[1:2] == ["your-work"] or len(low) == 1):
        return "dashboard", None, tpl(u, "/jira/your-work")
    if low[:1] == ["login"] or u.sub[:1] == ("id",):
        return "sign_in", None, tpl(u, "/login")
    return None


@site("linear.app")
def linear(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if "issue" in low:
        i = low.index("issue")
        if i + 1 < len(u.segs):
            return "ticket", clean(u.segs[i + 1].upper()), tpl(u, "/{workspace}/issue/{issue}" + ("/{slug}" if i + 2 < len(u.segs) else ""))
    if "project" in low:
        i = low.index("project")
        if i + 1 < len(u.segs):
            return "project", words(re.sub(r"-[0-9a-f]{8,}$", "", u.segs[i + 1])), tpl(u, "/{workspace}/project/{project}")
    if "team" in low:
        i = low.index("team")
        return "board", clean(u.seg(i + 1)), tpl(u, "/{workspace}/team/{team}/" + (low[i + 2] if i + 2 < len(low) else ""))
    if "inbox" in low:
        return "notifications", None, tpl(u, "/{workspace}/inbox")
    if low[:1] == ["login"]:
        return "sign_in", None, tpl(u, "/login")
    if "view" in low or "my-issues" in low:
        return "board", None, tpl(u, "/{workspace}/" + low[1] if len(low) > 1 else "/")
    return None


@site("trello.com")
def trello(u: Url) -> Hit | None:
    if u.lseg(0) == "b" and u.seg(1):
        return "board", words(u.seg(2)) or clean(u.seg(1)), tpl(u, "/b/{board}/{name}")
    if u.lseg(0) == "c" and u.seg(1):
        return "ticket", words(re.sub(r"^\d+-", "", u.seg(2))) or clean(u.seg(1)), tpl(u, "/c/{card}/{name}")
    if u.lseg(0) in ("login", "signup"):
        return "sign_in", None, tpl(u, "/" + u.lseg(0))
    if len(u.segs) == 2 and u.lseg(1) == "boards":
        return "board_list", clean(u.seg(0)), tpl(u, "/{user}/boards")
    return None


@site("asana.com")
def asana(u: Url) -> Hit | None:
    ids = [s for s in u.segs if s.isdigit() and s != "0"]
    if u.lseg(0) == "0" and len(ids) >= 2:
        return "ticket", clean(ids[-1]), tpl(u, "/0/{project}/{task}")
    if u.lseg(0) in ("0", "1") and ids:
        return "board", clean(ids[0]), tpl(u, "/0/{project}/" + u.lseg(-1))
    return None


@site("monday.com")
def monday(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if "pulses" in low and low.index("pulses") + 1 < len(u.segs):
        return "ticket", clean(u.segs[low.index("pulses") + 1]), tpl(u, "/boards/{board}/pulses/{item}")
    if low[:1] == ["boards"] and u.seg(1):
        return "board", clean(u.seg(1)), tpl(u, "/boards/{board}")
    return None


@site("clickup.com")
def clickup(u: Url) -> Hit | None:
    if u.lseg(0) == "t" and u.seg(-1):
        return "ticket", clean(u.seg(-1)), tpl(u, "/t/{task}")
    if "v" in [s.lower() for s in u.segs[:2]]:
        return "board", None, tpl(u, "/{team}/v/{view}")
    return None


@site("zendesk.com", "freshdesk.com")
def helpdesk(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if "tickets" in low and low.index("tickets") + 1 < len(u.segs):
        return "ticket", clean(u.segs[low.index("tickets") + 1]), tpl(u, "/agent/tickets/{ticket}")
    if "articles" in low:
        i = low.index("articles")
        return "help", clean(u.seg(i + 1)), tpl(u, "/hc/{locale}/articles/{article}")
    return None


@site("sentry.io")
def sentry(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if "issues" in low:
        i = low.index("issues")
        if i + 1 < len(u.segs) and u.segs[i + 1].isdigit():
            return "issue", clean(u.segs[i + 1]), tpl(u, "/issues/{issue}")
        return "issue_list", None, tpl(u, "/issues")
    if "dashboard" in low or "dashboards" in low or "performance" in low:
        return "dashboard", None, tpl(u, "/dashboards")
    return None


@site("force.com", "salesforce.com", "hubspot.com")
def crm(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if low[:2] == ["lightning", "r"] and len(u.segs) >= 4:
        return "crm_record", clean(f"{u.segs[2]}/{u.segs[3]}"), tpl(u, "/lightning/r/{object}/{id}/view")
    if low[:2] == ["lightning", "o"] and len(u.segs) >= 3:
        return "crm_list", clean(u.segs[2]), tpl(u, "/lightning/o/{object}/list")
    if u.site == "hubspot.com" and len(u.segs) >= 4 and low[0] in ("contacts", "sales"):
        return "crm_record", clean(f"{u.segs[2]}/{u.segs[3]}"), tpl(u, f"/{low[0]}/{{portal}}/{{object}}/{{id}}")
    return None


# --------------------------------------------------------------------------- design

@site("figma.com")
def figma(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if s0 in ("file", "design", "board", "proto", "slides", "deck", "make") and u.seg(1):
        name = words(u.seg(2)) if len(u.segs) > 2 and u.lseg(2) != "branch" else None
        return "design_file", name or clean(u.seg(1)), tpl(u, f"/{s0}/{{key}}" + ("/{name}" if len(u.segs) > 2 else ""))
    if s0 == "files":
        return "design_list", clean(u.seg(-1)) if len(u.segs) > 1 else None, tpl(u, "/files/" + u.lseg(1))
    if s0 in ("community",):
        return "community", None, tpl(u, "/community")
    if s0 in ("login", "signup"):
        return "sign_in", None, tpl(u, "/" + s0)
    return None


@site("miro.com", "canva.com", "excalidraw.com", "whimsical.com", "lucid.app")
def boards(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if "board" in low and low.index("board") + 1 < len(u.segs):
        return "design_file", clean(u.segs[low.index("board") + 1]), tpl(u, "/app/board/{board}")
    if low[:1] == ["design"] and u.seg(1):
        return "design_file", clean(u.seg(1)), tpl(u, "/design/{design}/" + u.lseg(2))
    if u.site == "excalidraw.com" or "documents" in low:
        return "design_file", clean(u.seg(-1)) if u.segs else None, tpl(u, "/")
    return None


# --------------------------------------------------------------------------- dashboards and consoles

@site("grafana.net", "grafana.com")
@prefix("grafana", "kibana")
def grafana(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if s0 == "d" and u.seg(1):
        return "dashboard", clean(u.seg(2) or u.seg(1)), tpl(u, "/d/{uid}/{slug}")
    if s0 in ("explore", "alerting", "dashboards", "app"):
        return "dashboard", clean(s0), tpl(u, "/" + s0)
    if u.sub[:1] == ("kibana",) or "dashboards" in u.fragment:
        return "dashboard", None, tpl(u, "/app/" + u.lseg(1))
    if s0 == "login":
        return "sign_in", None, tpl(u, "/login")
    return None


@site("datadoghq.com", "datadoghq.eu", "ddog-gov.com", "newrelic.com", "honeycomb.io")
def observability(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if s0 in ("dashboard", "dashboards") and u.seg(1):
        return "dashboard", words(u.seg(2)) or clean(u.seg(1)), tpl(u, f"/{s0}/{{id}}/{{slug}}")
    if s0 == "monitors" and u.seg(1):
        return "dashboard", clean(f"monitor {u.seg(1)}"), tpl(u, "/monitors/{id}")
    if s0 in ("logs", "apm", "metric", "infrastructure", "monitors", "dashboard", "notebook", "incidents",
              "launchpad", "nr1-core", "traces"):
        return "dashboard", clean(s0), tpl(u, "/" + s0)
    if s0 in ("login", "account"):
        return "sign_in", None, tpl(u, "/" + s0)
    return None


@label("amazon")
def amazon(u: Url) -> Hit | None:
    if "console" in u.sub:
        return "dashboard", clean(u.seg(0)), tpl(u, "/{service}/" + u.lseg(1))
    if u.sub[:1] == ("signin",) or (u.lseg(0) == "ap" and u.lseg(1) == "signin"):
        return "sign_in", None, tpl(u, "/ap/signin")
    if u.sub and u.sub[0] in ("docs", "aws"):
        return None
    low = [s.lower() for s in u.segs]
    for marker in ("dp", "product"):
        if marker in low and low.index(marker) + 1 < len(u.segs):
            return "product", clean(u.segs[low.index(marker) + 1]), tpl(u, "/dp/{product}")
    if low[:1] == ["s"] or u.q("k"):
        return "search", u.q("k", "field-keywords"), tpl(u, "/s", "k={query}")
    if "cart" in low or "buy" in low or "checkout" in low:
        return "checkout", None, tpl(u, "/gp/cart")
    if "order-history" in low or "your-orders" in low or "css" in low:
        return "orders", None, tpl(u, "/gp/your-account/order-history")
    return None


@site("ebay.com", "ebay.co.uk", "ebay.de", "ebay.fr", "etsy.com", "aliexpress.com")
def shops(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    for marker in ("itm", "listing", "item"):
        if marker in low and low.index(marker) + 1 < len(u.segs):
            return "product", clean(u.segs[low.index(marker) + 1].split(".")[0]), tpl(u, f"/{marker}/{{product}}")
    if "sch" in low or "search" in low or u.q("_nkw"):
        return "search", u.q("_nkw", "q", "searchtext"), tpl(u, "/search", "q={query}")
    return None


@site("vercel.com", "netlify.com", "netlify.app", "heroku.com", "cloudflare.com", "render.com", "fly.io",
      "supabase.com", "azure.com", "digitalocean.com")
def platforms(u: Url) -> Hit | None:
    if u.sub and u.sub[0] in ("docs", "developers", "blog", "community"):
        return None
    if (u.sub and u.sub[0] in ("portal", "dash", "dashboard", "app", "console", "cloud")) or u.lseg(0) in ("dashboard", "project"):
        return "dashboard", clean("/".join(u.segs[:2])) if u.segs else None, tpl(u, "/{account}/{project}" if u.segs else "/")
    if u.site == "vercel.com" and u.segs and u.lseg(0) not in ("docs", "blog", "pricing", "login", "signup", "templates"):
        return "dashboard", clean("/".join(u.segs[:2])), tpl(u, "/{team}/{project}" + ("/" + u.lseg(2) if u.seg(2) else ""))
    return None


# --------------------------------------------------------------------------- AI chat

@site("chatgpt.com", "openai.com", "claude.ai", "anthropic.com", "perplexity.ai", "poe.com", "mistral.ai",
      "deepseek.com", "grok.com", "character.ai", "you.com", "phind.com", "huggingface.co", "meta.ai")
def ai_chat(u: Url) -> Hit | None:
    sub = u.sub[0] if u.sub else ""
    low = [s.lower() for s in u.segs]
    if u.site == "openai.com" and sub not in ("chat",):
        return ("dashboard", clean(u.seg(0)), tpl(u, "/" + u.lseg(0))) if sub == "platform" else None
    if u.site == "anthropic.com":
        return ("dashboard", clean(u.seg(0)), tpl(u, "/" + u.lseg(0))) if sub in ("console", "platform") else None
    if u.site in ("mistral.ai", "deepseek.com") and sub != "chat":
        return None
    if u.site == "huggingface.co":
        if low[:1] != ["chat"]:
            if len(u.segs) >= 2 and low[0] not in ("docs", "blog", "spaces", "datasets", "papers", "settings", "login"):
                return "model", clean(f"{u.seg(0)}/{u.seg(1)}"), tpl(u, "/{owner}/{model}")
            if low[:1] in (["spaces"], ["datasets"]) and len(u.segs) >= 3:
                return low[0][:-1], clean(f"{u.seg(1)}/{u.seg(2)}"), tpl(u, f"/{low[0]}/{{owner}}/{{name}}")
            return None
        low, segs = low[1:], u.segs[1:]
    else:
        segs = u.segs
    for marker in ("c", "chat", "conversation", "search", "thread", "app", "s"):
        if marker in low and low.index(marker) + 1 < len(segs):
            return "ai_chat", clean(segs[low.index(marker) + 1]), tpl(u, f"/{marker}/{{chat}}")
    if low[:1] in (["g"], ["gpts"]) and len(segs) > 1:
        return "ai_chat", clean(segs[1]), tpl(u, "/g/{assistant}")
    if low[:1] in (["project"], ["projects"]) and len(segs) > 1:
        return "ai_chat", clean(segs[1]), tpl(u, f"/{low[0]}/{{project}}")
    if low[:1] in (["login"], ["auth"], ["signin"]):
        return "sign_in", None, tpl(u, "/" + low[0])
    if low[:1] == ["settings"]:
        return "settings", None, tpl(u, "/settings")
    return "ai_chat", None, tpl(u, "/" + "/".join(low[:1]))


# --------------------------------------------------------------------------- reference and knowledge

_STACK_SITES = ("stackoverflow.com", "stackexchange.com", "superuser.com", "serverfault.com",
                "askubuntu.com", "mathoverflow.net", "stackapps.com")


@site(*_STACK_SITES)
def stackexchange(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if s0 in ("questions", "q") and u.seg(1).isdigit():
        return "question", clean(u.seg(2)) or clean(u.seg(1)), tpl(u, "/questions/{n}/{slug}")
    if s0 == "questions" and u.lseg(1) == "tagged" and u.seg(2):
        return "search", clean(f"[{u.seg(2)}]"), tpl(u, "/questions/tagged/{tag}")
    if s0 == "search":
        return "search", u.q("q"), tpl(u, "/search", "q={query}")
    if s0 in ("users", "u") and u.seg(1):
        return "profile", clean(u.seg(2)) or clean(u.seg(1)), tpl(u, "/users/{n}/{user}")
    if s0 == "a" and u.seg(1):
        return "question", clean(u.seg(1)), tpl(u, "/a/{n}")
    if s0 in ("questions", ""):
        return "feed", None, tpl(u, "/questions")
    return None


_WIKI_SITES = ("wikipedia.org", "wiktionary.org", "wikiquote.org", "wikibooks.org", "wikivoyage.org",
               "wikimedia.org", "wikisource.org", "wikidata.org", "fandom.com")


@site(*_WIKI_SITES)
def wikipedia(u: Url) -> Hit | None:
    search = u.q("search")
    if search or (u.lseg(1).startswith("special:search")):
        return "search", search, tpl(u, "/w/index.php", "search={query}")
    if u.lseg(0) == "wiki" and u.seg(1):
        title = "/".join(u.segs[1:]).replace("_", " ")
        if ":" in title and title.split(":", 1)[0].lower() in ("special", "user", "talk", "help", "file", "category"):
            ns = title.split(":", 1)[0].lower()
            return ("category" if ns == "category" else "article"), clean(title), tpl(u, f"/wiki/{ns}:{{title}}")
        return "article", clean(title), tpl(u, "/wiki/{title}")
    if u.q("title"):
        return "article", clean(u.q("title", "") and u.query.get("title", "").replace("_", " ")), tpl(u, "/w/index.php", "title={title}")
    if not u.segs:
        return "feed", None, tpl(u, "/")
    return None


@site("notion.so", "notion.site", "notion.com")
def notion(u: Url) -> Hit | None:
    if u.lseg(0) in ("login", "signup"):
        return "sign_in", None, tpl(u, "/" + u.lseg(0))
    if not u.segs:
        return None
    last = u.seg(-1)
    m = re.match(r"^(?:(.*?)-)?([0-9a-fA-F]{32})$", last)
    if m:
        title = words(m.group(1)) if m.group(1) else None
        return "doc", title or clean(m.group(2)), tpl(u, "/{workspace}/{page}" if len(u.segs) > 1 else "/{page}")
    if u.q("p"):
        return "doc", u.q("p"), tpl(u, "/{workspace}", "p={page}")
    return None


@site("dropbox.com", "box.com")
def dropbox(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if low[:1] in (["s"], ["scl"], ["file"]) or (low[:1] == ["preview"]):
        name = next((s for s in reversed(u.segs) if "." in s), None)
        return "file", clean(name) or clean(u.seg(-1)), tpl(u, f"/{low[0]}/{{id}}/{{name}}")
    if low[:1] in (["home"], ["folder"]):
        return "folder", clean("/".join(u.segs[1:])) or "home", tpl(u, f"/{low[0]}/{{path}}")
    if low[:1] == ["paper"] or low[:1] == ["doc"]:
        return "doc", clean(u.seg(-1)), tpl(u, f"/{low[0]}/{{doc}}")
    return None


@site("icloud.com", "proton.me", "fastmail.com", "zoho.com", "yahoo.com", "aol.com", "gmx.net", "gmx.com")
def mail_providers(u: Url) -> Hit | None:
    sub = u.sub[0] if u.sub else ""
    low = [s.lower() for s in u.segs]
    if sub in ("mail", "webmail") or low[:1] in (["mail"], ["mail2"]):
        return "inbox", clean(u.seg(1)) if low[:1] == ["mail"] and len(low) > 1 else None, tpl(u, "/mail/")
    if sub == "calendar" or low[:1] == ["calendar"]:
        return "calendar", None, tpl(u, "/calendar/")
    if sub in ("search",) and u.site == "yahoo.com":
        return "search", u.q("p", "q"), tpl(u, "/search", "p={query}")
    if sub in ("account", "login") or low[:1] == ["login"]:
        return "sign_in", None, tpl(u, "/" + (low[0] if low else ""))
    return None


# --------------------------------------------------------------------------- search engines and maps

@site("bing.com")
def bing(u: Url) -> Hit | None:
    s0 = u.lseg(0)
    if s0 == "maps":
        return "map", u.q("q", "where1"), tpl(u, "/maps", "q={query}")
    if s0 == "chat" or (s0 == "search" and u.q("showconv") == "1"):
        return "ai_chat", None, tpl(u, "/chat")
    if s0 in ("search", "images", "videos", "news", "shop") or (not u.segs and u.q("q")):
        return "search", u.q("q"), tpl(u, "/" + s0, "q={query}")
    if not u.segs:
        return "search", None, tpl(u, "/")
    return None


@site("duckduckgo.com")
def duckduckgo(u: Url) -> Hit | None:
    if not u.segs or u.lseg(0) in ("html", "lite"):
        return "search", u.q("q"), tpl(u, "/", "q={query}")
    return None


@site("openstreetmap.org", "waze.com", "here.com", "citymapper.com")
@exact_host("maps.apple.com", "maps.apple")
def maps(u: Url) -> Hit | None:
    if u.lseg(0) == "directions" or u.q("daddr"):
        return "directions", u.q("daddr", "to", "route"), tpl(u, "/directions")
    return "map", u.q("q", "query", "address") or (words(u.seg(1)) if u.lseg(0) in ("search", "place") else None), tpl(u, "/")


# --------------------------------------------------------------------------- news

_NEWS_SITES = ("bbc.co.uk", "bbc.com", "theguardian.com", "nytimes.com", "cnn.com", "reuters.com",
               "washingtonpost.com", "lemonde.fr", "ft.com", "economist.com", "bloomberg.com",
               "apnews.com", "npr.org", "wsj.com", "theverge.com", "techcrunch.com", "arstechnica.com",
               "wired.com", "spiegel.de", "elpais.com", "lefigaro.fr", "liberation.fr", "nos.nl")
_DATE_PART = re.compile(r"^(19|20)\d\d$")


@site(*_NEWS_SITES)
def news(u: Url) -> Hit | None:
    if not u.segs:
        return "feed", None, tpl(u, "/")
    low = [s.lower() for s in u.segs]
    if u.site in ("bbc.co.uk", "bbc.com"):
        if low[:1] == ["iplayer"] and "episode" in low:
            return "video", clean(u.segs[low.index("episode") + 1]) if low.index("episode") + 1 < len(low) else None, tpl(u, "/iplayer/episode/{id}")
        if low[:1] == ["sounds"] and len(low) > 2:
            return "audio", clean(u.seg(2)), tpl(u, "/sounds/play/{id}")
        if len(low) >= 2 and low[1] == "articles" and len(low) > 2:
            return "article", clean(u.seg(2)), tpl(u, f"/{low[0]}/articles/{{article}}")
        if low[0] in ("news", "sport") and re.search(r"\d{5,}$", low[-1]):
            return "article", clean(u.seg(-1)), tpl(u, f"/{low[0]}/{{article}}")
        if low[0] == "weather":
            return "weather", clean(u.seg(1)) if len(u.segs) > 1 else None, tpl(u, "/weather/{place}")
    if u.lseg(0) == "search" or u.q("q", "query"):
        return "search", u.q("q", "query", "text"), tpl(u, "/search", "q={query}")
    last = u.seg(-1)
    dated = any(_DATE_PART.match(s) for s in low[:-1])
    if dated or (len(low) >= 2 and is_id(last)) or last.endswith((".html", ".htm", ".ece", ".shtml")):
        section = low[0] if not _DATE_PART.match(low[0]) else "news"
        return "article", clean(re.sub(r"\.s?html?$|\.ece$", "", last)), tpl(u, f"/{section}/{{article}}")
    return "feed", clean(u.seg(0)), tpl(u, "/" + "/".join(low[:2]))


# --------------------------------------------------------------------------- developer references

@site("npmjs.com", "pypi.org", "crates.io", "rubygems.org", "packagist.org", "nuget.org", "pkg.go.dev",
      "docker.com", "mvnrepository.com", "hex.pm")
def packages(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if u.host == "pkg.go.dev" and u.segs and low[0] != "search":
        return "package", clean("/".join(u.segs)), tpl(u, "/{module}")
    for marker in ("package", "packages", "project", "crates", "gems", "r", "_", "artifact"):
        if low[:1] == [marker] and len(u.segs) > 1:
            name = "/".join(u.segs[1:3]) if marker in ("r", "artifact") else u.seg(1)
            return "package", clean(name), tpl(u, f"/{marker}/{{package}}")
    if "search" in low or u.q("q"):
        return "search", u.q("q", "query"), tpl(u, "/search", "q={query}")
    return None


@exact_host("developer.mozilla.org", "docs.python.org", "docs.rs", "learn.microsoft.com", "devdocs.io", "man7.org",
       "en.cppreference.com", "docs.github.com", "docs.gitlab.com")
def references(u: Url) -> Hit | None:
    if not u.segs:
        return "documentation", None, tpl(u, "/")
    last = re.sub(r"\.(html?|php)$", "", u.seg(-1))
    if last in ("index", "") and len(u.segs) > 1:
        last = u.seg(-2)
    return "documentation", clean(last), shape(u)


# --------------------------------------------------------------------------- events and scheduling

@site("calendly.com", "cal.com", "eventbrite.com", "eventbrite.co.uk", "meetup.com", "lu.ma", "luma.com")
def events(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if u.site in ("calendly.com", "cal.com"):
        if low[:1] in (["app"], ["event_types"], ["bookings"]):
            return "calendar", None, tpl(u, "/app/" + (low[1] if len(low) > 1 else ""))
        if len(u.segs) >= 2:
            return "event", clean(f"{u.seg(0)}/{u.seg(1)}"), tpl(u, "/{user}/{event}")
        if u.segs:
            return "booking", clean(u.seg(0)), tpl(u, "/{user}")
        return None
    if "events" in low and low.index("events") + 1 < len(u.segs):
        return "event", clean(u.segs[low.index("events") + 1]), tpl(u, "/{group}/events/{event}")
    if low[:1] == ["e"] and u.seg(1):
        return "event", clean(u.seg(1)), tpl(u, "/e/{event}")
    if u.site in ("lu.ma", "luma.com") and len(u.segs) == 1 and low[0] not in ("home", "discover", "signin", "calendar"):
        return "event", clean(u.seg(0)), tpl(u, "/{event}")
    if u.site == "meetup.com" and len(u.segs) == 1 and low[0] not in ("find", "home", "login"):
        return "community", clean(u.seg(0)), tpl(u, "/{group}")
    if "find" in low or "search" in low or "discover" in low:
        return "search", u.q("keywords", "q", "query"), tpl(u, "/find", "keywords={query}")
    return None


@site("githubusercontent.com")
def github_raw(u: Url) -> Hit | None:
    if u.host == "raw.githubusercontent.com" and len(u.segs) >= 4:
        return "file", clean(f"{u.seg(0)}/{u.seg(1)}:{'/'.join(u.segs[3:])}"), tpl(u, "/{owner}/{repo}/{ref}/{path}")
    return None


# --------------------------------------------------------------------------- research papers

_ARXIV_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z\-]+(\.[A-Z]{2})?/\d{7})(v\d+)?(\.pdf)?$")


@site("arxiv.org", "doi.org", "semanticscholar.org", "openreview.net", "aclanthology.org", "acm.org", "ieee.org")
def papers(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if u.site == "arxiv.org":
        if low[:1] in (["abs"], ["pdf"], ["html"]) and len(u.segs) > 1:
            ident = "/".join(u.segs[1:])
            return "paper", clean(re.sub(r"\.pdf$", "", ident)), tpl(u, f"/{low[0]}/{{paper}}")
        if low[:1] == ["list"]:
            return "feed", clean("/".join(u.segs[1:])), tpl(u, "/list/{category}/{period}")
        return None
    if u.site == "doi.org" and u.segs:
        return "paper", clean("/".join(u.segs)), tpl(u, "/{doi}")
    if u.site == "openreview.net" and u.q("id"):
        return "paper", u.q("id"), tpl(u, "/" + (low[0] if low else ""), "id={paper}")
    if "doi" in low:
        i = low.index("doi")
        rest = [s for s in u.segs[i + 1:] if s.lower() not in ("abs", "pdf", "full", "epdf")]
        if rest:
            return "paper", clean("/".join(rest[:2])), tpl(u, "/doi/{doi}")
    if u.site == "semanticscholar.org" and low[:1] == ["paper"]:
        return "paper", clean(u.seg(-1)), tpl(u, "/paper/{paper}")
    if u.site == "aclanthology.org" and u.segs:
        return "paper", clean(re.sub(r"\.pdf$", "", u.seg(0))), tpl(u, "/{paper}")
    if "document" in low and low.index("document") + 1 < len(u.segs):
        return "paper", clean(u.segs[low.index("document") + 1]), tpl(u, "/document/{paper}")
    return None


# --------------------------------------------------------------------------- job boards

@site("indeed.com", "glassdoor.com", "wellfound.com", "greenhouse.io", "lever.co", "welcometothejungle.com",
      "workable.com", "ashbyhq.com", "otta.com", "monster.com", "ziprecruiter.com")
def job_boards(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    job_id = u.q("jk", "gh_jid", "jobid", "jl")
    if job_id:
        return "job", job_id, tpl(u, "/" + "/".join(low[:1]), "jk={job}")
    if "jobs" in low and low.index("jobs") + 1 < len(u.segs):
        i = low.index("jobs")
        return "job", clean(u.segs[i + 1]), tpl(u, "/" + "/".join(["{company}"] * (i > 0)) + "/jobs/{job}" if i else "/jobs/{job}")
    if u.site in ("lever.co", "ashbyhq.com") and len(u.segs) >= 2:
        return "job", clean(u.seg(1)), tpl(u, "/{company}/{job}")
    if u.site in ("greenhouse.io", "lever.co", "ashbyhq.com", "workable.com") and u.segs:
        return "company", clean(u.seg(0)), tpl(u, "/{company}")
    if u.q("q", "keywords", "query", "sc.keyword"):
        return "job_search", u.q("q", "keywords", "query", "sc.keyword"), tpl(u, "/jobs", "q={query}")
    if low[:1] in (["jobs"], ["job"], ["job-listing"], ["viewjob"]):
        return "job_search", None, tpl(u, "/" + low[0])
    return None


# --------------------------------------------------------------------------- more meetings, notebooks, CI, analytics

@site("webex.com", "whereby.com", "gotomeeting.com", "goto.com", "jit.si", "around.co", "gather.town")
def meetings(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    room = u.q("mtid", "mid", "room")
    if room:
        return "meeting", room, tpl(u, "/" + "/".join(low[:2]), "MTID={meeting}")
    if u.site in ("whereby.com", "jit.si", "around.co") and u.segs and low[0] not in ("user", "login", "information"):
        return "meeting", clean(u.seg(0)), tpl(u, "/{room}")
    for marker in ("meet", "join", "j"):
        if marker in low and low.index(marker) + 1 < len(u.segs):
            return "meeting", clean(u.segs[low.index(marker) + 1]), tpl(u, f"/{marker}/{{meeting}}")
    return None


@site("circleci.com", "buildkite.com", "travis-ci.com", "semaphoreci.com", "pagerduty.com", "opsgenie.com")
def ci_and_incidents(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    for marker in ("builds", "workflows", "jobs"):
        if marker in low and low.index(marker) + 1 < len(u.segs):
            return "ci_run", clean("/".join(u.segs[: low.index(marker) + 2])), tpl(u, f"/{{pipeline}}/{marker}/{{n}}")
    if "pipelines" in low:
        return "ci_run_list", clean("/".join(u.segs[low.index("pipelines") + 1:][:3])), tpl(u, "/pipelines/{project}")
    if "incidents" in low:
        i = low.index("incidents")
        ident = u.segs[i + 1] if i + 1 < len(u.segs) else None
        return ("incident" if ident else "incident_list"), clean(ident), tpl(u, "/incidents" + ("/{incident}" if ident else ""))
    return None


@site("mixpanel.com", "amplitude.com", "posthog.com", "powerbi.com", "tableau.com", "looker.com",
      "metabase.com", "hotjar.com", "segment.com", "plausible.io", "heap.io")
def analytics(u: Url) -> Hit | None:
    if u.sub and u.sub[0] in ("docs", "help", "community", "www"):
        return None
    low = [s.lower() for s in u.segs]
    if not u.sub and low[:1] in ([], ["pricing"], ["blog"], ["docs"], ["product"], ["customers"]):
        return None  # the vendor's marketing site, not the product
    for marker in ("reports", "dashboard", "dashboards", "views", "insights", "board", "chart"):
        if marker in low and low.index(marker) + 1 < len(u.segs):
            return "dashboard", clean(u.segs[low.index(marker) + 1]), tpl(u, f"/{marker}/{{id}}")
    return "dashboard", None, tpl(u, "/" + "/".join(low[:1]))


@site("codesandbox.io", "replit.com", "codepen.io", "stackblitz.com", "jsfiddle.net", "glitch.com",
      "kaggle.com", "observablehq.com", "vscode.dev", "github.dev")
def sandboxes(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if u.site in ("vscode.dev", "github.dev"):
        repo = "/".join(u.segs[1:3]) if low[:1] in (["github"], ["gitlab"]) else "/".join(u.segs[:2])
        return "repo", clean(repo) if repo else None, tpl(u, "/github/{owner}/{repo}" if low[:1] == ["github"] else "/{owner}/{repo}")
    if u.site == "kaggle.com":
        if low[:1] in (["code"], ["competitions"], ["datasets"], ["models"]) and len(u.segs) >= 2:
            kind = {"code": "notebook", "competitions": "competition", "datasets": "dataset", "models": "model"}[low[0]]
            return kind, clean("/".join(u.segs[1:3])), tpl(u, f"/{low[0]}/{{name}}")
        return None
    for marker in ("s", "p", "pen", "embed", "edit", "d", "sandbox"):
        if marker in low[:3] and low.index(marker) + 1 < len(u.segs):
            return "sandbox", clean(u.segs[low.index(marker) + 1]), tpl(u, f"/{marker}/{{sandbox}}")
    if u.segs and u.seg(0).startswith("@") and len(u.segs) >= 2:
        return "sandbox", clean(f"{u.seg(0)}/{u.seg(1)}"), tpl(u, "/{user}/{sandbox}")
    return None


@site("coda.io", "quip.com", "evernote.com", "roamresearch.com", "craft.do", "dropbox.paper", "slite.com",
      "nuclino.com", "airtable.com", "smartsheet.com")
def docs_tools(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if u.site == "airtable.com" and u.segs and low[0].startswith("app"):
        return "sheet", clean(u.seg(0)), tpl(u, "/{base}/{table}")
    if u.site == "coda.io" and low[:1] == ["d"] and len(u.segs) > 1:
        return "doc", words(re.sub(r"_d[A-Za-z0-9\-]+$", "", u.seg(1))), tpl(u, "/d/{doc}")
    if u.site == "evernote.com" or u.site == "roamresearch.com":
        frag = [p for p in u.fragment.split("/") if p]
        return "note", clean(frag[-1]) if frag else None, tpl(u, "/")
    if u.site == "smartsheet.com" and low[:1] == ["sheets"] and len(u.segs) > 1:
        return "sheet", clean(u.seg(1)), tpl(u, "/sheets/{sheet}")
    if u.segs and len(u.seg(-1)) >= 8:
        return "doc", words(u.seg(-1)), tpl(u, "/{doc}")
    return None


@site("quora.com")
def quora(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    if low[:1] == ["profile"] and len(u.segs) > 1:
        return "profile", clean(u.seg(1)), tpl(u, "/profile/{user}")
    if low[:1] == ["search"]:
        return "search", u.q("q"), tpl(u, "/search", "q={query}")
    if len(u.segs) == 1 and "-" in u.seg(0):
        return "question", words(u.seg(0)), tpl(u, "/{question}")
    return None


@site("airbnb.com", "airbnb.co.uk", "airbnb.fr", "booking.com", "tripadvisor.com", "expedia.com", "hotels.com",
      "vrbo.com")
def travel(u: Url) -> Hit | None:
    low = [s.lower() for s in u.segs]
    for marker in ("rooms", "hotel", "h"):
        if marker in low and low.index(marker) + 1 < len(u.segs):
            return "listing", clean(re.sub(r"\.[a-z\-]*html?$", "", u.segs[-1])), tpl(u, f"/{marker}/{{listing}}")
    if u.segs and re.match(r"^(hotel|vacation|restaurant|attraction)_review", low[0]):
        return "listing", clean(u.seg(0)), tpl(u, "/{listing}")
    if low[:1] in (["s"], ["searchresults.html"], ["search"], ["hotel-search"]):
        return "search", u.q("ss", "query", "destination", "q") or (words(u.seg(1)) if len(u.segs) > 1 else None), tpl(u, "/s/{query}")
    return None


@exact_host("apps.apple.com", "chromewebstore.google.com", "chrome.google.com", "addons.mozilla.org",
       "marketplace.visualstudio.com")
def app_stores(u: Url) -> Hit | None:
    ident = u.q("itemname", "id") or next((s for s in reversed(u.segs) if s.startswith("id") or len(s) >= 20), None)
    if u.segs or ident:
        return "product", clean(ident) or clean(u.seg(-1)), tpl(u, "/app/{app}")
    return None
