"""Routines: frequent contiguous action n-grams, recurrence h, the temporal holdout (paper 7.1, 7.4).

A routine is a contiguous sequence of k >= 3 actions inside one session (no fixed upper length:
as long as the work that repeats) that occurs at least 3 times, counted as NON-OVERLAPPING
occurrences (greedy from the left, which gives the largest such count), and that names at least
2 distinct targets. Routines are reported maximal, longest first: a routine is dropped when more
than half of every one of its occurrences, by position in the action stream, lies inside
occurrences of routines already kept, and a routine whose own occurrences overlap (the same case
done twice in a row), or whose steps are a stretch of a cycle done back to back, gives way to its
unit. Rotations of one cycle (the same cyclic task started at different steps) are one routine
(docs/routines.md).

The miner is level-wise extension over an integer-encoded stream (see docs/routines.md):
level k holds the start positions of every k-gram that occurs at least 3 times, grouped by
gram; level k+1 is obtained by partitioning each group on the symbol that follows, and groups
that fall under 3 are dropped for good (no extension of an infrequent gram can be frequent).
Each level is a few numpy sorts over the surviving positions, so the work is proportional to the
number of (position, length) pairs that are actually frequent, not to all n-grams.

Entry points for the Dagster layer (plain values in, dataclasses out):
``mine_days(days) -> MiningResult``, ``recurrence(result) -> Recurrence``,
``holdout(days, train_fraction) -> Holdout``, ``workflow_patterns(days, tz) -> WorkflowPatterns``;
each result has ``to_dict()``.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from af_pipeline.compiler.actions import Action
from capture.timeutil import to_datetime

MIN_K = 3
MAX_K: int | None = None  # no fixed cap: a routine is as long as the work that repeats
MIN_COUNT = 3
MIN_TARGETS = 2
PAPER_TRAIN_FRACTION = 40 / 51  # paper 7.4: fit on the first 40 of 51 active days

_SEP = -1  # between sessions: no gram may contain it


def _ratio(num: int, den: int) -> float:
    return round(num / den, 4) if den else 0.0


# ---------------------------------------------------------------------------------------------
# Encoding


@dataclass
class Corpus:
    """Actions of many days as one integer sequence, sessions separated by _SEP."""

    actions: list[Action | None]  # aligned with seq; None at separators
    seq: np.ndarray  # int64 symbol ids, _SEP between sessions
    vocab: list[str]  # id -> symbol
    target_of: np.ndarray  # symbol id -> named-target id, or -1
    days: list[str]  # distinct days, in order
    day_of: np.ndarray  # per position: index into days, -1 at separators
    apps: list[str] = field(default_factory=list)  # id -> app name (sorted)
    app_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # -1: none
    templates: list[str] = field(default_factory=list)  # id -> URL template (sorted)
    template_of: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def n_steps(self) -> int:
        return int(np.count_nonzero(self.seq >= 0))


def encode(days: Sequence[Sequence[Action]], vocab: Sequence[str] | None = None) -> Corpus:
    """Encode actions (one list per day, in day order). With ``vocab`` given, symbols outside it
    get fresh ids that no known routine contains (used to match a fitted table on new days)."""
    flat: list[Action] = [a for day in days for a in day]
    if vocab is None:
        vocab_list = sorted({a.symbol for a in flat})
    else:
        vocab_list = list(vocab)
        known = set(vocab_list)
        vocab_list.extend(sorted({a.symbol for a in flat if a.symbol not in known}))
    index = {s: i for i, s in enumerate(vocab_list)}
    day_list = sorted({a.day for a in flat})
    day_index = {d: i for i, d in enumerate(day_list)}
    n = len(flat)
    # Session cuts (a new day or a new session number) get a separator before them.
    cut = np.zeros(n, dtype=bool)
    if n > 1:
        cut[1:] = np.fromiter(
            (b.session != a.session or b.day != a.day for a, b in zip(flat, flat[1:], strict=False)),
            dtype=bool,
            count=n - 1,
        )
    where = np.arange(n, dtype=np.int64) + np.cumsum(cut)  # position of each action in seq
    size = n + int(cut.sum())

    def spread(values: list[int]) -> np.ndarray:
        out = np.full(size, -1, dtype=np.int64)
        if n:
            out[where] = np.asarray(values, dtype=np.int64)
        return out

    seq = spread([index[a.symbol] for a in flat])
    day_of = spread([day_index[a.day] for a in flat])
    aligned: list[Action | None] = [None] * size
    for pos, a in zip(where.tolist(), flat, strict=True):
        aligned[pos] = a
    # A symbol fixes its op and target, so its first action says which target it names.
    first_of = {a.symbol: a for a in reversed(flat)}
    target_names = {
        index[sym]: f"{a.op if a.op in ('app', 'nav') else 'el'}:{a.target}"
        for sym, a in first_of.items()
        if a.named and a.target is not None
    }
    tnames = sorted(set(target_names.values()))
    tindex = {t: i for i, t in enumerate(tnames)}
    target_of = np.full(len(vocab_list), -1, dtype=np.int64)
    for sid, t in target_names.items():
        target_of[sid] = tindex[t]
    apps = sorted({a.app for a in flat if a.app is not None})
    templates = sorted({a.url_template for a in flat if a.url_template is not None})
    app_index = {x: i for i, x in enumerate(apps)}
    tmpl_index = {x: i for i, x in enumerate(templates)}
    app_of = spread([-1 if a.app is None else app_index[a.app] for a in flat])
    tmpl_of = spread([-1 if a.url_template is None else tmpl_index[a.url_template] for a in flat])
    return Corpus(
        actions=aligned,
        seq=seq,
        vocab=vocab_list,
        target_of=target_of,
        days=day_list,
        day_of=day_of,
        apps=apps,
        app_of=app_of,
        templates=templates,
        template_of=tmpl_of,
    )


# ---------------------------------------------------------------------------------------------
# Mining


@dataclass
class Level:
    """Every qualifying gram of one length k: positions grouped, ascending inside each group."""

    k: int
    positions: np.ndarray  # concatenated start positions, group after group
    starts: np.ndarray  # index into positions where each group begins
    sizes: np.ndarray  # raw occurrences per group
    counts: np.ndarray  # non-overlapping occurrences per group

    def group(self, g: int) -> np.ndarray:
        s = int(self.starts[g])
        return self.positions[s : s + int(self.sizes[g])]

    def subset(self, keep: np.ndarray) -> Level:
        sizes = self.sizes[keep]
        mask = np.repeat(keep, self.sizes)
        return Level(
            k=self.k,
            positions=self.positions[mask],
            starts=np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64) if len(sizes) else sizes,
            sizes=sizes,
            counts=self.counts[keep],
        )

    def __len__(self) -> int:
        return len(self.sizes)


@dataclass(frozen=True)
class Candidate:
    """One qualifying gram: its length and all its start positions (ascending).

    A cyclic routine (rotations of one cycle merged, see :func:`merge_rotations`) also has
    ``shifts``: per position, the step of the routine that occurrence started at (0 = its first
    step), and ``anchor``, a position whose occurrence starts at step 0."""

    k: int
    positions: np.ndarray
    count: int
    rotations: tuple[np.ndarray, ...] = ()  # the positions of each qualifying rotation of the gram
    shifts: np.ndarray | None = None
    anchor: int | None = None


def _non_overlapping(positions: np.ndarray, k: int) -> list[int]:
    """Greedy leftmost choice: the maximum set of occurrences that do not share a step."""
    chosen: list[int] = []
    nxt = -1
    for p in positions.tolist():
        if p >= nxt:
            chosen.append(p)
            nxt = p + k
    return chosen


def _distinct_per_row(matrix: np.ndarray) -> np.ndarray:
    """Number of distinct non-negative values in each row."""
    if matrix.size == 0:
        return np.zeros(matrix.shape[0], dtype=np.int64)
    srt = np.sort(matrix, axis=1)
    new = np.ones_like(srt, dtype=bool)
    new[:, 1:] = srt[:, 1:] != srt[:, :-1]
    return np.count_nonzero(new & (srt >= 0), axis=1)


def _cover(end: np.ndarray, positions: np.ndarray, k: int) -> None:
    np.maximum.at(end, positions, positions + k)


def _reach_mask(end: np.ndarray, n: int) -> np.ndarray:
    if n == 0:
        return np.zeros(0, dtype=bool)
    return np.maximum.accumulate(end[:n]) > np.arange(n)


def frequent_levels(
    corpus: Corpus,
    min_k: int = MIN_K,
    max_k: int | None = MAX_K,
    min_count: int = MIN_COUNT,
    min_targets: int = MIN_TARGETS,
) -> tuple[list[Level], int, np.ndarray, np.ndarray]:
    """Grams with min_k <= k (<= max_k, when given) and >= min_count non-overlapping occurrences.

    Without max_k the levels go on while any gram still occurs min_count times: the longest
    routine is as long as the longest work that repeats.

    Returns the levels of grams naming >= min_targets distinct targets (the routine candidates),
    the number of recurring grams of any kind, and two step masks: inside any recurring gram
    (for h_raw) and inside a routine candidate (for h_specific).
    """
    seq = corpus.seq
    n = len(seq)
    vocab_n = max(len(corpus.vocab), 1)
    raw_end = np.zeros(n + 1, dtype=np.int64)
    spec_end = np.zeros(n + 1, dtype=np.int64)
    levels: list[Level] = []
    n_frequent = 0
    pos = np.flatnonzero(seq >= 0).astype(np.int64)
    keys = seq[pos]
    order = np.argsort(keys, kind="stable")
    pos, keys = pos[order], keys[order]
    k = 0
    while max_k is None or k < max_k:
        k += 1
        if k > 1:
            # Extend every surviving occurrence by the symbol that follows it; a separator or
            # the end of the stream ends the gram.
            nxt_idx = pos + (k - 1)
            ok = nxt_idx < n
            pos, keys, nxt_idx = pos[ok], keys[ok], nxt_idx[ok]
            nxt = seq[nxt_idx]
            ok = nxt >= 0
            pos, keys, nxt = pos[ok], keys[ok], nxt[ok]
            # Entries are ordered by (group, position); a stable sort on (group, next symbol)
            # keeps positions ascending inside every new group.
            new_keys = keys * vocab_n + nxt
            order = np.argsort(new_keys, kind="stable")
            pos, keys = pos[order], new_keys[order]
        if len(pos) == 0:
            break
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        sizes = np.diff(np.r_[starts, len(keys)])
        # Apriori on raw counts: a gram seen fewer than min_count times has no frequent extension.
        keep = np.repeat(sizes >= min_count, sizes)
        pos, keys = pos[keep], keys[keep]
        if len(pos) == 0:
            break
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        sizes = np.diff(np.r_[starts, len(keys)])
        keys = np.repeat(np.arange(len(starts), dtype=np.int64), sizes)  # dense group ids
        if k < min_k:
            continue
        # Non-overlapping counts: equal to the size unless two occurrences are closer than k.
        close = np.r_[False, (keys[1:] == keys[:-1]) & (np.diff(pos) < k)]
        overlapping = np.logical_or.reduceat(close, starts)
        counts = sizes.copy()
        for g in np.flatnonzero(overlapping).tolist():
            s = int(starts[g])
            counts[g] = len(_non_overlapping(pos[s : s + int(sizes[g])], k))
        level = Level(k=k, positions=pos.copy(), starts=starts, sizes=sizes, counts=counts)
        frequent = counts >= min_count
        if not frequent.all():
            level = level.subset(frequent)
        if len(level) == 0:
            continue
        n_frequent += len(level)
        _cover(raw_end, level.positions, k)
        firsts = level.positions[level.starts]
        targets = corpus.target_of[seq[firsts[:, None] + np.arange(k)]]
        specific = _distinct_per_row(targets) >= min_targets
        level = level.subset(specific)
        if len(level):
            _cover(spec_end, level.positions, k)
            levels.append(level)
    return levels, n_frequent, _reach_mask(raw_end, n), _reach_mask(spec_end, n)


def maximal(levels: Sequence[Level], n: int, seq: np.ndarray | None = None) -> list[Candidate]:
    """Keep a gram unless more than half the steps of each of its occurrences already lie inside
    occurrences of grams kept before it (longer, or as long and ranked higher), or it is a
    shorter routine chained to itself (see :func:`_repeats_a_unit`), or (with ``seq``, the
    encoded stream) its own steps are a stretch of a cycle done back to back (see :func:`_periodic`).

    This drops what lies inside a longer routine, and the family of one sequence shifted by a
    step or two (in a log of back-to-back cases, "b c d .. a" beside "a b c d .."), while a gram
    with an occurrence of its own elsewhere stays, with all its occurrences.

    Longest first. Kept occurrences are folded into a step mask and its prefix sum, so the
    covered share of [p, p+k) is one subtraction. Inside a level (equal lengths, ranked by count,
    then first position) only groups whose every occurrence could be covered by the level's
    other occurrences are decided one by one; with equal lengths the nearest start on each side
    bounds that cover exactly.
    """
    start_end = np.zeros(n + 1, dtype=np.int64)
    covered = np.zeros(n + 1, dtype=np.int64)  # prefix sum of the kept-step mask
    mask = np.zeros(n, dtype=bool)
    kept: list[Candidate] = []
    for level in sorted(levels, key=lambda lv: -lv.k):
        k = level.k
        pos = level.positions
        base = covered[pos + k] - covered[pos]
        keep = ~np.logical_and.reduceat(2 * base > k, level.starts)
        if k > MIN_K:
            keep &= ~_repeats_a_unit(level)
            if seq is not None:
                keep &= ~_periodic(level, seq)
        if not keep.any():
            continue
        chosen = level.subset(keep)
        chosen = chosen.subset(_decide_level(chosen, mask, covered))
        if not len(chosen):
            continue
        _cover(start_end, chosen.positions, k)
        rotations = _rotations(level, chosen, seq) if seq is not None else [() for _ in range(len(chosen))]
        for rot in rotations:
            for r in rot:  # one cycle started at other steps: inside the routine too
                _cover(start_end, r, k)
        mask = _reach_mask(start_end, n)
        covered = np.r_[0, np.cumsum(mask)].astype(np.int64)
        for g in range(len(chosen)):
            kept.append(
                Candidate(k=k, positions=chosen.group(g).copy(), count=int(chosen.counts[g]), rotations=rotations[g])
            )
    return kept


def _rotations(level: Level, chosen: Level, seq: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Per group of ``chosen`` (kept groups of ``level``): the positions of each other group of
    ``level`` whose gram is a rotation of its gram, in the order of their first positions."""
    k = level.k
    firsts = level.positions[level.starts]
    table = {tuple(row): g for g, row in enumerate(seq[firsts[:, None] + np.arange(k)].tolist())}
    out: list[tuple[np.ndarray, ...]] = []
    for row in seq[chosen.positions[chosen.starts][:, None] + np.arange(k)].tolist():
        gram = tuple(row)
        found = {table[r] for i in range(1, k) if (r := gram[i:] + gram[:i]) != gram and r in table}
        out.append(tuple(level.group(g) for g in sorted(found, key=lambda g: int(firsts[g]))))
    return out


