"""Talk to a model server: Ollama ``/api/chat`` or an OpenAI-compatible ``/v1/chat/completions``.

The client turns wire replies into one neutral :class:`ChatReply` and wire failures into a
small set of exceptions, so later stages never see HTTP. ``httpx`` is imported lazily so that
``pytest --help`` stays fast.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_cardprobe.types import ChatReply, ChatRequest, ToolCall

if TYPE_CHECKING:
    import httpx

APIS = ("ollama", "openai")


class ClientError(Exception):
    """Base of every failure the client reports."""


class InfraError(ClientError):
    """Server error, timeout or refused connection: never the model's fault; retried."""


class ModelNotFound(ClientError):
    """The server does not know the model (HTTP 404)."""


class ToolsUnsupported(ClientError):
    """The server refuses tools for this model (HTTP 400 ``does not support tools``)."""


class RequestRejected(ClientError):
    """Any other 4xx: the request itself is wrong."""


def _error_message(response: httpx.Response) -> str:
    """The server's own error text, from Ollama's or OpenAI's error shape."""
    try:
        body = response.json()
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
        return InfraError(f"HTTP {status} from {response.request.url}: {message}")
    if status == 404 and "page not found" in lowered:
        return RequestRejected(
            f"HTTP 404 from {response.request.url}: {message} — is the server URL or --api right?"
        )
    if status == 404 and ("not found" in lowered or "does not exist" in lowered):
        return ModelNotFound(f"model {model!r} not found on {where}: {message}")
    if status == 400 and "does not support tools" in lowered:
        return ToolsUnsupported(f"{model} does not support tools: {message}")
    return RequestRejected(f"HTTP {status}: {message}")


