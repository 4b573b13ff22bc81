"""Suite stage: a call suite's tool list, inline or from a JSON/YAML file, checked.

The suite schema (``toolList``) checks each declaration's shape. Checked here: names are
unique, each ``parameters`` names a draft jsonschema knows in ``$schema`` (or none: Draft
2020-12) and is a valid JSON Schema for it, every ``$ref`` in it resolves inside it and no
cycle of references applies to one value for ever (:func:`_ref_cycle`), so
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
from pytest_cardprobe.suite.patterns import pattern_problem
from pytest_cardprobe.text import name_problem

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
        named = name_problem(name)
        if named:
            fail((index, "function", "name"), f"the tool name {named}")
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
        for pattern_at, problem in _pattern_problems(parameters):
            fail((*at, *pattern_at), f"tool {name!r}: {problem}")
        cycle = _ref_cycle(parameters, cls)
        if cycle:
            fail((*at, *cycle[0]), f"tool {name!r}: {cycle[1]}")
    return value


# Keywords whose subschemas apply to the same value as the schema holding them: a cycle
# through these (and ``$ref``) never reaches deeper into the arguments.
_SAME_VALUE_LISTS = ("allOf", "anyOf", "oneOf")
_SAME_VALUE_ONE = ("not", "if", "then", "else")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
#: The longest chain of schemas applied to one value (through $ref, allOf, …) a tool schema
#: may hold: jsonschema recurses a few frames per link, and a chain of thousands ended every
#: call test of the tool in a RecursionError. No hand-written schema comes near it.
MAX_SAME_VALUE = 32


def _ref_cycle(schema: Mapping[str, Any], cls: Any) -> tuple[KeyPath, str] | None:
    """A chain of references (``#/$defs/a -> #/$defs/b -> #/$defs/a``) that applies schemas
    to the same value for ever, or one longer than :data:`MAX_SAME_VALUE`: where it starts
    and what to say; None when there is none.

    A recursive schema is fine as long as every turn of the recursion goes one level deeper
    into the value (``properties``, ``items``): the arguments are finite. One that comes back
    through ``$ref``, ``allOf``/``anyOf``/``oneOf``, ``not`` or ``if``/``then``/``else`` alone
    makes jsonschema recurse until Python stops it, in every call test of the tool.
    """
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import specification_with

    spec = specification_with(cls.META_SCHEMA.get("$schema", ""))
    root = Registry().resolver_with_root(Resource.from_contents(schema, default_specification=spec))
    where: dict[int, tuple[KeyPath, Any]] = {}

    def index(node: Any, at: KeyPath, resolver: Any) -> None:
        if isinstance(node, list):
            for number, item in enumerate(node):
                index(item, (*at, number), resolver)
            return
        if not isinstance(node, Mapping):
            return
        if at and isinstance(node.get("$id"), str):
            resolver = resolver.in_subresource(
                Resource.from_contents(node, default_specification=spec)
            )
        where.setdefault(id(node), (at, resolver))
        for name, item in node.items():
            if name in _NAMED_SCHEMAS and isinstance(item, Mapping):
                for key, sub in item.items():
                    index(sub, (*at, name, key), resolver)
            elif name not in _DATA_KEYWORDS:
                index(item, (*at, name), resolver)

    index(schema, (), root)
    nodes = {id(n): n for n in _all_mappings(schema)}

    def successors(key: int) -> Iterator[tuple[int, str]]:
        node, resolver = nodes[key], where[key][1]
        for keyword in _REFS:
            ref = node.get(keyword)
            if isinstance(ref, str):
                try:
                    target = resolver.lookup(ref).contents
                except Unresolvable:
                    continue  # reported as dangling
                if isinstance(target, Mapping) and id(target) in nodes:
                    yield id(target), ref
        for keyword in _SAME_VALUE_LISTS:
            items = node.get(keyword)
            for item in items if isinstance(items, list) else ():
                if isinstance(item, Mapping):
                    yield id(item), ""
        for keyword in _SAME_VALUE_ONE:
            item = node.get(keyword)
            if isinstance(item, Mapping):
                yield id(item), ""

    state: dict[int, int] = {}  # 1: on the current path, 2: done
    longest: dict[int, int] = {}  # schemas applied to one value from here on, at most
    for start in nodes:
        if start in state:
            continue
        path: list[tuple[int, str]] = [(start, "")]
        stack = [iter(list(successors(start)))]
        state[start] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                done = path.pop()[0]
                state[done] = 2
                longest[done] = 1 + max((longest[t] for t, _ in successors(done)), default=0)
                if longest[done] > MAX_SAME_VALUE:
                    return where[done][0], (
                        f"a chain of {longest[done]} schemas ($ref, allOf, anyOf, …) applies to "
                        f"one value from here, more than the {MAX_SAME_VALUE} a call can be "
                        "checked through (the check would exceed Python's recursion limit); "
                        "shorten it"
                    )
                continue
            target, ref = step
            if state.get(target) == 1:
                loop = [*path[[k for k, _ in path].index(target) + 1 :], (target, ref)]
                chain = [r for _, r in loop if r]
                shown = " -> ".join([*chain, chain[0]] if chain else ["(allOf/anyOf/oneOf/not)"])
                return where[target][0], (
                    f"the $ref cycle {shown} comes back to where it started without reading "
                    "any deeper into the arguments, so checking a call would never end; make "
                    "one of them describe a value (or a nested property)"
                )
            if target not in state:
                state[target] = 1
                path.append((target, ref))
                stack.append(iter(list(successors(target))))
    return None


def _all_mappings(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping of a schema that is a schema (values of data keywords left out)."""
    for _, mapping in _schemas_in(node, ()):
        yield mapping


def _schemas_in(node: Any, at: KeyPath) -> Iterator[tuple[KeyPath, Mapping[str, Any]]]:
    """Every mapping of a schema that is a schema, with its key path."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _schemas_in(item, (*at, index))
    elif isinstance(node, Mapping):
        yield at, node
        for name, item in node.items():
            if name in _NAMED_SCHEMAS and isinstance(item, Mapping):
                for key, sub in item.items():
                    yield from _schemas_in(sub, (*at, name, key))
            elif name not in _DATA_KEYWORDS:
                yield from _schemas_in(item, (*at, name))


def _pattern_problems(schema: Mapping[str, Any]) -> Iterator[tuple[KeyPath, str]]:
    """Every ``pattern`` and ``patternProperties`` key RE2 cannot run as Python's ``re``
    would (suite/patterns.py), and ``unevaluatedProperties`` beside ``patternProperties``:
    jsonschema applies the patterns there with Python's ``re`` itself, which backtracks."""
    nodes = list(_schemas_in(schema, ()))
    for at, node in nodes:
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            problem = pattern_problem(pattern)
            if problem:
                yield (*at, "pattern"), f"pattern {problem}"
        patterns = node.get("patternProperties")
        for key in patterns if isinstance(patterns, Mapping) else ():
            problem = pattern_problem(str(key))
            if problem:
                yield (*at, "patternProperties", key), f"patternProperties key {problem}"
    unevaluated = [at for at, node in nodes if "unevaluatedProperties" in node]
    if unevaluated and any("patternProperties" in node for _, node in nodes):
        yield (
            (*unevaluated[0], "unevaluatedProperties"),
            (
                "unevaluatedProperties in a schema with patternProperties is not supported: "
                "jsonschema would match those patterns with Python's backtracking re, which a "
                "model's argument names can make run for hours; use additionalProperties"
            ),
        )


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
