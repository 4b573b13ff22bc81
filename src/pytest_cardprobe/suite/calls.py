"""Suite stage: what a call suite's case expects (``expect:``), as plain frozen records.

A call suite (``judge: call``) declares the tools a team ships; each case says which call(s)
a good answer makes, or that none should be made. This module turns the ``expect:``,
``results:`` and ``final:`` parts of a case into records and checks them. Reading a case is
the loader's job; it hands each part here together with a ``fail`` callback that raises
the loader's :class:`SuiteError` with the file, key path and line, so every mistake here is
reported the same way as any other suite mistake.

Matching values against these records is the judge's job (``judge/call.py``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

KeyPath = tuple[str | int, ...]
Fail = Callable[[KeyPath, str], NoReturn]

#: Matcher names an argument matcher mapping may use (``ignore_case`` is a modifier).
#: The judge's records: ``absent`` (value None), ``optional`` and ``each`` (value: the inner
#: :class:`Matcher`), ``length`` (value: an inclusive ``(lo, hi)`` tuple of ints).
MATCHERS: tuple[str, ...] = (
    "equals",
    "one_of",
    "regex",
    "contains",
    "type",
    "range",
    "any",
    "absent",
    "optional",
    "each",
    "length",
)
MODIFIERS: tuple[str, ...] = ("ignore_case",)
#: JSON Schema's type names, the values ``{type: ...}`` accepts.
JSON_TYPES: tuple[str, ...] = ("string", "number", "integer", "boolean", "array", "object", "null")
#: Matchers on a loop's final text.
FINAL_KEYS: tuple[str, ...] = ("contains", "regex", "not_contains", "ignore_case")
EXPECT_KINDS: tuple[str, ...] = ("call", "calls", "no_call", "sequence")
CANARY_KINDS: tuple[str, ...] = ("needs_tool", "no_tool")
DEFAULT_MAX_TURNS = 5


@dataclass(frozen=True)
class Matcher:
    """One argument matcher: ``kind`` is a name of :data:`MATCHERS`; ``value`` its operand."""

    kind: str
    value: Any = field(hash=False, default=None)
    ignore_case: bool = False

    def describe(self) -> str:
        """How the matcher reads in a label, e.g. ``regex 'src/.*'``."""
        case = " (ignoring case)" if self.ignore_case else ""
        if self.kind == "equals":
            return repr(self.value) + case
        if self.kind == "any":
            return "any value"
        if self.kind == "absent":
            return "absent"
        if self.kind == "optional":
            return f"{self.value.describe()}{case} or absent"
        if self.kind == "each":
            return f"each {self.value.describe()}{case}"
        if self.kind in ("range", "length"):
            return f"{self.kind} [{self.value[0]}, {self.value[1]}]"
        return f"{self.kind.replace('_', ' ')} {self.value!r}{case}"


@dataclass(frozen=True)
class CallSpec:
    """An expected call: the tool's name and matchers for the arguments that matter."""

    name: str
    args: tuple[tuple[str, Matcher], ...] = ()


@dataclass(frozen=True)
class FinalCheck:
    """A matcher on the model's final text: ``contains``, ``regex`` or ``not_contains``."""

    kind: str
    value: str
    ignore_case: bool = False


@dataclass(frozen=True)
class ScriptedResult:
    """What the "tool" returns to a call of ``name`` whose arguments match ``args``."""

    name: str
    args: tuple[tuple[str, Matcher], ...]
    content: str


@dataclass(frozen=True)
class Expectation:
    """A case's ``expect:``. ``kind`` is one of :data:`EXPECT_KINDS`.

    ``calls`` holds one spec for ``call``, several for ``calls`` (one turn) and
    ``sequence`` (across turns, in order), none for ``no_call``.
    """

    kind: str
    calls: tuple[CallSpec, ...] = ()
    ordered: bool = False
    final: tuple[FinalCheck, ...] = ()

    @property
    def multi_turn(self) -> bool:
        """A sequence runs a tool loop; the other kinds judge the first reply."""
        return self.kind == "sequence"


# --------------------------------------------------------------------------- parsing


