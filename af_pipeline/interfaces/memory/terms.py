"""How a query's terms meet captured text (search_activity, get_steps' query): identifiers whole.

A text's tokens are its identifiers kept whole (ticket keys ``ENG-603``, pull requests
``hollow-org/engine#36``, hosts ``news.ycombinator.com``, handles, paths: runs of word characters
joined by any of ``. @ # / + : ~ -``), each word of them, and the parts a path, a repository's
pull request or a URL has (cut at ``/ # : @``). A query term matches a token, never a
substring of one: ``ENG-60`` does not find ``ENG-603``, ``60`` does not find ``603``, ``person-4``
does not find ``person-42``. A plain word of PREFIX_MIN letters or more also matches the start
of a word (``expense`` finds ``Expenses``), which ranks below an exact match. Everything is
compared casefolded.
"""

from __future__ import annotations

import re
from functools import lru_cache

COMPOUND = re.compile(r"\w+(?:[.@#/+:~-]+\w+)*")
PART = re.compile(r"\w+")
CUT = re.compile(r"[/#:@]+")  # where an identifier has parts of its own (a path, a PR of a repo, a URL)
PREFIX_MIN = 3  # letters a plain word needs to match the start of a longer word

EXACT, PREFIX, NONE = 2, 1, 0


def terms(query: str) -> list[str]:
    """The query's terms: its identifiers and words, casefolded, each once, sorted."""
    return sorted(set(COMPOUND.findall(query.casefold())))


def tokens(text: str) -> frozenset[str]:
    """Every token of a (casefolded) text: its identifiers whole, each of their words, and, cut
    at ``/ # : @``, each piece and each leading part (``hollow-org/engine#36`` also gives
    ``hollow-org/engine`` and ``engine``; a URL gives its host). A ``-`` or ``.`` never cuts:
    ``eng-603`` gives no ``eng-60``."""
    compounds = COMPOUND.findall(text)
    out = set(compounds)
    for c in compounds:
        if c.isalnum():
            continue
        out.update(PART.findall(c))
        for cut in CUT.finditer(c):
            out.add(c[:cut.start()])
        out.update(p for p in CUT.split(c) if p)
    out.discard("")
    return frozenset(out)


@lru_cache(maxsize=4096)
def _starts_word(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(term))


def prefix_ok(term: str) -> bool:
    """Whether a term may match as the start of a word: letters only, PREFIX_MIN or more."""
    return len(term) >= PREFIX_MIN and term.isalpha()


def match(term: str, text: str, toks: frozenset[str]) -> int:
    """EXACT when ``term`` is one of the text's tokens, PREFIX when it starts one of its words
    (plain words only), else NONE. ``text`` is casefolded, ``toks`` its tokens."""
    if term in toks:
        return EXACT
    if prefix_ok(term) and term in text and _starts_word(term).search(text):
        return PREFIX
    return NONE


@lru_cache(maxsize=1024)
def _whole(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)")


def has_phrase(phrase: str, text: str) -> bool:
    """Whether the (casefolded) text holds the query as typed, on token boundaries."""
    return bool(phrase) and phrase in text and _whole(phrase).search(text) is not None
