"""score/summary.py: what the reports say beside the scoreboard, built as data."""

from __future__ import annotations

import pytest

from pytest_cardprobe.score.resultread import ReportError, read_result
from pytest_cardprobe.score.summary import unreplayed
from pytest_cardprobe.types import ProbeResult


def result(case: str, problem: str | None, changes: list[str] | None = None) -> ProbeResult:
    return ProbeResult(
        f"cases/tools.yaml::{case}[m-call-cold]", "tools", "m", "call", "cold", case,
        status="error" if problem else "passed", problem=problem, changes=changes,
    )  # fmt: skip


def test_nothing_to_say_without_unreplayed_tests() -> None:
    assert unreplayed([result("a", None)], lambda mode: mode) is None


def test_the_block_counts_groups_and_names_the_command() -> None:
    found = unreplayed(
        [
            result("a", "stale", ["read_file: description changed"]),
            result("b", "stale", ["read_file: description changed"]),
            result("c", "stale", ['question: line 1: "x" -> "y"']),
            result("d", "not recorded"),
            result("e", None),
        ],
        lambda mode: f"pytest --cardprobe-record-mode {mode}",
    )
    assert found is not None
    block = found.block()
    assert block.title == "4 test(s) could not replay (never forgiven by the gate)"
    assert block.lines == (
        "3 stale, 1 not recorded — suite tools (cases/tools.yaml)",
        "read_file: description changed (2 test(s))",
        'question: line 1: "x" -> "y" (1 test(s))',
        "record exactly them: pytest --cardprobe-record-mode stale",
    )
    assert block.data["record_mode"] == "stale"
    assert block.data["counts"] == {"stale": 3, "not recorded": 1}


def test_only_missing_recordings_are_recorded_in_mode_once() -> None:
    found = unreplayed([result("a", "never recorded")], lambda mode: mode)
    assert found is not None and found.mode == "once"
    assert found.block().title == "1 test(s) not recorded yet"


def test_a_report_entry_keeps_its_problem_and_changes() -> None:
    entry = result("a", "stale", ["read_file: description changed"]).to_dict()
    assert read_result(entry, "r.json: tests[0]").changes == ["read_file: description changed"]
    assert "problem" not in result("b", None).to_dict()
    with pytest.raises(ReportError, match=r"tests\[0\]\.problem: expected one of not recorded"):
        read_result({**entry, "problem": "great"}, "r.json: tests[0]")
    with pytest.raises(ReportError, match=r"tests\[0\]\.changes: expected a list of strings"):
        read_result({**entry, "changes": [1]}, "r.json: tests[0]")
