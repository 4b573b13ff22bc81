"""Load-time usage errors of call suites and tools files: every message names the file, the
line, the case and the key, so a mistake costs a second at collection and not a run of
failing samples (issue 26 item 5, issue 23 item 2)."""

from __future__ import annotations

import json
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.judge.call import ModelTurn, judge_calls
from pytest_cardprobe.suite.calls import Matcher, parse_matcher
from pytest_cardprobe.suite.loader import SuiteError, load_suite
from pytest_cardprobe.suite.records import Case
from pytest_cardprobe.types import ToolCall

PARAMS = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "lines": {"type": "array"}},
    "required": ["path"],
}


def tools(parameters: Any = PARAMS, **extra: Any) -> list[dict[str, Any]]:
    read = {"name": "read_file", "description": "Read a file.", "parameters": parameters}
    return [
        {"type": "function", "function": read},
        {"type": "function", "function": {"name": "run_tests", "description": "Run.", **extra}},
    ]


def suite(tmp_path: Path, cases: str, head: str = "", tools_text: str | None = None) -> Path:
    (tmp_path / "tools.json").write_text(tools_text or json.dumps(tools()), encoding="utf-8")
    text = "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\n" + head
    text += "cases:\n" + textwrap.indent(textwrap.dedent(cases), "  ")
    path = tmp_path / "calls.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def refused(path: Path) -> SuiteError:
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return info.value


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of the first line of ``path`` that holds ``needle``."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(needle)


# --------------------------------------------------------------------------- arguments


def test_an_argument_the_tool_does_not_declare_is_a_typo_with_a_hint(tmp_path: Path) -> None:
    path = suite(tmp_path, "- id: readme\n  prompt: Show it.\n  expect:\n    call: read_file\n"
                 "    args: {pth: README.md}\n")  # fmt: skip
    error = refused(path)
    assert (error.path, error.key, error.line) == (
        path, "cases[0].expect.args.pth", line_of(path, "pth:")
    )  # fmt: skip
    assert error.problem == (
        "case 'readme': tool 'read_file' has no argument 'pth'; did you mean 'path'? "
        "(its arguments: path, lines)"
    )
    assert str(error).startswith(f"{path}:{error.line}: cases[0].expect.args.pth: case 'readme'")


@pytest.mark.parametrize(
    ("expect", "key"),
    [
        ("{calls: [{call: read_file, args: {file: x}}]}", "cases[0].expect.calls[0].args.file"),
        ("{sequence: [run_tests, {call: read_file, args: {file: x}}]}",
         "cases[0].expect.sequence[1].args.file"),
    ],
)  # fmt: skip
def test_arguments_are_checked_in_every_call_list(tmp_path: Path, expect: str, key: str) -> None:
    error = refused(suite(tmp_path, f"- {{id: a, prompt: p, expect: {expect}}}\n"))
    assert error.key == key and "has no argument 'file'" in error.problem
    assert error.problem.startswith("case 'a': ")


def test_scripted_results_arguments_are_checked_too(tmp_path: Path) -> None:
    path = suite(
        tmp_path,
        "- id: loop\n  prompt: p\n  expect: {sequence: [read_file]}\n  results:\n"
        "    - {call: read_file, args: {paht: {regex: x}}, returns: hi}\n",
    )
    error = refused(path)
    assert error.key == "cases[0].results[0].args.paht" and "did you mean 'path'?" in error.problem
    assert error.line == line_of(path, "paht")


def test_a_tool_without_properties_takes_no_arguments(tmp_path: Path) -> None:
    error = refused(
        suite(tmp_path, "- {id: a, prompt: p, expect: {call: run_tests, args: {x: 1}}}\n")
    )
    assert error.key == "cases[0].expect.args.x"
    assert "tool 'run_tests' declares no arguments" in error.problem
    assert "additionalProperties: true" in error.problem


def judged(case: Case, arguments: dict[str, Any], tools_list: Sequence[Any]) -> str:
    """The label the call judge gives ``case`` for one call of its tool with ``arguments``."""
    spec = case.expect.calls[0] if case.expect is not None else None
    assert spec is not None
    turn = ModelTurn("tool_calls", (ToolCall(spec.name, arguments),), "")
    return judge_calls([turn], case.expect, tools_list).label


