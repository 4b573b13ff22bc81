"""Regular expressions from suites and tool schemas run on RE2, in time linear in the text,
and mean what they mean in Python's ``re``; what RE2 cannot run is a usage error naming the
pattern."""

from __future__ import annotations

import re
import time
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.judge.argschema import schema_problem
from pytest_cardprobe.judge.matchers import match
from pytest_cardprobe.suite.calls import Matcher, admits, parse_matcher
from pytest_cardprobe.suite.patterns import fullmatch, pattern_problem, search, translated
from pytest_cardprobe.suite.toolsfile import check_tools

EVIL = "(a+)+b"
ATTACK = "a" * 39  # CPython's re takes hours on this; RE2 microseconds


def fixed(examples: int) -> Any:
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None)


class Refused(Exception):
    pass


def fail(key: Any, problem: str) -> Any:
    raise Refused(f"{key}: {problem}")


def quickly(check: Any) -> Any:
    started = time.monotonic()
    result = check()
    # A hang guard, not a measurement: a backtracking engine takes hours on these inputs,
    # RE2 microseconds, so a loaded machine never comes near the bound.
    assert time.monotonic() - started < 30
    return result


def test_a_catastrophic_regex_matcher_is_judged_at_once() -> None:
    matcher = parse_matcher({"regex": EVIL}, ("args", "x"), fail)
    assert quickly(lambda: match(matcher, ATTACK)) is False
    assert match(matcher, "aaab") is True


def test_a_catastrophic_schema_pattern_is_judged_at_once() -> None:
    parameters = {"type": "object", "properties": {"x": {"type": "string", "pattern": EVIL}}}
    problem = quickly(lambda: schema_problem({"x": ATTACK}, parameters))
    assert problem is not None and "pattern" in problem
    assert schema_problem({"x": "zzab"}, parameters) is None


def test_a_catastrophic_pattern_property_is_judged_at_once() -> None:
    parameters = {
        "type": "object",
        "patternProperties": {EVIL: {"type": "integer"}},
        "additionalProperties": False,
    }
    assert quickly(lambda: schema_problem({ATTACK: 1}, parameters)) is not None
    assert quickly(lambda: admits(parameters, ATTACK)) is False
    assert schema_problem({"aab": 1}, parameters) is None
    assert schema_problem({"aab": "one"}, parameters) is not None


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("(?=a)b", "RE2 cannot run it (invalid perl operator: (?=)"),
        ("(?<!a)b", "RE2 cannot run it"),
        ("(a)\\1", "RE2 cannot run it (invalid escape sequence: \\1)"),
        ("(?P<x>a)(?P=x)", "RE2 cannot run it"),
        ("a++", "RE2 cannot run it"),
        ("[\\W]", "\\W inside [...] has no equivalent"),
        ("[[:alpha:]]", "a POSIX class ([:name:]) inside [...]"),
        ("a{1001}", "invalid repetition size"),
    ],
)
def test_a_pattern_re2_cannot_run_as_meant_is_refused_naming_it(pattern: str, said: str) -> None:
    problem = pattern_problem(pattern)
    assert problem is not None and said in problem
    assert problem.startswith(repr(pattern))
    with pytest.raises(Refused) as caught:
        parse_matcher({"regex": pattern}, ("cases", 0, "expect", "args", "x"), fail)
    assert repr(pattern) in str(caught.value)


def test_the_repetition_limit_at_its_bound_and_past_it() -> None:
    assert pattern_problem("a{1000}") is None
    assert pattern_problem("a{1001}") is not None


def test_a_syntax_error_keeps_its_python_wording() -> None:
    assert pattern_problem("(") == (
        "invalid regular expression: missing ), unterminated subpattern at position 0"
    )


