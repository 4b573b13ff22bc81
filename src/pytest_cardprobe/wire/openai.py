"""OpenAI-compatible ``POST /v1/chat/completions``: the request body and a whole reply."""

from __future__ import annotations

from typing import Any

from pytest_cardprobe.types import ChatReply, ChatRequest
from pytest_cardprobe.wire.calls import tool_call

PATH = "/v1/chat/completions"


def openai_body(request: ChatRequest, *, stream: bool) -> dict[str, Any]:
    """The JSON body of ``request``: sampling options move to the top level, Ollama-only
    ones (``num_ctx``, ...) are dropped, ``format`` becomes ``response_format``, and a
    request that must call sends its ``tool_choice`` (``"required"``)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": request.messages,
        "stream": stream,
    }
    opts = dict(request.options)
    if "temperature" in opts:
        body["temperature"] = opts.pop("temperature")
    if "num_predict" in opts:
        body["max_tokens"] = opts.pop("num_predict")
    # These have no Ollama equivalent in ``options`` but are part of the OpenAI
    # request; a suite or the adjust hook sets them through the options (``max_tokens``,
    # OpenAI's own name of the cap, wins over ``num_predict``: dropping it sent no cap).
    for key in ("seed", "stop", "tool_choice", "max_tokens"):
        if key in opts:
            body[key] = opts.pop(key)
    fmt = opts.pop("format", None)
    if fmt == "json":
        body["response_format"] = {"type": "json_object"}
    elif isinstance(fmt, dict):
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": fmt},
        }
    if request.tools:
        body["tools"] = request.tools
        if request.tool_choice:
            # What an application sends; Ollama's /v1 drops it (it has no tool_choice).
            body["tool_choice"] = request.tool_choice
    if request.think != "off":
        # OpenAI's effort levels; plain "on" asks for the usual middle one.
        body["reasoning_effort"] = "medium" if request.think == "on" else request.think
    return body


def parse_openai_reply(body: dict[str, Any]) -> ChatReply:
    """One ``/v1/chat/completions`` reply body; arguments arrive as a JSON string."""
    choices = body.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    calls = [c for c in map(tool_call, message.get("tool_calls") or []) if c]
    return ChatReply(
        content=message.get("content") or "",
        thinking=message.get("reasoning_content") or "",
        tool_calls=tuple(calls),
        finish_reason=choice.get("finish_reason"),
        raw=body,
    )
