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


class ReplyRefused(InfraError):
    """A reply the client will not read (larger than its cap, compressed although the
    request asked for none, a stream past its caps): infra, but not retried, since asking
    again brings the same."""


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


class FormatUnsupported(Unsupported):
    """The server could not turn the request's ``format`` JSON Schema into a grammar (a
    keyword its conversion refuses: an unanchored ``pattern`` on Ollama 0.11.4, a ``$ref``
    that leaves the document): it cannot constrain this reply, which is no model answer."""


# What the two schema-to-grammar paths answer when a schema cannot be converted: Ollama up
# to 0.29 (cgo, ``llm/server.go``: HTTP 500) and llama.cpp's converter behind llama-server
# and Ollama 0.30 and later (HTTP 400, the converter's reason after it).
FORMAT_REFUSALS: tuple[str, ...] = (
    "invalid json schema in format",
    "json schema conversion failed",
)


class RequestRejected(ClientError):
    """Any other 4xx: the request itself is wrong."""


class CassetteProblem(Exception):
    """A recording that cannot be replayed; the message says what to do."""


class NotRecorded(CassetteProblem):
    """No cassette exists for this test."""


class StaleCassette(CassetteProblem):
    """The cassette was recorded for a different request.

    ``parts`` names the parts of the fingerprint that changed (``tools``, ``system prompt``,
    ...) when the fingerprint told; ``recorded`` and ``asked`` are the recorded request body
    and the one asked now (parsed, redacted alike) when a request was compared with the
    recording, so that whoever reports it can say in words what changed in them.
    """

    def __init__(
        self,
        message: str,
        parts: tuple[str, ...] = (),
        recorded: object = None,
        asked: object = None,
        said: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.parts = parts
        self.recorded = recorded
        self.asked = asked
        self.said = said  # what changed in words, when whoever raised it knows

    def reworded(
        self, message: str, recorded: object = None, asked: object = None
    ) -> StaleCassette:
        """The same problem in other words (a hint added), keeping what it knows; the request
        bodies given here fill in those it does not have yet."""
        return StaleCassette(
            message,
            self.parts,
            self.recorded if self.recorded is not None else recorded,
            self.asked if self.asked is not None else asked,
            self.said,
        )


class CorruptCassette(CassetteProblem):
    """The cassette file cannot be read."""


class CassetteNotWritten(CassetteProblem):
    """A recording could not be written (a full disk, a read-only folder); the cassette that
    was there before is left as it was."""


def _error_message(response: httpx.Response) -> str:
    """The server's own error text, from Ollama's or OpenAI's error shape."""
    return _message_of(response.text, response.status_code)


def _message_of(text: str, status: int) -> str:
    try:
        body = load_json(text)
    except ValueError:
        return text.strip()[:300] or f"HTTP {status}"
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
    if status in (400, 500) and any(r in lowered for r in FORMAT_REFUSALS):
        if message.startswith("{"):
            # Ollama 0.30 and later hand llama-server's error object on as their own text.
            message = _message_of(message, status)
        shown = " ".join(message.split())[:300]
        return FormatUnsupported(f"the server cannot constrain the reply to the format: {shown}")
    if status >= 500 or status == 429:
        return InfraError(f"HTTP {status} from {redact_url(str(response.request.url))}: {message}")
    if status == 404 and ("page not found" in lowered or "file not found" in lowered):
        # No such route, whatever the model: Ollama's router answers "404 page not found",
        # llama-server a JSON error "File Not Found" (both checked on the real servers).
        return RequestRejected(
            f"HTTP 404 from {redact_url(str(response.request.url))}: {message} — no such "
            "route: is the server URL its root (without /v1), and --cardprobe-api right "
            "(openai for llama-server, vLLM and other OpenAI-compatible servers)?"
        )
    if status == 404 and ("not found" in lowered or "does not exist" in lowered):
        return ModelNotFound(f"model {model!r} not found on {where}: {message}")
    if status == 400 and "does not support thinking" in lowered:
        return ThinkingUnsupported(f"{model} does not support thinking: {message}")
    if status == 400 and "does not support tools" in lowered:
        return ToolsUnsupported(f"{model} does not support tools: {message}")
    return RequestRejected(f"HTTP {status}: {message}")