@pytest.mark.parametrize(
    ("parameters", "refused_value"),
    [
        ({"type": "object", "additionalProperties": True}, None),
        ({"type": "object", "properties": {"y": {}}, "additionalProperties": {"type": "integer"}},
         "x"),
        ({"type": "object", "patternProperties": {"^x": {"type": "integer"}}}, "x"),
        ({"type": "object", "properties": {"y": {}}, "patternProperties": {"^x": {}}}, None),
        ({"type": "object", "allOf": [{"properties": {"x": {"type": "integer"}}}]}, "x"),
    ],
)  # fmt: skip
def test_a_tool_that_takes_other_arguments_may_be_given_them(
    tmp_path: Path, parameters: dict[str, Any], refused_value: str | None
) -> None:
    """What the loader lets a case name, the judge lets a model send; the schema that admits
    the name (``additionalProperties``, ``patternProperties``) then validates its value."""
    text = json.dumps(tools(parameters=parameters))
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {call: read_file, args: {x: 1}}}\n",
                 tools_text=text)  # fmt: skip
    loaded = load_suite(path)
    case = loaded.cases[0]
    assert judged(case, {"x": 1}, loaded.tools) == "ok read_file"
    label = judged(case, {"x": "one", **({} if refused_value else {"y": 1})}, loaded.tools)
    if refused_value:
        assert label == "bad_arguments read_file: $.x is not of type integer"
    else:
        assert label.startswith("wrong_arguments read_file: $.x got")


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "object"},
        None,  # no `parameters` key at all
        {"type": "object", "properties": {}},
        {"type": "object", "properties": {"y": {}}, "patternProperties": {"^z": {}}},
        {"type": "object", "properties": {"y": {}}, "additionalProperties": False},
    ],
)
def test_a_tool_that_takes_no_such_argument_refuses_it_at_load_and_when_judged(
    tmp_path: Path, parameters: dict[str, Any] | None
) -> None:
    """No `properties` (and nothing else admitting the name) means no such argument, both
    when a case names it and when a model sends it: JSON Schema alone would take it."""
    declared = tools(parameters=parameters or {})
    if parameters is None:
        del declared[0]["function"]["parameters"]
    text = json.dumps(declared)
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {call: read_file, args: {x: 1}}}\n",
                 tools_text=text)  # fmt: skip
    error = refused(path)
    assert error.key == "cases[0].expect.args.x"
    assert "read_file" in error.problem and "'x'" in error.problem
    ok = suite(tmp_path, "- {id: a, prompt: p, expect: {call: read_file}}\n", tools_text=text)
    loaded = load_suite(ok)
    assert judged(loaded.cases[0], {}, loaded.tools) == "ok read_file"
    assert judged(loaded.cases[0], {"x": 1}, loaded.tools) == (
        "bad_arguments read_file: $.x is not a declared argument (unknown_argument)"
    )


@pytest.mark.parametrize(
    ("matcher", "expect"),
    [
        ("{absent: true}", "{call: read_file, args: {path: %s}}"),
        ("{absent: true}", "{sequence: [{call: read_file, args: {path: %s}}]}"),
        ("{absent: true}", "{calls: [run_tests, {call: read_file, args: {path: %s}}]}"),
    ],
)
def test_a_required_argument_cannot_be_absent(tmp_path: Path, matcher: str, expect: str) -> None:
    path = suite(tmp_path, f"- id: quiet\n  prompt: p\n  expect: {expect % matcher}\n")
    error = refused(path)
    assert error.key.startswith("cases[0].expect.") and error.key.endswith(".args.path")
    assert error.line == line_of(path, "absent")
    assert error.problem == (
        "case 'quiet': tool 'read_file' requires 'path' (its parameters list it in `required`), "
        "so `absent: true` could never pass: a call without 'path' fails as bad_arguments "
        "before any matcher is asked"
    )


