"""Suite stage: an expected argument no call could pass, found before the run.

The judge checks a call's arguments against the tool's JSON Schema before any matcher
(``judge/argschema.py``), so a case whose matcher allows only values that schema rejects —
``priority: critical`` where the tool declares ``enum: [low, medium, high, urgent]``,
``limit: "ten"`` where it declares ``integer`` — fails every sample, and the first
``--cardprobe-update-baseline`` would file it as a known failure for good. The loader asks,
for each matcher of an expected call (``results:`` entries are left alone, as the ``absent``
rule does), whether any value the schema allows could satisfy it:

* a literal or ``equals`` value, and each ``one_of`` alternative, is validated with the
  judge's own validator (:func:`suite.schema.tool_validator`), strict integers included;
* ``regex``, ``contains``, ``type``, ``range`` and ``length`` are compared with what the
  argument's own schema says: the values of an enum (or a ``const``) it may take, through
  the judge's :func:`suite.argmatch.match`, its ``type``, its bounds;
* ``ignore_case`` is honoured (an enum value equal but for case admits a literal; a
  ``pattern`` is then not held against it), ``optional`` and ``each`` pass the question on.

A matcher nothing can satisfy is a problem (a usage error); one that only some of its
alternatives, only an absent argument (``optional``) or only an empty list (``each``) can
satisfy is a warning.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.suite.argmatch import fold, is_number, json_equal, match
from pytest_cardprobe.suite.calls import Matcher
from pytest_cardprobe.suite.schema import tool_validator

__all__ = ["Findings", "value_findings"]

#: Rules whose verdict can depend on a string's case: with ``ignore_case`` they are not held
#: against a literal (an enum or const is compared ignoring case instead).
_CASE_RULES = ("enum", "const", "pattern")


@dataclass
class Findings:
    """What the loader says about one argument's matcher: problems stop the run."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:59] + "…"


def _rule(error: Any) -> str:
    """A schema violation as the rule it broke: ``enum [...]``, ``type integer``."""
    rule, expected = error.validator, error.validator_value
    if rule == "type":
        names = expected if isinstance(expected, list) else [expected]
        return "type " + " or ".join(str(n) for n in names)
    if rule == "enum" and isinstance(expected, list):
        return "enum [" + ", ".join(_shown(v) for v in expected) + "]"
    return f"{rule} {_shown(expected)}"


def _rejected(parameters: Mapping[str, Any], name: str, value: Any, ic: bool) -> str | None:
    """The rule of the tool's schema that refuses ``value`` as argument ``name``, or None
    when some value the matcher stands for passes it."""
    try:
        errors = [
            e
            for e in tool_validator(parameters).iter_errors({name: value})
            if list(e.absolute_path)[:1] == [name]
        ]
    except Exception:  # a schema the validator cannot use here: the judge will say
        return None
    if not errors:
        return None
    if ic and all(e.validator in _CASE_RULES for e in errors):
        own = _property(parameters, name)
        allowed = _enum_values(own) if own is not None else None
        if allowed is None or any(json_equal(fold(v), fold(value)) for v in allowed):
            return None
    from jsonschema.exceptions import best_match

    return _rule(best_match(errors))


