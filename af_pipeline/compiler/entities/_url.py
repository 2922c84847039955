"""URL parsing shared by every typing layer: one tolerant split, decoded and bounded.

Everything here is a pure function of the string (urllib.parse, ipaddress, the bundled public
suffix list); nothing fetches, nothing reads the clock. Inputs are arbitrary text from capture
sources, so every step that the standard library may refuse (bad IPv6 brackets, ports out of
range, undecodable punycode) is caught and degrades to "no host" instead of raising.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from publicsuffixlist import PublicSuffixList

MAX_URL = 4096  # longer inputs are cut before parsing: data: URLs can be megabytes
MAX_ENTITY = 120  # an entity is a label for a human or an agent, not a payload
MAX_SEGMENTS = 24
MAX_QUERY = 2048

_PSL = PublicSuffixList()  # reads the list bundled with the package; never the network

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
# Schemes that carry no host: typed by the scheme itself, never by a site parser.
_OPAQUE_SCHEMES = frozenset(
    {"about", "javascript", "data", "blob", "mailto", "tel", "sms", "view-source", "file",
     "chrome", "chrome-extension", "chrome-search", "chrome-untrusted", "edge", "brave", "opera",
     "vivaldi", "moz-extension", "resource", "devtools", "filesystem", "urn", "magnet"}
)
_WEB_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp"})
_HOST_OK = re.compile(r"^[^\s/\\?#@:%<>\[\]\"'`{}|^,;=!$&()*+~\ud800-\udfff]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_SPACES = re.compile(r"\s+")
_SURROGATE = re.compile("[\ud800-\udfff]")  # cannot be written as UTF-8: shown as U+FFFD
_WWW_N = re.compile(r"^www\d$")
_LOCAL_NAMES = frozenset({"localhost", "host.docker.internal", "localhost.localdomain"})


class Url(NamedTuple):
    """A URL split into the parts parsers look at. Text parts are percent-decoded.

    A NamedTuple rather than a frozen dataclass: it is built once per distinct URL on the hot
    path, and tuple construction is several times cheaper.
    """

    raw: str
    scheme: str  # lowercase; "" when the input had none and we assumed http
    host: str  # lowercase, IDN decoded to Unicode, no trailing dot, no "www."; "" when none
    port: int | None
    site: str | None  # registrable domain (see site_of); None without a usable host
    local: bool  # loopback / localhost: a developer's own machine
    is_ip: bool
    segs: tuple[str, ...]  # decoded, non-empty path segments
    query: dict[str, str]  # first value of each key, key lowercased, value decoded
    fragment: str  # decoded
    opaque: str  # for host-less schemes: everything after "scheme:"

    @property
    def sub(self) -> tuple[str, ...]:
        """Labels left of the registrable domain, outermost first (``a.b.example.com`` -> a, b)."""
        if not self.site or self.is_ip or self.host == self.site:
            return ()
        if not self.host.endswith("." + self.site):
            return ()
        return tuple(self.host[: -len(self.site) - 1].split("."))

    @property
    def label(self) -> str:
        """The registrable domain's own label: ``google`` for google.co.uk."""
        if not self.site or self.is_ip:
            return ""
        return self.site.split(".", 1)[0]

    @property
    def thost(self) -> str:
        """The host as written in templates: port kept only for local and IP hosts."""
        if self.is_ip or self.local:
            return self.site or self.host
        return self.host

    def q(self, *keys: str) -> str | None:
        """The first non-blank value among query keys, cleaned; None when all are blank."""
        for key in keys:
            value = clean(self.query.get(key))
            if value:
                return value
        return None

    def seg(self, i: int) -> str:
        return self.segs[i] if -len(self.segs) <= i < len(self.segs) else ""

    def lseg(self, i: int) -> str:
        return self.seg(i).lower()


