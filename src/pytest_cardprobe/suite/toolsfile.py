"""Suite stage: a call suite's tool list, inline or from a JSON/YAML file, checked.

The suite schema (``toolList``) checks each declaration's shape. Checked here: names are
unique, each ``parameters`` names a draft jsonschema knows in ``$schema`` (or none: Draft
2020-12) and is a valid JSON Schema for it, and every ``$ref`` in it resolves inside it, so
a mistake in a tool schema is a usage error at load and not a crash in every call test. A
tools file keeps the line of each JSON path, so errors and lint warnings point at the real
line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_cardprobe.suite.context import Reader
from pytest_cardprobe.suite.documents import parse_json, parse_yaml
from pytest_cardprobe.suite.errors import Fail, KeyPath, describe, json_path, one_of

__all__ = ["check_tools", "read_tools_file"]

# Keywords whose values are data, not schemas: a "$ref" inside them is not a reference.
_DATA_KEYWORDS = ("const", "enum", "default", "examples")
# Keywords whose value maps names the author chose to schemas: every value is a schema, so a
# property called "default" or "enum" is walked like any other.
_NAMED_SCHEMAS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)


class _FileReader(Reader):
    """A tools file: keys are JSON paths (``$[0].function.name``)."""

    def key_text(self, key: KeyPath) -> str:
        return json_path(key)


def read_tools_file(
    reader: Reader, key: KeyPath, relative: str
) -> tuple[list[dict[str, Any]], Path, dict[KeyPath, int]]:
    """The tools of the file ``relative`` names (from ``key`` of the suite), the resolved
    path, and the line of each path inside the list."""
    text, resolved = reader.read_file(key, relative, "tools")
    if resolved.suffix.lower() == ".json":
        data, lines = parse_json(resolved, text)
        start = 1
    else:
        empty = "empty file; a tools file holds a list of tool declarations"
        data, lines, start = parse_yaml(resolved, text, json_path, empty)
    lines.setdefault((), start)
    file = _FileReader(resolved, lines, reader.limits)
    file.check(data, "toolList")
    return check_tools(data, file.fail), resolved, lines


def check_tools(value: list[dict[str, Any]], fail: Fail) -> list[dict[str, Any]]:
    """A schema-valid tool list whose names are unique and whose parameter schemas are valid
    and resolve. Style problems are the lint's (suite/toollint.py)."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    seen: set[str] = set()
    for index, item in enumerate(value):
        function = item["function"]
        name = function["name"]
        if name in seen:
            fail((index, "function", "name"), f"tool {name!r} is declared twice")
        seen.add(name)
        if "parameters" not in function:
            continue
        parameters = function["parameters"]
        at: KeyPath = (index, "function", "parameters")
        given = parameters.get("$schema")
        cls = validator_for(parameters, default=None) if isinstance(given, str) else None
        if "$schema" in parameters and cls is None:
            fail(
                (*at, "$schema"),
                f"tool {name!r}: $schema {describe(given)} is not a JSON Schema draft cardprobe "
                f"knows, so its arguments would be checked by another draft's rules; use one "
                f"of {one_of(_known_drafts())}, or leave $schema out for Draft 2020-12",
            )
        cls = cls or validator_for(parameters)
        try:
            cls.check_schema(parameters)
        except SchemaError as exc:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.path)
            fail(at, f"not a valid JSON Schema at {where or 'the top'}: {exc.message}")
        for ref_at, ref, problem in _dangling(parameters, cls):
            fail(
                (*at, *ref_at),
                f"$ref {ref!r} does not resolve inside the tool's parameters ({problem}); "
                "every call of this tool could only fail",
            )
    return value


def _known_drafts() -> list[str]:
    """The ``$schema`` values jsonschema has a validator for, oldest draft first."""
    import jsonschema

    drafts = ("Draft3", "Draft4", "Draft6", "Draft7", "Draft201909", "Draft202012")
    return [getattr(jsonschema, f"{d}Validator").META_SCHEMA["$schema"] for d in drafts]


def _dangling(schema: Mapping[str, Any], cls: Any) -> Iterator[tuple[KeyPath, str, str]]:
    """Every ``$ref`` of ``schema`` that cannot be resolved: (path of it, the ref, why).

    Nothing is fetched: a reference to another document does not resolve.
    """
    from referencing import Registry, Resource
    from referencing.exceptions import PointerToNowhere, Unresolvable
    from referencing.jsonschema import specification_with

    spec = specification_with(cls.META_SCHEMA.get("$schema", ""))
    root = Registry().resolver_with_root(Resource.from_contents(schema, default_specification=spec))

    def walk(node: Any, at: KeyPath, resolver: Any) -> Iterator[tuple[KeyPath, str, str]]:
        if isinstance(node, list):
            for index, item in enumerate(node):
                yield from walk(item, (*at, index), resolver)
            return
        if not isinstance(node, Mapping):
            return
        if at and isinstance(node.get("$id"), str):
            resolver = resolver.in_subresource(
                Resource.from_contents(node, default_specification=spec)
            )
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except PointerToNowhere:
                    yield (*at, keyword), ref, "nothing is there"
                except Unresolvable:
                    yield (*at, keyword), ref, "it names another document; nothing is fetched"
        for name, item in node.items():
            if name in _NAMED_SCHEMAS and isinstance(item, Mapping):
                for key, schema in item.items():
                    yield from walk(schema, (*at, name, key), resolver)
            elif name not in _DATA_KEYWORDS:
                yield from walk(item, (*at, name), resolver)

    yield from walk(schema, (), root)
