"""The dedup index's hash blocks answer what one sorted array of every hash answers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from capture.log import dedup
from capture.log.dedup import SortedHashes

hashes = st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.integers(-5, 5), max_size=120)


@settings(max_examples=200, deadline=None)
@given(st.lists(hashes, max_size=8), hashes, st.integers(min_value=1, max_value=6))
def test_blocks_hold_every_hash_added_and_no_other(batches: list[list[int]], queries: list[int],
                                                   block: int) -> None:
    # Tiny blocks make each add touch, grow and split many; duplicates and extremes are allowed.
    old = dedup.INDEX_BLOCK
    dedup.INDEX_BLOCK = block
    try:
        index = SortedHashes()
        for batch in batches:
            index.add(np.sort(np.array(batch, dtype=np.int64)))
        held = [h for b in batches for h in b]
        assert len(index) == len(held)
        asked = sorted(set(queries) | set(held[:20]))
        got = index.contains(np.array(asked, dtype=np.int64)).tolist()
        assert got == [q in set(held) for q in asked]
        assert all(len(b) <= 2 * block for b in index._blocks)  # a grown block was split
        flat = [h for b in index._blocks for h in b.tolist()]
        assert flat == sorted(held)
    finally:
        dedup.INDEX_BLOCK = old
