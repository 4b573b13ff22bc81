"""Ollama ``/api/chat`` with ``stream: true``: NDJSON lines assembled into one reply."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pytest_cardprobe.types import ChatReply, ToolCall
from pytest_cardprobe.wire.calls import ollama_call
from pytest_cardprobe.wire.errors import InfraError


def parse_ollama_stream(lines: Iterable[str]) -> ChatReply:
    """Assemble an NDJSON ``/api/chat`` stream; calls may come in any chunk, the final included."""
    content: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    last: dict[str, Any] = {}
    chunks = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            chunk = json.loads(line)
        except ValueError as exc:
            raise InfraError(f"stream line {chunks + 1} is not JSON: {line[:80]!r}") from exc
        if not isinstance(chunk, dict):
            raise InfraError(f"stream line {chunks + 1} is not a JSON object: {line[:80]!r}")
        chunks += 1
        if "error" in chunk:
            raise InfraError(f"error inside stream after {chunks - 1} chunks: {chunk['error']}")
        message = chunk.get("message") or {}
        content.append(message.get("content") or "")
        thinking.append(message.get("thinking") or "")
        calls.extend(c for c in map(ollama_call, message.get("tool_calls") or []) if c)
        last = chunk
    if not last.get("done"):
        raise InfraError(f"stream ended after {chunks} chunks without done:true")
    return ChatReply(
        content="".join(content),
        pieces=tuple(piece for piece in content if piece),
        thinking="".join(thinking),
        tool_calls=tuple(calls),
        finish_reason=last.get("done_reason"),
        raw={"chunks": chunks, "final": last},
    )