def _repeats_a_unit(level: Level) -> np.ndarray:
    """Per group: whether two of its occurrences overlap, the second starting MIN_K or more steps
    after the first. Such a gram has period d: it is a unit of d steps done again straight after
    (back-to-back cases make "case, case" and "case, start of the next" recur). The unit is the
    routine and counts every repetition, so the chained gram is not reported."""
    pos = level.positions
    chain = np.zeros(len(pos), dtype=bool)
    if len(pos) > 1:
        d = np.diff(pos)
        chain[1:] = (d >= MIN_K) & (d < level.k)
        chain[level.starts] = False  # the first of a group has no predecessor in it
    return np.logical_or.reduceat(chain, level.starts)


def _periodic(level: Level, seq: np.ndarray) -> np.ndarray:
    """Per group: whether its gram is a stretch of a cycle of d >= MIN_K steps done back to back
    (gram[i] == gram[i + d] for every i, with d < k): "c a b c a" is the cycle "a b c" with a
    step on either side. Such a gram can recur without two of its occurrences overlapping (a
    cycle done three times a day makes "c a b c a" once a day); the cycle is the routine, and
    counts every repetition."""
    k = level.k
    grams = seq[level.positions[level.starts][:, None] + np.arange(k)]
    out = np.zeros(len(level), dtype=bool)
    for d in range(MIN_K, k):
        out |= (grams[:, : k - d] == grams[:, d:]).all(axis=1)
    return out


