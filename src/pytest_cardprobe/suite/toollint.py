"""Tool-definition lint: what makes a tool declaration hard for a small model to call well.

Run at collection on every call suite. Each finding names the file the tools came from, the
line there and the JSON path inside the tool list, e.g. ``cases/tools/tools.json:40:
$[2].function.parameters.properties.mode: string parameter 'mode' lists its allowed values in
the description but has no enum [values-without-enum]``. By default they are warnings;
``--strict-tools`` (ini ``cardprobe_strict_tools``) makes them usage errors.

The rules (weak schemas and descriptions make small local models call tools badly):

* ``no-description``: a tool, or a parameter, without a description;
* ``no-type``: a parameter without a ``type`` (nor ``enum``, ``const``, ``anyOf``, ``oneOf``,
  ``allOf`` or ``$ref`` saying what it holds);
* ``values-without-enum``: a string parameter whose description lists allowed values
  ("one of", "either", quoted choices separated by "or"/commas) but that has no ``enum``;
  quoted choices given as examples ("e.g.", "such as", "like", "for example", "etc.", "…")
  are not a list of allowed values;
* ``default-type``: a ``default`` whose JSON type is not the declared ``type``;
* ``required-default``: a required parameter with a ``default`` (the model must always send
  it, so the default never applies);
* ``object-without-properties``: an ``object`` parameter with no ``properties`` (a map whose
  ``additionalProperties`` is a schema says what its values are, and is not flagged);
* ``too-deep``: parameters nested more than three levels deep;
* ``too-many-tools``: more than 20 tools in one request;
* ``bad-name``: a tool name outside MCP's ``^[a-zA-Z0-9_.-]{1,128}$``, which no server is
  sure to take;
* ``portable-name``: a name MCP allows that strict OpenAI-compatible servers refuse with HTTP
  400 (outside ``^[a-zA-Z0-9_-]{1,64}$``: a ``.``, more than 64 characters). Ollama and
  llama.cpp take it, and an application really sends it (an MCP server's ``code.search``), so
  it stays a warning under ``--cardprobe-strict-tools``: a portability note, not a mistake;
* ``required-undeclared``: ``required`` names a property the object does not declare.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_cardprobe.suite.errors import KeyPath, json_path

MAX_TOOLS = 20
MAX_DEPTH = 3
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
#: What MCP allows in a tool name: a name within it but outside TOOL_NAME is portable-name.
MCP_TOOL_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,128}")
#: Findings that stay warnings under --cardprobe-strict-tools.
PORTABILITY_RULES = frozenset({"portable-name"})
_TYPED_BY = ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref")
# A description that spells out the allowed values: "one of ...", "either X or Y",
# "allowed values", or two or more quoted / backticked choices joined by commas or "or".
_SAYS_ALLOWED = re.compile(
    r"\b(?:one of|either\b.+\bor|allowed values?|possible values?|valid values?|must be one)\b",
    re.IGNORECASE,
)
_QUOTED_CHOICES = re.compile(
    r"([`'\"])[^`'\"\s]+\1(?:\s*(?:,|\bor\b|/|\|)\s*([`'\"])[^`'\"\s]+\2)+"
)
# Words that introduce examples: quoted values after them illustrate, they do not restrict.
_EXAMPLES = re.compile(
    r"\be\.\s?g\.|\bsuch as\b|\blike\b|\bfor example\b|\bfor instance\b|\betc\b\.?|…|\.\.\.",
    re.IGNORECASE,
)
# JSON Schema type -> the Python types a JSON value of it loads as (bool is not a number).
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def lists_allowed_values(description: str) -> bool:
    """Whether a description spells out the values a parameter allows (not examples of it)."""
    if _SAYS_ALLOWED.search(description):
        return True
    # A sentence at a time: "e.g." in one sentence does not excuse a list in the next.
    for sentence in re.split(r"(?<=[.;!?])\s+(?=[A-Z])", description):
        if _QUOTED_CHOICES.search(sentence) and not _EXAMPLES.search(sentence):
            return True
    return False


def _is_type(value: Any, name: str) -> bool:
    kinds = _JSON_TYPES.get(name)
    if kinds is None:
        return True  # not a JSON type name: the schema check reports that, not the lint
    if isinstance(value, bool):
        return name == "boolean"
    return isinstance(value, kinds)


@dataclass(frozen=True)
class LintFinding:
    """One tool-definition problem: where (file, line, JSON path), which rule, and what."""

    source: Path
    path: str
    rule: str
    message: str
    line: int | None = None

    @property
    def strict(self) -> bool:
        """Whether --cardprobe-strict-tools makes it an error (a portability note stays one)."""
        return self.rule not in PORTABILITY_RULES

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else str(self.source)
        return f"{where}: {self.path}: {self.message} [{self.rule}]"


def _properties(
    schema: Mapping[str, Any], at: tuple[str | int, ...], depth: int
) -> Iterator[tuple[tuple[str | int, ...], str, Mapping[str, Any], int]]:
    """Every property schema under ``schema``: (path, name, schema, depth), depth from 1."""
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, prop in props.items():
            if not isinstance(prop, Mapping):
                continue
            where = (*at, "properties", name)
            yield where, str(name), prop, depth
            yield from _properties(prop, where, depth + 1)
            items = prop.get("items")
            if isinstance(items, Mapping):
                yield from _properties(items, (*where, "items"), depth + 1)


def _objects(
    schema: Mapping[str, Any], at: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], Mapping[str, Any]]]:
    """``schema`` and every object schema nested in it, with their paths."""
    yield at, schema
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, prop in props.items():
            if isinstance(prop, Mapping):
                yield from _objects(prop, (*at, "properties", name))
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _objects(items, (*at, "items"))


def lint_tools(
    tools: Sequence[Mapping[str, Any]],
    source: Path,
    lines: Mapping[KeyPath, int] | None = None,
) -> list[LintFinding]:
    """Every finding of the rules above for one request's tool list.

    ``lines`` maps a path inside the list to its line in ``source``; a finding about a key
    that is not there (a missing description) points at the nearest enclosing one.
    """
    found: list[LintFinding] = []

    def line_of(parts: KeyPath) -> int | None:
        if lines is None:
            return None
        while parts and parts not in lines:
            parts = parts[:-1]
        return lines.get(parts, 1)

    def add(parts: Sequence[str | int], rule: str, message: str) -> None:
        at = tuple(parts)
        found.append(LintFinding(source, json_path(at), rule, message, line_of(at)))

    if len(tools) > MAX_TOOLS:
        add((), "too-many-tools", f"{len(tools)} tools in one request (more than {MAX_TOOLS})")
    for index, tool in enumerate(tools):
        fn = tool.get("function")
        if not isinstance(fn, Mapping):
            continue
        at: tuple[str | int, ...] = (index, "function")
        name = fn.get("name")
        if not isinstance(name, str) or not MCP_TOOL_NAME.fullmatch(name):
            add((*at, "name"), "bad-name", f"tool name {name!r} is not ^[a-zA-Z0-9_.-]{{1,128}}$")
        elif not TOOL_NAME.fullmatch(name):
            add(
                (*at, "name"),
                "portable-name",
                f"tool name {name!r} works with Ollama and llama.cpp, but strict "
                "OpenAI-compatible servers refuse it (HTTP 400: not ^[a-zA-Z0-9_-]{1,64}$)",
            )
        if not _has_text(fn.get("description")):
            add((*at, "description"), "no-description", f"tool {name!r} has no description")
        params = fn.get("parameters")
        if not isinstance(params, Mapping):
            continue
        pat = (*at, "parameters")
        for where, prop_name, prop, depth in _properties(params, pat, 1):
            if depth > MAX_DEPTH:
                add(where, "too-deep", f"parameter {prop_name!r} is nested {depth} levels deep")
            if not _has_text(prop.get("description")):
                add(where, "no-description", f"parameter {prop_name!r} has no description")
            if not any(k in prop for k in _TYPED_BY):
                add(where, "no-type", f"parameter {prop_name!r} has no type")
            description = prop.get("description")
            if (
                prop.get("type") == "string"
                and "enum" not in prop
                and isinstance(description, str)
                and lists_allowed_values(description)
            ):
                add(
                    where,
                    "values-without-enum",
                    f"string parameter {prop_name!r} lists its allowed values in the "
                    "description but has no enum",
                )
            _check_default(add, where, prop_name, prop)
            extra = prop.get("additionalProperties")
            if (
                prop.get("type") == "object"
                and "properties" not in prop
                and not isinstance(extra, Mapping)
                and "patternProperties" not in prop
            ):
                add(
                    where,
                    "object-without-properties",
                    f"object parameter {prop_name!r} declares no properties, so nothing tells "
                    "the model what to put in it",
                )
        for where, obj in _objects(params, pat):
            required = obj.get("required")
            props = obj.get("properties")
            declared = props if isinstance(props, Mapping) else {}
            if isinstance(required, list):
                for i, req in enumerate(required):
                    if req not in declared:
                        add(
                            (*where, "required", i),
                            "required-undeclared",
                            f"required names {req!r}, which is not a declared property",
                        )
                    elif isinstance(declared[req], Mapping) and "default" in declared[req]:
                        add(
                            (*where, "properties", req, "default"),
                            "required-default",
                            f"required parameter {req!r} has a default, which never applies: "
                            "the model must always send it",
                        )
    return found


def _check_default(add: Any, where: KeyPath, name: str, prop: Mapping[str, Any]) -> None:
    if "default" not in prop or "type" not in prop:
        return
    declared = prop["type"]
    types = declared if isinstance(declared, list) else [declared]
    value = prop["default"]
    if not any(_is_type(value, t) for t in types if isinstance(t, str)):
        shown = next(
            t
            for t in ("boolean", "integer", "number", "string", "array", "object", "null")
            if _is_type(value, t)
        )
        add(
            (*where, "default"),
            "default-type",
            f"parameter {name!r} declares type {declared!r} but its default {value!r} is "
            f"{'an' if shown[0] in 'aeiou' else 'a'} {shown}",
        )


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
