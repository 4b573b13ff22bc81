"""The call judge's newer rules, on Matcher records built directly (not parsed from YAML).

``absent``, ``optional``, ``each`` and ``length``; ``ignore_case`` reaching strings inside
lists and objects; strict JSON integers; unordered calls paired by maximum matching.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cardprobe.judge.call import ModelTurn, judge_calls, scripted_result
from pytest_cardprobe.judge.matchers import argument_problem, json_equal, match
from pytest_cardprobe.judge.pairing import maximum_matching
from pytest_cardprobe.suite.calls import CallSpec, Expectation, Matcher, ScriptedResult
from pytest_cardprobe.types import FailureClass, ToolCall


def tool(name: str, properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, **extra}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


TOOLS = [
    tool(
        "get_weather",
        {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
        },
        required=["city"],
    ),
    tool(
        "send_mail",
        {"to": {"type": "string"}, "cc": {"type": "string"}, "body": {"type": "string"}},
    ),
    tool(
        "plan_route",
        {
            "stops": {"type": "array", "items": {"type": "string"}},
            "legs": {"type": "array", "items": {"type": "integer"}},
            "options": {"type": "object"},
            "speed": {"type": "number"},
            "limit": {"type": ["integer", "null"]},
        },
    ),
    tool("read_file", {"path": {"type": "string"}}),
]

EQ = "equals"


def lit(value: Any, ignore_case: bool = False) -> Matcher:
    return Matcher(EQ, value, ignore_case)


def one(name: str, **args: Any) -> Expectation:
    return Expectation("call", (CallSpec(name, tuple(args.items())),))


def judge(expect: Expectation, *calls: ToolCall) -> Any:
    return judge_calls([ModelTurn("tool_calls", calls, "")], expect, TOOLS)


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name, args)


# --------------------------------------------------------------------------- absent


class TestAbsent:
    expect = one("send_mail", to=lit("ana@example.org"), cc=Matcher("absent"))

    def test_not_given_passes(self) -> None:
        v = judge(self.expect, call("send_mail", to="ana@example.org", body="hi"))
        assert v.passed and v.label == "ok send_mail"

    def test_given_is_wrong_arguments_naming_it(self) -> None:
        v = judge(self.expect, call("send_mail", to="ana@example.org", cc="bo@example.org"))
        assert v.failure is FailureClass.WRONG_ARGUMENTS
        assert v.label == "wrong_arguments send_mail: unexpected_argument cc"

    def test_given_even_as_null_or_empty_is_given(self) -> None:
        for value in (None, "", [], {}, False):
            given = call("send_mail", to="ana@example.org", cc=value)
            assert argument_problem(given, self.expect.calls[0]) == "unexpected_argument cc"

    def test_scripted_results_honour_it(self) -> None:
        results = (
            ScriptedResult("send_mail", (("cc", Matcher("absent")),), "sent to one"),
            ScriptedResult("send_mail", (), "sent to several"),
        )
        assert scripted_result(call("send_mail", to="a"), results) == "sent to one"
        assert scripted_result(call("send_mail", to="a", cc="b"), results) == "sent to several"


# --------------------------------------------------------------------------- optional


class TestOptional:
    celsius = Matcher("optional", lit("celsius"))

    def test_left_out_passes(self) -> None:
        assert judge(one("get_weather", unit=self.celsius), call("get_weather", city="Oslo")).passed

    def test_given_and_matching_passes(self) -> None:
        v = judge(
            one("get_weather", unit=self.celsius), call("get_weather", city="Oslo", unit="celsius")
        )
        assert v.passed

    def test_given_and_not_matching_fails_in_the_inner_words(self) -> None:
        v = judge(
            one("get_weather", unit=self.celsius),
            call("get_weather", city="Oslo", unit="fahrenheit"),
        )
        assert v.failure is FailureClass.WRONG_ARGUMENTS
        assert v.label == "wrong_arguments get_weather: $.unit got \"fahrenheit\" want 'celsius'"

    def test_wraps_any_matcher(self) -> None:
        spec = CallSpec("read_file", (("path", Matcher("optional", Matcher("regex", r"src/.*"))),))
        assert argument_problem(call("read_file"), spec) is None
        assert argument_problem(call("read_file", path="src/a.py"), spec) is None
        assert argument_problem(call("read_file", path="docs/a.md"), spec) == (
            "$.path got \"docs/a.md\" want regex 'src/.*'"
        )

    def test_other_matchers_still_need_the_argument(self) -> None:
        for matcher in (lit("celsius"), Matcher("any", True), Matcher("each", lit("x"))):
            problem = argument_problem(
                call("get_weather"), CallSpec("get_weather", (("unit", matcher),))
            )
            assert problem == f"$.unit missing, want {matcher.describe()}"


# --------------------------------------------------------------------------- ignore_case


class TestNestedIgnoreCase:
    @pytest.mark.parametrize(
        ("matcher", "value", "ok"),
        [
            (lit(["SANTA BARBARA", "MONTEREY"], True), ["Santa Barbara", "Monterey"], True),
            (lit(["SANTA BARBARA", "MONTEREY"]), ["Santa Barbara", "Monterey"], False),
            (lit(["a", "b"], True), ["B", "A"], False),  # element-wise, in order
            (lit(["a", 1], True), ["A", 1.0], True),  # numbers still JSON-normalised
            (lit(["a"], True), ["A", "b"], False),
            (
                lit({"city": "PARIS", "tags": ["Old", "Town"]}, True),
                {"city": "paris", "tags": ["old", "TOWN"]},
                True,
            ),
            (lit({"City": "x"}, True), {"city": "x"}, False),  # object keys are not folded
            (lit({"a": True}, True), {"a": 1}, False),  # true is never 1
            (Matcher("one_of", [["X", "Y"], ["Z"]], True), ["x", "y"], True),
            (Matcher("one_of", [{"k": "V"}], True), {"k": "v"}, True),
            (Matcher("one_of", [["X", "Y"]]), ["x", "y"], False),
            (Matcher("contains", ["A", "B"], True), [["a", "b"], "c"], True),
            (Matcher("contains", "Monterey", True), ["SANTA BARBARA", "MONTEREY"], True),
        ],
    )
    def test_reaches_strings_inside(self, matcher: Matcher, value: Any, ok: bool) -> None:
        assert match(matcher, value) is ok

    def test_the_judge_passes_the_issue_example(self) -> None:
        stops = lit(["SANTA BARBARA", "MONTEREY"], True)
        v = judge(
            one("plan_route", stops=stops), call("plan_route", stops=["Santa Barbara", "Monterey"])
        )
        assert v.passed

    @settings(max_examples=150, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(
        st.recursive(
            st.none() | st.booleans() | st.integers(-5, 5) | st.text("aBcXyZé ß-", max_size=6),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=3), inner, max_size=3)
            ),
            max_leaves=8,
        )
    )
    def test_any_value_matches_itself_recased(self, value: Any) -> None:
        def recase(v: Any) -> Any:
            if isinstance(v, str):
                return v.swapcase()
            if isinstance(v, list):
                return [recase(x) for x in v]
            if isinstance(v, dict):
                return {k: recase(x) for k, x in v.items()}
            return v

        assert match(lit(value), value)
        assert match(lit(value, True), recase(value))
        assert match(Matcher("one_of", [0, value], True), recase(value))
        if recase(value) != value and json_equal(recase(value), value) is False:
            assert not match(lit(value), recase(value))


# --------------------------------------------------------------------------- each / length


class TestEach:
    strings = Matcher("each", Matcher("regex", r"[A-Z].*"))

    def test_every_element_must_match(self) -> None:
        assert match(self.strings, ["Oslo", "Bergen"])
        assert not match(self.strings, ["Oslo", "bergen"])

    def test_an_empty_list_passes_and_a_non_list_fails(self) -> None:
        assert match(self.strings, [])
        assert not match(self.strings, "Oslo")

    def test_the_label_points_at_the_first_element_that_misses(self) -> None:
        v = judge(
            one("plan_route", stops=self.strings), call("plan_route", stops=["Oslo", "bergen", "x"])
        )
        assert (
            v.label == "wrong_arguments plan_route: $.stops[1] got \"bergen\" want regex '[A-Z].*'"
        )
        v = judge(
            one("plan_route", options=Matcher("each", lit(1))), call("plan_route", options={})
        )
        assert v.label == "wrong_arguments plan_route: $.options got {} want each 1"

    def test_ignore_case_on_each_reaches_its_elements(self) -> None:
        assert match(
            Matcher("each", Matcher("one_of", ["oslo", "bergen"]), True), ["OSLO", "Bergen"]
        )
        assert not match(Matcher("each", Matcher("one_of", ["oslo", "bergen"])), ["OSLO"])

    def test_nests(self) -> None:
        grid = Matcher("each", Matcher("each", Matcher("type", "integer")))
        assert match(grid, [[1, 2], [], [3]])
        assert not match(grid, [[1, 2.5]])


class TestLength:
    @pytest.mark.parametrize(
        ("value", "ok"),
        [([], False), (["a"], True), (["a", "b", "c"], True), ([1, 2, 3, 4], False),
         ("", False), ("abc", True), ("abcd", False), (3, False), ({"a": 1}, False)],
    )  # fmt: skip
    def test_lists_and_strings_inclusive(self, value: Any, ok: bool) -> None:
        assert match(Matcher("length", (1, 3)), value) is ok

    def test_the_label_says_the_length(self) -> None:
        v = judge(
            one("plan_route", stops=Matcher("length", (1, 2))),
            call("plan_route", stops=["a", "b", "c"]),
        )
        assert v.label == "wrong_arguments plan_route: $.stops has length 3, want length [1, 2]"


@pytest.mark.parametrize(
    ("matcher", "words"),
    [
        (Matcher("absent"), "absent"),
        (Matcher("optional", lit("celsius")), "'celsius' or absent"),
        (
            Matcher("optional", Matcher("regex", "c.*", True)),
            "regex 'c.*' (ignoring case) or absent",
        ),
        (Matcher("each", Matcher("type", "string")), "each type 'string'"),
        (Matcher("length", (1, 3)), "length [1, 3]"),
        (lit(["A"], True), "['A'] (ignoring case)"),
    ],
)
def test_describe_words(matcher: Matcher, words: str) -> None:
    assert matcher.describe() == words


# --------------------------------------------------------------------------- strict types


class TestStrictIntegers:
    def test_a_float_for_an_integer_fails_naming_it(self) -> None:
        v = judge(one("get_weather"), call("get_weather", city="Oslo", days=5.0))
        assert v.failure is FailureClass.BAD_ARGUMENTS
        assert (
            v.label == "bad_arguments get_weather: $.days 5.0 is a float, the tool declares integer"
        )

    @pytest.mark.parametrize("value", [True, "5"])
    def test_a_boolean_or_string_is_not_an_integer_either(self, value: Any) -> None:
        v = judge(one("get_weather"), call("get_weather", city="Oslo", days=value))
        assert v.label == "bad_arguments get_weather: $.days is not of type integer"

    def test_inside_arrays_and_type_lists(self) -> None:
        v = judge(one("plan_route"), call("plan_route", legs=[1, 2.0]))
        assert (
            v.label
            == "bad_arguments plan_route: $.legs[1] 2.0 is a float, the tool declares integer"
        )
        v = judge(one("plan_route"), call("plan_route", limit=3.0))
        assert v.label.endswith("$.limit 3.0 is a float, the tool declares integer or null")
        assert judge(one("plan_route"), call("plan_route", limit=None, legs=[1, 2])).passed

    def test_an_integer_literal_never_passes_a_float_where_the_tool_declares_integer(self) -> None:
        # The schema is checked before any matcher: the literal never sees the float.
        v = judge(one("get_weather", days=lit(5)), call("get_weather", city="Oslo", days=5.0))
        assert v.failure is FailureClass.BAD_ARGUMENTS
        assert judge(
            one("get_weather", days=lit(5)), call("get_weather", city="Oslo", days=5)
        ).passed

    def test_where_the_tool_declares_number_values_compare_as_json(self) -> None:
        for value in (5, 5.0):
            assert judge(one("plan_route", speed=lit(5)), call("plan_route", speed=value)).passed

    def test_an_older_draft_named_by_the_tool_is_used_and_integers_stay_strict(self) -> None:
        draft4 = {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}},
        }
        tools = [{"type": "function", "function": {"name": "count", "parameters": draft4}}]

        def v(n: Any) -> Any:
            return judge_calls(
                [ModelTurn("tool_calls", (call("count", n=n),), "")], one("count"), tools
            )

        # Draft 4's boolean exclusiveMinimum: 0 is excluded (Draft 2020-12 would reject the
        # schema's boolean and not apply it).
        assert v(0).label == "bad_arguments count: $.n fails minimum 0"
        assert v(1).passed
        assert v(2.0).label == "bad_arguments count: $.n 2.0 is a float, the tool declares integer"

    def test_without_schema_the_draft_is_2020_12(self) -> None:
        params = {"type": "object", "properties": {"xs": {"prefixItems": [{"type": "string"}]}}}
        tools = [{"type": "function", "function": {"name": "f", "parameters": params}}]
        v = judge_calls([ModelTurn("tool_calls", (call("f", xs=[1]),), "")], one("f"), tools)
        assert v.label == "bad_arguments f: $.xs[0] is not of type string"


# --------------------------------------------------------------------------- pairing


class TestUnorderedPairing:
    def test_finds_the_pairing_a_greedy_matcher_misses(self) -> None:
        # The first spec fits both calls, the second only the first call: taking the first
        # fitting call for each spec in turn would fail.
        e = Expectation(
            "calls",
            (
                CallSpec("read_file", (("path", Matcher("regex", r"a.*")),)),
                CallSpec("read_file", (("path", lit("ab")),)),
            ),
        )
        v = judge(e, call("read_file", path="ab"), call("read_file", path="ac"))
        assert v.passed

    def test_the_label_names_the_one_wrong_call_among_many(self) -> None:
        specs = tuple(CallSpec("read_file", (("path", lit(f"f{i}.py")),)) for i in range(32))
        calls = [call("read_file", path=f"f{i}.py") for i in reversed(range(32))]
        calls[5] = call("read_file", path="oops.py")  # replaces f26.py
        v = judge(Expectation("calls", specs), *calls)
        assert v.label == "wrong_arguments read_file: $.path got \"oops.py\" want 'f26.py'"
        calls[5] = call("read_file", path="f26.py")
        assert judge(Expectation("calls", specs), *calls).passed

    def test_ordered_stays_a_straight_comparison(self) -> None:
        specs = (
            CallSpec("read_file", (("path", lit("a")),)),
            CallSpec("read_file", (("path", lit("b")),)),
        )
        e = Expectation("calls", specs, ordered=True)
        v = judge(e, call("read_file", path="b"), call("read_file", path="a"))
        assert v.label == "wrong_arguments read_file: $.path got \"b\" want 'a'"


def _brute_force_size(fits: list[list[int]], right: int) -> int:
    best = 0
    for size in range(len(fits), 0, -1):
        for lefts in itertools.combinations(range(len(fits)), size):
            for rights in itertools.permutations(range(right), size):
                if all(r in fits[i] for i, r in zip(lefts, rights, strict=True)):
                    return size
    return best


@settings(max_examples=200, derandomize=True)
@given(
    st.integers(0, 5).flatmap(
        lambda right: st.tuples(
            st.just(right),
            st.lists(st.sets(st.integers(0, max(right - 1, 0))).map(sorted), max_size=5),
        )
    )
)
def test_maximum_matching_is_as_large_as_brute_force(table: tuple[int, list[list[int]]]) -> None:
    right, fits = table
    fits = [[j for j in row if j < right] for row in fits]
    pairs = maximum_matching(fits, right)
    matched = [(i, j) for i, j in enumerate(pairs) if j >= 0]
    assert all(j in fits[i] for i, j in matched)  # only edges of the table
    assert len({j for _, j in matched}) == len(matched)  # each right vertex once
    assert len(matched) == _brute_force_size(fits, right)
