"""The Adaptive Card judge: turn one reply string into a verdict (docs/design.md §5).

Pure and deterministic: no HTTP, no pytest. Both channels are scored here; the tool channel
hands over the JSON of the call's ``body`` argument as the reply text.

The judge runs in two stages. :func:`detect_card` (``judge/carddetect.py``) finds what the
reply holds (a parsed JSON value, where it came from, what went wrong); :func:`judge_card`
turns that into a base verdict (is it a well-formed card at all?) and then a shape verdict
(is it the card the case wants, and does it draw everything it holds?).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from pytest_cardprobe.judge.carddetect import (
    CardDetection,
    card_problem,
    detect_card,
    is_text_call,
    type_name,
)
from pytest_cardprobe.suite.loader import NESTING_TYPES, REFERENCE_VOCABULARY
from pytest_cardprobe.types import FailureClass, Verdict

__all__ = [
    "ACTION_TYPES",
    "ELEMENT_KEYS",
    "NESTING_TYPES",
    "REFERENCE_VOCABULARY",
    "TOLERATED_TYPES",
    "CardDetection",
    "FailureClass",
    "Verdict",
    "card_problem",
    "collect_types",
    "detect_card",
    "find_invented_types",
    "find_unknown_types",
    "infra_verdict",
    "is_text_call",
    "judge_card",
    "truncated_verdict",
]

#: Types that are never reported as unknown: the envelope and inline text runs.
TOLERATED_TYPES: tuple[str, ...] = ("AdaptiveCard", "TextRun")
#: The actions of Adaptive Cards 1.6, known whatever vocabulary a suite uses (a suite's
#: ``vocabulary`` may add more). Any other ``Action.*`` is as invented as an unknown element.
ACTION_TYPES: tuple[str, ...] = (
    "Action.Execute",
    "Action.OpenUrl",
    "Action.ShowCard",
    "Action.Submit",
    "Action.ToggleVisibility",
)

#: Keys under which the card schema puts elements (or actions, which are elements of their
#: own kind). Only objects reached through these keys count as element types: a ``type`` in a
#: ``data`` payload, an ``Input.Choice``, a ``Fact``, a ``MediaSource``, authentication
#: buttons and token-exchange objects are values, not things a renderer draws.
ELEMENT_KEYS: tuple[str, ...] = (
    "body",
    "items",
    "columns",
    "cells",
    "rows",
    "pages",
    "tabs",
    "images",
    "actions",
    "card",
    "inlines",
    "selectAction",
    "inlineAction",
    "fallback",
)
# A card's ``refresh`` object is not an element, but the action it holds is.
_HOLDERS: dict[str, str] = {"refresh": "action"}
_ELEMENT_KEY_SET = frozenset(ELEMENT_KEYS)
_ALWAYS_KNOWN = frozenset(NESTING_TYPES) | frozenset(TOLERATED_TYPES) | frozenset(ACTION_TYPES)
LABEL_LIMIT = 120
_ERROR_LIMIT = 80


def _short(text: str, limit: int = LABEL_LIMIT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _children(node: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(key, element)`` for every element object directly under ``node``."""
    out: list[tuple[str, Any]] = []
    # An object has a few keys and the schema many: look up each key of the object.
    for key, child in node.items():
        if key in _ELEMENT_KEY_SET:
            if isinstance(child, list):
                out.extend((key, item) for item in child if isinstance(item, dict))
            elif isinstance(child, dict):
                out.append((key, child))
        elif key in _HOLDERS and isinstance(child, dict):
            held = child.get(_HOLDERS[key])
            if isinstance(held, dict):
                out.append((key, held))
    return out


def collect_types(value: Any) -> tuple[str, ...]:
    """Sorted distinct element types of a card, read where the card schema puts elements.

    The top level (one element, an array of elements, or an ``AdaptiveCard``) and every
    object reached through :data:`ELEMENT_KEYS` count; other keys are values, whatever
    ``type`` strings they hold (see :data:`ELEMENT_KEYS`). Fallbacks count too.
    """
    found: set[str] = set()
    stack: list[Any] = list(value) if isinstance(value, list) else [value]
    while stack:  # iterative: json.loads accepts nesting deeper than a recursive walk could
        node = stack.pop()
        if not isinstance(node, dict):
            continue  # e.g. ``"fallback": "drop"`` or a plain string inline
        if (t := type_name(node)) is not None:
            found.add(t)
        stack.extend(child for _, child in _children(node))
    return tuple(sorted(found))


def _is_drop(fallback: Any) -> bool:
    return isinstance(fallback, str) and fallback.strip().lower() == "drop"


def _has_fallback(node: dict[str, Any]) -> bool:
    fallback = node.get("fallback")
    return isinstance(fallback, dict) or _is_drop(fallback)


def _resolves(fallback: Any, known: Collection[str]) -> bool:
    """A fallback the renderer can show: ``"drop"``, or a chain whose last link is known."""
    while isinstance(fallback, dict):  # a chain ends: parsed JSON is a tree, never a loop
        if type_name(fallback) in known:
            return True
        fallback = fallback.get("fallback")
    return _is_drop(fallback)


