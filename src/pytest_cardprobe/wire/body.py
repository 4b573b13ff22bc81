"""A request as the wire carries it, and what stands in for the network in replay.

Both the client (which sends bodies) and the cassette backends (which match them) use
these, so they live below both.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

# Stands in for the network in replay: (method, path, JSON body text) -> (status, body,
# the body as check_reply read it when it is a 2xx reply already checked, else None: a whole
# reply's JSON, a stream's shapes.Stream).
# None means "not replaying this request": it goes to the server (record modes once and
# stale replay some tests and record others through one client).
Player = Callable[[str, str, str], tuple[int, bytes, Any] | None]

# The request a test's samples start with, as the wire carries it: (method, path, body text).
# Computed only when asked for: only record mode ``stale`` needs it, to tell whether replay
# would match the recording.
FirstRequest = Callable[[], tuple[str, str, str]]


_BODY = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_body(body: Any) -> str:
    """A request body as JSON text, written as httpx writes ``json=`` bodies."""
    return _BODY.encode(body)


def parsed_body(body: str | bytes | None) -> Any:
    """A request body as parsed JSON (key order and whitespace do not matter), else as text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        return json.loads(body) if body else None
    except (ValueError, RecursionError):
        return body


def without_call_ids(messages: Any) -> Any:
    """``messages`` with tool-call ids left out (``tool_calls[].id``, ``tool_call_id``).

    Ids are the server's labels for calls (Ollama sends them since 0.12.10, OpenAI always),
    different on every recording: what a request means does not depend on them, so neither
    a fingerprint nor a request match reads them. Anything that is not a list of message
    objects comes back as it is.
    """
    if not isinstance(messages, list):
        return messages
    kept = []
    for message in messages:
        if isinstance(message, dict) and ("tool_call_id" in message or "tool_calls" in message):
            message = {k: v for k, v in message.items() if k != "tool_call_id"}
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                message["tool_calls"] = [
                    {k: v for k, v in c.items() if k != "id"} if isinstance(c, dict) else c
                    for c in calls
                ]
        kept.append(message)
    return kept


def request_meaning(body: str | bytes | None) -> Any:
    """What a request body means, for matching: parsed JSON (key order and spacing do not
    matter) without tool-call ids; text that is not JSON stays text."""
    parsed = parsed_body(body)
    if isinstance(parsed, dict) and "messages" in parsed:
        return {**parsed, "messages": without_call_ids(parsed["messages"])}
    return parsed
