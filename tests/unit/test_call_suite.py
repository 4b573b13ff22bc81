"""Loading call suites (judge: call) and linting their tools: suite/loader.py, suite/toollint.py."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.suite.loader import SuiteError, load_suite
from pytest_cardprobe.suite.toollint import lint_tools

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the project.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path from the root."}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run the test suite.",
            "parameters": {
                "type": "object",
                "properties": {"target": {"type": "string", "description": "A test path."}},
            },
        },
    },
]


def write_suite(tmp_path: Path, cases: str, head: str = "") -> Path:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    text = "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\n" + head
    text += "cases:\n" + textwrap.indent(textwrap.dedent(cases), "  ")
    path = tmp_path / "calls.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, cases: str, head: str = "") -> SuiteError:
    with pytest.raises(SuiteError) as info:
        load_suite(write_suite(tmp_path, cases, head))
    return info.value


GOOD = """\
- id: read
  prompt: Show me the README.
  expect: {call: read_file, args: {path: {regex: "(?i)readme.*"}}}
  canary: needs_tool
- id: chat
  prompt: What is a monad?
  expect: {no_call: true}
  canary: no_tool
- id: loop
  prompt: Read setup.cfg then run the tests.
  expect:
    sequence: [read_file, {call: run_tests}]
    final: {contains: passed, ignore_case: true}
  results:
    read_file: "[tool:pytest]"
    run_tests: {passed: 3, failed: 0}
  max_turns: 4
