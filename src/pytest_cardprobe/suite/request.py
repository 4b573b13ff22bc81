"""Build the neutral chat request a probe sends: system prompt, history, question, tools."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from pytest_cardprobe.suite.loader import NESTING_TYPES
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.types import ChatRequest, Message


def card_schema(vocabulary: Collection[str]) -> dict[str, Any]:
    """A compact JSON Schema of a card, for the ``schema`` condition's constrained decoding.

    Deliberately flat: an ``AdaptiveCard`` whose body is a list of elements, each with a
    ``type`` from the suite's vocabulary and the few text fields most elements take. It
    guarantees parseable JSON with known element types; it does not describe every property
    of every element (a full schema would cost the server a much larger grammar).
    """
    types = sorted(set(vocabulary) - set(NESTING_TYPES))
    element = {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": types},
            "id": {"type": "string"},
            "text": {"type": "string"},
            "label": {"type": "string"},
            "title": {"type": "string"},
        },
        "required": ["type"],
    }
    return {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["AdaptiveCard"]},
            "version": {"type": "string"},
            "body": {"type": "array", "minItems": 1, "items": element},
        },
        "required": ["type", "body"],
    }


def build_request(
    probe: Probe,
    base_options: Mapping[str, Any],
    think: str = "off",
    *,
    channel: str | None = None,
) -> ChatRequest:
    """The reference request for one probe (docs/design.md §5) at reasoning level ``think``.

    ``channel`` overrides the way of asking: the retry channel asks in ``prose`` first and
    through the ``tool`` second, with the same condition and question.
    """
    suite = probe.suite
    asked = channel or ("prose" if probe.channel == "retry" else probe.channel)
    messages: list[Message] = []
    # A call suite's system prompt is optional: its tools carry their own descriptions.
    if asked in suite.prompts:
        messages.append({"role": "system", "content": suite.prompts[asked]})
    if probe.condition == "history":
        messages.extend({"role": t.role, "content": t.content} for t in suite.history)
    elif probe.condition == "seeded" and suite.seed_turn is not None:
        # One synthetic exchange whose assistant turn is raw card JSON: does an example of
        # the format in the conversation make the model answer in kind?
        messages.append({"role": "user", "content": suite.seed_turn.user})
        card = json.dumps(suite.seed_turn.card, ensure_ascii=False)
        messages.append({"role": "assistant", "content": card})
    messages.append({"role": "user", "content": probe.case.prompt})
    tools = [dict(suite.tool)] if asked == "tool" else []
    if suite.is_call_suite:
        # Every declared tool goes with every request, as the application would send them.
        tools = [dict(t) for t in suite.tools]
    options = {**base_options, **suite.options}
    if probe.condition == "schema" and asked == "prose":
        options["format"] = card_schema(suite.vocabulary)
    return ChatRequest(
        model=probe.model, messages=messages, tools=tools, options=options, think=think
    )
