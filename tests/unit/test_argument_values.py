"""Expected argument values checked at load (suite/argvalues.py): a matcher that only values
the tool's JSON Schema rejects can satisfy is a usage error naming file, line, case, argument
and rule; one whose alternatives are only partly impossible is a warning."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.judge.argschema import schema_problem, strict_validator
from pytest_cardprobe.suite.loader import Suite, SuiteError, load_suite
from pytest_cardprobe.suite.schema import tool_validator

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "pattern": "^[A-Za-z ]+$", "maxLength": 20},
        "priority": {"type": "string", "enum": ["low", "medium", "high", "urgent"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        "kind": {"const": "ticket"},
        "due": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["bug", "docs"]}},
        "labels": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "string", "enum": ["bug", "docs"]},
        },
        "score": {"type": "number"},
    },
    "required": ["title"],
}
TOOLS = [{"type": "function", "function": {"name": "create_ticket", "parameters": PARAMETERS}}]


def load(tmp_path: Path, args: str, extra: str = "") -> Suite:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    case = "- id: triage\n  prompt: Open a ticket.\n  expect:\n    call: create_ticket\n"
    case += f"    args: {args}\n" + extra
    text = "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\ncases:\n"
    path = tmp_path / "calls.yaml"
    path.write_text(text + textwrap.indent(case, "  "), encoding="utf-8")
    return load_suite(path)


def error(tmp_path: Path, args: str) -> str:
    with pytest.raises(SuiteError) as info:
        load(tmp_path, args)
    return str(info.value)


def test_a_literal_outside_the_enum_is_a_usage_error_naming_everything(tmp_path: Path) -> None:
    said = error(tmp_path, "{priority: critical}")
    assert said.startswith(f"{tmp_path / 'calls.yaml'}:10: cases[0].expect.args.priority: ")
    assert "case 'triage': \"critical\" can never pass: tool 'create_ticket' declares " in said
    assert '\'priority\' with enum ["low", "medium", "high", "urgent"]' in said
    assert "every sample would fail" in said


def test_a_word_for_an_integer_is_a_usage_error(tmp_path: Path) -> None:
    said = error(tmp_path, '{limit: "ten"}')
    assert "cases[0].expect.args.limit: case 'triage': \"ten\" can never pass" in said
    assert "declares 'limit' with type integer" in said


def test_a_one_of_with_no_possible_alternative_says_so_plainly(tmp_path: Path) -> None:
    said = error(tmp_path, "{priority: {one_of: [critical, blocker]}}")
    assert "'triage': every alternative of one_of can never pass" in said, said


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        ("{limit: 5.0}", "type integer"),  # strict integers: a whole float is no integer
        ("{limit: true}", "type integer"),
        ("{limit: 0}", "minimum 1"),
        ("{limit: 51}", "maximum 50"),
        ("{kind: note}", 'const "ticket"'),
        ("{title: 'R2-D2'}", 'pattern "^[A-Za-z ]+$"'),
        ("{title: {equals: 'a title far longer than twenty'}}", "maxLength 20"),
        ("{priority: {one_of: [critical, blocker]}}", "enum ["),
        ("{priority: {regex: 'crit.*'}}", "enum ["),
        ("{priority: {contains: z}}", "enum ["),
        ("{priority: {type: integer}}", "enum ["),
        ("{limit: {regex: '[0-9]+'}}", "type integer"),
        ("{limit: {type: string}}", "type integer"),
        ("{limit: {range: [60, 90]}}", "minimum 1, maximum 50"),
        ("{title: {length: [30, 40]}}", "minLength null, maxLength 20"),
        ("{score: {each: {type: string}}}", "type number"),
        ("{labels: {each: {equals: feature}}}", "items enum"),
        ("{labels: {each: {regex: 'feat.*'}}}", "items enum"),
    ],
)
def test_every_kind_of_impossible_matcher(tmp_path: Path, args: str, rule: str) -> None:
    said = error(tmp_path, args)
    assert "can never pass" in said and rule in said, said


@pytest.mark.parametrize(
    "args",
    [
        "{priority: high, limit: 5, kind: ticket, title: A title}",
        "{priority: {one_of: [high, urgent]}}",
        "{priority: {regex: 'h.*'}}",
        "{priority: {contains: urg}}",
        "{priority: {type: string}}",
        "{limit: {range: [40, 90]}}",
        "{limit: {type: number}}",  # an integer is a number too
        "{score: {type: integer}}",
        "{tags: {each: {equals: bug}}}",
        "{title: {length: [1, 40]}}",
        # ignore_case is honoured: an enum value equal but for case, a pattern not held
        "{priority: {equals: HIGH, ignore_case: true}}",
        "{priority: {one_of: [Low, URGENT], ignore_case: true}}",
        "{priority: {regex: 'HI.*', ignore_case: true}}",
        "{title: {equals: 'a title', ignore_case: true}}",
        # format is an annotation for both the loader and the judge
        "{due: not a date}",
        "{priority: {any: true}, limit: {absent: true}}",
    ],
)
def test_what_some_allowed_value_satisfies_loads(tmp_path: Path, args: str) -> None:
    load(tmp_path, args)


@pytest.mark.parametrize(
    ("args", "doubt"),
    [
        (
            "{priority: {one_of: [critical, high]}}",
            'one_of alternative(s) "critical" (enum [',
        ),
        ("{priority: {optional: critical}}", "only a call that leaves 'priority' out can pass"),
        ("{tags: {each: {equals: feature}}}", "only an empty list can pass"),
    ],
)
def test_partly_impossible_matchers_are_warnings(tmp_path: Path, args: str, doubt: str) -> None:
    suite = load(tmp_path, args)
    (warning,) = suite.warnings
    assert warning.line == 10 and doubt in str(warning), str(warning)
    assert str(warning).startswith(f"{tmp_path / 'calls.yaml'}:10: cases[0].expect.args.")


def test_scripted_results_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    path = tmp_path / "calls.yaml"
    path.write_text(
        "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\ncases:\n"
        "  - id: loop\n    prompt: Open a ticket.\n"
        "    expect: {sequence: [{call: create_ticket, args: {priority: high}}]}\n"
        "    results:\n      - {call: create_ticket, args: {priority: critical}, returns: x}\n",
        encoding="utf-8",
    )
    assert not load_suite(path).warnings


def test_the_loader_and_the_judge_use_one_validator_and_neither_checks_format() -> None:
    assert strict_validator is tool_validator
    assert tool_validator(PARAMETERS) is tool_validator(json.loads(json.dumps(PARAMETERS)))
    assert schema_problem({"title": "T", "due": "not a date"}, PARAMETERS) is None
    assert schema_problem({"title": "T", "priority": "critical"}, PARAMETERS) == (
        '$.priority is not one of ["low", "medium", "high", "urgent"]'
    )
