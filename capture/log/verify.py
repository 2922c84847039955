"""Verification: the manifest chain is walked and every sealed file re-hashed.

Any edit of a sealed file or a manifest entry, a removed or reordered entry, a forged amendment,
a folder the manifest does not name, or a change of the data folder's time zone is a problem,
named precisely. What a crash left half-done (and the next writer repairs) is a note, not a problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capture.log.files import sha256_file
from capture.log.layout import amendment_of, is_day, parse_segment_name, segment_name
from capture.log.manifest import ManifestChain, entry_hash
from capture.log.opensegments import INCOMPLETE, OpenSegmentFile
from capture.log.redaction import FORGET_INTENT, FORGET_WORK, REDACTION
from capture.model import ROW_KINDS


@dataclass
class VerifyReport:
    ok: bool
    problems: list[str]
    entries: int
    head: str | None
    notes: list[str] = field(default_factory=list)  # not tampering: e.g. a seal a crash left half-done


class Verifying(ManifestChain):
    """``verify``: the chain, the sealed files, stray folders and damaged open lines."""

    def verify(self) -> VerifyReport:
        """Walk the manifest chain and re-hash every sealed file; report each problem precisely."""
        problems: list[str] = []
        notes: list[str] = []
        entries: list[dict[str, Any]] = []
        raw = self.manifest_path.read_bytes() if self.manifest_path.exists() else b""
        lines = raw.split(b"\n")
        if lines[-1]:
            notes.append("manifest.jsonl ends with an incomplete record (a writer was interrupted)")
        prev: str | None = None
        days_seen: dict[str, int] = {}
        amendments_seen: dict[str, int] = {}
        segments_seen: set[str] = set()
        # per day: the segments chained so far, each as (folder, label, its row files' hashes)
        chained: dict[str, list[tuple[str, str, tuple[tuple[str, Any], ...]]]] = {}
        # (segment folder, file) -> the sha256 the chain gives it so far (sealed, then redacted)
        current: dict[tuple[str, str], Any] = {}
        redacted: set[str] = set()  # segments a redaction record rewrote
        segment_checks: list[tuple[str, str, str, Any]] = []
        for lineno, line in enumerate(lines[:-1], start=1):
            where = f"manifest.jsonl line {lineno}"
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict):
                    raise ValueError("not an object")
            except ValueError:
                problems.append(f"{where} is not a valid JSON entry (edited or damaged)")
                prev = None
                continue
            seq = len(entries)
            entries.append(entry)
            day = entry.get("day")
            label = f"{where} (entry {seq}, day {day})"
            if entry.get("seq") != seq:
                problems.append(f"{label}: seq is {entry.get('seq')!r}, expected {seq} (an entry was removed or reordered)")
            if entry.get("prev") != prev:
                problems.append(
                    f"{label}: broken chain link: prev is {entry.get('prev')!r} but the previous entry's hash is {prev!r}"
                )
            recomputed = entry_hash(entry)
            if entry.get("hash") != recomputed:
                problems.append(
                    f"{label}: the entry was edited: its content hashes to {recomputed}, it records {entry.get('hash')!r}"
                )
            prev = entry["hash"] if isinstance(entry.get("hash"), str) else recomputed
            if REDACTION in entry:
                problems.extend(self._verify_redaction(label.replace(f", day {day})", ", a redaction record)"),
                                                       entry.get(REDACTION), current, redacted))
                continue
            if not isinstance(day, str) or not is_day(day):
                problems.append(f"{label}: {day!r} is not a day")
                continue
            k = amendment_of(entry)
            expected_k = amendments_seen.get(day, -1) + 1
            if k < 0:
                problems.append(f"{label}: amendment {entry.get('amendment')!r} is not a number")
                continue
            if k != expected_k:
                if k == 0:
                    problems.append(f"{label}: day {day} is sealed twice (first at entry {days_seen[day]})")
                else:
                    problems.append(f"{label}: amendment {k} of day {day} follows "
                                    + (f"amendment {expected_k - 1}" if expected_k else "no sealed segment of that day")
                                    + " (an entry was removed, reordered or forged)")
            amendments_seen[day] = max(k, amendments_seen.get(day, -1))
            if entry.get("tz") != self.tz:
                problems.append(
                    f"{label}: sealed in time zone {entry.get('tz')!r} but the data folder now says {self.tz!r} "
                    f"({self.home.settings_path.name} was edited; day boundaries would move)"
                )
            days_seen.setdefault(day, seq)
            name = segment_name(day, k)
            segments_seen.add(name)
            files = entry.get("files")
            if isinstance(files, dict):
                for fname, meta in files.items():
                    current[(name, fname)] = meta.get("sha256") if isinstance(meta, dict) else None
            segment_checks.append((label, day, name, files))
        # Files are checked once the whole chain is read: a later redaction record may have
        # rewritten a segment, and then the file must hash as that record says, not as sealed.
        pending = self._pending_forget()
        if pending is not None:
            notes.append("a forget was interrupted before its redaction record landed; the next write completes it")
        for label, day, name, files in segment_checks:
            effective = _effective(files, name, current, pending)
            damaged = self._verify_files(label, name, effective)
            problems.extend(damaged)
            if not damaged and name not in {n for n, _, _ in chained.get(day, [])}:
                # a redacted segment may hash like another (both emptied): not a repeat
                hashes = (("redacted", name),) if name in redacted else _row_hashes(effective)
                chained.setdefault(day, []).append((name, label, hashes))
        problems.extend(self._repeated_amendments(chained))
        if self.sealed_dir.exists():
            for child in sorted(self.sealed_dir.iterdir()):
                if child.name in segments_seen:
                    continue
                parsed = parse_segment_name(child.name)
                if child.name.startswith(".") and child.name.endswith(".staging"):
                    notes.append(f"sealed/{child.name}: an unfinished seal (a writer was interrupted)")
                elif parsed is not None and (
                    (self.dir / f".{child.name}.direct").exists()
                    or (parsed[1] == 0 and (self.open_dir / parsed[0]).is_dir())
                ):
                    notes.append(f"sealed/{child.name}: a seal interrupted before its manifest entry")
                else:
                    problems.append(f"sealed/{child.name} is not in the manifest (added by hand, or its entry was removed)")
        # Open segments are not hashed (they still grow), but each line must be a row this version
        # can read: a damaged one is reported here and quarantined when the day is sealed.
        # A last line without its line end is a write under way or cut short: a note.
        for day in self._open_days():
            for kind in ROW_KINDS:
                segment = OpenSegmentFile(self.open_dir / day / f"{kind}.jsonl", kind, f"open/{day}/{kind}.jsonl")
                segment.refresh()
                for skipped in segment.skipped:
                    if skipped.reason == INCOMPLETE:
                        notes.append(skipped.sentence())
                    else:
                        problems.append(f"{skipped.sentence()} (it will be quarantined when the day is sealed)")
        head = entries[-1].get("hash") if entries else None
        return VerifyReport(ok=not problems, problems=problems, entries=len(entries),
                            head=head if isinstance(head, str) else None, notes=notes)

    def _verify_redaction(self, label: str, record: Any, current: dict[tuple[str, str], Any],
                          redacted: set[str]) -> list[str]:
        """Problems of one redaction record: each file it rewrote must be one the chain holds,
        rewritten from the hash the chain gave it then; its forgotten refs' file must be intact.
        Updates ``current`` to the hashes after it."""
        if not isinstance(record, dict) or not isinstance(record.get("segments"), dict):
            return [f"{label}: is not a valid redaction record"]
        problems: list[str] = []
        for name, files in sorted(record["segments"].items()):
            if not isinstance(files, dict):
                problems.append(f"{label}: segment {name} is not a valid list of files")
                continue
            for fname, change in sorted(files.items()):
                before = change.get("before") if isinstance(change, dict) else None
                if (name, fname) not in current:
                    problems.append(f"{label}: rewrites sealed/{name}/{fname}, which no earlier entry seals")
                    continue
                if before != current[(name, fname)]:
                    problems.append(f"{label}: rewrites sealed/{name}/{fname} from {before!r}, but the chain "
                                    f"records {current[(name, fname)]!r} for it then")
                current[(name, fname)] = change.get("after") if isinstance(change, dict) else None
                redacted.add(name)
        refs = record.get("refs")
        if isinstance(refs, dict) and isinstance(refs.get("file"), str):
            path = self.dir / refs["file"]
            if not path.is_file():
                problems.append(f"{label}: its forgotten refs' file {refs['file']} is missing "
                                "(a re-import could land them again)")
            elif sha256_file(path) != refs.get("sha256"):
                problems.append(f"{label}: its forgotten refs' file {refs['file']} was changed")
        else:
            problems.append(f"{label}: names no file of forgotten refs")
        return problems

    def _pending_forget(self) -> dict[str, Any] | None:
        """The record of a forget a killed process left half-done (the next writer completes it)."""
        try:
            doc = json.loads((self.dir / FORGET_WORK / FORGET_INTENT).read_bytes())
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def _repeated_amendments(self, chained: dict[str, list[tuple[str, str, tuple[tuple[str, Any], ...]]]]
                             ) -> list[str]:
        """Problems of amendments that hold rows an earlier segment of their day already holds:
        the same segment chained twice (its row files hash alike), or rows landed again (a ref
        in two segments). Each is correctly chained, so only their content gives them away;
        a ref lands once. Only segments whose files matched their entries are read."""
        problems: list[str] = []
        for day, segments in chained.items():
            if len(segments) < 2:
                continue
            repeats: dict[str, str] = {}  # folder -> the earlier folder it repeats
            for i, (name, label, hashes) in enumerate(segments):
                earlier = next((n for n, _, h in segments[:i] if h == hashes), None)
                if earlier is not None:
                    repeats[name] = earlier
                    problems.append(f"{label}: {_segment_label(name)} of day {day} holds the same rows "
                                    f"as {_segment_label(earlier)} (its files hash alike): the same amendment "
                                    "was chained twice")
            labels = {name: label for name, label, _ in segments}
            for name, earlier, kind, count, ref in self._refs_in_two_segments([n for n, _, _ in segments]):
                if name in repeats:
                    continue
                problems.append(f"{labels[name]}: {_segment_label(name)} of day {day} repeats {count} "
                                f"{kind} row(s) already in {_segment_label(earlier)} (e.g. ref {ref!r}): "
                                "rows landed twice")
        return problems

    def _refs_in_two_segments(self, names: list[str]) -> list[tuple[str, str, str, int, str]]:
        """(later folder, earlier folder, kind, rows, one ref) for the refs of one day that are in
        two of its segments (``names``, oldest first)."""
        order = {name: i for i, name in enumerate(names)}
        found: dict[tuple[str, str, str], tuple[int, str]] = {}
        import duckdb  # on first use (capture/log/core.py)

        with self._db() as con:
            for kind in ROW_KINDS:
                files = [str(self.sealed_dir / name / f"{kind}.parquet") for name in names]
                try:
                    rows = con.execute(
                        "SELECT ref, list(DISTINCT filename) FROM read_parquet(?, filename = true, union_by_name = true) "
                        "GROUP BY ref HAVING count(DISTINCT filename) > 1 ORDER BY ref", [files]).fetchall()
                except duckdb.Error:
                    continue  # a file DuckDB cannot read: its hash was checked, so it is not ours to judge
                for ref, paths in rows:
                    seen = sorted({Path(f).parent.name for f in paths} & order.keys(), key=order.__getitem__)
                    if len(seen) < 2:
                        continue
                    key = (seen[-1], seen[0], kind)
                    count, first = found.get(key, (0, str(ref)))
                    found[key] = (count + 1, first)
        return [(later, earlier, kind, count, ref) for (later, earlier, kind), (count, ref) in sorted(found.items())]

    def _verify_files(self, label: str, day: str, files: Any) -> list[str]:
        """Problems of one sealed segment's folder (``day`` is its folder name) against its entry."""
        folder = self.sealed_dir / day
        if not isinstance(files, dict) or not files:
            return [f"{label}: lists no files"]
        if not folder.is_dir():
            return [f"{label}: the folder sealed/{day} is missing"]
        problems: list[str] = []
        for name in sorted(files):
            meta = files[name]
            rel = f"sealed/{day}/{name}"
            path = folder / name
            if not path.is_file():
                problems.append(f"{label}: file {rel} is missing")
                continue
            expected = meta.get("sha256") if isinstance(meta, dict) else None
            actual = sha256_file(path)
            if actual != expected and not (isinstance(meta, dict) and actual == meta.get("or")):
                problems.append(f"{label}: file {rel} was changed: its sha256 is {actual}, the manifest records {expected}")
        for extra in sorted(p.name for p in folder.iterdir() if p.name not in files):
            problems.append(f"{label}: unexpected file sealed/{day}/{extra} in a sealed day")
        return problems


def _effective(files: Any, name: str, current: dict[tuple[str, str], Any], pending: dict[str, Any] | None) -> Any:
    """A segment entry's files with the hashes the whole chain gives them (an interrupted
    forget's files may already hash as its record will say)."""
    if not isinstance(files, dict):
        return files
    out = {}
    for fname, meta in files.items():
        if not isinstance(meta, dict):
            out[fname] = meta
            continue
        sha = current.get((name, fname), meta.get("sha256"))
        staged = ((pending or {}).get(REDACTION, {}).get("segments", {}).get(name, {}).get(fname)
                  if isinstance(pending, dict) else None)
        out[fname] = {**meta, "sha256": sha, **({"or": staged.get("after")} if isinstance(staged, dict) else {})}
    return out


def _row_hashes(files: Any) -> tuple[tuple[str, Any], ...]:
    """A segment's row files and their recorded sha256s (what it holds, whatever its sources)."""
    return tuple(sorted((n, m.get("sha256")) for n, m in files.items() if n.endswith(".parquet") and isinstance(m, dict)))


def _segment_label(name: str) -> str:
    day, k = parse_segment_name(name) or (name, 0)
    return f"amendment {k}" if k else f"the day's first segment (sealed/{day})"