def test_an_absent_optional_argument_and_a_scripted_result_for_a_bad_call_load(
    tmp_path: Path,
) -> None:
    """``lines`` is not required, so it may be absent; a scripted result may answer a call
    that left ``path`` out (the model's mistake still gets an answer in a loop)."""
    path = suite(
        tmp_path,
        "- id: a\n  prompt: p\n  expect: {sequence: [{call: read_file, args: {lines: "
        "{absent: true}}}]}\n  results:\n    - {call: read_file, args: {path: {absent: true}}, "
        "returns: 'path is required'}\n",
    )
    case = load_suite(path).cases[0]
    assert case.expect is not None and case.expect.calls[0].args[0][1].kind == "absent"
    assert case.results[0].args[0][1].kind == "absent"


# --------------------------------------------------------------------------- tool schemas


def test_a_dangling_ref_in_a_tool_schema_is_refused_at_load(tmp_path: Path) -> None:
    parameters = {"type": "object", "properties": {"x": {"$ref": "#/$defs/nope"}}}
    text = json.dumps(tools(parameters=parameters), indent=2)
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n", tools_text=text)
    error = refused(path)
    assert error.path == tmp_path / "tools.json"
    assert error.key == "$[0].function.parameters.properties.x.$ref"
    assert error.line == line_of(error.path, '"$ref"')
    assert "'#/$defs/nope' does not resolve" in error.problem


@pytest.mark.parametrize("name", ["default", "enum", "const", "examples", "$ref"])
@pytest.mark.parametrize("under", ["properties", "patternProperties", "$defs"])
def test_a_dangling_ref_is_refused_whatever_its_property_is_called(
    tmp_path: Path, name: str, under: str
) -> None:
    """A property may be called ``default`` or ``enum``: under ``properties`` (and the other
    maps of names to schemas) that is a name, not the keyword whose value is data."""
    parameters: dict[str, Any] = {"type": "object", under: {name: {"$ref": "#/$defs/nope"}}}
    if under == "$defs":
        parameters["properties"] = {"x": {"$ref": f"#/$defs/{name}"}}
    text = json.dumps(tools(parameters=parameters), indent=2)
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n", tools_text=text)
    error = refused(path)
    assert error.key == f"$[0].function.parameters.{under}.{name}.$ref"
    assert "'#/$defs/nope' does not resolve" in error.problem


@pytest.mark.parametrize(
    "draft",
    ["https://json-schema.org/draft-04/schema#", "http://example.com/nope", 4, None],
)
def test_a_schema_draft_nobody_knows_is_refused_at_load(tmp_path: Path, draft: Any) -> None:
    """An unknown ``$schema`` would be checked as some other draft, silently (jsonschema only
    warns, naming nothing): a usage error naming file, line, tool and the known drafts."""
    parameters = {"$schema": draft, "type": "object", "properties": {"n": {"type": "integer"}}}
    text = json.dumps(tools(parameters=parameters), indent=2)
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n", tools_text=text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no DeprecationWarning in place of the message
        error = refused(path)
    assert error.path == tmp_path / "tools.json"
    assert error.key == "$[0].function.parameters.$schema"
    assert error.line == line_of(error.path, '"$schema"')
    assert error.problem.startswith("tool 'read_file': $schema ")
    assert "is not a JSON Schema draft cardprobe knows" in error.problem
    assert "http://json-schema.org/draft-04/schema#" in error.problem
    assert "https://json-schema.org/draft/2020-12/schema" in error.problem


@pytest.mark.parametrize(
    "draft",
    ["http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-07/schema",
     "https://json-schema.org/draft/2020-12/schema"],
)  # fmt: skip
def test_a_known_schema_draft_loads(tmp_path: Path, draft: str) -> None:
    parameters = {"$schema": draft, "type": "object", "properties": {"n": {"type": "integer"}}}
    text = json.dumps(tools(parameters=parameters))
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n", tools_text=text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_suite(path).tools[0]["function"]["parameters"]["$schema"] == draft


