"""The call judge: score the tool calls a model made against a case's ``expect:``.

Pure: it reads the model's turns (calls already decoded by the wire, or recovered from text
by :mod:`judge.routing`), the suite's declared tools and the case's expectation, and returns
a :class:`Verdict`. Nothing here talks to a server or knows about pytest. Matching one value
is :mod:`judge.matchers`, the schema check :mod:`judge.argschema`, pairing unordered calls
:mod:`judge.pairing`.

The checks run in a fixed order and the first failure decides the class, so one reply
always gets one label (the guide, docs/guide/own-tools.md). Every label starts with its class:

1. ``malformed``: a text-written call that recovery refused, or arguments that do not decode;
   a swallowed turn (tokens generated, no call, no answer) is malformed too, labelled
   ``swallowed: N tokens generated, …``.
2. ``no_call`` cases: any call is an ``over_call``; else the final text is checked.
3. ``unforced``: a turn that had to call (the ``required`` condition) holds no call: the
   server did not enforce the forcing, and the label says how it was sent.
   ``declined``: no call where one was expected.
4. ``unknown_tool``: a call to a name nobody declared.
5. The names called against the names expected: a name in place of another is
   ``wrong_tool``; fewer calls of a name than expected ``missing_call``; more ``extra_call``;
   a loop still calling when it hit ``max_turns`` is ``loop_limit``.
6. ``bad_arguments``: an argument the tool does not declare, or arguments that break the
   tool's JSON Schema (strict types); the label names the JSON path and rule.
7. ``wrong_arguments``: schema-valid, but an ``args:`` matcher does not match (or an
   argument that must be absent was given: ``unexpected_argument NAME``).
8. ``wrong_final``: a loop's final text misses a ``final:`` check.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.judge.argschema import schema_problem
from pytest_cardprobe.judge.matchers import argument_problem, fold, json_equal, match
from pytest_cardprobe.judge.pairing import leftover, maximum_matching
from pytest_cardprobe.suite.calls import (
    CallSpec,
    Expectation,
    FinalCheck,
    ScriptedResult,
    declared_names,
    parameters_of,
)
from pytest_cardprobe.suite.patterns import search
from pytest_cardprobe.types import FailureClass, ToolCall, Verdict

__all__ = [
    "ModelTurn",
    "argument_problem",
    "json_equal",
    "judge_calls",
    "match",
    "not_expected",
    "pair_problem",
    "schema_problem",
    "scripted_result",
]

LABEL_LIMIT = 160


@dataclass(frozen=True)
class ModelTurn:
    """One assistant turn as the call judge sees it.

    ``route`` says how its calls travelled (``tool_calls``, ``recovered`` or ``content`` when
    there were none, ``swallowed`` when the server generated tokens and delivered neither);
    ``refused`` is set when text looked like a call to a declared tool but could not be read
    (recovery refuses instead of repairing).
    """

    route: str
    calls: tuple[ToolCall, ...]
    content: str  # the answer, without a leading <think> block
    refused: str | None = None
    thinking: str = ""  # that block's text: reported, never judged
    # Route ``swallowed``: tokens generated, no call and no answer delivered; its label.
    swallowed: str | None = None
    # How the request forced this turn to call, when it did: ``tool_choice`` (OpenAI's
    # ``"required"``) or ``format`` (Ollama's schema of the calls); None for a free turn.
    forced: str | None = None


#: What a forced turn without a call says, per way of forcing (docs/design.md §7):
#: ``format`` (Ollama's own API), ``tool_choice`` (an OpenAI-compatible server) and
#: ``tool_choice/ollama`` (Ollama's ``/v1``, known by its ``system_fingerprint``, which takes
#: ``tool_choice`` and drops it).
UNFORCED_LABELS: dict[str, str] = {
    "tool_choice": (
        'unforced tool_choice "required" was sent and the reply holds no call: the server '
        "did not enforce it"
    ),
    "tool_choice/ollama": (
        'unforced tool_choice "required" was sent to Ollama\'s /v1, which drops it: the '
        "reply holds no call"
    ),
    "format": (
        "unforced format of the calls was sent and the reply holds no call: the server did "
        "not apply it"
    ),
}


def unforced_label(forced: str) -> str:
    """The label of a turn forced by ``forced`` that came back without a call."""
    return UNFORCED_LABELS.get(forced, f"unforced {forced} was sent and the reply holds no call")


def _label(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_LIMIT else text[: LABEL_LIMIT - 1] + "…"


def _fail(label: str, failure: FailureClass) -> Verdict:
    return Verdict(passed=False, label=_label(label), failure=failure)


def _names(calls: Sequence[ToolCall]) -> str:
    return ", ".join(c.name for c in calls) or "nothing"


def not_expected(turn: ModelTurn) -> Verdict:
    """The verdict of a drafted case with no expectation yet: it passes, and its label says
    what the model did (``no expectation yet: called read_file``), for a person to review."""
    if turn.calls:
        did = f"called {_names(turn.calls)}"
    elif turn.refused:
        did = f"wrote a call that could not be read ({turn.refused})"
    else:
        did = "answered without a call"
    return Verdict(passed=True, label=_label(f"no expectation yet: {did}"), failure=None)


def pair_problem(calls: Sequence[ToolCall], specs: Sequence[CallSpec], ordered: bool) -> str | None:
    """``NAME: why`` when the calls cannot be paired with the specs, else None.

    ``ordered``: the i-th call answers the i-th spec. Otherwise any pairing of same-name calls
    will do, found as a maximum matching over the table of which call fits which spec; the
    reason given is that of a spec and a call of its name that the largest pairing leaves
    over (:mod:`judge.pairing`). The name counts must already agree.
    """
    if ordered:
        for spec, call in zip(specs, calls, strict=True):
            problem = argument_problem(call, spec)
            if problem:
                return f"{call.name}: {problem}"
        return None
    # The table, built once: spec i fits call j when the names agree and the arguments match.
    fits = [
        [
            j
            for j, call in enumerate(calls)
            if call.name == spec.name and not argument_problem(call, spec)
        ]
        for spec in specs
    ]
    pairs = maximum_matching(fits, len(calls))
    rest = leftover(pairs, len(calls), lambda i, j: specs[i].name == calls[j].name)
    if rest is None:
        return None
    spec_index, call_index = rest
    spec = specs[spec_index]
    problem = argument_problem(calls[call_index], spec) if call_index >= 0 else None
    return f"{spec.name}: {problem or 'no call left to pair with'}"


def _check_final(text: str, checks: Sequence[FinalCheck]) -> str | None:
    for check in checks:
        folded, wanted = fold(text, check.ignore_case), fold(check.value, check.ignore_case)
        if check.kind == "contains" and wanted not in folded:
            return f"text lacks {check.value!r}"
        if check.kind == "not_contains" and wanted in folded:
            return f"text contains {check.value!r}"
        if check.kind == "regex" and not search(check.value, text, check.ignore_case):
            return f"text does not match regex {check.value!r}"
    return None


def _count_problem(
    got: Sequence[str], wanted: Sequence[str], ordered: bool
) -> tuple[str, FailureClass] | None:
    """The names of one turn's calls against the names expected, in any order."""
    have, need = Counter(got), Counter(wanted)
    missing, extra = need - have, have - need
    if missing and extra:
        return f"wrong_tool got {', '.join(got)} want {', '.join(wanted)}", FailureClass.WRONG_TOOL
    # Per name, in the order first seen: ``NAME: got 1 of 2 calls`` (missing),
    # ``NAME: got 3 calls, want 2`` (too many), or a bare NAME that was not expected at all.
    order = dict.fromkeys([*wanted, *got])
    if missing:
        parts = [f"{n}: got {have[n]} of {need[n]} calls" for n in order if n in missing]
        return f"missing_call {'; '.join(parts)}", FailureClass.MISSING_CALL
    if extra:
        parts = [
            f"{n}: got {have[n]} calls, want {need[n]}" if need[n] else n
            for n in order
            if n in extra
        ]
        return f"extra_call {'; '.join(parts)}", FailureClass.EXTRA_CALL
    if ordered and list(got) != list(wanted):
        label = f"wrong_tool got {', '.join(got)} want {', '.join(wanted)} in order"
        return label, FailureClass.WRONG_TOOL
    return None


