"""The schema v1 day document: validation, evidence encoding, tier-2 and privacy stripping.

The measured tier is everything compile_day writes. Tier 2 lives only under ``inferred``:
``{"<namespace>": {"generator": str, "items": [{"label", "confidence", "evidence", ...}]}}``
where the namespace is dotted (``org.tool``), confidence is high | medium | speculative, and the
evidence names frame ids of this document and/or measured fields (JSON pointers). Stripping the
block always leaves a valid measured document.
"""

from __future__ import annotations

import copy
import json
import os
from functools import lru_cache
from importlib import resources
from itertools import chain
from operator import itemgetter
from typing import Any

from af_pipeline.compiler.native import C as _c

SCHEMA_VERSION = 1
SCHEMA_FILE = "document-v1.schema.json"
CONFIDENCE = ("high", "medium", "speculative")
_DIGITS = "0123456789"


class InvalidDocument(ValueError):
    """A document that breaks schema v1; the message names the first offending place."""


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    text = resources.files("af_pipeline.compiler").joinpath("schema", SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema  # imported lazily: only validation needs it

    cls = jsonschema.validators.validator_for(schema())
    cls.check_schema(schema())
    return cls(schema())


def validate(doc: dict[str, Any]) -> None:
    """Raise InvalidDocument unless doc conforms to schema v1 (JSON Schema plus the rules a
    JSON Schema cannot say: unique frame ids, tier-2 evidence pointing at existing frames)."""
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(document)"
        raise InvalidDocument(f"document is not schema v1 at {where}: {err.message}")
    ids = [f["id"] for f in doc["frames"]]
    if len(set(ids)) != len(ids):
        raise InvalidDocument("document has duplicate frame ids")
    known = set(ids)
    for ns, block in doc.get("inferred", {}).items():
        for i, item in enumerate(block["items"]):
            missing = [fid for fid in item["evidence"].get("frames", []) if fid not in known]
            if missing:
                raise InvalidDocument(
                    f"inferred/{ns}/items/{i} cites frame {missing[0]} that the document does not contain"
                )


def strip_inferred(doc: dict[str, Any]) -> dict[str, Any]:
    """The purely measured document: a copy without the tier-2 ``inferred`` block."""
    return {k: v for k, v in doc.items() if k != "inferred"}


def add_inferred(
    doc: dict[str, Any], namespace: str, generator: str, items: list[dict[str, Any]]
) -> dict[str, Any]:
    """A copy of doc carrying a tier-2 block under ``inferred[namespace]``; validated."""
    out = dict(doc)
    inferred = dict(out.get("inferred", {}))
    inferred[namespace] = {"generator": generator, "items": copy.deepcopy(items)}
    out["inferred"] = inferred
    validate(out)
    return out


def strip_typed_text(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy without typed content (the emit-time half of the privacy rule)."""
    if doc.get("privacy", {}).get("typed_text") != "included":
        return doc
    out = dict(doc)
    frames = []
    for f in doc["frames"]:
        g = {k: v for k, v in f.items() if k != "typed_text"}
        if "interruptions" in g:
            g["interruptions"] = [{k: v for k, v in it.items() if k != "typed_text"}
                                  for it in g["interruptions"]]
        frames.append(g)
    out["frames"] = frames
    out["privacy"] = dict(doc["privacy"], typed_text="excluded")
    return out


# -- evidence: exact row references, compactly --------------------------------------------------


def encode_refs(refs: list[str]) -> list[dict[str, str]]:
    """Group refs as {"prefix", "ids"}: ids are the integer tails, "a-b" only for runs where every
    integer from a to b is in the list. A ref without a plain integer tail stays whole as
    {"ref": ...}. Exact: decode_refs gives back the same set."""
    groups: dict[str, list[int]] = {}
    whole: list[str] = []
    last: str | None = None
    cut = 0
    for ref in refs:
        # fast path: most refs of a frame share the previous ref's prefix
        if last is not None and ref.startswith(last):
            tail = ref[cut:]
            if tail.isdigit() and tail.isascii() and (tail[0] != "0" or len(tail) == 1):
                groups[last].append(int(tail))
                continue
        head = ref.rstrip(_DIGITS)
        tail = ref[len(head):]
        if not tail or (len(tail) > 1 and tail[0] == "0"):
            whole.append(ref)  # "007" would not survive int(); keep it verbatim
            continue
        g = groups.get(head)
        if g is None:
            groups[head] = [int(tail)]
        else:
            g.append(int(tail))
        last, cut = head, len(head)
    out: list[dict[str, str]] = [{"prefix": head, "ids": id_runs(groups[head])} for head in sorted(groups)]
    for ref in sorted(set(whole)):
        out.append({"ref": ref})
    return out


def id_runs(values: list[int]) -> str:
    """"1-3,7,9-10": sorted distinct ids, a run written "a-b" only when every id in it is there."""
    ids = sorted(set(values))
    if ids[-1] - ids[0] == len(ids) - 1:  # one unbroken run, the usual case
        return f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else str(ids[0])
    parts: list[str] = []
    start = prev = ids[0]
    for v in ids[1:]:
        if v == prev + 1:
            prev = v
            continue
        parts.append(f"{start}-{prev}" if prev > start else str(start))
        start = prev = v
    parts.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(parts)


def id_runs_of_groups(ids: list[int], groups: list[list[int]]) -> list[str] | None:
    """id_runs of each group's ids (``ids[p]`` for each place p of the group; no group empty),
    all groups at once: in C (_speedups.c) where the package was built with a compiler, else
    by numpy (id_runs_by_group); None for ids past int64 (then id_runs of each group)."""
    if _c is not None:
        try:
            return _c.id_runs(ids, groups)
        except _c.Unsupported:
            pass
    if not groups:
        return []
    if max(ids) < 2**62:  # int64 arithmetic holds (the ids are int() of digits: none below 0)
        import numpy as np

        return id_runs_by_group(np.asarray(ids, dtype=np.int64), groups)
    return None


def id_runs_by_group(ids: Any, groups: list[list[int]]) -> list[str]:
    """id_runs of each group's ids (``ids[p]`` for each position p of the group, ``ids`` an
    int64 numpy array of values below 2**62; no group empty), in one vectorised pass: a day's
    frames and interruptions at once."""
    import numpy as np  # here: the renderers import this module, and need no numpy

    if not groups:
        return []
    lens = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    total = int(lens.sum())
    grp = np.repeat(np.arange(len(groups)), lens)
    v = ids[np.fromiter(chain.from_iterable(groups), dtype=np.int64, count=total)]
    order = np.lexsort((v, grp))  # by group, then id
    g, v = grp[order], v[order]
    if total > 1:  # each id once per group
        distinct = np.concatenate(([True], (g[1:] != g[:-1]) | (v[1:] != v[:-1])))
        g, v = g[distinct], v[distinct]
    # a run starts at a group's first id and wherever an id is not the one before plus one
    starts = np.flatnonzero(np.concatenate(([True], (g[1:] != g[:-1]) | (v[1:] != v[:-1] + 1))))
    ends = np.append(starts[1:], v.size) - 1
    parts: list[list[str]] = [[] for _ in groups]
    for a, b, o in zip(v[starts].tolist(), v[ends].tolist(), g[starts].tolist(), strict=True):
        parts[o].append(f"{a}-{b}" if b > a else str(a))
    return [",".join(p) for p in parts]


def common_ref_ids(refs: list[str]) -> tuple[str, list[int]] | None:
    """(prefix, integer ids) when every ref is one shared prefix plus a plain integer, which is
    how importers name rows; None otherwise (use encode_refs). encode_refs gives the same
    result for such refs: this only avoids parsing each ref once per frame. Done in C
    (_speedups.c) where the package was built with a compiler; common_ref_ids_py defines it."""
    if _c is not None:
        try:
            return _c.ref_ids(refs)
        except _c.Unsupported:  # not a list of exact strs
            pass
    return common_ref_ids_py(refs)


def common_ref_ids_py(refs: list[str]) -> tuple[str, list[int]] | None:
    """common_ref_ids in Python: the definition the C module follows."""
    if not refs:
        return None
    head = os.path.commonprefix([min(refs), max(refs)]).rstrip(_DIGITS)
    cut = len(head)
    tails = [r[cut:] for r in refs]
    joined = "".join(tails)
    if not (joined.isascii() and joined.isdigit()):
        return None
    try:
        ids = list(map(int, tails))
    except ValueError:  # an empty tail: the ref is the prefix itself
        return None
    # leading zeros would not survive int(): look closer only when some tail starts with "0"
    if "0" in "".join(map(itemgetter(0), tails)) and any(t[0] == "0" and len(t) > 1 for t in tails):
        return None
    return head, ids


def decode_refs(encoded: list[dict[str, str]]) -> list[str]:
    """The refs an encoded evidence list names, sorted."""
    refs: list[str] = []
    for item in encoded:
        if "ref" in item:
            refs.append(item["ref"])
            continue
        head = item["prefix"]
        for part in item["ids"].split(","):
            a, sep, b = part.partition("-")
            if sep:
                refs.extend(f"{head}{v}" for v in range(int(a), int(b) + 1))
            else:
                refs.append(f"{head}{int(a)}")
    return sorted(refs)
