"""Find what a reply holds: a card, a call written as text, broken JSON, or prose.

The first stage of the card judge (docs/design.md §5): :func:`detect_card` parses the reply
(strictly: every repeated key is noted, nothing is repaired) and says where the JSON came
from (the whole reply, a code fence, a block on lines of its own, a ``{…},{…}`` list) and
whether it is a renderable card at all. What the card is *worth* is ``judge/card.py``'s job.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.jsonread import lone_surrogate

__all__ = ["CardDetection", "card_problem", "detect_card", "is_text_call", "type_name"]

# Wrappers small models put around a call written as text (docs/design.md §6).
_CALL_WRAPPERS = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
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
        text_call: the reply is a function call written as text (a call object, a list of
            them, or a call wrapper such as ``<tool_call>``), not a card.
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
    text_call: bool = False

    @property
    def has_duplicate_keys(self) -> bool:
        """True when any object in the parsed value repeated a key."""
        return bool(self.duplicate_keys)


class _Duplicates(threading.local):
    """The keys repeated within one object of the text being parsed (per thread)."""

    def __init__(self) -> None:
        self.keys: list[str] = []


_DUPLICATES = _Duplicates()


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):  # a key came twice: note which
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                _DUPLICATES.keys.append(key)
            seen.add(key)
    return value


# One decoder for every reply: building one per call costs more than parsing a short reply.
_CARD_DECODER = json.JSONDecoder(object_pairs_hook=_object)


#: The characters a JSON text can begin with (Python's decoder also reads ``NaN`` and
#: ``Infinity``), and the white space it skips first.
_MAY_START_JSON = frozenset('{["-0123456789tfnNI \t\n\r')


def _loads(text: str) -> tuple[bool, Any, tuple[str, ...], str | None]:
    """Parse strictly; return (ok, value, duplicate keys, error message)."""
    if text[:1] not in _MAY_START_JSON:
        # What the decoder would say, without building its exception: most replies are prose.
        return False, None, (), "Expecting value: line 1 column 1"
    dupes: list[str] = []
    _DUPLICATES.keys = dupes
    try:
        value = _CARD_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        # No "(char N)": it repeats line/column and labels must stay short.
        return False, None, (), exc.msg + f": line {exc.lineno} column {exc.colno}"
    except (ValueError, RecursionError) as exc:  # digit-limit ints, absurd nesting
        return False, None, (), str(exc) or type(exc).__name__
    bad = lone_surrogate(value, text)
    if bad:
        # Valid JSON syntax, but no text: no renderer, report or terminal can carry it.
        return False, None, (), f"lone surrogate {bad} in a string"
    return True, value, tuple(dupes), None


def type_name(node: Mapping[str, Any]) -> str | None:
    # A blank "type" is not a type: it names nothing a renderer could draw.
    t = node.get("type")
    return t if isinstance(t, str) and t.strip() else None


def card_problem(value: Any) -> str | None:
    """Why ``value`` is not a renderable card, or None when it is one."""
    if isinstance(value, dict):
        t = type_name(value)
        if t is None:
            return 'object has no "type"'
        if t == "AdaptiveCard":
            # The schema requires neither key, but a card with neither draws nothing.
            if "body" in value and not isinstance(value["body"], list):
                return "AdaptiveCard body is not an array"
            actions = value.get("actions")
            if "body" not in value and not (isinstance(actions, list) and actions):
                return "AdaptiveCard has no body and no actions"
        return None
    if isinstance(value, list):
        if not value:
            return "empty array"
        return None if all(isinstance(v, dict) for v in value) else "array of non-objects"
    kind = {str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
    return f"top-level {kind}"


def _fenced_candidate(text: str) -> tuple[str, bool, int] | None:
    """First code fence whose content looks like JSON: (content, wrapped in prose, where the
    content starts in ``text``)."""
    pos = 0
    while (m := _FENCE_OPEN.search(text, pos)) is not None:
        close = text.find("```", m.end())
        end = len(text) if close < 0 else close  # an unclosed fence runs to the end
        inside = text[m.end() : end]
        content = inside.strip(_DECORATION)
        if content[:1] in ("{", "["):
            after = "" if close < 0 else text[close:]
            prose = (text[: m.start()] + after).strip(_DECORATION)
            start = m.end() + len(inside) - len(inside.lstrip(_DECORATION))
            return content, bool(prose), start
        if close < 0:
            return None
        pos = close + 3
    return None


def _is_call_object(obj: Any) -> bool:
    if not isinstance(obj, dict) or obj.get("type", "function") != "function":
        return False
    function = obj.get("function")
    if isinstance(function, dict):
        return isinstance(function.get("name"), str)
    return isinstance(obj.get("name"), str) and ("arguments" in obj or "parameters" in obj)


def is_text_call(value: Any) -> bool:
    """True when a parsed value is a function call (or a list of calls), whatever its name.

    Shapes: ``{"name", "arguments"}``, ``{"name", "parameters"}``, ``{"function": {...}}`` and
    the OpenAI ``{"type": "function", "function": {...}}``. No element of a card has
    ``arguments`` or ``parameters``, and a card's ``type`` is never ``function``.
    """
    if isinstance(value, list):
        return bool(value) and all(_is_call_object(v) for v in value)
    return _is_call_object(value)


_DECODER = json.JSONDecoder()


def _embedded_block(text: str) -> tuple[Any, bool, tuple[int, int]] | None:
    """A JSON block on lines of its own, with prose around it: (value, prose outside, where
    the block is in ``text``).

    Only the first line that opens with ``{`` or ``[`` is tried: every later one may be a
    line inside that block (a pretty-printed card cut short has whole elements on later
    lines, and reading one of those as the card would hide the truncation). JSON in the
    middle of a sentence (``call render({...})``) is not a block and stays prose.
    """
    m = re.search(r"^[ \t]*[\[{]", text, re.MULTILINE)
    if m is None:
        return None
    start = m.end() - 1
    try:
        value, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    after = text[end:]
    rest_of_line, _, _ = after.partition("\n")
    if rest_of_line.strip(_DECORATION):
        return None  # the block goes on after the JSON on the same line: not a block
    tail = after.strip(_DECORATION)
    if tail[:1] in ("{", "[", ","):
        return None  # more JSON follows: two objects without a comma are not repaired
    head = text[: m.start()].strip(_DECORATION)
    return value, bool(head or tail), (start, end)


def _wrapper_outside(text: str, json_span: tuple[int, int] | None) -> bool:
    """A call wrapper (``<tool_call>`` …) in ``text`` outside the JSON that parsed.

    Inside the parsed JSON a wrapper can only sit in a string (a card's ``TextBlock`` that
    mentions ``<tool_call>``): it wraps nothing, as recovery also rules (§6).
    """
    low, high = json_span if json_span is not None else (0, 0)
    for wrapper in _CALL_WRAPPERS:
        at = text.find(wrapper)
        while at >= 0:
            if not low <= at < high:
                return True
            at = text.find(wrapper, at + len(wrapper))
    return False


def detect_card(text: str) -> CardDetection:
    """Find the JSON a reply holds, in the order of docs/design.md §5.

    1. the raw (stripped) text as JSON;
    2. else the content of the first code fence that looks like JSON (balanced or not), or
       the text with leading/trailing whitespace and stray backticks removed;
    3. else, for a ``{…}`` candidate, the same wrapped as ``[ … ]`` (``{…},{…}`` replies);
    4. else, with no fence, a card or call written as a block on lines of its own before
       and/or after prose (``Here you go:\n{...}\nEnjoy!``): reported as wrapped in prose.

    Two objects on separate lines without a comma stay invalid JSON: no stage repairs them.
    A call written as text (:func:`is_text_call`, or a ``<tool_call>``-style wrapper outside
    the JSON that parsed) is flagged as ``text_call`` and is never a card; a wrapper inside a
    string of the JSON (a card's text that mentions ``<tool_call>``) wraps nothing.
    """
    raw = text.strip()
    ok, value, dupes, _ = _loads(raw)
    fenced = wrapped = bracketed = False
    error: str | None = None
    candidate = raw
    span = (0, len(raw))  # where the JSON candidate is in raw
    if not ok:
        found = _fenced_candidate(raw)
        if found is not None:
            (candidate, wrapped, start), fenced = found, True
        else:
            candidate = raw.strip(_DECORATION)
            start = len(raw) - len(raw.lstrip(_DECORATION))
        span = (start, start + len(candidate))
        ok, value, dupes, error = _loads(candidate)
        if not ok and candidate.startswith("{") and candidate.endswith("}"):
            ok, value, dupes, _ = _loads("[" + candidate + "]")
            bracketed = ok
        if ok:
            error = None
        elif not fenced and (block := _embedded_block(raw)) is not None:
            block_value, around, span = block
            if around and (is_text_call(block_value) or card_problem(block_value) is None):
                ok, value, wrapped, error = True, block_value, True, None
                candidate = raw.strip(_DECORATION)
    looks = candidate[:1] in ("{", "[") or (ok and isinstance(value, (dict, list, str)))
    # A wrapper counts outside the JSON that parsed; with nothing parsed, anywhere.
    call = (ok and is_text_call(value)) or _wrapper_outside(raw, span if ok else None)
    problem = card_problem(value) if ok and not call else None
    return CardDetection(
        value=value,
        parsed=ok,
        is_card=ok and not call and problem is None,
        reason=problem or "",
        fenced=fenced,
        wrapped_in_prose=wrapped,
        bracketed=bracketed,
        duplicate_keys=dupes,
        error=error,
        looks_like_json=looks,
        text_call=call,
    )