def test_a_ref_to_another_document_is_not_fetched(tmp_path: Path) -> None:
    parameters = {"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}}
    text = json.dumps(tools(parameters=parameters))
    error = refused(suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n",
                          tools_text=text))  # fmt: skip
    assert "nothing is fetched" in error.problem


def test_refs_that_resolve_load(tmp_path: Path) -> None:
    parameters = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/name"}, "y": {"$ref": "#/properties/x"}},
        "$defs": {"name": {"type": "string", "enum": [{"$ref": "data, not a reference"}]}},
    }
    text = json.dumps(tools(parameters=parameters))
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n", tools_text=text)
    assert load_suite(path).tools[0]["function"]["parameters"] == parameters


def test_an_invalid_tool_schema_names_where(tmp_path: Path) -> None:
    parameters = {"type": "object", "properties": {"x": {"type": "strin"}}}
    text = json.dumps(tools(parameters=parameters), indent=2)
    error = refused(suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n",
                          tools_text=text))  # fmt: skip
    assert error.key == "$[0].function.parameters"
    assert error.line == line_of(error.path, '"parameters"')
    assert "not a valid JSON Schema at .properties.x.type" in error.problem


# --------------------------------------------------------------------------- turn limits


def test_a_sequence_needs_a_turn_more_than_it_has_calls(tmp_path: Path) -> None:
    cases = "- {id: two, prompt: p, expect: {sequence: [read_file, run_tests]}, max_turns: %d}\n"
    path = suite(tmp_path, cases % 2)
    error = refused(path)
    assert (error.key, error.line) == ("cases[0].max_turns", line_of(path, "id: two"))
    assert error.problem == (
        "case 'two': the sequence has 2 calls; made one per turn, they and the final answer "
        "take 3 turns, but max_turns: 2 stops the tool loop after 2, which leaves no turn for "
        "the answer; give max_turns: 3 or more"
    )
    assert load_suite(suite(tmp_path, cases % 3)).cases[0].max_turns == 3


def test_the_turn_limit_message_is_true_of_a_model_that_calls_in_parallel() -> None:
    """The rule is kept (a limit only a model calling in parallel can meet is a mistake),
    but it is no "could never pass": both calls in one turn, then the answer, passes."""
    from pytest_cardprobe.suite.calls import CallSpec, Expectation

    both = (ToolCall("read_file", {"path": "a"}), ToolCall("run_tests", {}))
    turns = [ModelTurn("tool_calls", both, ""), ModelTurn("content", (), "done")]
    expect = Expectation("sequence", (CallSpec("read_file"), CallSpec("run_tests")), True)
    assert judge_calls(turns, expect, tools(), max_turns=2).label == "ok read_file > run_tests"


def test_the_suites_turn_limit_is_checked_against_each_sequence(tmp_path: Path) -> None:
    path = suite(tmp_path, "- {id: two, prompt: p, expect: {sequence: [read_file, run_tests]}}\n",
                 head="max_turns: 2\n")  # fmt: skip
    error = refused(path)
    assert error.key == "cases[0].expect.sequence"
    assert "but the suite's max_turns: 2 (line 5) stops the tool loop after 2" in error.problem


def test_the_default_turn_limit_leaves_room_for_four_calls(tmp_path: Path) -> None:
    five = "[read_file, run_tests, read_file, run_tests, read_file]"
    error = refused(suite(tmp_path, f"- {{id: long, prompt: p, expect: {{sequence: {five}}}}}\n"))
    assert "but the default max_turns: 5 stops the tool loop after 5" in error.problem
    four = "[read_file, run_tests, read_file, run_tests]"
    assert load_suite(suite(tmp_path, f"- {{id: ok, prompt: p, expect: {{sequence: {four}}}}}\n"))


# --------------------------------------------------------------------------- finite numbers


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-2.5E+400"])
def test_a_tools_json_file_with_a_number_json_cannot_carry_is_refused(
    tmp_path: Path, number: str
) -> None:
    text = json.dumps(tools(), indent=2).replace(
        '"type": "string"', f'"type": "string", "minimum": {number}'
    )
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {call: read_file}}\n", tools_text=text)
    error = refused(path)
    assert error.path == tmp_path / "tools.json"
    assert error.key == "$[0].function.parameters.properties.path.minimum"
    assert error.line == line_of(error.path, '"minimum"')
    assert error.problem.startswith(f"{number} is not a finite number")


