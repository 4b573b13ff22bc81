"""suite/declarations.py: what changed between two tool declarations or two prompts, in words."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.suite.declarations import request_changes, text_change, tool_changes

SHIPPED = Path(__file__).resolve().parents[2] / "cases" / "tools" / "tools.json"


def tool(name: str, description: str = "d", **properties: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


def shipped() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads(SHIPPED.read_text(encoding="utf-8"))
    return loaded


def named(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(t for t in tools if t["function"]["name"] == name)["function"]
    return found


def test_the_same_declarations_have_no_change() -> None:
    assert tool_changes(shipped(), shipped()) == []
    reordered_keys = [json.loads(json.dumps(t, sort_keys=True)) for t in shipped()]
    assert tool_changes(shipped(), reordered_keys) == []


def test_a_reworded_description_is_named_by_its_tool() -> None:
    after = shipped()
    named(after, "read_file")["description"] += " Prefer it over guessing."
    assert tool_changes(shipped(), after) == ["read_file: description changed"]


def test_a_parameter_added_and_an_enum_value_gained() -> None:
    before = [tool("search_code", path={"type": "string"})]
    before.append(tool("run_tests", target={"type": "string", "enum": ["unit", "plugin"]}))
    after = copy.deepcopy(before)
    after[0]["function"]["parameters"]["properties"]["query"] = {"type": "string"}
    after[1]["function"]["parameters"]["properties"]["target"]["enum"].append("e2e")
    assert tool_changes(before, after) == [
        "search_code: parameter query added",
        'run_tests.target: enum gained "e2e"',
    ]


def test_every_kind_of_parameter_change_reads_in_words() -> None:
    before = shipped()
    after = shipped()
    read = named(after, "read_file")["parameters"]
    read["properties"]["start_line"]["minimum"] = 0
    read["properties"]["end_line"]["type"] = "string"
    read["properties"]["path"]["description"] = "Where the file is."
    read["required"] = ["path", "start_line"]
    search = named(after, "search_code")["parameters"]
    del search["properties"]["path"]
    search["properties"]["limit"] = {"type": "integer", "default": 20}
    search["required"] = ["query", "limit"]
    listing = named(after, "list_directory")
    listing["parameters"]["properties"]["recursive"]["default"] = False
    listing["parameters"]["additionalProperties"] = False
    assert tool_changes(before, after) == [
        "read_file.path: description changed",
        "read_file.start_line: now required",
        "read_file.start_line: minimum changed from 1 to 0",
        "read_file.end_line: type changed from integer to string",
        "search_code: parameter path removed",
        "search_code: parameter limit added (required)",
        "list_directory: parameters additionalProperties added",
        "list_directory.recursive: default added (false)",
    ]


def test_tools_added_removed_and_reordered() -> None:
    before = shipped()
    after = [t for t in shipped() if t["function"]["name"] != "run_shell"]
    after.append(tool("open_url", url={"type": "string"}))
    assert tool_changes(before, after) == ["run_shell: tool removed", "open_url: tool added"]
    flipped = list(reversed(shipped()))
    assert tool_changes(before, flipped) == [
        "tool order changed: read_file, search_code, list_directory, run_tests, write_file, "
        "run_shell -> run_shell, write_file, run_tests, list_directory, search_code, read_file"
    ]


def test_nested_objects_items_enum_lost_and_reordered() -> None:
    options = {
        "type": "object",
        "properties": {"verbose": {"type": "boolean"}, "level": {"enum": ["a", "b", "c"]}},
    }
    before = [tool("run", options=options, files={"type": "array", "items": {"type": "string"}})]
    after = copy.deepcopy(before)
    props = after[0]["function"]["parameters"]["properties"]
    props["options"]["properties"]["quiet"] = {"type": "boolean"}
    props["options"]["properties"]["level"]["enum"] = ["c", "b"]
    props["files"]["items"]["maxLength"] = 200
    assert tool_changes(before, after) == [
        "run.options: parameter quiet added",
        'run.options.level: enum lost "a"',
        "run.files[]: maxLength added (200)",
    ]
    swapped = copy.deepcopy(before)
    swapped[0]["function"]["parameters"]["properties"]["options"]["properties"]["level"]["enum"] = [
        "c",
        "b",
        "a",
    ]
    assert tool_changes(before, swapped) == ["run.options.level: enum reordered"]


def test_the_envelope_and_other_function_keys() -> None:
    before = [tool("f")]
    after = copy.deepcopy(before)
    after[0]["type"] = "custom"
    after[0]["function"]["strict"] = True
    del after[0]["function"]["description"]
    assert tool_changes(before, after) == [
        "f: type changed",
        "f: description removed",
        "f: strict added",
    ]
    bare_before = [{"name": "f", "parameters": {"type": "object"}}]
    bare_after = [{"name": "f"}]
    assert tool_changes(bare_before, bare_after) == ["f: parameters removed"]


def test_what_a_recording_may_hold_instead_of_tools() -> None:
    assert tool_changes(None, shipped()) == ["tools added"]
    assert tool_changes(shipped(), None) == ["tools removed"]
    assert tool_changes("x", shipped()) == ["tools changed"]
    assert tool_changes([1, {"function": "x"}], [2, {"function": "x"}]) == [
        "tools[0]: declaration changed"
    ]
    assert tool_changes([tool("f")], [{"type": "function", "function": {"name": "f"}}]) == [
        "f: description removed",
        "f: parameters removed",
    ]
    assert tool_changes([tool("f", a={"type": "string"})], [tool("f", a=True)]) == [
        "f.a: schema changed"
    ]


def test_values_are_one_short_line_with_control_characters_escaped() -> None:
    before = [tool("f", a={"type": "string", "default": "x"})]
    after = [tool("f", a={"type": "string", "default": "\x1b[31m" + "y" * 100})]
    (line,) = tool_changes(before, after)
    assert "\x1b" not in line and "\\u001b" in line
    assert line.endswith("…") and len(line) < 120


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)
tool_like = st.fixed_dictionaries(
    {
        "type": st.just("function"),
        "function": st.dictionaries(
            st.sampled_from(["name", "description", "parameters", "strict"]),
            json_values,
            max_size=4,
        ),
    }
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(tool_like | json_values, max_size=4), st.lists(tool_like | json_values, max_size=4))
def test_any_json_gives_lines_and_the_same_gives_none(before: Any, after: Any) -> None:
    found = tool_changes(before, after)
    assert all(isinstance(line, str) and "\n" not in line for line in found)
    assert tool_changes(before, copy.deepcopy(before)) == []
    if before != after:
        assert found, "a difference must be named"


def test_text_change_names_the_first_differing_line() -> None:
    before = "You are a coding assistant.\nUse the tools when they help.\nBe brief."
    after = "You are a coding assistant.\nUse the tools whenever they help.\nBe brief."
    assert text_change(before, before) is None
    assert text_change(before, after) == (
        'line 2: "Use the tools when they help." -> "Use the tools whenever they help."'
    )
    assert text_change(before, before + "\nSay please.") == 'line 4 added: "Say please."'
    assert text_change(before + "\nSay please.", before) == 'line 4 removed: "Say please."'
    assert text_change(before, before + "\n") == (
        "only the line endings or the final newline changed"
    )
    long_before = "x" * 100 + " old words " + "y" * 100
    long_after = "x" * 100 + " new words " + "y" * 100
    line = text_change(long_before, long_after)
    assert line is not None and "old words" in line and "new words" in line
    assert text_change("a\x1bb", "a\x1bc") == 'line 1: "a\\u001bb" -> "a\\u001bc"'


def body(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "You are a coding assistant.\nBe brief."},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": "Open the README."},
        ],
        "tools": shipped(),
        "options": {"temperature": 0, "num_predict": 512},
        "stream": False,
    }
    base.update(fields)
    return base


def test_request_changes_names_each_part_in_words() -> None:
    assert request_changes(body(), body()) == []
    assert request_changes(None, body()) == [] and request_changes(body(), "x") == []
    tools = shipped()
    named(tools, "read_file")["description"] = "Read a file."
    messages = copy.deepcopy(body()["messages"])
    messages[0]["content"] = "You are a coding assistant.\nBe very brief."
    messages[-1]["content"] = "Open the README, please."
    messages[1]["content"] = "Hello there"
    asked = body(
        tools=tools,
        messages=messages,
        options={"temperature": 0, "num_predict": 256, "seed": 1},
        stream=True,
        keep_alive="5m",
    )
    assert request_changes(body(), asked) == [
        "read_file: description changed",
        'system prompt: line 2: "Be brief." -> "Be very brief."',
        'question: line 1: "Open the README." -> "Open the README, please."',
        'history: turn 1: line 1: "Hello" -> "Hello there"',
        "options.num_predict changed from 512 to 256",
        "options.seed added",
        "stream changed from false to true",
        "keep_alive added",
    ]
    shorter = body(messages=[m for i, m in enumerate(body()["messages"]) if i not in (1, 2)])
    assert request_changes(body(), shorter) == ["history: 2 -> 0 turns"]
