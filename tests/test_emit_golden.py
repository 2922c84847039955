"""Golden outputs: the hand-built day (tests/golden/day_fixture.py) in all four renderings,
checked byte for byte. After an intended change: AF_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_emit_golden.py"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from af_pipeline.compiler import emit, view
from af_pipeline.compiler.compile import CompileOptions, compile_day

GOLDEN = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN))
from day_fixture import golden_day  # noqa: E402

CASES = {
    "golden-day.json": lambda d: emit.to_json(d),
    "golden-day.yaml": lambda d: emit.to_yaml(d),
    "golden-day.md": lambda d: emit.to_markdown(d),
    "golden-day.context.txt": lambda d: emit.context_block(d),
    "golden-day.context-300.txt": lambda d: emit.context_block(d, budget_tokens=300),
    "golden-day.view.html": lambda d: view.render_day(d),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    doc = compile_day(golden_day(), CompileOptions(min_minutes=0.0))
    got = CASES[name](doc).encode("utf-8")
    path = GOLDEN / name
    if os.environ.get("AF_UPDATE_GOLDEN") == "1":
        path.write_bytes(got)
    assert path.exists(), f"{path} is missing: run with AF_UPDATE_GOLDEN=1 once"
    assert got == path.read_bytes(), f"{name} differs from the golden file (AF_UPDATE_GOLDEN=1 to accept)"