def _decide_level(level: Level, mask: np.ndarray, covered: np.ndarray) -> np.ndarray:
    """Which groups of one level (all of length k) to keep, given the steps kept so far."""
    k = level.k
    pos = level.positions
    g_of = np.repeat(np.arange(len(level), dtype=np.int64), level.sizes)
    order = np.argsort(pos, kind="stable")
    spos, sgid = pos[order], g_of[order]
    # The most the level's other occurrences could add to each one: equal lengths, so the
    # nearest start on the left covers [p, q + k) and the nearest on the right [q, p + k).
    left = np.zeros(len(spos), dtype=np.int64)
    right = np.zeros(len(spos), dtype=np.int64)
    if len(spos) > 1:
        gap = np.diff(spos)
        left[1:] = np.maximum(k - gap, 0)
        right[:-1] = np.maximum(k - gap, 0)
    bound = np.empty(len(spos), dtype=np.int64)
    bound[order] = np.minimum(covered[spos + k] - covered[spos] + left + right, k)
    contested = np.logical_and.reduceat(2 * bound > k, level.starts)
    keep = np.ones(len(level), dtype=bool)
    if not contested.any():
        return keep
    first = pos[level.starts]
    rank = np.empty(len(level), dtype=np.int64)
    rank[np.lexsort((first, -level.counts))] = np.arange(len(level))
    plist, glist = spos.tolist(), sgid.tolist()
    for g in sorted(np.flatnonzero(contested).tolist(), key=lambda x: int(rank[x])):
        r = int(rank[g])

        def earlier(j: int, g: int = g, r: int = r) -> bool:
            return glist[j] != g and bool(keep[glist[j]]) and int(rank[glist[j]]) < r

        drop = True
        for p in level.group(g).tolist():
            i = bisect_left(plist, p)
            step = mask[p : p + k].copy()
            j = i - 1
            while j >= 0 and plist[j] > p - k:
                if earlier(j):
                    step[: plist[j] + k - p] = True
                    break
                j -= 1
            j = i
            while j < len(plist) and plist[j] < p + k:
                if plist[j] > p and earlier(j):
                    step[plist[j] - p :] = True
                    break
                j += 1
            if 2 * int(step.sum()) <= k:
                drop = False
                break
        if drop:
            keep[g] = False
    return keep


