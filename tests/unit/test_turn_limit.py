"""A tool loop's ``max_turns`` has an upper bound (ini ``cardprobe_max_turns``, default 20):
each turn is a request, so the bound is what caps the time one sample can take."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_cardprobe.suite.loader import SuiteError, SuiteLimits, load_suite

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
        },
    }
]


def suite(tmp_path: Path, head: str = "", case: str = "") -> Path:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    text = (
        "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\n" + head + "cases:\n"
        "  - id: a\n    prompt: q\n    expect: {sequence: [lookup]}\n" + case
    )
    path = tmp_path / "calls.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_default_limit_is_20_turns() -> None:
    assert SuiteLimits().max_turns == 20


@pytest.mark.parametrize("where", ["suite", "case"])
def test_max_turns_at_the_limit_loads(tmp_path: Path, where: str) -> None:
    head, case = ("max_turns: 20\n", "") if where == "suite" else ("", "    max_turns: 20\n")
    loaded = load_suite(suite(tmp_path, head, case), limits=SuiteLimits())
    assert loaded.cases[0].max_turns == 20


@pytest.mark.parametrize("where", ["suite", "case"])
def test_max_turns_past_the_limit_is_refused_naming_the_ini_key(tmp_path: Path, where: str) -> None:
    head, case = ("max_turns: 21\n", "") if where == "suite" else ("", "    max_turns: 21\n")
    with pytest.raises(SuiteError) as caught:
        load_suite(suite(tmp_path, head, case), limits=SuiteLimits())
    message = str(caught.value)
    assert "21 turns is more than the limit of 20 for a tool loop" in message
    assert "raise ini cardprobe_max_turns" in message
    assert ("line 5" in message or ":5:" in message) if where == "suite" else ":9:" in message


def test_a_million_turns_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="max_turns: 1000000 turns is more than the limit"):
        load_suite(suite(tmp_path, "max_turns: 1000000\n"), limits=SuiteLimits())


def test_the_ini_key_raises_the_limit(pytester: pytest.Pytester) -> None:
    suite(pytester.path, "max_turns: 30\n")
    pytester.makeini("[pytest]\ncardprobe_models = m\n")
    refused = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "raise ini cardprobe_max_turns" in refused.stdout.str() + refused.stderr.str()
    pytester.makeini("[pytest]\ncardprobe_models = m\ncardprobe_max_turns = 30\n")
    allowed = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    assert allowed.ret == pytest.ExitCode.OK, allowed.stdout.str()
