"""Requests per channel and condition, including the opt-in retry, seeded and schema arms."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pytest_cardprobe.judge.card import judge_card
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import expand, not_asked
from pytest_cardprobe.suite.request import build_request, card_schema

SUITE = """\
cardprobe: 1
name: mini
channels: [prose, tool, retry]
conditions: [cold, history, seeded, schema]
prompts: {prose: prose.md, tool: tool.md}
seed_turn:
  user: Show me a toggle for dark mode.
  card: {type: AdaptiveCard, body: [{type: Input.Toggle, id: dark, title: Dark mode}]}
tool:
  type: function
  function:
    name: render_adaptive_card
    parameters: {type: object, properties: {body: {type: array}}}
history:
  - {role: user, content: Hello there.}
  - {role: assistant, content: "Hi, how can I help?"}
cases:
  - {id: date, prompt: Pick a day., accept: [Input.Date]}
"""


@pytest.fixture
def probes(tmp_path: Path) -> dict[str, object]:
    (tmp_path / "prose.md").write_text("PROSE\n")
    (tmp_path / "tool.md").write_text("TOOL\n")
    (tmp_path / "s.yaml").write_text(SUITE)
    suite = load_suite(tmp_path / "s.yaml")
    return {p.param_id.split("-", 1)[1]: p for p in expand(suite, ["m"])}


def test_seeded_puts_the_card_json_in_an_assistant_turn(probes: dict) -> None:
    request = build_request(probes["prose-seeded"], {})
    roles = [m["role"] for m in request.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert json.loads(request.messages[2]["content"])["body"][0]["type"] == "Input.Toggle"
    assert request.messages[-1]["content"] == "Pick a day." and request.tools == []


def test_schema_condition_sends_a_card_schema_as_format_on_prose_only(probes: dict) -> None:
    request = build_request(probes["prose-schema"], {"temperature": 0})
    schema = request.options["format"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert request.options["temperature"] == 0
    assert "format" not in build_request(probes["prose-cold"], {}).options
    # A reply the schema admits is a card the judge can score.
    reply = {"type": "AdaptiveCard", "body": [{"type": "Input.Date", "id": "d"}]}
    jsonschema.validate(reply, schema)
    assert judge_card(json.dumps(reply), accept=["Input.Date"], requires_input=True).passed
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "AdaptiveCard", "body": [{"type": "DatePicker"}]}, schema)


def test_card_schema_lists_top_level_types_only() -> None:
    enum = card_schema(["Input.Date", "TableRow"])["properties"]["body"]["items"]
    assert enum["properties"]["type"]["enum"] == ["Input.Date"]


def test_retry_asks_in_prose_first_and_through_the_tool_second(probes: dict) -> None:
    probe = probes["retry-history"]
    first = build_request(probe, {})
    second = build_request(probe, {}, channel="tool")
    assert (first.messages[0]["content"], first.tools) == ("PROSE\n", [])
    assert second.messages[0]["content"] == "TOOL\n"
    assert second.tool_names == ["render_adaptive_card"]
    # Same condition and question; the broken first reply is not shown to the model.
    assert first.messages[1:] == second.messages[1:]
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]


def test_seeded_and_schema_run_on_the_prose_channel_only(probes: dict) -> None:
    # The tool and retry channels cannot carry either condition: no probe, so no test.
    assert sorted(probes) == [
        "prose-cold",
        "prose-history",
        "prose-schema",
        "prose-seeded",
        "retry-cold",
        "retry-history",
        "tool-cold",
        "tool-history",
    ]


@pytest.mark.parametrize("channel", ["tool", "retry"])
@pytest.mark.parametrize("condition", ["seeded", "schema"])
def test_a_combination_left_out_says_why(channel: str, condition: str) -> None:
    reason = not_asked(channel, condition)
    assert reason and channel in reason and condition in reason
    assert not_asked("prose", condition) is None and not_asked(channel, "history") is None
