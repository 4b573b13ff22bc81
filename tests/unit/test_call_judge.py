"""The call judge (pytest_cardprobe.judge.call): matchers, classes, schema paths, labels."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from pytest_cardprobe.judge.call import (
    ModelTurn,
    json_equal,
    judge_calls,
    match,
    schema_problem,
    scripted_result,
)
from pytest_cardprobe.judge.routing import turn_of
from pytest_cardprobe.suite.calls import (
    CallSpec,
    Expectation,
    FinalCheck,
    Matcher,
    ScriptedResult,
    parse_matcher,
)
from pytest_cardprobe.types import ChatReply, FailureClass, ToolCall
from pytest_cardprobe.wire.ollama import parse_ollama_reply
from pytest_cardprobe.wire.openai import parse_openai_reply


def tool(
    name: str, properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required or [],
            },
        },
    }


TOOLS = [
    tool(
        "read_file",
        {"path": {"type": "string"}, "lines": {"type": "integer", "minimum": 1}},
        ["path"],
    ),
    tool("run_shell", {"command": {"type": "string"}}, ["command"]),
    tool(
        "run_tests",
        {"target": {"type": "string"}, "mode": {"type": "string", "enum": ["fast", "full"]}},
    ),
    tool(
        "write_file",
        {
            "path": {"type": "string"},
            "meta": {
                "type": "object",
                "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
            },
        },
        ["path"],
    ),
]


def turn(*calls: ToolCall, content: str = "", route: str = "tool_calls") -> ModelTurn:
    return ModelTurn(route if calls else "content", calls, content)


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name, args)


def m(value: Any) -> Matcher:
    def fail(key: Any, problem: str) -> NoReturn:
        raise AssertionError(problem)

    return parse_matcher(value, ("args", "x"), fail)


def expect_call(name: str, **args: Any) -> Expectation:
    return Expectation("call", (CallSpec(name, tuple((k, m(v)) for k, v in args.items())),))


# --------------------------------------------------------------------------- matchers


class TestMatchers:
    @pytest.mark.parametrize(
        ("matcher", "value", "ok"),
        [
            ("README.md", "README.md", True),
            ("README.md", "readme.md", False),
            (3, 3.0, True),  # JSON-normalised numbers
            (3.0, 3, True),
            (1, True, False),  # a boolean is not a number
            (True, 1, False),
            ("1", 1, False),
            ({"equals": {"a": [1, 2.0]}}, {"a": [1.0, 2]}, True),
            ({"equals": {"a": 1}}, {"a": 1, "b": 2}, False),
            ({"equals": "ReadMe.MD", "ignore_case": True}, "readme.md", True),
        ],
    )
    def test_literal(self, matcher: Any, value: Any, ok: bool) -> None:
        assert match(m(matcher), value) is ok

    @pytest.mark.parametrize(
        ("matcher", "value", "ok"),
        [
            ({"one_of": ["fast", "full"]}, "full", True),
            ({"one_of": ["fast", "full"]}, "Full", False),
            ({"one_of": ["fast", "full"], "ignore_case": True}, "Full", True),
            ({"one_of": [1, 2]}, 2.0, True),
            ({"one_of": [1, 2]}, 3, False),
        ],
    )
    def test_one_of(self, matcher: Any, value: Any, ok: bool) -> None:
        assert match(m(matcher), value) is ok

    @pytest.mark.parametrize(
        ("matcher", "value", "ok"),
        [
            ({"regex": r"src/.*\.py"}, "src/app.py", True),
            ({"regex": r"src/.*\.py"}, "./src/app.py", False),  # full match, not search
            ({"regex": r"src/.*\.py"}, "src/app.pyc", False),
            ({"regex": r"readme\.md"}, "README.md", False),
            ({"regex": r"readme\.md", "ignore_case": True}, "README.md", True),
            ({"regex": r"\d+"}, 12, False),  # only strings match a regex
        ],
    )
    def test_regex_is_a_full_match(self, matcher: Any, value: Any, ok: bool) -> None:
        assert match(m(matcher), value) is ok

    @pytest.mark.parametrize(
        ("matcher", "value", "ok"),
        [
            ({"contains": "TODO"}, "find every TODO here", True),
            ({"contains": "todo"}, "find every TODO here", False),
            ({"contains": "todo", "ignore_case": True}, "find every TODO here", True),
            ({"contains": "a.py"}, ["a.py", "b.py"], True),
            ({"contains": 2}, [1, 2.0], True),
            ({"contains": "c.py"}, ["a.py"], False),
            ({"contains": "x"}, 5, False),
        ],
    )
    def test_contains(self, matcher: Any, value: Any, ok: bool) -> None:
        assert match(m(matcher), value) is ok

    @pytest.mark.parametrize(
        ("name", "value", "ok"),
        [
            ("string", "x", True),
            ("string", 1, False),
            ("integer", 3, True),
            ("integer", 3.0, False),  # strict: a float is not a JSON integer
            ("number", 3, True),
            ("integer", 3.5, False),
            ("integer", True, False),
            ("number", 3.5, True),
            ("number", "3", False),
            ("boolean", False, True),
            ("boolean", 0, False),
            ("array", [], True),
            ("object", {}, True),
            ("object", [], False),
            ("null", None, True),
        ],
    )
    def test_type(self, name: str, value: Any, ok: bool) -> None:
        assert match(m({"type": name}), value) is ok

    @pytest.mark.parametrize(
        ("value", "ok"),
        [(1, True), (10, True), (5.5, True), (0, False), (11, False), (True, False), ("5", False)],
    )
    def test_range_is_inclusive_and_numeric(self, value: Any, ok: bool) -> None:
        assert match(m({"range": [1, 10]}), value) is ok

    @pytest.mark.parametrize("value", [None, 0, "", [], {}, "anything"])
    def test_any_accepts_every_value(self, value: Any) -> None:
        assert match(m({"any": True}), value)

    def test_json_equal_nested(self) -> None:
        assert json_equal({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]})
        assert not json_equal([1, 2], [2, 1])
        assert not json_equal({"a": False}, {"a": 0})


# --------------------------------------------------------------------------- classes


class TestSingleCall:
    def test_ok(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="README.md"))], expect_call("read_file"), TOOLS
        )
        assert v.passed and v.label == "ok read_file" and v.failure is None

    def test_declined(self) -> None:
        v = judge_calls([turn(content="I cannot read files.")], expect_call("read_file"), TOOLS)
        assert (v.passed, v.failure, v.label) == (
            False,
            FailureClass.DECLINED,
            "declined want read_file",
        )

    def test_wrong_tool(self) -> None:
        v = judge_calls(
            [turn(call("run_shell", command="cat README.md"))], expect_call("read_file"), TOOLS
        )
        assert v.failure is FailureClass.WRONG_TOOL
        assert v.label == "wrong_tool got run_shell want read_file"

    def test_unknown_tool(self) -> None:
        v = judge_calls([turn(call("open_file", path="x"))], expect_call("read_file"), TOOLS)
        assert v.failure is FailureClass.UNKNOWN_TOOL
        assert v.label == "unknown_tool got open_file"

    def test_a_call_beside_the_expected_one_is_an_extra_call(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="a"), call("run_shell", command="ls"))],
            expect_call("read_file"),
            TOOLS,
        )
        assert v.failure is FailureClass.EXTRA_CALL
        assert v.label == "extra_call run_shell"

    def test_the_expected_call_twice_is_an_extra_call(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="a"), call("read_file", path="b"))],
            expect_call("read_file"),
            TOOLS,
        )
        assert v.failure is FailureClass.EXTRA_CALL
        assert v.label == "extra_call read_file: got 2 calls, want 1"

    def test_bad_arguments_type_names_path_and_rule(self) -> None:
        v = judge_calls([turn(call("read_file", path=12))], expect_call("read_file"), TOOLS)
        assert v.failure is FailureClass.BAD_ARGUMENTS
        assert v.label == "bad_arguments read_file: $.path is not of type string"

    def test_bad_arguments_missing_required(self) -> None:
        v = judge_calls([turn(call("read_file", lines=3))], expect_call("read_file"), TOOLS)
        assert v.label == "bad_arguments read_file: $.path is required"

    def test_unknown_argument(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="a", encoding="utf-8"))], expect_call("read_file"), TOOLS
        )
        assert v.failure is FailureClass.BAD_ARGUMENTS
        assert "$.encoding is not a declared argument (unknown_argument)" in v.label

    def test_wrong_arguments_when_schema_valid_but_matcher_misses(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="docs/x.md"))],
            expect_call("read_file", path={"regex": r"README\.md"}),
            TOOLS,
        )
        assert v.failure is FailureClass.WRONG_ARGUMENTS
        assert (
            v.label
            == "wrong_arguments read_file: $.path got \"docs/x.md\" want regex 'README\\\\.md'"
        )

    def test_matched_argument_missing_is_wrong_arguments(self) -> None:
        v = judge_calls(
            [turn(call("run_tests"))], expect_call("run_tests", target={"any": True}), TOOLS
        )
        assert v.failure is FailureClass.WRONG_ARGUMENTS
        assert "$.target missing" in v.label

    def test_arguments_not_named_in_args_are_free(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="README.md", lines=40))],
            expect_call("read_file", path="README.md"),
            TOOLS,
        )
        assert v.passed

    def test_malformed_arguments(self) -> None:
        bad = ToolCall("read_file", {}, "arguments are not valid JSON: Expecting value")
        v = judge_calls([turn(bad)], expect_call("read_file"), TOOLS)
        assert v.failure is FailureClass.MALFORMED
        assert v.label.startswith("malformed read_file: arguments are not valid JSON")

    def test_refused_text_call_is_malformed(self) -> None:
        t = ModelTurn("content", (), "<tool_call>{...", refused="read_file: invalid JSON")
        v = judge_calls([t], expect_call("read_file"), TOOLS)
        assert v.failure is FailureClass.MALFORMED

    def test_model_text_in_labels_is_one_short_line(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="a\nb" + "x" * 300))],
            expect_call("read_file", path="README.md"),
            TOOLS,
        )
        assert "\n" not in v.label and len(v.label) <= 160


class TestSchemaPaths:
    @pytest.mark.parametrize(
        ("name", "args", "want"),
        [
            ("read_file", {"path": "a", "lines": 0}, "$.lines fails minimum 1"),
            ("read_file", {"path": "a", "lines": "3"}, "$.lines is not of type integer"),
            ("run_tests", {"mode": "quick"}, '$.mode is not one of ["fast", "full"]'),
            (
                "write_file",
                {"path": "a", "meta": {"tags": ["x", 3]}},
                "$.meta.tags[1] is not of type string",
            ),
            ("write_file", {"path": "a", "meta": []}, "$.meta is not of type object"),
        ],
    )
    def test_rule_and_json_path(self, name: str, args: dict[str, Any], want: str) -> None:
        params = next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)
        assert schema_problem(args, params) == want

    def test_additional_properties_false_inside(self) -> None:
        params = {
            "type": "object",
            "properties": {
                "opts": {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
            },
        }
        assert schema_problem({"opts": {"b": 1}}, params) == (
            "$.opts.b is not allowed (additionalProperties)"
        )

    @pytest.mark.parametrize(
        ("params", "admitted"),
        [
            ({}, False),
            ({"type": "object"}, False),
            ({"type": "object", "properties": {}}, False),
            ({"type": "object", "properties": {"a": {}}}, False),
            ({"type": "object", "additionalProperties": True}, True),
            ({"type": "object", "additionalProperties": {"type": "string"}}, True),
            ({"type": "object", "additionalProperties": False}, False),
            ({"type": "object", "patternProperties": {"^ex": {}}}, True),
            ({"type": "object", "patternProperties": {"^zz": {}}}, False),
            ({"type": "object", "anyOf": [{"properties": {"extra": {}}}]}, True),
        ],
    )
    def test_an_argument_is_declared_by_the_loaders_rule(
        self, params: dict[str, Any], admitted: bool
    ) -> None:
        """The judge refuses exactly the names the loader refuses in ``args:``."""
        from pytest_cardprobe.suite.calls import admits

        problem = schema_problem({"extra": "v"}, params)
        assert admits(params, "extra") is admitted
        if admitted:
            assert problem is None
        else:
            assert problem == "$.extra is not a declared argument (unknown_argument)"

    def test_an_admitted_argument_is_validated_by_the_schema_that_admits_it(self) -> None:
        params = {"type": "object", "patternProperties": {"^n_": {"type": "integer"}}}
        assert schema_problem({"n_a": 3}, params) is None
        assert schema_problem({"n_a": 3.0}, params) == (
            "$.n_a 3.0 is a float, the tool declares integer"
        )

    def test_valid_arguments_pass(self) -> None:
        params = TOOLS[0]["function"]["parameters"]
        assert schema_problem({"path": "a", "lines": 3}, params) is None


class TestSeveralCalls:
    both = Expectation(
        "calls",
        (
            CallSpec("read_file", (("path", m("a.py")),)),
            CallSpec("read_file", (("path", m("b.py")),)),
        ),
    )

    def test_order_insensitive_by_default(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="b.py"), call("read_file", path="a.py"))], self.both, TOOLS
        )
        assert v.passed and v.label == "ok read_file, read_file"

    def test_ordered_needs_the_order(self) -> None:
        ordered = Expectation("calls", (CallSpec("read_file"), CallSpec("run_tests")), ordered=True)
        v = judge_calls([turn(call("run_tests"), call("read_file", path="a"))], ordered, TOOLS)
        assert v.failure is FailureClass.WRONG_TOOL and v.label.endswith("in order")
        v = judge_calls([turn(call("read_file", path="a"), call("run_tests"))], ordered, TOOLS)
        assert v.passed

    def test_a_dropped_parallel_call_is_a_missing_call(self) -> None:
        v = judge_calls([turn(call("read_file", path="a.py"))], self.both, TOOLS)
        assert v.failure is FailureClass.MISSING_CALL
        assert v.label == "missing_call read_file: got 1 of 2 calls"

    def test_a_name_in_place_of_another_is_wrong_tool(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="a.py"), call("run_shell", command="cat b.py"))],
            self.both,
            TOOLS,
        )
        assert v.failure is FailureClass.WRONG_TOOL
        assert v.label == "wrong_tool got read_file, run_shell want read_file, read_file"

    def test_several_names_missing_are_each_counted(self) -> None:
        e = Expectation(
            "calls", (CallSpec("run_tests"), CallSpec("read_file"), CallSpec("read_file"))
        )
        v = judge_calls([turn(call("read_file", path="a.py"))], e, TOOLS)
        assert v.label == "missing_call run_tests: got 0 of 1 calls; read_file: got 1 of 2 calls"

    def test_arguments_that_fit_no_pairing(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="a.py"), call("read_file", path="a.py"))], self.both, TOOLS
        )
        assert v.failure is FailureClass.WRONG_ARGUMENTS


class TestNoCall:
    def test_prose_passes(self) -> None:
        v = judge_calls([turn(content="Paris.")], Expectation("no_call"), TOOLS)
        assert v.passed and v.label == "ok no_call"

    def test_any_call_is_over_call(self) -> None:
        v = judge_calls([turn(call("run_shell", command="date"))], Expectation("no_call"), TOOLS)
        assert v.failure is FailureClass.OVER_CALL and v.label == "over_call got run_shell"

    def test_final_text(self) -> None:
        e = Expectation("no_call", final=(FinalCheck("contains", "Paris"),))
        assert not judge_calls([turn(content="Lyon")], e, TOOLS).passed
        assert judge_calls([turn(content="It is Paris.")], e, TOOLS).passed


class TestSequence:
    seq = Expectation(
        "sequence",
        (CallSpec("read_file"), CallSpec("run_tests")),
        ordered=True,
        final=(FinalCheck("contains", "passed", ignore_case=True),),
    )

    def loop(self, *turns: ModelTurn) -> Any:
        return judge_calls(list(turns), self.seq, TOOLS, max_turns=5)

    def test_ok(self) -> None:
        v = self.loop(
            turn(call("read_file", path="a")), turn(call("run_tests")), turn(content="All PASSED.")
        )
        assert v.passed and v.label == "ok read_file > run_tests"

    def test_wrong_step(self) -> None:
        v = self.loop(
            turn(call("read_file", path="a")), turn(call("run_shell", command="x")), turn()
        )
        assert v.failure is FailureClass.WRONG_TOOL
        assert (
            v.label == "wrong_tool got run_shell want run_tests at call 2 (read_file > run_shell)"
        )

    def test_stopping_early_is_a_missing_call(self) -> None:
        v = self.loop(turn(call("read_file", path="a")), turn(content="done"))
        assert v.failure is FailureClass.MISSING_CALL
        assert v.label == "missing_call run_tests: got 1 of 2 calls (read_file)"

    def test_calling_on_is_an_extra_call(self) -> None:
        v = self.loop(
            turn(call("read_file", path="a")),
            turn(call("run_tests")),
            turn(call("run_tests")),
            turn(),
        )
        assert v.failure is FailureClass.EXTRA_CALL
        assert v.label == "extra_call run_tests (got read_file > run_tests > run_tests)"

    def test_loop_limit(self) -> None:
        v = judge_calls(
            [turn(call("read_file", path="a")), turn(call("run_tests"))],
            self.seq,
            TOOLS,
            max_turns=2,
        )
        assert v.failure is FailureClass.LOOP_LIMIT
        assert v.label == "loop_limit still calling after 2 turns (read_file > run_tests)"

    def test_final_text_miss_is_wrong_final(self) -> None:
        v = self.loop(
            turn(call("read_file", path="a")), turn(call("run_tests")), turn(content="hmm")
        )
        assert v.failure is FailureClass.WRONG_FINAL
        assert v.label == "wrong_final text lacks 'passed'"


class TestScriptedResults:
    results = (
        ScriptedResult("read_file", (("path", m({"regex": ".*README.*"})),), "# Title"),
        ScriptedResult("read_file", (), "no such file"),
    )

    def test_first_fitting_result_answers(self) -> None:
        assert scripted_result(call("read_file", path="README.md"), self.results) == "# Title"
        assert scripted_result(call("read_file", path="x.py"), self.results) == "no such file"

    def test_unscripted_call_gets_an_error_text(self) -> None:
        assert "no result scripted" in scripted_result(
            call("run_shell", command="ls"), self.results
        )


class TestTurnsFromReplies:
    """Routing for call suites and the args_as_string flag, on wire-shaped replies."""

    def test_structured_calls(self) -> None:
        t = turn_of(ChatReply("", tool_calls=(call("read_file", path="a"),)), ["read_file"])
        assert t.route == "tool_calls" and t.calls[0].name == "read_file"

    def test_text_call_to_declared_tool_is_recovered(self) -> None:
        t = turn_of(ChatReply('{"name": "read_file", "arguments": {"path": "a"}}'), ["read_file"])
        assert t.route == "recovered" and t.calls == (ToolCall("read_file", {"path": "a"}),)

    def test_text_call_to_undeclared_name_is_prose(self) -> None:
        t = turn_of(ChatReply('{"name": "open", "arguments": {"path": "a"}}'), ["read_file"])
        assert t.route == "content" and not t.calls and t.refused is None

    def test_malformed_text_call_is_refused(self) -> None:
        t = turn_of(
            ChatReply('<tool_call>{"name": "read_file", "arguments": {"path": }'), ["read_file"]
        )
        assert t.refused and not t.calls

    def test_ollama_string_arguments_are_decoded_and_flagged(self) -> None:
        body = {
            "done": True,
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "read_file", "arguments": '{"path": "a"}'}}],
            },
        }
        (c,) = parse_ollama_reply(body).tool_calls
        assert c.arguments == {"path": "a"} and c.arguments_as_string

    def test_openai_string_arguments_are_normal_unless_double_encoded(self) -> None:
        def body(arguments: str) -> dict[str, Any]:
            return {
                "choices": [
                    {
                        "finish_reason": "tool_calls",
                        "message": {
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "c1",
                                    "type": "function",
                                    "function": {"name": "read_file", "arguments": arguments},
                                }
                            ],
                        },
                    }
                ]
            }

        (plain,) = parse_openai_reply(body('{"path": "a"}')).tool_calls
        assert plain.arguments == {"path": "a"} and not plain.arguments_as_string
        assert plain.id == "c1"
        (double,) = parse_openai_reply(body('"{\\"path\\": \\"a\\"}"')).tool_calls
        assert double.arguments == {"path": "a"} and double.arguments_as_string