def _property(parameters: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The argument's own schema when ``properties`` spells it out (no ``$ref`` to follow)."""
    properties = parameters.get("properties")
    found = properties.get(name) if isinstance(properties, Mapping) else None
    if not isinstance(found, Mapping) or "$ref" in found:
        return None
    return found


def _enum_values(schema: Mapping[str, Any]) -> list[Any] | None:
    """Every value an enum-only schema allows (``enum``, or ``const``); None otherwise."""
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    return None


def _types(schema: Mapping[str, Any]) -> list[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
        return list(declared)
    return None


def _admits_type(types: list[str], wanted: str) -> bool:
    """A value of JSON type ``wanted`` can satisfy a schema typed ``types``."""
    return (
        wanted in types
        or (wanted == "integer" and "number" in types)
        or (wanted == "number" and "integer" in types)
    )


def _bounds(schema: Mapping[str, Any], low: str, high: str) -> tuple[float, float]:
    lo: Any = schema.get(low)
    hi: Any = schema.get(high)
    return (
        float(lo) if is_number(lo) else float("-inf"),
        float(hi) if is_number(hi) else float("inf"),
    )


def _impossible(matcher: Matcher, schema: Mapping[str, Any] | None, ic: bool) -> str | None:
    """Why no value ``schema`` allows can satisfy ``matcher`` (not a literal), or None."""
    if schema is None:
        return None
    kind, operand = matcher.kind, matcher.value
    ic = ic or matcher.ignore_case
    allowed, types = _enum_values(schema), _types(schema)
    if allowed is not None and kind in ("regex", "contains", "type", "range", "length"):
        if not any(match(matcher, v, ic) for v in allowed):
            return "enum [" + ", ".join(_shown(v) for v in allowed) + "]"
        return None
    wanted = {"regex": ("string",), "contains": ("string", "array"), "range": ("number",)}.get(
        kind, ()
    )
    if kind == "type":
        wanted = (operand,)
    elif kind == "length":
        wanted = ("string", "array")
    if types is not None and wanted and not any(_admits_type(types, w) for w in wanted):
        return "type " + " or ".join(types)
    if kind == "range":
        lo, hi = _bounds(schema, "minimum", "maximum")
        if operand[1] < lo or operand[0] > hi:
            return (
                f"minimum {_shown(schema.get('minimum'))}, maximum {_shown(schema.get('maximum'))}"
            )
    if kind == "length" and types is not None:
        low, high = ("minLength", "maxLength") if "string" in types else ("minItems", "maxItems")
        lo, hi = _bounds(schema, low, high)
        if operand[1] < lo or operand[0] > hi:
            return f"{low} {_shown(schema.get(low))}, {high} {_shown(schema.get(high))}"
    return None


def value_findings(
    tool: str, parameters: Mapping[str, Any], name: str, matcher: Matcher
) -> Findings:
    """What the loader says about ``matcher`` on argument ``name`` of an expected call of
    ``tool`` (whose ``parameters`` schema is given)."""
    found = Findings()
    _check(found, tool, parameters, name, matcher, False, _property(parameters, name))
    return found


def _never(tool: str, name: str, what: str, rule: str) -> str:
    return (
        f"{what} can never pass: tool {tool!r} declares {name!r} with {rule}; a call carrying "
        "it fails as bad_arguments before any matcher is asked, so every sample would fail "
        "— expect a value the tool allows, or change the tool's schema"
    )


def _check(
    found: Findings,
    tool: str,
    parameters: Mapping[str, Any],
    name: str,
    matcher: Matcher,
    ic: bool,
    schema: Mapping[str, Any] | None,
) -> None:
    kind, ic = matcher.kind, ic or matcher.ignore_case
    if kind == "equals":
        rule = _rejected(parameters, name, matcher.value, ic)
        if rule:
            found.problems.append(_never(tool, name, _shown(matcher.value), rule))
    elif kind == "one_of":
        refused = [(v, r) for v in matcher.value if (r := _rejected(parameters, name, v, ic))]
        if refused and len(refused) == len(matcher.value):
            rule = "; ".join(sorted({r for _, r in refused}))
            found.problems.append(_never(tool, name, "every alternative of one_of", rule))
        elif refused:
            shown = ", ".join(f"{_shown(v)} ({r})" for v, r in refused)
            found.warnings.append(
                f"one_of alternative(s) {shown} can never pass: tool {tool!r} rejects them "
                f"for {name!r}; only the others can"
            )
    elif kind == "optional":
        inner = Findings()
        _check(inner, tool, parameters, name, matcher.value, ic, schema)
        if inner.problems:
            found.warnings.append(
                f"{matcher.describe()}: only a call that leaves {name!r} out can pass; tool "
                f"{tool!r} rejects every value the inner matcher allows"
            )
        found.warnings += inner.warnings
    elif kind == "each":
        _each(found, tool, name, matcher, ic, schema)
    else:
        rule = _impossible(matcher, schema, ic)
        if rule:
            found.problems.append(_never(tool, name, f"{matcher.describe()}", rule))


def _each(
    found: Findings,
    tool: str,
    name: str,
    matcher: Matcher,
    ic: bool,
    schema: Mapping[str, Any] | None,
) -> None:
    """``each: M``: the argument must be a list, each item satisfying M."""
    if schema is None:
        return
    types = _types(schema)
    if types is not None and "array" not in types:
        found.problems.append(_never(tool, name, matcher.describe(), "type " + " or ".join(types)))
        return
    items = schema.get("items")
    if not isinstance(items, Mapping) or "$ref" in items:
        return
    inner = matcher.value
    why = None
    if inner.kind in ("equals", "one_of"):
        values = [inner.value] if inner.kind == "equals" else list(inner.value)
        wrapper = {"type": "object", "properties": {"item": items}}
        if all(_rejected(wrapper, "item", v, ic or inner.ignore_case) for v in values):
            why = "items " + (_rejected(wrapper, "item", values[0], ic) or "")
    elif inner.kind not in ("optional", "each", "any", "absent"):
        rule = _impossible(inner, items, ic)
        why = f"items {rule}" if rule else None
    if why is None:
        return
    if is_number(schema.get("minItems")) and schema["minItems"] >= 1:
        found.problems.append(_never(tool, name, matcher.describe(), why))
    else:
        found.warnings.append(
            f"{matcher.describe()}: only an empty list can pass: tool {tool!r} declares "
            f"{name!r} with {why}"
        )
