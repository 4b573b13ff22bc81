"""A tool call the server could not parse: the model's failure, told from the server's.

Ollama runs a model's output through a tool-call parser (a built-in one named by the
model's ``PARSER``, or harmony for gpt-oss). When the model writes a call that parser cannot
read, the server answers with an error instead of a reply (read in Ollama's source,
``server/routes.go``, 0.11.4 and 0.33.0):

- a whole reply, or a stream that had sent nothing yet, is an HTTP 500 whose body is
  exactly ``{"error": "<the parser's message>"}`` (Ollama's ``/v1`` wraps it as
  ``{"error": {"message": …}}``);
- a stream that had sent chunks goes on as an HTTP 200 whose last line is
  ``{"error": "<the parser's message>"}`` (0.11.0 to 0.11.4 wrote harmony's as
  ``{"error parsing tool call": "<why>"}``).

Any 5xx is otherwise infrastructure (retried, unscored), so such a regression of the model
would be invisible. A reply is taken for a parse error only when both agree: its shape (the
status or the stream position above, the body holding nothing but the error) and its
message, which must be one the parsers write (:data:`PARSER_MESSAGES`), never one string
alone. Then it is a reply, not a failed attempt: recorded, judged malformed, and replayed
as it was judged.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_cardprobe.jsonread import load_json

#: The key 0.11.0 to 0.11.4 wrote harmony's parse error under, in a stream line.
OLD_HARMONY_KEY = "error parsing tool call"

# What each parser says when it cannot read a call (Ollama 0.33.0, model/parsers/*.go and
# harmony/harmonyparser.go), anchored at the start of the message. qwen3-coder hands on
# encoding/xml's error bare, and only a parser reads XML there. qwen3-vl hands on
# encoding/json's bare ("unexpected end of JSON input", "invalid character …"): those are
# left out, since Ollama answers a model it cannot load (a corrupt config blob) with the same
# words and the same 500, and that is infrastructure.
_MESSAGES: dict[str, tuple[str, ...]] = {
    "harmony": (r"error parsing tool call\b",),
    "qwen3, qwen3-thinking (and glm-4.6)": (r"failed to parse JSON: ", r"empty function name$"),
    "glm-4.6/4.7": (
        r"failed to parse XML: ",
        r"incomplete GLM tool call: ",
        r"mismatched arg_key and arg_value counts: ",
        r"tool \".*\" is not declared$",
        r"required argument \".*\" is missing for tool ",
        r"empty argument name$",
    ),
    "laguna": (r"failed to parse Laguna JSON tool call", r"empty Laguna tool call name$"),
    "lfm2": (r"invalid tool call: ", r"no tool calls? found$", r"invalid argument: "),
    "olmo3": (
        r"failed to parse function call ",
        r"invalid function call format$",
        r"failed to parse arguments: ",
        r"invalid argument format: ",
        r"failed to parse value for ",
        r"invalid object entry: ",
    ),
    "cogito, deepseek3": (r"invalid format$",),
    "gemma4": (
        r"expected 'call:' prefix$",
        r"expected '\{' in tool call$",
        r"repair failed to produce valid JSON arguments$",
    ),
    "ministral": (r"tool '.*' not found$",),
    "glimmer": (
        r"empty Glimmer function name$",
        r"undeclared Glimmer function ",
        r"parse Glimmer call to ",
        r"Glimmer recipient ",
        r"(missing|malformed) ATEM ",
        r"unterminated ATEM parameter ",
    ),
    "qwen3-coder (encoding/xml's errors)": (
        r"XML syntax error on line \d+: ",
        r"expected element type <\w+> but have <",
    ),
}

#: The parsers' messages, as one pattern per parser family (for the documentation's list).
PARSER_MESSAGES: dict[str, re.Pattern[str]] = {
    family: re.compile("|".join(f"(?:{p})" for p in patterns), re.S)
    for family, patterns in _MESSAGES.items()
}
# Messages are short; a longer one (harmony quotes the raw call) is judged by its start.
_LONGEST = 2000


def parser_message(message: str) -> bool:
    """True when ``message`` is worded as one of the tool-call parsers' errors."""
    head = message[:_LONGEST].strip()
    return any(p.match(head) for p in PARSER_MESSAGES.values())


def error_line(chunk: dict[str, Any]) -> str | None:
    """The message of a stream line that is nothing but an error (``{"error": "…"}``, or
    0.11.x harmony's ``{"error parsing tool call": "…"}``), else None."""
    if len(chunk) != 1:
        return None
    if isinstance(chunk.get("error"), str):
        return str(chunk["error"])
    if isinstance(chunk.get(OLD_HARMONY_KEY), str):
        return f"{OLD_HARMONY_KEY}: {chunk[OLD_HARMONY_KEY]}"
    return None


def unparsed_status(status: int, body: bytes | str) -> str | None:
    """The parser's message when a non-2xx reply is a tool call the server could not parse:
    HTTP 500 with a body that is nothing but ``{"error": …}`` worded as a parser's error."""
    if status != 500:
        return None
    try:
        data = load_json(body.decode("utf-8") if isinstance(body, bytes) else body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or set(data) != {"error"}:
        return None
    error = data["error"]
    if isinstance(error, dict):  # Ollama's /v1: {"error": {"message", "type", …}}
        error = error.get("message")
    if isinstance(error, str) and parser_message(error):
        return error
    return None
