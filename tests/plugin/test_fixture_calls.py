"""Call probes written as plain Python tests (``cardprobe.ask(..., expect=...)``), replayed.

The cassettes are the shipped tools suite's own, recorded from the real Ollama: a Python
test that asks the same case (its question, system prompt, tools file, options, condition)
sends the same requests, so it replays them offline with the suite's verdicts, labels and
failure classes, a tool loop included. The live test (tests/live/test_fixture_calls_live.py)
records a Python call probe itself.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = "smollm2:135m"
SERVER = "http://127.0.0.1:9"  # nothing listens there: a request that left would fail
SHIPPED = ROOT / "cassettes" / "tools" / MODEL.replace(":", "%3A")

TESTS = """
import pytest
from pathlib import Path

SYSTEM = (Path(__file__).parent / "cases" / "prompts" / "coding-assistant.md").read_text()
README = {"call": "read_file", "args": {"path": {"regex": r"(\\./)?README\\.md"}}}
INVOICE = {
    "sequence": [
        {"call": "search_code", "args": {"query": {"contains": "Invoice"}}},
        {"call": "read_file", "args": {"path": {"contains": "billing.py"}}},
    ],
    "final": {"contains": "Invoice"},
}
RESULTS = {
    "search_code": "src/shop/billing.py:14: class Invoice:",
    "read_file": (
        "class Invoice:\\n    def __init__(self, lines):\\n        self.lines = lines\\n\\n"
        "    def total(self):\\n        return sum(line.price for line in self.lines)\\n"
    ),
}


def ask(cardprobe, question, expect, **more):
    return cardprobe.ask(
        question, system=SYSTEM, tools="cases/tools/tools.json", options={"num_predict": 160},
        expect=expect, **more,
    )


@pytest.mark.samples(2)
def test_readme_required(cardprobe):
    asked = ask(cardprobe, "Show me what's in README.md.", README, condition="required")
    assert asked.passed, asked.label


@pytest.mark.samples(2)
def test_readme_cold(cardprobe):
    asked = ask(cardprobe, "Show me what's in README.md.", README)
    assert asked.passed, asked.label


@pytest.mark.samples(2)
def test_invoice_cold(cardprobe):
    question = "Find where the class Invoice is defined and show me that file."
    asked = ask(cardprobe, question, INVOICE, results=RESULTS, max_turns=4)
    assert asked.passed, asked.label


@pytest.mark.samples(2)
def test_invoice_required(cardprobe):
    question = "Find where the class Invoice is defined and show me that file."
    asked = ask(cardprobe, question, INVOICE, results=RESULTS, max_turns=4, condition="required")
    assert asked.passed, asked.label


@pytest.mark.samples(2)
def test_the_call_it_made(cardprobe):
    # The readme question's forced call reads src/app.py (the recording): these matchers take it.
    args = {"path": {"regex": "src/.*\\\\.py"}, "end_line": {"any": True}}
    app = {"call": "read_file", "args": args}
    asked = ask(cardprobe, "Show me what's in README.md.", app, condition="required")
    assert asked.passed, asked.label
    assert asked.route == "recovered" and asked.verdict.failure is None
    assert [c.name for c in asked.reply.tool_calls] == []  # recovered from the text, not structured
