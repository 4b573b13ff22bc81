"""Tool-definition lint (suite/toollint.py): the rules added for issue 26, the example-list
non-warnings, and findings that point at the real line of the suite or tools file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.toollint import lint_tools, lists_allowed_values


def fn(parameters: dict[str, Any], name: str = "t") -> dict[str, Any]:
    function = {"name": name, "description": "Does it.", "parameters": parameters}
    return {"type": "function", "function": function}


def one(**props: Any) -> list[dict[str, Any]]:
    return [fn({"type": "object", "properties": props})]


def rules(tools: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f.rule, f.path) for f in lint_tools(tools, Path("tools.json"))]


P = "$[0].function.parameters.properties"


@pytest.mark.parametrize(
    "description",
    [
        "The file's name, e.g. 'README.md' or 'setup.py'.",
        "A format such as 'json', 'yaml' or 'toml'.",
        "A path like `src/a.py` or `tests/`.",
        "For example 'fast' or 'full'.",
        "For instance 'fast', 'full'.",
        "A branch: 'main', 'dev', etc.",
        "A branch: 'main', 'dev', …",
        "A branch: 'main', 'dev', ...",
        "Eg. none; e.g. `x` / `y`.",
    ],
)
def test_values_given_as_examples_are_not_a_missing_enum(description: str) -> None:
    assert not lists_allowed_values(description)
    assert rules(one(x={"type": "string", "description": description})) == []


@pytest.mark.parametrize(
    "description",
    [
        "The sort order: one of asc, desc (e.g. asc).",  # "one of" says they are all
        "Mode: 'fast' or 'full'. Paths like 'a.txt' are relative.",  # the list has no example word
        "Either `fast` or `full`.",
        'Allowed values: "json", "text".',
    ],
)
def test_values_listed_as_the_only_ones_still_warn(description: str) -> None:
    assert lists_allowed_values(description)
    assert rules(one(x={"type": "string", "description": description})) == [
        ("values-without-enum", f"{P}.x")
    ]


@pytest.mark.parametrize(
    ("schema", "flagged"),
    [
        ({"type": "integer", "default": "5"}, True),
        ({"type": "integer", "default": 5.0}, True),  # a float where an integer is declared
        ({"type": "integer", "default": True}, True),  # JSON true is not a number
        ({"type": "boolean", "default": 0}, True),
        ({"type": "array", "default": {}}, True),
        ({"type": ["string", "null"], "default": 3}, True),
        ({"type": "integer", "default": 5}, False),
        ({"type": "number", "default": 3}, False),
        ({"type": ["string", "null"], "default": None}, False),
        ({"type": "object", "properties": {}, "default": {}}, False),
        ({"default": "x"}, False),  # no declared type to contradict
    ],
)
def test_a_default_whose_type_contradicts_the_declared_type(
    schema: dict[str, Any], flagged: bool
) -> None:
    found = lint_tools(one(x={"description": "d", **schema}), Path("tools.json"))
    hits = [f for f in found if f.rule == "default-type"]
    assert bool(hits) is flagged, found
    if flagged:
        assert hits[0].path == f"{P}.x.default"
        assert repr(schema["default"]) in hits[0].message


def test_a_required_parameter_with_a_default() -> None:
    params = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "description": "d", "default": "x"},
            "b": {"type": "string", "description": "d", "default": "y"},
        },
        "required": ["a"],
    }
    assert rules([fn(params)]) == [("required-default", f"{P}.a.default")]


@pytest.mark.parametrize(
    ("schema", "flagged"),
    [
        ({"type": "object"}, True),
        ({"type": "object", "additionalProperties": True}, True),
        ({"type": "object", "properties": {"k": {"type": "string", "description": "d"}}}, False),
        ({"type": "object", "additionalProperties": {"type": "string"}}, False),  # a typed map
        ({"type": "object", "patternProperties": {"^x-": {"type": "string"}}}, False),
        ({"type": "array", "items": {"type": "object"}}, False),
    ],
)
def test_an_object_parameter_without_properties(schema: dict[str, Any], flagged: bool) -> None:
    found = rules(one(x={"description": "d", **schema}))
    assert (("object-without-properties", f"{P}.x") in found) is flagged, found


def test_a_tool_without_arguments_is_not_an_object_without_properties() -> None:
    assert rules([fn({"type": "object"})]) == []


# --------------------------------------------------------------------------- real lines


def test_findings_in_a_json_tools_file_point_at_their_lines(tmp_path: Path) -> None:
    tools = [
        {"type": "function", "function": {"name": "a", "description": "Does a.",
         "parameters": {"type": "object", "properties": {
             "mode": {"type": "string", "description": "Mode: 'fast' or 'full'."},
             "n": {"type": "integer", "description": "How many.", "default": "3"}}}}},
        {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}},
    ]  # fmt: skip
    (tmp_path / "tools.json").write_text(json.dumps(tools, indent=2), encoding="utf-8")
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\n"
        "cases: [{id: x, prompt: p, expect: {no_call: true}}]\n",
        encoding="utf-8",
    )
    loaded = load_suite(suite)
    found = lint_tools(loaded.tools, loaded.tools_file or loaded.path, loaded.tool_lines)
    text = (tmp_path / "tools.json").read_text().splitlines()

    def line(needle: str, after: int = 0) -> int:
        return next(n for n in range(after, len(text)) if needle in text[n]) + 1

    where = {(f.rule, f.path): f.line for f in found}
    assert where == {
        ("values-without-enum", f"{P}.mode"): line('"mode"'),
        ("default-type", f"{P}.n.default"): line('"default"'),
        # A missing description points at the function that lacks it.
        ("no-description", "$[1].function.description"): line('"name": "b"') - 1,
    }
    assert all(f.line and f.line >= 1 for f in found)
    first = next(f for f in found if f.rule == "values-without-enum")
    assert str(first).startswith(f"{loaded.tools_file}:{line(chr(34) + 'mode')}: {P}.mode: ")


def test_findings_in_inline_tools_point_at_the_suite_lines(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "cardprobe: 1\njudge: call\nconditions: [cold]\n"
        "tools:\n"
        "  - type: function\n"
        "    function:\n"
        "      name: a\n"
        "      parameters:\n"
        "        type: object\n"
        "        properties:\n"
        "          opts: {type: object, description: Options.}\n"
        "cases: [{id: x, prompt: p, expect: {no_call: true}}]\n",
        encoding="utf-8",
    )
    loaded = load_suite(suite)
    found = lint_tools(loaded.tools, loaded.tools_file or loaded.path, loaded.tool_lines)
    assert {(f.rule, f.line) for f in found} == {
        ("no-description", 6),  # the function mapping of the tool without a description
        ("object-without-properties", 11),
    }
    assert all(str(f).startswith(f"{suite}:{f.line}: $[0].function") for f in found)


def test_more_than_twenty_tools_points_at_the_tools_key(tmp_path: Path) -> None:
    tools = [
        {"type": "function", "function": {"name": f"t{i}", "description": "d"}} for i in range(21)
    ]
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "cardprobe: 1\njudge: call\nconditions: [cold]\n"
        f"tools: {json.dumps(tools)}\n"
        "cases: [{id: x, prompt: p, expect: {no_call: true}}]\n",
        encoding="utf-8",
    )
    loaded = load_suite(suite)
    (finding,) = lint_tools(loaded.tools, loaded.path, loaded.tool_lines)
    assert (finding.rule, finding.path, finding.line) == ("too-many-tools", "$", 4)
