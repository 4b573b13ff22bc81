"""The pinned recipes that make SmolLM2-135M return REAL structured tool calls from Ollama.

Left to itself the model answers in prose when offered a tool. Both recipes constrain the
output with a `format` JSON schema, so the call exists by construction; which one works
depends on how the Ollama release parses a tool call (docs/real-servers.md, "What makes
SmolLM2-135M call a tool"):

* **tag recipe** (Ollama up to 0.11.6; the project's pinned 0.11.4): the model
  `smollm2:135m`, whose template writes calls as ``<tool_call>{...}``, so Ollama's parser
  looks for the tag ``<tool_call>``. The schema forces ``{"tag": "<tool_call>", "name": ...,
  "arguments": {...}}``: the parser finds the tag inside the first string, then the tool name,
  then the first JSON object after it (the arguments).
* **JSON-start recipe** (Ollama 0.11.7 and later, e.g. 0.33.0): since ollama/ollama#12039
  (first released in 0.11.7) the parser skips braces inside JSON strings, counting quotes from
  the tag on. The tag recipe's tag sits inside a string, so from the tag on every string is
  read inside out, no object is found, and the call is dropped (the reply keeps only
  ``{"tag": "``, the tokens are still counted). The model ``smollm2:135m-jsoncall`` has the
  same prompt bytes but writes the tag with a template action (``{{ "<tool_call>" }}``), so
  Ollama's tag becomes ``{`` and a reply that starts with a JSON object naming a declared tool
  is a call. The schema forces ``{"name": ..., "arguments": {...}}``. This recipe works on
  0.11.4 too.

Pure data and plain functions: the live tests and ``capture_wire.py`` both use it.
"""

from __future__ import annotations

import copy
import re
from typing import Any

# ollama/ollama#12039 "tools: avoid matching braces that are part of tool content", in v0.11.7
PARSER_TRACKS_STRINGS_SINCE = (0, 11, 7)
JSONCALL_SUFFIX = "-jsoncall"  # scripts/real-servers MODEL_VARIANTS
THINK_SUFFIX = "-think"

# A tight argument schema keeps the constrained output short (well under the token limit).
STRICT_CARD_ARGS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "body": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": ["TextBlock"]},
                    "text": {"type": "string", "maxLength": 40},
                },
                "required": ["type", "text"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["body"],
    "additionalProperties": False,
}
STRICT_CARD_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "render_adaptive_card",
        "description": "Show the user an Adaptive Card (JSON) in the chat window.",
        "parameters": STRICT_CARD_ARGS,
    },
}
USER_ASKS_FOR_CARD = [{"role": "user", "content": "Show me a card that says hello."}]


def version_tuple(version: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", version.strip())
    if m is None:
        raise ValueError(f"not an Ollama release: {version!r}")
    return int(m[1]), int(m[2]), int(m[3])


def tag_recipe_works(version: str) -> bool:
    """True for the releases whose tool parser reads the tag recipe's call."""
    return version_tuple(version) < PARSER_TRACKS_STRINGS_SINCE


def tag_format(tool: dict[str, Any]) -> dict[str, Any]:
    """The tag recipe's `format`: the literal tag, the tool's name, its arguments."""
    function = tool["function"]
    arguments = copy.deepcopy(function["parameters"])
    arguments["additionalProperties"] = False
    return {
        "type": "object",
        "properties": {
            "tag": {"type": "string", "enum": ["<tool_call>"]},
            "name": {"type": "string", "enum": [function["name"]]},
            "arguments": arguments,
        },
        "required": ["tag", "name", "arguments"],
        "additionalProperties": False,
    }


def json_start_format(tool: dict[str, Any]) -> dict[str, Any]:
    """The JSON-start recipe's `format`: an object of the tool's name and arguments."""
    function = tool["function"]
    arguments = copy.deepcopy(function["parameters"])
    arguments["additionalProperties"] = False
    return {
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": [function["name"]]},
            "arguments": arguments,
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def recipe_model(model: str, version: str) -> str:
    """The model a release's recipe asks: the base model, or its -jsoncall variant."""
    return model if tag_recipe_works(version) else model + JSONCALL_SUFFIX


def recipe_format(tool: dict[str, Any], version: str) -> dict[str, Any]:
    return tag_format(tool) if tag_recipe_works(version) else json_start_format(tool)


def recipe_body(
    model: str, *, recipe: str, stream: bool, tool: dict[str, Any] = STRICT_CARD_TOOL
) -> dict[str, Any]:
    """The card question under a recipe (``"tag"`` or ``"json-start"``) for /api/chat.

    `model` is the model the recipe asks (``smollm2:135m`` or ``smollm2:135m-jsoncall``).
    """
    fmt = tag_format(tool) if recipe == "tag" else json_start_format(tool)
    return {
        "model": model,
        "messages": USER_ASKS_FOR_CARD,
        "tools": [tool],
        "format": fmt,
        "stream": stream,
        "options": {"temperature": 0, "num_predict": 128},
    }


# ---------------------------------------------------------------- a call the server cannot parse

#: Ollama 0.12 and later take a built-in parser from a model's Modelfile (``PARSER``).
PARSER_SINCE = (0, 12, 0)
#: The variant of the model with Ollama's built-in ``qwen3`` tool-call parser, which reads
#: calls as ``<tool_call>{json}</tool_call>``: the layout SmolLM2's template already writes.
PARSER_NAME = "qwen3"
PARSER_SUFFIX = "-qwen3parser"
#: What the model is made to write (``format`` below): a call as a JSON *string*, so its
#: quotes arrive escaped between the tags and the parser's JSON decoder fails on ``{\"``.
ESCAPED_CALL = '<tool_call>{"name": "render_adaptive_card", "arguments": {"body": []}}</tool_call>'
ESCAPED_CALL_FORMAT: dict[str, Any] = {"type": "string", "enum": [ESCAPED_CALL]}
#: What the qwen3 parser says of it (model/parsers/qwen3.go wrapping encoding/json's error).
ESCAPED_CALL_ERROR = (
    "failed to parse JSON: invalid character '\\\\' looking for beginning of object key string"
)


def parser_variant_create(model: str) -> dict[str, Any]:
    """The ``/api/create`` body of ``model``'s variant with the built-in parser."""
    return {"model": model + PARSER_SUFFIX, "from": model, "parser": PARSER_NAME, "stream": False}


def unparsed_body(model: str, *, stream: bool) -> dict[str, Any]:
    """The card question to the parser variant, its reply constrained to the escaped call."""
    return {
        "model": model + PARSER_SUFFIX,
        "messages": USER_ASKS_FOR_CARD,
        "tools": [STRICT_CARD_TOOL],
        "format": ESCAPED_CALL_FORMAT,
        "stream": stream,
        "think": False,
        "options": {"temperature": 0, "num_predict": 96},
    }
