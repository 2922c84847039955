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
    refs.update(f"sp:host:frame:{i}:{'x' * 30}" for i in range(20_000))
    refs.mask(["x"])  # merges what is pending
    assert refs._sorted.nbytes == 20_000 * dedup.REF_DIGEST_BYTES
    assert "sp:host:frame:19999:" + "x" * 30 in refs and "sp:host:frame:20000:" + "x" * 30 not in refs
