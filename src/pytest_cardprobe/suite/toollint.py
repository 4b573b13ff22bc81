"""Tool-definition lint: what makes a tool declaration hard for a small model to call well.

Run at collection on every call suite. Each finding names the file the tools came from and
the JSON path inside the tool list, e.g. ``cases/tools/tools.json: $[2].function.parameters
.properties.mode: a string whose description lists its values has no enum``. By default they
are warnings; ``--strict-tools`` (ini ``cardprobe_strict_tools``) makes them usage errors.

The rules (seed 003: weak schemas and descriptions make local models call tools badly):

* ``no-description``: a tool, or a parameter, without a description;
* ``no-type``: a parameter without a ``type`` (nor ``enum``, ``const``, ``anyOf``, ``oneOf``,
  ``allOf`` or ``$ref`` saying what it holds);
* ``values-without-enum``: a string parameter whose description lists allowed values
  ("one of", "either", quoted choices separated by "or"/commas) but that has no ``enum``;
* ``too-deep``: parameters nested more than three levels deep;
* ``too-many-tools``: more than 20 tools in one request;
* ``bad-name``: a tool name outside ``^[a-zA-Z0-9_-]{1,64}$``;
* ``required-undeclared``: ``required`` names a property the object does not declare.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_TOOLS = 20
MAX_DEPTH = 3
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_TYPED_BY = ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref")
# A description that spells out the allowed values: "one of ...", "either X or Y",
# "allowed values", or two or more quoted / backticked choices joined by commas or "or".
_LISTS_VALUES = re.compile(
    r"\b(?:one of|either\b.+\bor|allowed values?|possible values?|valid values?|must be one)\b"
    r"|([`'\"])[^`'\"\s]+\1(?:\s*(?:,|\bor\b|/|\|)\s*([`'\"])[^`'\"\s]+\2)+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class LintFinding:
    """One tool-definition problem: where (file, JSON path), which rule, and what."""

    source: Path
    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.path}: {self.message} [{self.rule}]"


def _path(parts: Sequence[str | int]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


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


def lint_tools(tools: Sequence[Mapping[str, Any]], source: Path) -> list[LintFinding]:
    """Every finding of the rules above for one request's tool list."""
    found: list[LintFinding] = []

    def add(parts: Sequence[str | int], rule: str, message: str) -> None:
        found.append(LintFinding(source, _path(parts), rule, message))

    if len(tools) > MAX_TOOLS:
        add((), "too-many-tools", f"{len(tools)} tools in one request (more than {MAX_TOOLS})")
    for index, tool in enumerate(tools):
        fn = tool.get("function")
        if not isinstance(fn, Mapping):
            continue
        at: tuple[str | int, ...] = (index, "function")
        name = fn.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            add((*at, "name"), "bad-name", f"tool name {name!r} is not ^[a-zA-Z0-9_-]{{1,64}}$")
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
                and _LISTS_VALUES.search(description)
            ):
                add(
                    where,
                    "values-without-enum",
                    f"string parameter {prop_name!r} lists its allowed values in the "
                    "description but has no enum",
                )
        for where, obj in _objects(params, pat):
            required = obj.get("required")
            props = obj.get("properties")
            declared = set(props) if isinstance(props, Mapping) else set()
            if isinstance(required, list):
                for i, req in enumerate(required):
                    if req not in declared:
                        add(
                            (*where, "required", i),
                            "required-undeclared",
                            f"required names {req!r}, which is not a declared property",
                        )
    return found


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
