"""Entity typing: every URL becomes a typed page reference (paper sections 3.3 and 4.4).

Resolution runs in layers, first match wins, and is total:

1. ``host``: a bespoke parser for the site (af_pipeline/compiler/entities/hosts.py), plus local
   development servers and browser-internal schemes;
2. ``search_param``: a generic search-parameter detector (``?q=``, ``?query=``, ``?keywords=``...);
3. ``heuristic``: subdomain and path words that name common pages on any site (sign-in,
   dashboard, mail, calendar, meeting, settings, documentation, articles, search paths ...);
4. ``fallback``: a generic ``page`` with the site's domain, so typing never loses a visit.

Every layer is a pure function of the URL string: urllib.parse and the public suffix list bundled
with the ``publicsuffixlist`` package; no fetching, no clock, no model. Results are cached per URL
because the compiler types every snapshot.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import metadata
from typing import Any
from urllib.parse import unquote

from af_pipeline.compiler.entities import hosts
from af_pipeline.compiler.entities._shape import is_id, shape, shape_at
from af_pipeline.compiler.entities._url import MAX_ENTITY, Url, clean, parse, segments, split_query

__all__ = [
    "LAYERS",
    "MAX_ENTITY",
    "PSL_VERSION",
    "CoverageReport",
    "PageRef",
    "coverage",
    "site_of",
    "surface_of",
    "type_url",
]

LAYERS: tuple[str, ...] = ("host", "search_param", "heuristic", "fallback")
GENERIC_KIND = "page"

try:  # the list's snapshot date is part of the package version (1.1.2.YYYYMMDD)
    PSL_VERSION = metadata.version("publicsuffixlist")
except metadata.PackageNotFoundError:  # pragma: no cover - installed as a dependency
    PSL_VERSION = "unknown"


@dataclass(frozen=True, slots=True)
class PageRef:
    """A typed reference to one page: what sort of page, about what, on which site."""

    kind: str  # profile, repo, pull_request, search, doc, email, ... or "page" (generic fallback)
    entity: str | None  # the human-relevant identifier, decoded and at most MAX_ENTITY characters
    domain: str  # registrable domain (site_of), "" when the URL has no web host
    template: str  # the URL with variable parts as {placeholders}, for comparing navigations
    layer: str  # host | search_param | heuristic | fallback

    @property
    def generic(self) -> bool:
        return self.layer == "fallback" or self.kind == GENERIC_KIND


# ----------------------------------------------------------------------------------- site_of

# Products that share one registrable domain but are different places to a person: Gmail,
# Google Docs, Calendar and Meet are not one "google.com". Their host is their surface.
SURFACES: dict[str, frozenset[str]] = {
    "google": frozenset({"mail", "docs", "drive", "calendar", "meet", "chat", "keep", "sheets", "slides"}),
}


def site_of(url: str | None) -> str | None:
    """Registrable site of a URL, public-suffix aware; None when there is no usable web host.

    ``https://www.bbc.co.uk/news`` -> ``bbc.co.uk``; ``https://foo.github.io/`` -> ``foo.github.io``;
    ``http://localhost:3000/x`` -> ``localhost:3000``; ``http://[::1]:8080/`` -> ``[::1]:8080``;
    ``about:blank`` -> None. Internationalised hosts come back in Unicode (``bücher.de``).
    """
    if not url or not isinstance(url, str):
        return None
    return parse(url).site


def surface_of(url: str | None) -> str | None:
    """Where a person was: the registrable site (site_of), except for the products listed in
    SURFACES, which keep their own host (``https://mail.google.com/mail/u/0`` ->
    ``mail.google.com``, ``https://www.google.com/search?q=x`` -> ``google.com``). Ledgers and
    frames are keyed by it; typed page references keep the registrable domain."""
    if not url or not isinstance(url, str):
        return None
    u = parse(url)
    if u.site and not u.is_ip and u.sub:
        products = SURFACES.get(u.site.split(".", 1)[0])
        if products and u.sub[-1] in products:
            return f"{u.sub[-1]}.{u.site}"
    return u.site


# ----------------------------------------------------------------------------------- layers

_NEW_TAB = frozenset({"blank", "newtab", "new-tab-page", "home", "start", "startpage"})


def _scheme_ref(u: Url) -> PageRef | None:
    """Host-less schemes: browser pages, extensions, local files, mail links."""
    body = re.split(r"[?#]", u.opaque, maxsplit=1)[0].lstrip("/")
    name = body.split("/", 1)[0].lower()
    if u.scheme in ("about", "chrome", "edge", "brave", "opera", "vivaldi", "chrome-search"):
        if name in _NEW_TAB or name.startswith("newtab"):
            sep = ":" if u.scheme == "about" else "://"
            return PageRef("new_tab", None, "", f"{u.scheme}{sep}{name}", "host")
        return PageRef("browser_page", clean(name), "", f"{u.scheme}://{{page}}", "host")
    if u.scheme in ("chrome-extension", "moz-extension"):
        return PageRef("extension", clean(name), "", f"{u.scheme}://{{extension}}/", "host")
    if u.scheme == "file":
        path = body.rstrip("/")
        leaf = path.rsplit("/", 1)[-1] if path else ""
        return PageRef("local_file", clean(unquote(leaf)), "", "file:///{path}", "host")
    if u.scheme == "mailto":
        return PageRef("email_compose", clean(unquote(body)), "", "mailto:{address}", "host")
    if u.scheme == "view-source":
        return PageRef("browser_page", "view-source", "", "view-source:{url}", "host")
    return None


def _local(u: Url) -> PageRef:
    path = shape(u)
    return PageRef("local_dev", u.site, u.site or "", path, "host")


def _host_layer(u: Url) -> PageRef | None:
    parser = hosts.lookup(u)
    if parser is None:
        return None
    hit = parser(u)
    if hit is None:
        return None
    kind, entity, template = hit
    return PageRef(kind, clean(entity), u.site or "", template, "host")


# Query keys that name a search on almost every site, strongest first.
_STRONG_KEYS = ("q", "query", "search", "search_query", "keywords", "keyword", "searchterm", "search_term",
                "searchtext", "search_text", "term", "terms", "wd", "kw", "qs", "_nkw", "find")
# Keys that are a search only on a search-looking path (``?s=20`` is often a share token).
_WEAK_KEYS = ("s", "k", "text")
_SEARCHY_PATH = re.compile(r"(search|find|results|suche|recherche|buscar|zoeken|query|lookup)", re.I)
_LINKISH = re.compile(r"^(https?:|www\.|/)", re.I)
_HAS_WORD = re.compile(r"[^\W\d_]", re.UNICODE)


def _search_param(u: Url) -> PageRef | None:
    if not u.query:
        return None
    path = "/".join(u.segs).lower()
    searchy = bool(_SEARCHY_PATH.search(path))
    for key in _STRONG_KEYS + _WEAK_KEYS:
        value = clean(u.query.get(key))
        if not value:
            continue
        if key in _WEAK_KEYS and not (searchy or (not u.segs and _HAS_WORD.search(value))):
            continue
        if not _HAS_WORD.search(value) and not searchy:
            continue  # ?q=123 on a random page is usually an id, not a search
        if _LINKISH.match(value):
            continue  # ?q=https://... is a redirect or a share link, not a search
        return PageRef("search", value, u.site or "", shape(u) + f"?{key}={{query}}", "search_param")
    return None


_SIGN_IN = frozenset({"login", "log-in", "log_in", "signin", "sign-in", "sign_in", "auth", "sso", "oauth",
                      "oauth2", "saml", "saml2", "authorize", "authenticate", "logon", "cas", "mfa", "2fa",
                      "signup", "sign-up", "sign_up", "register", "password_reset", "forgot-password",
                      "reset-password", "verify", "openid-connect", "login.php", "login.aspx", "signin.aspx"})
_SIGN_IN_SUB = frozenset({"login", "signin", "auth", "sso", "accounts", "account", "id", "idp", "identity",
                          "secure", "passport", "oauth", "adfs"})
_DASHBOARD = frozenset({"dashboard", "dashboards", "admin", "console", "analytics", "insights", "overview",
                        "wp-admin", "monitoring", "metrics", "reports", "portal"})
_DASHBOARD_SUB = frozenset({"dashboard", "dash", "console", "admin", "portal", "analytics", "grafana", "kibana",
                            "metabase", "monitor", "monitoring", "status"})
_MAIL = frozenset({"mail", "webmail", "inbox", "mailbox", "owa", "roundcube"})
_CALENDAR = frozenset({"calendar", "calendars", "agenda", "schedule", "cal"})
_MEETING = frozenset({"meet", "meeting", "meetings", "webinar", "webinars", "videocall"})
_SETTINGS = frozenset({"settings", "preferences", "prefs", "account", "my-account", "myaccount", "profile-settings",
                       "billing", "security", "notifications-settings"})
_DOCS = frozenset({"docs", "doc", "documentation", "reference", "manual", "guide", "guides", "apidocs",
                   "handbook", "tutorial", "tutorials", "wiki", "knowledge-base"})
_DOCS_SUB = frozenset({"docs", "doc", "developer", "developers", "devdocs", "wiki", "learn", "manual", "reference",
                       "readthedocs"})
_HELP = frozenset({"help", "support", "faq", "faqs", "helpcenter", "hc", "kb"})
_ARTICLE = frozenset({"blog", "blogs", "news", "article", "articles", "post", "posts", "story", "stories",
                      "p", "entry", "press", "insights", "magazine", "changelog"})
_SEARCH_PATH = frozenset({"search", "find", "results", "suche", "recherche", "buscar", "zoeken", "s"})
_CHECKOUT = frozenset({"cart", "checkout", "basket", "bag", "panier", "warenkorb"})
_PRODUCT = frozenset({"product", "products", "item", "items", "listing", "listings", "dp", "produit", "shop"})
_JOBS = frozenset({"careers", "jobs", "job", "career", "vacancies", "positions", "openings"})
_ISSUE = frozenset({"issues", "issue", "tickets", "ticket", "bugs", "bug", "browse"})
_ORDERS = frozenset({"orders", "order", "invoices", "invoice", "receipts"})
_CATEGORY = frozenset({"collections", "collection", "category", "categories", "c", "department", "tag", "tags",
                       "topics", "topic"})
_COURSE = frozenset({"course", "courses", "learn", "lesson", "lessons"})
_CREATE = frozenset({"new", "create", "add", "compose", "edit"})
_DATE = re.compile(r"^(19|20)\d\d$")


def _leaf(seg: str) -> str:
    return re.sub(r"\.(html?|php|aspx?|md)$", "", seg, flags=re.I)


def _heuristic(u: Url) -> PageRef | None:
    low = [s.lower() for s in u.segs]
    n = len(low)
    first = u.sub[0] if u.sub else ""
    site = u.site or ""

    def ref(kind: str, at: int | None = None, name: str = "", entity: str | None = None) -> PageRef:
        """A heuristic reference; ``at`` is the index of the segment holding the entity."""
        if at is not None and -n <= at < n:
            return PageRef(kind, clean(entity or _leaf(u.segs[at])), site, shape_at(u, at, name), "heuristic")
        return PageRef(kind, clean(entity), site, shape(u), "heuristic")

    def after(words: frozenset[str], within: int = 3) -> int | None:
        """Index of the first of ``words`` among the first segments, or None."""
        for i, s in enumerate(low[:within]):
            if s in words:
                return i
        return None

    docs = first in _DOCS_SUB or "readthedocs" in site or (n > 0 and low[0] in _DOCS)
    # Authentication first (a login page under /dashboard is still a login page), except inside
    # documentation, where /docs/auth/... explains signing in rather than being the sign-in page.
    if not docs and (any(s in _SIGN_IN for s in low[:2] + low[-1:]) or first in _SIGN_IN_SUB):
        return ref("sign_in")
    if docs:
        return ref("documentation", -1 if n else None, "page")
    if first in ("mail", "webmail", "email") or (n and low[0] in _MAIL):
        return ref("inbox")
    if first in ("calendar", "cal") or (n and low[0] in _CALENDAR):
        return ref("calendar")
    i = after(_MEETING, 2)
    if i is not None:
        return ref("meeting", i + 1 if i + 1 < n else None, "meeting")
    if n >= 2 and low[0] == "j" and u.segs[1].isdigit():
        return ref("meeting", 1, "meeting")
    if first in ("meet", "meeting", "video", "conference"):
        return ref("meeting", 0 if n else None, "meeting")
    if first in _DASHBOARD_SUB or (n and low[0] in _DASHBOARD) or (n > 1 and low[1] in _DASHBOARD):
        return ref("dashboard")
    if after(_SETTINGS) is not None:
        return ref("settings")
    i = after(_ISSUE)
    if i is not None and i + 1 < n and (u.segs[i + 1].isdigit() or re.match(r"^[A-Z][A-Z0-9]*-\d+$", u.segs[i + 1])):
        return ref("ticket", i + 1, "ticket")
    i = after(_SEARCH_PATH)
    if i is not None and (low[i] != "s" or i == 0):
        return ref("search", i + 1 if i + 1 < n else None, "query")
    if n and low[0] in _CHECKOUT:
        return ref("checkout")
    i = after(_CATEGORY, 2)
    if i is not None and i + 1 < n:
        return ref("category", i + 1, "category")
    i = after(_COURSE, 2)
    if i is not None and i + 1 < n:
        return ref("course", i + 1, "course")
    i = after(_PRODUCT)
    if i is not None and i + 1 < n:
        return ref("product", i + 1, "product")
    if n >= 2 and low[-1] in _CREATE:  # /claims/new: a form creating a claim; /claims/12/edit
        return ref("edit" if low[-1] == "edit" else "create", entity=u.segs[-2])
    if n and low[0] in _ORDERS:
        return ref("orders", 1, "order") if n > 1 else ref("orders")
    if first in ("help", "support") or (n and low[0] in _HELP):
        return ref("help", -1 if n > 1 else None, "page")
    if n and low[0] in _JOBS:
        return ref("job", 1, "job") if n > 1 else ref("job_search")
    # Articles: /blog/<slug>, /2024/05/12/<slug>, or a slug on a blog./news. host.
    if n >= 2 and (any(_DATE.match(s) for s in low[:-1]) or any(s in _ARTICLE for s in low[:-1])):
        return ref("article", -1, "article")
    if first in ("blog", "news", "press") and n and is_id(u.segs[-1]):
        return ref("article", -1, "article")
    return None


def _fallback(u: Url) -> PageRef:
    return PageRef(GENERIC_KIND, None, u.site or "", shape(u) if u.host else "", "fallback")


@lru_cache(maxsize=65536)
def _type(url: str) -> PageRef:
    u = parse(url)
    if not u.host:
        return _scheme_ref(u) or _fallback(u)
    if u.local:
        return _local(u)
    hit = _host_layer(u)
    if hit is not None:
        return hit
    g = _hash_route(u)
    ref = _search_param(g) or _heuristic(g) or _fallback(g)
    if g is not u and ref.template.startswith(u.thost + "/"):
        ref = replace(ref, template=u.thost + "/#/" + ref.template[len(u.thost) + 1:])
    return ref


def _hash_route(u: Url) -> Url:
    """Single-page apps route in the fragment (``/#/settings``, ``/#!/inbox?q=x``): for the generic
    layers, read such a fragment as the path when the real path is empty."""
    frag = u.fragment
    if u.segs or not frag.startswith(("/", "!/")):
        return u
    route, _, query = frag.lstrip("!").partition("?")
    return u._replace(segs=segments(route), query=u.query or split_query(query))


def type_url(url: str) -> PageRef:
    """Typed page reference for any string; total: never raises, always returns a PageRef."""
    if not isinstance(url, str):
        url = "" if url is None else str(url)
    return _type(url)


# ----------------------------------------------------------------------------------- coverage

@dataclass(frozen=True, slots=True)
class CoverageReport:
    """How much of a set of URLs the parsers type beyond the generic page (paper section 6.4)."""

    distinct: int  # distinct non-empty URL strings
    typed: int  # of which typed non-generic (layer != fallback and kind != page)
    blank: int  # empty or missing values seen (not URLs, not counted in distinct)
    kinds: tuple[tuple[str, int], ...]  # distinct URLs per kind, most frequent first
    layers: tuple[tuple[str, int], ...]  # distinct URLs per layer, in layer order
    generic_domains: tuple[tuple[str, int], ...]  # domains with the most untyped URLs: where to add parsers

    @property
    def share(self) -> float:
        return self.typed / self.distinct if self.distinct else 0.0

    @property
    def percent(self) -> str:
        """The share as text with one decimal, e.g. ``81.3%`` (formatted here, never by repr)."""
        tenths = (self.typed * 1000 * 2 + self.distinct) // (2 * self.distinct) if self.distinct else 0
        return f"{tenths // 10}.{tenths % 10}%"

    @property
    def typed_kinds(self) -> int:
        """Number of distinct non-generic kinds seen."""
        return sum(1 for kind, _ in self.kinds if kind != GENERIC_KIND)

    def to_dict(self) -> dict[str, Any]:
        return {
            "distinct_urls": self.distinct,
            "typed_urls": self.typed,
            "typed_percent": self.percent,
            "typed_share": round(self.share, 4),
            "typed_kinds": self.typed_kinds,
            "blank_values": self.blank,
            "kinds": dict(self.kinds),
            "layers": dict(self.layers),
            "generic_domains": dict(self.generic_domains),
        }


def coverage(urls: Iterable[str | None], top_generic: int = 15) -> CoverageReport:
    """Coverage over the distinct URLs of ``urls`` (duplicates count once; blanks are counted apart)."""
    seen: set[str] = set()
    blank = 0
    for url in urls:
        if url is None or not isinstance(url, str) or not url.strip():
            blank += 1
            continue
        seen.add(url)
    kinds: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    generic: Counter[str] = Counter()
    typed = 0
    for url in seen:
        ref = type_url(url)
        kinds[ref.kind] += 1
        layers[ref.layer] += 1
        if ref.generic:
            generic[ref.domain or "(no host)"] += 1
        else:
            typed += 1
    by_count = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    by_layer = tuple((name, layers[name]) for name in LAYERS if layers[name])
    top = sorted(generic.items(), key=lambda kv: (-kv[1], kv[0]))[:top_generic]
    return CoverageReport(len(seen), typed, blank, tuple(by_count), by_layer, tuple(top))