"""


class TestLoading:
    def test_a_good_call_suite(self, tmp_path: Path) -> None:
        suite = load_suite(write_suite(tmp_path, GOOD))
        assert suite.is_call_suite and suite.channels == ("call",)
        assert suite.tool_names == ["read_file", "run_tests"]
        assert suite.tools_file == (tmp_path / "tools.json").resolve()
        read, chat, loop = suite.cases
        assert (
            read.expect is not None and read.expect.kind == "call" and read.canary == "needs_tool"
        )
        assert chat.expect is not None and chat.expect.kind == "no_call" and chat.max_turns == 5
        assert loop.expect is not None and loop.expect.multi_turn and loop.max_turns == 4
        assert [r.content for r in loop.results] == ["[tool:pytest]", '{"failed": 0, "passed": 3}']

    def test_inline_tools_and_yaml_tools_file(self, tmp_path: Path) -> None:
        import yaml

        (tmp_path / "t.yaml").write_text(yaml.safe_dump(TOOLS), encoding="utf-8")
        path = tmp_path / "s.yaml"
        path.write_text(
            "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: t.yaml\n"
            "cases: [{id: a, prompt: hi, expect: {no_call: true}}]\n",
            encoding="utf-8",
        )
        assert load_suite(path).tool_names == ["read_file", "run_tests"]
        path.write_text(
            "cardprobe: 1\njudge: call\nconditions: [cold]\n"
            f"tools: {json.dumps(TOOLS)}\n"
            "cases: [{id: a, prompt: hi, expect: {no_call: true}}]\n",
            encoding="utf-8",
        )
        suite = load_suite(path)
        assert suite.tool_names == ["read_file", "run_tests"] and suite.tools_file is None

    @pytest.mark.parametrize(
        ("cases", "key", "words"),
        [
            (
                "- {id: a, prompt: p, expect: {call: read_file}, colour: red}\n",
                "cases[0].colour",
                "unknown key",
            ),
            (
                "- {id: a, prompt: p, expect: {call: read_file, args: {path: {regexp: x}}}}\n",
                "cases[0].expect.args.path.regexp",
                "unknown matcher 'regexp'; did you mean 'regex'?",
            ),
            (
                "- {id: a, prompt: p, expect: {call: read_file, no_call: true}}\n",
                "cases[0].expect.no_call",
                "two expectations",
            ),
            (
                "- {id: a, prompt: p, expect: {call: open_file}}\n",
                "cases[0].expect.call",
                "'open_file' is not a declared tool",
            ),
            (
                "- id: a\n  prompt: p\n  expect: {sequence: [read_file]}\n"
                "  results: {write_file: done}\n",
                "cases[0].results.write_file",
                "'write_file' is not a declared tool",
            ),
            (
                "- {id: a, prompt: p, expect: {call: read_file}, results: {read_file: x}}\n",
                "cases[0].results",
                "only a `sequence:` expectation",
            ),
            (
                "- {id: a, prompt: p, expect: {call: read_file, args: {path: {type: text}}}}\n",
                "cases[0].expect.args.path.type",
                "unknown type 'text'",
            ),
            (
                "- {id: a, prompt: p, expect: {call: read_file, args: {path: {range: [3, 1]}}}}\n",
                "cases[0].expect.args.path.range",
                "low <= high",
            ),
            (
                "- {id: a, prompt: p, expect: {call: read_file, args: {path: {regex: '('}}}}\n",
                "cases[0].expect.args.path.regex",
                "invalid regular expression",
            ),
            (
                "- {id: a, prompt: p, expect: {no_call: true}, canary: needs_tool}\n",
                "cases[0].canary",
                "a `no_tool` canary expects",
            ),
            (
                "- {id: a, prompt: p, expect: {sequence: [read_file, run_tests]}, max_turns: 1}\n",
                "cases[0].max_turns",
                "the sequence has 2 calls",
            ),
            (
                "- {id: a, prompt: p, expect: {no_call: true, final: {startswith: x}}}\n",
                "cases[0].expect.final.startswith",
                "unknown matcher 'startswith'",
            ),
            ("- {id: a, prompt: p, expect: {}}\n", "cases[0].expect", "missing the expectation"),
        ],
    )
    def test_mistakes_name_file_case_and_key(
        self, tmp_path: Path, cases: str, key: str, words: str
    ) -> None:
        err = error_of(tmp_path, cases)
        assert err.path.name == "calls.yaml" and err.key == key
        assert err.line is not None and err.line >= 6  # the case's line or the key's
        assert words in err.problem, err.problem

    def test_card_keys_in_a_call_suite_and_the_other_way(self, tmp_path: Path) -> None:
        err = error_of(tmp_path, GOOD, head="vocabulary: [TextBlock]\n")
        assert err.key == "vocabulary" and "card suites" in err.problem
        path = tmp_path / "card.yaml"
        path.write_text("cardprobe: 1\nprompts: {}\ntools: x.json\ncases: []\n", encoding="utf-8")
        with pytest.raises(SuiteError, match=r"tools: `tools` belongs to call suites"):
            load_suite(path)

    @pytest.mark.parametrize(
        ("head", "key", "words"),
        [
            ("seed_turn: {user: hi, card: {type: AdaptiveCard}}\n", "seed_turn", "card suites"),
            ("allow_unknown_types: true\n", "allow_unknown_types", "card suites"),
            ("channels: [retry]\n", "channels[0]", "retry"),
        ],
    )
    def test_card_arms_are_refused_in_a_call_suite(
        self, tmp_path: Path, head: str, key: str, words: str
    ) -> None:
        # The retry channel and the seeded/schema machinery shape card replies only.
        err = error_of(tmp_path, GOOD, head=head)
        assert err.key == key and words in err.problem, (err.key, err.problem)

    def test_seeded_and_schema_conditions_are_refused_in_a_call_suite(self, tmp_path: Path) -> None:
        path = write_suite(tmp_path, GOOD)
        path.write_text(
            path.read_text().replace("conditions: [cold]", "conditions: [cold, schema]")
        )
        with pytest.raises(SuiteError) as info:
            load_suite(path)
        assert info.value.key == "conditions[1]" and "schema" in info.value.problem

    @pytest.mark.parametrize(
        ("tools", "key", "words"),
        [
            ("{}", None, "not valid JSON|expected a list"),
            ("[1]", "$[0]", "expected a tool declaration"),
            (
                '[{"type": "function", "function": {"name": "a", "params": {}}}]',
                "$[0].function.params",
                "did you mean 'parameters'",
            ),
            (
                '[{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}]',  # noqa: E501
                "$[1].function.name",
                "declared twice",
            ),
            (
                '[{"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": "strin"}}}}}]',  # noqa: E501
                "$[0].function.parameters",
                "not a valid JSON Schema",
            ),
        ],
    )
    def test_bad_tools_file_is_named(
        self, tmp_path: Path, tools: str, key: str | None, words: str
    ) -> None:
        path = write_suite(tmp_path, GOOD)
        (tmp_path / "tools.json").write_text(tools, encoding="utf-8")
        with pytest.raises(SuiteError) as info:
            load_suite(path)
        assert info.value.path.name == "tools.json"
        if key:
            assert info.value.key == key
        import re

        assert re.search(words, info.value.problem), info.value.problem

    def test_missing_tools_file(self, tmp_path: Path) -> None:
        path = write_suite(tmp_path, GOOD)
        (tmp_path / "tools.json").unlink()
        with pytest.raises(SuiteError, match=r"calls.yaml:4: tools: tools file not found"):
            load_suite(path)


def fn(
    name: str, parameters: dict[str, Any] | None = None, description: str | None = "Does it."
) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": name,
        "parameters": parameters or {"type": "object", "properties": {}},
    }
    if description is not None:
        function["description"] = description
    return {"type": "function", "function": function}


def rules(tools: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f.rule, f.path) for f in lint_tools(tools, Path("tools.json"))]


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


class TestLint:
    def test_clean_tools_have_no_findings(self) -> None:
        assert rules(TOOLS) == []

    def test_tool_without_description(self) -> None:
        assert rules([fn("a", description=None)]) == [
            ("no-description", "$[0].function.description")
        ]

    def test_parameter_without_description(self) -> None:
        assert rules([fn("a", obj(x={"type": "string"}))]) == [
            ("no-description", "$[0].function.parameters.properties.x")
        ]

    def test_parameter_without_type(self) -> None:
        assert rules([fn("a", obj(x={"description": "what"}))]) == [
            ("no-type", "$[0].function.parameters.properties.x")
        ]
        assert rules([fn("a", obj(x={"description": "what", "enum": ["a"]}))]) == []

    @pytest.mark.parametrize(
        ("description", "flagged"),
        [
            ("The sort order: one of asc, desc.", True),
            ("Either `fast` or `full`.", True),
            ("Mode, 'fast' or 'full'.", True),
            ('Allowed values: "json", "text".', True),
            ("A path relative to the project root.", False),
            ("The file's name, e.g. 'README.md'.", False),
        ],
    )
    def test_string_listing_values_without_enum(self, description: str, flagged: bool) -> None:
        tools = [fn("a", obj(mode={"type": "string", "description": description}))]
        assert (
            ("values-without-enum", "$[0].function.parameters.properties.mode") in rules(tools)
        ) is flagged
        tools[0]["function"]["parameters"]["properties"]["mode"]["enum"] = ["x"]
        assert "values-without-enum" not in {r for r, _ in rules(tools)}

    def test_nesting_deeper_than_three_levels(self) -> None:
        leaf = {"type": "string", "description": "d"}
        deep = obj(
            a={
                **obj(b={**obj(c={**obj(d=leaf), "description": "c"}), "description": "b"}),
                "description": "a",
            }
        )
        found = rules([fn("t", deep)])
        assert found == [
            (
                "too-deep",
                "$[0].function.parameters.properties.a.properties.b.properties.c.properties.d",
            )
        ]
        three = obj(a={**obj(b={**obj(c=leaf), "description": "b"}), "description": "a"})
        assert rules([fn("t", three)]) == []

    def test_more_than_twenty_tools(self) -> None:
        assert rules([fn(f"t{i}") for i in range(20)]) == []
        assert rules([fn(f"t{i}") for i in range(21)]) == [("too-many-tools", "$")]

    @pytest.mark.parametrize("name", ["read file", "", "x" * 129, "ré", "a/b"])
    def test_bad_names(self, name: str) -> None:
        assert ("bad-name", "$[0].function.name") in rules([fn(name)])

    @pytest.mark.parametrize("name", ["code.search", "x" * 65, "x" * 128])
    def test_a_name_mcp_allows_is_a_portability_warning_strict_mode_keeps(self, name: str) -> None:
        # What an MCP server lists and an application sends: Ollama and llama.cpp take it,
        # strict OpenAI-compatible servers answer 400. A note, never an error.
        assert rules([fn(name)]) == [("portable-name", "$[0].function.name")]
        (finding,) = lint_tools([fn(name)], Path("t.json"))
        assert not finding.strict and "HTTP 400" in finding.message

    def test_required_names_an_undeclared_property(self) -> None:
        params = {**obj(path={"type": "string", "description": "p"}), "required": ["path", "file"]}
        assert rules([fn("a", params)]) == [
            ("required-undeclared", "$[0].function.parameters.required[1]")
        ]

    def test_finding_text_names_file_path_and_rule(self) -> None:
        (finding,) = lint_tools([fn("a", description=None)], Path("cases/tools/tools.json"))
        assert str(finding) == (
            "cases/tools/tools.json: $[0].function.description: tool 'a' has no description "
            "[no-description]"
        )


def test_expectation_mistakes_name_the_case_id(tmp_path: Path) -> None:
    err = error_of(
        tmp_path, GOOD + "- {id: late, prompt: p, expect: {call: read_file, calls: [x]}}\n"
    )
    assert err.key == "cases[3].expect.calls"
    assert err.problem.startswith("case 'late': two expectations")
    assert str(err).startswith(f"{tmp_path / 'calls.yaml'}:")


def test_json_schema_covers_call_suites() -> None:
    import jsonschema
    import yaml

    from pytest_cardprobe.suite.loader import SCHEMA_PATH

    root = Path(__file__).resolve().parents[2]
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    shipped = yaml.safe_load((root / "cases" / "tools.yaml").read_text())
    assert list(validator.iter_errors(shipped)) == []
    assert load_suite(root / "cases" / "tools.yaml").cases  # and the loader agrees
    for bad in (
        {"call": "read_file", "no_call": True},  # two expectations
        {"call": "read_file", "args": {"path": {"regexp": "x"}}},  # unknown matcher
        {"no_call": True, "ordered": True},  # ordered belongs to calls
    ):
        doc = {**shipped, "cases": [{"id": "a", "prompt": "p", "expect": bad}]}
        assert list(validator.iter_errors(doc)), bad
    card_keys = {**shipped, "vocabulary": ["TextBlock"]}
    assert list(validator.iter_errors(card_keys))
    for card_arm in ({"conditions": ["seeded"]}, {"channels": ["retry"]}, {"seed_turn": {}}):
        assert list(validator.iter_errors({**shipped, **card_arm})), card_arm


def test_shipped_tool_suite_shape() -> None:
    suite = load_suite(Path(__file__).resolve().parents[2] / "cases" / "tools.yaml")
    kinds = [c.expect.kind for c in suite.cases if c.expect]
    assert len(suite.cases) >= 24 and suite.conditions == ("cold", "history", "required")
    assert len(suite.tools) >= 6 and kinds.count("no_call") >= 6
    assert kinds.count("sequence") >= 4 and all(
        c.results for c in suite.cases if c.expect and c.expect.multi_turn
    )
    assert kinds.count("calls") >= 2
    assert [c.canary for c in suite.cases if c.canary].count("needs_tool") >= 2
    assert [c.canary for c in suite.cases if c.canary].count("no_tool") >= 2
    assert lint_tools(suite.tools, suite.tools_file or suite.path) == []
    # `-k call` / `-k cold` must select the channel and condition, not a case by accident.
    for case in suite.cases:
        assert not any(word in case.id for word in ("call", "cold", "history")), case.id
