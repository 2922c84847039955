"""Templates: a URL with its variable parts replaced by {placeholders}.

Routines compare navigations by template, so two URLs of the same page type must give the same
string. Host parsers write their templates by hand; the generic layers use ``shape`` below,
which only replaces segments that look like identifiers (numbers, hashes, UUIDs, long mixed
tokens, dated slugs) and keeps words, which are usually fixed parts of a site's layout.
"""

from __future__ import annotations

import re

from af_pipeline.compiler.entities._url import Url

_NUM = re.compile(r"^\d+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-fA-F]{8,}$")
_HAS_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"^[A-Za-z][A-Za-z_]*$")
MAX_TEMPLATE_SEGMENTS = 8


def is_id(seg: str) -> bool:
    """Whether a path segment is an identifier rather than a fixed word of the site's layout."""
    if _NUM.match(seg) or _UUID.match(seg):
        return True
    if _HEX.match(seg) and _HAS_DIGIT.search(seg):
        return True
    if "@" in seg or "%" in seg or " " in seg:
        return True
    if len(seg) >= 12 and _HAS_DIGIT.search(seg):
        return True
    if len(seg) >= 24 and not _WORD.match(seg):
        return True
    if len(seg) > 40:
        return True
    if seg.count("-") >= 3 or seg.count("_") >= 3:
        return True  # slugs: titles written into the path
    return not seg.isascii()


def shape_segment(seg: str) -> str:
    if _NUM.match(seg):
        return "{n}"
    if is_id(seg):
        return "{id}"
    return seg.lower()


def shape(u: Url) -> str:
    """Generic template: host plus path with identifier segments replaced."""
    parts = [shape_segment(s) for s in u.segs[:MAX_TEMPLATE_SEGMENTS]]
    if len(u.segs) > MAX_TEMPLATE_SEGMENTS:
        parts.append("…")
    return u.thost + ("/" + "/".join(parts) if parts else "/")


def shape_at(u: Url, index: int, placeholder: str) -> str:
    """Generic template with one segment (the page's entity) named explicitly."""
    parts = [shape_segment(s) for s in u.segs[:MAX_TEMPLATE_SEGMENTS]]
    if -len(parts) <= index < len(parts):
        parts[index] = "{" + placeholder + "}"
    return u.thost + ("/" + "/".join(parts) if parts else "/")


def tpl(u: Url, path: str = "", query: str = "") -> str:
    """A hand-written template on this URL's host: ``tpl(u, "/pull/{n}")``."""
    out = u.thost + (path or "/")
    return out + ("?" + query if query else "")