@dataclass(frozen=True)
class Occurrence:
    day: str
    stream: str
    session: int
    start_us: int
    end_us: int
    index: int  # position of the first step in the encoded stream
    refs: tuple[str, ...]  # input rows of every step, in time order
    start_step: int = 0  # a cyclic routine's occurrence may start at a later step (0 = the first)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "day": self.day,
            "stream": self.stream,
            "session": self.session,
            "start_us": self.start_us,
            "end_us": self.end_us,
            "refs": list(self.refs),
        }
        if self.start_step:
            out["starts_at_step"] = self.start_step + 1  # 1-based, as plan steps are numbered
        return out


@dataclass(frozen=True)
class Step:
    """One routine step: what the symbol says, plus the app / URL template seen most often."""

    symbol: str
    op: str
    target: str | None
    role: str | None
    named: bool
    app: str | None
    url_template: str | None
    app_agreement: float  # share of occurrences showing that app (guards are only as good as this)

    def to_dict(self) -> dict[str, Any]:
        return {
            "symbol": self.symbol,
            "op": self.op,
            "target": self.target,
            "role": self.role,
            "named": self.named,
            "app": self.app,
            "url_template": self.url_template,
            "app_agreement": self.app_agreement,
        }


class Routine:
    """A maximal routine. Counts, symbols and targets are computed when mining; the per-step
    details and the occurrence evidence are built on first use (a table of thousands of
    routines is mostly read for its top rows)."""

    __slots__ = ("count", "raw_count", "k", "_corpus", "_positions", "_shifts", "_anchor", "_cache")

    def __init__(self, corpus: Corpus, c: Candidate):
        self.k: int = c.k
        self.count: int = c.count  # non-overlapping occurrences
        self.raw_count: int = len(c.positions)  # every start position, overlapping ones included
        self._corpus = corpus
        self._positions = c.positions
        self._shifts = c.shifts  # cyclic routines: the step each occurrence started at
        self._anchor = int(c.positions[0]) if c.anchor is None else c.anchor  # starts at step 0
        self._cache: dict[str, Any] = {}

    @property
    def symbols(self) -> tuple[str, ...]:
        if "symbols" not in self._cache:
            first = self._anchor
            vocab = self._corpus.vocab
            self._cache["symbols"] = tuple(vocab[s] for s in self._corpus.seq[first : first + self.k].tolist())
        return self._cache["symbols"]  # type: ignore[no-any-return]

    @property
    def id(self) -> str:
        """Stable across runs: a hash of the symbols."""
        if "id" not in self._cache:
            self._cache["id"] = routine_id(self.symbols)
        return self._cache["id"]  # type: ignore[no-any-return]

    @property
    def targets(self) -> tuple[str, ...]:
        """The distinct named targets (elements; apps and URL templates prefixed app:/nav:)."""
        if "targets" not in self._cache:
            first = self._anchor
            acts = self._corpus.actions[first : first + self.k]
            self._cache["targets"] = tuple(
                sorted({t for a in acts if a is not None and (t := _action_target(a)) is not None})
            )
        return self._cache["targets"]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Routine({self.id}, k={self.k}, count={self.count}, {self.symbols!r})"

    @property
    def positions(self) -> np.ndarray:
        """Every start position in the encoded stream (overlapping ones included)."""
        return self._positions

    @property
    def cyclic(self) -> bool:
        """Whether occurrences were seen starting at different steps (rotations of one cycle)."""
        return self._shifts is not None

    @property
    def occurrences(self) -> tuple[Occurrence, ...]:
        """The non-overlapping occurrences, in time order, with their evidence."""
        if "occ" not in self._cache:
            shift_of = {} if self._shifts is None else dict(zip(self._positions.tolist(), self._shifts.tolist(), strict=True))
            self._cache["occ"] = tuple(
                _occurrence(self._corpus, p, self.k, shift_of.get(p, 0))
                for p in _non_overlapping(self._positions, self.k)
            )
        return self._cache["occ"]  # type: ignore[no-any-return]

    @property
    def steps(self) -> tuple[Step, ...]:
        if "steps" not in self._cache:
            self._cache["steps"] = _steps(self._corpus, self._positions, self.k, self._shifts, self._anchor)
        return self._cache["steps"]  # type: ignore[no-any-return]

    @property
    def days(self) -> tuple[str, ...]:
        return tuple(sorted({o.day for o in self.occurrences}))

    def to_dict(self, evidence: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "k": self.k,
            "count": self.count,
            "raw_count": self.raw_count,
            "symbols": list(self.symbols),
            "targets": list(self.targets),
            "days": list(self.days),
            "steps": [s.to_dict() for s in self.steps],
        }
        if evidence:
            out["occurrences"] = [o.to_dict() for o in self.occurrences]
        return out


