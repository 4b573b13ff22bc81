"""The Adaptive Card judge, fed the kinds of replies small local models actually write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.judge.card import (
    REFERENCE_VOCABULARY,
    TOLERATED_TYPES,
    CardDetection,
    detect_card,
    infra_verdict,
    judge_card,
)
from pytest_cardprobe.types import FailureClass, Verdict

DATE = ["Input.Date"]
MALFORMED = FailureClass.MALFORMED
WRONG = FailureClass.WRONG_ELEMENT

DATE_ARRAY = '[{"type":"TextBlock","text":"Pick a day"},{"type":"Input.Date","id":"d"}]'
FULL_CARD = json.dumps(
    {
        "type": "AdaptiveCard",
        "version": "1.5",
        "body": [
            {"type": "TextBlock", "text": "When?"},
            {"type": "Input.Date", "id": "when"},
        ],
        "actions": [{"type": "Action.Submit", "title": "OK"}],
    },
    indent=2,
)


def judge(text: str, accept: list[str] | None = None, requires_input: bool = False) -> Verdict:
    return judge_card(
        text, accept=DATE if accept is None else accept, requires_input=requires_input
    )


# --- detection and the base verdict ------------------------------------------------------

PASSING = [
    pytest.param(DATE_ARRAY, "ok Input.Date TextBlock", id="bare-array"),
    pytest.param(FULL_CARD, "ok Action.Submit Input.Date TextBlock", id="full-adaptive-card"),
    pytest.param(f"```json\n{DATE_ARRAY}\n```", "ok Input.Date TextBlock", id="json-fence"),
    pytest.param(
        f"```\n{FULL_CARD}\n```", "ok Action.Submit Input.Date TextBlock", id="bare-fence"
    ),
    pytest.param(f"```json\n{DATE_ARRAY}\n", "ok Input.Date TextBlock", id="unbalanced-fence"),
    pytest.param(f"  `{DATE_ARRAY}`  \n", "ok Input.Date TextBlock", id="stray-backticks"),
    pytest.param(f"{DATE_ARRAY}\n```", "ok Input.Date TextBlock", id="stray-closing-fence"),
    pytest.param(
        '{"type":"TextBlock","text":"Pick"},\n{"type":"Input.Date","id":"d"}',
        "ok Input.Date TextBlock",
        id="objects-comma-separated",
    ),
    pytest.param(
        '```json\n{"type":"Input.Date","id":"d"}, {"type":"TextBlock","text":"x"}\n```',
        "ok Input.Date TextBlock",
        id="fenced-objects-comma-separated",
    ),
    pytest.param('{"type":"Input.Date","id":"d"}', "ok Input.Date", id="single-element"),
]


@pytest.mark.parametrize(("reply", "label"), PASSING)
def test_card_replies_pass(reply: str, label: str) -> None:
    verdict = judge(reply)
    assert verdict == Verdict(True, label, None, verdict.types, ())
    assert verdict.failure is None


MALFORMED_REPLIES = [
    pytest.param(
        '{"type":"TextBlock","text":"Pick a day"}\n{"type":"Input.Date","id":"d"}',
        "broken: invalid JSON Extra data: line 2 column 1",
        id="two-objects-on-separate-lines-no-comma",
    ),
    pytest.param(
        '```json\n{"type":"TextBlock","text":"a"}\n{"type":"Input.Date"}\n```',
        "broken: invalid JSON Extra data: line 2 column 1",
        id="fenced-two-objects-no-comma",
    ),
    pytest.param(
        '[{"type":"Input.Date","id":"d",}]',
        "broken: invalid JSON Expecting property name enclosed in double quotes: line 1 column 32",
        id="trailing-comma",
    ),
    pytest.param(
        '```json\n[{"type": "Input.Date", "id": "d"\n',
        "broken: invalid JSON Expecting ',' delimiter: line 1 column 34",
        id="truncated-in-unbalanced-fence",
    ),
    pytest.param(
        "Here you go:\n```json\n[{'type': 'Input.Date'}]\n```",
        "broken: invalid JSON Expecting property name enclosed in double quotes: line 1 column 3",
        id="python-quotes-in-fence-with-prose",
    ),
    pytest.param('{"answer": 4}', 'broken: not a renderable card (object has no "type")', id="obj"),
    pytest.param("[]", "broken: not a renderable card (empty array)", id="empty-array"),
    pytest.param("[1,2]", "broken: not a renderable card (array of non-objects)", id="numbers"),
    pytest.param('"str"', "broken: not a renderable card (top-level string)", id="json-string"),
    pytest.param(
        '{"type": ""}', 'broken: not a renderable card (object has no "type")', id="blank"
    ),
    pytest.param(
        '{"type":"AdaptiveCard","body":{"type":"Input.Date"}}',
        "broken: not a renderable card (AdaptiveCard body is not an array)",
        id="card-body-not-array",
    ),
    pytest.param(
        '{"type":"Input.Date","id":"a","id":"b"}', "duplicate-key", id="duplicate-key-top-level"
    ),
    pytest.param(
        '{"type":"AdaptiveCard","body":[{"type":"Input.Date","type":"Input.Text"}]}',
        "duplicate-key",
        id="duplicate-key-nested",
    ),
    pytest.param(
        '```json\n[{"type":"Input.Date","id":"a","id":"b"}]\n```\nDone!',
        "duplicate-key",
        id="duplicate-key-beats-prose-with-card",
    ),
    pytest.param(
        f"Sure! Here is your card:\n```json\n{DATE_ARRAY}\n```\nLet me know if you need more.",
        "prose-with-card",
        id="fenced-card-wrapped-in-prose",
    ),
    pytest.param(
        f"Here is the card:\n```json\n{DATE_ARRAY}\n", "prose-with-card", id="prose-before"
    ),
    pytest.param(f"```json\n{DATE_ARRAY}\n```\nEnjoy!", "prose-with-card", id="prose-after"),
]


@pytest.mark.parametrize(("reply", "label"), MALFORMED_REPLIES)
@pytest.mark.parametrize("accept", [DATE, []], ids=["case", "control"])
def test_base_failures_stand_whatever_the_case_wants(
    reply: str, label: str, accept: list[str]
) -> None:
    verdict = judge(reply, accept)
    assert (verdict.passed, verdict.label, verdict.failure) == (False, label, MALFORMED)


def test_two_objects_without_comma_are_not_repaired() -> None:
    # The seed article's qwen3-coder failure: the reference judge fails it, so must we.
    det = detect_card('{"type":"TextBlock"}\n{"type":"Input.Date"}')
    assert not det.parsed and not det.bracketed and det.looks_like_json
    assert det.error == "Extra data: line 2 column 1"


def test_detection_reports_its_stage() -> None:
    assert detect_card(DATE_ARRAY) == CardDetection(
        value=json.loads(DATE_ARRAY), parsed=True, is_card=True, looks_like_json=True
    )
    wrapped = detect_card(f"Sure:\n```json\n{DATE_ARRAY}\n```")
    assert (wrapped.fenced, wrapped.wrapped_in_prose, wrapped.is_card) == (True, True, True)
    joined = detect_card('{"type":"A"},{"type":"B"}')
    assert joined.bracketed and joined.value == [{"type": "A"}, {"type": "B"}]
    dup = detect_card('{"a":{"b":1,"b":2}}')
    assert dup.has_duplicate_keys and dup.duplicate_keys == ("b",)
    assert not detect_card("The answer is 4.").looks_like_json


# --- replies the first judge got wrong -----------------------------------------------------

UNFENCED_WITH_PROSE = [
    pytest.param(f"{DATE_ARRAY}\nThis card lets you pick a date.", id="card-then-sentence"),
    pytest.param(f"Here is your card:\n{FULL_CARD}", id="sentence-then-card"),
    pytest.param(f"Sure!\n\n{FULL_CARD}\n\nTap OK when done.", id="card-between-sentences"),
]


@pytest.mark.parametrize("reply", UNFENCED_WITH_PROSE)
@pytest.mark.parametrize("accept", [DATE, []], ids=["case", "control"])
def test_unfenced_card_with_prose_is_prose_with_card(reply: str, accept: list[str]) -> None:
    verdict = judge(reply, accept)
    assert (verdict.passed, verdict.label, verdict.failure) == (False, "prose-with-card", MALFORMED)
    assert "Input.Date" in verdict.types


@pytest.mark.parametrize(
    "reply",
    [
        # The lines of a pretty-printed card cut short: its inner elements are whole JSON
        # objects on lines of their own, and none of them may pass for the card.
        pytest.param(FULL_CARD[: FULL_CARD.index('"actions"')], id="truncated-pretty-card"),
        pytest.param(f"{DATE_ARRAY} is what I would send.", id="json-then-words-same-line"),
    ],
)
def test_json_that_is_not_a_block_stays_broken(reply: str) -> None:
    verdict = judge(reply)
    assert verdict.label.startswith("broken: invalid JSON") and verdict.failure is MALFORMED


TEXT_CALLS = [
    pytest.param(
        json.dumps(
            {
                "type": "function",
                "function": {"name": "render_adaptive_card", "arguments": {"body": []}},
            }
        ),
        id="openai-shaped",
    ),
    pytest.param(
        '{"name": "render_adaptive_card", "arguments": {"body": [{"type": "Input.Date"}]}}',
        id="name-arguments",
    ),
    pytest.param('{"name": "show_card", "parameters": {"title": "x"}}', id="name-parameters"),
    pytest.param(
        '<tool_call>\n{"name": "render_adaptive_card", "arguments": {"body": []}}\n</tool_call>',
        id="tool-call-tags",
    ),
    pytest.param(
        '```json\n[{"function": {"name": "render_adaptive_card", "arguments": "{}"}}]\n```',
        id="fenced-list-of-calls",
    ),
    pytest.param(
        'I will call the tool.\n{"name": "render_adaptive_card", "arguments": {}}',
        id="call-after-prose",
    ),
]


@pytest.mark.parametrize("reply", TEXT_CALLS)
@pytest.mark.parametrize("accept", [DATE, []], ids=["case", "control"])
def test_call_written_as_text_is_not_a_card(reply: str, accept: list[str]) -> None:
    verdict = judge(reply, accept)
    assert verdict == Verdict(False, "text-call", MALFORMED, (), ())


# A card whose text mentions a call wrapper: the wrapper is inside a JSON string.
MENTIONS = json.dumps(
    [
        {"type": "TextBlock", "text": "Models wrap calls in <tool_call> or [TOOL_CALLS] tags."},
        {"type": "Input.Date", "id": "d", "label": "<|python_tag|> day"},
    ]
)


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        pytest.param(MENTIONS, "ok Input.Date TextBlock", id="whole-reply"),
        pytest.param(f"```json\n{MENTIONS}\n```", "ok Input.Date TextBlock", id="fenced"),
        pytest.param(f"  `{MENTIONS}`", "ok Input.Date TextBlock", id="stray-backticks"),
        pytest.param(f"Here:\n{MENTIONS}\nDone.", "prose-with-card", id="block-in-prose"),
        pytest.param(f"Here:\n```json\n{MENTIONS}\n```", "prose-with-card", id="fence-in-prose"),
    ],
)
def test_a_card_that_mentions_a_call_wrapper_in_its_text_is_a_card(reply: str, label: str) -> None:
    """A wrapper inside a string of the card wraps nothing (recovery rules the same, §6)."""
    assert judge(reply, DATE).label == label


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(f"<tool_call>\n{MENTIONS}\n</tool_call>", id="card-in-tags"),
        pytest.param(f"[TOOL_CALLS]\n```json\n{MENTIONS}\n```", id="tag-before-fence"),
        pytest.param('{"type": "TextBlock", "text": "<tool_call>', id="broken-json"),
    ],
)
def test_a_call_wrapper_outside_the_json_is_still_a_text_call(reply: str) -> None:
    assert judge(reply, DATE).label == "text-call"


def test_card_with_actions_and_no_body_is_a_card() -> None:
    reply = '{"type":"AdaptiveCard","actions":[{"type":"Action.OpenUrl","url":"https://x"}]}'
    assert detect_card(reply).is_card
    verdict = judge(reply)
    assert (verdict.label, verdict.failure) == (
        "wrong-shape got Action.OpenUrl want Input.Date",
        WRONG,
    )
    empty = judge('{"type":"AdaptiveCard","version":"1.5"}')
    assert empty.label == "broken: not a renderable card (AdaptiveCard has no body and no actions)"


# Cards in the shapes of the official Adaptive Cards samples (see data/cards/README.md).
SAMPLE_CARDS = sorted((Path(__file__).parent / "data" / "cards").glob("*.json"))


@pytest.mark.parametrize("path", SAMPLE_CARDS, ids=[p.stem for p in SAMPLE_CARDS])
def test_sample_shaped_cards_pass_with_their_element_types(path: Path) -> None:
    sample = json.loads(path.read_text(encoding="utf-8"))
    for text in (
        json.dumps(sample["card"], indent=2),
        f"```json\n{json.dumps(sample['card'])}\n```",
    ):
        verdict = judge_card(text, accept=sample["accept"], requires_input=False)
        assert verdict.passed, verdict.label
        assert verdict.types == tuple(sample["types"])
        assert verdict.unknown_types == ()


def test_sample_shaped_card_followed_by_a_sentence_is_prose_with_card() -> None:
    sample = json.loads((Path(__file__).parent / "data" / "cards" / "form.json").read_text())
    reply = json.dumps(sample["card"], indent=2) + "\nLet me know if you want more rooms."
    assert judge(reply, sample["accept"]).label == "prose-with-card"


# --- prose ---------------------------------------------------------------------------------

PROSE = [
    pytest.param("You can pick a date in the calendar app.", id="plain-prose"),
    pytest.param("", id="empty"),
    pytest.param("   \n ", id="whitespace"),
    pytest.param("4", id="bare-number"),
    pytest.param(
        "Here is how to do it:\n```python\nimport datetime\nprint(datetime.date.today())\n```",
        id="python-code",
    ),
    pytest.param(
        'To build it, call render({"type": "Input.Date"}) from your client.', id="json-in-prose"
    ),
]


@pytest.mark.parametrize("reply", PROSE)
def test_prose_is_declined_when_a_card_is_wanted(reply: str) -> None:
    assert judge(reply) == Verdict(False, "prose", FailureClass.DECLINED, (), ())


@pytest.mark.parametrize("reply", PROSE)
def test_prose_passes_the_negative_control(reply: str) -> None:
    assert judge(reply, accept=[]) == Verdict(True, "ok prose", None, (), ())


@pytest.mark.parametrize(
    "reply", [pytest.param(DATE_ARRAY, id="bare"), pytest.param(FULL_CARD, id="full")]
)
def test_card_fails_the_negative_control(reply: str) -> None:
    verdict = judge(reply, accept=[])
    assert (verdict.passed, verdict.label, verdict.failure) == (False, "unwanted-card", WRONG)
    assert "Input.Date" in verdict.types


# --- shape -----------------------------------------------------------------------------------

SHAPES = [
    pytest.param(
        '[{"type":"Table","rows":[]}]',
        ["Input.Date"],
        False,
        "wrong-shape got Table want Input.Date",
        id="wrong-shape",
    ),
    pytest.param(
        '{"type":"AdaptiveCard","body":[{"type":"TextBlock"},{"type":"FactSet"}]}',
        ["Chart.Pie", "Chart.Donut"],
        False,
        "wrong-shape got FactSet TextBlock want Chart.Pie|Chart.Donut",
        id="wrong-shape-full-card-several-wanted",
    ),
    pytest.param(
        '[{"text":"no types at all"}]',
        ["Table"],
        False,
        "wrong-shape got - want Table",
        id="wrong-shape-no-types",
    ),
    pytest.param(
        '[{"type":"TextBlock","text":"What date?"}]',
        ["Input.Date"],
        True,
        "no-input",
        id="requires-input-without-input",
    ),
    pytest.param(
        '[{"type":"Input.Text","id":"t"}]',
        ["Input.Date"],
        True,
        "wrong-shape got Input.Text want Input.Date",
        id="requires-input-wrong-input",
    ),
]


@pytest.mark.parametrize(("reply", "accept", "needs_input", "label"), SHAPES)
def test_shape_failures(reply: str, accept: list[str], needs_input: bool, label: str) -> None:
    verdict = judge(reply, accept, needs_input)
    assert (verdict.passed, verdict.label, verdict.failure) == (False, label, WRONG)


NESTED = [
    pytest.param(
        {
            "type": "ColumnSet",
            "columns": [
                {"type": "Column", "items": [{"type": "TextBlock", "text": "From"}]},
                {"type": "Column", "items": [{"type": "Input.Date", "id": "from"}]},
            ],
        },
        ["Input.Date"],
        ("Column", "ColumnSet", "Input.Date", "TextBlock"),
        id="input-inside-columnset-column",
    ),
    pytest.param(
        {
            "type": "Table",
            "columns": [{"width": 1}],
            "rows": [
                {
                    "type": "TableRow",
                    "cells": [{"type": "TableCell", "items": [{"type": "TextBlock"}]}],
                }
            ],
        },
        ["Table"],
        ("Table", "TableCell", "TableRow", "TextBlock"),
        id="table-rows-cells",
    ),
    pytest.param(
        {
            "type": "AdaptiveCard",
            "body": [
                {
                    "type": "Carousel",
                    "pages": [{"type": "CarouselPage", "items": [{"type": "Image", "url": "x"}]}],
                }
            ],
        },
        ["Carousel"],
        ("AdaptiveCard", "Carousel", "CarouselPage", "Image"),
        id="carousel-pages",
    ),
]


@pytest.mark.parametrize(("card", "accept", "types"), NESTED)
def test_types_are_found_at_any_depth(
    card: dict[str, Any], accept: list[str], types: tuple[str, ...]
) -> None:
    verdict = judge(json.dumps(card), accept, requires_input=accept[0].startswith("Input."))
    shown = " ".join(t for t in types if t != "AdaptiveCard")
    assert verdict == Verdict(True, f"ok {shown}", None, types, ())


INVENTED = json.dumps(
    [
        {"type": "DatePicker", "id": "d"},
        {"type": "Input.Date", "id": "e", "inlines": [{"type": "TextRun"}]},
        {"type": "ActionSet", "actions": [{"type": "Action.Execute"}]},
        {"type": "Sparkle"},
    ]
)


def test_invented_element_types_fail_as_wrong_element() -> None:
    # An element the renderer does not know draws as an invisible blank: not a pass.
    verdict = judge(INVENTED, requires_input=True)
    assert (verdict.passed, verdict.label, verdict.failure) == (
        False,
        "invented DatePicker Sparkle",
        WRONG,
    )
    assert verdict.unknown_types == ("DatePicker", "Sparkle")
    assert set(TOLERATED_TYPES) & set(verdict.unknown_types) == set()


def test_allow_unknown_types_records_them_and_passes() -> None:
    verdict = judge_card(INVENTED, accept=DATE, requires_input=True, allow_unknown=True)
    assert verdict.passed and verdict.unknown_types == ("DatePicker", "Sparkle")


def test_invented_type_beats_no_input() -> None:
    verdict = judge('[{"type":"Foo.Bar"}]', requires_input=True)
    assert (verdict.label, verdict.failure) == ("invented Foo.Bar", WRONG)


@pytest.mark.parametrize(
    "card",
    [
        pytest.param(
            {"type": "Input.ChoiceSet", "choices": [{"type": "Input.Choice", "title": "a"}]},
            id="input-choice",
        ),
        pytest.param({"type": "FactSet", "facts": [{"type": "Fact", "title": "a"}]}, id="fact"),
        pytest.param(
            {"type": "Media", "sources": [{"type": "MediaSource", "url": "u"}]}, id="media-source"
        ),
        pytest.param(
            {
                "type": "ActionSet",
                "actions": [{"type": "Action.Submit", "data": {"type": "Whatever.Payload"}}],
            },
            id="data-payload",
        ),
        pytest.param(
            {
                "type": "AdaptiveCard",
                "body": [{"type": "TextBlock", "text": "hi"}],
                "authentication": {
                    "tokenExchangeResource": {"type": "Exchange", "id": "x"},
                    "buttons": [{"type": "signin", "value": "u"}],
                },
            },
            id="authentication",
        ),
    ],
)
def test_values_that_carry_a_type_are_not_elements(card: dict[str, Any]) -> None:
    verdict = judge_card(json.dumps(card), accept=[card["type"]], requires_input=False)
    assert verdict.passed and verdict.unknown_types == ()


def test_elements_are_followed_into_action_cards_fallbacks_and_refresh() -> None:
    card = {
        "type": "AdaptiveCard",
        "refresh": {"action": {"type": "Action.Execute"}},
        "body": [
            {"type": "Image", "selectAction": {"type": "Action.OpenUrl"}, "fallback": "drop"},
            {"type": "Media", "fallback": {"type": "Blink"}},
        ],
        "actions": [{"type": "Action.ShowCard", "card": {"type": "AdaptiveCard", "body": [
            {"type": "Input.Text", "inlineAction": {"type": "Action.Submit"}}]}}],
    }  # fmt: skip
    verdict = judge_card(json.dumps(card), accept=["Image"], requires_input=False)
    assert verdict.label == "invented Blink"
    assert set(verdict.types) >= {"Action.Execute", "Action.OpenUrl", "Input.Text", "Blink"}


def test_custom_vocabulary_still_knows_nesting_types() -> None:
    reply = '[{"type":"Table","rows":[{"type":"TableRow"}]},{"type":"Chart.Pie"}]'
    verdict = judge_card(reply, accept=["Table"], requires_input=False, vocabulary=["Table"])
    assert verdict.unknown_types == ("Chart.Pie",)


def test_reference_vocabulary_has_33_top_level_types() -> None:
    assert len(set(REFERENCE_VOCABULARY)) == len(REFERENCE_VOCABULARY) == 33


# --- plain data ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "verdict",
    [
        pytest.param(judge(DATE_ARRAY), id="pass"),
        pytest.param(judge('[{"type":"Wobble"}]'), id="invented"),
        pytest.param(judge("nope"), id="prose"),
        pytest.param(infra_verdict("ConnectError: [Errno 111] Connection refused"), id="infra"),
    ],
)
def test_to_dict_round_trip(verdict: Verdict) -> None:
    data = verdict.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert Verdict.from_dict(data) == verdict


def test_infra_verdict_is_short_and_single_line() -> None:
    verdict = infra_verdict("HTTP 500\n" + "x" * 500)
    assert verdict.failure is FailureClass.INFRA and not verdict.passed
    assert verdict.label.startswith("infra: HTTP 500 x")
    assert "\n" not in verdict.label and len(verdict.label) <= 120
    assert verdict.to_dict()["failure"] == "infra"


# --- properties ------------------------------------------------------------------------------

_json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_json_value = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "body", "items", "id"]) | st.text(max_size=4), inner
        )
    ),
    max_leaves=12,
)
_jsonish_text = st.text(alphabet='{}[]",:` \ntypeAdaptiveCrdInput.Dt\\json1', max_size=80)
_decorated = st.tuples(
    st.sampled_from(["", "```json\n", "```", "Sure:\n```\n", "`"]),
    _json_value.map(json.dumps),
    st.sampled_from(["", "\n```", "```\nBye", ",{}", "\n{}", "`"]),
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=st.text() | _jsonish_text | _decorated, control=st.booleans(), needs=st.booleans())
def test_judge_never_raises(text: str, control: bool, needs: bool) -> None:
    verdict = judge_card(text, accept=[] if control else DATE, requires_input=needs)
    assert verdict.passed == (verdict.failure is None)
    assert "\n" not in verdict.label and len(verdict.label) <= 120
    assert Verdict.from_dict(verdict.to_dict()) == verdict


def test_duplicate_keys_are_noted_per_reply_and_per_thread() -> None:
    """The parser is shared; the keys it notes as repeated belong to one parse only."""
    import threading

    from pytest_cardprobe.judge.card import detect_card

    twice = '[{"type":"TextBlock","text":"a","text":"b"},{"type":"Image","url":"u","url":"v"}]'
    assert detect_card(twice).duplicate_keys == ("text", "url")
    assert detect_card('{"type":"TextBlock","text":"a"}').duplicate_keys == ()
    seen: list[tuple[str, ...]] = []

    def judge(text: str) -> None:
        for _ in range(200):
            seen.append(detect_card(text).duplicate_keys)

    threads = [threading.Thread(target=judge, args=(t,)) for t in (twice, '{"type":"Image"}')]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(set(seen)) == [(), ("text", "url")]


@settings(max_examples=400, deadline=None)
@given(text=st.text() | _jsonish_text | _decorated)
def test_card_parser_says_what_the_json_decoder_says(text: str) -> None:
    """The parser answers text that cannot begin JSON without running the decoder; its verdict
    and message are the decoder's all the same, whatever the text."""
    from pytest_cardprobe.judge.carddetect import _loads

    ok, value, _, error = _loads(text)
    try:
        # The decoder itself, as the parser runs it: json.loads adds a check of its own for a
        # leading byte-order mark ("Unexpected UTF-8 BOM") that the decoder does not make.
        expected = json.JSONDecoder().decode(text)
    except json.JSONDecodeError as exc:
        assert not ok and error == f"{exc.msg}: line {exc.lineno} column {exc.colno}"
    except (ValueError, RecursionError):
        assert not ok
    else:
        assert not ok or value == expected or value != value  # NaN is not equal to itself
