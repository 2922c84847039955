"""The compiler's optional C module (_speedups.c), or None where the package was built without a
C compiler: then each step it speeds up runs its Python definition (the list is at the top of
_speedups.c). Modules take it as ``_c``, which tests replace with None to run the Python way."""

from __future__ import annotations

from types import ModuleType

C: ModuleType | None
try:
    from af_pipeline.compiler import _speedups as C
except ImportError:  # pragma: no cover - exercised where no compiler built it
    C = None
