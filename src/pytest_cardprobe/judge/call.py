"""The call judge: score the tool calls a model made against a case's ``expect:``.

Pure: it reads the model's turns (calls already decoded by the wire, or recovered from text
by :mod:`judge.routing`), the suite's declared tools and the case's expectation, and returns
a :class:`Verdict`. Nothing here talks to a server or knows about pytest.

The checks run in a fixed order and the first failure decides the class, so one reply
always gets one label (README, "Your own tools"):

1. ``malformed``: a text-written call that recovery refused, or arguments that do not decode.
2. ``no_call`` cases: any call is an ``over_call``; else the final text is checked.
3. ``declined``: no call where one was expected.
4. ``unknown_tool``: a call to a name nobody declared.
5. ``wrong_tool`` / ``over_call`` / ``loop_limit``: the names called are not the names
   expected (missing or different: ``wrong_tool``; extra: ``over_call``; a loop that was
   still calling when it hit ``max_turns``: ``loop_limit``).
6. ``bad_arguments``: an argument the tool does not declare, or arguments that break the
   tool's JSON Schema (checked with ``jsonschema``); the label names the JSON path and rule.
7. ``wrong_arguments``: schema-valid, but an ``args:`` matcher does not match.
8. ``wrong_final``: a loop's final text misses a ``final:`` check.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations
from typing import Any

from pytest_cardprobe.suite.calls import (
    CallSpec,
    Expectation,
    FinalCheck,
    Matcher,
    ScriptedResult,
    declared_names,
    parameters_of,
)
from pytest_cardprobe.types import FailureClass, ToolCall, Verdict

__all__ = [
    "ModelTurn",
    "argument_problem",
    "json_equal",
    "judge_calls",
    "match",
    "schema_problem",
    "scripted_result",
]

LABEL_LIMIT = 160
_SHOWN = 40  # characters of a model-written value shown in a label


@dataclass(frozen=True)
class ModelTurn:
    """One assistant turn as the call judge sees it.

    ``route`` says how its calls travelled (``tool_calls``, ``recovered`` or ``content`` when
    there were none); ``refused`` is set when text looked like a call to a declared tool
    but could not be read (recovery refuses instead of repairing).
    """

    route: str
    calls: tuple[ToolCall, ...]
    content: str  # the answer, without a leading <think> block
    refused: str | None = None
    thinking: str = ""  # that block's text: reported, never judged


# --------------------------------------------------------------------------- values


def _show(value: Any) -> str:
    """A model-written value for a label: JSON, one line, cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _label(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_LIMIT else text[: LABEL_LIMIT - 1] + "…"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``1 == 1.0``, but ``true != 1`` and ``"1" != 1``."""
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _has_type(value: Any, name: str) -> bool:
    actual = _json_type(value)
    if name == "number":
        return actual in ("integer", "number")
    if name == "integer":
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    return actual == name


def _fold(value: Any, ignore_case: bool) -> Any:
    return value.casefold() if ignore_case and isinstance(value, str) else value


def match(matcher: Matcher, value: Any) -> bool:
    """True when ``value`` (a decoded JSON value) satisfies ``matcher``."""
    kind, operand, ic = matcher.kind, matcher.value, matcher.ignore_case
    if kind == "any":
        return True
    if kind == "equals":
        return json_equal(_fold(value, ic), _fold(operand, ic))
    if kind == "one_of":
        return any(json_equal(_fold(value, ic), _fold(o, ic)) for o in operand)
    if kind == "regex":
        flags = re.IGNORECASE if ic else 0
        return isinstance(value, str) and re.fullmatch(operand, value, flags) is not None
    if kind == "contains":
        if isinstance(value, str) and isinstance(operand, str):
            return _fold(operand, ic) in _fold(value, ic)
        if isinstance(value, list):
            return any(json_equal(_fold(item, ic), _fold(operand, ic)) for item in value)
        return False
    if kind == "type":
        return _has_type(value, operand)
    if kind == "range":
        return _is_number(value) and operand[0] <= value <= operand[1]
    raise ValueError(f"unknown matcher {kind!r}")


def argument_problem(call: ToolCall, spec: CallSpec) -> str | None:
    """Why ``call``'s arguments miss ``spec``'s matchers, or None when they match."""
    for name, matcher in spec.args:
        if name not in call.arguments:
            return f"$.{name} missing, want {matcher.describe()}"
        value = call.arguments[name]
        if not match(matcher, value):
            return f"$.{name} got {_show(value)} want {matcher.describe()}"
    return None


# --------------------------------------------------------------------------- schema


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    # Imported here: only call suites pay for jsonschema's import.
    from jsonschema.validators import validator_for

    schema = json.loads(schema_text)
    return validator_for(schema)(schema)


def _path(parts: Sequence[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _rule(error: Any) -> str:
    """One schema violation as ``<path> <rule>``, in words a label can carry."""
    where = _path(list(error.absolute_path))
    rule, expected, instance = error.validator, error.validator_value, error.instance
    if rule == "type":
        names = expected if isinstance(expected, list) else [expected]
        return f"{where} is not of type {' or '.join(map(str, names))}"
    if rule == "required" and isinstance(instance, dict):
        missing = [n for n in expected if n not in instance]
        return f"{where}.{missing[0] if missing else '?'} is required"
    if rule == "enum":
        return f"{where} is not one of {_show(expected)}"
    if rule == "additionalProperties" and isinstance(instance, dict):
        props = (error.schema or {}).get("properties", {})
        extra = sorted(k for k in instance if k not in props)
        return f"{where}.{extra[0] if extra else '?'} is not allowed (additionalProperties)"
    if rule in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{where} fails {rule} {expected}"
    if rule in ("minLength", "maxLength", "minItems", "maxItems", "pattern", "const", "format"):
        return f"{where} fails {rule} {_show(expected)}"
    return f"{where} fails {rule}"


def schema_problem(arguments: Mapping[str, Any], parameters: Mapping[str, Any]) -> str | None:
    """The first way ``arguments`` break the declared tool's rules, or None.

    An argument the schema does not declare fails as ``unknown_argument`` (whatever
    ``additionalProperties`` says: a model that invents arguments is wrong even when the
    schema is lax); then the JSON Schema itself is checked.
    """
    properties = parameters.get("properties")
    if isinstance(properties, Mapping):
        for name in arguments:
            if name not in properties:
                return f"$.{name} is not a declared argument (unknown_argument)"
    from jsonschema.exceptions import best_match

    validator = _validator(json.dumps(parameters, sort_keys=True))
    error = best_match(validator.iter_errors(dict(arguments)))
    return None if error is None else _rule(error)


# --------------------------------------------------------------------------- judging


def _fail(label: str, failure: FailureClass) -> Verdict:
    return Verdict(passed=False, label=_label(label), failure=failure)


def _names(calls: Sequence[ToolCall]) -> str:
    return ", ".join(c.name for c in calls) or "nothing"


def _pairings(
    calls: Sequence[ToolCall], specs: Sequence[CallSpec], ordered: bool
) -> Iterator[list[tuple[CallSpec, ToolCall]]]:
    """Ways to pair each spec with a distinct call of the same name (the order kept first)."""
    if ordered:
        yield list(zip(specs, calls, strict=True))
        return
    seen: set[tuple[int, ...]] = set()
    # Cases hold a handful of calls; the permutations are few, and the identity comes first.
    for order in permutations(range(len(calls))):
        if order in seen:
            continue
        seen.add(order)
        pairs = [(spec, calls[i]) for spec, i in zip(specs, order, strict=True)]
        if all(spec.name == call.name for spec, call in pairs):
            yield pairs


def _check_final(text: str, checks: Sequence[FinalCheck]) -> str | None:
    for check in checks:
        flags = re.IGNORECASE if check.ignore_case else 0
        folded, wanted = _fold(text, check.ignore_case), _fold(check.value, check.ignore_case)
        if check.kind == "contains" and wanted not in folded:
            return f"final text lacks {check.value!r}"
        if check.kind == "not_contains" and wanted in folded:
            return f"final text contains {check.value!r}"
        if check.kind == "regex" and re.search(check.value, text, flags) is None:
            return f"final text does not match regex {check.value!r}"
    return None


def judge_calls(
    turns: Sequence[ModelTurn],
    expect: Expectation,
    tools: Sequence[Mapping[str, Any]],
    *,
    max_turns: int | None = None,
) -> Verdict:
    """Score a case's turns (one, or a tool loop's) against its expectation.

    ``max_turns`` is the loop's limit; a loop whose last turn still called a tool after that
    many turns hit it.
    """
    if not turns:
        raise ValueError("judge_calls needs at least one turn")
    for turn in turns:
        if turn.refused:
            return _fail(f"malformed: {turn.refused}", FailureClass.MALFORMED)
        for call in turn.calls:
            if call.arguments_error:
                return _fail(
                    f"malformed {call.name}: {call.arguments_error}", FailureClass.MALFORMED
                )
    declared = declared_names(tools)
    calls = list(turns[0].calls)
    if expect.multi_turn:
        calls = [c for t in turns for c in t.calls]
    final_text = turns[-1].content

    if expect.kind == "no_call":
        if calls:
            return _fail(f"over_call got {_names(calls)}", FailureClass.OVER_CALL)
        problem = _check_final(final_text, expect.final)
        if problem:
            return _fail(f"wrong_final: {problem}", FailureClass.WRONG_FINAL)
        return Verdict(True, "ok no_call", None)

    want = list(expect.calls)
    want_names = ", ".join(s.name for s in want)
    if not calls:
        return _fail(f"declined want {want_names}", FailureClass.DECLINED)
    unknown = [c.name for c in calls if c.name not in declared]
    if unknown:
        return _fail(f"unknown_tool got {', '.join(unknown)}", FailureClass.UNKNOWN_TOOL)

    got_names = [c.name for c in calls]
    names_wanted = [s.name for s in want]
    if expect.multi_turn:
        shown = " > ".join(got_names)
        for step, (got, wanted) in enumerate(zip(got_names, names_wanted, strict=False), 1):
            if got != wanted:
                return _fail(
                    f"wrong_tool got {got} want {wanted} at call {step} ({shown})",
                    FailureClass.WRONG_TOOL,
                )
        if max_turns is not None and len(turns) >= max_turns and turns[-1].calls:
            return _fail(
                f"loop_limit: still calling after {len(turns)} turns ({shown})",
                FailureClass.LOOP_LIMIT,
            )
        if len(got_names) < len(names_wanted):
            return _fail(
                f"declined after {len(got_names)} of {len(names_wanted)} calls ({shown})",
                FailureClass.DECLINED,
            )
        if len(got_names) > len(names_wanted):
            return _fail(
                f"over_call got {shown} want {' > '.join(names_wanted)}", FailureClass.OVER_CALL
            )
    else:
        missing = Counter(names_wanted) - Counter(got_names)
        extra = Counter(got_names) - Counter(names_wanted)
        if missing:
            return _fail(
                f"wrong_tool got {_names(calls)} want {want_names}", FailureClass.WRONG_TOOL
            )
        if extra:
            return _fail(f"over_call got {_names(calls)} want {want_names}", FailureClass.OVER_CALL)
        if expect.ordered and got_names != names_wanted:
            return _fail(
                f"wrong_tool got {_names(calls)} want {want_names} in order",
                FailureClass.WRONG_TOOL,
            )

    for call in calls:
        parameters = parameters_of(tools, call.name) or {}
        problem = schema_problem(call.arguments, parameters)
        if problem:
            return _fail(f"bad_arguments {call.name}: {problem}", FailureClass.BAD_ARGUMENTS)

    first_problem: str | None = None
    for pairs in _pairings(calls, want, ordered=expect.ordered or expect.multi_turn):
        problems = [(c.name, argument_problem(c, s)) for s, c in pairs]
        bad = next(((n, p) for n, p in problems if p), None)
        if bad is None:
            first_problem = None
            break
        if first_problem is None:
            first_problem = f"{bad[0]}: {bad[1]}"
    if first_problem:
        return _fail(f"wrong_arguments {first_problem}", FailureClass.WRONG_ARGUMENTS)

    problem = _check_final(final_text, expect.final)
    if problem:
        return _fail(f"wrong_final: {problem}", FailureClass.WRONG_FINAL)
    joiner = " > " if expect.multi_turn else ", "
    return Verdict(True, f"ok {joiner.join(got_names)}", None)


def scripted_result(call: ToolCall, results: Sequence[ScriptedResult]) -> str:
    """What the scripted "tool" returns to ``call``: the first result whose tool and argument
    matchers fit; a JSON error text when none does (the model sees it as the tool's answer).
    """
    for result in results:
        if result.name != call.name:
            continue
        if all(n in call.arguments and match(m, call.arguments[n]) for n, m in result.args):
            return result.content
    return json.dumps({"error": f"no result scripted for this call to {call.name}"})