def _sequence_problem(
    got: Sequence[str], wanted: Sequence[str], turns: Sequence[ModelTurn], max_turns: int | None
) -> tuple[str, FailureClass] | None:
    """The calls of a tool loop, in order, against the sequence expected."""
    shown = " > ".join(got)
    for step, (name, want) in enumerate(zip(got, wanted, strict=False), 1):
        if name != want:
            label = f"wrong_tool got {name} want {want} at call {step} ({shown})"
            return label, FailureClass.WRONG_TOOL
    if max_turns is not None and len(turns) >= max_turns and turns[-1].calls:
        label = f"loop_limit still calling after {len(turns)} turns ({shown})"
        return label, FailureClass.LOOP_LIMIT
    if len(got) < len(wanted):
        label = f"missing_call {wanted[len(got)]}: got {len(got)} of {len(wanted)} calls ({shown})"
        return label, FailureClass.MISSING_CALL
    if len(got) > len(wanted):
        label = f"extra_call {', '.join(got[len(wanted) :])} (got {shown})"
        return label, FailureClass.EXTRA_CALL
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
        if turn.swallowed:
            return _fail(turn.swallowed, FailureClass.MALFORMED)
        if turn.refused:
            return _fail(f"malformed {turn.refused}", FailureClass.MALFORMED)
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
            return _fail(f"wrong_final {problem}", FailureClass.WRONG_FINAL)
        return Verdict(True, "ok no_call", None)

    want = list(expect.calls)
    ignored = next((t.forced for t in turns if t.forced and not t.calls), None)
    if ignored:
        return _fail(unforced_label(ignored), FailureClass.UNFORCED)
    if not calls:
        return _fail(f"declined want {', '.join(s.name for s in want)}", FailureClass.DECLINED)
    unknown = [c.name for c in calls if c.name not in declared]
    if unknown:
        return _fail(f"unknown_tool got {', '.join(unknown)}", FailureClass.UNKNOWN_TOOL)

    got_names = [c.name for c in calls]
    names_wanted = [s.name for s in want]
    if expect.multi_turn:
        count = _sequence_problem(got_names, names_wanted, turns, max_turns)
    else:
        count = _count_problem(got_names, names_wanted, expect.ordered)
    if count is not None:
        return _fail(*count)

    for call in calls:
        parameters = parameters_of(tools, call.name) or {}
        problem = schema_problem(call.arguments, parameters)
        if problem:
            return _fail(f"bad_arguments {call.name}: {problem}", FailureClass.BAD_ARGUMENTS)

    problem = pair_problem(calls, want, ordered=expect.ordered or expect.multi_turn)
    if problem:
        return _fail(f"wrong_arguments {problem}", FailureClass.WRONG_ARGUMENTS)

    problem = _check_final(final_text, expect.final)
    if problem:
        return _fail(f"wrong_final {problem}", FailureClass.WRONG_FINAL)
    joiner = " > " if expect.multi_turn else ", "
    return Verdict(True, f"ok {joiner.join(got_names)}", None)


def scripted_result(call: ToolCall, results: Sequence[ScriptedResult]) -> str:
    """What the scripted "tool" returns to ``call``: the first result whose tool and argument
    matchers fit; a JSON error text when none does (the model sees it as the tool's answer).
    """
    for result in results:
        if result.name != call.name:
            continue
        if argument_problem(call, CallSpec(result.name, result.args)) is None:
            return result.content
    return json.dumps({"error": f"no result scripted for this call to {call.name}"})
