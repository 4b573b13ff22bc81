"""Talk to a model server: Ollama ``/api/chat`` or an OpenAI-compatible ``/v1/chat/completions``.

The client turns wire replies into one neutral :class:`ChatReply` and wire failures into a
small set of exceptions, so later stages never see HTTP. ``httpx`` is imported lazily so that
``pytest --help`` stays fast.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_cardprobe.types import ChatReply, ChatRequest, ToolCall

if TYPE_CHECKING:
    import httpx

APIS = ("ollama", "openai")
# Ollama's ``think`` takes a boolean, or a level for models that have levels (gpt-oss).
OLLAMA_THINK: dict[str, bool | str] = {"off": False, "on": True}

# Query parameters that carry credentials (``?key=``, ``api_key``, ``access_token``, ``sig``).
_SECRET_PARAM = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session", re.I)


def redact_url(url: str) -> str:
    """``url`` without ``user:password@`` and without secret-looking query parameters.

    Every URL the plugin records or shows goes through here: a server URL typed with
    credentials must not reach a cassette, a terminal, a CI log or a report.
    """
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return "<unparsable URL>"
    kept = [(k, v) for k, v in query if not _SECRET_PARAM.search(k)]
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, urllib.parse.urlencode(kept), parts.fragment)
    )


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


# --------------------------------------------------------------------------- reply shapes
#
# A reply is checked against the shape of the API it came from before anything reads it:
# live, a wrong shape is an infra error (the server misbehaved); replayed, the cassette is
# corrupt. Either way the judge never sees garbage and no parser meets a type it did not
# expect (a ``message`` that is a string, a ``content`` that is a number).

#: JSON nested deeper than this is refused before ``json.loads`` could hit the recursion limit.
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")
CHAT_PATHS = {"/api/chat": "ollama", "/v1/chat/completions": "openai"}


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when JSON ``text`` opens more than ``limit`` arrays/objects at once (linear)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# Built once: json.loads with an option builds a decoder per call, which costs about as
# much as parsing a short reply.
_STRICT = json.JSONDecoder(parse_constant=_no_constant)


def load_json(text: str) -> Any:
    """``json.loads`` that refuses deep nesting and non-finite numbers with ValueError."""
    if too_deep(text):
        raise ValueError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    return _STRICT.decode(text)


def _type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _message_problem(message: Any, where: str, api: str, stream: bool) -> str | None:
    if not isinstance(message, dict):
        return f"{where} is {_type(message)}, not an object"
    for key in ("role", "content", "thinking", "reasoning_content"):
        value = message.get(key)
        if value is not None and not isinstance(value, str):
            return f"{where}.{key} is {_type(value)}, not a string"
    calls = message.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"{where}.tool_calls is {_type(calls)}, not a list"
    for index, call in enumerate(calls):
        at = f"{where}.tool_calls[{index}]"
        if not isinstance(call, dict):
            return f"{at} is {_type(call)}, not an object"
        fn = call.get("function")
        if not isinstance(fn, dict):
            return f"{at}.function is {_type(fn)}, not an object"
        name = fn.get("name")
        # A streamed OpenAI call sends its name once; later fragments carry only arguments.
        if not isinstance(name, str) and not (stream and api == "openai" and name is None):
            return f"{at}.function.name is {_type(name)}, not a string"
        arguments = fn.get("arguments")
        if arguments is not None and not isinstance(arguments, dict | str):
            return f"{at}.function.arguments is {_type(arguments)}, not an object or a string"
        if stream and api == "openai" and not isinstance(call.get("index", 0), int):
            return f"{at}.index is {_type(call.get('index'))}, not an integer"
    return None


def _ollama_chunk_problem(chunk: Any, where: str, stream: bool) -> str | None:
    if not isinstance(chunk, dict):
        return f"{where} is {_type(chunk)}, not an object"
    if isinstance(chunk.get("error"), str) and stream:
        return None  # an error line: the client turns it into infra
    if "message" not in chunk:
        return f"{where} has no message"
    done = chunk.get("done")
    if done is not None and not isinstance(done, bool):
        return f"{where}.done is {_type(done)}, not true or false"
    reason = chunk.get("done_reason")
    if reason is not None and not isinstance(reason, str):
        return f"{where}.done_reason is {_type(reason)}, not a string"
    return _message_problem(chunk["message"], f"{where}.message", "ollama", stream)


def _openai_chunk_problem(chunk: Any, where: str, stream: bool) -> str | None:
    if not isinstance(chunk, dict):
        return f"{where} is {_type(chunk)}, not an object"
    if "error" in chunk and stream:
        return None
    choices = chunk.get("choices")
    if not isinstance(choices, list) or (not stream and not choices):
        return f"{where}.choices is {_type(choices)}, not a non-empty list"
    part = "delta" if stream else "message"
    for index, choice in enumerate(choices):
        at = f"{where}.choices[{index}]"
        if not isinstance(choice, dict):
            return f"{at} is {_type(choice)}, not an object"
        reason = choice.get("finish_reason")
        if reason is not None and not isinstance(reason, str):
            return f"{at}.finish_reason is {_type(reason)}, not a string"
        if part not in choice:
            if stream:
                continue  # a closing chunk may carry only finish_reason
            return f"{at} has no message"
        problem = _message_problem(choice[part], f"{at}.{part}", "openai", stream)
        if problem:
            return problem
    return None


def reply_problem(api: str, stream: bool, text: str) -> str | None:
    """What is wrong with a 2xx chat reply body for ``api``, or None when it has the shape.

    ``stream`` replies are NDJSON lines (Ollama) or SSE ``data:`` events (OpenAI).
    """
    return check_reply(api, stream, text)[0]


def check_reply(api: str, stream: bool, text: str) -> tuple[str | None, Any]:
    """``(problem, body)``: :func:`reply_problem`, and a whole reply's parsed JSON (else None).

    The body comes back so that a checked reply is not parsed a second time.
    """
    if not stream:
        try:
            body = load_json(text)
        except ValueError as exc:
            return f"reply is not JSON: {exc}", None
        if api == "openai":
            return _openai_chunk_problem(body, "reply", False), body
        return _ollama_chunk_problem(body, "reply", False), body
    return _stream_problem(api, text), None


def _stream_problem(api: str, text: str) -> str | None:
    count = 0
    for number, line in enumerate(text.splitlines(), 1):
        if api == "openai":
            if not line.startswith("data:"):
                continue
            line = line[5:].strip()
            if line == "[DONE]":
                continue
        elif not line.strip():
            continue
        count += 1
        try:
            chunk = load_json(line)
        except ValueError as exc:
            return f"stream line {number} is not JSON: {exc}"
        check = _openai_chunk_problem if api == "openai" else _ollama_chunk_problem
        problem = check(chunk, f"stream line {number}", True)
        if problem:
            return problem
    if not count:
        return "stream holds no events"
    return None


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


def _decode_arguments(value: Any, object_expected: bool) -> tuple[dict[str, Any], str | None, bool]:
    """Arguments as an object, an error, and whether they came as a JSON string where the
    wire promises an object (``object_expected``: Ollama) or as a string holding another
    JSON string (double-encoded, seen from OpenAI-compatible servers)."""
    if isinstance(value, dict):
        return value, None, False
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError as exc:
            return {}, f"arguments are not valid JSON: {exc}", False
        as_string = object_expected
        if isinstance(decoded, str):
            try:
                decoded = json.loads(decoded)
            except ValueError:
                return {}, "arguments decode to str, not an object", False
            as_string = True
        if isinstance(decoded, dict):
            return decoded, None, as_string
        return {}, f"arguments decode to {type(decoded).__name__}, not an object", False
    return {}, f"arguments have type {type(value).__name__}", False


def _tool_call(entry: Any, object_expected: bool = False) -> ToolCall | None:
    if not isinstance(entry, dict):
        return None
    fn = entry.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    arguments, error, as_string = _decode_arguments(fn.get("arguments", {}), object_expected)
    call_id = entry.get("id")
    return ToolCall(
        fn["name"],
        arguments,
        error,
        id=call_id if isinstance(call_id, str) else None,
        arguments_as_string=as_string,
    )


def _ollama_call(entry: Any) -> ToolCall | None:
    return _tool_call(entry, object_expected=True)


def parse_ollama_reply(body: dict[str, Any]) -> ChatReply:
    """One ``/api/chat`` reply body (``stream:false``)."""
    if body.get("done") is False:
        # Ollama 0.11.4 can stop mid-reply (a token repeated >30 times) and answer 200 with
        # done:false: not a finished turn, so not model behaviour to judge.
        raise InfraError("reply ended with done:false (the server stopped before finishing)")
    message = body.get("message") or {}
    calls = [c for c in map(_ollama_call, message.get("tool_calls") or []) if c]
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
        calls.extend(c for c in map(_ollama_call, message.get("tool_calls") or []) if c)
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
    ids: dict[int, str] = {}
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
                if isinstance(part.get("id"), str) and part["id"]:
                    ids.setdefault(index, part["id"])
                if fn.get("name"):
                    names[index] = names.get(index, "") + fn["name"]
                fragments.setdefault(index, []).append(fn.get("arguments") or "")
            finish = choice.get("finish_reason") or finish
    if not done and finish is None:
        raise InfraError(f"SSE stream ended after {chunks} events without [DONE]")
    calls = []
    for index in sorted(set(names) | set(fragments)):
        joined = "".join(fragments.get(index, [])) or "{}"
        arguments, error, as_string = _decode_arguments(joined, object_expected=False)
        calls.append(
            ToolCall(
                names.get(index, ""),
                arguments,
                error,
                id=ids.get(index),
                arguments_as_string=as_string,
            )
        )
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
    headers: dict[str, str] = field(default_factory=dict)


# Stands in for the network in replay: (method, path, JSON body text) -> (status, body,
# the body's JSON when it is a whole 2xx reply already checked by check_reply, else None).
# None means "not replaying this request": it goes to the server (record modes once and
# stale replay some tests and record others through one client).
Player = Callable[[str, str, str], tuple[int, bytes, Any] | None]


_BODY = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_body(body: Any) -> str:
    """A request body as JSON text, written as httpx writes ``json=`` bodies."""
    return _BODY.encode(body)


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
        self.unreachable: str | None = None
        self.shown_url = redact_url(settings.base_url)
        self._player = player
        self._client: httpx.Client | None = None

    @property
    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            s = self.settings
            headers = dict(s.headers)
            if s.api_key:
                headers["Authorization"] = f"Bearer {s.api_key}"
            # A query in the server URL (``?key=...`` for a gateway) goes on every request;
            # httpx would glue it into the path if it stayed in the base URL.
            base, _, query = s.base_url.partition("?")
            self._client = httpx.Client(
                base_url=base.rstrip("/"),
                params=httpx.QueryParams(query) if query else None,
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
            # These have no Ollama equivalent in ``options`` but are part of the OpenAI
            # request; a suite or the adjust hook sets them through the options.
            for key in ("seed", "stop", "tool_choice"):
                if key in opts:
                    body[key] = opts.pop(key)
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
            if request.think != "off":
                # OpenAI's effort levels; plain "on" asks for the usual middle one.
                body["reasoning_effort"] = "medium" if request.think == "on" else request.think
            return "/v1/chat/completions", body
        body = {
            "model": request.model,
            "messages": request.messages,
            "stream": s.stream,
            "think": OLLAMA_THINK.get(request.think, request.think),
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
        """Ask once; retry infra failures a bounded number of times with backoff.

        A server that could not be reached on any attempt is not asked again in this
        session: every later call fails at once instead of spending the retries again (a
        suite against a stopped server ends in seconds, not minutes).
        """
        if self.unreachable:
            raise InfraError(
                f"not asked again (unreachable earlier in this run): {self.unreachable}"
            )
        last: InfraError | None = None
        refused = 0
        for attempt in range(self.settings.retries + 1):
            if attempt:
                self._sleep(self.settings.backoff * 2 ** (attempt - 1))
            try:
                return self._chat_once(request)
            except InfraError as exc:
                last = exc
                refused += isinstance(exc, Unreachable)
        assert last is not None
        if refused == self.settings.retries + 1:
            self.unreachable = str(last)
        # The count first: labels are cut to one line, and it says retries were made.
        raise InfraError(f"after {self.settings.retries + 1} attempts: {last}")

    def _chat_once(self, request: ChatRequest) -> ChatReply:
        path, body = self.payload(request)
        if self._player is not None:
            played = self._player("POST", path, json_body(body))
            if played is not None:
                return self._played(request, path, body, played)
        import httpx

        timeout = self.settings.timeout
        try:
            status, content, sent = self._post(path, body, time.monotonic() + timeout)
        except httpx.TimeoutException as exc:
            raise InfraError(f"timed out after {timeout:g}s: {exc!r}") from exc
        except httpx.RemoteProtocolError as exc:
            raise InfraError(f"broken reply from {self.shown_url}: {exc!r}") from exc
        except httpx.ConnectError as exc:
            raise Unreachable(f"cannot reach {self.shown_url}: {exc!r}") from exc
        except httpx.TransportError as exc:
            raise InfraError(f"cannot reach {self.shown_url}: {exc!r}") from exc
        if status >= 400:
            raise classify_http_error(
                httpx.Response(status, content=content, request=sent), request.model
            )
        text = content.decode("utf-8", "replace")
        problem, parsed = check_reply(self.settings.api, self.settings.stream, text)
        if problem:
            # Not model behaviour: a server (or proxy) that sent something else than a reply.
            raise InfraError(f"malformed reply: {problem}: {text[:120]!r}")
        return self._reply_of(text, parsed)

    def _played(
        self,
        request: ChatRequest,
        path: str,
        body: dict[str, Any],
        played: tuple[int, bytes, Any],
    ) -> ChatReply:
        # The reply's shape was checked when the cassette was read (cassettes.read_cassette
        # runs check_reply on every recorded 2xx chat reply) and comes parsed.
        status, content, parsed = played
        if status >= 400:
            import httpx

            url = redact_url(self.settings.base_url.partition("?")[0]).rstrip("/") + path
            response = httpx.Response(
                status, content=content, request=httpx.Request("POST", url, json=body)
            )
            raise classify_http_error(response, request.model)
        return self._reply_of(content.decode("utf-8", "replace"), parsed)

    def _reply_of(self, text: str, parsed: Any = None) -> ChatReply:
        """A successful reply body (whole, or a stream) for the configured API.

        ``parsed`` is the body's JSON when the caller has it already (a whole reply).
        """
        if self.settings.stream:
            lines = text.splitlines()
            if self.settings.api == "openai":
                return parse_openai_stream(lines)
            return parse_ollama_stream(lines)
        try:
            data = json.loads(text) if parsed is None else parsed
        except ValueError as exc:
            raise InfraError(f"reply is not JSON: {text[:120]!r}") from exc
        if not isinstance(data, dict):
            raise InfraError(f"reply is not a JSON object: {text[:120]!r}")
        if self.settings.api == "openai":
            return parse_openai_reply(data)
        return parse_ollama_reply(data)

    def _post(
        self, path: str, body: dict[str, Any], deadline: float
    ) -> tuple[int, bytes, httpx.Request]:
        """POST and read the whole reply by ``deadline``.

        httpx's timeout bounds each read, so a server that drips a byte at a time would
        never time out; the deadline bounds the whole reply.
        """
        import httpx

        with self._http.stream("POST", path, json=body) as response:
            chunks: list[bytes] = []
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(
                        f"the reply was still arriving after {self.settings.timeout:g}s",
                        request=response.request,
                    )
            return response.status_code, b"".join(chunks), response.request

    def capabilities(self, model: str) -> list[str] | None:
        """Ollama ``/api/show`` capabilities of ``model``; ``None`` when the server cannot say."""
        import httpx

        if self.settings.api != "ollama":
            return None
        try:
            response = self._http.post("/api/show", json={"model": model})
        except httpx.HTTPError as exc:
            raise InfraError(f"cannot reach {self.shown_url}: {exc!r}") from exc
        if response.status_code >= 400:
            raise classify_http_error(response, model)
        try:
            body = load_json(response.text)
        except ValueError as exc:
            raise InfraError(f"/api/show reply is not JSON: {exc}") from None
        caps = body.get("capabilities") if isinstance(body, dict) else None
        return [str(c) for c in caps] if isinstance(caps, list) else None


def _get_json(http: Any, method: str, path: str, body: Any = None) -> Any:
    """One request for server metadata; a transport failure or a 5xx is infra."""
    import httpx

    try:
        response = http.request(method, path, json=body)
    except httpx.HTTPError as exc:
        shown = redact_url(str(http.base_url))
        raise InfraError(f"cannot reach {shown}: {type(exc).__name__}: {exc}") from exc
    if response.status_code >= 400:
        return response
    try:
        return response.json()
    except ValueError as exc:
        raise InfraError(f"{method} {path} answered non-JSON: {response.text[:120]!r}") from exc


def model_identity(client: ChatClient, model: str) -> dict[str, str]:
    """What the server says ``model`` is: Ollama's digest, or the OpenAI-compatible model id.

    Raises :class:`ModelNotFound` when the server does not have the model and
    :class:`InfraError` when it cannot be reached.
    """
    import httpx

    http = client._http
    if client.settings.api == "openai":
        listed = _get_json(http, "GET", "/v1/models")
        if isinstance(listed, httpx.Response):
            raise classify_http_error(listed, model)
        entries = [m for m in (listed.get("data") or []) if isinstance(m, dict)]
        ids = [str(m.get("id")) for m in entries]
        if model not in ids and _single_model_llama_server(entries):
            # llama-server serves its one model whatever name a request gives (checked on
            # the real server), so the suite's name only keys the cassettes; pin the model
            # the server really answers with.
            return {"id": ids[0]}
        if model not in ids:
            raise ModelNotFound(
                f"model {model!r} is not listed by GET {client.shown_url}/v1/models "
                f"(it lists: {', '.join(ids) or 'nothing'})"
            )
        return {"id": model}
    shown = _get_json(http, "POST", "/api/show", {"model": model})
    if isinstance(shown, httpx.Response):
        error = classify_http_error(shown, model)
        if shown.status_code == 404:
            raise ModelNotFound(
                f"model {model!r} not found on {client.shown_url}; "
                f"fetch it with: ollama pull {model}"
            )
        raise error
    identity = {"name": model}
    tags = _get_json(http, "GET", "/api/tags")
    if isinstance(tags, dict):
        wanted = {model, f"{model}:latest"}
        for entry in tags.get("models") or []:
            if isinstance(entry, dict) and entry.get("name") in wanted and entry.get("digest"):
                identity["digest"] = str(entry["digest"])
                break
    return identity


def _single_model_llama_server(entries: list[dict[str, Any]]) -> bool:
    """A ``/v1/models`` listing from llama-server running one model (no router)."""
    return len(entries) == 1 and entries[0].get("owned_by") == "llamacpp"


_NS = 1e9
_MS = 1e3


def server_figures(raw: dict[str, Any]) -> dict[str, float]:
    """The server's own token counts and durations of one reply, in tokens and seconds.

    Ollama reports counts and nanosecond durations on the final body (or the final stream
    chunk); OpenAI-compatible servers report ``usage`` and llama-server adds ``timings`` in
    milliseconds. Keys: ``prompt_tokens``, ``generated_tokens``, ``prompt_s``,
    ``generate_s``, ``load_s``, ``total_s``, each only when the server gave it.
    """
    final = raw.get("final")
    body: dict[str, Any] = final if isinstance(final, dict) else raw
    figures: dict[str, float] = {}

    def put(key: str, value: Any, scale: float = 1.0) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            figures[key] = value / scale

    put("prompt_tokens", body.get("prompt_eval_count"))
    put("generated_tokens", body.get("eval_count"))
    put("prompt_s", body.get("prompt_eval_duration"), _NS)
    put("generate_s", body.get("eval_duration"), _NS)
    put("load_s", body.get("load_duration"), _NS)
    put("total_s", body.get("total_duration"), _NS)
    usage = body.get("usage")
    if isinstance(usage, dict):
        put("prompt_tokens", usage.get("prompt_tokens"))
        put("generated_tokens", usage.get("completion_tokens"))
    timings = body.get("timings")
    if isinstance(timings, dict):
        put("prompt_tokens", timings.get("prompt_n"))
        put("generated_tokens", timings.get("predicted_n"))
        put("prompt_s", timings.get("prompt_ms"), _MS)
        put("generate_s", timings.get("predicted_ms"), _MS)
        if "prompt_s" in figures and "generate_s" in figures:
            figures["total_s"] = figures["prompt_s"] + figures["generate_s"]
    return figures
