"""A request as the wire carries it, and what stands in for the network in replay.

Both the client (which sends bodies) and the cassette backends (which match them) use
these, so they live below both.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

# Stands in for the network in replay: (method, path, JSON body text) -> (status, body,
# the body's JSON when it is a whole 2xx reply already checked by check_reply, else None).
# None means "not replaying this request": it goes to the server (record modes once and
# stale replay some tests and record others through one client).
Player = Callable[[str, str, str], tuple[int, bytes, Any] | None]


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
