"""JSON from a server or a file, read so that no input can crash the reader, nor what
writes the value out again.

Nesting deeper than :data:`MAX_JSON_DEPTH` is refused before the parser could hit the
recursion limit; ``NaN``, ``Infinity`` and floats that overflow are refused as numbers, and a
string holding a lone surrogate (``"\\ud800"``, valid JSON syntax but no Unicode text: no
UTF-8 writer, report or request body can carry it) as text, each with a ValueError.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

#: JSON nested deeper than this is refused before ``json.loads`` could hit the recursion limit.
MAX_JSON_DEPTH = 64
# A JSON string, its escapes included, written as runs of plain characters between escapes
# (the same strings as ``"(?:[^"\\]|\\.)*"``, matched about twice as fast on a large file).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when JSON ``text`` opens more than ``limit`` arrays/objects at once (linear)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    # The brackets outside strings, in order: a baseline of thousands of tests is read so.
    for bracket in _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def no_constant(name: str) -> Any:
    """``parse_constant`` of a strict decoder: ``NaN`` and ``Infinity`` are not JSON."""
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    """``parse_float`` of a strict decoder: a float that overflows (``1e999``) is refused."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} overflows a float")
    return value


# Built once: json.loads with an option builds a decoder per call, which costs about as
# much as parsing a short reply.
_STRICT = json.JSONDecoder(parse_constant=no_constant, parse_float=finite_float)
# Only JSON text with an escape in the surrogate range can decode to a lone surrogate (raw
# text is valid Unicode); a pair decodes to one character, so only then is the value walked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any, text: str | None = None) -> str | None:
    """The first lone surrogate in a string (key or value) of ``value``, as its escape
    (``\\udfff``); None when there is none. With the JSON ``text`` it came from, a value
    whose text has no surrogate escape is not walked."""
    if text is not None and not _SURROGATE_ESCAPE.search(text):
        return None
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found:
                return f"\\u{ord(found.group()):04x}"
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def long_number(text: str) -> tuple[int, str] | None:
    """The line of the first number with more digits than Python converts to an int (its
    reader then raises a ValueError that names a setting, not the place), and what to say."""
    limit = sys.get_int_max_str_digits()
    found = re.search(f"[0-9]{{{limit + 1},}}", text) if limit else None
    if found is None:
        return None
    size = found.end() - found.start()
    line = text.count("\n", 0, found.start()) + 1
    return line, f"a number of {size:,} digits, more than the {limit:,} a number may have"


def load_json(text: str) -> Any:
    """``json.loads`` that refuses deep nesting, non-finite numbers (``NaN``, ``Infinity``,
    and a float such as ``1e999`` that overflows) and lone surrogates with ValueError."""
    if too_deep(text):
        raise ValueError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        value = _STRICT.decode(text)
    except json.JSONDecodeError:
        raise
    except ValueError:
        long = long_number(text)
        if long is None:
            raise
        raise ValueError(f"line {long[0]}: {long[1]}") from None
    bad = lone_surrogate(value, text)
    if bad:
        raise ValueError(f"a string holds a lone surrogate ({bad}), which is not text")
    return value
