"""Helpers for pytester-driven tests of the plugin."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester dir holding a copy of the shipped card suite and its prompts, no ini models.

    The tool suite is left out: these tests are about the card suite (tools_project has it).
    """
    shutil.copytree(
        ROOT / "cases",
        pytester.path / "cases",
        ignore=shutil.ignore_patterns("tools.yaml", "tools"),
    )
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


@pytest.fixture
def tools_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester dir with the shipped tool suite, its recorded cassettes and the baseline."""
    cases = pytester.path / "cases"
    (cases / "prompts").mkdir(parents=True)
    shutil.copy(ROOT / "cases" / "tools.yaml", cases / "tools.yaml")
    shutil.copytree(ROOT / "cases" / "tools", cases / "tools")
    shutil.copy(ROOT / "cases" / "prompts" / "coding-assistant.md", cases / "prompts")
    shutil.copytree(ROOT / "cassettes" / "tools", pytester.path / "cassettes" / "tools")
    shutil.copy(ROOT / "cardprobe-baseline.json", pytester.path / "cardprobe-baseline.json")
    pytester.makeini("[pytest]\ncardprobe_models = smollm2:135m\n")
    return pytester


@pytest.fixture
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal 250 columns wide, for tests that read the gate's figures and long lines,
    not the layout (the scoreboard fits the width it is given: tests/plugin/test_terminal.py
    and tests/unit/test_scoreboard_layout.py)."""
    monkeypatch.setenv("COLUMNS", "250")
