"""The question generator (paper 6.2): eight questions a day, answers from the oracle only.

Per evaluated day:

==================  ==========================================================  ===========
category            question                                                    answer kind
==================  ==========================================================  ===========
dominant_app        which application had the most active time                  app
dominant_minutes    how many active minutes in that application                 number
app_count           how many distinct applications                              number
pairwise            which of two applications had more active time             app
domain_visited      was <a visited domain> visited                              yes
start_time          when did activity start (local time)                        time
absent_domain       was <a domain not visited that day> visited                 no
absent_app          was <an application not used that day> used                 no
==================  ==========================================================  ===========

The last two are the absent-fact probes (two a day, 16 over eight days). Every choice below is
a fixed rule over oracle values, with ties broken by name, so the same corpus always yields the
same questions.

Day selection (``select_days``): the seven most recent active days (consecutive among active
days: none skipped; the note says when inactive calendar days lie between them), plus the
nearest earlier active day whose raw rows JSON overflows a 200k-token window; when no earlier
day overflows, the nearest earlier active day is taken instead and the selection says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from af_pipeline.interfaces.qa.oracle import OracleDay

CONTEXT_WINDOW_TOKENS = 200_000
RECENT_DAYS = 7
# The pairwise question compares two apps whose oracle minutes differ clearly: the second one
# has at most this fraction of the first one's minutes, so the answer is a fact, not rounding.
PAIR_MARGIN = 0.8
# A visited-domain question asks about a domain the user spent at least this long on.
MIN_DOMAIN_MINUTES = 1.0
TOP_DOMAINS = 5

# Probes for absent facts: popular apps and sites the question names only when the day's oracle
# shows no trace of them.
ABSENT_APPS: tuple[str, ...] = (
    "Adobe Photoshop", "Blender", "Final Cut Pro", "AutoCAD", "Steam", "GarageBand",
    "DaVinci Resolve", "Tableau", "Logic Pro", "Unity Hub", "Minecraft", "Audacity",
)
ABSENT_DOMAINS: tuple[str, ...] = (
    "netflix.com", "twitch.tv", "espn.com", "booking.com", "pinterest.com", "tiktok.com",
    "ebay.com", "imdb.com", "airbnb.com", "etsy.com", "weather.com", "duolingo.com",
)

CATEGORIES: tuple[str, ...] = (
    "dominant_app", "dominant_minutes", "app_count", "pairwise",
    "domain_visited", "start_time", "absent_domain", "absent_app",
)
ABSENT_CATEGORIES = ("absent_domain", "absent_app")


@dataclass(frozen=True)
class Question:
    id: str  # <day>/<category>
    day: str
    category: str
    kind: str  # app | number | time | yesno
    text: str
    expected: str | float  # app name, number, "HH:MM", "yes" / "no"
    subject: str | None = None  # the app or domain the question names
    options: tuple[str, ...] = ()  # the two apps of a pairwise question

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["options"] = list(self.options)
        return d


@dataclass
class DaySelection:
    days: list[str]  # chronological
    recent: list[str]
    overflow_day: str | None
    overflow_tokens: int | None
    note: str
    raw_tokens: dict[str, int] = field(default_factory=dict)


def select_days(
    active_days: Sequence[str],
    raw_tokens: Callable[[str], int],
    window: int = CONTEXT_WINDOW_TOKENS,
    recent: int = RECENT_DAYS,
) -> DaySelection:
    """Paper 6.2's rule; raw_tokens(day) counts the day's raw rows JSON (called lazily)."""
    active = sorted(set(active_days))
    # "consecutive active days": the latest active days with no active day skipped between them
    run = active[-recent:]
    span = (date.fromisoformat(run[-1]) - date.fromisoformat(run[0])).days + 1 if run else 0
    earlier = [d for d in active if d < run[0]] if run else []
    counted: dict[str, int] = {}
    overflow = None
    for d in reversed(earlier):
        counted[d] = raw_tokens(d)
        if counted[d] > window:
            overflow = d
            break
    notes = []
    if len(run) < recent:
        notes.append(f"only {len(run)} active day(s); evaluating all of them")
    elif span > recent:
        notes.append(f"the {recent} most recent active days span {span} calendar days (inactive days between)")
    else:
        notes.append(f"the {recent} most recent active days are consecutive calendar days")
    if overflow is not None:
        extra = overflow
        notes.append(f"{overflow} overflows a {window:,}-token window ({counted[overflow]:,} raw tokens)")
    elif earlier:
        extra = earlier[-1]
        notes.append(
            f"no earlier day's raw rows overflow a {window:,}-token window; took the nearest earlier "
            f"active day {extra} ({counted[extra]:,} raw tokens)"
        )
    else:
        extra = None
        notes.append("no active day before the recent run; evaluating the recent days only")
    days = sorted(run + ([extra] if extra else []))
    return DaySelection(
        days=days,
        recent=run,
        overflow_day=overflow,
        overflow_tokens=counted.get(overflow) if overflow else None,
        note="; ".join(notes),
        raw_tokens=counted,
    )


def _norm(name: str) -> str:
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def _mentions(used: Sequence[str], probe: str) -> bool:
    p = _norm(probe)
    return any(p in _norm(u) or (_norm(u) and _norm(u) in p) for u in used)


def _rotate(items: Sequence[str], day: str) -> list[str]:
    k = date.fromisoformat(day).toordinal() % len(items)
    return list(items[k:]) + list(items[:k])


def day_questions(o: OracleDay, tz: str, corpus_domains: frozenset[str] = frozenset()) -> list[Question]:
    """The eight questions of one active day (fewer when the day lacks what a question needs)."""
    day = o.day
    ranked = o.ranked_apps()
    if not ranked:
        return []
    qs: list[Question] = []

    def add(category: str, kind: str, text: str, expected: str | float, **kw: Any) -> None:
        qs.append(Question(f"{day}/{category}", day, category, kind, text, expected, **kw))

    top, top_min = ranked[0]
    add("dominant_app", "app", f"On {day}, which application did the user spend the most active time in?", top)
    add(
        "dominant_minutes", "number",
        f"On {day}, how many active minutes did the user spend in {top}?",
        round(top_min, 1), subject=top,
    )
    add("app_count", "number", f"On {day}, how many distinct applications did the user use?", float(len(ranked)))
    pair = _pair(ranked)
    if pair:
        a, b = pair
        first, second = sorted((a, b))  # the question never gives the answer away by its order
        add(
            "pairwise", "app",
            f"On {day}, which had more active time: {first} or {second}?",
            a, options=(first, second),
        )
    domains = o.domain_minutes()
    candidates = sorted(
        ((d, m) for d, m in domains.items() if m >= MIN_DOMAIN_MINUTES), key=lambda kv: (-kv[1], kv[0])
    )[:TOP_DOMAINS]
    if candidates:
        pick = candidates[date.fromisoformat(day).toordinal() % len(candidates)][0]
        add("domain_visited", "yesno", f"On {day}, did the user visit {pick}?", "yes", subject=pick)
    started = o.first_local(tz)
    if started:
        add("start_time", "time", f"On {day}, at what local time did the user's activity start?", started)
    visited = set(domains)
    probes = [d for d in _rotate(ABSENT_DOMAINS, day) if d not in visited]
    # prefer a site never seen in the whole corpus, so the probe is absent however it is read
    probes.sort(key=lambda d: d in corpus_domains)
    if probes:
        add("absent_domain", "yesno", f"On {day}, did the user visit {probes[0]}?", "no", subject=probes[0])
    used = [a for a, _ in ranked]
    absent = [a for a in _rotate(ABSENT_APPS, day) if not _mentions(used, a)]
    if absent:
        add("absent_app", "yesno", f"On {day}, did the user open {absent[0]}?", "no", subject=absent[0])
    return qs


def _pair(ranked: list[tuple[str, float]]) -> tuple[str, str] | None:
    """(more, less): the second-ranked app against the next one it clearly beats."""
    if len(ranked) < 2:
        return None
    if len(ranked) == 2:
        return (ranked[0][0], ranked[1][0]) if ranked[1][1] <= PAIR_MARGIN * ranked[0][1] else None
    a, a_min = ranked[1]
    for b, b_min in ranked[2:]:
        if b_min <= PAIR_MARGIN * a_min:
            return a, b
    top, top_min = ranked[0]
    for b, b_min in ranked[1:]:
        if b_min <= PAIR_MARGIN * top_min:
            return top, b
    return None


def generate(days: Sequence[OracleDay], tz: str) -> list[Question]:
    corpus = frozenset(d for o in days for d in o.domain_minutes())
    out: list[Question] = []
    for o in sorted(days, key=lambda o: o.day):
        out.extend(day_questions(o, tz, corpus))
    return out
