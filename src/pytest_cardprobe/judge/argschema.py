"""Check a call's arguments against the declared tool's JSON Schema, with strict JSON types.

The draft is explicit: the one a tool's ``$schema`` names, Draft 2020-12 when it names none.
Whatever the draft, ``integer`` means a JSON integer: ``5`` is one, ``5.0`` is not (drafts 6
and later would accept it, since its value is whole), and neither is ``true``. A Python tool
handed ``5.0`` for an integer breaks on ``range(n)``, so the judge fails the call as
``bad_arguments NAME: $.number 5.0 is a float, the tool declares integer``.

What the judge sees is what the wire decoded. An OpenAI-compatible server passes the model's
argument text through, so ``5.0`` arrives as a float; Ollama parses the model's text and
re-encodes it, so ``5.0`` may arrive as ``5`` and nothing here can tell (the guide,
docs/guide/own-tools.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_cardprobe.judge.matchers import show
from pytest_cardprobe.suite.calls import admits
from pytest_cardprobe.suite.schema import tool_validator

__all__ = ["schema_problem", "strict_validator"]

#: The validator the judge checks arguments with: the loader's own (``suite/schema.py``),
#: so the load-time check of a case's argument values and the judge never disagree.
strict_validator = tool_validator


def _path(parts: Sequence[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _rule(error: Any) -> str:
    """One schema violation as ``<path> <rule>``, in words a label can carry."""
    where = _path(list(error.absolute_path))
    rule, expected, instance = error.validator, error.validator_value, error.instance
    if rule == "type":
        names = [str(n) for n in (expected if isinstance(expected, list) else [expected])]
        if isinstance(instance, float) and "integer" in names:
            return f"{where} {show(instance)} is a float, the tool declares {' or '.join(names)}"
        return f"{where} is not of type {' or '.join(names)}"
    if rule == "required" and isinstance(instance, dict):
        missing = [n for n in expected if n not in instance]
        return f"{where}.{missing[0] if missing else '?'} is required"
    if rule == "enum":
        return f"{where} is not one of {show(expected)}"
    if rule == "additionalProperties" and isinstance(instance, dict):
        props = (error.schema or {}).get("properties", {})
        extra = sorted(k for k in instance if k not in props)
        return f"{where}.{extra[0] if extra else '?'} is not allowed (additionalProperties)"
    if rule in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{where} fails {rule} {expected}"
    if rule in ("minLength", "maxLength", "minItems", "maxItems", "pattern", "const", "format"):
        return f"{where} fails {rule} {show(expected)}"
    return f"{where} fails {rule}"


def schema_problem(arguments: Mapping[str, Any], parameters: Mapping[str, Any]) -> str | None:
    """The first way ``arguments`` break the declared tool's rules, or None.

    An argument the tool does not take fails as ``unknown_argument``, by the loader's rule
    (:func:`suite.calls.admits`): named in ``properties``, or admitted by
    ``additionalProperties``/``patternProperties`` (whose schema then validates it), or
    left to a composed schema. JSON Schema alone would take any name a schema leaves open by
    default, so a tool with no ``properties`` takes no arguments. Then the JSON Schema itself
    is checked, with strict types.
    """
    for name in arguments:
        if not admits(parameters, name):
            return f"$.{name} is not a declared argument (unknown_argument)"
    from jsonschema.exceptions import best_match

    error = best_match(strict_validator(parameters).iter_errors(dict(arguments)))
    return None if error is None else _rule(error)
