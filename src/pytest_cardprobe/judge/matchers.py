"""Argument matchers: does one decoded JSON value satisfy a case's ``args:`` matcher?

Pure: values in, a yes/no or a short reason out. The call verdict (``judge/call.py``) asks
:func:`argument_problem` once per expected call and received call it could pair.

Two rules hold for every matcher (README, "Your own tools"):

* **Numbers compare as JSON numbers**: ``3`` matches ``3.0``, ``true`` never matches ``1``.
  Whether a float may stand where the tool declares ``integer`` is the schema's question, and
  the schema is checked first: such a call has already failed as ``bad_arguments`` before any
  matcher sees it, so an integer literal never passes ``5.0`` for an ``integer`` parameter.
* **``ignore_case`` reaches every string inside the value**: list elements, object values
  (not keys), and the alternatives of ``one_of``. Lists compare element-wise, in order.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_cardprobe.suite.calls import CallSpec, Matcher
from pytest_cardprobe.types import ToolCall

__all__ = ["argument_problem", "fold", "is_number", "json_equal", "match", "show"]

_SHOWN = 40  # characters of a model-written value shown in a label


def show(value: Any) -> str:
    """A model-written value for a label: JSON, one line, cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, never a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``1 == 1.0``, but ``true != 1`` and ``"1" != 1``.

    Lists compare element-wise in order, objects key by key, at any depth.
    """
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def fold(value: Any, ignore_case: bool = True) -> Any:
    """``value`` with every string inside it case-folded (object keys kept as they are)."""
    if not ignore_case:
        return value
    if isinstance(value, str):
        return value.casefold()
    if isinstance(value, list):
        return [fold(item) for item in value]
    if isinstance(value, dict):
        return {key: fold(item) for key, item in value.items()}
    return value


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _has_type(value: Any, name: str) -> bool:
    """JSON Schema's type names, with ``integer`` strict: ``3`` is one, ``3.0`` is not."""
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return _is_integer(value)
    if name == "number":
        return is_number(value)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def match(matcher: Matcher, value: Any, ignore_case: bool = False) -> bool:
    """True when ``value`` (a decoded JSON value that is present) satisfies ``matcher``.

    ``ignore_case`` is inherited from an enclosing ``each`` / ``optional``. An ``absent``
    matcher never matches a value that is there; an ``optional`` one matches what its inner
    matcher matches (absence is :func:`argument_problem`'s business).
    """
    kind, operand = matcher.kind, matcher.value
    ic = matcher.ignore_case or ignore_case
    if kind == "any":
        return True
    if kind == "equals":
        return json_equal(fold(value, ic), fold(operand, ic))
    if kind == "one_of":
        return any(json_equal(fold(value, ic), fold(o, ic)) for o in operand)
    if kind == "regex":
        flags = re.IGNORECASE if ic else 0
        return isinstance(value, str) and re.fullmatch(operand, value, flags) is not None
    if kind == "contains":
        if isinstance(value, str) and isinstance(operand, str):
            return fold(operand, ic) in fold(value, ic)
        if isinstance(value, list):
            return any(json_equal(fold(item, ic), fold(operand, ic)) for item in value)
        return False
    if kind == "type":
        return _has_type(value, operand)
    if kind == "range":
        return is_number(value) and operand[0] <= value <= operand[1]
    if kind == "length":
        return isinstance(value, list | str) and operand[0] <= len(value) <= operand[1]
    if kind == "each":
        return isinstance(value, list) and all(match(operand, item, ic) for item in value)
    if kind == "optional":
        return match(operand, value, ic)
    if kind == "absent":
        return False
    raise ValueError(f"unknown matcher {kind!r}")


def _value_problem(matcher: Matcher, value: Any, where: str, ignore_case: bool) -> str | None:
    """Why the present ``value`` at JSON path ``where`` misses ``matcher``, or None."""
    ic = matcher.ignore_case or ignore_case
    if matcher.kind == "optional":
        return _value_problem(matcher.value, value, where, ic)
    if matcher.kind == "each" and isinstance(value, list):
        # Point at the first element that misses, in the inner matcher's words.
        for index, item in enumerate(value):
            problem = _value_problem(matcher.value, item, f"{where}[{index}]", ic)
            if problem:
                return problem
        return None
    if match(matcher, value, ignore_case):
        return None
    if matcher.kind == "length" and isinstance(value, list | str):
        return f"{where} has length {len(value)}, want {matcher.describe()}"
    return f"{where} got {show(value)} want {matcher.describe()}"


def argument_problem(call: ToolCall, spec: CallSpec) -> str | None:
    """Why ``call``'s arguments miss ``spec``'s matchers, or None when they match.

    ``absent``: the argument must not be given (``unexpected_argument NAME``); ``optional``:
    absent, or present and matching its inner matcher; every other matcher needs the argument.
    """
    for name, matcher in spec.args:
        present = name in call.arguments
        if matcher.kind == "absent":
            if present:
                return f"unexpected_argument {name}"
            continue
        if not present:
            if matcher.kind == "optional":
                continue
            return f"$.{name} missing, want {matcher.describe()}"
        problem = _value_problem(matcher, call.arguments[name], f"$.{name}", False)
        if problem:
            return problem
    return None
