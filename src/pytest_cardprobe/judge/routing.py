"""Decide how a reply travelled (its route) and which text the judge scores.

This is the one place where text-written tool calls are recovered (docs/design.md §6).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_cardprobe.types import ChatReply, ToolCall

if TYPE_CHECKING:
    from pytest_cardprobe.judge.call import ModelTurn


@dataclass(frozen=True)
class Answer:
    """The reply equivalent of one sample: what the judge reads, and how it got here."""

    route: str
    text: str
    # A call to the declared tool that could not be used as-is (malformed arguments, or a
    # text-written call that recovery refused): the sample is malformed whatever the text says.
    refused: str | None = None
    # Reasoning found in the content (a leading <think> block): reported, never judged.
    thinking: str = ""
    # Route ``swallowed``: the label saying what the server dropped (see :func:`swallowed`).
    swallowed: str | None = None


_THINK_OPEN = "<think>"
_THINK_BLOCK = re.compile(r"\A\s*<think>(.*?)</think>\s*", re.S)


def split_reasoning(content: str) -> tuple[str, str]:
    """``(answer, reasoning)``: a leading ``<think>…</think>`` block is not part of the answer.

    Only a block at the very start counts; a ``<think>`` later in the text is the model's
    answer. An opening tag that is never closed means the reply ended while still reasoning
    (typically cut by the token limit), so there is no answer at all.
    """
    found = _THINK_BLOCK.match(content)
    if found:
        return content[found.end() :], found.group(1).strip()
    stripped = content.lstrip()
    if stripped.startswith(_THINK_OPEN):
        return "", stripped[len(_THINK_OPEN) :].strip()
    return content, ""


def _body_text(arguments: dict[str, object]) -> str:
    # The card is the ``body`` argument; a call without one carries nothing to judge.
    if "body" not in arguments:
        return ""
    return json.dumps(arguments["body"], ensure_ascii=False)


# What a server's tool-call parser holds back, spaces left out: a reply whose content is
# nothing but one of these, or a beginning of one, carried neither an answer nor its call.
_WRAPPERS: tuple[str, ...] = (
    '{"tag":"<tool_call>"',
    '{"name":"',
    "<tool_call></tool_call>",
    "[TOOL_CALLS]",
    "<|python_tag|>",
)


def wrapper_fragment(content: str) -> bool:
    """True when ``content`` is only a bare fragment of a tool-call wrapper: ``{"tag": "``
    (Ollama 0.33.0 under the tag recipe), a lone ``<tool_call>``, a lone ``{``."""
    squeezed = "".join(content.split())
    return bool(squeezed) and any(w.startswith(squeezed) for w in _WRAPPERS)


def swallowed(reply: ChatReply, generated: float | None, tools: bool) -> str | None:
    """The label of a reply whose call the server dropped, else None.

    A server that said it could not parse the call (``reply.unparsed``, its parser's
    message) dropped it too, and said why: ``unparsed: the server could not parse the tool
    call: <message>``, whatever else the turn carried (calls streamed before the failure).
    The server says it generated tokens (``generated``: Ollama's ``eval_count``, the
    OpenAI-compatible ``completion_tokens``), yet the reply carries no tool call and no
    content, or (when the request declared ``tools``) content that is only a fragment of a
    call wrapper. More than one token: a reply that ends at once still counts its
    end-of-turn token. Not a reply the token limit cut (that is ``truncated``), nor one whose
    tokens went into its reasoning.
    """
    if reply.unparsed is not None:
        shown = " ".join(reply.unparsed.split())
        return f"unparsed: the server could not parse the tool call: {shown}"[:120]
    if reply.tool_calls or reply.finish_reason == "length" or not generated or generated <= 1:
        return None
    content, thinking = split_reasoning(reply.content)
    if reply.thinking.strip() or thinking:
        return None
    tokens = f"swallowed: {generated:.0f} tokens generated"
    if not content.strip():
        return f"{tokens}, no content and no tool call"
    if tools and wrapper_fragment(content):
        shown = " ".join(content.split())
        return f"{tokens}, content only a tool-call fragment '{shown}', no tool call"[:120]
    return None


def answer_of(
    reply: ChatReply, channel: str, tool_name: str | None, generated: float | None = None
) -> Answer:
    """The route and judged text of ``reply`` on ``channel``.

    ``generated`` is the server's count of tokens generated for it, when it gave one: a
    reply that spent them and delivered nothing is route ``swallowed`` (:func:`swallowed`).
    """
    content, thinking = split_reasoning(reply.content)
    tools = channel == "tool" and bool(tool_name)
    dropped = swallowed(reply, generated, tools)
    if dropped:
        return Answer("swallowed", "", thinking=thinking, swallowed=dropped)
    if not tools or not tool_name:
        return Answer("content", content, thinking=thinking)
    for call in reply.tool_calls:
        if call.name == tool_name:
            if call.arguments_error:
                refused = f"{tool_name}: {call.arguments_error}"
                return Answer("tool_calls", "", refused=refused, thinking=thinking)
            return Answer("tool_calls", _body_text(call.arguments), thinking=thinking)
    from pytest_cardprobe.judge.recovery import recover_tool_calls

    recovery = recover_tool_calls(content, [tool_name])
    if recovery.error:
        return Answer("content", content, refused=recovery.error, thinking=thinking)
    for recovered in recovery.calls:
        if recovered.name == tool_name:
            return Answer("recovered", _body_text(recovered.arguments), thinking=thinking)
    return Answer("content", content, thinking=thinking)


def turn_of(reply: ChatReply, declared: Sequence[str], generated: float | None = None) -> ModelTurn:
    """A call suite's view of one reply: its calls and the route they took.

    Structured ``tool_calls`` win; otherwise calls to *declared* tools written as text are
    recovered (docs/design.md §6); text that tried to call one and cannot be read is refused,
    never repaired. A reply that generated tokens (``generated``, the server's count) and
    delivered neither a call nor an answer is route ``swallowed`` (:func:`swallowed`).
    """
    from pytest_cardprobe.judge.call import ModelTurn
    from pytest_cardprobe.judge.recovery import recover_tool_calls

    # A leading <think> block is reasoning, not the answer: calls are looked for after it.
    content, thinking = split_reasoning(reply.content)
    dropped = swallowed(reply, generated, bool(declared))
    if reply.tool_calls and not reply.unparsed:
        return ModelTurn("tool_calls", reply.tool_calls, content, thinking=thinking)
    if dropped:
        return ModelTurn("swallowed", (), content, thinking=thinking, swallowed=dropped)
    recovery = recover_tool_calls(content, list(declared))
    if recovery.error:
        return ModelTurn("content", (), content, refused=recovery.error, thinking=thinking)
    if recovery.calls:
        calls = tuple(ToolCall(c.name, dict(c.arguments)) for c in recovery.calls)
        return ModelTurn("recovered", calls, content, thinking=thinking)
    return ModelTurn("content", (), content, thinking=thinking)
