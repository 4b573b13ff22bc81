"""Every failure class's label shape, and a report line that says the class once.

Call-judge labels start with their class and a space (``missing_call search_code: got 1 of
2 calls``); card-judge labels start with a word of docs/design.md §5 (``prose``, ``broken:``)
or, for ``infra`` and ``truncated``, the class itself. A failing sample's report line shows
``class: label`` only when the label does not already start with the class, so no line reads
``loop_limit: loop_limit: …``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_cardprobe.glue.failure import describe
from pytest_cardprobe.judge.call import ModelTurn, judge_calls
from pytest_cardprobe.judge.card import infra_verdict, judge_card, truncated_verdict
from pytest_cardprobe.suite.calls import CallSpec, Expectation, FinalCheck, Matcher
from pytest_cardprobe.types import (
    FailureClass,
    ProbeResult,
    SampleRecord,
    ToolCall,
    Verdict,
    with_class,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("read_file", "run_tests")
]
ONE = Expectation("call", (CallSpec("read_file", (("path", Matcher("equals", "a")),)),))
TWO = Expectation("calls", (CallSpec("read_file"), CallSpec("read_file")))
LOOP = Expectation("sequence", (CallSpec("read_file"), CallSpec("run_tests")), ordered=True)
FINAL = Expectation("no_call", final=(FinalCheck("contains", "Paris"),))


def turn(*calls: ToolCall, content: str = "", refused: str | None = None) -> ModelTurn:
    return ModelTurn("tool_calls" if calls else "content", calls, content, refused)


def read(path: Any = "a") -> ToolCall:
    return ToolCall("read_file", {"path": path})


def calls(*turns: ModelTurn, expect: Expectation = ONE, max_turns: int | None = None) -> Verdict:
    return judge_calls(list(turns), expect, TOOLS, max_turns=max_turns)


def card(text: str, accept: tuple[str, ...] = ("Input.Date",)) -> Verdict:
    return judge_card(text, accept=accept, requires_input=bool(accept))


# One or more real verdicts per class, from the judges themselves.
EXAMPLES: list[tuple[str, Verdict]] = [
    ("call", calls(turn(ToolCall("read_file", {}, "arguments are not valid JSON")))),
    ("call", calls(turn(refused="refused text-written call to 'read_file' at char 0: bad"))),
    ("call", calls(turn(content="No."))),
    ("call", calls(ModelTurn("content", (), "No.", forced="format"))),
    ("call", calls(turn(read()), expect=Expectation("no_call"))),
    ("call", calls(turn(read()), expect=TWO)),
    ("call", calls(turn(read(), read(), read()), expect=TWO)),
    ("call", calls(turn(read(), ToolCall("run_tests", {})), expect=ONE)),
    ("call", calls(turn(ToolCall("run_tests", {})))),
    ("call", calls(turn(ToolCall("open", {})))),
    ("call", calls(turn(read(3)))),
    ("call", calls(turn(read("b")))),
    ("call", calls(turn(content="Lyon"), expect=FINAL)),
    ("call", calls(turn(read()), turn(ToolCall("run_tests", {})), expect=LOOP, max_turns=2)),
    ("call", calls(turn(read()), turn(content="done"), expect=LOOP, max_turns=5)),
    ("card", card("I would pick a date.")),
    ("card", card('{"type": "Input.Date", "type": "Input.Text"}')),
    ("card", card('{"type": "Input.Date"')),
    ("card", card('[{"type": "DatePicker"}]')),
    ("card", card('{"type": "TextBlock", "text": "x"}', accept=())),
    ("card", card('{"type": "TextBlock", "text": "x"}')),
    ("card", truncated_verdict(card("Pick a da"), "length")),
    ("card", infra_verdict("HTTP 503 from the server")),
]
CARD_WORDS = (
    "prose",
    "duplicate-key",
    "prose-with-card",
    "broken",
    "text-call",
    "unwanted-card",
    "invented",
    "no-input",
    "wrong-shape",
)


def test_every_class_has_an_example() -> None:
    assert {v.failure for _, v in EXAMPLES} == set(FailureClass)
    assert all(not v.passed for _, v in EXAMPLES)


def _first_word(label: str) -> str:
    return label.split(" ", 1)[0].rstrip(":")


@pytest.mark.parametrize(
    ("judge", "verdict"), EXAMPLES, ids=[f"{v.failure}-{i}" for i, (_, v) in enumerate(EXAMPLES)]
)
def test_label_shape_and_the_class_said_once(judge: str, verdict: Verdict) -> None:
    assert verdict.failure is not None
    name = verdict.failure.value
    label = verdict.label
    assert "\n" not in label and label == label.strip()
    if judge == "call":
        assert re.match(rf"{name} \S", label), label
    else:
        assert _first_word(label) in (*CARD_WORDS, name), label
    record = SampleRecord.from_verdict(0, "content", verdict, "", None)
    result = ProbeResult("t", "s", "m", "c", "cold", "case", "failed", samples=[record])
    line = describe(result).splitlines()[1]
    assert len(re.findall(rf"(?<![\w-]){name}(?![\w-])", line)) == 1, line
    assert with_class(label, name) in line


def test_with_class_prefixes_only_a_label_without_it() -> None:
    assert with_class("prose", "declined") == "declined: prose"
    assert with_class("declined want read_file", "declined") == "declined want read_file"
    assert with_class("infra: HTTP 500", "infra") == "infra: HTTP 500"
    assert with_class("ok prose", None) == "ok prose"
    # A label that merely begins with a longer word is still prefixed.
    assert with_class("wrong_tool_x y", "wrong_tool") == "wrong_tool: wrong_tool_x y"
