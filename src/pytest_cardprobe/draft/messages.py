"""An API's chat messages in the suite's neutral ``conversation`` form.

Ollama writes a call's arguments as an object and names a tool result's tool
(``tool_name``); OpenAI writes arguments as a JSON string and pairs results with calls by id
(``tool_call_id``). A suite's ``conversation`` holds neither shape but the meaning: ``role``,
``content``, an assistant's ``tool_calls`` (``name``, ``arguments`` as an object, ``id``) and a
tool message's ``name`` and ``id``; the request writes it back in whichever API a run uses
(``suite/request.py``). What the suite cannot carry is left out and said: images, and
content parts that are not text. A model's reasoning (``thinking``, ``reasoning_content``) is
left out silently: it is no part of what the application asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.wire.calls import decode_arguments

#: Roles under other names: OpenAI's newer ``developer`` is a system message, the legacy
#: ``function`` role a tool result.
ROLE_ALIASES = {"developer": "system", "function": "tool"}
ROLES = ("system", "user", "assistant", "tool")


class Unusable(Exception):
    """A request whose messages cannot become a case; the message says why."""


@dataclass
class Neutral:
    """A request's messages in the neutral form, and what was left out of them."""

    messages: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def _text(content: Any, notes: list[str]) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                notes.append(f"a content part of type {kind!r} was left out (only text is kept)")
        return "".join(parts)
    raise Unusable(f"a message's content is {type(content).__name__}, not text")


def _calls(entries: Any, notes: list[str]) -> list[dict[str, Any]]:
    if not isinstance(entries, list):
        raise Unusable("an assistant message's tool_calls is not a list")
    calls = []
    for entry in entries:
        fn = entry.get("function") if isinstance(entry, Mapping) else None
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if not isinstance(name, str) or not name.strip():
            notes.append("a tool call without a name was left out")
            continue
        assert isinstance(fn, Mapping)
        arguments, problem, _ = decode_arguments(fn.get("arguments", {}), object_expected=False)
        if problem:
            notes.append(f"the arguments of a call of {name!r} were left out: {problem}")
        call: dict[str, Any] = {"name": name, "arguments": arguments}
        call_id = entry.get("id")
        if isinstance(call_id, str) and call_id.strip():
            call["id"] = call_id
        calls.append(call)
    return calls


def neutral_messages(messages: Any) -> Neutral:
    """``messages`` (either API's) in the neutral form; :class:`Unusable` when they cannot be."""
    if not isinstance(messages, list) or not messages:
        raise Unusable("the request has no messages")
    out: list[dict[str, Any]] = []
    notes: list[str] = []
    names_by_id: dict[str, str] = {}
    open_calls: list[dict[str, Any]] = []  # calls of the last assistant message, unanswered
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise Unusable(f"messages[{index}] is not a mapping")
        role = ROLE_ALIASES.get(str(message.get("role")), message.get("role"))
        if role not in ROLES:
            raise Unusable(f"messages[{index}] has the role {message.get('role')!r}")
        if message.get("images"):
            notes.append(f"the images of messages[{index}] were left out")
        said: dict[str, Any] = {"role": role, "content": _text(message.get("content"), notes)}
        if role == "assistant":
            calls = _calls(message.get("tool_calls") or [], notes)
            if calls:
                said["tool_calls"] = calls
                names_by_id.update((c["id"], c["name"]) for c in calls if "id" in c)
            open_calls = list(calls)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            call_id = call_id if isinstance(call_id, str) and call_id.strip() else None
            name = message.get("tool_name") or message.get("name")
            if not (isinstance(name, str) and name.strip()):
                name = names_by_id.get(call_id or "") or (
                    open_calls[0]["name"] if open_calls else None
                )
            if not name:
                raise Unusable(f"messages[{index}] is a tool result that names no tool and no call")
            said["name"] = name
            if call_id:
                said["id"] = call_id
                open_calls = [c for c in open_calls if c.get("id") != call_id]
            elif open_calls:
                open_calls.pop(0)
            else:
                raise Unusable(f"messages[{index}] is a tool result that answers no call")
        else:
            open_calls = []
        out.append(said)
    return Neutral(out, notes)


def without_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral messages without call ids (the server's labels): what two requests that asked
    the same thing have in common."""
    out = []
    for message in messages:
        message = {k: v for k, v in message.items() if k != "id"}
        if "tool_calls" in message:
            message["tool_calls"] = [
                {k: v for k, v in c.items() if k != "id"} for c in message["tool_calls"]
            ]
        out.append(message)
    return out
