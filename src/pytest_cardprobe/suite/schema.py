"""Suite stage: the JSON Schema decides a suite's structure; this module words its findings.

``suite.schema.json`` (Draft 2020-12, stated in the file) is the one description of a
suite's shape: editors use it, and the loader validates every suite with it before reading
anything else, reading ``integer`` strictly (:func:`strict_types`: ``2.0`` is no integer,
though the draft would take it, so an editor may accept what the loader refuses there). A
raw jsonschema error reads like ``'tool' is not one of ['prose', ...]``; :func:`first_problem`
turns the first error in the file into the loader's own wording, with
the key path it belongs to, from the schema's ``x-`` annotations (which validators ignore):

* ``x-expected``: what the value should be: ``expected <x-expected>, got <the value>``;
* ``x-message``: the whole message for any failure of the keywords beside it; ``{got}``,
  ``{allowed}`` (an ``enum``/``const``'s values) and ``{hint}`` (a close ``enum`` value)
  are filled in; ``x-at`` names a key below the failing value that the message is about;
* ``x-missing``: per required key, the message when it is missing (default: "missing
  required key");
* ``x-noun`` / ``x-tail``: how an unknown key is named (``unknown matcher 'regexp'``);
* ``x-wrap``: ``{key, hint}``: an unknown key that is one of the keys of the mapping under
  ``key`` gets ``hint`` (a bare function where a tool declaration wraps it in ``function``);
* ``x-what``: a ``oneOf`` of single ``required`` keys means "exactly one of these keys";
  ``x-what`` names what they are (``two expectations (call and no_call)``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from pytest_cardprobe.suite.errors import KeyPath, describe, one_of
from pytest_cardprobe.suite.patterns import search

__all__ = ["SCHEMA_PATH", "first_problem", "schema", "strict_types", "tool_validator"]

# The JSON Schema ships next to this module as package data (pyproject ships ``*.json``);
# a plain path works for both editable and wheel installs and needs no importlib dance.
SCHEMA_PATH: Path = Path(__file__).with_name("suite.schema.json")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The suite schema, read once."""
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def _strict_integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


