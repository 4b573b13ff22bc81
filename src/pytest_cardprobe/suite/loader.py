"""Suite stage: read one YAML case file into plain, frozen dataclasses.

A suite file is a YAML mapping with ``cardprobe: 1`` at the top level (docs/design.md §3). This
module turns it into a :class:`Suite` or raises exactly one :class:`SuiteError` that names
the file, the offending key and, where it is known, the line. Nothing else escapes
:func:`load_suite` for bad input, so the collector can turn it into a usage error and a run
never starts half-configured.

The document is composed to a PyYAML node tree (not ``safe_load``) so that every value keeps
its line number and duplicate mapping keys, which PyYAML would silently resolve to the last
one, can be reported.
"""

from __future__ import annotations

import codecs
import difflib
import json
import math
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB, FileRefused, inside, read_capped
from pytest_cardprobe.suite.calls import (
    CANARY_KINDS,
    DEFAULT_MAX_TURNS,
    Expectation,
    ScriptedResult,
    declared_names,
    parse_expectation,
    parse_results,
)

__all__ = [
    "CALL_CHANNEL",
    "CALL_JUDGE",
    "CHANNELS",
    "CONDITIONS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_VOCABULARY",
    "MAX_SAMPLES",
    "NESTING_TYPES",
    "REFERENCE_VOCABULARY",
    "SCHEMA_PATH",
    "SUITE_VERSION",
    "THINK_LEVELS",
    "Case",
    "SeedTurn",
    "Suite",
    "SuiteError",
    "SuiteLimits",
    "Turn",
    "is_suite_file",
    "load_suite",
]

CHANNELS: tuple[str, ...] = ("prose", "tool", "retry")
CONDITIONS: tuple[str, ...] = ("cold", "history", "seeded", "schema")
#: What a card suite runs when it names no channels or conditions; the others are opt-in.
DEFAULT_CHANNELS: tuple[str, ...] = ("prose", "tool")
DEFAULT_CONDITIONS: tuple[str, ...] = ("cold", "history")
#: Channels whose first question is asked in prose (the retry channel asks in prose first).
PROSE_FIRST: tuple[str, ...] = ("prose", "retry")
#: Channels that declare the tool (the retry channel declares it on its second request).
TOOL_USING: tuple[str, ...] = ("tool", "retry")
#: The system prompts a card suite may name: one per way of asking.
PROMPT_KINDS: tuple[str, ...] = ("prose", "tool")
#: A call suite (``judge: call``) has one channel: the suite's own tools, all declared at once.
CALL_JUDGE = "call"
CALL_CHANNEL = "call"
#: A call suite's conditions: the seeded and schema conditions shape card replies only.
CALL_CONDITIONS: tuple[str, ...] = ("cold", "history")
#: Every channel a probe may have (``--channel`` accepts these).
ALL_CHANNELS: tuple[str, ...] = (*CHANNELS, CALL_CHANNEL)
#: Reasoning levels: ``off``/``on`` for Ollama's boolean ``think``, the rest an effort level.
THINK_LEVELS: tuple[str, ...] = ("off", "on", "low", "medium", "high")
SUITE_VERSION = 1
#: Upper bound of ``samples`` (suite key, marker, --samples); ini ``cardprobe_max_samples``.
MAX_SAMPLES = 100
#: Default cap on every file a suite makes the plugin read; ini ``cardprobe_max_file_mb``.
DEFAULT_MAX_BYTES = DEFAULT_MAX_FILE_MB * MB

# The JSON Schema ships next to this module as package data (pyproject ships ``*.json``);
# a plain path works for both editable and wheel installs and needs no importlib dance.
SCHEMA_PATH: Path = Path(__file__).with_name("suite.schema.json")

# The reference vocabulary (docs/design.md §5). It lives in the suite stage because the suite
# comes first: the judge imports it from here (stages import only earlier stages).
REFERENCE_VOCABULARY: tuple[str, ...] = (
    "TextBlock", "RichTextBlock", "FactSet", "Badge", "Carousel", "Table", "Container",
    "ColumnSet", "ActionSet", "ImageSet", "Image", "Media", "Accordion", "TabSet",
    "CompoundButton", "Input.Date", "Input.ChoiceSet", "Input.Text", "Input.Number",
    "Input.Time", "Input.Toggle", "Input.Rating", "Rating", "Icon", "ProgressBar",
    "ProgressRing", "CodeBlock", "Chart.Pie", "Chart.Donut", "Chart.VerticalBar",
    "Chart.HorizontalBar", "Chart.Line", "Chart.Gauge",
)  # fmt: skip
#: Types that only appear inside a parent; always known, whatever vocabulary a suite uses.
NESTING_TYPES: tuple[str, ...] = ("CarouselPage", "TableRow", "TableCell", "Column", "TabPage")
#: A suite's vocabulary when it names none: the 33 top-level types, then the nesting-only ones.
DEFAULT_VOCABULARY: tuple[str, ...] = REFERENCE_VOCABULARY + NESTING_TYPES

ROLES: tuple[str, ...] = ("user", "assistant")

# Case ids become part of pytest node ids (``cards.yaml::date[model-tool-cold]``); spaces and
# brackets would break ``-k`` selection and the id parsing people do on reports.
_CASE_ID = re.compile(r"[A-Za-z0-9_.-]+")
# The tool name travels to the server; OpenAI-compatible servers reject anything else.
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")

