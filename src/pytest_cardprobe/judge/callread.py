"""Read one parsed JSON value as a call to a declared tool, or refuse it.

Part of tool-call recovery (``judge/recovery.py``, docs/design.md §6): the strict JSON decoder
recovery parses spans with (no ``NaN``, no overflowing float, no duplicate keys, nothing
repaired; no lone surrogate in the arguments) and the call
shapes it accepts. A value that names a declared tool in any other shape is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pytest_cardprobe.jsonread import finite_float, lone_surrogate

__all__ = ["DECODER", "RecoveredCall", "Refused", "json_error", "read_call"]


@dataclass(frozen=True)
class RecoveredCall:
    """One call recovered from text: the declared tool's name and its decoded arguments."""

    name: str
    # Excluded from the hash (a dict is unhashable); equality still compares it.
    arguments: dict[str, Any] = field(hash=False)


# --------------------------------------------------------------------------------------------
# JSON: strict, no repair.


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return obj


def _no_constants(name: str) -> NoReturn:
    # json accepts NaN / Infinity by default; they are not JSON.
    raise ValueError(f"{name} is not valid JSON")


# A float that overflows (``1e999``) is no JSON number either: recovered arguments go back
# to the server in a tool loop's next request, which cannot carry an infinity.
DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants, parse_float=finite_float
)


def json_error(exc: BaseException, start: int) -> str:
    if isinstance(exc, RecursionError):
        return f"invalid JSON: nesting too deep in the value at char {start}"
    if isinstance(exc, json.JSONDecodeError):  # its message already carries the position
        return f"invalid JSON: {exc}"
    # Raised by our hooks (duplicate key, NaN) or int parsing: no position of their own.
    return f"invalid JSON: {exc} in the value at char {start}"


# --------------------------------------------------------------------------------------------
# Call shapes.

_FLAT_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})
_WRAPPER_KEYS = frozenset({"function", "type", "id", "index"})
_FUNCTION_KEYS = frozenset({"name", "arguments", "parameters"})
_JSON_TYPE: dict[type, str] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
}


class Refused(Exception):
    def __init__(self, name: str, why: str) -> None:
        super().__init__(why)
        self.name = name
        self.why = why


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_TYPE.get(type(value), "a number")


def read_call(obj: object, names: frozenset[str]) -> RecoveredCall | None:
    """The call ``obj`` makes to a declared tool; None if it names none; _Refused if bad."""
    if not isinstance(obj, dict):
        return None
    function = obj.get("function")
    if isinstance(function, dict):
        body: dict[str, Any] = function
        extra = (obj.keys() - _WRAPPER_KEYS) | (function.keys() - _FUNCTION_KEYS)
    else:
        body = obj
        extra = obj.keys() - _FLAT_KEYS
    name = body.get("name")
    if not isinstance(name, str) or name not in names:
        return None
    # From here on it is an attempted call to a declared tool: anything off is refused, since
    # a key we do not understand may be an argument the model put in the wrong place.
    if extra:
        keys = sorted(extra)
        raise Refused(name, f"unexpected keys {keys[:5]}" + (" ..." if len(keys) > 5 else ""))
    kind = obj.get("type", "function")
    if kind != "function":
        raise Refused(name, f'"type" is {kind!r:.40}, expected "function"')
    if "arguments" in body and "parameters" in body:
        raise Refused(name, 'both "arguments" and "parameters" given')
    arguments = body.get("arguments", body.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = DECODER.decode(arguments)
        except (ValueError, RecursionError) as exc:
            why = "nesting too deep" if isinstance(exc, RecursionError) else str(exc)
            raise Refused(name, f"arguments string is not valid JSON: {why}") from None
    if not isinstance(arguments, dict):
        raise Refused(name, f"arguments must be a JSON object, not {_json_type(arguments)}")
    bad = lone_surrogate(arguments)
    if bad:
        raise Refused(name, f"arguments hold a lone surrogate ({bad}), which is not text")
    return RecoveredCall(name, arguments)