def find_invented_types(value: Any, known: Collection[str]) -> tuple[str, ...]:
    """The unknown types a renderer would draw as an invisible blank; sorted.

    Adaptive Cards renderers replace an element they cannot draw by its ``fallback``, and an
    element with no fallback makes the nearest element around it that has one fall back
    instead. So an unknown type is *not* invented when it carries a fallback element or
    ``fallback: "drop"`` (the author's choice), or when an element it sits inside has a
    fallback that resolves (``"drop"``, or a chain whose last link is known). The last link of
    a chain that resolves nowhere is invented: that slot of the card stays blank. ``known``
    is the suite's vocabulary; the always-known types are added here.
    """
    known = frozenset(known) | _ALWAYS_KNOWN
    invented: set[str] = set()
    # (element, covered): covered when something around it falls back to a drawable shape.
    stack: list[tuple[Any, bool]] = [
        (v, False) for v in (value if isinstance(value, list) else [value])
    ]
    while stack:
        node, covered = stack.pop()
        if not isinstance(node, dict):
            continue
        t = type_name(node)
        if t is not None and t not in known:
            excused = covered or _has_fallback(node)
            if not excused:
                invented.add(t)
            inner = excused  # an element replaced by its fallback draws none of its own
        else:
            inner = covered or _resolves(node.get("fallback"), known)
        for key, child in _children(node):
            # A fallback replaces its element: what surrounds the element surrounds it.
            stack.append((child, covered if key == "fallback" else inner))
    return tuple(sorted(invented))


def find_unknown_types(
    types: Collection[str], vocabulary: Collection[str] = REFERENCE_VOCABULARY
) -> tuple[str, ...]:
    """The types outside ``vocabulary`` and the always-known ones, fallbacks or not; sorted.

    These are recorded per sample; which of them fail the card is
    :func:`find_invented_types`'s question.
    """
    return tuple(sorted(t for t in types if t not in vocabulary and t not in _ALWAYS_KNOWN))


def _fail(
    label: str, failure: FailureClass, types: tuple[str, ...] = (), unknown: tuple[str, ...] = ()
) -> Verdict:
    return Verdict(False, _short(label), failure, types, unknown)


def infra_verdict(message: str) -> Verdict:
    """A failed sample the model is not to blame for (HTTP error, timeout, connection)."""
    return _fail(f"infra: {message}", FailureClass.INFRA)


#: Finish reasons that mean the reply hit the token limit (Ollama, OpenAI-compatible).
CUT_OFF = ("length",)


def truncated_verdict(verdict: Verdict, finish_reason: str | None) -> Verdict:
    """A failed verdict on a reply the token limit cut off is ``truncated``, whatever it looked
    like: the model was not done, so calling it declined or malformed would blame the model
    for the limit. Passing verdicts and infra stay as they are.
    """
    if finish_reason not in CUT_OFF or verdict.passed or verdict.failure is FailureClass.INFRA:
        return verdict
    return _fail(
        f"truncated at the token limit ({finish_reason}): {verdict.label}",
        FailureClass.TRUNCATED,
        verdict.types,
        verdict.unknown_types,
    )


def judge_card(
    text: str,
    *,
    accept: Sequence[str],
    requires_input: bool,
    vocabulary: Collection[str] = REFERENCE_VOCABULARY,
    allow_unknown: bool = False,
) -> Verdict:
    """Score one reply against a case: base verdict first, then the shape verdict.

    ``accept`` lists the element types that answer the case; empty means the negative
    control, where prose is the right answer. A reply that fails the base verdict
    (``duplicate-key``, ``prose-with-card``, ``broken: …``) keeps that label in every case,
    the control included: it was an attempt at a card, and a malformed one. A function call
    written as text is ``text-call`` (malformed): it is neither a card nor prose. A card
    with element or action types outside ``vocabulary`` that nothing falls back from fails
    ``invented …`` (they render as invisible blanks; :func:`find_invented_types`) unless
    ``allow_unknown`` is set. Every unknown type is recorded either way.
    """
    det = detect_card(text)
    types = collect_types(det.value) if det.is_card else ()
    unknown = find_unknown_types(types, vocabulary)
    malformed = FailureClass.MALFORMED
    if det.text_call:
        return _fail("text-call", malformed)
    if det.has_duplicate_keys:
        return _fail("duplicate-key", malformed, types, unknown)
    if det.is_card and det.wrapped_in_prose:
        return _fail("prose-with-card", malformed, types, unknown)
    if not det.is_card and det.looks_like_json:
        if not det.parsed:
            return _fail(f"broken: invalid JSON {_short(det.error or '', _ERROR_LIMIT)}", malformed)
        return _fail(f"broken: not a renderable card ({det.reason})", malformed)

    if not accept:
        if det.is_card:
            return _fail("unwanted-card", FailureClass.WRONG_ELEMENT, types, unknown)
        return Verdict(True, "ok prose", None)
    if not det.is_card:
        return _fail("prose", FailureClass.DECLINED)
    invented = find_invented_types(det.value, vocabulary) if unknown and not allow_unknown else ()
    if invented:
        return _fail(f"invented {' '.join(invented)}", FailureClass.WRONG_ELEMENT, types, unknown)
    if requires_input and not any(t.startswith("Input.") for t in types):
        return _fail("no-input", FailureClass.WRONG_ELEMENT, types, unknown)
    # AdaptiveCard is the envelope, not an answer: leaving it out keeps a bare element array
    # and the same elements in a full card under one label.
    shown = " ".join(t for t in types if t != "AdaptiveCard") or "-"
    if not set(accept) & set(types):
        want = "|".join(accept)
        label = f"wrong-shape got {shown} want {want}"
        return _fail(label, FailureClass.WRONG_ELEMENT, types, unknown)
    return Verdict(True, _short(f"ok {shown}"), None, types, unknown)