_TOP_KEYS = (
    "cardprobe",
    "name",
    "judge",
    "channels",
    "conditions",
    "samples",
    "prompts",
    "tool",
    "history",
    "vocabulary",
    "allow_unknown_types",
    "seed_turn",
    "options",
    "think",
    "cases",
    "tools",
    "max_turns",
)
_SEED_KEYS = ("user", "card")
_CASE_KEYS = ("id", "prompt", "accept", "requires_input")
# Keys that only a call suite may use, and the card-only keys a call suite may not.
_CALL_TOP_KEYS = ("tools", "max_turns")
_CARD_ONLY_TOP_KEYS = ("tool", "vocabulary", "allow_unknown_types", "seed_turn")
_CALL_CASE_KEYS = ("id", "prompt", "expect", "results", "max_turns", "canary")
_TURN_KEYS = ("role", "content")
_TOOL_KEYS = ("type", "function")
_FUNCTION_KEYS = ("name", "description", "parameters", "strict")

# A document whose aliases expand to more nodes than this is an alias bomb, not a suite.
_MAX_NODES = 200_000

_KeyPath = tuple[str | int, ...]


class SuiteError(Exception):
    """A usage error about one suite file: what is wrong, and where.

    ``str()`` reads ``cases/bad.yaml:12: cases[3].accept: <problem>``; the line and key parts
    are left out when unknown.
    """

    def __init__(
        self,
        path: Path | str,
        problem: str,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        # All four go to ``args`` in __init__ order so the error pickles (xdist workers).
        super().__init__(path, problem, key, line)
        self.path = Path(path)
        self.problem = problem
        self.key = key
        self.line = line

    def __str__(self) -> str:
        where = str(self.path)
        if self.line is not None:
            where += f":{self.line}"
        if self.key:
            where += f": {self.key}"
        return f"{where}: {self.problem}"


@dataclass(frozen=True)
class Case:
    """One question and the element types that would answer it."""

    id: str
    prompt: str
    accept: tuple[str, ...]
    requires_input: bool
    line: int | None = None
    # Call suites only: what a good answer does, the scripted tool results of a loop, the
    # loop's turn limit and the canary role of the case.
    expect: Expectation | None = None
    results: tuple[ScriptedResult, ...] = ()
    max_turns: int = DEFAULT_MAX_TURNS
    canary: str | None = None

    @property
    def is_control(self) -> bool:
        """A negative control (``accept: []``): plain prose is the right answer."""
        return not self.accept


@dataclass(frozen=True)
class Turn:
    """One message of the ``history`` condition's preamble."""

    role: str
    content: str


@dataclass(frozen=True)
class SeedTurn:
    """The synthetic exchange of the ``seeded`` condition: a question and a card answering it."""

    user: str
    card: Any = field(hash=False)  # a JSON object or array, sent as the assistant's raw JSON


@dataclass(frozen=True)
class Suite:
    """A loaded, validated suite file.

    Mapping fields hold plain dicts so they can go straight into a JSON request body; treat
    them as read-only. They are left out of ``hash()`` so a suite stays hashable.
    """

    path: Path
    name: str
    judge: str
    channels: tuple[str, ...]
    conditions: tuple[str, ...]
    samples: int
    prompts: Mapping[str, str] = field(hash=False)
    prompt_files: Mapping[str, Path] = field(hash=False)
    tool: Mapping[str, Any] = field(hash=False)
    history: tuple[Turn, ...]
    vocabulary: tuple[str, ...]
    options: Mapping[str, Any] = field(hash=False)
    cases: tuple[Case, ...]
    # None when the suite does not say: --think or the ini key cardprobe_think decides.
    think: str | None = None
    allow_unknown_types: bool = False
    seed_turn: SeedTurn | None = None
    # Call suites only: every declared tool (sent with every request) and the file they
    # came from when ``tools:`` named one.
    tools: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    tools_file: Path | None = None

    @property
    def is_call_suite(self) -> bool:
        """A suite judged by the call judge (``judge: call``)."""
        return self.judge == CALL_JUDGE

    @property
    def tool_names(self) -> list[str]:
        """Names of a call suite's declared tools, in order."""
        return declared_names(self.tools)

    @property
    def tool_name(self) -> str:
        """Name of the declared function, or ``""`` when the suite declares no tool."""
        if not self.tool:
            return ""
        return str(self.tool["function"]["name"])

    def case(self, id: str) -> Case:
        """Return the case with this id; ``KeyError`` if there is none."""
        for case in self.cases:
            if case.id == id:
                return case
        raise KeyError(id)


# --------------------------------------------------------------------------- detection

# A top-level ``cardprobe:`` key starts at column 0 in block style (quoted or not); ``- `` in
# front is a suite written inside a top-level list, which must be reported, not skipped.
_SUITE_MARKER = re.compile(r"""^(?:-[ \t]+)?["']?cardprobe["']?[ \t]*:""", re.MULTILINE)
_SUFFIXES = (".yaml", ".yml")
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _sniff_text(raw: bytes) -> str:
    """Text good enough to look for the marker in, whatever the encoding turns out to be.

    UTF-16 and UTF-32 spread ASCII over NUL bytes; dropping them makes the marker visible, so
    such a file is reported as being in the wrong encoding instead of being skipped.
    """
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"")
    return raw.lstrip(b"\xef\xbb\xbf\xff\xfe").decode("latin-1")


