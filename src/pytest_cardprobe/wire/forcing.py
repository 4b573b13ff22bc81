"""Forcing a tool call per API: what a request that must call carries on each wire.

OpenAI-compatible servers take ``tool_choice: "required"`` (llama-server and vLLM enforce it
with a grammar). Ollama has no ``tool_choice`` at all, in ``/api/chat`` or in ``/v1``, which
drops it (docs/design.md §7). What an application on Ollama sends instead is a ``format``: a
JSON Schema of the call, which the server turns into a grammar the reply must follow.
:func:`calls_format` is that schema: one alternative per declared tool, its ``name`` a
constant and its ``arguments`` the tool's own parameters schema, so every reply the grammar
admits is exactly one call of a declared tool with arguments its schema allows (as far as the
server's schema-to-grammar conversion enforces it, see §7). The reply then arrives as JSON
text in the message content, which the judge recovers as a call (route ``recovered``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The one forcing a request may ask for: some call of a declared tool.
REQUIRED = "required"

# Keywords whose values are data, not schemas: a ``$ref`` inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "example"})


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    fn = tool.get("function", tool)
    return fn if isinstance(fn, Mapping) else {}


def _has_ref(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        if isinstance(schema.get("$ref"), str):
            return True
        return any(_has_ref(v) for k, v in schema.items() if k not in _DATA_KEYWORDS)
    if isinstance(schema, list):
        return any(_has_ref(v) for v in schema)
    return False


def relocated(schema: Any, base: str) -> Any:
    """``schema`` with every local reference (``#…``) made to point below ``base``.

    A tool's parameters schema resolves ``#/$defs/X`` against itself; moved under the
    ``$defs`` of a larger document at ``base`` (``#/$defs/tool0``), the same reference is
    ``#/$defs/tool0/$defs/X``. Values of data keywords (``const``, ``enum``, ``default``, …)
    are left as they are.
    """
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#"):
                out[key] = base + value[1:]
            elif key in _DATA_KEYWORDS:
                out[key] = value
            else:
                out[key] = relocated(value, base)
        return out
    if isinstance(schema, list):
        return [relocated(v, base) for v in schema]
    return schema


def calls_format(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``format`` that forces a call of ``tools`` on Ollama's ``/api/chat``.

    One call is ``{"type": "object", "properties": {"name": {"const": NAME}, "arguments":
    PARAMETERS}, "required": ["name", "arguments"], "additionalProperties": false}``, one
    alternative per tool in the tools' order; the format admits one call, or a non-empty
    list of them (``{"anyOf": [call_1, …, call_n, {"type": "array", "minItems": 1, "items":
    {"anyOf": [call_1, …, call_n]}}]}``), as ``tool_choice: "required"`` admits parallel
    calls. ``anyOf`` rather than ``oneOf``: the alternatives exclude each other by their
    constant names already. A tool whose parameters hold a ``$ref`` has them moved to the
    document's ``$defs`` (``tool<i>``) with their references relocated, since the tool's own
    ``#/$defs/…`` would otherwise point at the format's root, where it does not resolve
    (Ollama 0.11.4 refuses such a format; docs/design.md §7).
    """
    alternatives: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}
    for index, tool in enumerate(tools):
        fn = _function(tool)
        name = fn.get("name")
        if not isinstance(name, str):
            continue
        params = fn.get("parameters")
        arguments: Any = dict(params) if isinstance(params, Mapping) else {"type": "object"}
        if _has_ref(arguments):
            key = f"tool{index}"
            defs[key] = relocated(arguments, f"#/$defs/{key}")
            arguments = {"$ref": f"#/$defs/{key}"}
        alternatives.append(
            {
                "type": "object",
                "properties": {"name": {"const": name}, "arguments": arguments},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    listed = {"type": "array", "minItems": 1, "items": {"anyOf": alternatives}}
    schema: dict[str, Any] = {"anyOf": [*alternatives, listed]}
    if defs:
        schema["$defs"] = defs
    return schema
