"""Suite stage: a call suite's (``judge: call``) schema-valid document as a :class:`Suite`.

Checked here, beyond the schema: the tools (through :mod:`suite.toolsfile`), each case's
expectation and scripted results against those tools (:mod:`suite.expectations`), and the
turn limit of a tool loop, which must leave room for every expected call and the answer when
the calls come one per turn (a model may make several in one turn, but a limit that only such a
model can meet is a mistake).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_cardprobe.suite.calls import DEFAULT_MAX_TURNS, ScriptedResult
from pytest_cardprobe.suite.context import Reader, at_least_of
from pytest_cardprobe.suite.errors import Fail, KeyPath, SuiteWarning, Warn
from pytest_cardprobe.suite.expectations import parse_expectation, parse_results
from pytest_cardprobe.suite.records import (
    CALL_CHANNEL,
    DEFAULT_CONDITIONS,
    Case,
    PriorCall,
    PriorMessage,
    Suite,
)
from pytest_cardprobe.suite.sources import ToolSource, tool_source
from pytest_cardprobe.suite.toolsfile import check_tools, read_tools_file

__all__ = ["call_suite"]

CaseId = Callable[[KeyPath, str], str]


def call_suite(
    reader: Reader, data: dict[str, Any], common: dict[str, Any], case_id: CaseId
) -> Suite:
    """The call suite ``data`` describes (see :func:`suite.cardsuite.card_suite`)."""
    prompts: dict[str, str] = {}
    prompt_files: dict[str, Path] = {}
    if CALL_CHANNEL in data.get("prompts", {}):
        key: KeyPath = ("prompts", CALL_CHANNEL)
        text, resolved = reader.read_prompt(key, data["prompts"][CALL_CHANNEL])
        prompts[CALL_CHANNEL] = text
        if resolved is not None:
            prompt_files[CALL_CHANNEL] = resolved
    tools_file: Path | None = None
    tools_source: ToolSource | None = None
    if isinstance(data["tools"], str):
        tools, tools_file, tool_lines = read_tools_file(reader, ("tools",), data["tools"])
    elif isinstance(data["tools"], dict):
        # Read from the application (its code, an MCP server) by the run's sources, which
        # check the declarations they hand back; the line of every tool is `tools:`'s own.
        tools_source = tool_source(data["tools"])
        tools = reader.from_source(
            ("tools",),
            lambda sources: sources.tools(reader.suite_name, reader.path, "tools", tools_source),
        )
        tools = check_tools(tools, lambda k, problem: reader.fail(("tools",), problem))
        tool_lines = {(): reader.lines.get(("tools",), 1)}
    else:
        tools = check_tools(data["tools"], lambda k, problem: reader.fail(("tools", *k), problem))
        tool_lines = {k[1:]: line for k, line in reader.lines.items() if k[:1] == ("tools",)}
    max_turns = int(data.get("max_turns", DEFAULT_MAX_TURNS))
    _check_turn_limit(reader, ("max_turns",), max_turns)
    doubts: list[SuiteWarning] = []

    def warn(key: KeyPath, problem: str) -> None:
        line = reader.line_of(key)
        doubts.append(
            SuiteWarning(reader.path, reader.wording(key, problem), reader.key_text(key), line)
        )

    cases = tuple(
        _case(reader, ("cases", i), item, tools, (max_turns, common["samples"]), case_id, warn)
        for i, item in enumerate(data["cases"])
    )
    return Suite(
        **common,
        channels=(CALL_CHANNEL,),
        conditions=tuple(data.get("conditions", DEFAULT_CONDITIONS)),
        prompts=prompts,
        prompt_files=prompt_files,
        tool={},
        vocabulary=(),
        cases=cases,
        tools=tuple(tools),
        tools_file=tools_file,
        tool_lines=tool_lines,
        warnings=tuple(doubts),
        tools_source=tools_source,
    )


def _case(
    reader: Reader,
    entry: KeyPath,
    item: dict[str, Any],
    tools: list[dict[str, Any]],
    suite_limits: tuple[int, int],
    case_id: CaseId,
    warn: Warn,
) -> Case:
    suite_turns, samples = suite_limits  # the suite's max_turns and samples
    ident = case_id(entry, item["id"])
    fail = reader.fail
    expect = None
    if "expect" in item:  # the schema lets only an unreviewed draft leave it out
        expect = parse_expectation(item["expect"], (*entry, "expect"), fail, tools, warn)
    results: tuple[ScriptedResult, ...] = ()
    if "results" in item:
        results = parse_results(item["results"], (*entry, "results"), fail, tools)
    turns = int(item.get("max_turns", suite_turns))
    _check_turn_limit(reader, (*entry, "max_turns"), turns)
    calls = len(expect.calls) if expect else 0
    if expect is not None and expect.multi_turn and turns <= calls:
        if "max_turns" in item:
            key: KeyPath = (*entry, "max_turns")
            given = f"max_turns: {turns}"
        else:
            key = (*entry, "expect", "sequence")
            line = reader.lines.get(("max_turns",))
            given = (
                f"the suite's max_turns: {turns} (line {line})"
                if line
                else f"the default max_turns: {turns}"
            )
        plural = "s" if calls != 1 else ""
        fail(
            key,
            f"the sequence has {calls} call{plural}; made one per turn, they and the final "
            f"answer take {calls + 1} turns, but {given} stops the tool loop after {turns}, "
            f"which leaves no turn for the answer; give max_turns: {calls + 1} or more",
        )
    return Case(
        id=ident,
        prompt=item["prompt"],
        accept=(),
        requires_input=False,
        line=reader.lines.get(entry),
        expect=expect,
        results=results,
        max_turns=turns,
        canary=item.get("canary"),
        at_least=at_least_of(reader, (*entry, "at_least"), item.get("at_least"), samples),
        conversation=_conversation(fail, (*entry, "conversation"), item.get("conversation", [])),
        reviewed=item.get("reviewed", True),
    )


def _check_turn_limit(reader: Reader, key: KeyPath, turns: int) -> None:
    """A loop of ``turns`` turns is within the run's bound (ini ``cardprobe_max_turns``)."""
    most = reader.limits.max_turns
    if turns > most:
        reader.fail(
            key,
            f"{turns} turns is more than the limit of {most} for a tool loop (each turn is one "
            "request to the model; raise ini cardprobe_max_turns to allow more)",
        )


