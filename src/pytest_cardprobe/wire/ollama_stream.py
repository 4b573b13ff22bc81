"""Ollama ``/api/chat`` with ``stream: true``: NDJSON lines assembled into one reply."""

from __future__ import annotations

from typing import Any

from pytest_cardprobe.types import ChatReply, ToolCall
from pytest_cardprobe.wire.calls import ollama_call
from pytest_cardprobe.wire.errors import InfraError
from pytest_cardprobe.wire.shapes import Stream
from pytest_cardprobe.wire.unparsed import error_line, parser_message


def parse_ollama_stream(stream: Stream) -> ChatReply:
    """Assemble an NDJSON ``/api/chat`` stream; calls may come in any chunk, the final included.

    ``stream`` is the stream as ``shapes.read_stream`` read it: every line parsed and of the
    API's shape, blank lines left out. The reply ends at the first ``done: true`` chunk, where
    a client stops reading: lines a server sends after it are not part of the reply and are
    never read (they stay in a recording as sent, docs/design.md §7).
    """
    content: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    last: dict[str, Any] = {}
    chunks = 0
    unparsed: str | None = None
    for chunk in stream.chunks:
        if unparsed is not None:
            raise InfraError(f"stream went on after its error line ({chunks} chunks before it)")
        error = error_line(chunk)
        if error is not None and chunks and parser_message(error):
            # The model's call, which the server's parser could not read: the turn so far
            # and the parser's word, when nothing follows (Ollama ends the stream there).
            unparsed = error
            continue
        if "error" in chunk or error is not None:
            said = error if error is not None else chunk["error"]
            raise InfraError(f"error inside stream after {chunks} chunks: {said}")
        chunks += 1
        message = chunk.get("message") or {}
        content.append(message.get("content") or "")
        thinking.append(message.get("thinking") or "")
        calls.extend(c for c in map(ollama_call, message.get("tool_calls") or []) if c)
        last = chunk
    if not last.get("done") and unparsed is None:
        raise InfraError(f"stream ended after {chunks} chunks without done:true")
    return ChatReply(
        content="".join(content),
        pieces=tuple(piece for piece in content if piece),
        thinking="".join(thinking),
        tool_calls=tuple(calls),
        finish_reason=last.get("done_reason"),
        raw={"chunks": chunks, "final": last},
        unparsed=unparsed,
    )
