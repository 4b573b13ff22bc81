"""Talk to a model server: Ollama ``/api/chat`` or an OpenAI-compatible ``/v1/chat/completions``.

The client turns a request into the body of the configured API (``ollama``, ``openai``),
sends it (or hands it to a replay player), retries infra failures, and turns the reply into
one neutral :class:`ChatReply` through the parser of that API and way of travelling (whole
or streamed). ``httpx`` is imported lazily so that ``pytest --help`` stays fast.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB
from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.types import ChatReply, ChatRequest
from pytest_cardprobe.wire import ollama, openai
from pytest_cardprobe.wire.body import Player, json_body
from pytest_cardprobe.wire.deadline import CONNECT_TIMEOUT_S, Deadline
from pytest_cardprobe.wire.errors import (
    InfraError,
    ReplyRefused,
    Unreachable,
    classify_http_error,
)
from pytest_cardprobe.wire.ollama_stream import parse_ollama_stream
from pytest_cardprobe.wire.openai_stream import parse_openai_stream
from pytest_cardprobe.wire.redact import redact_url, redacted_repr
from pytest_cardprobe.wire.shapes import Stream, StreamLimits, check_reply, stream_size_problem
from pytest_cardprobe.wire.unparsed import unparsed_status

if TYPE_CHECKING:
    import httpx

APIS = ("ollama", "openai")


@dataclass(repr=False)
class ClientSettings:
    """How to reach the server and how patient to be.

    Its ``repr`` (what a traceback or a debugger shows) carries no credential: the URL goes
    through ``redact_url``, the API key and header values are redacted.
    """

    base_url: str
    api: str = "ollama"
    stream: bool = False
    timeout: float = 120.0
    retries: int = 2
    backoff: float = 0.5
    keep_alive: str = "10m"
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # The most one reply may bring, whole or streamed, as it arrives (compression refused).
    max_reply_bytes: int = DEFAULT_MAX_FILE_MB * MB
    limits: StreamLimits = field(default_factory=StreamLimits)

    __repr__ = redacted_repr


class ChatClient:
    """One connection pool per session; ``chat`` is the only call tests make."""

    def __repr__(self) -> str:
        return f"<ChatClient {self.settings.api} {self.shown_url}>"

    def __init__(
        self,
        settings: ClientSettings,
        sleep: Callable[[float], None] = time.sleep,
        player: Player | None = None,
    ):
        """``player`` stands in for HTTP: replay passes one that answers from cassettes.

        The request body is then built as live and the recorded body parsed as live, but
        neither goes through httpx, which this client then never imports (building and
        reading httpx requests cost more per test than the rest of replay).
        """
        self.settings = settings
        self._sleep = sleep
        self.unreachable: str | None = None
        self.shown_url = redact_url(settings.base_url)
        self._player = player
        self._client: httpx.Client | None = None
        self._deadline = Deadline()
        self._asked_server = False  # the last attempt went to a server, not to a player

    @property
    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            from pytest_cardprobe.wire.transport import deadline_transport

            s = self.settings
            headers = dict(s.headers)
            if s.api_key:
                headers["Authorization"] = f"Bearer {s.api_key}"
            # No compression: the transport refuses a compressed reply, whose inflated size
            # could not be bounded before vcrpy inflates it whole (a gzip bomb).
            headers = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
            headers["Accept-Encoding"] = "identity"
            # A query in the server URL (``?key=...`` for a gateway) goes on every request;
            # httpx would glue it into the path if it stayed in the base URL.
            base, _, query = s.base_url.partition("?")
            self._client = httpx.Client(
                base_url=base.rstrip("/"),
                params=httpx.QueryParams(query) if query else None,
                timeout=httpx.Timeout(s.timeout, connect=min(CONNECT_TIMEOUT_S, s.timeout)),
                headers=headers,
                # Only the scheme and host matter there (for a proxy); no credential.
                transport=deadline_transport(self._deadline, redact_url(base), s.max_reply_bytes),
            )
        return self._client

    def send(self, method: str, path: str, body: Any = None) -> httpx.Response:
        """One exchange with the server, its reply read whole, within the request timeout.

        The timeout is a deadline for the whole exchange (connecting, sending, the reply's
        head and every byte of its body or stream), not a bound on each read; a transport
        failure is an :class:`InfraError` (:class:`Unreachable` when nothing answered).
        """
        import httpx

        http = self._http
        timeout = self.settings.timeout
        started = time.monotonic()
        try:
            with self._deadline.running(timeout):
                return http.request(method, path, json=body)
        except httpx.TimeoutException as exc:
            connect = min(CONNECT_TIMEOUT_S, timeout)
            if isinstance(exc, httpx.ConnectTimeout) and time.monotonic() - started < timeout:
                raise InfraError(
                    f"timed out connecting to {self.shown_url} (connect timeout {connect:g} s)"
                ) from exc
            raise InfraError(
                f"timed out: the exchange with {self.shown_url} exceeded the {timeout:g} s "
                f"request deadline ({type(exc).__name__}: {exc})"
            ) from exc
        except httpx.RemoteProtocolError as exc:
            raise InfraError(f"broken reply from {self.shown_url}: {exc!r}") from exc
        except httpx.ConnectError as exc:
            raise Unreachable(f"cannot reach {self.shown_url}: {exc!r}") from exc
        except httpx.TransportError as exc:
            raise InfraError(f"cannot reach {self.shown_url}: {exc!r}") from exc

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None

    @property
    def chat_path(self) -> str:
        """The chat path of the configured API."""
        return openai.PATH if self.settings.api == "openai" else ollama.PATH

    def payload(self, request: ChatRequest) -> tuple[str, dict[str, Any]]:
        """Path and JSON body for ``request`` on the configured API."""
        s = self.settings
        if s.api == "openai":
            return self.chat_path, openai.openai_body(request, stream=s.stream)
        return self.chat_path, ollama.ollama_body(request, stream=s.stream, keep_alive=s.keep_alive)

    def wire_request(self, request: ChatRequest) -> tuple[str, str, str]:
        """``request`` as the wire carries it: method, path and body text (what a replay
        player is handed and what a recording's body is compared with)."""
        path, body = self.payload(request)
        return "POST", path, json_body(body)

    def played_text(self, request: ChatRequest) -> str | None:
        """The body text of ``request`` as a replay player is handed it (what :meth:`chat`
        takes as ``wire``), or None when this client has no player and sends to a server."""
        if self._player is None:
            return None
        return self.wire_request(request)[2]

    def chat(self, request: ChatRequest, wire: str | None = None) -> ChatReply:
        """Ask once; retry infra failures a bounded number of times with backoff.

        A server that could not be reached on any attempt is not asked again in this
        session: every later call fails at once instead of spending the retries again (a
        suite against a stopped server ends in seconds, not minutes).

        ``wire`` is :meth:`played_text` of ``request``, when the caller asks one request
        several times and has written it once: the player is handed it instead of the body
        being written again. The caller vouches that ``request`` has not changed since.
        """
        if self.unreachable:
            raise InfraError(
                f"not asked again (unreachable earlier in this run): {self.unreachable}"
            )
        last: InfraError | None = None
        refused = tries = 0
        for attempt in range(self.settings.retries + 1):
            if attempt and self._asked_server:
                # The backoff gives a server time; a failed attempt a cassette holds replays
                # at once (replay never waits).
                self._sleep(self.settings.backoff * 2 ** (attempt - 1))
            self._asked_server = False
            tries += 1
            try:
                return self._chat_once(request, wire)
            except ReplyRefused as exc:
                last = exc
                break  # the same reply again: not retried
            except InfraError as exc:
                last = exc
                refused += isinstance(exc, Unreachable)
        assert last is not None
        if refused == self.settings.retries + 1:
            self.unreachable = str(last)
        # The count first: labels are cut to one line, and it says retries were made.
        raise InfraError(f"after {tries} attempt{'s' if tries > 1 else ''}: {last}")

    def _chat_once(self, request: ChatRequest, wire: str | None = None) -> ChatReply:
        body: dict[str, Any] | None = None
        if self._player is not None:
            # With the body written already, replay needs only the path.
            path = self.chat_path
            if wire is None:
                path, body = self.payload(request)
                wire = json_body(body)
            played = self._player("POST", path, wire)
            if played is not None:
                return self._played(request, path, played)
        if body is None:
            path, body = self.payload(request)
        self._asked_server = True
        response = self.send("POST", path, body)
        if response.status_code >= 400:
            return self._error_reply(request, response)
        try:
            text = response.content.decode("utf-8")
        except UnicodeDecodeError as exc:
            # Both APIs send UTF-8 (JSON, NDJSON, SSE); a recording of other bytes would not
            # replay (the cassette reader refuses them), so this is the server's fault here.
            raise InfraError(
                f"malformed reply: not UTF-8 ({exc.reason} at byte {exc.start}): "
                f"{response.content[:120]!r}"
            ) from None
        s = self.settings
        too_long = stream_size_problem(s.api, text, s.limits) if s.stream else None
        if too_long:
            raise ReplyRefused(f"reply refused: {too_long}")
        problem, parsed = check_reply(s.api, s.stream, text, s.limits)
        if problem:
            # Not model behaviour: a server (or proxy) that sent something else than a reply.
            raise InfraError(f"malformed reply: {problem}: {text[:120]!r}")
        return self._reply_of(text, parsed)

    def _played(self, request: ChatRequest, path: str, played: tuple[int, bytes, Any]) -> ChatReply:
        # The reply's shape was checked when the cassette was read (cassettes.read_cassette
        # runs check_reply on every recorded 2xx chat reply) and comes read: a whole reply's
        # JSON, a stream's Stream.
        status, content, parsed = played
        if status >= 400:
            import httpx

            url = redact_url(self.settings.base_url.partition("?")[0]).rstrip("/") + path
            body = self.payload(request)[1]
            response = httpx.Response(
                status, content=content, request=httpx.Request("POST", url, json=body)
            )
            return self._error_reply(request, response)
        return self._reply_of(content.decode("utf-8", "replace"), parsed)

    def _error_reply(self, request: ChatRequest, response: httpx.Response) -> ChatReply:
        """The reply of an error status: a tool call the server could not parse is the
        model's turn (``unparsed``, never retried); any other error is raised, classified."""
        unparsed = unparsed_status(response.status_code, response.content)
        if unparsed is None:
            raise classify_http_error(response, request.model)
        return ChatReply(content="", unparsed=unparsed, raw={"status": response.status_code})

    def _reply_of(self, text: str, parsed: Any = None) -> ChatReply:
        """A successful reply body (whole, or a stream) for the configured API.

        ``parsed`` is the body as :func:`check_reply` read it, when the caller has it already
        (a whole reply's JSON, a stream's :class:`Stream`).
        """
        s = self.settings
        if s.stream:
            if not isinstance(parsed, Stream):  # a player that hands the body unread
                problem, parsed = check_reply(s.api, True, text, s.limits)
                if problem:
                    raise InfraError(f"malformed reply: {problem}: {text[:120]!r}")
            if s.api == "openai":
                return parse_openai_stream(parsed)
            return parse_ollama_stream(parsed)
        try:
            data = json.loads(text) if parsed is None else parsed
        except ValueError as exc:
            raise InfraError(f"reply is not JSON: {text[:120]!r}") from exc
        if not isinstance(data, dict):
            raise InfraError(f"reply is not a JSON object: {text[:120]!r}")
        if self.settings.api == "openai":
            return openai.parse_openai_reply(data)
        return ollama.parse_ollama_reply(data)

    def capabilities(self, model: str) -> list[str] | None:
        """Ollama ``/api/show`` capabilities of ``model``; ``None`` when the server cannot say."""
        if self.settings.api != "ollama":
            return None
        response = self.send("POST", "/api/show", {"model": model})
        if response.status_code >= 400:
            raise classify_http_error(response, model)
        try:
            body = load_json(response.text)
        except ValueError as exc:
            raise InfraError(f"/api/show reply is not JSON: {exc}") from None
        caps = body.get("capabilities") if isinstance(body, dict) else None
        return [str(c) for c in caps] if isinstance(caps, list) else None
