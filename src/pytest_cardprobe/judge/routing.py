"""Decide how a reply travelled (its route) and which text the judge scores.

This is the one place where text-written tool calls are recovered (docs/design.md §6).
"""

from __future__ import annotations

import json
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


def _body_text(arguments: dict[str, object]) -> str:
    # The card is the ``body`` argument; a call without one carries nothing to judge.
    if "body" not in arguments:
        return ""
    return json.dumps(arguments["body"], ensure_ascii=False)


def answer_of(reply: ChatReply, channel: str, tool_name: str | None) -> Answer:
    """The route and judged text of ``reply`` on ``channel``."""
    if channel != "tool" or not tool_name:
        return Answer("content", reply.content)
    for call in reply.tool_calls:
        if call.name == tool_name:
            if call.arguments_error:
                return Answer("tool_calls", "", refused=f"{tool_name}: {call.arguments_error}")
            return Answer("tool_calls", _body_text(call.arguments))
    from pytest_cardprobe.judge.recovery import recover_tool_calls

    recovery = recover_tool_calls(reply.content, [tool_name])
    if recovery.error:
        return Answer("content", reply.content, refused=recovery.error)
    for recovered in recovery.calls:
        if recovered.name == tool_name:
            return Answer("recovered", _body_text(recovered.arguments))
    return Answer("content", reply.content)


def turn_of(reply: ChatReply, declared: Sequence[str]) -> ModelTurn:
    """A call suite's view of one reply: its calls and the route they took.

    Structured ``tool_calls`` win; otherwise calls to *declared* tools written as text are
    recovered (docs/design.md §6); text that tried to call one and cannot be read is refused,
    never repaired.
    """
    from pytest_cardprobe.judge.call import ModelTurn
    from pytest_cardprobe.judge.recovery import recover_tool_calls

    if reply.tool_calls:
        return ModelTurn("tool_calls", reply.tool_calls, reply.content)
    recovery = recover_tool_calls(reply.content, list(declared))
    if recovery.error:
        return ModelTurn("content", (), reply.content, refused=recovery.error)
    if recovery.calls:
        calls = tuple(ToolCall(c.name, dict(c.arguments)) for c in recovery.calls)
        return ModelTurn("recovered", calls, reply.content)
    return ModelTurn("content", (), reply.content)