def routine_id(symbols: Sequence[str]) -> str:
    """A stable id from the routine's symbols (the same routine keeps its id across runs)."""
    return "r-" + hashlib.sha256("\x1f".join(symbols).encode("utf-8")).hexdigest()[:12]


def _occurrence(corpus: Corpus, p: int, k: int, start_step: int = 0) -> Occurrence:
    acts = [a for a in corpus.actions[p : p + k] if a is not None]
    return Occurrence(
        day=acts[0].day,
        stream=acts[0].stream,
        session=acts[0].session,
        start_us=acts[0].ts_us,
        end_us=acts[-1].end_us,
        index=p,
        refs=tuple(r for a in acts for r in a.refs),
        start_step=start_step,
    )


def _mode(column: np.ndarray, names: list[str]) -> tuple[str | None, float]:
    """The most frequent value of a column of ids (-1 = none), ties to the smallest name, and
    its share of all rows."""
    present = column[column >= 0]
    if len(present) == 0:
        return None, 0.0
    ids, counts = np.unique(present, return_counts=True)  # ids ascending = names ascending
    best = int(np.argmax(counts))
    return names[int(ids[best])], round(int(counts[best]) / len(column), 4)


def _steps(
    corpus: Corpus, positions: np.ndarray, k: int, shifts: np.ndarray | None = None, anchor: int | None = None
) -> tuple[Step, ...]:
    # Step i of an occurrence that started at step s lies (i - s) mod k steps after its start.
    offsets = np.arange(k)[None, :] if shifts is None else (np.arange(k)[None, :] - shifts[:, None]) % k
    grid = positions[:, None] + offsets
    apps = corpus.app_of[grid]
    tmpls = corpus.template_of[grid]
    first = int(positions[0]) if anchor is None else anchor
    steps: list[Step] = []
    for i in range(k):
        a0 = corpus.actions[first + i]
        assert a0 is not None  # grams never contain a separator
        app, agree = _mode(apps[:, i], corpus.apps)
        tmpl, _ = _mode(tmpls[:, i], corpus.templates)
        steps.append(
            Step(
                symbol=a0.symbol,
                op=a0.op,
                target=a0.target,
                role=a0.role,
                named=a0.named,
                app=app,
                url_template=tmpl,
                app_agreement=agree,
            )
        )
    return tuple(steps)


def _action_target(a: Action) -> str | None:
    if not a.named or a.target is None:
        return None
    return a.target if a.op not in ("app", "nav") else f"{a.op}:{a.target}"


@dataclass
class MiningResult:
    corpus: Corpus
    routines: list[Routine]  # maximal, most frequent first
    levels: list[Level]  # every gram that qualifies as a routine, before maximality
    n_frequent: int  # grams recurring >= 3 times, any targets
    raw_mask: np.ndarray  # per position: inside any recurring gram
    specific_mask: np.ndarray  # per position: inside a routine (>= 2 named targets)
    params: dict[str, int | None] = field(default_factory=dict)

    def signatures(self) -> list[tuple[str, ...]]:
        """Every qualifying routine signature (the fitted table the holdout matches)."""
        out = set()
        vocab = self.corpus.vocab
        for lv in self.levels:
            firsts = lv.positions[lv.starts]
            grams = self.corpus.seq[firsts[:, None] + np.arange(lv.k)]
            for row in grams.tolist():
                out.add(tuple(vocab[s] for s in row))
        return sorted(out)

    @property
    def n_signatures(self) -> int:
        return sum(len(lv) for lv in self.levels)

    def to_dict(self, top: int | None = None, evidence: bool = True) -> dict[str, Any]:
        rs = self.routines if top is None else self.routines[:top]
        return {
            "params": dict(sorted(self.params.items())),
            "days": list(self.corpus.days),
            "steps": self.corpus.n_steps,
            "frequent_grams": self.n_frequent,
            "routine_signatures": self.n_signatures,
            "routines_total": len(self.routines),
            "routines": [r.to_dict(evidence=evidence) for r in rs],
        }


