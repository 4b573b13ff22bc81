"""OpenAI-compatible ``/v1/chat/completions`` with ``stream: true``: SSE ``data:`` events
assembled into one reply, argument fragments joined per tool-call ``index``."""

from __future__ import annotations

from typing import Any

from pytest_cardprobe.types import ChatReply, ToolCall
from pytest_cardprobe.wire.calls import decode_arguments
from pytest_cardprobe.wire.errors import InfraError
from pytest_cardprobe.wire.shapes import Stream

# What a chunk may carry about the whole reply; the last chunk carrying each one wins.
_KEPT = ("usage", "timings", "system_fingerprint")
# Kept at the top of ``raw`` too, where a whole reply's body has it.
_TOP = ("system_fingerprint",)


def parse_openai_stream(stream: Stream) -> ChatReply:
    """Assemble an SSE stream, joining argument fragments per tool-call index.

    ``stream`` is the stream as ``shapes.read_stream`` read it: every ``data:`` event parsed
    and of the API's shape, up to ``[DONE]``, and the first ``error:`` line.

    A chunk may carry no choice at all (``choices: []``: the usage chunk OpenAI sends last,
    and Ollama's ``/v1`` since 0.32.6) or a finish reason beside an empty delta; the
    server's figures (``usage``, llama-server's ``timings``) and ``system_fingerprint`` are
    kept from whichever chunk carries them, as ``raw["final"]``, where ``server_figures``
    reads a stream's figures.
    """
    content: list[str] = []
    thinking: list[str] = []
    names: dict[int, str] = {}
    ids: dict[int, str] = {}
    fragments: dict[int, list[str]] = {}
    finish: str | None = None
    chunks = 0
    final: dict[str, Any] = {}
    # llama-server reports a failure after the stream started as an `error:` line: the reply
    # is what came before it.
    until = stream.error[0] if stream.error else len(stream.chunks)
    for chunk in stream.chunks[:until]:
        chunks += 1
        if "error" in chunk:
            raise InfraError(f"error inside stream after {chunks - 1} events: {chunk['error']}")
        final.update((k, chunk[k]) for k in _KEPT if chunk.get(k) is not None)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            thinking.append(delta.get("reasoning_content") or "")
            for part in delta.get("tool_calls") or []:
                index = int(part.get("index", 0))
                fn = part.get("function") or {}
                if isinstance(part.get("id"), str) and part["id"]:
                    ids.setdefault(index, part["id"])
                if fn.get("name"):
                    names[index] = names.get(index, "") + fn["name"]
                fragments.setdefault(index, []).append(fn.get("arguments") or "")
            finish = choice.get("finish_reason") or finish
    if stream.error:
        raise InfraError(f"error inside stream after {chunks} events: {stream.error[1]}")
    if not stream.done and finish is None:
        raise InfraError(f"SSE stream ended after {chunks} events without [DONE]")
    calls = []
    for index in sorted(set(names) | set(fragments)):
        joined = "".join(fragments.get(index, [])) or "{}"
        arguments, error, as_string = decode_arguments(joined, object_expected=False)
        calls.append(
            ToolCall(
                names.get(index, ""),
                arguments,
                error,
                id=ids.get(index),
                arguments_as_string=as_string,
            )
        )
    return ChatReply(
        content="".join(content),
        pieces=tuple(piece for piece in content if piece),
        thinking="".join(thinking),
        tool_calls=tuple(calls),
        finish_reason=finish,
        raw={"chunks": chunks, **_whole(final)},
    )


def _whole(final: dict[str, Any]) -> dict[str, Any]:
    """What ``raw`` holds beside the chunk count: nothing when no chunk said anything."""
    if not final:
        return {}
    return {"final": final, **{k: v for k, v in final.items() if k in _TOP}}
