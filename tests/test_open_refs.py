"""An open day's refs held as digests (capture.log.dedup.OpenRefs) answer like a set of the refs."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from capture.log import dedup
from capture.log.dedup import OpenRefs

refs_st = st.lists(st.text(min_size=0, max_size=40), max_size=60)


@settings(derandomize=True, max_examples=200)
@given(held=st.lists(refs_st, max_size=4), asked=refs_st)
@example(held=[["a", "b"], ["c"]], asked=["a", "c", "d", ""])
def test_open_refs_answer_as_a_set_of_refs(held: list[list[str]], asked: list[str]) -> None:
    refs, truth = OpenRefs(), set()
    for part in held:  # appends arrive in parts, as a recorder's do
        refs.update(part)
        truth.update(part)
        assert [r in refs for r in asked] == [r in truth for r in asked]
        assert refs.mask(asked) == [r in truth for r in asked]
    assert len(refs) == len(truth)


def test_digests_ending_in_nul_bytes_are_still_found(monkeypatch) -> None:
    """numpy's bytes dtype drops trailing NULs when it returns an item; a digest ending in
    zeros must still be found, and not be confused with one that ends otherwise."""
    fake = {"a": b"\x01" * 8 + b"\x00" * 8, "b": b"\x01" * 8 + b"\x00" * 7 + b"\x02",
            "c": b"\x00" * 16}
    monkeypatch.setattr(dedup, "ref_digest", lambda r: fake[r])
    monkeypatch.setattr(dedup, "OPEN_REFS_PENDING", 1)  # merged into the sorted array at once
    refs = OpenRefs()
    refs.update(["a", "c"])
    assert "a" in refs and "c" in refs and "b" not in refs
    assert refs.mask(["a", "b", "c"]) == [True, False, True]


def test_many_refs_cost_about_their_digests() -> None:
    refs = OpenRefs()
    for start in range(0, 20_000, 50):  # as sync passes add them, a few at a time
        refs.update(f"sp:host:frame:{i}:{'x' * 30}" for i in range(start, start + 50))
        refs.mask(["x"])  # merges what is pending
    refs.update(f"sp:host:frame:{i}:{'x' * 30}" for i in range(0, 20_000, 7))  # already held: no copy kept
    refs.mask(["x"])
    runs = refs._refs._runs
    assert sum(run.nbytes for run in runs) == 20_000 * dedup.REF_DIGEST_BYTES and len(refs) == 20_000
    assert len(runs) <= 20_000 .bit_length() + 1  # each run at least twice the next: a handful to search
    assert "sp:host:frame:19999:" + "x" * 30 in refs and "sp:host:frame:20000:" + "x" * 30 not in refs


@settings(derandomize=True, max_examples=100)
@given(rows=st.lists(st.tuples(st.text(max_size=8), st.integers(), st.none() | st.floats(allow_nan=False, allow_infinity=False)),
                     max_size=30, unique_by=lambda r: r[0]),
       changed=st.integers(min_value=0, max_value=29))
def test_a_row_is_known_by_its_content_only_when_every_field_is_equal(rows, changed) -> None:
    """A re-read row whose fields all equal a logged row's is the same row again (no conflict to
    look for); one differing in any field, or in a field's type, is not taken for it."""
    refs = OpenRefs()
    refs.add_rows("inputs", rows)
    assert all(refs.same_rows("inputs", rows))
    if rows:
        ref, n, f = rows[changed % len(rows)]
        assert refs.same_rows("inputs", [(ref, n + 1, f)]) == [False]
        assert refs.same_rows("snapshots", [(ref, n, f)]) == [False]  # another kind
        if f is not None and f == int(f):
            assert refs.same_rows("inputs", [(ref, n, int(f))]) == [False]  # 1.0 is not 1 here


@settings(derandomize=True, max_examples=60, deadline=None)
@given(batches=st.lists(st.lists(st.binary(min_size=16, max_size=16), max_size=40), max_size=25))
def test_a_digest_set_answers_as_a_set_does(batches: list[list[bytes]]) -> None:
    """Runs merged in any order of passes hold each digest once and find exactly what was added
    (digests ending in NUL bytes included)."""
    held, plain = dedup.DigestSet(), set()
    asked = [b"\x00" * 16, b"\x01" + b"\x00" * 15]
    for batch in batches:
        held.update(batch)
        plain.update(batch)
        probe = batch[:3] + asked
        assert held.mask(probe) == [d in plain for d in probe]
    assert len(held) == len(plain)
    assert all(d in held for d in plain)
