"""Suite stage: a call suite case's ``expect:`` and ``results:`` as records.

The suite schema has checked their shape by the time they get here; this module checks
what the schema cannot know: that each named tool is one the suite declares, that each
argument a matcher names is one that tool declares (a typo of ``path`` would otherwise fail
every sample as a wrong argument), that an expected call does not want a required argument
``absent``, regular expressions and ``low <= high`` (through :func:`parse_matcher`).
Problems are raised through ``fail`` with the key path.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_cardprobe.suite.argvalues import value_findings
from pytest_cardprobe.suite.calls import (
    CallSpec,
    Expectation,
    FinalCheck,
    Matcher,
    ScriptedResult,
    admits,
    declared_names,
    parameters_of,
    parse_matcher,
)
from pytest_cardprobe.suite.errors import Fail, KeyPath, Warn, describe, one_of
from pytest_cardprobe.suite.patterns import pattern_problem

__all__ = ["parse_expectation", "parse_results"]


class _Tools:
    """The declared tools of one suite, for the checks of names and arguments."""

    def __init__(
        self, tools: Sequence[Mapping[str, Any]], fail: Fail, warn: Warn | None = None
    ) -> None:
        self.tools = tools
        self.names = declared_names(tools)
        self.fail = fail
        self.warn = warn or (lambda key, problem: None)

    def name(self, value: str, key: KeyPath) -> str:
        if value not in self.names:
            hint = difflib.get_close_matches(value, self.names, n=1)
            self.fail(
                key,
                f"{describe(value)} is not a declared tool"
                + (f"; did you mean {hint[0]!r}?" if hint else "")
                + f" (tools: {one_of(self.names)})",
            )
        return value

    def args(
        self, tool: str, value: dict[str, Any], key: KeyPath, *, expected: bool = True
    ) -> tuple[tuple[str, Matcher], ...]:
        """``args:`` of a call of ``tool``: each name declared by the tool, each matcher read.

        In an expected call (not a scripted result, which may answer any call), a required
        argument cannot be ``absent``: a call without it fails the schema before any matcher;
        nor can a matcher want only values the tool's schema rejects (``suite/argvalues.py``):
        a problem when no value can pass, a warning when only some alternatives can.
        """
        parameters = parameters_of(self.tools, tool) or {}
        properties = parameters.get("properties")
        declared = list(properties) if isinstance(properties, Mapping) else []
        required = parameters.get("required")
        out: list[tuple[str, Matcher]] = []
        for name, matcher in value.items():
            where = (*key, name)
            if not admits(parameters, name):
                self.fail(where, self._undeclared(tool, name, declared))
            read = parse_matcher(matcher, where, self.fail, checked=True)
            if (
                expected
                and read.kind == "absent"
                and isinstance(required, list)
                and name in required
            ):
                self.fail(
                    where,
                    f"tool {tool!r} requires {name!r} (its parameters list it in `required`), "
                    f"so `absent: true` could never pass: a call without {name!r} fails as "
                    "bad_arguments before any matcher is asked",
                )
            if expected:
                found = value_findings(tool, parameters, name, read)
                for problem in found.problems:
                    self.fail(where, problem)
                for doubt in found.warnings:
                    self.warn(where, doubt)
            out.append((name, read))
        return tuple(out)

    @staticmethod
    def _undeclared(tool: str, name: str, declared: list[str]) -> str:
        if not declared:
            return (
                f"tool {tool!r} declares no arguments (its parameters have no `properties` "
                f"and no `additionalProperties: true`), so a call cannot carry {name!r}"
            )
        hint = difflib.get_close_matches(name, declared, n=1)
        return (
            f"tool {tool!r} has no argument {name!r}"
            + (f"; did you mean {hint[0]!r}?" if hint else "")
            + f" (its arguments: {one_of(declared)})"
        )

    def spec(self, value: Any, key: KeyPath) -> CallSpec:
        """One entry of ``calls:`` / ``sequence:``: a bare tool name or ``{call, args}``."""
        if isinstance(value, str):
            return CallSpec(self.name(value, key))
        name = self.name(value["call"], (*key, "call"))
        args = self.args(name, value["args"], (*key, "args")) if "args" in value else ()
        return CallSpec(name, args)


def parse_final(value: dict[str, Any], key: KeyPath, fail: Fail) -> tuple[FinalCheck, ...]:
    """``final:``: ``{contains | regex | not_contains: text-or-list, ignore_case: bool}``."""
    ignore_case = bool(value.get("ignore_case", False))
    checks: list[FinalCheck] = []
    for kind in ("contains", "regex", "not_contains"):
        if kind not in value:
            continue
        listed = isinstance(value[kind], list)
        for index, item in enumerate(value[kind] if listed else [value[kind]]):
            if kind == "regex":
                problem = pattern_problem(item, ignore_case)
                if problem:
                    where = (*key, kind, index) if listed else (*key, kind)
                    fail(where, problem)
            checks.append(FinalCheck(kind, item, ignore_case))
    return tuple(checks)


def parse_expectation(
    value: dict[str, Any],
    key: KeyPath,
    fail: Fail,
    tools: Sequence[Mapping[str, Any]],
    warn: Warn | None = None,
) -> Expectation:
    """A case's ``expect:``, validated by the suite schema, as an :class:`Expectation`;
    ``warn`` hears the doubts that do not stop the run."""
    known = _Tools(tools, fail, warn)
    final = parse_final(value["final"], (*key, "final"), fail) if "final" in value else ()
    if "call" in value:
        name = known.name(value["call"], (*key, "call"))
        args = known.args(name, value["args"], (*key, "args")) if "args" in value else ()
        return Expectation("call", (CallSpec(name, args),))
    if "no_call" in value:
        return Expectation("no_call", (), final=final)
    kind = "calls" if "calls" in value else "sequence"
    specs = tuple(known.spec(item, (*key, kind, i)) for i, item in enumerate(value[kind]))
    if kind == "calls":
        return Expectation("calls", specs, ordered=bool(value.get("ordered", False)))
    return Expectation("sequence", specs, ordered=True, final=final)


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def parse_results(
    value: dict[str, Any] | list[Any],
    key: KeyPath,
    fail: Fail,
    tools: Sequence[Mapping[str, Any]],
) -> tuple[ScriptedResult, ...]:
    """``results:``: ``{tool: returns}`` or a list of ``{call, args?, returns}``.

    The first entry whose tool and argument matchers fit a call answers it.
    """
    known = _Tools(tools, fail)
    if isinstance(value, dict):
        return tuple(
            ScriptedResult(known.name(name, (*key, name)), (), _result_text(returns))
            for name, returns in value.items()
        )
    out: list[ScriptedResult] = []
    for index, item in enumerate(value):
        where = (*key, index)
        tool = known.name(item["call"], (*where, "call"))
        args = (
            known.args(tool, item["args"], (*where, "args"), expected=False)
            if "args" in item
            else ()
        )
        out.append(ScriptedResult(tool, args, _result_text(item["returns"])))
    return tuple(out)
