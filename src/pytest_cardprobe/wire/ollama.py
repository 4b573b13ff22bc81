"""Ollama ``POST /api/chat``: the request body and a whole (``stream: false``) reply."""

from __future__ import annotations

from typing import Any

from pytest_cardprobe.types import ChatReply, ChatRequest
from pytest_cardprobe.wire.calls import ollama_call
from pytest_cardprobe.wire.errors import InfraError
from pytest_cardprobe.wire.forcing import calls_format

PATH = "/api/chat"
# Ollama's ``think`` takes a boolean, or a level for models that have levels (gpt-oss).
OLLAMA_THINK: dict[str, bool | str] = {"off": False, "on": True}


def ollama_body(request: ChatRequest, *, stream: bool, keep_alive: str) -> dict[str, Any]:
    """The JSON body of ``request``; ``format`` given in the options goes to the top level.

    ``think`` is always sent, ``false`` when thinking is off: Ollama 0.12.4 and later think
    by default for a model that can, so leaving it out would change what is measured with
    the server's version. Ollama has no ``tool_choice``: a request that must call (its
    ``tool_choice`` set) carries the ``format`` of its calls instead
    (:func:`~pytest_cardprobe.wire.forcing.calls_format`), in place of any other format.
    """
    body: dict[str, Any] = {
        "model": request.model,
        "messages": request.messages,
        "stream": stream,
        "think": OLLAMA_THINK.get(request.think, request.think),
        "keep_alive": keep_alive,
        "options": dict(request.options),
    }
    fmt = body["options"].pop("format", None)
    if request.tool_choice and request.tools:
        fmt = calls_format(request.tools)
    if fmt is not None:
        body["format"] = fmt
    if request.tools:
        body["tools"] = request.tools
    return body


def parse_ollama_reply(body: dict[str, Any]) -> ChatReply:
    """One ``/api/chat`` reply body (``stream:false``)."""
    if body.get("done") is False:
        # Ollama 0.11.4 can stop mid-reply (a token repeated >30 times) and answer 200 with
        # done:false: not a finished turn, so not model behaviour to judge.
        raise InfraError("reply ended with done:false (the server stopped before finishing)")
    message = body.get("message") or {}
    calls = [c for c in map(ollama_call, message.get("tool_calls") or []) if c]
    return ChatReply(
        content=message.get("content") or "",
        thinking=message.get("thinking") or "",
        tool_calls=tuple(calls),
        finish_reason=body.get("done_reason"),
        raw=body,
    )