def _decode_arguments(value: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(value, dict):
        return value, None
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError as exc:
            return {}, f"arguments are not valid JSON: {exc}"
        if isinstance(decoded, dict):
            return decoded, None
        return {}, f"arguments decode to {type(decoded).__name__}, not an object"
    return {}, f"arguments have type {type(value).__name__}"


def _tool_call(entry: Any) -> ToolCall | None:
    if not isinstance(entry, dict):
        return None
    fn = entry.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    arguments, error = _decode_arguments(fn.get("arguments", {}))
    return ToolCall(fn["name"], arguments, error)


def parse_ollama_reply(body: dict[str, Any]) -> ChatReply:
    """One ``/api/chat`` reply body (``stream:false``)."""
    if body.get("done") is False:
        # Ollama 0.11.4 can stop mid-reply (a token repeated >30 times) and answer 200 with
        # done:false: not a finished turn, so not model behaviour to judge.
        raise InfraError("reply ended with done:false (the server stopped before finishing)")
    message = body.get("message") or {}
    calls = [c for c in map(_tool_call, message.get("tool_calls") or []) if c]
    return ChatReply(
        content=message.get("content") or "",
        thinking=message.get("thinking") or "",
        tool_calls=tuple(calls),
        finish_reason=body.get("done_reason"),
        raw=body,
    )


def parse_ollama_stream(lines: Iterable[str]) -> ChatReply:
    """Assemble an NDJSON ``/api/chat`` stream; calls may come in any chunk, the final included."""
    content: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    last: dict[str, Any] = {}
    chunks = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            chunk = json.loads(line)
        except ValueError as exc:
            raise InfraError(f"stream line {chunks + 1} is not JSON: {line[:80]!r}") from exc
        if not isinstance(chunk, dict):
            raise InfraError(f"stream line {chunks + 1} is not a JSON object: {line[:80]!r}")
        chunks += 1
        if "error" in chunk:
            raise InfraError(f"error inside stream after {chunks - 1} chunks: {chunk['error']}")
        message = chunk.get("message") or {}
        content.append(message.get("content") or "")
        thinking.append(message.get("thinking") or "")
        calls.extend(c for c in map(_tool_call, message.get("tool_calls") or []) if c)
        last = chunk
    if not last.get("done"):
        raise InfraError(f"stream ended after {chunks} chunks without done:true")
    return ChatReply(
        content="".join(content),
        thinking="".join(thinking),
        tool_calls=tuple(calls),
        finish_reason=last.get("done_reason"),
        raw={"chunks": chunks, "final": last},
    )


def parse_openai_reply(body: dict[str, Any]) -> ChatReply:
    """One ``/v1/chat/completions`` reply body; arguments arrive as a JSON string."""
    choices = body.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    calls = [c for c in map(_tool_call, message.get("tool_calls") or []) if c]
    return ChatReply(
        content=message.get("content") or "",
        thinking=message.get("reasoning_content") or "",
        tool_calls=tuple(calls),
        finish_reason=choice.get("finish_reason"),
        raw=body,
    )


def parse_openai_stream(lines: Iterable[str]) -> ChatReply:
    """Assemble an SSE stream, joining argument fragments per tool-call index."""
    content: list[str] = []
    thinking: list[str] = []
    names: dict[int, str] = {}
    fragments: dict[int, list[str]] = {}
    finish: str | None = None
    chunks = 0
    done = False
    for line in lines:
        if line.startswith("error:"):
            # llama-server reports a failure after the stream started as an `error:` event.
            raise InfraError(f"error inside stream after {chunks} events: {line[6:].strip()}")
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise InfraError(f"SSE event {chunks + 1} is not JSON: {data[:80]!r}") from exc
        if not isinstance(chunk, dict):
            raise InfraError(f"SSE event {chunks + 1} is not a JSON object: {data[:80]!r}")
        chunks += 1
        if "error" in chunk:
            raise InfraError(f"error inside stream after {chunks - 1} events: {chunk['error']}")
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            thinking.append(delta.get("reasoning_content") or "")
            for part in delta.get("tool_calls") or []:
                index = int(part.get("index", 0))
                fn = part.get("function") or {}
                if fn.get("name"):
                    names[index] = names.get(index, "") + fn["name"]
                fragments.setdefault(index, []).append(fn.get("arguments") or "")
            finish = choice.get("finish_reason") or finish
    if not done and finish is None:
        raise InfraError(f"SSE stream ended after {chunks} events without [DONE]")
    calls = []
    for index in sorted(set(names) | set(fragments)):
        arguments, error = _decode_arguments("".join(fragments.get(index, [])) or "{}")
        calls.append(ToolCall(names.get(index, ""), arguments, error))
    return ChatReply(
        content="".join(content),
        thinking="".join(thinking),
        tool_calls=tuple(calls),
        finish_reason=finish,
        raw={"chunks": chunks},
    )


@dataclass
class ClientSettings:
    """How to reach the server and how patient to be."""

    base_url: str
    api: str = "ollama"
    stream: bool = False
    timeout: float = 120.0
    retries: int = 2
    backoff: float = 0.5
    keep_alive: str = "10m"
    api_key: str | None = None


# Stands in for the network in replay: (method, path, JSON body text) -> (status, body).
Player = Callable[[str, str, str], tuple[int, bytes]]


def json_body(body: Any) -> str:
    """A request body as JSON text, written as httpx writes ``json=`` bodies."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class ChatClient:
    """One connection pool per session; ``chat`` is the only call tests make."""

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
        self._player = player
        self._client: httpx.Client | None = None

    @property
    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            s = self.settings
            headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
            self._client = httpx.Client(
                base_url=s.base_url.rstrip("/"),
                timeout=httpx.Timeout(s.timeout, connect=min(10.0, s.timeout)),
                headers=headers,
            )
        return self._client

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def payload(self, request: ChatRequest) -> tuple[str, dict[str, Any]]:
        """Path and JSON body for ``request`` on the configured API."""
        s = self.settings
        if s.api == "openai":
            body: dict[str, Any] = {
                "model": request.model,
                "messages": request.messages,
                "stream": s.stream,
            }
            opts = dict(request.options)
            if "temperature" in opts:
                body["temperature"] = opts.pop("temperature")
            if "num_predict" in opts:
                body["max_tokens"] = opts.pop("num_predict")
            if "seed" in opts:
                body["seed"] = opts.pop("seed")
            fmt = opts.pop("format", None)
            if fmt == "json":
                body["response_format"] = {"type": "json_object"}
            elif isinstance(fmt, dict):
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "reply", "schema": fmt},
                }
            if request.tools:
                body["tools"] = request.tools
            return "/v1/chat/completions", body
        body = {
            "model": request.model,
            "messages": request.messages,
            "stream": s.stream,
            "think": False,
            "keep_alive": s.keep_alive,
            "options": dict(request.options),
        }
        fmt = body["options"].pop("format", None)
        if fmt is not None:
            body["format"] = fmt
        if request.tools:
            body["tools"] = request.tools
        return "/api/chat", body

    def chat(self, request: ChatRequest) -> ChatReply:
        """Ask once; retry infra failures a bounded number of times with backoff."""
        last: InfraError | None = None
        for attempt in range(self.settings.retries + 1):
            if attempt:
                self._sleep(self.settings.backoff * 2 ** (attempt - 1))
            try:
                return self._chat_once(request)
            except InfraError as exc:
                last = exc
        assert last is not None
        raise InfraError(f"{last} (after {self.settings.retries + 1} attempts)")

    def _chat_once(self, request: ChatRequest) -> ChatReply:
        path, body = self.payload(request)
        if self._player is not None:
            return self._played(request, path, body, self._player)
        import httpx

        try:
            response = self._http.post(path, json=body)
        except httpx.TimeoutException as exc:
            raise InfraError(f"timed out after {self.settings.timeout:g}s: {exc!r}") from exc
        except httpx.TransportError as exc:
            raise InfraError(f"cannot reach {self.settings.base_url}: {exc!r}") from exc
        if response.status_code >= 400:
            raise classify_http_error(response, request.model)
        return self._reply_of(response.text)

    def _played(
        self, request: ChatRequest, path: str, body: dict[str, Any], player: Player
    ) -> ChatReply:
        status, content = player("POST", path, json_body(body))
        if status >= 400:
            import httpx

            url = self.settings.base_url.rstrip("/") + path
            response = httpx.Response(
                status, content=content, request=httpx.Request("POST", url, json=body)
            )
            raise classify_http_error(response, request.model)
        return self._reply_of(content.decode("utf-8", "replace"))

    def _reply_of(self, text: str) -> ChatReply:
        """Parse a successful reply body (whole, or a stream) for the configured API."""
        if self.settings.stream:
            lines = text.splitlines()
            if self.settings.api == "openai":
                return parse_openai_stream(lines)
            return parse_ollama_stream(lines)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InfraError(f"reply is not JSON: {text[:120]!r}") from exc
        if not isinstance(data, dict):
            raise InfraError(f"reply is not a JSON object: {text[:120]!r}")
        if self.settings.api == "openai":
            return parse_openai_reply(data)
        return parse_ollama_reply(data)

    def capabilities(self, model: str) -> list[str] | None:
        """Ollama ``/api/show`` capabilities of ``model``; ``None`` when the server cannot say."""
        import httpx

        if self.settings.api != "ollama":
            return None
        try:
            response = self._http.post("/api/show", json={"model": model})
        except httpx.HTTPError as exc:
            raise InfraError(f"cannot reach {self.settings.base_url}: {exc!r}") from exc
        if response.status_code >= 400:
            raise classify_http_error(response, model)
        caps = response.json().get("capabilities")
        return [str(c) for c in caps] if isinstance(caps, list) else None
