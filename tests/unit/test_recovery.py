"""Text-written tool-call recovery (docs/design.md §6): pytest_cardprobe.judge.recovery."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_cardprobe.judge.recovery import RecoveredCall, Recovery, recover_tool_calls

CARD = "render_adaptive_card"
READ = "read_file"
DECLARED = (CARD, READ)

BODY = [{"type": "TextBlock", "text": "Hello {name}!", "wrap": True}]
CARD_CALL = {"name": CARD, "arguments": {"body": BODY}}


def recover(text: str, declared: tuple[str, ...] = DECLARED) -> Recovery:
    return recover_tool_calls(text, declared)


def only_call(text: str) -> RecoveredCall:
    rec = recover(text)
    assert rec.error is None, rec.error
    assert len(rec.calls) == 1, rec.calls
    return rec.calls[0]


def assert_refused(text: str, tool: str, *fragments: str) -> str:
    rec = recover(text)
    assert rec.calls == []
    assert not rec.found
    assert rec.refused
    assert rec.error is not None
    assert repr(tool) in rec.error
    for fragment in fragments:
        assert fragment in rec.error
    return rec.error


def assert_nothing(text: str) -> None:
    assert recover(text) == Recovery()


# --- realistic replies ----------------------------------------------------------------------


def test_bare_call_object() -> None:
    call = only_call(json.dumps(CARD_CALL))
    assert call == RecoveredCall(CARD, {"body": BODY})


def test_call_in_json_fence_with_prose_around() -> None:
    text = (
        "Sure! I'll render the card for you.\n\n```json\n"
        + json.dumps(CARD_CALL, indent=2)
        + "\n```\n\nLet me know if you want changes."
    )
    assert only_call(text) == RecoveredCall(CARD, {"body": BODY})


def test_tool_call_tags() -> None:
    text = f"<tool_call>\n{json.dumps(CARD_CALL)}\n</tool_call>"
    assert only_call(text).arguments == {"body": BODY}


def test_mistral_tool_calls_prefix() -> None:
    text = "[TOOL_CALLS]" + json.dumps([CARD_CALL])
    assert only_call(text).name == CARD


def test_llama_python_tag() -> None:
    text = '<|python_tag|>{"name": "read_file", "parameters": {"path": "src/stats.js"}}'
    assert only_call(text) == RecoveredCall(READ, {"path": "src/stats.js"})


def test_parameters_variant() -> None:
    text = json.dumps({"name": CARD, "parameters": {"body": []}})
    assert only_call(text) == RecoveredCall(CARD, {"body": []})


def test_openai_shape_with_string_arguments() -> None:
    text = (
        '{"type":"function","function":'
        '{"name":"render_adaptive_card","arguments":"{\\"body\\": []}"}}'
    )
    assert only_call(text) == RecoveredCall(CARD, {"body": []})


def test_openai_shape_with_id_and_object_arguments() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": READ, "arguments": {}}}
    assert only_call(json.dumps(call)) == RecoveredCall(READ, {})


def test_function_wrapper_without_type() -> None:
    text = json.dumps({"function": {"name": READ, "arguments": json.dumps({"path": "a"})}})
    assert only_call(text) == RecoveredCall(READ, {"path": "a"})


def test_list_of_two_calls_in_order() -> None:
    calls = [
        {"name": READ, "arguments": {"path": "a.txt"}},
        {"name": CARD, "arguments": {"body": []}},
    ]
    rec = recover(json.dumps(calls))
    assert rec.error is None
    assert rec.calls == [RecoveredCall(READ, {"path": "a.txt"}), RecoveredCall(CARD, {"body": []})]


def test_separate_calls_in_prose_in_order() -> None:
    text = (
        'First <tool_call>{"name": "render_adaptive_card", "arguments": {"body": [1]}}'
        '</tool_call> then <tool_call>{"name": "read_file", "arguments": {"path": "b"}}'
        "</tool_call>."
    )
    assert [c.name for c in recover(text).calls] == [CARD, READ]


def test_call_without_arguments_has_empty_arguments() -> None:
    assert only_call('{"name": "read_file"}') == RecoveredCall(READ, {})


def test_undeclared_tool_is_ignored() -> None:
    assert_nothing('{"name": "get_weather", "arguments": {"city": "Paris"}}')


def test_undeclared_tool_ignored_next_to_a_declared_one() -> None:
    text = json.dumps([{"name": "get_weather", "arguments": {}}, CARD_CALL])
    assert recover(text).calls == [RecoveredCall(CARD, {"body": BODY})]


def test_only_the_declared_subset_is_recovered() -> None:
    text = json.dumps([{"name": READ, "arguments": {}}, CARD_CALL])
    assert recover(text, (CARD,)).calls == [RecoveredCall(CARD, {"body": BODY})]


def test_adaptive_card_reply_yields_nothing() -> None:
    card = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.5",
        "body": [
            {"type": "TextBlock", "text": "Order #42", "weight": "Bolder"},
            {"type": "FactSet", "facts": [{"title": "Status", "value": "Shipped"}]},
            {"type": "Input.Text", "id": "name", "label": "Your name"},
        ],
        "actions": [{"type": "Action.Submit", "title": "Send"}],
    }
    assert_nothing("Here is your card:\n```json\n" + json.dumps(card, indent=2) + "\n```")


def test_json_answer_with_a_name_key_yields_nothing() -> None:
    assert_nothing('The person is {"name": "Alice", "age": 3}.')


def test_prose_mentioning_the_tool_yields_nothing() -> None:
    assert_nothing(
        "I could call render_adaptive_card or read_file, but a plain answer is enough: 42."
    )


def test_example_object_nested_in_other_json_is_data() -> None:
    text = json.dumps({"example": CARD_CALL, "note": "this is how a call looks"})
    assert_nothing(text)


def test_braces_inside_strings_do_not_count() -> None:
    args = {"text": 'a } b ] c { d [ e \\" f', "pattern": "{[}]"}
    text = json.dumps({"name": CARD, "arguments": args}) + " trailing } ]"
    assert only_call(text) == RecoveredCall(CARD, args)


def test_quotes_and_brackets_in_surrounding_prose() -> None:
    text = 'He said "hi" [1] and left ] }. ' + json.dumps(CARD_CALL) + ' "unbalanced quote'
    assert only_call(text).name == CARD


def test_non_ascii_and_escapes_in_arguments() -> None:
    args = {"text": "Grüße \u2603 \n tab\t \\ slash / \U0001f600"}
    for ensure_ascii in (True, False):
        text = json.dumps({"name": CARD, "arguments": args}, ensure_ascii=ensure_ascii)
        assert only_call(text).arguments == args


def test_empty_inputs() -> None:
    assert recover("") == Recovery()
    assert recover(json.dumps(CARD_CALL), ()) == Recovery()


def test_declared_may_be_any_collection_or_a_lone_name() -> None:
    text = json.dumps(CARD_CALL)
    assert only_call(text).name == CARD
    assert recover_tool_calls(text, {CARD}).calls[0].name == CARD
    assert recover_tool_calls(text, frozenset([CARD])).found
    assert recover_tool_calls(text, CARD).found  # a str is a Collection of chars; handled


def test_result_types() -> None:
    rec = recover(json.dumps(CARD_CALL))
    assert rec.found and not rec.refused
    call = rec.calls[0]
    assert hash(call) == hash(RecoveredCall(CARD, {}))  # hashable: arguments not hashed
    with pytest.raises(AttributeError):
        call.name = "x"  # type: ignore[misc]


# --- refusals -------------------------------------------------------------------------------


def test_missing_closing_brace() -> None:
    text = '{"name": "read_file", "arguments": {"path": "src/stats.js"}'
    assert_refused(text, READ, "never closes", "Expecting ',' delimiter")


def test_trailing_comma() -> None:
    text = '{"name": "read_file", "arguments": {"path": "a",}}'
    assert_refused(text, READ, "invalid JSON", "char")


def test_single_quotes() -> None:
    text = "{'name': 'read_file', 'arguments': {'path': 'a'}}"
    assert_refused(text, READ, "Expecting property name enclosed in double quotes")


def test_raw_newline_inside_a_string() -> None:
    text = '{"name": "render_adaptive_card", "arguments": {"body": [{"text": "two\nlines"}]}}'
    assert_refused(text, CARD, "Invalid control character")


def test_arguments_string_that_is_not_json() -> None:
    text = '{"type": "function", "function": {"name": "read_file", "arguments": "{path: a}"}}'
    assert_refused(text, READ, "arguments string is not valid JSON")


def test_arguments_string_that_is_not_an_object() -> None:
    text = '{"name": "read_file", "arguments": "[1, 2]"}'
    assert_refused(text, READ, "arguments must be a JSON object, not an array")


@pytest.mark.parametrize("arguments", ["null", "3", "[]", "true"])
def test_arguments_that_are_not_an_object(arguments: str) -> None:
    assert_refused(f'{{"name": "read_file", "arguments": {arguments}}}', READ, "JSON object")


def test_duplicate_keys() -> None:
    text = '{"name": "read_file", "arguments": {"path": "a", "path": "b"}}'
    assert_refused(text, READ, "duplicate key 'path'")


def test_nan_is_not_json() -> None:
    assert_refused('{"name": "read_file", "arguments": {"n": NaN}}', READ, "NaN")


def test_unexpected_keys_are_refused() -> None:
    assert_refused('{"name": "read_file", "path": "a"}', READ, "unexpected keys ['path']")
    assert_refused('{"type": "tool_use", "name": "read_file", "input": {}}', READ, "input")


def test_wrong_type_is_refused() -> None:
    text = '{"type": "tool", "function": {"name": "read_file", "arguments": {}}}'
    assert_refused(text, READ, '"type"')


def test_both_arguments_and_parameters_is_refused() -> None:
    assert_refused('{"name": "read_file", "arguments": {}, "parameters": {}}', READ, "both")


def test_valid_call_plus_malformed_call_refuses_everything() -> None:
    good = json.dumps(CARD_CALL)
    bad = '{"name": "read_file", "arguments": {"path": "a",}}'
    assert_refused(f"{good}\nand then\n{bad}", READ)
    assert_refused(f"{bad}\nand then\n{good}", READ)


def test_earliest_refusal_is_reported() -> None:
    text = '{"name": "read_file", "x": 1} {"name": "render_adaptive_card", "arguments": 3}'
    assert_refused(text, READ, "at char 0")


def test_truncated_list_of_calls_refuses_the_complete_ones_too() -> None:
    text = "[TOOL_CALLS][" + json.dumps(CARD_CALL) + ", "
    assert_refused(text, CARD, "never closes")


def test_call_after_a_stray_unclosed_brace_is_refused() -> None:
    assert_refused("Use { to open. " + json.dumps(CARD_CALL), CARD, "never closes")


def test_mismatched_brackets_around_a_call() -> None:
    assert_refused("[" + json.dumps(CARD_CALL) + "}", CARD, "invalid JSON")


def test_call_inside_non_json_braces_is_refused() -> None:
    assert_refused("{ I will now call " + json.dumps(CARD_CALL) + " }", CARD, "invalid JSON")


def test_name_marker_outside_json_is_refused() -> None:
    assert_refused('"name": "read_file", "arguments": {"path": "a"}', READ, "not inside")


def test_tool_call_wrapper_without_json_is_refused() -> None:
    assert_refused('<tool_call>read_file(path="a")</tool_call>', READ, "<tool_call>")


def test_new_mistral_args_format_is_refused() -> None:
    assert_refused('[TOOL_CALLS]read_file[ARGS]{"path": "a"}', READ, "[TOOL_CALLS]")


def test_python_tag_with_code_is_refused() -> None:
    assert_refused('<|python_tag|>read_file.call(path="a")', READ, "<|python_tag|>")


def test_wrapper_holding_an_undeclared_call_mentioning_the_tool_is_fine() -> None:
    text = '<tool_call>{"name": "search", "arguments": {"q": "read_file"}}</tool_call>'
    assert_nothing(text)


def test_unclosed_tool_call_tag_then_prose_naming_the_tool() -> None:
    text = "<tool_call>\n" + json.dumps(CARD_CALL) + "\nI called render_adaptive_card."
    assert only_call(text).name == CARD


def test_wrapper_tag_inside_a_json_string_wraps_nothing() -> None:
    args = {"body": [{"type": "TextBlock", "text": "type <tool_call> to call a tool"}]}
    text = json.dumps({"name": CARD, "arguments": args}) + " Done: render_adaptive_card ran."
    assert only_call(text).arguments == args


def test_malformed_undeclared_call_is_ignored() -> None:
    text = '{"name": "search", "arguments": {"q": 1,}} ' + json.dumps(CARD_CALL)
    assert only_call(text).name == CARD


def test_pathological_nesting_never_raises() -> None:
    deep = "[" * 100_000
    assert_nothing(deep)
    assert_nothing(deep + "]" * 100_000)
    assert_nothing(deep + '"render_adaptive_card"' + "]" * 100_000)
    assert_nothing('{"a":' * 50_000 + '"render_adaptive_card"' + "}" * 50_000)
    text = deep + json.dumps(CARD_CALL) + "]" * 100_000
    assert_refused(text, CARD, "nesting too deep")
    nested_string = json.dumps({"name": CARD, "arguments": "[" * 100_000 + "]" * 100_000})
    assert_refused(nested_string, CARD, "arguments string is not valid JSON")


def test_thousands_of_unclosed_call_openings_are_refused() -> None:
    text = '{"name": "render_adaptive_card", "arguments": {"body": [' * 5_000
    assert_refused(text, CARD, "never closes")


# --- properties -----------------------------------------------------------------------------

# Small budgets keep the file well under 5 s; structured strategies cost more to draw.
FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STRUCTURED = settings(FAST, max_examples=30)

json_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
arguments_dicts = st.dictionaries(st.text(max_size=8), json_values, max_size=3)
# Prose with no brackets, colons or '<' (so no call syntax), but quotes, backslashes, the tool
# names as words and anything else.
prose = st.text(
    st.characters(exclude_characters="{}[]<:", exclude_categories=["Cs"]), max_size=40
) | st.sampled_from(["", "Sure, calling render_adaptive_card now.\n", 'He said "hi" \\ '])


def _shape(name: str, arguments: dict[str, Any], kind: int) -> Any:
    if kind == 0:
        return {"name": name, "arguments": arguments}
    if kind == 1:
        return {"name": name, "parameters": arguments}
    if kind == 2:
        return {"function": {"name": name, "arguments": arguments}}
    return {
        "type": "function",
        "id": "c1",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _wrap(payload: str, kind: int) -> str:
    return [
        payload,
        f"```json\n{payload}\n```",
        f"<tool_call>{payload}</tool_call>",
        f"[TOOL_CALLS][{payload}]",
        f"<|python_tag|>{payload}",
    ][kind]


@FAST
@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    rec = recover(text)
    assert rec.error is None or rec.calls == []


@FAST
@given(
    st.lists(
        st.sampled_from(
            [
                "{",
                "}",
                "[",
                "]",
                '"',
                "\\",
                ":",
                ",",
                " ",
                "\n",
                "'",
                "a",
                '"name"',
                CARD,
                READ,
                '"render_adaptive_card"',
                '"arguments"',
                "<tool_call>",
                "</tool_call>",
                "[TOOL_CALLS]",
                "<|python_tag|>",
                "\\u0041",
                "NaN",
                "1",
            ]
        ),
        max_size=60,
    ).map("".join)
)
def test_never_raises_on_bracket_heavy_text(text: str) -> None:
    rec = recover(text)
    assert isinstance(rec, Recovery)
    assert rec.error is None or rec.calls == []
    for call in rec.calls:
        assert call.name in DECLARED
        assert isinstance(call.arguments, dict)


@STRUCTURED
@given(
    before=prose,
    after=prose,
    name=st.sampled_from(DECLARED),
    arguments=arguments_dicts,
    shape=st.integers(0, 3),
    wrapper=st.integers(0, 4),
    ensure_ascii=st.booleans(),
    indent=st.sampled_from([None, 2]),
)
def test_valid_call_between_prose_is_recovered_exactly(
    before: str,
    after: str,
    name: str,
    arguments: dict[str, Any],
    shape: int,
    wrapper: int,
    ensure_ascii: bool,
    indent: int | None,
) -> None:
    payload = json.dumps(_shape(name, arguments, shape), ensure_ascii=ensure_ascii, indent=indent)
    rec = recover(before + _wrap(payload, wrapper) + after)
    assert rec == Recovery(calls=[RecoveredCall(name, arguments)])


@STRUCTURED
@given(
    st.lists(st.tuples(st.sampled_from(DECLARED), arguments_dicts), min_size=1, max_size=3),
    prose,
)
def test_several_calls_are_recovered_in_order(
    calls: list[tuple[str, dict[str, Any]]], separator: str
) -> None:
    text = separator.join(json.dumps({"name": n, "arguments": a}) for n, a in calls)
    assert recover(text).calls == [RecoveredCall(n, a) for n, a in calls]


@FAST
@given(st.text() | st.text(alphabet="{}[]\":, \\namerdflu_'<>"))
def test_text_without_a_declared_name_yields_no_call(text: str) -> None:
    rec = recover(text, ("read",))
    if "read" not in text:
        assert rec == Recovery()


@STRUCTURED
@given(name=st.sampled_from(DECLARED), arguments=arguments_dicts, shape=st.integers(0, 3))
def test_calls_to_other_tools_are_never_recovered(
    name: str, arguments: dict[str, Any], shape: int
) -> None:
    text = json.dumps(_shape(name, arguments, shape))
    assert recover(text, ("other_tool",)) == Recovery()


# --- the scanner against a character-by-character reference --------------------------------


def _reference_spans(text: str) -> list[tuple[int, int, bool]]:
    """Maximal bracket spans (start, end, inside-an-unclosed-bracket), one char at a time."""
    spans: list[tuple[int, int, bool]] = []
    i = 0
    while i < len(text):
        if text[i] not in "{[":
            i += 1
            continue
        stack: list[int] = []
        closed: list[tuple[int, int, int]] = []
        in_string = False
        j = i
        while j < len(text):
            c = text[j]
            if in_string:
                if c == "\\":
                    j += 2
                    continue
                in_string = c != '"'
            elif c == '"':
                in_string = True
            elif c in "{[":
                stack.append(j)
            elif c in "}]":
                opener = stack.pop()
                while closed and closed[-1][2] > len(stack):
                    closed.pop()
                closed.append((opener, j + 1, len(stack)))
                if not stack:
                    break
            j += 1
        if not stack:
            spans.append((i, j + 1, False))
            i = j + 1
        else:
            return spans + [(start, end, True) for start, end, _ in closed]
    return spans


@settings(FAST, max_examples=250)
@example('{ {{"ab"}} [["ab"]]')  # unclosed outer; inner runs of openers closed exactly
@example('{"ab' + "[" * 40 + '"ab"' + "]" * 39)
@given(
    st.lists(
        st.sampled_from(
            [
                *("{", "}", "[", "]", '"', "\\", "a", "ab", " ", ":", '"ab"', 'x\\"y'),
                *("[" * 35, "]" * 35, "{" * 33, "}" * 33),  # deeper than the shallow patterns
            ]
        ),
        max_size=80,
    ).map("".join)
)
def test_scanner_matches_reference(text: str) -> None:
    # The fast scanner (C-level skipping, shallow spans, run-at-a-time walking) must look at
    # exactly the spans a naive scanner finds that hold a declared name.
    from pytest_cardprobe.judge import recovery

    looked_at: list[tuple[int, int, bool]] = []
    consider = recovery._Reply.consider

    def spy(self: Any, start: int, stop: int, *, enclosed: bool) -> None:
        looked_at.append((start, stop, enclosed))
        consider(self, start, stop, enclosed=enclosed)

    with patch.object(recovery._Reply, "consider", spy):
        recover_tool_calls(text, ["ab"])
    assert looked_at == [s for s in _reference_spans(text) if "ab" in text[s[0] : s[1]]]