def mine(
    corpus: Corpus,
    min_k: int = MIN_K,
    max_k: int | None = MAX_K,
    min_count: int = MIN_COUNT,
    min_targets: int = MIN_TARGETS,
) -> MiningResult:
    """Mine routines from an encoded corpus (see the module docstring for the rules)."""
    levels, n_frequent, raw_mask, specific_mask = frequent_levels(
        corpus, min_k=min_k, max_k=max_k, min_count=min_count, min_targets=min_targets
    )
    # Rank by count, then length, then symbols; symbol ids are compared through their rank in
    # string order, so no symbol text is built for the thousands of routines nobody reads.
    rank = np.empty(len(corpus.vocab), dtype=np.int64)
    rank[sorted(range(len(corpus.vocab)), key=corpus.vocab.__getitem__)] = np.arange(len(corpus.vocab))
    ranked = corpus.seq.copy()
    ranked[ranked >= 0] = rank[ranked[ranked >= 0]]
    kept = merge_rotations(maximal(levels, len(corpus.seq), corpus.seq), ranked)

    def order(c: Candidate) -> tuple[int, int, list[int]]:
        p = int(c.positions[0]) if c.anchor is None else c.anchor
        return (-c.count, -c.k, ranked[p : p + c.k].tolist())

    routines = [Routine(corpus, c) for c in sorted(kept, key=order)]
    return MiningResult(
        corpus=corpus,
        routines=routines,
        levels=levels,
        n_frequent=n_frequent,
        raw_mask=raw_mask,
        specific_mask=specific_mask,
        params={"min_k": min_k, "max_k": max_k, "min_count": min_count, "min_targets": min_targets},
    )


def merge_rotations(kept: Sequence[Candidate], ranked: np.ndarray) -> list[Candidate]:
    """One routine per cycle: the same cyclic task started at different steps (a b c, b c a,
    c a b) is one routine, not one per starting step.

    A kept gram takes the occurrences of every qualifying gram of its length that is a rotation
    of it (``Candidate.rotations``, found by :func:`maximal`, kept there or not: the occurrences
    of one rotation overlap those of the others, so maximality keeps only some of them); kept
    grams that are rotations of each other become one routine. Its occurrences are counted
    non-overlapping, greedily from the left, as for any routine; its steps start where most of
    the counted occurrences start, ties broken by the symbols' order (``ranked``: the stream with
    symbol ids replaced by their rank in string order), so the choice is the same in every run;
    each occurrence records the step it started at. A gram with no qualifying rotation is
    returned unchanged, and the order of ``kept`` is kept."""
    done: set[tuple[int, int]] = set()
    out: list[Candidate] = []
    for c in kept:
        if not c.rotations:
            out.append(c)
            continue
        members = [c.positions, *c.rotations]
        cycle = (c.k, min(int(m[0]) for m in members))  # its length and first occurrence name it
        if cycle in done:
            continue  # a rotation of a routine already merged
        done.add(cycle)
        members.sort(key=lambda m: int(m[0]))
        grams = [tuple(ranked[int(m[0]) : int(m[0]) + c.k].tolist()) for m in members]
        out.append(_merge_cycle(c.k, members, grams))
    return out


def _merge_cycle(k: int, members: Sequence[np.ndarray], grams: Sequence[tuple[int, ...]]) -> Candidate:
    """One cyclic routine from the positions of each of its rotations (``grams``, one per member)."""
    positions = np.concatenate(members)
    member_of = np.repeat(np.arange(len(members)), [len(m) for m in members])
    order = np.argsort(positions, kind="stable")  # two grams of one length never start at one position
    positions, member_of = positions[order], member_of[order]
    chosen = _non_overlapping(positions, k)
    starts = Counter(member_of[np.searchsorted(positions, chosen)].tolist())
    # the canonical start: the rotation most occurrences began with, then the least symbols
    canon = min(range(len(members)), key=lambda m: (-starts.get(m, 0), grams[m]))
    c = grams[canon]
    shift = [next(s for s in range(k) if c[s:] + c[:s] == g) for g in grams]
    return Candidate(
        k=k,
        positions=positions,
        count=len(chosen),
        shifts=np.asarray(shift, dtype=np.int64)[member_of],
        anchor=int(members[canon][0]),
    )


def mine_days(days: Sequence[Sequence[Action]], **params: Any) -> MiningResult:
    """Mine the actions of several days (one list per day, in day order)."""
    return mine(encode(days), **params)


# ---------------------------------------------------------------------------------------------
# Recurrence h


@dataclass(frozen=True)
class DayH:
    day: str
    steps: int
    raw: int
    specific: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "steps": self.steps,
            "h_raw": _ratio(self.raw, self.steps),
            "h_specific": _ratio(self.specific, self.steps),
        }


@dataclass(frozen=True)
class Recurrence:
    steps: int
    raw: int
    specific: int
    per_day: tuple[DayH, ...]

    @property
    def h_raw(self) -> float:
        return _ratio(self.raw, self.steps)

    @property
    def h_specific(self) -> float:
        return _ratio(self.specific, self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "h_raw": self.h_raw,
            "h_specific": self.h_specific,
            "per_day": [d.to_dict() for d in self.per_day],
        }


def _per_day(corpus: Corpus, masks: Sequence[np.ndarray]) -> list[tuple[str, int, list[int]]]:
    """Per day: (day, steps, [steps inside each mask])."""
    valid = corpus.day_of >= 0
    nd = len(corpus.days)
    steps = np.bincount(corpus.day_of[valid], minlength=nd)
    inside = [np.bincount(corpus.day_of[valid & m], minlength=nd) for m in masks]
    return [(d, int(steps[i]), [int(c[i]) for c in inside]) for i, d in enumerate(corpus.days)]


def recurrence(result: MiningResult) -> Recurrence:
    """h_raw (steps inside any recurring gram) and h_specific (inside a routine), per day and overall."""
    rows = _per_day(result.corpus, [result.raw_mask, result.specific_mask])
    per_day = tuple(DayH(day=d, steps=n, raw=c[0], specific=c[1]) for d, n, c in rows)
    return Recurrence(
        steps=sum(d.steps for d in per_day),
        raw=sum(d.raw for d in per_day),
        specific=sum(d.specific for d in per_day),
        per_day=per_day,
    )


