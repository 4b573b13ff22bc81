"""A call suite case's own ``conversation`` (the messages before its question) and its
``reviewed`` mark: loading, the request each API gets, and the fingerprint.

The suite format grew additively: a case without these keys sends the same request as before
(the shipped suites still replay every cassette unchanged: ``pytest cases``).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_cardprobe.suite.loader import SuiteError, load_suite
from pytest_cardprobe.suite.matrix import expand
from pytest_cardprobe.suite.records import PriorCall, PriorMessage
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "A city."}},
                "required": ["city"],
            },
        },
    }
]

CONVERSATION = """\
- id: tomorrow
  conversation:
    - {role: system, content: Answer briefly.}
    - {role: user, content: "What's the weather in Paris?"}
    - role: assistant
      tool_calls:
        - {name: get_weather, arguments: {city: Paris}, id: call_abc}
    - {role: tool, name: get_weather, id: call_abc, content: "18 °C, sunny"}
    - {role: assistant, content: It is 18 °C and sunny in Paris.}
  prompt: And in Lyon?
  expect: {call: get_weather, args: {city: Lyon}}
"""


def suite_path(tmp_path: Path, cases: str, head: str = "") -> Path:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    text = "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\n" + head
    text += "cases:\n" + textwrap.indent(textwrap.dedent(cases), "  ")
    path = tmp_path / "calls.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def messages(tmp_path: Path, cases: str, api: str, head: str = "") -> list[dict]:
    suite = load_suite(suite_path(tmp_path, cases, head))
    (probe,) = expand(suite, ["m"])
    return build_request(probe, {}, api=api).messages


def error(tmp_path: Path, cases: str) -> str:
    with pytest.raises(SuiteError) as caught:
        load_suite(suite_path(tmp_path, cases))
    return str(caught.value)


def test_a_conversation_loads_as_records(tmp_path: Path) -> None:
    case = load_suite(suite_path(tmp_path, CONVERSATION)).cases[0]
    assert case.conversation == (
        PriorMessage("system", "Answer briefly."),
        PriorMessage("user", "What's the weather in Paris?"),
        PriorMessage("assistant", "", (PriorCall("get_weather", {"city": "Paris"}, "call_abc"),)),
        PriorMessage("tool", "18 °C, sunny", name="get_weather", id="call_abc"),
        PriorMessage("assistant", "It is 18 °C and sunny in Paris."),
    )
    assert case.reviewed is True


def test_ollama_gets_arguments_as_an_object_and_the_tool_by_name(tmp_path: Path) -> None:
    head = "prompts: {call: system.md}\n"
    (tmp_path / "system.md").write_text("You are a weather bot.\n")
    got = messages(tmp_path, CONVERSATION, "ollama", head)
    assert got == [
        {"role": "system", "content": "You are a weather bot.\n"},
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_abc",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {
            "role": "tool",
            "tool_name": "get_weather",
            "content": "18 °C, sunny",
            "tool_call_id": "call_abc",
        },
        {"role": "assistant", "content": "It is 18 °C and sunny in Paris."},
        {"role": "user", "content": "And in Lyon?"},
    ]


def test_openai_gets_arguments_as_a_string_and_every_call_an_id(tmp_path: Path) -> None:
    cases = """\
    - id: two
      conversation:
        - {role: user, content: Weather in Paris and Rome?}
        - role: assistant
          content: Checking.
          tool_calls:
            - {name: get_weather, arguments: {city: Paris}}
            - {name: get_weather, arguments: {city: Rome}}
        - {role: tool, name: get_weather, content: "18"}
        - {role: tool, name: get_weather, content: "25"}
      prompt: Which is warmer?
      expect: {no_call: true}
    """
    got = messages(tmp_path, cases, "openai")
    assert got[1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {"id": "call_1_0", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_1_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
        ],
    }  # fmt: skip
    assert got[2:4] == [
        {"role": "tool", "tool_call_id": "call_1_0", "content": "18"},
        {"role": "tool", "tool_call_id": "call_1_1", "content": "25"},
    ]
    ollama = messages(tmp_path, cases, "ollama")
    assert "id" not in ollama[1]["tool_calls"][0] and "tool_call_id" not in ollama[2]


def test_the_history_condition_puts_the_suites_turns_before_the_conversation(
    tmp_path: Path,
) -> None:
    head = "history: [{role: user, content: Hi.}, {role: assistant, content: Hello.}]\n"
    path = suite_path(tmp_path, CONVERSATION, head)
    path.write_text(path.read_text().replace("conditions: [cold]", "conditions: [cold, history]"))
    suite = load_suite(path)
    by = {p.condition: build_request(p, {}).messages for p in expand(suite, ["m"])}
    assert by["history"][:2] == [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
    ]
    assert by["history"][2:] == by["cold"]


def test_a_case_without_a_conversation_sends_what_it_sent_before(tmp_path: Path) -> None:
    cases = "- {id: plain, prompt: Weather in Oslo?, expect: {call: get_weather}}\n"
    assert messages(tmp_path, cases, "ollama") == [{"role": "user", "content": "Weather in Oslo?"}]
    assert messages(tmp_path, cases, "openai") == [{"role": "user", "content": "Weather in Oslo?"}]


def test_an_edited_conversation_changes_the_fingerprint(tmp_path: Path) -> None:
    def prints(text: str) -> dict[str, str]:
        (probe,) = expand(load_suite(suite_path(tmp_path, text)), ["m"])
        return fingerprint(build_request(probe, {}), tools_label="tools")

    before = prints(CONVERSATION)
    after = prints(CONVERSATION.replace("18 °C, sunny", "12 °C, rain"))
    assert before["history"] != after["history"]
    assert {k for k in before if before[k] != after[k]} == {"history"}
    system = prints(CONVERSATION.replace("Answer briefly.", "Answer at length."))
    assert {k for k in before if before[k] != system[k]} == {"system prompt"}
    # The server's call ids are labels, not what was asked: no part changes with them.
    assert prints(CONVERSATION.replace("call_abc", "call_xyz")) == before


@pytest.mark.parametrize(
    ("conversation", "words"),
    [
        ("- {role: tool, name: get_weather, content: x}", "a tool message answers a call"),
        ("- {role: robot, content: x}", "unknown role 'robot'"),
        ("- {role: user, content: x, tool_calls: [{name: f}]}", "belongs to an assistant message"),
        ("- {role: user}", "missing required key"),
        ("- {role: assistant}", "an assistant message has content, tool_calls or both"),
        ("- {role: tool, content: x}", "names the tool that answered"),
        ("- {role: assistant, tool_calls: [{arguments: {}}]}", "missing required key"),
        ("- {role: assistant, tool_calls: [{name: f, arguments: [1]}]}", "expected a mapping"),
        ("[]", "expected a non-empty list of messages"),
    ],
)
def test_a_wrong_conversation_is_a_usage_error_naming_the_key(
    tmp_path: Path, conversation: str, words: str
) -> None:
    body = textwrap.indent(conversation, "    ") if not conversation.startswith("[") else ""
    head = "  conversation:\n" + body + "\n" if body else f"  conversation: {conversation}\n"
    cases = "- id: c\n" + head + "  prompt: And now?\n  expect: {no_call: true}\n"
    message = error(tmp_path, cases)
    assert words in message and "conversation" in message and "calls.yaml:" in message


def test_an_expectation_may_be_left_out_only_by_an_unreviewed_draft(tmp_path: Path) -> None:
    message = error(tmp_path, "- {id: c, prompt: Hi?}\n")
    assert "expect" in message and "reviewed: false" in message
    case = load_suite(suite_path(tmp_path, "- {id: c, prompt: Hi?, reviewed: false}\n")).cases[0]
    assert case.expect is None and case.reviewed is False
    with pytest.raises(SuiteError, match="true or false"):
        load_suite(suite_path(tmp_path, "- {id: c, prompt: Hi?, reviewed: maybe}\n"))


def test_the_guide_conversation_example_loads(tmp_path: Path) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "from-traffic.md"
    text = page.read_text(encoding="utf-8")
    block = text.split("```yaml\n  - id: and_tomorrow\n", 1)[1].split("```", 1)[0]
    forecast = json.loads(json.dumps(TOOLS[0]).replace("get_weather", "get_forecast"))
    (tmp_path / "tools.json").write_text(json.dumps([*TOOLS, forecast]))
    text = "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\ncases:\n"
    (tmp_path / "s.yaml").write_text(text + "  - id: and_tomorrow\n" + block)
    (case,) = load_suite(tmp_path / "s.yaml").cases
    assert [m.role for m in case.conversation] == ["user", "assistant", "tool", "assistant"]