def test_tool_schema_patterns_are_checked_at_load() -> None:
    tools = [{"type": "function", "function": {"name": "t", "parameters": {
        "type": "object",
        "properties": {"p": {"type": "string", "pattern": "(?=x)y"}},
    }}}]  # fmt: skip
    with pytest.raises(Refused) as caught:
        check_tools(tools, fail)
    message = str(caught.value)
    assert "'properties', 'p', 'pattern'" in message and "pattern '(?=x)y'" in message


def test_unevaluated_properties_beside_pattern_properties_is_refused() -> None:
    tools = [{"type": "function", "function": {"name": "t", "parameters": {
        "type": "object", "patternProperties": {"^x": {}}, "unevaluatedProperties": False,
    }}}]  # fmt: skip
    with pytest.raises(Refused, match="unevaluatedProperties in a schema with patternProperties"):
        check_tools(tools, fail)


@pytest.mark.parametrize(
    ("pattern", "text", "matched"),
    [
        ("\\d+", "١٢٣", True),  # Arabic-Indic digits are digits in Python's re
        ("\\w+", "café_1", True),
        ("\\s", "\u3000", True),
        ("\\S", "\u3000", False),
        ("[^\\d]", "٣", False),
        ("a{,2}", "aa", True),
        ("a{,2}", "a{,2}", False),
        ("[]a]+", "]a]", True),
    ],
)
def test_python_meanings_are_kept(pattern: str, text: str, matched: bool) -> None:
    assert bool(re.fullmatch(pattern, text)) is matched
    assert fullmatch(pattern, text) is matched


def test_ignore_case_folds_as_python_does() -> None:
    assert fullmatch("straße", "STRAßE", ignore_case=True)
    assert fullmatch("é", "É", ignore_case=True)
    assert search("ab", "xxAB", ignore_case=True)
    assert not fullmatch("ab", "AB")


ASSIGNED = st.characters(exclude_categories=("Cs", "Cn"))
CLASSES = ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "[\\d]", "[\\w]", "[\\s]", "[^\\w]"]


@fixed(400)
@given(st.sampled_from(CLASSES), ASSIGNED)
def test_shorthand_classes_match_what_python_matches(cls: str, char: str) -> None:
    # Characters Python's Unicode tables know: RE2's may be newer (later Unicode versions).
    assert unicodedata.category(char) != "Cn"
    assert fullmatch(cls, char) == bool(re.fullmatch(cls, char)), (cls, hex(ord(char)))


# Small patterns from a grammar both engines read alike (no $, \b: documented differences).
ATOMS = st.sampled_from(["a", "b", ".", "\\d", "\\w", "\\s", "[ab]", "[^a]", "[a-c\\d]", "é"])


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        piece = (
            draw(ATOMS) if depth > 1 or draw(st.booleans()) else f"({draw(patterns(depth + 1))})"
        )
        piece += draw(st.sampled_from(["", "", "*", "+", "?", "{1,2}", "{,2}", "*?"]))
        parts.append(piece)
    joined = "".join(parts)
    return joined if draw(st.booleans()) else f"{joined}|{draw(ATOMS)}"


@fixed(500)
@given(patterns(), st.text(st.sampled_from("ab1é \u3000٣_c"), max_size=8), st.booleans())
def test_generated_patterns_agree_with_python(pattern: str, text: str, ignore: bool) -> None:
    flags = re.IGNORECASE if ignore else 0
    assert pattern_problem(pattern) is None, translated(pattern)
    assert fullmatch(pattern, text, ignore) == bool(re.fullmatch(pattern, text, flags))
    assert search(pattern, text, ignore) == bool(re.search(pattern, text, flags))


@fixed(200)
@given(st.text(max_size=40))
def test_any_text_is_either_refused_or_run_in_linear_time(pattern: str) -> None:
    if pattern_problem(pattern) is None:
        assert quickly(lambda: search(pattern, "a" * 5000 + "!")) in (True, False)


def test_a_suite_regex_matcher_value_is_matched_as_a_matcher_record() -> None:
    assert match(Matcher("regex", "src/.*"), "src/x.py")