def _conversation(
    fail: Fail, key: KeyPath, items: list[dict[str, Any]]
) -> tuple[PriorMessage, ...]:
    """A case's ``conversation`` (shape checked by the schema) as records.

    A tool message without an ``id`` answers the calls of the assistant message before it in
    order (the OpenAI wire needs to say which call each answers), so it needs one there.
    """
    out: list[PriorMessage] = []
    open_calls: list[PriorCall] = []  # calls of the last assistant message, not yet answered
    for index, item in enumerate(items):
        calls = tuple(
            PriorCall(c["name"], c.get("arguments", {}), c.get("id"))
            for c in item.get("tool_calls", [])
        )
        role = item["role"]
        if role == "assistant":
            open_calls = list(calls)
        elif role == "tool" and "id" in item:
            open_calls = [c for c in open_calls if c.id != item["id"]]
        elif role == "tool":
            if not open_calls:
                fail(
                    (*key, index),
                    "a tool message answers a call: it follows an assistant message with "
                    "tool_calls that has a call left to answer, or names the call's `id`",
                )
            open_calls.pop(0)
        else:
            open_calls = []
        out.append(
            PriorMessage(
                role=role,
                content=item.get("content", ""),
                calls=calls,
                name=item.get("name"),
                id=item.get("id"),
            )
        )
    return tuple(out)


def case_prefix(data: Any, key: KeyPath) -> str:
    """``case 'read': `` for a problem inside a call suite's case: "cases[7]" alone sends
    people counting."""
    cases = data.get("cases") if isinstance(data, Mapping) else None
    index = key[1] if len(key) >= 2 and key[0] == "cases" else None
    if isinstance(index, int) and isinstance(cases, list) and index < len(cases):
        case = cases[index]
        if isinstance(case, Mapping) and isinstance(case.get("id"), str):
            return f"case {case['id']!r}: "
    return ""
