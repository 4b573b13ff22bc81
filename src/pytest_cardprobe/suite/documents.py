"""Suite stage: YAML and JSON documents read into plain values, with the line of every key.

A suite is composed to a PyYAML node tree (not ``safe_load``) so that every value keeps its
line and duplicate mapping keys, which PyYAML would silently resolve to the last one, can be
reported. A JSON tools file is parsed by :mod:`json` and then walked once more to find the
line of each key and item. Both readings refuse what a JSON request body cannot carry: NaN,
±Infinity, numbers too large for a float, dates, binary and lone surrogates (``"\\ud800"``);
each refusal names key and line.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from bisect import bisect_left
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pytest_cardprobe.jsonread import long_number
from pytest_cardprobe.suite.errors import KeyPath, SuiteError, describe, format_key, json_path

__all__ = ["LOADER", "decode_utf8", "parse_json", "parse_yaml"]

# libyaml's parser when PyYAML has it: the pure-Python one takes minutes on a suite of a few
# megabytes; both keep line numbers on every node.
LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A document whose aliases expand to more nodes than this is an alias bomb, not a suite.
_MAX_NODES = 200_000
_STANDARD_SEQ = "tag:yaml.org,2002:seq"
_STANDARD_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_NOT_FINITE = (
    "is not a finite number (NaN, infinity, or too large for a float); a JSON request "
    "cannot carry it"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_TEXT = (
    "holds a lone surrogate (an escape such as \\ud800 without its pair), which is not "
    "text; a request cannot carry it"
)


def decode_utf8(path: Path, raw: bytes, what: str, key: str | None = None) -> str:
    """``raw`` as UTF-8 text (a BOM is allowed); any other encoding is a SuiteError saying so."""
    for bom, name in BOMS:
        if raw.startswith(bom):
            raise SuiteError(path, f"{what} is encoded as {name}; save it as UTF-8", key)
    if b"\x00" in raw:
        # ASCII spread over NUL bytes is valid UTF-8, and YAML would complain about the NULs.
        raise SuiteError(
            path,
            f"{what} is not UTF-8 text: it holds NUL bytes (UTF-16 or UTF-32 without a "
            "byte-order mark?); save it as UTF-8",
            key,
            raw[: raw.index(b"\x00")].count(b"\n") + 1,
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SuiteError(
            path,
            f"{what} is not UTF-8 text: {exc.reason} at byte {exc.start}; save it as UTF-8",
            key,
            raw[: exc.start].count(b"\n") + 1,
        ) from None


_EMPTY_SUITE = "empty file; a suite is a YAML mapping starting with `cardprobe: 1`"


def parse_yaml(
    path: Path,
    text: str,
    key_text: Callable[[KeyPath], str | None] = format_key,
    empty: str = _EMPTY_SUITE,
) -> tuple[Any, dict[KeyPath, int], int]:
    """Compose ``text`` and convert it to plain values, a key-path→line map and the line the
    document starts on. An empty document is a SuiteError saying ``empty``; ``key_text``
    shows a key path (``cases[0].id`` in a suite, ``$[0].function`` in a tools file)."""
    try:
        try:
            root = yaml.compose(text, Loader=LOADER)
        except yaml.YAMLError:
            # libyaml's messages are terser; the pure-Python parser says the same thing in the
            # words the rest of PyYAML uses (only on this error path, so speed does not matter).
            yaml.compose(text, Loader=yaml.SafeLoader)
            raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        if exc.context and exc.problem:
            problem = f"{problem} ({exc.context})"
        raise SuiteError(
            path, f"invalid YAML: {problem}", line=mark.line + 1 if mark else None
        ) from None
    except yaml.YAMLError as exc:
        raise SuiteError(path, f"invalid YAML: {exc}") from None
    if root is None:
        raise SuiteError(path, empty)
    converter = _Converter(path, key_text)
    data = converter.convert(root, ())
    return data, converter.lines, root.start_mark.line + 1


class _Converter:
    """Node tree → plain values, recording the line of every key and list item."""

    def __init__(self, path: Path, key_text: Callable[[KeyPath], str | None]) -> None:
        self.path = path
        self.key_text = key_text
        self.lines: dict[KeyPath, int] = {}
        self._constructor = SafeConstructor()
        self._active: set[int] = set()
        self._seen = 0

    def _fail(self, key: KeyPath, node: Node, problem: str, *, at_node: bool = False) -> NoReturn:
        # Prefer the line of the key that holds the value: for an alias the node's own mark
        # points at the anchor, which may be far from where the problem is.
        line = node.start_mark.line + 1
        if not at_node:
            line = self.lines.get(key, line)
        raise SuiteError(self.path, problem, self.key_text(key), line)

    def convert(self, node: Node, key: KeyPath) -> Any:
        self._seen += 1
        if self._seen > _MAX_NODES:
            self._fail(key, node, "document expands to too many values (alias bomb?)")
        if id(node) in self._active:
            self._fail(key, node, "recursive YAML alias")
        if isinstance(node, ScalarNode):
            return self._scalar(node, key)
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                if node.tag != _STANDARD_SEQ:
                    self._fail(key, node, f"unsupported YAML tag {node.tag!r}")
                items: list[Any] = []
                for index, item in enumerate(node.value):
                    item_key = (*key, index)
                    self.lines[item_key] = item.start_mark.line + 1
                    items.append(self.convert(item, item_key))
                return items
            if isinstance(node, MappingNode):
                return self._mapping(node, key)
            self._fail(key, node, f"unsupported YAML node {type(node).__name__}")
        finally:
            self._active.discard(id(node))

    def _scalar(self, node: ScalarNode, key: KeyPath) -> Any:
        try:
            value = self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            self._fail(key, node, f"cannot read value: {problem}")
        except Exception as exc:  # e.g. ValueError from an impossible date like 2024-13-45
            self._fail(key, node, f"cannot read value {node.value!r}: {exc}")
        if isinstance(value, float) and not math.isfinite(value):
            self._fail(key, node, f"{node.value} {_NOT_FINITE}")
        if isinstance(value, str) and _SURROGATE.search(value):
            self._fail(key, node, _NOT_TEXT)
        if value is not None and not isinstance(value, str | bool | int | float):
            # Dates and binary: YAML has them, a JSON request body and a matcher do not.
            self._fail(key, node, f"value cannot be sent as JSON: {describe(value)}; quote it")
        return value

    def _mapping(self, node: MappingNode, key: KeyPath) -> dict[str, Any]:
        if node.tag != _STANDARD_MAP:
            self._fail(key, node, f"unsupported YAML tag {node.tag!r}")
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                self._fail(
                    key, key_node, "YAML merge keys (<<) are not supported in suites", at_node=True
                )
            if not isinstance(key_node, ScalarNode):
                self._fail(key, key_node, "mapping keys must be plain strings", at_node=True)
            # The raw text, not the resolved value: ``no:`` or ``1:`` stay the strings they
            # look like instead of turning into False or 1.
            name = str(key_node.value)
            entry = (*key, name)
            if name in result:
                first = self.lines.get(entry)
                self._fail(
                    entry,
                    key_node,
                    f"duplicate key {name!r}"
                    + (f" (first defined on line {first})" if first else "")
                    + "; YAML would silently keep only the last one",
                    at_node=True,
                )
            self.lines[entry] = key_node.start_mark.line + 1
            result[name] = self.convert(value_node, entry)
        return result


# --------------------------------------------------------------------------- JSON

_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
_CONSTANTS = ("NaN", "Infinity", "-Infinity")
# The string reader json.loads itself uses (typeshed does not list it).
scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def parse_json(path: Path, text: str) -> tuple[Any, dict[KeyPath, int]]:
    """``text`` as JSON plus the line of every key and item, keyed by path.

    Refused, naming the line and JSON path: invalid JSON, duplicate keys, NaN, ±Infinity
    and numbers that overflow a float.
    """
    try:
        data = json.loads(text)
    except RecursionError:
        raise SuiteError(path, "JSON is nested too deeply") from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        problem = str(getattr(exc, "msg", exc)).splitlines()[0]
        if line is None and (long := long_number(text)) is not None:
            line, problem = long  # Python's own words name a setting, not the line
        raise SuiteError(path, f"not valid JSON: {problem}", line=line) from None
    try:
        lines = _JsonLines(path, text).lines
    except RecursionError:
        raise SuiteError(path, "JSON is nested too deeply") from None
    return data, lines


class _JsonLines:
    """One walk over JSON text that :func:`json.loads` accepted: the line of every key and
    list item, and the refusals json.loads does not make (duplicate keys, non-finite)."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self.lines: dict[KeyPath, int] = {}
        self._value(_SPACE.match(text, 0).end(), ())  # type: ignore[union-attr]

    def _line(self, pos: int) -> int:
        return bisect_left(self._newlines, pos) + 1

    def _space(self, pos: int) -> int:
        return _SPACE.match(self.text, pos).end()  # type: ignore[union-attr]

    def _value(self, pos: int, key: KeyPath) -> int:
        text = self.text
        char = text[pos]
        if char == "{":
            pos = self._space(pos + 1)
            if text[pos] == "}":
                return pos + 1
            while True:
                start = pos
                name, pos = scanstring(text, pos + 1)
                entry = (*key, name)
                if _SURROGATE.search(name):
                    raise SuiteError(
                        self.path, f"a key {_NOT_TEXT}", json_path(key), self._line(start)
                    )
                if entry in self.lines:
                    raise SuiteError(
                        self.path,
                        f"duplicate key {name!r} (first defined on line {self.lines[entry]}); "
                        "JSON readers would silently keep only the last one",
                        json_path(entry),
                        self._line(start),
                    )
                self.lines[entry] = self._line(start)
                pos = self._space(self._space(pos) + 1)  # the colon
                pos = self._space(self._value(pos, entry))
                if text[pos] == "}":
                    return pos + 1
                pos = self._space(pos + 1)  # the comma
        if char == "[":
            pos = self._space(pos + 1)
            if text[pos] == "]":
                return pos + 1
            index = 0
            while True:
                entry = (*key, index)
                self.lines[entry] = self._line(pos)
                pos = self._space(self._value(pos, entry))
                if text[pos] == "]":
                    return pos + 1
                pos = self._space(pos + 1)
                index += 1
        if char == '"':
            value, end = scanstring(text, pos + 1)
            if _SURROGATE.search(value):
                raise SuiteError(self.path, _NOT_TEXT, json_path(key), self._line(pos))
            return end
        for constant in _CONSTANTS:
            if text.startswith(constant, pos):
                self._not_finite(key, constant, pos)
        match = _SCALAR.match(text, pos)
        assert match is not None, "json.loads accepted text this walk cannot read"
        number = match.group()
        if number[-1].isdigit() and not math.isfinite(float(number)):
            self._not_finite(key, number, pos)
        return match.end()

    def _not_finite(self, key: KeyPath, shown: str, pos: int) -> NoReturn:
        raise SuiteError(self.path, f"{shown} {_NOT_FINITE}", json_path(key), self._line(pos))