# ---------------------------------------------------------------------------------------------
# Temporal holdout


_B = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier for the polynomial window hash (mod 2**64)


def match_signatures(corpus: Corpus, signatures: Sequence[tuple[str, ...]]) -> np.ndarray:
    """Steps of ``corpus`` inside an occurrence of any signature (contiguous, within a session).

    Windows are hashed per length with a polynomial hash modulo 2**64 and every hash hit is
    checked symbol by symbol, so a collision can never produce a false match.
    """
    n = len(corpus.seq)
    covered_end = np.zeros(n + 1, dtype=np.int64)
    if n == 0 or not signatures:
        return np.zeros(n, dtype=bool)
    index = {s: i for i, s in enumerate(corpus.vocab)}
    by_len: dict[int, list[np.ndarray]] = {}
    for sig in signatures:
        ids = [index.get(s, -2) for s in sig]
        if -2 in ids:
            continue  # a symbol never seen in these days: the signature cannot occur
        by_len.setdefault(len(sig), []).append(np.asarray(ids, dtype=np.int64))
    # Separators become a value no signature holds; symbol ids are shifted off zero.
    vals = np.where(corpus.seq >= 0, corpus.seq + 1, 0).astype(np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for L in range(1, max(by_len, default=0) + 1):
            # h holds the hash of every window of length L starting at 0..n-L.
            h = h[: n - L + 1] * _B + vals[L - 1 :] if L > 1 else vals.copy()
            sigs = by_len.get(L)
            if not sigs or len(h) == 0:
                continue
            sig_arr = np.stack(sigs)
            sig_h = np.zeros(len(sigs), dtype=np.uint64)
            for col in range(L):
                sig_h = sig_h * _B + (sig_arr[:, col] + 1).astype(np.uint64)
            hits = np.flatnonzero(np.isin(h, sig_h))
            if len(hits) == 0:
                continue
            wanted = {tuple(row.tolist()) for row in sig_arr}
            for p in hits.tolist():
                if tuple(corpus.seq[p : p + L].tolist()) in wanted:
                    covered_end[p] = max(covered_end[p], p + L)
    return np.maximum.accumulate(covered_end[:n]) > np.arange(n)


@dataclass(frozen=True)
class Holdout:
    train_days: tuple[str, ...]
    test_days: tuple[str, ...]
    signatures: int  # qualifying routine signatures fitted on the training days
    routines: int  # of which maximal
    train_steps: int
    train_hits: int
    test_steps: int
    test_hits: int
    per_day: tuple[DayH, ...]  # test days: steps inside a known routine (as "specific")

    @property
    def in_sample(self) -> float:
        return _ratio(self.train_hits, self.train_steps)

    @property
    def out_of_sample(self) -> float:
        return _ratio(self.test_hits, self.test_steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "train_days": list(self.train_days),
            "test_days": list(self.test_days),
            "signatures": self.signatures,
            "routines": self.routines,
            "train_steps": self.train_steps,
            "test_steps": self.test_steps,
            "in_sample_h": self.in_sample,
            "out_of_sample_h": self.out_of_sample,
            "per_test_day": [
                {"day": d.day, "steps": d.steps, "hit_rate": _ratio(d.specific, d.steps)}
                for d in self.per_day
            ],
        }


def split_days(n_days: int, train_fraction: float = PAPER_TRAIN_FRACTION) -> int:
    """How many of n active days train: round(n * fraction), leaving at least one of each side."""
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train fraction {train_fraction} must be between 0 and 1 (exclusive)")
    if n_days < 2:
        return n_days
    n_train = int(n_days * train_fraction + 0.5)
    return min(max(n_train, 1), n_days - 1)


def holdout(
    days: Sequence[Sequence[Action]],
    train_fraction: float = PAPER_TRAIN_FRACTION,
    **params: int,
) -> Holdout:
    """Fit the routine table on the first active days, measure its hit rate on the rest.

    ``days`` are the active days (one action list each) in time order; days with no actions are
    skipped so the split is over active days, as in the paper (40 of 51).
    """
    active = [list(d) for d in days if d]
    n_train = split_days(len(active), train_fraction)
    train, test = active[:n_train], active[n_train:]
    fitted = mine_days(train, **params)
    sigs = fitted.signatures()
    test_corpus = encode(test, vocab=fitted.corpus.vocab)
    hits = match_signatures(test_corpus, sigs)
    rows = _per_day(test_corpus, [hits])
    per_day = tuple(DayH(day=d, steps=n, raw=0, specific=c[0]) for d, n, c in rows)
    return Holdout(
        train_days=tuple(fitted.corpus.days),
        test_days=tuple(test_corpus.days),
        signatures=fitted.n_signatures,
        routines=len(fitted.routines),
        train_steps=fitted.corpus.n_steps,
        train_hits=int(np.count_nonzero(fitted.specific_mask)),
        test_steps=test_corpus.n_steps,
        test_hits=int(np.count_nonzero(hits)),
        per_day=per_day,
    )


# ---------------------------------------------------------------------------------------------
# Workflow patterns


@dataclass(frozen=True)
class WorkflowPatterns:
    """What the user repeats, by kind. Every entry is a plain dict, most frequent first."""

    repeated_clicks: tuple[dict[str, Any], ...]
    url_loops: tuple[dict[str, Any], ...]
    action_sequences: tuple[dict[str, Any], ...]
    app_switch_habits: tuple[dict[str, Any], ...]
    daily_habits: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "repeated_clicks": list(self.repeated_clicks),
            "url_loops": list(self.url_loops),
            "action_sequences": list(self.action_sequences),
            "app_switch_habits": list(self.app_switch_habits),
            "daily_habits": list(self.daily_habits),
        }


