"""Suite stage: whether one decoded JSON value satisfies an argument matcher.

One rule for the judge (``judge/matchers.py``, which re-exports these) and the loader, which
asks whether any value a tool's schema allows could satisfy a case's matcher
(``suite/argvalues.py``), as ``suite/calls.admits`` is one rule for argument names.

Two rules hold for every matcher (the guide, docs/guide/own-tools.md):

* **Numbers compare as JSON numbers**: ``3`` matches ``3.0``, ``true`` never matches ``1``.
  Whether a float may stand where the tool declares ``integer`` is the schema's question.
* **``ignore_case`` reaches every string inside the value**: list elements, object values
  (not keys), and the alternatives of ``one_of``. Lists compare element-wise, in order.
"""

from __future__ import annotations

from typing import Any

from pytest_cardprobe.suite.calls import Matcher
from pytest_cardprobe.suite.patterns import fullmatch

__all__ = ["fold", "has_type", "is_number", "json_equal", "match"]


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


def has_type(value: Any, name: str) -> bool:
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
        # RE2, in time linear in the value (suite/patterns.py): a model's argument never
        # makes a backtracking pattern such as (a+)+b run for hours.
        return isinstance(value, str) and fullmatch(operand, value, ic)
    if kind == "contains":
        if isinstance(value, str) and isinstance(operand, str):
            return fold(operand, ic) in fold(value, ic)
        if isinstance(value, list):
            return any(json_equal(fold(item, ic), fold(operand, ic)) for item in value)
        return False
    if kind == "type":
        return has_type(value, operand)
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
