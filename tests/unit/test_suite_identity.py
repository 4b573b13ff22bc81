"""The suite file a recording names, as the session state hands it to each test: worked out
once per collected suite, and never another suite's (glue/state.py, glue/recording.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pytest_cardprobe.glue.recording import file_identity
from pytest_cardprobe.glue.state import CardprobeState
from pytest_cardprobe.suite.loader import load_suite

CASES = Path(__file__).resolve().parents[2] / "cases"


def _state(root: Path) -> CardprobeState:
    config: Any = SimpleNamespace(rootpath=root)
    return CardprobeState(config=config, settings=None)  # type: ignore[arg-type]


def _suite_in(folder: Path) -> Any:
    shutil.copytree(CASES, folder)  # the suite with the prompt files it reads
    return load_suite(folder / "cards.yaml")


def test_a_collected_suite_is_named_as_noted_without_resolving_again(
    tmp_path: Path, monkeypatch: Any
) -> None:
    suite = _suite_in(tmp_path / "cases")
    state = _state(tmp_path)
    state.note_suite(suite)
    assert state.suite_file(suite) == "cases/cards.yaml"

    def resolved(*args: Any) -> str:
        raise AssertionError("the suite file was resolved again")

    monkeypatch.setattr("pytest_cardprobe.glue.state.suite_file", resolved)
    assert state.suite_file(suite) == "cases/cards.yaml"


def test_a_suite_not_collected_here_is_named_by_its_own_file(tmp_path: Path) -> None:
    # Same suite name, another file: the noted identity is the other file's, never served.
    noted = _suite_in(tmp_path / "cases")
    other = _suite_in(tmp_path / "elsewhere")
    assert noted.name == other.name
    state = _state(tmp_path)
    state.note_suite(noted)
    assert state.suite_file(other) == "elsewhere/cards.yaml"
    assert state.suite_file(other) == file_identity(other.path, tmp_path)
    assert state.suite_file(noted) == "cases/cards.yaml"