def _describe(value: object) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    shown = repr(value)
    return shown if len(shown) <= 42 else shown[:39] + "..."


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_matcher(value: Any, key: KeyPath, fail: Fail) -> Matcher:
    """An argument matcher: a literal (any non-mapping JSON value) or a matcher mapping."""
    if not isinstance(value, dict):
        return Matcher("equals", value)
    unknown = [k for k in value if k not in MATCHERS + MODIFIERS]
    if unknown:
        hint = difflib.get_close_matches(unknown[0], MATCHERS + MODIFIERS, n=1)
        fail(
            (*key, unknown[0]),
            f"unknown matcher {unknown[0]!r}"
            + (f"; did you mean {hint[0]!r}?" if hint else "")
            + f" (matchers: {', '.join(MATCHERS)}; to match an object literally use equals:)",
        )
    kinds = [k for k in value if k in MATCHERS]
    if len(kinds) != 1:
        fail(key, f"a matcher mapping names exactly one of {', '.join(MATCHERS)}; got {len(kinds)}")
    kind = kinds[0]
    operand = value[kind]
    where = (*key, kind)
    ignore_case = value.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        fail((*key, "ignore_case"), f"expected true or false, got {_describe(ignore_case)}")
    if kind == "one_of":
        if not isinstance(operand, list) or not operand:
            fail(where, f"expected a non-empty list of allowed values, got {_describe(operand)}")
    elif kind == "regex":
        if not isinstance(operand, str):
            fail(where, f"expected a regular expression string, got {_describe(operand)}")
        try:
            re.compile(operand)
        except re.error as exc:
            fail(where, f"invalid regular expression: {exc}")
    elif kind == "contains":
        if isinstance(operand, dict | list):
            fail(where, f"expected a string or a single value, got {_describe(operand)}")
    elif kind == "type":
        if operand not in JSON_TYPES:
            fail(where, f"unknown type {_describe(operand)}; use one of {', '.join(JSON_TYPES)}")
    elif kind == "range":
        if (
            not isinstance(operand, list)
            or len(operand) != 2
            or not all(_is_number(x) for x in operand)
            or operand[0] > operand[1]
        ):
            fail(where, f"expected [low, high] with two numbers, low <= high; got {operand!r}")
    elif kind == "any" and operand is not True:
        fail(where, f"expected `any: true`, got {_describe(operand)}")
    if ignore_case and kind not in ("equals", "one_of", "regex", "contains"):
        fail((*key, "ignore_case"), f"ignore_case does not apply to {kind}")
    return Matcher(kind, operand, ignore_case)


def parse_args(value: Any, key: KeyPath, fail: Fail) -> tuple[tuple[str, Matcher], ...]:
    """``args:``: a mapping of argument name to matcher."""
    if not isinstance(value, dict):
        fail(key, f"expected a mapping of argument name to matcher, got {_describe(value)}")
    return tuple((name, parse_matcher(item, (*key, name), fail)) for name, item in value.items())


def parse_call_spec(value: Any, key: KeyPath, fail: Fail, declared: Sequence[str]) -> CallSpec:
    """One entry of ``calls:`` / ``sequence:``: ``{call: NAME, args: {...}}`` or a bare name."""
    if isinstance(value, str):
        value = {"call": value}
    if not isinstance(value, dict):
        fail(key, f"expected a call mapping ({{call: NAME, args: ...}}), got {_describe(value)}")
    for name in value:
        if name not in ("call", "args"):
            fail((*key, name), "unknown key; allowed: call, args")
    if "call" not in value:
        fail((*key, "call"), "missing required key")
    name = check_tool_name(value["call"], (*key, "call"), fail, declared)
    args = parse_args(value["args"], (*key, "args"), fail) if "args" in value else ()
    return CallSpec(name, args)


def check_tool_name(value: Any, key: KeyPath, fail: Fail, declared: Sequence[str]) -> str:
    """A tool name that the suite's ``tools:`` declares."""
    if not isinstance(value, str) or value not in declared:
        hint = difflib.get_close_matches(str(value), declared, n=1)
        fail(
            key,
            f"{_describe(value)} is not a declared tool"
            + (f"; did you mean {hint[0]!r}?" if hint else "")
            + f" (tools: {', '.join(declared)})",
        )
    return value


def parse_final(value: Any, key: KeyPath, fail: Fail) -> tuple[FinalCheck, ...]:
    """``final:``: ``{contains | regex | not_contains: text-or-list, ignore_case: bool}``."""
    if not isinstance(value, dict):
        fail(key, f"expected a mapping of contains / regex / not_contains, got {_describe(value)}")
    for name in value:
        if name not in FINAL_KEYS:
            hint = difflib.get_close_matches(name, FINAL_KEYS, n=1)
            fail(
                (*key, name),
                f"unknown matcher {name!r}"
                + (f"; did you mean {hint[0]!r}?" if hint else "")
                + f" (allowed: {', '.join(FINAL_KEYS)})",
            )
    ignore_case = value.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        fail((*key, "ignore_case"), f"expected true or false, got {_describe(ignore_case)}")
    checks: list[FinalCheck] = []
    for kind in ("contains", "regex", "not_contains"):
        if kind not in value:
            continue
        items = value[kind] if isinstance(value[kind], list) else [value[kind]]
        for index, item in enumerate(items):
            where: KeyPath = (
                (*key, kind) if not isinstance(value[kind], list) else (*key, kind, index)
            )
            if not isinstance(item, str) or not item:
                fail(where, f"expected a non-empty string, got {_describe(item)}")
            if kind == "regex":
                try:
                    re.compile(item)
                except re.error as exc:
                    fail(where, f"invalid regular expression: {exc}")
            checks.append(FinalCheck(kind, item, ignore_case))
    if not checks:
        fail(key, "expected at least one of contains, regex, not_contains")
    return tuple(checks)


