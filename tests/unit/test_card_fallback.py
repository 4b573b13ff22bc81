"""Invented actions, and fallbacks respected (docs/design.md §5, "Invented types").

An ``Action.*`` outside the vocabulary is as invented as an unknown element. But a renderer
replaces what it cannot draw by its ``fallback``, and an element without one by the nearest
element around it that has one, so an unknown type covered that way is not a blank. The two
card shapes below follow two of the official Adaptive Cards samples that exist to show
fallback (a column set whose columns fall back, an action set whose actions fall back through
chains); the cards themselves are written for this repository.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.judge.card import (
    ACTION_TYPES,
    find_invented_types,
    find_unknown_types,
    judge_card,
)
from pytest_cardprobe.suite.loader import DEFAULT_VOCABULARY
from pytest_cardprobe.types import FailureClass

WRONG = FailureClass.WRONG_ELEMENT


def judge(card: Any, accept: tuple[str, ...] = ("ColumnSet",), **kw: Any) -> Any:
    return judge_card(json.dumps(card), accept=accept, requires_input=False, **kw)


def text(words: str) -> dict[str, Any]:
    return {"type": "TextBlock", "text": words}


# Columns that fall back: the first column holds an element no renderer knows and falls back
# to a plain column; the second holds the same and is dropped; the third is ordinary.
COLUMNS = {
    "type": "AdaptiveCard",
    "version": "1.2",
    "body": [
        {
            "type": "ColumnSet",
            "columns": [
                {
                    "type": "Column",
                    "items": [{"type": "Sparkline", "points": [3, 1, 4]}],
                    "fallback": {"type": "Column", "items": [text("Sales rose in March.")]},
                },
                {"type": "Column", "items": [{"type": "Sparkline"}], "fallback": "drop"},
                {"type": "Column", "items": [text("Totals are in euros.")]},
            ],
        }
    ],
}


def chain(*types: str, last: dict[str, Any] | None = None) -> dict[str, Any]:
    """``types[0]`` falling back to ``types[1]`` … and finally to ``last`` (if given)."""
    node: dict[str, Any] | None = last
    for t in reversed(types):
        node = {"type": t, "title": t, **({"fallback": node} if node is not None else {})}
    assert node is not None
    return node


SHOW = {
    "type": "Action.ShowCard",
    "title": "More",
    "card": {
        "type": "AdaptiveCard",
        "body": [text("Anything else?")],
        "actions": [{"type": "Action.Submit", "title": "No"}],
    },
}
GOOD_CHAINS = [
    chain("Teleport", "Beam", last={"type": "Action.Submit", "title": "Send", "data": {"n": 7}}),
    chain("Teleport", "Beam", last={"type": "Action.OpenUrl", "title": "Docs", "url": "https://example.org"}),
    chain("Teleport", "Beam", "Warp", last=SHOW),
]  # fmt: skip
# The fourth chain falls back through unknown types to one more unknown type: that slot stays
# empty whatever the renderer does, so its last link is invented.
DEAD_CHAIN = chain("Teleport", "Beam", "Vanish")


def actions_card(chains: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "AdaptiveCard",
        "version": "1.2",
        "body": [{"type": "ActionSet", "actions": chains}, text("Pick what happens next.")],
        "actions": chains,
    }


class TestInventedActions:
    def test_an_action_outside_the_vocabulary_is_invented(self) -> None:
        card = [
            {"type": "Input.Date", "id": "when"},
            {"type": "ActionSet", "actions": [{"type": "Action.LaunchRocket", "title": "Go"}]},
        ]
        verdict = judge(card, accept=("Input.Date",))
        assert (verdict.passed, verdict.label, verdict.failure) == (
            False,
            "invented Action.LaunchRocket",
            WRONG,
        )

    def test_the_actions_of_adaptive_cards_1_6_are_known(self) -> None:
        card = {
            "type": "AdaptiveCard",
            "body": [text("x")],
            "actions": [{"type": t, "title": t} for t in ACTION_TYPES],
        }
        verdict = judge(card, accept=("TextBlock",))
        assert verdict.passed and verdict.unknown_types == ()

    def test_a_suite_vocabulary_may_add_an_action(self) -> None:
        card = [text("x"), {"type": "ActionSet", "actions": [{"type": "Action.Popover"}]}]
        vocabulary = (*DEFAULT_VOCABULARY, "Action.Popover")
        assert judge(card, accept=("TextBlock",), vocabulary=vocabulary).passed
        assert not judge(card, accept=("TextBlock",)).passed

    def test_allow_unknown_types_still_passes_them(self) -> None:
        card = [text("x"), {"type": "ActionSet", "actions": [{"type": "Action.LaunchRocket"}]}]
        verdict = judge(card, accept=("TextBlock",), allow_unknown=True)
        assert verdict.passed and verdict.unknown_types == ("Action.LaunchRocket",)


class TestFallbacks:
    def test_columns_that_fall_back_pass(self) -> None:
        verdict = judge(COLUMNS)
        assert verdict.passed, verdict.label
        assert verdict.label == "ok Column ColumnSet Sparkline TextBlock"
        assert verdict.unknown_types == ("Sparkline",)  # recorded, not failed

    def test_without_the_fallbacks_the_same_columns_are_invented(self) -> None:
        bare = json.loads(json.dumps(COLUMNS))
        for column in bare["body"][0]["columns"]:
            column.pop("fallback", None)
        assert judge(bare).label == "invented Sparkline"

    def test_action_chains_ending_in_a_known_action_pass(self) -> None:
        verdict = judge(actions_card(GOOD_CHAINS), accept=("ActionSet",))
        assert verdict.passed, verdict.label
        assert verdict.unknown_types == ("Beam", "Teleport", "Warp")

    def test_a_chain_that_ends_in_an_unknown_type_fails_on_its_last_link(self) -> None:
        verdict = judge(actions_card([*GOOD_CHAINS, DEAD_CHAIN]), accept=("ActionSet",))
        assert (verdict.label, verdict.failure) == ("invented Vanish", WRONG)
        assert verdict.unknown_types == ("Beam", "Teleport", "Vanish", "Warp")

    def test_drop_is_the_authors_choice(self) -> None:
        for drop in ("drop", "Drop", " DROP "):
            card = [text("x"), {"type": "Action.Beam", "fallback": drop}]
            assert judge(card, accept=("TextBlock",)).passed
        assert not judge(
            [text("x"), {"type": "Beam", "fallback": "dropped"}], ("TextBlock",)
        ).passed

    def test_an_unknown_element_inside_a_container_that_falls_back(self) -> None:
        inner = {"type": "Container", "items": [{"type": "Gauge3D"}]}
        covered = [{**inner, "fallback": text("No gauge here.")}]
        assert judge(covered, accept=("Container",)).passed
        dead = [{**inner, "fallback": {"type": "Gauge2D"}}]
        assert judge(dead, accept=("Container",)).label == "invented Gauge2D Gauge3D"

    def test_the_outer_fallback_covers_what_an_inner_dead_chain_leaves(self) -> None:
        inner = {
            "type": "Container",
            "items": [{"type": "Gauge3D"}],
            "fallback": {"type": "Gauge2D"},
        }
        card = [{"type": "Container", "items": [inner], "fallback": "drop"}]
        assert judge(card, accept=("Container",)).passed

    def test_a_fallback_on_a_known_element_is_judged_on_its_own(self) -> None:
        card = [{"type": "Image", "url": "x", "fallback": {"type": "Blink"}}]
        assert judge(card, accept=("Image",)).label == "invented Blink"


KNOWN = ("TextBlock", "Container", "Action.Submit")
UNKNOWN = ("Blip", "Action.Zap", "Graph")


def cards(with_fallbacks: bool) -> st.SearchStrategy[dict[str, Any]]:
    fallback = st.sampled_from(["drop", None]) if with_fallbacks else st.none()

    def element(children: st.SearchStrategy[list[dict[str, Any]]]) -> st.SearchStrategy[Any]:
        return st.builds(
            lambda t, items, fb: {"type": t, "items": items, **({"fallback": fb} if fb else {})},
            st.sampled_from(KNOWN + UNKNOWN),
            children,
            fallback,
        )

    leaves = element(st.just([]))
    return st.recursive(leaves, lambda inner: element(st.lists(inner, max_size=3)), max_leaves=12)


@settings(max_examples=150, derandomize=True)
@given(cards(with_fallbacks=False))
def test_with_no_fallbacks_every_unknown_type_is_invented(card: dict[str, Any]) -> None:
    # The rule before fallbacks counted: nothing excuses an unknown type.
    from pytest_cardprobe.judge.card import collect_types

    unknown = find_unknown_types(collect_types(card), DEFAULT_VOCABULARY)
    assert find_invented_types(card, DEFAULT_VOCABULARY) == unknown


@settings(max_examples=150, derandomize=True)
@given(cards(with_fallbacks=True))
def test_dropping_every_unknown_element_leaves_nothing_invented(card: dict[str, Any]) -> None:
    def drop_unknown(node: dict[str, Any]) -> dict[str, Any]:
        out = {**node, "items": [drop_unknown(c) for c in node["items"]]}
        if node["type"] in UNKNOWN:
            out["fallback"] = "drop"
        return out

    invented = find_invented_types(card, DEFAULT_VOCABULARY)
    assert set(invented) <= set(UNKNOWN)
    assert find_invented_types(drop_unknown(card), DEFAULT_VOCABULARY) == ()
