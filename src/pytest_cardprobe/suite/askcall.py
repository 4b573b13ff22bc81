"""Suite stage: a call probe asked from a Python test, read by the loader's own rules.

``cardprobe.ask(..., tools=..., expect=...)`` names what a call suite's case names: the
question (and the messages before it), the tools (a list, or a tools file relative to the
file that asks, as a suite's is relative to the suite), the expectation with its matchers,
scripted ``results`` and ``max_turns`` for a tool loop, extra request ``options``, the
condition. They become a one-case call-suite document that the loader reads as it reads a
suite file (:func:`suite.loader.read_document`: the schema, the tools, the expectation
against them, the limits), so a Python probe means exactly what the same case in a suite
means, and a mistake gets the loader's message. The message names the calling file, the line
of the ``ask`` call and the keyword argument: ``test_x.py:12: expect.args.pth: tool
'read_file' has no argument 'pth'; did you mean 'path'? ...``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_cardprobe.suite.errors import KeyPath, describe, format_key, one_of
from pytest_cardprobe.suite.loader import (
    CALL_CHANNEL,
    CALL_JUDGE,
    REQUIRED,
    SUITE_VERSION,
    Suite,
    SuiteLimits,
    SuiteReader,
    read_document,
)

__all__ = ["ASK_CONDITIONS", "CallAsk", "call_probe_suite"]

#: The conditions a Python call probe may ask under: the suite's ``history`` turns are the
#: test's own earlier ``messages`` here.
ASK_CONDITIONS: tuple[str, ...] = ("cold", REQUIRED)
#: The one-case suite's name and its case's id (what the request hook sees as the probe).
SUITE_NAME = "python"
CASE_ID = "ask"


@dataclass(frozen=True)
class CallAsk:
    """The arguments of one ``cardprobe.ask`` that expects calls, as the test gave them."""

    messages: Any  # the question as text, or messages ending with the user's question
    tools: Any  # declarations, or the path of a tools file
    expect: Any
    system: Any = None
    results: Any = None
    max_turns: Any = None
    condition: Any = "cold"
    options: Any = None


class _AskReader(SuiteReader):
    """The document of one ask: its problems are named by the ask's keyword arguments."""

    def __init__(self, path: Path, line: int | None, limits: SuiteLimits) -> None:
        super().__init__(path, {(): line} if line else {}, limits, None, None)
        self.first = 0  # the index in ``messages`` of the case's first conversation message
        self.question: int | None = None  # the index of the question in ``messages``

    def wording(self, key: KeyPath, problem: str) -> str:
        return problem  # one case: no "case 'ask': " in front

    def key_text(self, key: KeyPath) -> str | None:
        if key[:2] != ("cases", 0):
            return format_key(key)
        rest = key[2:]
        if rest[:1] == ("conversation",) and len(rest) > 1 and isinstance(rest[1], int):
            return format_key(("messages", rest[1] + self.first, *rest[2:]))
        if rest[:1] == ("prompt",):
            return format_key(("messages",) if self.question is None else ("messages", -1))
        return format_key(rest)


#: How deep a keyword argument's data may nest (a tool schema is a few levels deep).
MAX_DEPTH = 100


def plain(
    value: Any, key: KeyPath, reader: SuiteReader, above: tuple[tuple[int, KeyPath], ...] = ()
) -> Any:
    """``value`` as the plain data a YAML document holds: mappings as dicts with text keys,
    tuples as lists (the schema, like JSON, knows arrays only), text, numbers, booleans and
    None; anything else (a compiled pattern, an object, a structure that holds itself) is
    refused at ``key``; a set is left for the schema to name. ``above`` holds the containers
    on the way to ``value``, with their keys."""
    if isinstance(value, Mapping | list | tuple):
        for ident, where in above:
            if ident == id(value):
                back = format_key(where) or "the argument itself"
                reader.fail(key, f"holds {back} again: a structure that holds itself")
        if len(above) >= MAX_DEPTH:
            reader.fail(key, f"nested more than {MAX_DEPTH} levels deep")
        above = (*above, (id(value), key))
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                reader.fail(key, f"keys are text, got the key {describe(k)}")
            out[k] = plain(v, (*key, k), reader, above)
        return out
    if isinstance(value, list | tuple):
        return [plain(v, (*key, i), reader, above) for i, v in enumerate(value)]
    if value is None or isinstance(value, str | bool | int | float | set | frozenset):
        return value  # a set is named by the schema ("expected a list, got a set")
    reader.fail(
        key,
        f"expected plain data (text, numbers, booleans, None, lists and mappings), got a "
        f"{type(value).__module__}.{type(value).__qualname__}",
    )


