"""Every error the wire reports, and which of them an HTTP failure is.

Client errors say whose problem a failed call is (the server's, the model's, the request's);
cassette problems say why a recording cannot be replayed. Both live here, below the client
and the cassette backends, so that neither has to import the other for its error types.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.wire.redact import redact_url

if TYPE_CHECKING:
    import httpx


class ClientError(Exception):
    """Base of every failure the client reports."""


class InfraError(ClientError):
    """Server error, timeout or refused connection: never the model's fault; retried."""


class Unreachable(InfraError):
    """Nothing answered at the server's address (connection refused, unknown host)."""


class ModelNotFound(ClientError):
    """The server does not know the model (HTTP 404)."""


class Unsupported(ClientError):
    """The model cannot do what the request asks for (tools, thinking): not a wrong answer."""


class ToolsUnsupported(Unsupported):
    """The server refuses tools for this model (HTTP 400 ``does not support tools``)."""


class ThinkingUnsupported(Unsupported):
    """The server refuses ``think`` for this model (Ollama: 400 ``does not support thinking``)."""


class RequestRejected(ClientError):
    """Any other 4xx: the request itself is wrong."""


class CassetteProblem(Exception):
    """A recording that cannot be replayed; the message says what to do."""


class NotRecorded(CassetteProblem):
    """No cassette exists for this test."""


class StaleCassette(CassetteProblem):
    """The cassette was recorded for a different request."""


class CorruptCassette(CassetteProblem):
    """The cassette file cannot be read."""


def _error_message(response: httpx.Response) -> str:
    """The server's own error text, from Ollama's or OpenAI's error shape."""
    try:
        body = load_json(response.text)
    except ValueError:
        return response.text.strip()[:300] or f"HTTP {response.status_code}"
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            err = err.get("message")
        if isinstance(err, str):
            return err
        if isinstance(body.get("message"), str):  # vLLM's flat error shape
            return str(body["message"])
    return json.dumps(body)[:300]


def classify_http_error(response: httpx.Response, model: str) -> ClientError:
    """Map a non-2xx response to the exception that says whose problem it is."""
    status = response.status_code
    message = _error_message(response)
    lowered = message.lower()
    where = response.request.url.netloc.decode("ascii", "replace")
    if status >= 500 or status == 429:
        return InfraError(f"HTTP {status} from {redact_url(str(response.request.url))}: {message}")
    if status == 404 and "page not found" in lowered:
        return RequestRejected(
            f"HTTP 404 from {redact_url(str(response.request.url))}: {message} — "
            "is the server URL or --api right?"
        )
    if status == 404 and ("not found" in lowered or "does not exist" in lowered):
        return ModelNotFound(f"model {model!r} not found on {where}: {message}")
    if status == 400 and "does not support thinking" in lowered:
        return ThinkingUnsupported(f"{model} does not support thinking: {message}")
    if status == 400 and "does not support tools" in lowered:
        return ToolsUnsupported(f"{model} does not support tools: {message}")
    return RequestRejected(f"HTTP {status}: {message}")
