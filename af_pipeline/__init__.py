"""activity-frames: a deterministic compiler from screen capture to agent memory.

``from af_pipeline import Memory`` is the read model (af_pipeline/interfaces/memory/, docs/api.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from af_pipeline.about import GENERATOR, __version__

if TYPE_CHECKING:
    from af_pipeline.interfaces.memory import Memory as Memory

__all__ = ["GENERATOR", "Memory", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: `import af_pipeline` stays cheap for the CLI and the compiler's workers.
    if name == "Memory":
        from af_pipeline.interfaces.memory import Memory  # lazy: `import af_pipeline` stays cheap

        return Memory
    raise AttributeError(f"module 'af_pipeline' has no attribute {name!r}")
