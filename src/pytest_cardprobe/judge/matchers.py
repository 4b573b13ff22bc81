"""Argument matchers: does one decoded JSON value satisfy a case's ``args:`` matcher?

Pure: values in, a yes/no or a short reason out. The call verdict (``judge/call.py``) asks
:func:`argument_problem` once per expected call and received call it could pair. Whether a
value satisfies a matcher (:func:`match`) lives in the suite stage (``suite/argmatch.py``),
since the loader asks it too: which values of an enum a matcher admits.

Two rules hold for every matcher (the guide, docs/guide/own-tools.md):

* **Numbers compare as JSON numbers**: ``3`` matches ``3.0``, ``true`` never matches ``1``.
  Whether a float may stand where the tool declares ``integer`` is the schema's question, and
  the schema is checked first: such a call has already failed as ``bad_arguments`` before any
  matcher sees it, so an integer literal never passes ``5.0`` for an ``integer`` parameter.
* **``ignore_case`` reaches every string inside the value**: list elements, object values
  (not keys), and the alternatives of ``one_of``. Lists compare element-wise, in order.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_cardprobe.suite.argmatch import fold, is_number, json_equal, match
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