def parse_expectation(value: Any, key: KeyPath, fail: Fail, declared: Sequence[str]) -> Expectation:
    """A case's ``expect:`` with exactly one of ``call``, ``calls``, ``no_call``, ``sequence``."""
    if not isinstance(value, dict):
        fail(
            key, f"expected a mapping with one of {', '.join(EXPECT_KINDS)}, got {_describe(value)}"
        )
    allowed = (*EXPECT_KINDS, "args", "ordered", "final")
    for name in value:
        if name not in allowed:
            hint = difflib.get_close_matches(name, allowed, n=1)
            fail(
                (*key, name),
                "unknown key"
                + (f"; did you mean {hint[0]!r}?" if hint else "")
                + f"; allowed: {', '.join(allowed)}",
            )
    kinds = [k for k in EXPECT_KINDS if k in value]
    if not kinds:
        fail(key, f"missing the expectation: give one of {', '.join(EXPECT_KINDS)}")
    if len(kinds) > 1:
        fail(
            (*key, kinds[1]),
            f"two expectations ({' and '.join(kinds)}); a case expects exactly one of "
            f"{', '.join(EXPECT_KINDS)}",
        )
    kind = kinds[0]
    where = (*key, kind)
    if "args" in value and kind != "call":
        fail((*key, "args"), f"args: belongs to `call:`; with {kind}: give args per call")
    if "ordered" in value and kind != "calls":
        fail((*key, "ordered"), "ordered: applies to `calls:` only (a sequence is always ordered)")
    if "final" in value and kind not in ("sequence", "no_call"):
        fail((*key, "final"), "final: applies to `sequence:` and `no_call:` (the final text)")
    final = parse_final(value["final"], (*key, "final"), fail) if "final" in value else ()
    if kind == "call":
        spec = parse_call_spec(
            {"call": value["call"], **({"args": value["args"]} if "args" in value else {})},
            key,
            fail,
            declared,
        )
        return Expectation("call", (spec,))
    if kind == "no_call":
        if value["no_call"] is not True:
            fail(where, f"expected `no_call: true`, got {_describe(value['no_call'])}")
        return Expectation("no_call", (), final=final)
    items = value[kind]
    if not isinstance(items, list) or not items:
        fail(where, f"expected a non-empty list of calls, got {_describe(items)}")
    specs = tuple(
        parse_call_spec(item, (*where, i), fail, declared) for i, item in enumerate(items)
    )
    if kind == "calls":
        ordered = value.get("ordered", False)
        if not isinstance(ordered, bool):
            fail((*key, "ordered"), f"expected true or false, got {_describe(ordered)}")
        return Expectation("calls", specs, ordered=ordered)
    return Expectation("sequence", specs, ordered=True, final=final)


def _result_text(value: Any, key: KeyPath, fail: Fail) -> str:
    import json

    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        fail(key, f"a tool result is text or JSON, got {_describe(value)}")


def parse_results(
    value: Any, key: KeyPath, fail: Fail, declared: Sequence[str]
) -> tuple[ScriptedResult, ...]:
    """``results:``: ``{tool: returns}`` or a list of ``{call, args?, returns}``.

    The first entry whose tool and argument matchers fit a call answers it.
    """
    out: list[ScriptedResult] = []
    if isinstance(value, dict):
        for name, returns in value.items():
            check_tool_name(name, (*key, name), fail, declared)
            out.append(ScriptedResult(name, (), _result_text(returns, (*key, name), fail)))
        if not out:
            fail(key, "expected at least one scripted result")
        return tuple(out)
    if not isinstance(value, list) or not value:
        fail(
            key,
            "expected a mapping of tool to result, or a list of {call, args, returns}; "
            f"got {_describe(value)}",
        )
    for index, item in enumerate(value):
        where = (*key, index)
        if not isinstance(item, dict):
            fail(where, f"expected {{call, args, returns}}, got {_describe(item)}")
        for name in item:
            if name not in ("call", "args", "returns"):
                fail((*where, name), "unknown key; allowed: call, args, returns")
        for name in ("call", "returns"):
            if name not in item:
                fail((*where, name), "missing required key")
        tool = check_tool_name(item["call"], (*where, "call"), fail, declared)
        args = parse_args(item["args"], (*where, "args"), fail) if "args" in item else ()
        out.append(
            ScriptedResult(tool, args, _result_text(item["returns"], (*where, "returns"), fail))
        )
    return tuple(out)


def spec_names(specs: Sequence[CallSpec]) -> list[str]:
    """The tool names of ``specs``, in order."""
    return [s.name for s in specs]


def declared_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the functions in an OpenAI/Ollama ``tools`` list."""
    names: list[str] = []
    for tool in tools:
        fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
    return names


def parameters_of(tools: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    """The ``parameters`` JSON Schema of the declared tool ``name``."""
    for tool in tools:
        fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and fn.get("name") == name:
            params = fn.get("parameters")
            return params if isinstance(params, Mapping) else {}
    return None
