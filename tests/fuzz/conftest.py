"""The fuzz tests' sandbox: a working folder of their own, and proof nothing landed elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzzing import ROOT, listing


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``tmp_path``, made the working folder; after the test, the folder around it and the
    repository's suites, cassettes and top level are as they were."""
    monkeypatch.chdir(tmp_path)
    around = listing(tmp_path.parent, skip=tmp_path)
    repo = {
        "top": sorted(p.name for p in ROOT.iterdir()),
        "cases": listing(ROOT / "cases"),
        "cassettes": listing(ROOT / "cassettes"),
    }
    yield tmp_path
    assert listing(tmp_path.parent, skip=tmp_path) == around, "written beside the sandbox"
    assert {
        "top": sorted(p.name for p in ROOT.iterdir()),
        "cases": listing(ROOT / "cases"),
        "cassettes": listing(ROOT / "cassettes"),
    } == repo, "written into the repository"
