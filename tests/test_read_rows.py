"""Rows built from fetched columns (capture.log.rows.build_instances, the read path of every
sealed day) are the same rows the importers made: same class, fields, equality, hash, still
frozen, and they pickle and copy like any other row."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capture.log import build_instances
from capture.model import CLASS_OF, ROW_KINDS

_TEXT = st.text(max_size=12)
_BY_TYPE = {
    "str": _TEXT,
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False),
    "bool": st.booleans(),
}


def _field_strategy(f: dataclasses.Field) -> st.SearchStrategy:  # type: ignore[type-arg]
    spec = str(f.type)
    base = next(v for k, v in _BY_TYPE.items() if spec.startswith(k))
    return st.one_of(st.none(), base) if "None" in spec else base


def _rows(kind: str) -> st.SearchStrategy:
    cls = CLASS_OF[kind]
    return st.lists(st.builds(cls, **{f.name: _field_strategy(f) for f in dataclasses.fields(cls)}), max_size=30)


@pytest.mark.parametrize("kind", ROW_KINDS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_rows_built_from_columns_are_the_rows_the_columns_came_from(kind, data):
    rows = data.draw(_rows(kind))
    cls = CLASS_OF[kind]
    names = [f.name for f in dataclasses.fields(cls)]
    built = build_instances(cls, [[getattr(r, n) for r in rows] for n in names])
    assert built == rows
    assert [type(b) for b in built] == [cls] * len(rows)
    assert [hash(b) for b in built] == [hash(r) for r in rows]
    assert pickle.loads(pickle.dumps(built)) == rows and copy.deepcopy(built) == rows
    assert [dataclasses.astuple(b) for b in built] == [dataclasses.astuple(r) for r in rows]
    for b in built[:3]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(b, names[0], None)


def test_no_columns_give_no_rows():
    assert build_instances(CLASS_OF["inputs"], [[] for _ in dataclasses.fields(CLASS_OF["inputs"])]) == []
