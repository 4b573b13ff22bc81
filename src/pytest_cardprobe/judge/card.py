"""The Adaptive Card judge: turn one reply string into a verdict (docs/design.md §5).

Pure and deterministic: no HTTP, no pytest. Both channels are scored here; the tool channel
hands over the JSON of the call's ``body`` argument as the reply text.

The judge runs in two stages. :func:`detect_card` finds what the reply holds (a parsed JSON
value, where it came from, what went wrong); :func:`judge_card` turns that into a base
verdict (is it a well-formed card at all?) and then a shape verdict (is it the card the case
wants?).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.suite.loader import NESTING_TYPES, REFERENCE_VOCABULARY
from pytest_cardprobe.types import FailureClass, Verdict

__all__ = [
    "NESTING_TYPES",
    "REFERENCE_VOCABULARY",
    "TOLERATED_PREFIXES",
    "TOLERATED_TYPES",
    "CardDetection",
    "FailureClass",
    "Verdict",
    "card_problem",
    "collect_types",
    "detect_card",
    "find_unknown_types",
    "infra_verdict",
    "judge_card",
    "truncated_verdict",
]

#: Types that are never reported as unknown: the envelope and inline text runs.
TOLERATED_TYPES: tuple[str, ...] = ("AdaptiveCard", "TextRun")
#: Type-name prefixes that are never reported as unknown (actions live outside the body).
TOLERATED_PREFIXES: tuple[str, ...] = ("Action.",)

LABEL_LIMIT = 120
_ERROR_LIMIT = 80
_DECORATION = " \t\r\n`"
# An opening fence with an optional info string (```json, ```JSON, ```jsonc ...).
_FENCE_OPEN = re.compile(r"```+[ \t]*[A-Za-z0-9_+.-]*[ \t]*\r?\n?")


@dataclass(frozen=True)
class CardDetection:
    """What :func:`detect_card` found in a reply.

    Attributes:
        value: the parsed JSON value (``None`` when nothing parsed; check ``parsed``).
        parsed: some stage parsed the reply (or its fence content) as JSON.
        is_card: ``value`` is a renderable card shape (see :func:`card_problem`).
        reason: why a parsed value is not a card (empty when it is, or nothing parsed).
        fenced: the JSON candidate came from inside a code fence.
        wrapped_in_prose: fenced, and there is text before and/or after the fence.
        bracketed: it only parsed once wrapped as ``[ … ]`` (comma-separated objects).
        duplicate_keys: keys that occurred twice in one object, at any depth, in order seen.
        error: the JSON error of the un-bracketed candidate when nothing parsed; line and
            column count within that candidate (the fence content, when fenced).
        looks_like_json: the candidate starts with ``{`` or ``[``, or parsed as a JSON
            container or string. Bare numbers, booleans and null count as prose.
    """

    value: Any = None
    parsed: bool = False
    is_card: bool = False
    reason: str = ""
    fenced: bool = False
    wrapped_in_prose: bool = False
    bracketed: bool = False
    duplicate_keys: tuple[str, ...] = ()
    error: str | None = None
    looks_like_json: bool = False

    @property
    def has_duplicate_keys(self) -> bool:
        """True when any object in the parsed value repeated a key."""
        return bool(self.duplicate_keys)


def _short(text: str, limit: int = LABEL_LIMIT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _loads(text: str) -> tuple[bool, Any, tuple[str, ...], str | None]:
    """Parse strictly; return (ok, value, duplicate keys, error message)."""
    dupes: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                dupes.append(key)
            seen.add(key)
        return dict(pairs)

    try:
        value = json.loads(text, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as exc:
        # No "(char N)": it repeats line/column and labels must stay short.
        return False, None, (), exc.msg + f": line {exc.lineno} column {exc.colno}"
    except (ValueError, RecursionError) as exc:  # digit-limit ints, absurd nesting
        return False, None, (), str(exc) or type(exc).__name__
    return True, value, tuple(dupes), None


def _type_name(node: Mapping[str, Any]) -> str | None:
    # A blank "type" is not a type: it names nothing a renderer could draw.
    t = node.get("type")
    return t if isinstance(t, str) and t.strip() else None


def card_problem(value: Any) -> str | None:
    """Why ``value`` is not a renderable card, or None when it is one."""
    if isinstance(value, dict):
        t = _type_name(value)
        if t is None:
            return 'object has no "type"'
        if t == "AdaptiveCard" and not isinstance(value.get("body"), list):
            return "AdaptiveCard body is not an array"
        return None
    if isinstance(value, list):
        if not value:
            return "empty array"
        return None if all(isinstance(v, dict) for v in value) else "array of non-objects"
    kind = {str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
    return f"top-level {kind}"


def _fenced_candidate(text: str) -> tuple[str, bool] | None:
    """First code fence whose content looks like JSON: (content, wrapped in prose)."""
    pos = 0
    while (m := _FENCE_OPEN.search(text, pos)) is not None:
        close = text.find("```", m.end())
        end = len(text) if close < 0 else close  # an unclosed fence runs to the end
        content = text[m.end() : end].strip(_DECORATION)
        if content[:1] in ("{", "["):
            after = "" if close < 0 else text[close:]
            prose = (text[: m.start()] + after).strip(_DECORATION)
            return content, bool(prose)
        if close < 0:
            return None
        pos = close + 3
    return None


def detect_card(text: str) -> CardDetection:
    """Find the JSON a reply holds, in the order of docs/design.md §5.

    1. the raw (stripped) text as JSON;
    2. else the content of the first code fence that looks like JSON (balanced or not), or
       the text with leading/trailing whitespace and stray backticks removed;
    3. else, for a ``{…}`` candidate, the same wrapped as ``[ … ]`` (``{…},{…}`` replies).

    Two objects on separate lines without a comma stay invalid JSON: no stage repairs them.
    """
    raw = text.strip()
    ok, value, dupes, _ = _loads(raw)
    fenced = wrapped = bracketed = False
    error: str | None = None
    candidate = raw
    if not ok:
        found = _fenced_candidate(raw)
        if found is not None:
            (candidate, wrapped), fenced = found, True
        else:
            candidate = raw.strip(_DECORATION)
        ok, value, dupes, error = _loads(candidate)
        if not ok and candidate.startswith("{") and candidate.endswith("}"):
            ok, value, dupes, _ = _loads("[" + candidate + "]")
            bracketed = ok
        if ok:
            error = None
    looks = candidate[:1] in ("{", "[") or (ok and isinstance(value, (dict, list, str)))
    problem = card_problem(value) if ok else None
    return CardDetection(
        value=value,
        parsed=ok,
        is_card=ok and problem is None,
        reason=problem or "",
        fenced=fenced,
        wrapped_in_prose=wrapped,
        bracketed=bracketed,
        duplicate_keys=dupes,
        error=error,
        looks_like_json=looks,
    )


def collect_types(value: Any) -> tuple[str, ...]:
    """Sorted distinct ``type`` strings under any mapping or list, at any depth."""
    found: set[str] = set()
    stack = [value]
    while stack:  # iterative: json.loads accepts nesting deeper than a recursive walk could
        node = stack.pop()
        if isinstance(node, dict):
            if (t := _type_name(node)) is not None:
                found.add(t)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return tuple(sorted(found))


def find_unknown_types(
    types: Collection[str], vocabulary: Collection[str] = REFERENCE_VOCABULARY
) -> tuple[str, ...]:
    """The types outside ``vocabulary``, nesting-only and tolerated types; sorted."""
    known = set(vocabulary) | set(NESTING_TYPES) | set(TOLERATED_TYPES)
    return tuple(
        sorted(t for t in types if t not in known and not t.startswith(TOLERATED_PREFIXES))
    )


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
) -> Verdict:
    """Score one reply against a case: base verdict first, then the shape verdict.

    ``accept`` lists the element types that answer the case; empty means the negative
    control, where prose is the right answer. A reply that fails the base verdict
    (``duplicate-key``, ``prose-with-card``, ``broken: …``) keeps that label in every case,
    the control included: it was an attempt at a card, and a malformed one.
    """
    det = detect_card(text)
    types = collect_types(det.value) if det.is_card else ()
    unknown = find_unknown_types(types, vocabulary)
    malformed = FailureClass.MALFORMED
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
