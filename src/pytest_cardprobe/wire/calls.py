"""Tool calls as both APIs carry them: a name and arguments that may come as an object or a
JSON string (sometimes a string holding another JSON string)."""

from __future__ import annotations

from typing import Any

from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.types import ToolCall


def decode_arguments(value: Any, object_expected: bool) -> tuple[dict[str, Any], str | None, bool]:
    """Arguments as an object, an error, and whether they came as a JSON string where the
    wire promises an object (``object_expected``: Ollama) or as a string holding another
    JSON string (double-encoded, seen from OpenAI-compatible servers)."""
    if isinstance(value, dict):
        return value, None, False
    if isinstance(value, str):
        # Strictly (no NaN, no overflow, bounded nesting, no lone surrogate): what is decoded
        # here goes back to the server in a tool loop's next request and into the reports.
        try:
            decoded = load_json(value)
        except ValueError as exc:
            return {}, f"arguments are not valid JSON: {exc}", False
        as_string = object_expected
        if isinstance(decoded, str):
            try:
                decoded = load_json(decoded)
            except ValueError:
                return {}, "arguments decode to str, not an object", False
            as_string = True
        if isinstance(decoded, dict):
            return decoded, None, as_string
        return {}, f"arguments decode to {type(decoded).__name__}, not an object", False
    return {}, f"arguments have type {type(value).__name__}", False


def tool_call(entry: Any, object_expected: bool = False) -> ToolCall | None:
    """One ``tool_calls[]`` entry as a :class:`ToolCall`; None when it has no name.

    ``function.index`` (Ollama 0.12.6 and later always send it) and any other extra key
    are ignored; the server's ``id`` is kept, outside the call's equality.
    """
    if not isinstance(entry, dict):
        return None
    fn = entry.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    arguments, error, as_string = decode_arguments(fn.get("arguments", {}), object_expected)
    call_id = entry.get("id")
    return ToolCall(
        fn["name"],
        arguments,
        error,
        id=call_id if isinstance(call_id, str) else None,
        arguments_as_string=as_string,
    )


def ollama_call(entry: Any) -> ToolCall | None:
    """An Ollama call, whose arguments the wire promises as an object."""
    return tool_call(entry, object_expected=True)