def is_suite_file(path: Path | str, max_bytes: int = DEFAULT_MAX_BYTES) -> bool:
    """Tell whether ``path`` is (or tries to be) a cardprobe suite.

    A ``.yaml``/``.yml`` file (any case) counts when a line starts with a ``cardprobe:`` key,
    or when it is a flow mapping with a ``cardprobe`` key. Whether it then loads is
    :func:`load_suite`'s business: a file that looks like a suite and does not load is an
    error with file and line, never a silently skipped file. Only the first ``max_bytes``
    are looked at; a larger suite is refused as too large by the loader.
    """
    p = Path(path)
    if p.suffix.lower() not in _SUFFIXES:
        return False
    try:
        with open(p, "rb") as handle:
            raw = handle.read(max_bytes)
    except OSError:
        return False
    # Cheap pre-filter: most YAML in a repo (CI configs, fixtures) never mentions us.
    if b"cardprobe" not in raw and b"c\x00a\x00r\x00d\x00" not in raw:
        return False
    text = _sniff_text(raw)
    if _SUITE_MARKER.search(text):
        return True
    if not text.lstrip("\ufeff\xef\xbb\xbf \t\r\n").startswith("{"):
        return False
    try:
        data = yaml.load(text, Loader=_LOADER)
    except Exception:  # not YAML at all: not ours either
        return False
    return isinstance(data, dict) and "cardprobe" in data


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class SuiteLimits:
    """What a suite may make the plugin read and do (set from ini keys by the glue).

    ``roots`` are the folders files named by a suite (prompts) must resolve into, symbolic
    links followed; ``None`` checks nothing (a suite loaded outside a pytest run).
    """

    roots: tuple[Path, ...] | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    max_samples: int = MAX_SAMPLES


def load_suite(
    path: Path | str,
    *,
    known_judges: Collection[str] = ("card",),
    limits: SuiteLimits = SuiteLimits(),
) -> Suite:
    """Read and validate one suite file; raise :class:`SuiteError` on any problem with it."""
    p = Path(path)
    try:
        raw = read_capped(p, limits.max_bytes)
    except FileRefused as exc:
        raise SuiteError(p, f"suite file {exc}") from None
    except OSError as exc:
        raise SuiteError(p, f"cannot read suite file: {exc.strerror or exc}") from None
    text = decode_utf8(p, raw, "suite file")
    try:
        data, lines, root_line = _parse(p, text)
        return _SuiteReader(p, lines, known_judges, limits).read(data, root_line)
    except RecursionError:
        raise SuiteError(p, "YAML is nested too deeply to be a suite file") from None


def decode_utf8(path: Path, raw: bytes, what: str, key: str | None = None) -> str:
    """``raw`` as UTF-8 text (a BOM is allowed); any other encoding is a SuiteError saying so."""
    for bom, name in _BOMS:
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
        guess = " (it looks like UTF-16 without a BOM)" if b"\x00" in raw else ""
        raise SuiteError(
            path,
            f"{what} is not UTF-8 text{guess}: {exc.reason} at byte {exc.start}; save it as UTF-8",
            key,
            raw[: exc.start].count(b"\n") + 1,
        ) from None


def _parse(path: Path, text: str) -> tuple[Any, dict[_KeyPath, int], int | None]:
    """Compose ``text`` and convert it to plain Python values plus a key-path→line map."""
    try:
        try:
            root = yaml.compose(text, Loader=_LOADER)
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
        raise SuiteError(path, "empty file; a suite is a YAML mapping starting with `cardprobe: 1`")
    converter = _Converter(path)
    data = converter.convert(root, ())
    return data, converter.lines, root.start_mark.line + 1


# libyaml's parser when PyYAML has it: the pure-Python one takes minutes on a suite of a few
# megabytes; both keep line numbers on every node.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STANDARD_SEQ = "tag:yaml.org,2002:seq"
_STANDARD_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"