def _message_shown(message: Any) -> str:
    """A message that is not the question, as the error names it: its role if it has one."""
    if isinstance(message, dict) and "role" in message:
        return f"a message with role {describe(message['role'])}"
    return describe(message)


def call_probe_suite(
    ask: CallAsk,
    where: Path,
    line: int | None,
    limits: SuiteLimits,
) -> Suite:
    """The one-case call suite ``ask`` describes; :class:`SuiteError` on a bad argument.

    ``where`` is the file that asks (a tools file is named relative to it) and ``line`` the
    line of the call, both for the messages.
    """
    reader = _AskReader(where, line, limits)
    if ask.condition not in ASK_CONDITIONS:
        reader.fail(
            ("condition",),
            f"unknown condition {describe(ask.condition)}; use {one_of(ASK_CONDITIONS)} (the "
            "turns before the question go in messages)",
        )
    case: dict[str, Any] = {"id": CASE_ID, "expect": plain(ask.expect, ("expect",), reader)}
    system = ask.system
    messages = ask.messages
    if isinstance(messages, str):
        case["prompt"] = messages
    elif isinstance(messages, Sequence) and messages:
        said = plain(list(messages), ("messages",), reader)
        if isinstance(said[0], dict) and said[0].get("role") == "system" and system is None:
            system, reader.first = said[0].get("content"), 1
        last = said[-1]
        if not (isinstance(last, dict) and last.get("role") == "user"):
            reader.fail(
                ("messages", -1),
                "the last message is the question: a mapping with role 'user' and its "
                f"content, got {_message_shown(last)}",
            )
        reader.question = len(said) - 1
        case["prompt"] = last.get("content")
        if said[reader.first : -1]:
            case["conversation"] = said[reader.first : -1]
    else:
        reader.fail(
            ("messages",),
            f"expected the question as text or a non-empty list of messages, got "
            f"{describe(messages)}",
        )
    if system is not None and not (isinstance(system, str) and system.strip()):
        reader.fail(("system",), f"expected the system prompt as text, got {describe(system)}")
    tools = ask.tools
    if isinstance(tools, Path):
        tools = str(tools)
    if tools is None:
        reader.fail(
            ("tools",),
            "a call probe needs tools=: the declarations as a list, or the path of a tools "
            "file relative to the test",
        )
    if isinstance(tools, Mapping):
        reader.fail(
            ("tools",),
            "a tool source (python:, mcp:) is for suite files; a Python test imports the "
            "declarations and passes the list, or names a tools file",
        )
    if ask.results is not None:
        case["results"] = plain(ask.results, ("results",), reader)
    if ask.max_turns is not None:
        case["max_turns"] = ask.max_turns
    document: dict[str, Any] = {
        "cardprobe": SUITE_VERSION,
        "name": SUITE_NAME,
        "judge": CALL_JUDGE,
        "samples": 1,
        "conditions": [ask.condition],
        "tools": plain(tools, ("tools",), reader),
        "cases": [case],
    }
    if ask.options is not None:
        document["options"] = plain(ask.options, ("options",), reader)
    suite = read_document(reader, document)
    if system is not None:
        suite = replace(suite, prompts={CALL_CHANNEL: system})
    return suite