def repeated_clicks(days: Sequence[Sequence[Action]], min_repeat: int = 3, top: int = 20) -> list[dict[str, Any]]:
    """Targets clicked several times in a row (collapsed repeats): retries, paging, toggling."""
    runs: dict[str, list[int]] = {}
    for day in days:
        for a in day:
            if a.op == "click" and a.named and a.repeat >= min_repeat:
                runs.setdefault(a.symbol, []).append(a.repeat)
    rows: list[dict[str, Any]] = [
        {"symbol": s, "runs": len(v), "clicks": sum(v), "longest": max(v)} for s, v in runs.items()
    ]
    rows.sort(key=lambda r: (-int(r["runs"]), -int(r["clicks"]), str(r["symbol"])))
    return rows[:top]


def url_loops(
    days: Sequence[Sequence[Action]], max_len: int = 4, min_count: int = MIN_COUNT, top: int = 20
) -> list[dict[str, Any]]:
    """Navigation cycles that return to where they started (mail -> calendar -> mail), counted
    over the per-session sequence of visited URL templates."""
    counts: Counter[tuple[str, ...]] = Counter()
    days_of: dict[tuple[str, ...], set[str]] = {}
    for day in days:
        for sess in _sessions(day):
            visits: list[str] = []
            for a in sess:
                if a.url_template and (not visits or visits[-1] != a.url_template):
                    visits.append(a.url_template)
            for i in range(len(visits)):
                for L in range(3, max_len + 2):
                    j = i + L
                    if j > len(visits):
                        break
                    cyc = tuple(visits[i:j])
                    if cyc[0] == cyc[-1] and len(set(cyc[:-1])) == L - 1:
                        counts[cyc] += 1
                        days_of.setdefault(cyc, set()).add(sess[0].day)
    rows: list[dict[str, Any]] = [
        {"templates": list(c), "count": n, "days": len(days_of[c])}
        for c, n in counts.items()
        if n >= min_count
    ]
    rows.sort(key=lambda r: (-int(r["count"]), list(r["templates"])))
    return rows[:top]


def _sessions(day: Sequence[Action]) -> list[list[Action]]:
    out: list[list[Action]] = []
    for a in day:
        if not out or out[-1][-1].session != a.session:
            out.append([])
        out[-1].append(a)
    return out


def app_switch_habits(days: Sequence[Sequence[Action]], min_count: int = MIN_COUNT, top: int = 20) -> list[dict[str, Any]]:
    """Which app the user goes to from which, with how often and on how many days."""
    counts: Counter[tuple[str, str]] = Counter()
    days_of: dict[tuple[str, str], set[str]] = {}
    for day in days:
        for sess in _sessions(day):
            prev: str | None = None
            for a in sess:
                if a.app is None:
                    continue
                if prev is not None and a.app != prev:
                    counts[(prev, a.app)] += 1
                    days_of.setdefault((prev, a.app), set()).add(a.day)
                prev = a.app
    rows: list[dict[str, Any]] = [
        {"from": f, "to": t, "count": n, "days": len(days_of[(f, t)])}
        for (f, t), n in counts.items()
        if n >= min_count
    ]
    rows.sort(key=lambda r: (-int(r["count"]), str(r["from"]), str(r["to"])))
    return rows[:top]


def daily_habits(
    days: Sequence[Sequence[Action]],
    tz: str,
    min_share: float = 0.5,
    max_spread_min: int = 60,
    top: int = 20,
) -> list[dict[str, Any]]:
    """Things done at about the same time of day: for each named action, the local time of its
    first occurrence on each active day; a habit when it happens on at least ``min_share`` of
    the active days (and at least 3) with an interquartile spread of at most ``max_spread_min``."""
    active = [d for d in days if d]
    if not active:
        return []
    first: dict[str, dict[str, int]] = {}
    for day in active:
        for a in day:
            if not a.named:
                continue
            per = first.setdefault(a.symbol, {})
            if a.day not in per:
                dt = to_datetime(a.ts_us, tz)
                per[a.day] = dt.hour * 60 + dt.minute
    need = max(MIN_COUNT, int(len(active) * min_share + 0.999999))
    rows: list[dict[str, Any]] = []
    for sym, per in first.items():
        if len(per) < need:
            continue
        mins = sorted(per.values())
        q1 = mins[(len(mins) - 1) // 4]
        q3 = mins[(3 * (len(mins) - 1) + 3) // 4]
        med = mins[(len(mins) - 1) // 2]
        if q3 - q1 > max_spread_min:
            continue
        rows.append(
            {
                "symbol": sym,
                "days": len(per),
                "active_days": len(active),
                "usual_time": f"{med // 60:02d}:{med % 60:02d}",
                "spread_min": q3 - q1,
            }
        )
    rows.sort(key=lambda r: (-int(r["days"]), int(r["spread_min"]), str(r["symbol"])))
    return rows[:top]


def workflow_patterns(
    days: Sequence[Sequence[Action]], tz: str, result: MiningResult | None = None, top: int = 20
) -> WorkflowPatterns:
    """All five pattern kinds; ``result`` (the mined routines) supplies the action sequences."""
    res = result if result is not None else mine_days(days)
    seqs = tuple(
        {"routine": r.id, "k": r.k, "count": r.count, "symbols": list(r.symbols), "days": len(r.days)}
        for r in res.routines[:top]
    )
    return WorkflowPatterns(
        repeated_clicks=tuple(repeated_clicks(days, top=top)),
        url_loops=tuple(url_loops(days, top=top)),
        action_sequences=seqs,
        app_switch_habits=tuple(app_switch_habits(days, top=top)),
        daily_habits=tuple(daily_habits(days, tz, top=top)),
    )