"""

# Python test -> the shipped suite case and condition whose cassette it replays.
REPLAYS = {
    "test_readme_required": "readme-call-required",
    "test_readme_cold": "readme-call-cold",
    "test_invoice_cold": "find_then_read-call-cold",
    "test_invoice_required": "find_then_read-call-required",
    "test_the_call_it_made": "readme-call-required",
}


def make_project(pytester: pytest.Pytester) -> None:
    shutil.copytree(ROOT / "cases", pytester.path / "cases")
    pytester.makeini(f"[pytest]\ncardprobe_models = {MODEL}\ncardprobe_servers = {SERVER}\n")
    pytester.makepyfile(test_calls=textwrap.dedent(TESTS))
    ours = pytester.path / "cassettes" / "_tests"
    ours.mkdir(parents=True)
    suite = pytester.path / "cassettes" / "tools" / SHIPPED.name
    suite.mkdir(parents=True)
    for test, cassette in REPLAYS.items():
        shutil.copy(SHIPPED / f"{cassette}.yaml", ours / f"test_calls.py_{test}.yaml")
        shutil.copy(SHIPPED / f"{cassette}.yaml", suite / f"{cassette}.yaml")


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"report-{time.monotonic_ns()}.json"
    result = pytester.runpytest("-p", "no:cacheprovider", *args, f"--cardprobe-json={out}")
    return result, json.loads(out.read_text())


def samples(report: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    return {
        t["nodeid"]: [
            (s["passed"], s["label"], s["route"], s["failure"], s["calls"], s["turns"])
            for s in t["samples"]
        ]
        for t in report["tests"]
    }


def test_python_call_probes_replay_the_suites_recordings_with_its_verdicts(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester)
    python, python_report = run(pytester, "test_calls.py", "-v")
    python.assert_outcomes(passed=1, failed=4)
    suite, suite_report = run(
        pytester, "cases/tools.yaml", "-k", "(readme or find_then_read) and not history"
    )
    suite.assert_outcomes(failed=4)
    ours, theirs = samples(python_report), samples(suite_report)
    for test, cassette in REPLAYS.items():
        case, _, condition = cassette.rpartition("-call-")
        nodeid = f"cases/tools.yaml::{case}[{MODEL}-call-{condition}]"
        if test != "test_the_call_it_made":
            assert ours[f"test_calls.py::{test}"] == theirs[nodeid], test
    # What the replayed samples were (the recorded replies, judged).
    required = ours["test_calls.py::test_readme_required"]
    assert [s[3] for s in required] == ["wrong_arguments"] * 2
    assert required[0][1] == (
        """wrong_arguments read_file: $.path got "src/app.py" want regex '(\\\\./)?README\\\\.md'"""
    )
    assert [s[3] for s in ours["test_calls.py::test_readme_cold"]] == ["declined"] * 2
    assert [s[1] for s in ours["test_calls.py::test_the_call_it_made"]] == ["ok read_file"] * 2
    # The failure reads as a suite's does: the label, then each sample with its route.
    python.stdout.fnmatch_lines(
        [
            "*2 of 2 samples failed; run 1/2: AssertionError: declined want read_file*",
            "*where False = Asked(passed=False, route='content', label='declined want read_file')*",
            "*sample 1/2 FAIL [[]content[]] declined want read_file (finish: length)*",
        ]
    )


BAD = """
def test_typo(cardprobe):
    cardprobe.ask(
        "Show me README.md",
        tools="cases/tools/tools.json",
        expect={"call": "read_file", "args": {"pth": {"contains": "README"}}},
    )


def test_card_words(cardprobe):
    cardprobe.ask("Show me README.md", tools="cases/tools/tools.json",
                  expect={"no_call": True}, accept=["TextBlock"])


def test_loop_words_on_a_card(cardprobe):
    cardprobe.ask("Show me a card", results={"read_file": "x"})
"""


def test_a_bad_expectation_fails_the_test_with_the_loaders_message_and_asks_nothing(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "cases" / "tools").mkdir(parents=True)
    shutil.copy(ROOT / "cases" / "tools" / "tools.json", pytester.path / "cases" / "tools")
    pytester.makeini(f"[pytest]\ncardprobe_models = {MODEL}\ncardprobe_servers = {SERVER}\n")
    pytester.makepyfile(test_bad=textwrap.dedent(BAD))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "E *pytest_cardprobe.suite.errors.SuiteError: *test_bad.py:2: expect.args.pth: tool"
            " 'read_file' has no argument 'pth'; did you mean 'path'? (its arguments: path,*",
            "E *ValueError: cardprobe.ask: accept= and requires_input= judge a card; a call "
            "probe (expect=) is judged by its expectation alone",
            "E *ValueError: cardprobe.ask: results= go with expect= (a call probe); a card is "
            "asked with tools as a list of declarations",
        ]
    )
    # No plugin frames in the failure, and no cassette was opened (replay would have said
    # "not recorded").
    assert "askcall.py" not in result.stdout.str()
    assert "not recorded" not in result.stdout.str()