@lru_cache(maxsize=16)
def strict_types(base: Any) -> Any:
    """``base`` (a jsonschema validator class) with ``integer`` meaning a JSON integer, and
    its patterns run by RE2.

    Drafts 6 and later call ``2.0`` an integer, since its value is whole; here it is not, nor
    is ``true``. ``pattern``, ``patternProperties`` and ``additionalProperties`` (which
    looks at the patterns too) search with :mod:`suite.patterns`, in time linear in the
    text, where jsonschema's own keywords use Python's backtracking ``re``. The suite
    validator uses it (``samples: 2.0`` reads ``expected an integer >= 1, got 2.0``) and so
    does the call judge for a tool's arguments (judge/argschema.py).
    """
    from jsonschema.validators import extend

    return extend(
        base,
        validators={
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
        type_checker=base.TYPE_CHECKER.redefine("integer", _strict_integer),
    )


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    others = [
        name
        for name in instance
        if name not in named and not any(search(p, name) for p in patterns)
    ]
    if validator.is_type(extra, "object"):
        for name in others:
            yield from validator.descend(instance[name], extra, path=name)
    elif extra is False and others:
        listed = ", ".join(repr(name) for name in others)
        yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


@lru_cache(maxsize=256)
def _tool_validator(schema_text: str) -> Any:
    # Imported here: only call suites pay for jsonschema's import.
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    parameters = json.loads(schema_text)
    return strict_types(validator_for(parameters, default=Draft202012Validator))(parameters)


def tool_validator(parameters: Mapping[str, Any]) -> Any:
    """The validator of a tool's ``parameters`` (cached per schema): the draft its
    ``$schema`` names, 2020-12 when it names none, with :func:`strict_types`. The one
    validator of a call's arguments: the call judge checks what a model sent with it
    (``judge/argschema.py``) and the loader checks a case's argument values with it
    (``suite/argvalues.py``). ``format`` is not asserted (jsonschema's default, and JSON
    Schema 2020-12's: an annotation), so neither checks ``"format": "date"``."""
    return _tool_validator(json.dumps(parameters, sort_keys=True))


@cache
def _validator(definition: str | None) -> Any:
    # jsonschema is imported on first use: a run that loads no suite never pays for it.
    from jsonschema.validators import validator_for

    root = schema()
    validator = strict_types(validator_for(root))(root)  # the draft the file's $schema names
    if definition is None:
        return validator
    return validator.evolve(schema={"$ref": f"#/$defs/{definition}"})


def first_problem(
    instance: Any,
    definition: str | None = None,
    line_of: Callable[[KeyPath], int | None] = lambda key: None,
) -> tuple[KeyPath, str] | None:
    """The first structural problem of ``instance`` as (key path, message), or None.

    ``definition`` validates against one ``$defs`` entry instead of the whole suite (a tools
    file, a single matcher). "First" is the earliest line (``line_of`` maps a key path to
    its line), missing keys last; problems on one line come in the schema's order.
    """
    validator = _validator(definition)
    errors = list(validator.iter_errors(instance))
    if not errors:
        return None
    # A missing key comes after the rest: an unknown key is often the missing one misspelt.
    first = min(
        errors,
        key=lambda e: (e.validator == "required", line_of(tuple(e.absolute_path)) or 0),
    )
    return _word(first)


def _wrap_hint(here: Mapping[str, Any], name: str) -> str:
    """``x-wrap``'s hint when the unknown key ``name`` belongs one level down, in the mapping
    under ``x-wrap.key`` (a tool's ``name`` written beside ``type``, outside ``function``)."""
    wrap = here.get("x-wrap")
    if not isinstance(wrap, dict):
        return ""
    inner = here.get("properties", {}).get(wrap["key"], {}).get("properties", {})
    return str(wrap["hint"]) if name in inner else ""


def _word(error: Any) -> tuple[KeyPath, str]:
    """One jsonschema error as (key path, message)."""
    path: KeyPath = tuple(error.absolute_path)
    here: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    keyword = error.validator
    instance = error.instance
    if "x-message" in here:
        at = here.get("x-at")
        return ((*path, at) if at else path), _fill(here["x-message"], here, instance)
    if keyword == "additionalProperties" and isinstance(instance, dict):
        allowed = list(here.get("properties", {}))
        name = next(k for k in instance if k not in allowed)
        close = difflib.get_close_matches(name, allowed, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        noun = here.get("x-noun", "key")
        named = "unknown key" if noun == "key" else f"unknown {noun} {name!r}"
        tail = here.get("x-tail", "") + _wrap_hint(here, name)
        return (*path, name), f"{named}; {hint}allowed: {one_of(allowed)}{tail}"
    if keyword == "required" and isinstance(instance, dict):
        name = next(k for k in error.validator_value if k not in instance)
        return (*path, name), here.get("x-missing", {}).get(name, "missing required key")
    if keyword == "oneOf" and "x-what" in here:
        return _exactly_one(path, here, instance)
    if keyword == "uniqueItems" and isinstance(instance, list):
        index = _first_repeat(instance)
        return (*path, index), f"{describe(instance[index])} is listed twice"
    if "x-expected" in here:
        return path, f"expected {here['x-expected']}, got {describe(instance)}"
    if keyword in ("anyOf", "oneOf") and error.context:
        from jsonschema.exceptions import best_match

        return _word(best_match(error.context))
    if keyword == "enum":
        return path, f"unknown value {describe(instance)}; use {_allowed(here)}"
    if keyword == "const":
        return path, f"expected {here['const']!r}, got {describe(instance)}"
    if keyword == "type":
        return path, f"expected a value of type {error.validator_value}, got {describe(instance)}"
    return path, str(error.message)


def _fill(template: str, here: dict[str, Any], instance: Any) -> str:
    # str.replace, not str.format: messages quote YAML with braces ({call, args, returns}).
    hint = ""
    if "{hint}" in template and isinstance(instance, str):
        close = difflib.get_close_matches(instance, [str(v) for v in here.get("enum", ())], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
    return (
        template.replace("{got}", describe(instance))
        .replace("{allowed}", _allowed(here))
        .replace("{hint}", hint)
    )


def _allowed(here: dict[str, Any]) -> str:
    values = here.get("enum", [here["const"]] if "const" in here else [])
    return one_of([v if isinstance(v, str) else describe(v) for v in values])


def _exactly_one(path: KeyPath, here: dict[str, Any], instance: Any) -> tuple[KeyPath, str]:
    keys = [alternative["required"][0] for alternative in here["oneOf"]]
    what = here["x-what"]
    present = [k for k in keys if isinstance(instance, dict) and k in instance]
    if not present:
        return path, f"missing the {what}: give one of {one_of(keys)}"
    return (*path, present[1]), (
        f"two {what}{'es' if what.endswith('s') else 's'} ({present[0]} and {present[1]}); "
        f"give exactly one of {one_of(keys)}"
    )


def _first_repeat(items: list[Any]) -> int:
    seen: list[Any] = []
    for index, item in enumerate(items):
        # json.dumps compares like JSON: True and 1 differ, 1 and 1.0 do not matter here.
        marker = json.dumps(item, sort_keys=True)
        if marker in seen:
            return index
        seen.append(marker)
    return len(items) - 1
