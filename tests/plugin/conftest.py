"""Helpers for pytester-driven tests of the plugin."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester dir holding a copy of the shipped suite and its prompts, and no ini models."""
    shutil.copytree(ROOT / "cases", pytester.path / "cases")
    pytester.makeini("[pytest]\n")
    return pytester


@pytest.fixture
def recorded(project: pytest.Pytester) -> pytest.Pytester:
    """``project`` plus the shipped cassettes and baseline (real recorded replies)."""
    shutil.copytree(ROOT / "cassettes", project.path / "cassettes")
    baseline = ROOT / "cardprobe-baseline.json"
    if baseline.exists():
        shutil.copy(baseline, project.path / "cardprobe-baseline.json")
    project.makeini("[pytest]\ncardprobe_models = smollm2:135m\n")
    return project
