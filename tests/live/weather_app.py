"""A small tool-using application, as a team would write one, on the official clients.

It answers a user's weather questions with two tools, in a conversation: the question, the
model's calls (run here with canned results) and their results fed back until the model
answers, then a follow-up question with all of that before it. ``ask_ollama`` uses the
``ollama`` Python client (``/api/chat``), ``ask_openai`` the ``openai`` client
(``/v1/chat/completions``), each plain or streamed. ``ask_openai`` can also keep its own
log of ``{"input": request, "output": reply}`` lines (OpenAI-shaped JSONL), as an
application that logs its traffic would. SmolLM2-135M seldom calls a tool by itself: a run
that never calls is a valid run of this application.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_forecast",
            "description": "Tomorrow's forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    },
]
SYSTEM = "You are a weather assistant. Call get_weather or get_forecast to answer."
QUESTIONS = ("What is the weather in Paris right now?", "And tomorrow?")
#: Short replies: inference is slow on the shared 2-core machine.
MAX_TOKENS = 24
MAX_STEPS = 3


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    city = arguments.get("city", "?")
    if name == "get_weather":
        return json.dumps({"city": city, "temperature_c": 18, "sky": "sunny"})
    return json.dumps({"city": city, "tomorrow": "rain", "high_c": 14})


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return dict(value) if isinstance(value, dict) else {}


def ask_ollama(client: Any, model: str, stream: bool) -> list[dict[str, Any]]:
    """The conversation, asked through an ``ollama.Client``; returns its messages."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    options = {"temperature": 0, "num_predict": MAX_TOKENS}
    for question in QUESTIONS:
        messages.append({"role": "user", "content": question})
        for _ in range(MAX_STEPS):
            if stream:
                content, calls = "", []
                for part in client.chat(model=model, messages=messages, tools=TOOLS,
                                        stream=True, options=options):  # fmt: skip
                    content += part.message.content or ""
                    calls.extend(part.message.tool_calls or [])
            else:
                reply = client.chat(model=model, messages=messages, tools=TOOLS, options=options)
                content, calls = reply.message.content or "", list(reply.message.tool_calls or [])
            said: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                said["tool_calls"] = [
                    {"function": {"name": c.function.name, "arguments": dict(c.function.arguments)}}
                    for c in calls
                ]
            messages.append(said)
            if not calls:
                break
            for c in calls:
                result = run_tool(c.function.name, _arguments(c.function.arguments))
                messages.append({"role": "tool", "tool_name": c.function.name, "content": result})
    return messages


def ask_openai(
    client: Any, model: str, stream: bool, log: Path | None = None
) -> list[dict[str, Any]]:
    """The conversation, asked through an ``openai.OpenAI`` client; returns its messages.
    With ``log``, every (plain) exchange is appended to it as an ``{"input", "output"}`` line."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for question in QUESTIONS:
        messages.append({"role": "user", "content": question})
        for _ in range(MAX_STEPS):
            request = {"model": model, "messages": list(messages), "tools": TOOLS,
                       "temperature": 0, "max_tokens": MAX_TOKENS}  # fmt: skip
            if stream:
                content, calls = "", {}
                for chunk in client.chat.completions.create(**request, stream=True):
                    for choice in chunk.choices:
                        content += choice.delta.content or ""
                        for part in choice.delta.tool_calls or []:
                            call = calls.setdefault(
                                part.index, {"id": None, "name": "", "arguments": ""}
                            )
                            call["id"] = call["id"] or part.id
                            if part.function is not None:
                                call["name"] += part.function.name or ""
                                call["arguments"] += part.function.arguments or ""
                found = list(calls.values())
            else:
                reply = client.chat.completions.create(**request)
                if log is not None:
                    with log.open("a", encoding="utf-8") as handle:
                        handle.write(
                            json.dumps({"input": request, "output": reply.model_dump()}) + "\n"
                        )
                message = reply.choices[0].message
                content = message.content or ""
                found = [
                    {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                    for c in message.tool_calls or []
                ]
            said: dict[str, Any] = {"role": "assistant", "content": content}
            if found:
                said["tool_calls"] = [
                    {"id": c["id"] or f"call_{i}", "type": "function",
                     "function": {"name": c["name"], "arguments": c["arguments"] or "{}"}}
                    for i, c in enumerate(found)
                ]  # fmt: skip
            messages.append(said)
            if not found:
                break
            for call in said["tool_calls"]:
                fn = call["function"]
                result = run_tool(fn["name"], _arguments(fn["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return messages