def test_a_tools_yaml_file_with_nan_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tools.yaml").write_text(
        "- type: function\n  function:\n    name: f\n    parameters:\n      type: object\n"
        "      properties:\n        n: {type: number, maximum: .nan}\n",
        encoding="utf-8",
    )
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n")
    path.write_text(path.read_text().replace("tools.json", "tools.yaml"))
    error = refused(path)
    assert (error.path.name, error.key, error.line) == (
        "tools.yaml", "$[0].function.parameters.properties.n.maximum", 7
    )  # fmt: skip
    assert "not a finite number" in error.problem


@pytest.mark.parametrize(
    ("case", "key"),
    [
        ("- {id: a, prompt: p, expect: {call: read_file, args: {lines: {range: [.nan, 3]}}}}",
         "cases[0].expect.args.lines.range[0]"),
        ("- {id: a, prompt: p, expect: {call: read_file, args: {path: .inf}}}",
         "cases[0].expect.args.path"),
        ("- {id: a, prompt: p, expect: {call: read_file, args: {path: {one_of: [1, -.inf]}}}}",
         "cases[0].expect.args.path.one_of[1]"),
        ("- id: a\n  prompt: p\n  expect: {sequence: [read_file]}\n"
         "  results: {read_file: {size: .nan}}", "cases[0].results.read_file.size"),
        ("- id: a\n  prompt: p\n  expect: {sequence: [read_file]}\n"
         "  results: [{call: read_file, returns: [1.0e+999]}]", "cases[0].results[0].returns[0]"),
    ],
)  # fmt: skip
def test_nan_and_infinity_anywhere_in_a_call_suite_are_refused(
    tmp_path: Path, case: str, key: str
) -> None:
    path = suite(tmp_path, case + "\n")
    error = refused(path)
    assert error.key == key and error.line is not None and error.line >= 5
    assert "is not a finite number" in error.problem


def test_inline_tools_and_options_are_held_to_finite_numbers(tmp_path: Path) -> None:
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n",
                 head="options: {temperature: -.Inf}\n")  # fmt: skip
    error = refused(path)
    assert (error.key, error.line) == ("options.temperature", 5)


# --------------------------------------------------------------------------- matchers


def no_fail(key: Any, problem: str) -> Any:
    raise AssertionError(f"{key}: {problem}")


@pytest.mark.parametrize(
    ("written", "record"),
    [
        ({"absent": True}, Matcher("absent", None)),
        ({"optional": "celsius"}, Matcher("optional", Matcher("equals", "celsius"))),
        ({"optional": {"one_of": ["c", "f"]}}, Matcher("optional", Matcher("one_of", ["c", "f"]))),
        ({"each": {"type": "string"}}, Matcher("each", Matcher("type", "string"))),
        ({"length": [1, 3]}, Matcher("length", (1, 3))),
        ({"length": [0, 0]}, Matcher("length", (0, 0))),
        ({"optional": "Celsius", "ignore_case": True},
         Matcher("optional", Matcher("equals", "Celsius", True), True)),
        ({"each": {"regex": "[a-z]+"}, "ignore_case": True},
         Matcher("each", Matcher("regex", "[a-z]+", True), True)),
        ({"optional": {"each": "x"}}, Matcher("optional", Matcher("each", Matcher("equals", "x")))),
        ({"equals": ["A", "B"], "ignore_case": True}, Matcher("equals", ["A", "B"], True)),
    ],
)  # fmt: skip
def test_the_new_matchers_parse_to_their_records(written: Any, record: Matcher) -> None:
    parsed = parse_matcher(written, ("args", "x"), no_fail)
    assert (parsed.kind, parsed.value, parsed.ignore_case) == (
        record.kind, record.value, record.ignore_case
    )  # fmt: skip