def clean(value: str | None, limit: int = MAX_ENTITY) -> str | None:
    """Entity text: control characters dropped, whitespace collapsed, bounded; None if empty."""
    if value is None:
        return None
    text = _SPACES.sub(" ", _CONTROL.sub(" ", value)).strip()
    if not text:
        return None
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)
    text = unicodedata.normalize("NFC", text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _decode_idn(host: str) -> str:
    if "xn--" not in host:
        return host
    labels = []
    for label in host.split("."):
        if label.startswith("xn--"):
            try:
                label = label.encode("ascii").decode("idna")
            except (UnicodeError, ValueError):
                pass  # not valid punycode: keep the label as written
        labels.append(label)
    return ".".join(labels)


@lru_cache(maxsize=8192)
def _registrable(host: str) -> str | None:
    """Registrable domain for a valid DNS-ish host, public-suffix aware."""
    try:
        found = _PSL.privatesuffix(host)
    except (ValueError, UnicodeError, IndexError):
        found = None
    if found:
        return str(found)
    # A public suffix itself (github.io), a single label (intranet) or an unknown shape:
    # the host is the best site we have.
    return host


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not host or not (host[0].isdigit() or ":" in host):
        return None
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _with_port(host: str, port: int | None, v6: bool) -> str:
    shown = f"[{host}]" if v6 else host
    return f"{shown}:{port}" if port is not None else shown


def _unq(text: str) -> str:
    return unquote(text) if "%" in text else text


def split_query(query: str) -> dict[str, str]:
    """First value of each key; keys lowercased. A plain split: parse_qsl is several times slower."""
    out: dict[str, str] = {}
    if not query:
        return out
    for pair in query[:MAX_QUERY].split("&"):
        if not pair:
            continue
        key, _, value = pair.partition("=")
        k = _unq(key.replace("+", " ")).strip().lower()
        if k and k not in out:
            out[k] = _unq(value.replace("+", " "))
    return out


def segments(path: str) -> tuple[str, ...]:
    """The decoded, non-empty segments of a URL path."""
    out = []
    for part in path.split("/"):
        if part:
            part = _unq(part)
            if part.strip():
                out.append(part)
                if len(out) == MAX_SEGMENTS:
                    break
    return tuple(out)


@lru_cache(maxsize=32768)
def parse(raw: str) -> Url:
    """Split any string into a Url; never raises."""
    text = raw.strip()[:MAX_URL]
    m = _SCHEME_RE.match(text)
    scheme = m.group(1).lower() if m else ""
    if scheme in _OPAQUE_SCHEMES:
        rest = text[m.end():] if m else ""
        return Url(raw, scheme, "", None, None, False, False, (), {}, "", rest)
    if m and scheme not in _WEB_SCHEMES and text[m.end(): m.end() + 2] == "//":
        # Some other app scheme with an authority (slack://, zoommtg://): no web site.
        return Url(raw, scheme, "", None, None, False, False, (), {}, "", text[m.end():])
    assumed = False
    if not m or scheme not in _WEB_SCHEMES:
        # "github.com/x", "localhost:3000/x": no scheme, or a host:port read as a scheme.
        text = "http://" + text.lstrip("/")
        scheme = ""
        assumed = True
    try:
        parts = urlsplit(text)
        hostname = parts.hostname or ""
    except ValueError:
        return Url(raw, scheme, "", None, None, False, False, (), {}, "", "")
    try:
        port = parts.port
    except ValueError:
        port = None
    segs = segments(parts.path)
    query = split_query(parts.query)
    fragment = _unq(parts.fragment[:MAX_QUERY])

    # Browsers map hosts through IDNA (NFKC, case folded): full-width "ｅｘａｍｐｌｅ.com" is example.com.
    host = hostname.rstrip(".") if hostname.isascii() else unicodedata.normalize("NFKC", hostname).lower().rstrip(".")
    ip = _ip(host)
    if ip is not None:
        site = _with_port(str(ip), port, ip.version == 6)
        local = ip.is_loopback or ip.is_unspecified
        return Url(raw, scheme, str(ip), port, site, local, True, segs, query, fragment, "")
    host = _decode_idn(host)
    labels = host.split(".")
    valid = bool(host) and _HOST_OK.match(host) is not None and all(labels) and len(host) <= 253
    if valid and assumed and "." not in host and port is None and host not in _LOCAL_NAMES:
        valid = False  # bare words are not hosts unless a scheme or a port says so
    if not valid:
        return Url(raw, scheme, "", None, None, False, False, segs, query, fragment, "")
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        return Url(raw, scheme, host, port, _with_port(host, port, False), True, False,
                   segs, query, fragment, "")
    if host.startswith("www.") and host.count(".") >= 2:
        host = host[4:]
    elif len(labels) > 2 and _WWW_N.match(labels[0]):
        host = ".".join(labels[1:])
    return Url(raw, scheme, host, port, _registrable(host), False, False, segs, query, fragment, "")
