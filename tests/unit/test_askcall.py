"""A call probe asked from Python, read by the loader's rules: suite/askcall.py.

The same case written in a suite and passed to ``cardprobe.ask`` must mean the same thing:
the same expectation records, scripted results, loop limit and the same request on the
wire. A bad argument gets the loader's own message, naming the file, the line of the ask and
the keyword argument; nothing else escapes for any input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cardprobe.suite.askcall import CallAsk, call_probe_suite
from pytest_cardprobe.suite.loader import SuiteError, SuiteLimits, load_suite
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.request import build_request

ROOT = Path(__file__).resolve().parents[2]
TOOLS_SUITE = ROOT / "cases" / "tools.yaml"
README = {"call": "read_file", "args": {"path": {"regex": r"(\./)?README\.md"}}}
LINE = 7


def ask_of(suite_data: dict[str, Any], case: dict[str, Any], system: str) -> CallAsk:
    """The arguments a Python test passes for ``case`` of the shipped tools suite."""
    earlier = case.get("conversation", [])
    question = case["prompt"]
    messages: Any = [*earlier, {"role": "user", "content": question}] if earlier else question
    return CallAsk(
        messages=messages,
        tools=suite_data["tools"],  # the same file, relative to the same folder
        expect=case["expect"],
        system=system,
        results=case.get("results"),
        max_turns=case.get("max_turns", suite_data.get("max_turns")),
        options=suite_data.get("options"),
    )


def test_every_case_of_the_tools_suite_means_the_same_from_python() -> None:
    suite = load_suite(TOOLS_SUITE)
    data = yaml.safe_load(TOOLS_SUITE.read_text(encoding="utf-8"))
    system = suite.prompts["call"]
    assert len(data["cases"]) == len(suite.cases) > 20
    for raw, case in zip(data["cases"], suite.cases, strict=True):
        ask = ask_of(data, raw, system)
        python = call_probe_suite(ask, TOOLS_SUITE, LINE, SuiteLimits())
        (asked,) = python.cases
        assert asked.expect == case.expect, case.id
        assert asked.results == case.results, case.id
        assert asked.max_turns == case.max_turns, case.id
        assert asked.conversation == case.conversation, case.id
        for condition in ("cold", "required"):
            # The suite's history condition is the test's own earlier messages in Python.
            ours = build_request(Probe(python, asked, "m", "call", condition), {"seed": 1})
            theirs = build_request(Probe(suite, case, "m", "call", condition), {"seed": 1})
            assert ours == theirs, (case.id, condition)


def test_a_leading_system_message_is_the_system_prompt() -> None:
    tools = str(ROOT / "cases" / "tools" / "tools.json")
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Show me README.md"},
    ]
    suite = call_probe_suite(CallAsk(messages, tools, README), Path("t.py"), 1, SuiteLimits())
    request = build_request(Probe(suite, suite.cases[0], "m", "call", "cold"), {})
    assert request.messages == messages
    assert len(request.tools) == 6 and request.tool_choice is None
    forced = build_request(Probe(suite, suite.cases[0], "m", "call", "required"), {})
    assert forced.tool_choice == "required"


CYCLE: dict[str, Any] = {"call": "read_file"}
CYCLE["args"] = {"path": CYCLE}  # a structure that holds itself


def error_of(where: Path, **given: Any) -> str:
    args: dict[str, Any] = {"messages": "Show me README.md", "tools": "tools.json"}
    args["expect"] = README
    args.update(given)
    with pytest.raises(SuiteError) as info:
        call_probe_suite(CallAsk(**args), where, LINE, SuiteLimits(roots=(where.parent,)))
    return str(info.value)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"expect": {"call": "read_file", "args": {"pth": {"contains": "README"}}}},
            "expect.args.pth: tool 'read_file' has no argument 'pth'; did you mean 'path'?",
        ),
        (
            {"expect": {"call": "read_fle"}},
            "expect.call: 'read_fle' is not a declared tool; did you mean 'read_file'?",
        ),
        (
            {"expect": {"call": "read_file", "args": {"path": {"regexp": "x"}}}},
            "expect.args.path.regexp: unknown matcher 'regexp'; did you mean 'regex'?",
        ),
        (
            {"expect": {"call": "read_file", "args": {"path": {"regex": "(unclosed"}}}},
            "expect.args.path.regex: ",
        ),
        (
            {"expect": {"call": "read_file", "no_call": True}},
            "expect.no_call: two expectations (call and no_call); give exactly one of",
        ),
        (
            {"expect": {"no_call": True}, "results": {"read_file": "x"}},
            "results: only a `sequence:` expectation runs the tool loop that results feed; "
            "expect a sequence or leave results out",
        ),
        (
            {"expect": {"call": "read_file", "args": {"path": re.compile("README")}}},
            "expect.args.path: expected plain data (text, numbers, booleans, None, lists and "
            "mappings), got a re.Pattern",
        ),
        ({"expect": CYCLE}, "expect.args.path: holds expect again: a structure that holds itself"),
        (
            {"expect": {"call": "read_file", "args": {1: "x"}}},
            "expect.args: keys are text, got the key 1",
        ),
        ({"options": {"num_predict": object()}}, "options.num_predict: expected plain data"),
        ({"tools": "missing.json"}, "tools: tools file not found: "),
        (
            {"tools": None},
            "tools: a call probe needs tools=: the declarations as a list, or the path of a "
            "tools file relative to the test",
        ),
        ({"tools": "../outside.json"}, "outside the project"),
        ({"tools": {"python": "app.tools:TOOLS"}}, "tools: a tool source (python:, mcp:)"),
        (
            {"tools": [{"name": "read_file"}]},
            "tools[0].name: unknown key; allowed: type, function; a tool declaration is",
        ),
        ({"condition": "history"}, "condition: unknown condition 'history'; use cold, required"),
        (
            {"messages": [{"role": "assistant", "content": "x"}]},
            "messages[-1]: the last message is the question: a mapping with role 'user' and "
            "its content, got a message with role 'assistant'",
        ),
        ({"messages": ["hi"]}, "the last message is the question: a mapping with role 'user'"),
        ({"messages": []}, "messages: expected the question as text"),
        ({"messages": "   "}, "messages: expected a non-empty question"),
        ({"system": 3}, "system: expected the system prompt as text, got 3"),
        ({"max_turns": 0}, "max_turns: expected an integer >= 1, got 0"),
        (
            {"options": [1]},
            "options: expected a mapping, got a list of 1 item",
        ),
        (
            {
                "messages": [{"role": "robot", "content": "x"}, {"role": "user", "content": "q"}],
            },
            "messages[0].role: unknown role 'robot'",
        ),
    ],
)
def test_a_bad_argument_gets_the_loaders_message_at_the_ask(
    tmp_path: Path, given: dict[str, Any], message: str
) -> None:
    (tmp_path / "tools.json").write_text(
        (ROOT / "cases" / "tools" / "tools.json").read_text(encoding="utf-8"), encoding="utf-8"
    )
    where = tmp_path / "test_probe.py"
    text = error_of(where, **given)
    assert text.startswith(f"{where}:{LINE}: "), text
    assert message in text, text


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
KEYS = st.sampled_from(["call", "args", "no_call", "calls", "sequence", "ordered", "final"])
EXPECT = JSON | st.dictionaries(KEYS, JSON | st.just("read_file"), max_size=3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expect=EXPECT, messages=JSON, results=JSON, max_turns=JSON, condition=JSON)
def test_any_arguments_give_a_suite_or_the_loaders_error(
    expect: Any, messages: Any, results: Any, max_turns: Any, condition: Any
) -> None:
    tools = json.loads((ROOT / "cases" / "tools" / "tools.json").read_text(encoding="utf-8"))
    ask = CallAsk(messages, tools, expect, None, results, max_turns, condition)
    try:
        suite = call_probe_suite(ask, Path("test_x.py"), LINE, SuiteLimits())
    except SuiteError as exc:
        assert str(exc).startswith(f"test_x.py:{LINE}: "), exc
    else:
        assert len(suite.cases) == 1 and suite.cases[0].expect is not None


def test_a_doubtful_matcher_is_a_warning_named_at_the_ask() -> None:
    tools = str(ROOT / "cases" / "tools" / "tools.json")
    expect = {"call": "write_file", "args": {"mode": {"one_of": ["append", "prepend"]}}}
    where = ROOT / "tests" / "test_x.py"
    suite = call_probe_suite(CallAsk("Add a line", tools, expect), where, LINE, SuiteLimits())
    (doubt,) = suite.warnings
    assert str(doubt).startswith(f"{where}:{LINE}: expect.args.mode: "), str(doubt)
    assert 'alternative(s) "prepend"' in str(doubt), str(doubt)