@pytest.mark.parametrize(
    ("written", "key", "words"),
    [
        ({"absent": False}, ("args", "x", "absent"), "expected `absent: true`, got false"),
        ({"length": [3, 1]}, ("args", "x", "length"), "low <= high"),
        ({"length": [-1, 2]}, ("args", "x", "length", 0), "a whole number >= 0"),
        ({"length": [1.5, 2]}, ("args", "x", "length", 0), "a whole number >= 0"),
        ({"length": [1]}, ("args", "x", "length"), "two whole numbers"),
        ({"length": "3"}, ("args", "x", "length"), "two whole numbers"),
        ({"optional": {"absent": True}}, ("args", "x", "optional"), "cannot sit inside"),
        ({"each": {"optional": 1}}, ("args", "x", "each"), "cannot sit inside"),
        ({"optional": {"range": [1, 2]}, "ignore_case": True}, ("args", "x", "optional", "range"),
         "ignore_case (given beside the enclosing matcher) does not apply to range"),
        ({"length": [1, 2], "ignore_case": True}, ("args", "x", "ignore_case"),
         "ignore_case applies to equals, one_of, regex, contains, optional, each only"),
        ({"opional": 1}, ("args", "x", "opional"),
         "unknown matcher 'opional'; did you mean 'optional'?"),
        ({"optional": 1, "each": 2}, ("args", "x", "each"), "two matchers (optional and each)"),
        ({"ignore_case": True}, ("args", "x"), "missing the matcher: give one of equals"),
        ({"each": {"regex": "("}}, ("args", "x", "each", "regex"), "invalid regular expression"),
    ],
)  # fmt: skip
def test_bad_spellings_of_matchers_are_clear_usage_errors(
    written: Any, key: tuple[Any, ...], words: str
) -> None:
    seen: list[tuple[Any, str]] = []

    def fail(at: Any, problem: str) -> Any:
        seen.append((at, problem))
        raise SuiteError("s.yaml", problem)

    with pytest.raises(SuiteError):
        parse_matcher(written, ("args", "x"), fail)
    ((at, problem),) = seen
    assert at == key and words in problem, (at, problem)


def test_a_matcher_mistake_in_a_suite_names_file_line_case_and_key(tmp_path: Path) -> None:
    path = suite(tmp_path, "- id: ccless\n  prompt: p\n  expect:\n    call: read_file\n"
                 "    args:\n      lines: {absent: no}\n")  # fmt: skip
    error = refused(path)
    assert (error.key, error.line) == ("cases[0].expect.args.lines.absent", line_of(path, "absent"))
    assert error.problem == "case 'ccless': expected `absent: true`, got false"


# --------------------------------------------------------------------------- tools files


@pytest.mark.parametrize(
    ("name", "text", "line", "key", "words"),
    [
        ("tools.yaml", "# nothing yet\n", None, None, "a tools file holds a list"),
        ("tools.json", '[\n  {"type": "function",\n   "type": "function"}]', 3, "$[0].type",
         "duplicate key 'type' (first defined on line 2)"),
        ("tools.json", '[\n  {"type": "function",}\n]', 2, None, "not valid JSON"),
        ("tools.json", '{"tools": []}', 1, "$", "expected a list of tool declarations"),
        ("tools.json", '[\n {"type": "function",\n  "max": ' + "9" * 5000 + "}]", 3, None,
         "a number of 5,000 digits, more than the 4,300 a number may have"),
        ("tools.yaml", "- type: function\n  function: {name: a}\n- type: function\n"
         "  function: {name: a}\n", 4, "$[1].function.name", "tool 'a' is declared twice"),
    ],
)  # fmt: skip
def test_a_bad_tools_file_names_its_line_and_json_path(
    tmp_path: Path, name: str, text: str, line: int | None, key: str | None, words: str
) -> None:
    path = suite(tmp_path, "- {id: a, prompt: p, expect: {no_call: true}}\n")
    path.write_text(path.read_text().replace("tools.json", name))
    (tmp_path / name).write_text(text, encoding="utf-8")
    error = refused(path)
    assert (error.path.name, error.line, error.key) == (name, line, key)
    assert words in error.problem, error.problem