class _Converter:
    """Node tree → plain values, recording the line of every key and list item."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: dict[_KeyPath, int] = {}
        self._constructor = SafeConstructor()
        self._active: set[int] = set()
        self._seen = 0

    def _fail(self, key: _KeyPath, node: Node, problem: str, *, at_node: bool = False) -> NoReturn:
        # Prefer the line of the key that holds the value: for an alias the node's own mark
        # points at the anchor, which may be far from where the problem is.
        line = node.start_mark.line + 1
        if not at_node:
            line = self.lines.get(key, line)
        raise SuiteError(self.path, problem, _format_key(key), line)

    def convert(self, node: Node, key: _KeyPath) -> Any:
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

    def _scalar(self, node: ScalarNode, key: _KeyPath) -> Any:
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            self._fail(key, node, f"cannot read value: {problem}")
        except Exception as exc:  # e.g. ValueError from an impossible date like 2024-13-45
            self._fail(key, node, f"cannot read value {node.value!r}: {exc}")

    def _mapping(self, node: MappingNode, key: _KeyPath) -> dict[str, Any]:
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


# --------------------------------------------------------------------------- validation


_FailAt = Callable[[_KeyPath, str], NoReturn]
_CALL_TOOL_KEYS = ("type", "function")
_CALL_FUNCTION_KEYS = ("name", "description", "parameters", "strict")


def check_tools(value: list[Any], fail: _FailAt) -> list[dict[str, Any]]:
    """A call suite's tool list: function declarations with unique names and parameter
    schemas that are valid JSON Schema. Style problems are the lint's (suite/toollint.py)."""
    if not value:
        fail((), "expected at least one tool declaration")
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            fail((index,), f"expected a tool declaration mapping, got {_describe(item)}")
        for name in item:
            if name not in _CALL_TOOL_KEYS:
                fail((index, name), f"unknown key; allowed: {_one_of(_CALL_TOOL_KEYS)}")
        if item.get("type") != "function":
            fail((index, "type"), f"expected 'function', got {_describe(item.get('type'))}")
        function = item.get("function")
        if not isinstance(function, dict):
            fail((index, "function"), f"expected a mapping, got {_describe(function)}")
        for name in function:
            if name not in _CALL_FUNCTION_KEYS:
                hint = difflib.get_close_matches(name, _CALL_FUNCTION_KEYS, n=1)
                suggestion = f"did you mean {hint[0]!r}? " if hint else ""
                fail(
                    (index, "function", name),
                    f"unknown key; {suggestion}allowed: {_one_of(_CALL_FUNCTION_KEYS)}",
                )
        tool_name = function.get("name")
        if not isinstance(tool_name, str) or not tool_name:
            fail((index, "function", "name"), f"expected a tool name, got {_describe(tool_name)}")
        if tool_name in seen:
            fail((index, "function", "name"), f"tool {tool_name!r} is declared twice")
        seen[tool_name] = index
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            fail(
                (index, "function", "parameters"),
                "expected a JSON Schema mapping with `type: object`",
            )
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        try:
            validator_for(parameters).check_schema(parameters)
        except SchemaError as exc:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.path)
            fail(
                (index, "function", "parameters"),
                f"not a valid JSON Schema at {where or 'the top'}: {exc.message}",
            )
    return value


def _format_key(key: _KeyPath) -> str | None:
    """``("cases", 3, "accept")`` → ``"cases[3].accept"``."""
    text = ""
    for part in key:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or None


