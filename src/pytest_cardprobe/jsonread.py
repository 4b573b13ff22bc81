"""JSON from a server or a file, read so that no input can crash the reader.

Nesting deeper than :data:`MAX_JSON_DEPTH` is refused before the parser could hit the
recursion limit, and ``NaN``, ``Infinity`` and floats that overflow are refused as numbers,
each with a ValueError.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: JSON nested deeper than this is refused before ``json.loads`` could hit the recursion limit.
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when JSON ``text`` opens more than ``limit`` arrays/objects at once (linear)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} overflows a float")
    return value


# Built once: json.loads with an option builds a decoder per call, which costs about as
# much as parsing a short reply.
_STRICT = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def load_json(text: str) -> Any:
    """``json.loads`` that refuses deep nesting and non-finite numbers (``NaN``,
    ``Infinity``, and a float such as ``1e999`` that overflows) with ValueError."""
    if too_deep(text):
        raise ValueError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    return _STRICT.decode(text)
