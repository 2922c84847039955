"""Append-only: sealed segments and the published artifacts of sealed days never change.

A day amended after it was sealed (late capture) has further segments chained after its first;
the earlier ones must still hash as recorded, and its publication follows the amendment.

Checked against two records written when the data was made: the log's hash-chained manifest
(each sealed segment's sha256, each entry chained to the one before) and each published day's
manifest.json (each file's sha256, and the log segments the day was compiled from).
"""

from __future__ import annotations

import os
from pathlib import Path

from af_pipeline.warehouse import publish
from capture.files import sha256_file
from capture.log import EventLog, amendment_of, segment_name
from certification import history

_GLOBAL = "*"  # memo key of the problems that concern the whole log, not one day
_CHAIN = "*chain"  # memo key of the log's own verification (verify_chain), once per run
_VERIFY_CACHE: dict[tuple, tuple[bool, list[str], str | None]] = {}


def _fingerprint(log: EventLog) -> tuple:
    """Sizes and mtimes of the manifest and every sealed file: a full re-verify runs when any changes."""
    items: list[tuple[str, int, int]] = []
    for path in [log.manifest_path, *sorted(log.sealed_dir.rglob("*"))] if log.sealed_dir.exists() else [log.manifest_path]:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        items.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(items)


def verify_chain(log: EventLog) -> tuple[bool, list[str], str | None]:
    """The log's own verification (chain links, entry hashes, every sealed file), cached while unchanged."""
    key = (str(log.dir), _fingerprint(log))
    if key not in _VERIFY_CACHE:
        report = log.verify()
        _VERIFY_CACHE.clear()
        _VERIFY_CACHE[key] = (report.ok, list(report.problems), report.head)
    return _VERIFY_CACHE[key]


def _chain_files(log: EventLog, day: str) -> dict[str, str]:
    """``sealed/<segment>/<file>`` -> the sha256 the manifest chain records, every segment of the day."""
    out: dict[str, str] = {}
    for entry in log.day_entries(day):
        name = segment_name(day, max(amendment_of(entry), 0))
        for fname, meta in sorted((entry.get("files") or {}).items()):
            out[f"sealed/{name}/{fname}"] = str(meta.get("sha256") if isinstance(meta, dict) else None)
    return out


def _published_problems(log: EventLog, published_dir: Path, pday: str) -> list[str] | None:
    """Problems of one published day against its manifest and the chain (None: not published as sealed)."""
    manifest = publish.read_manifest(published_dir, pday)
    if not manifest or not manifest.get("sealed"):
        return None
    problems = list(publish.verify_day(published_dir, pday))
    chained = _chain_files(log, pday)
    if not chained:
        return problems  # reported once per run by check_day, for every such day
    recorded = manifest.get("segments", {})
    for rel, sha in sorted(recorded.items()):
        if rel not in chained:
            problems.append(f"{pday}: published from segment {rel}, which the log's manifest chain does not hold")
        elif chained[rel] != sha:
            problems.append(f"{pday}: published from {rel} {str(sha)[:12]}, the chain now records {chained[rel][:12]}")
    return problems


def check_day(log: EventLog, published_dir: Path, day: str, memo: dict[str, list[str] | None] | None = None) -> list[str]:
    """Problems that break append-only for ``day`` and the sealed days published before it.

    Every sealed segment of the day (its first and each amendment) must hash as the chain
    records; every published sealed day must have been compiled from segments the chain holds,
    unchanged. ``memo`` lets one check over a day range verify each earlier published day once
    instead of once per later day (quadratic over a long range); every day still reports every
    earlier problem.
    """
    memo = {} if memo is None else memo
    problems: list[str] = []
    if _CHAIN not in memo:
        # Once per run, like the earlier days below: its fingerprint alone stats every sealed
        # file of the log, which once per day of a long range cost more than the rest of the check.
        ok, chain_problems, _ = verify_chain(log)
        memo[_CHAIN] = [] if ok else [f"event log: {p}" for p in chain_problems]
    problems.extend(memo[_CHAIN] or [])
    if _GLOBAL not in memo:
        # Once per run: the chain must extend the last certified head, and no day may be
        # published as sealed without a sealed day in the log (e.g. its days were deleted).
        whole = [f"certification history: {p}" for p in history.chain_problems(log.home, log)]
        sealed = {str(e.get("day")) for e in log.manifest()}
        for pday in publish.published_days(published_dir):
            manifest = publish.read_manifest(published_dir, pday)
            if manifest and manifest.get("sealed") and pday not in sealed:
                whole.append(f"{pday}: published as sealed but the log's manifest chain has no entry for it")
        memo[_GLOBAL] = whole
    problems.extend(memo[_GLOBAL] or [])
    chained = _chain_files(log, day)
    # This day's segments, hashed now (not trusting the cache), against the chain's entries.
    for rel, sha in sorted(chained.items()):
        path = log.dir / rel
        actual = sha256_file(path) if path.is_file() else "missing"
        if actual != sha:
            problems.append(f"{day}: sealed segment {rel} is {actual[:12]}, the manifest chain records {sha[:12]}")
    for pday in publish.published_days(published_dir):
        if pday > day:
            continue
        if pday not in memo:
            memo[pday] = _published_problems(log, published_dir, pday)
        found = memo[pday]
        if found is None:
            if pday == day and chained and publish.read_manifest(published_dir, pday) is not None:
                problems.append(f"{day}: sealed in the log but published as open; build it again")
            continue
        problems.extend(found)
        if pday == day:
            listed = publish.read_manifest(published_dir, pday) or {}
            if set(listed.get("segments", {})) < set(chained):
                problems.append(f"{day}: amended in the log since it was published "
                                f"({len(chained)} sealed files, published from {len(listed.get('segments', {}))}); "
                                "build it again")
    return problems