def _describe(value: object) -> str:
    """Name a wrong value the way it was written in YAML."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return repr(shown)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__} ({value!s})"


def _one_of(options: Sequence[str]) -> str:
    return ", ".join(options)


class _SuiteReader:
    """Validates the converted document top-down; the first problem raises."""

    def __init__(
        self,
        path: Path,
        lines: dict[_KeyPath, int],
        judges: Collection[str],
        limits: SuiteLimits,
    ) -> None:
        self.path = path
        self.lines = lines
        self.judges = judges
        self.limits = limits

    # -- error helpers

    def line_of(self, key: _KeyPath) -> int | None:
        # A missing key has no line of its own; point at the nearest enclosing entry.
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return None

    def fail(self, key: _KeyPath, problem: str, line: int | None = None) -> NoReturn:
        raise SuiteError(
            self.path, problem, _format_key(key), line if line is not None else self.line_of(key)
        )

    def check_keys(
        self,
        key: _KeyPath,
        mapping: dict[str, Any],
        allowed: Sequence[str],
        required: Sequence[str],
    ) -> None:
        for name in mapping:
            if name not in allowed:
                hint = difflib.get_close_matches(name, allowed, n=1)
                suggestion = f"did you mean {hint[0]!r}? " if hint else ""
                self.fail((*key, name), f"unknown key; {suggestion}allowed: {_one_of(allowed)}")
        for name in required:
            if name not in mapping:
                self.fail((*key, name), "missing required key")

    def mapping(self, key: _KeyPath, value: Any, what: str = "a mapping") -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(key, f"expected {what}, got {_describe(value)}")
        return value

    def text(self, key: _KeyPath, value: Any, what: str = "a non-empty string") -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"expected {what}, got {_describe(value)}")
        return value

    def names(
        self, key: _KeyPath, value: Any, allowed: Sequence[str], what: str
    ) -> tuple[str, ...]:
        """A non-empty list of unique names, each one of ``allowed``."""
        if not isinstance(value, list) or not value:
            self.fail(key, f"expected a non-empty list of {what}, got {_describe(value)}")
        seen: dict[str, None] = {}
        for index, item in enumerate(value):
            if not isinstance(item, str) or item not in allowed:
                self.fail(
                    (*key, index), f"unknown {what[:-1]} {_describe(item)}; use {_one_of(allowed)}"
                )
            if item in seen:
                self.fail((*key, index), f"{item!r} is listed twice")
            seen[item] = None
        return tuple(seen)

    def json_value(self, key: _KeyPath, value: Any) -> None:
        """Reject values a JSON request body cannot carry (dates, binary, NaN keys...)."""
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(key, f"{value!r} is not a finite number; a JSON request cannot carry it")
        if value is None or isinstance(value, str | bool | int | float):
            return
        if isinstance(value, list):
            for index, item in enumerate(value):
                self.json_value((*key, index), item)
            return
        if isinstance(value, dict):
            for name, item in value.items():
                self.json_value((*key, name), item)
            return
        self.fail(key, f"value cannot be sent as JSON: {_describe(value)}; quote it")

    # -- the document

    def read(self, data: Any, root_line: int | None) -> Suite:
        if not isinstance(data, dict):
            self.fail(
                (),
                f"expected a mapping of suite keys at the top level, got {_describe(data)}",
                line=root_line,
            )
        self.version(data)
        self.check_keys((), data, _TOP_KEYS, ("cardprobe", "cases"))

        name = self.text(("name",), data.get("name", self.path.stem))
        judge = self.judge(data.get("judge", "card"))
        if judge == CALL_JUDGE:
            return self.read_call_suite(data, name)
        for key in _CALL_TOP_KEYS:
            if key in data:
                self.fail((key,), f"`{key}` belongs to call suites (judge: call)")
        if "prompts" not in data:
            self.fail(("prompts",), "missing required key")
        channels = self.names(
            ("channels",), data.get("channels", list(DEFAULT_CHANNELS)), CHANNELS, "channels"
        )
        conditions = self.names(
            ("conditions",),
            data.get("conditions", list(DEFAULT_CONDITIONS)),
            CONDITIONS,
            "conditions",
        )
        samples = self.samples(data.get("samples", 2))
        prompts, prompt_files = self.prompts(data["prompts"], channels)

        tool: dict[str, Any] = {}
        if "tool" in data:
            tool = self.tool(data["tool"])
        elif using := [c for c in channels if c in TOOL_USING]:
            self.fail(
                ("tool",), f"missing required key: the `{using[0]}` channel needs a declaration"
            )

        history: tuple[Turn, ...] = ()
        if "history" in data:
            history = self.history(data["history"])
        elif "history" in conditions:
            self.fail(("history",), "missing required key: the `history` condition needs turns")

        seed_turn: SeedTurn | None = None
        if "seed_turn" in data:
            seed_turn = self.seed_turn(data["seed_turn"])
        elif "seeded" in conditions:
            self.fail(
                ("seed_turn",),
                "missing required key: the `seeded` condition needs a user text and a card",
            )

        allow_unknown = data.get("allow_unknown_types", False)
        if not isinstance(allow_unknown, bool):
            self.fail(
                ("allow_unknown_types",), f"expected true or false, got {_describe(allow_unknown)}"
            )

        vocabulary = DEFAULT_VOCABULARY
        if "vocabulary" in data:
            vocabulary = self.vocabulary(data["vocabulary"])

        options: dict[str, Any] = {}
        if "options" in data:
            options = self.mapping(("options",), data["options"])
            self.json_value(("options",), options)

        think = self.think(data["think"]) if "think" in data else None
        cases = self.cases(data["cases"], vocabulary)
        return Suite(
            path=self.path,
            name=name,
            judge=judge,
            channels=channels,
            conditions=conditions,
            samples=samples,
            prompts=prompts,
            prompt_files=prompt_files,
            tool=tool,
            history=history,
            vocabulary=vocabulary,
            options=options,
            cases=cases,
            think=think,
            allow_unknown_types=allow_unknown,
            seed_turn=seed_turn,
        )

    def version(self, data: dict[str, Any]) -> None:
        if "cardprobe" not in data:
            self.fail(
                ("cardprobe",),
                "missing required key; a suite file starts with `cardprobe: 1`",
            )
        version = data["cardprobe"]
        if isinstance(version, bool) or version != SUITE_VERSION:
            self.fail(
                ("cardprobe",),
                f"unsupported suite format version {_describe(version)}; "
                f"this pytest-cardprobe reads `cardprobe: {SUITE_VERSION}`",
            )

    def judge(self, value: Any) -> str:
        judge = self.text(("judge",), value)
        if judge != CALL_JUDGE and judge not in self.judges:
            known = sorted({*self.judges, CALL_JUDGE})
            self.fail(
                ("judge",),
                f"unknown judge {judge!r}; known judges: {_one_of(known)}",
            )
        return judge

    def think(self, value: Any) -> str:
        # YAML 1.1 reads a bare `off`/`on` as a boolean; both mean the level of that name.
        if value is True or value is False:
            return "on" if value else "off"
        if not isinstance(value, str) or value not in THINK_LEVELS:
            self.fail(
                ("think",), f"expected one of {_one_of(THINK_LEVELS)}, got {_describe(value)}"
            )
        return value

    def samples(self, value: Any) -> int:
        # ``type(...) is int`` on purpose: YAML ``true`` is a bool, and bool is an int subclass.
        if type(value) is not int or value < 1:
            self.fail(("samples",), f"expected an integer >= 1, got {_describe(value)}")
        most = self.limits.max_samples
        if value > most:
            self.fail(
                ("samples",),
                f"{value} samples is more than the limit of {most} "
                "(raise ini cardprobe_max_samples to allow more)",
            )
        return value

    def prompts(
        self, value: Any, channels: tuple[str, ...]
    ) -> tuple[dict[str, str], dict[str, Path]]:
        key: _KeyPath = ("prompts",)
        given = self.mapping(key, value, "a mapping of channel to prompt file")
        # The retry channel asks in prose first and through the tool second: it needs both.
        needed = [k for k in PROMPT_KINDS if k in channels or "retry" in channels]
        self.check_keys(key, given, PROMPT_KINDS, needed)
        texts: dict[str, str] = {}
        files: dict[str, Path] = {}
        # Prompts for channels the suite does not declare are still checked (a stale path is
        # a bug waiting to happen) but are not returned: one prompt per declared channel.
        for channel in PROMPT_KINDS:
            if channel not in given:
                continue
            entry = (*key, channel)
            relative = self.text(entry, given[channel], "a prompt file path")
            resolved, prompt = self.read_text(entry, relative, "prompt file")
            if not prompt.strip():
                self.fail(entry, f"prompt file is empty: {resolved}")
            if channel in needed:
                texts[channel] = prompt
                files[channel] = resolved
        return texts, files

    def read_text(self, key: _KeyPath, relative: str, what: str) -> tuple[Path, str]:
        """A file named by the suite, relative to it: inside the roots, regular, capped, UTF-8.

        Every file a suite makes the plugin read goes through here, so a suite cannot send
        ``/etc/passwd`` to a model server (and into a cassette), hang on a FIFO or fill memory
        from ``/dev/zero``.
        """
        if "\x00" in relative:
            self.fail(key, f"{what} path contains a NUL character")
        named = self.path.parent / relative
        resolved = Path(os.path.realpath(named))
        roots = self.limits.roots
        if roots is not None and not inside(named, roots):
            self.fail(
                key,
                f"{what} {relative!r} resolves to {resolved}, outside the project "
                f"({', '.join(str(r) for r in roots)}); keep suite files inside it",
            )
        try:
            raw = read_capped(named, self.limits.max_bytes)
        except FileRefused as exc:
            self.fail(key, f"{what} {named} {exc}")
        except FileNotFoundError:
            self.fail(key, f"{what} not found: {resolved}")
        except OSError as exc:
            self.fail(key, f"cannot read {what} {resolved}: {exc.strerror or exc}")
        try:
            text = decode_utf8(named, raw, what)
        except SuiteError as exc:
            self.fail(key, f"{what} {named}: {exc.problem}")
        return resolved, text

    def read_file(self, entry: _KeyPath, value: Any, what: str) -> tuple[str, Path]:
        """The text of a file named relative to the suite (through :meth:`read_text`)."""
        relative = self.text(entry, value, f"a {what} file path")
        resolved, text = self.read_text(entry, relative, f"{what} file")
        if not text.strip():
            self.fail(entry, f"{what} file is empty: {resolved}")
        return text, resolved

    # -- call suites (judge: call)

    def read_call_suite(self, data: dict[str, Any], name: str) -> Suite:
        for key in _CARD_ONLY_TOP_KEYS:
            if key in data:
                self.fail((key,), f"`{key}` belongs to card suites; a call suite declares `tools:`")
        channels = (CALL_CHANNEL,)
        if "channels" in data:
            self.names(("channels",), data["channels"], channels, "channels")
        conditions = self.names(
            ("conditions",),
            data.get("conditions", list(DEFAULT_CONDITIONS)),
            CALL_CONDITIONS,
            "conditions",
        )
        samples = self.samples(data.get("samples", 2))
        prompts: dict[str, str] = {}
        prompt_files: dict[str, Path] = {}
        if "prompts" in data:
            pkey: _KeyPath = ("prompts",)
            given = self.mapping(pkey, data["prompts"], "a mapping with a `call` prompt file")
            self.check_keys(pkey, given, channels, ())
            if CALL_CHANNEL in given:
                entry = (*pkey, CALL_CHANNEL)
                text, resolved = self.read_file(entry, given[CALL_CHANNEL], "prompt")
                prompts[CALL_CHANNEL], prompt_files[CALL_CHANNEL] = text, resolved
        if "tools" not in data:
            self.fail(
                ("tools",),
                "missing required key: a call suite declares its tools (a list in the "
                "OpenAI/Ollama function format, or a path to a JSON or YAML file holding one)",
            )
        tools, tools_file = self.tools(data["tools"])
        history: tuple[Turn, ...] = ()
        if "history" in data:
            history = self.history(data["history"])
        elif "history" in conditions:
            self.fail(("history",), "missing required key: the `history` condition needs turns")
        options: dict[str, Any] = {}
        if "options" in data:
            options = self.mapping(("options",), data["options"])
            self.json_value(("options",), options)
        max_turns = self.max_turns(("max_turns",), data.get("max_turns", DEFAULT_MAX_TURNS))
        cases = self.call_cases(data["cases"], declared_names(tools), max_turns)
        return Suite(
            path=self.path,
            name=name,
            judge=CALL_JUDGE,
            channels=channels,
            conditions=conditions,
            samples=samples,
            prompts=prompts,
            prompt_files=prompt_files,
            tool={},
            history=history,
            vocabulary=(),
            options=options,
            cases=cases,
            tools=tuple(tools),
            tools_file=tools_file,
        )

    def max_turns(self, key: _KeyPath, value: Any) -> int:
        if type(value) is not int or value < 1:
            self.fail(key, f"expected an integer >= 1, got {_describe(value)}")
        return value

    def tools(self, value: Any) -> tuple[list[dict[str, Any]], Path | None]:
        """``tools:`` inline, or a JSON/YAML file relative to the suite."""
        key: _KeyPath = ("tools",)
        if isinstance(value, list):
            return check_tools(value, lambda k, problem: self.fail((*key, *k), problem)), None
        if not isinstance(value, str):
            self.fail(
                key,
                "expected a list of tool declarations or a path to a JSON/YAML file, "
                f"got {_describe(value)}",
            )
        text, resolved = self.read_file(key, value, "tools")

        def fail_in_file(k: _KeyPath, problem: str) -> NoReturn:
            raise SuiteError(resolved, problem, "$" + (_format_key(k) or ""))

        try:
            if resolved.suffix.lower() == ".json":
                loaded = json.loads(text)
            else:
                loaded = yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            kind = "JSON" if resolved.suffix.lower() == ".json" else "YAML"
            raise SuiteError(resolved, f"not valid {kind}: {exc}".splitlines()[0]) from None
        if not isinstance(loaded, list):
            fail_in_file((), f"expected a list of tool declarations, got {_describe(loaded)}")
        return check_tools(loaded, fail_in_file), resolved

    def case_entries(
        self, value: Any, known: Sequence[str], third: str
    ) -> Iterator[tuple[_KeyPath, dict[str, Any], str, str]]:
        """Each case of ``cases:`` as (key path, mapping, unique id, prompt), checked alike
        for card and call suites; ``third`` is the key each kind requires besides id and
        prompt (``accept`` or ``expect``)."""
        key: _KeyPath = ("cases",)
        if not isinstance(value, list) or not value:
            self.fail(key, f"expected a non-empty list of cases, got {_describe(value)}")
        first_line: dict[str, int | None] = {}
        for index, item in enumerate(value):
            entry = (*key, index)
            case = self.mapping(entry, item, f"a case mapping (id, prompt, {third})")
            self.check_keys(entry, case, known, ("id", "prompt", third))
            case_id = self.case_id(entry, case["id"], first_line)
            prompt = self.text((*entry, "prompt"), case["prompt"], "a non-empty question")
            yield entry, case, case_id, prompt

    def call_cases(self, value: Any, declared: list[str], max_turns: int) -> tuple[Case, ...]:
        cases: list[Case] = []
        for entry, case, case_id, prompt in self.case_entries(value, _CALL_CASE_KEYS, "expect"):

            def fail(key: _KeyPath, problem: str, case_id: str = case_id) -> NoReturn:
                # Name the case by its id too: "cases[7]" alone sends people counting.
                self.fail(key, f"case {case_id!r}: {problem}")

            expect = parse_expectation(case["expect"], (*entry, "expect"), fail, declared)
            results: tuple[ScriptedResult, ...] = ()
            if "results" in case:
                if not expect.multi_turn:
                    fail(
                        (*entry, "results"),
                        "results: feed a tool loop, and only a `sequence:` expectation runs one",
                    )
                results = parse_results(case["results"], (*entry, "results"), fail, declared)
            turns = max_turns
            if "max_turns" in case:
                turns = self.max_turns((*entry, "max_turns"), case["max_turns"])
            if expect.multi_turn and len(expect.calls) > turns:
                fail(
                    (*entry, "max_turns"),
                    f"the sequence has {len(expect.calls)} calls but the loop stops after "
                    f"{turns} turns",
                )
            canary = case.get("canary")
            if canary is not None:
                if canary not in CANARY_KINDS:
                    fail(
                        (*entry, "canary"),
                        f"unknown canary {_describe(canary)}; use {_one_of(CANARY_KINDS)}",
                    )
                if (canary == "no_tool") != (expect.kind == "no_call"):
                    fail(
                        (*entry, "canary"),
                        "a `no_tool` canary expects `no_call: true`; a `needs_tool` canary "
                        "expects a call",
                    )
            cases.append(
                Case(
                    id=case_id,
                    prompt=prompt,
                    accept=(),
                    requires_input=False,
                    line=self.lines.get(entry),
                    expect=expect,
                    results=results,
                    max_turns=turns,
                    canary=canary,
                )
            )
        return tuple(cases)

    def case_id(self, entry: _KeyPath, case_id: Any, first_line: dict[str, int | None]) -> str:
        """A valid, unique case id (it becomes part of the pytest test id)."""
        if not isinstance(case_id, str) or not _CASE_ID.fullmatch(case_id):
            self.fail(
                (*entry, "id"),
                f"expected an id of letters, digits, '_', '.' or '-' (it becomes part of the "
                f"pytest test id), got {_describe(case_id)}",
            )
        if case_id in first_line:
            where = first_line[case_id]
            self.fail(
                (*entry, "id"),
                f"duplicate case id {case_id!r}"
                + (f" (first used on line {where})" if where else ""),
            )
        first_line[case_id] = self.lines.get((*entry, "id"))
        return case_id

    def tool(self, value: Any) -> dict[str, Any]:
        key: _KeyPath = ("tool",)
        tool = self.mapping(key, value, "a tool declaration mapping")
        self.check_keys(key, tool, _TOOL_KEYS, _TOOL_KEYS)
        if tool["type"] != "function":
            self.fail((*key, "type"), f"expected 'function', got {_describe(tool['type'])}")
        fkey = (*key, "function")
        function = self.mapping(fkey, tool["function"])
        self.check_keys(fkey, function, _FUNCTION_KEYS, ("name", "parameters"))
        name = self.text((*fkey, "name"), function["name"], "a function name")
        if not _TOOL_NAME.fullmatch(name):
            self.fail(
                (*fkey, "name"),
                f"function name {name!r} must be letters, digits, _ or - (max 64)",
            )
        if "description" in function:
            self.text((*fkey, "description"), function["description"])
        if "strict" in function and not isinstance(function["strict"], bool):
            self.fail((*fkey, "strict"), f"expected true or false, got {function['strict']!r}")
        pkey = (*fkey, "parameters")
        parameters = self.mapping(pkey, function["parameters"], "a JSON Schema mapping")
        if parameters.get("type") != "object":
            self.fail(pkey, "the parameters schema must have `type: object`")
        properties = parameters.get("properties")
        # The tool channel scores the JSON of the call's ``body`` argument (docs/design.md §5), so a
        # declaration without an array ``body`` could never pass; say so at load time.
        body = properties.get("body") if isinstance(properties, dict) else None
        if not isinstance(body, dict) or body.get("type") != "array":
            self.fail(
                (*pkey, "properties"),
                "the parameters schema must declare a `body` property of `type: array`",
            )
        self.json_value(key, tool)
        return tool

    def history(self, value: Any) -> tuple[Turn, ...]:
        key: _KeyPath = ("history",)
        if not isinstance(value, list) or len(value) < 2 or len(value) % 2:
            count = f"{len(value)} turns" if isinstance(value, list) else _describe(value)
            self.fail(
                key,
                "expected an even number (at least 2) of turns alternating user, assistant; "
                f"got {count}",
            )
        turns: list[Turn] = []
        for index, item in enumerate(value):
            entry = (*key, index)
            turn = self.mapping(entry, item, "a mapping with role and content")
            self.check_keys(entry, turn, _TURN_KEYS, _TURN_KEYS)
            # The case question is appended as a user turn, so the preamble must start with
            # the user and end with the assistant; anything else is not a chat transcript.
            want = ROLES[index % 2]
            role = turn["role"]
            if role not in ROLES:
                self.fail((*entry, "role"), f"unknown role {_describe(role)}; use user, assistant")
            if role != want:
                self.fail(
                    (*entry, "role"),
                    f"expected {want!r} here: turns alternate user, assistant, starting with user",
                )
            turns.append(Turn(role=role, content=self.text((*entry, "content"), turn["content"])))
        return tuple(turns)

    def seed_turn(self, value: Any) -> SeedTurn:
        key: _KeyPath = ("seed_turn",)
        seed = self.mapping(key, value, "a mapping with user and card")
        self.check_keys(key, seed, _SEED_KEYS, _SEED_KEYS)
        user = self.text((*key, "user"), seed["user"], "the user's question as text")
        card = seed["card"]
        # The assistant turn is the card's raw JSON: only a card-shaped value can be one.
        if not isinstance(card, dict | list) or not card:
            self.fail(
                (*key, "card"),
                f"expected the card as a non-empty mapping or list, got {_describe(card)}",
            )
        self.json_value((*key, "card"), card)
        return SeedTurn(user=user, card=card)

    def vocabulary(self, value: Any) -> tuple[str, ...]:
        key: _KeyPath = ("vocabulary",)
        if not isinstance(value, list) or not value:
            self.fail(
                key, f"expected a non-empty list of element type names, got {_describe(value)}"
            )
        seen: dict[str, None] = {}
        for index, item in enumerate(value):
            name = self.text((*key, index), item, "an element type name")
            if name in seen:
                self.fail((*key, index), f"{name!r} is listed twice")
            seen[name] = None
        return tuple(seen)

    def cases(self, value: Any, vocabulary: tuple[str, ...]) -> tuple[Case, ...]:
        cases: list[Case] = []
        for entry, case, case_id, prompt in self.case_entries(value, _CASE_KEYS, "accept"):
            accept = self.accept((*entry, "accept"), case["accept"], vocabulary)

            # A case needs an input when every accepted type is one; a control needs nothing.
            requires_input = bool(accept) and all(t.startswith("Input.") for t in accept)
            if "requires_input" in case:
                flag = case["requires_input"]
                if not isinstance(flag, bool):
                    self.fail(
                        (*entry, "requires_input"), f"expected true or false, got {_describe(flag)}"
                    )
                if flag and not accept:
                    self.fail(
                        (*entry, "requires_input"),
                        "a negative control (accept: []) cannot require an input",
                    )
                requires_input = flag
            cases.append(
                Case(
                    id=case_id,
                    prompt=prompt,
                    accept=accept,
                    requires_input=requires_input,
                    line=self.lines.get(entry),
                )
            )
        return tuple(cases)

    def accept(self, key: _KeyPath, value: Any, vocabulary: tuple[str, ...]) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.fail(
                key,
                "expected a list of element type names ([] for a prose control), "
                f"got {_describe(value)}",
            )
        known = set(vocabulary)
        seen: dict[str, None] = {}
        for index, item in enumerate(value):
            if not isinstance(item, str) or item not in known:
                close = (
                    difflib.get_close_matches(item, vocabulary, n=1)
                    if isinstance(item, str)
                    else []
                )
                hint = f"; did you mean {close[0]!r}?" if close else ""
                self.fail(
                    (*key, index),
                    f"{_describe(item)} is not in the suite's element vocabulary{hint}",
                )
            if item in seen:
                self.fail((*key, index), f"{item!r} is listed twice")
            seen[item] = None
        return tuple(seen)
