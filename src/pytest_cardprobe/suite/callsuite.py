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
from pytest_cardprobe.suite.errors import KeyPath
from pytest_cardprobe.suite.expectations import parse_expectation, parse_results
from pytest_cardprobe.suite.records import (
    CALL_CHANNEL,
    DEFAULT_CONDITIONS,
    Case,
    Suite,
)
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
        prompts[CALL_CHANNEL], prompt_files[CALL_CHANNEL] = reader.read_file(
            key, data["prompts"][CALL_CHANNEL], "prompt"
        )
    tools_file: Path | None = None
    if isinstance(data["tools"], str):
        tools, tools_file, tool_lines = read_tools_file(reader, ("tools",), data["tools"])
    else:
        tools = check_tools(data["tools"], lambda k, problem: reader.fail(("tools", *k), problem))
        tool_lines = {k[1:]: line for k, line in reader.lines.items() if k[:1] == ("tools",)}
    max_turns = int(data.get("max_turns", DEFAULT_MAX_TURNS))
    cases = tuple(
        _case(reader, ("cases", i), item, tools, (max_turns, common["samples"]), case_id)
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
    )


def _case(
    reader: Reader,
    entry: KeyPath,
    item: dict[str, Any],
    tools: list[dict[str, Any]],
    suite_limits: tuple[int, int],
    case_id: CaseId,
) -> Case:
    suite_turns, samples = suite_limits  # the suite's max_turns and samples
    ident = case_id(entry, item["id"])
    fail = reader.fail
    expect = parse_expectation(item["expect"], (*entry, "expect"), fail, tools)
    results: tuple[ScriptedResult, ...] = ()
    if "results" in item:
        results = parse_results(item["results"], (*entry, "results"), fail, tools)
    turns = int(item.get("max_turns", suite_turns))
    calls = len(expect.calls)
    if expect.multi_turn and turns <= calls:
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
    )


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
