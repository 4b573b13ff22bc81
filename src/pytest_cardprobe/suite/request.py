"""Build the neutral chat request a probe sends: system prompt, history, question, tools."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pytest_cardprobe.suite.loader import NESTING_TYPES, REQUIRED
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.records import PriorMessage
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


def assistant_calls(
    api: str, content: str, calls: Sequence[tuple[str, Mapping[str, Any], str | None]]
) -> Message:
    """An assistant message that made ``calls`` (name, arguments, id), in ``api``'s shape.

    Ollama takes arguments as an object and an id only where the call had one; the OpenAI
    wire takes arguments as a JSON string and always an id (the caller gives one).
    """
    if api == "openai":
        return {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": json.dumps(arguments, ensure_ascii=False),
                    },
                }
                for name, arguments, call_id in calls
            ],
        }
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                **({"id": call_id} if call_id else {}),
                "function": {"name": name, "arguments": arguments},
            }
            for name, arguments, call_id in calls
        ],
    }


def tool_answer(api: str, name: str, content: str, call_id: str | None) -> Message:
    """A tool's answer to a call, in ``api``'s shape: OpenAI quotes the call's id; Ollama
    names the tool (``tool_name``) and quotes the id where the call had one."""
    if api == "openai":
        return {"role": "tool", "tool_call_id": call_id, "content": content}
    return {
        "role": "tool",
        "tool_name": name,
        "content": content,
        **({"tool_call_id": call_id} if call_id else {}),
    }


def conversation_messages(conversation: Sequence[PriorMessage], api: str) -> list[Message]:
    """A case's ``conversation`` as ``api``'s messages.

    On the OpenAI wire a call without an id gets ``call_<message>_<n>`` (its place in the
    conversation), and a tool message without one answers the next unanswered call of the
    assistant message before it.
    """
    messages: list[Message] = []
    pending: list[str | None] = []
    for index, said in enumerate(conversation):
        if said.role == "assistant" and said.calls:
            ids = [
                c.id or (f"call_{index}_{n}" if api == "openai" else None)
                for n, c in enumerate(said.calls)
            ]
            calls = [(c.name, c.arguments, i) for c, i in zip(said.calls, ids, strict=True)]
            messages.append(assistant_calls(api, said.content, calls))
            pending = list(ids)
        elif said.role == "tool":
            call_id = said.id
            if call_id is None and pending:
                call_id = pending[0]
            if call_id in pending:
                pending.remove(call_id)
            messages.append(tool_answer(api, said.name or "", said.content, call_id))
        else:
            messages.append({"role": said.role, "content": said.content})
            pending = []
    return messages


def build_request(
    probe: Probe,
    base_options: Mapping[str, Any],
    think: str = "off",
    *,
    channel: str | None = None,
    api: str = "ollama",
) -> ChatRequest:
    """The reference request for one probe (docs/design.md §5) at reasoning level ``think``.

    ``channel`` overrides the way of asking: the retry channel asks in ``prose`` first and
    through the ``tool`` second, with the same condition and question. ``api`` is the wire
    the request goes over, which shapes a case's ``conversation`` (tool calls and results).
    Under a call suite's ``required`` condition the question is asked cold and the request
    must call (``tool_choice: "required"``; the wire says it per API); a tool loop lifts that
    on the turns after the expected calls (``run/loop.py``).
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
    # A case's own earlier turns (a call suite's ``conversation``) come last before it.
    messages.extend(conversation_messages(probe.case.conversation, api))
    messages.append({"role": "user", "content": probe.case.prompt})
    tools = [dict(suite.tool)] if asked == "tool" else []
    if suite.is_call_suite:
        # Every declared tool goes with every request, as the application would send them.
        tools = [dict(t) for t in suite.tools]
    options = {**base_options, **suite.options}
    if probe.condition == "schema" and asked == "prose":
        options["format"] = card_schema(suite.vocabulary)
    forced = "required" if suite.is_call_suite and probe.condition == REQUIRED else None
    return ChatRequest(
        model=probe.model,
        messages=messages,
        tools=tools,
        options=options,
        think=think,
        tool_choice=forced,
    )
