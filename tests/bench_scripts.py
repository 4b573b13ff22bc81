"""The scripts of ``bench/`` as modules, for the tests that check their arithmetic and pieces.

``bench/`` is not a package and not on ``sys.path`` (its scripts run as ``python bench/x.py``),
so each is loaded from its file, under a name of its own.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(stem: str) -> ModuleType:
    """``bench/<stem>.py``, freshly loaded."""
    spec = importlib.util.spec_from_file_location(f"_bench_{stem}_under_test", BENCH / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
