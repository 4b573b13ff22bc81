"""The model-server client: request bodies, error mapping, retries and reply assembly.

HTTP is mocked with respx; real-server behaviour is covered by the live tests. Wire shapes
follow docs/design.md §7.
"""

from __future__ import annotations

import functools
import json
import re
import ssl
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import respx
from hypothesis import given, settings
from hypothesis import strategies as st
from streams import streamed

from pytest_cardprobe.types import ChatReply, ChatRequest, ToolCall
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.errors import (
    ClientError,
    InfraError,
    ModelNotFound,
    RequestRejected,
    ToolsUnsupported,
)
from pytest_cardprobe.wire.identity import model_identity
from pytest_cardprobe.wire.ollama import parse_ollama_reply
from pytest_cardprobe.wire.ollama_stream import parse_ollama_stream
from pytest_cardprobe.wire.openai import parse_openai_reply
from pytest_cardprobe.wire.openai_stream import parse_openai_stream
from pytest_cardprobe.wire.shapes import read_stream

BASE = "http://model-server.test:11434"
MODEL = "ghost-model:1b"
CARD_TOOL = "render_adaptive_card"
TOOL = {
    "type": "function",
    "function": {
        "name": CARD_TOOL,
        "description": "Show an Adaptive Card.",
        "parameters": {
            "type": "object",
            "properties": {"body": {"type": "array"}},
            "required": ["body"],
        },
    },
}
MESSAGES = [
    {"role": "system", "content": "You render cards."},
    {"role": "user", "content": "Ask for a date."},
]
OPTIONS = {"temperature": 0, "num_ctx": 4096, "num_predict": 256, "seed": 7}
CHAT_PATH = {"ollama": "/api/chat", "openai": "/v1/chat/completions"}

OLLAMA_OK = {
    "model": MODEL,
    "message": {"role": "assistant", "content": "Hello"},
    "done": True,
    "done_reason": "stop",
}
OPENAI_OK = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello"},
            "finish_reason": "stop",
        }
    ],
}
OK_BODY = {"ollama": OLLAMA_OK, "openai": OPENAI_OK}


def make_request(*, tools: list[dict[str, Any]] | None = None, **options: Any) -> ChatRequest:
    return ChatRequest(
        model=MODEL,
        messages=[dict(m) for m in MESSAGES],
        tools=list(tools or []),
        options={**OPTIONS, **options},
    )


MakeClient = Callable[..., tuple[ChatClient, list[float]]]

# httpx loads the certifi bundle into a new SSL context for every Client (~0.15 s each). All
# URLs here are plain http and mocked, so clients share one context that loads nothing.
_SHARED_SSL = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@pytest.fixture
def make_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeClient]:
    """Build clients whose ``sleep`` only records the backoff delays it was asked for."""
    monkeypatch.setattr(httpx, "Client", functools.partial(httpx.Client, verify=_SHARED_SSL))
    clients: list[ChatClient] = []

    def build(api: str = "ollama", **overrides: Any) -> tuple[ChatClient, list[float]]:
        delays: list[float] = []
        client = ChatClient(
            ClientSettings(base_url=BASE, api=api, **overrides), sleep=delays.append
        )
        clients.append(client)
        return client, delays

    yield build
    for client in clients:
        client.close()


@pytest.fixture
def server() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


def sent_body(route: respx.Route) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(route.calls.last.request.content)
    return body


# ------------------------------------------------------------------------------------------
# payload
# ------------------------------------------------------------------------------------------


class TestOllamaPayload:
    def test_path_and_body(self, make_client: MakeClient) -> None:
        client, _ = make_client("ollama", keep_alive="3m")
        path, body = client.payload(make_request(tools=[TOOL], format="json"))
        assert path == "/api/chat"
        assert body == {
            "model": MODEL,
            "messages": MESSAGES,
            "stream": False,
            "think": False,
            "keep_alive": "3m",
            "options": {"temperature": 0, "num_ctx": 4096, "num_predict": 256, "seed": 7},
            "format": "json",
            "tools": [TOOL],
        }

    def test_no_tools_and_no_format_when_not_asked(self, make_client: MakeClient) -> None:
        client, _ = make_client("ollama")
        _, body = client.payload(make_request())
        assert "tools" not in body
        assert "format" not in body
        assert "format" not in body["options"]

    def test_schema_format_is_moved_as_is(self, make_client: MakeClient) -> None:
        schema = {"type": "object", "properties": {"body": {"type": "array"}}}
        client, _ = make_client("ollama")
        _, body = client.payload(make_request(format=schema))
        assert body["format"] == schema
        assert "format" not in body["options"]

    def test_stream_setting_is_sent(self, make_client: MakeClient) -> None:
        client, _ = make_client("ollama", stream=True)
        assert client.payload(make_request())[1]["stream"] is True

    def test_request_options_are_not_mutated(self, make_client: MakeClient) -> None:
        client, _ = make_client("ollama")
        request = make_request(format="json")
        client.payload(request)
        assert request.options == {**OPTIONS, "format": "json"}


class TestOpenAIPayload:
    def test_path_and_body(self, make_client: MakeClient) -> None:
        client, _ = make_client("openai")
        path, body = client.payload(make_request(tools=[TOOL], format="json"))
        assert path == "/v1/chat/completions"
        # num_ctx has no OpenAI equivalent and is dropped; no Ollama-only keys are sent.
        assert body == {
            "model": MODEL,
            "messages": MESSAGES,
            "stream": False,
            "temperature": 0,
            "max_tokens": 256,
            "seed": 7,
            "response_format": {"type": "json_object"},
            "tools": [TOOL],
        }

    def test_stop_and_tool_choice_travel_at_the_top(self, make_client: MakeClient) -> None:
        client, _ = make_client("openai")
        _, body = client.payload(make_request(stop=["</tool_call>"], tool_choice="required"))
        assert body["stop"] == ["</tool_call>"] and body["tool_choice"] == "required"

    def test_max_tokens_given_by_its_openai_name_is_sent(self, make_client: MakeClient) -> None:
        # options={"max_tokens": 60} was dropped with the Ollama-only keys: llama-server then
        # generated without a cap and a one-case live run timed out three times (3 x 120 s).
        client, _ = make_client("openai")
        _, body = client.payload(make_request(max_tokens=60))
        assert body["max_tokens"] == 60

    def test_no_tools_and_no_response_format_when_not_asked(self, make_client: MakeClient) -> None:
        client, _ = make_client("openai")
        _, body = client.payload(make_request())
        assert "tools" not in body
        assert "response_format" not in body
        assert "options" not in body

    def test_request_options_are_not_mutated(self, make_client: MakeClient) -> None:
        client, _ = make_client("openai")
        request = make_request(format="json")
        client.payload(request)
        assert request.options == {**OPTIONS, "format": "json"}


def test_api_key_is_sent_as_bearer_token(make_client: MakeClient, server: respx.MockRouter) -> None:
    route = server.post("/v1/chat/completions").respond(200, json=OPENAI_OK)
    client, _ = make_client("openai", api_key="sk-local")
    client.chat(make_request())
    assert route.calls.last.request.headers["Authorization"] == "Bearer sk-local"


def test_chat_posts_the_payload(make_client: MakeClient, server: respx.MockRouter) -> None:
    route = server.post("/api/chat").respond(200, json=OLLAMA_OK)
    client, _ = make_client("ollama")
    request = make_request(tools=[TOOL])
    client.chat(request)
    assert sent_body(route) == client.payload(request)[1]


# ------------------------------------------------------------------------------------------
# error mapping and retries
# ------------------------------------------------------------------------------------------

OLLAMA_NOT_FOUND = {"error": f'model "{MODEL}" not found, try pulling it first'}
OLLAMA_NO_TOOLS = {"error": f"registry.ollama.ai/library/{MODEL} does not support tools"}


def openai_error(message: str, kind: str) -> dict[str, Any]:
    """The error shape of Ollama's /v1 (and OpenAI's): the text sits in error.message."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


@pytest.mark.parametrize(
    ("api", "status", "body", "expected"),
    [
        pytest.param("ollama", 404, OLLAMA_NOT_FOUND, ModelNotFound, id="ollama-404"),
        pytest.param(
            "openai",
            404,
            openai_error(OLLAMA_NOT_FOUND["error"], "not_found_error"),
            ModelNotFound,
            id="openai-404",
        ),
        pytest.param("ollama", 400, OLLAMA_NO_TOOLS, ToolsUnsupported, id="ollama-no-tools"),
        pytest.param(
            "openai",
            400,
            openai_error(OLLAMA_NO_TOOLS["error"], "invalid_request_error"),
            ToolsUnsupported,
            id="openai-no-tools",
        ),
        pytest.param(
            "ollama", 400, {"error": "invalid options: num_ctx"}, RequestRejected, id="ollama-400"
        ),
        pytest.param(
            "openai",
            400,
            openai_error("messages is required", "invalid_request_error"),
            RequestRejected,
            id="openai-400",
        ),
        pytest.param("ollama", 422, {"detail": "unprocessable"}, RequestRejected, id="422"),
    ],
)
def test_client_errors_are_mapped_and_not_retried(
    make_client: MakeClient,
    server: respx.MockRouter,
    api: str,
    status: int,
    body: dict[str, Any],
    expected: type[ClientError],
) -> None:
    route = server.post(CHAT_PATH[api]).respond(status, json=body)
    client, delays = make_client(api, retries=2)
    with pytest.raises(expected) as info:
        client.chat(make_request(tools=[TOOL]))
    assert type(info.value) is expected
    assert route.call_count == 1
    assert delays == []


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_model_not_found_names_the_model(
    make_client: MakeClient, server: respx.MockRouter, api: str
) -> None:
    body = OLLAMA_NOT_FOUND
    if api == "openai":
        body = openai_error(OLLAMA_NOT_FOUND["error"], "not_found_error")
    server.post(CHAT_PATH[api]).respond(404, json=body)
    client, _ = make_client(api)
    with pytest.raises(ModelNotFound, match=re.escape(repr(MODEL))):
        client.chat(make_request())


def test_request_rejected_carries_the_server_text(
    make_client: MakeClient, server: respx.MockRouter
) -> None:
    server.post("/api/chat").respond(400, json={"error": "invalid options: num_ctx"})
    client, _ = make_client("ollama")
    with pytest.raises(RequestRejected, match=r"HTTP 400: invalid options: num_ctx"):
        client.chat(make_request())


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            openai_error(f"The model `{MODEL}` does not exist.", "NotFoundError"), id="nested"
        ),
        pytest.param(
            {
                "object": "error",
                "message": f"The model `{MODEL}` does not exist.",
                "type": "NotFoundError",
                "param": None,
                "code": 404,
            },
            id="flat",
        ),
    ],
)
def test_vllm_unknown_model_is_model_not_found(
    make_client: MakeClient, server: respx.MockRouter, body: dict[str, Any]
) -> None:
    server.post("/v1/chat/completions").respond(404, json=body)
    client, _ = make_client("openai")
    with pytest.raises(ModelNotFound):
        client.chat(make_request())


# The listing shapes below are those the real servers print (llama-server marks its one
# model ``owned_by: llamacpp``; vLLM and Ollama's /v1 list every model they serve).
LLAMA_SERVER_LISTING = {"object": "list", "data": [{"id": "served-alias", "owned_by": "llamacpp"}]}
MULTI_LISTING = {
    "object": "list",
    "data": [{"id": "a:1b", "owned_by": "library"}, {"id": "b:1b", "owned_by": "library"}],
}


@pytest.mark.parametrize(
    ("listing", "asked", "pinned"),
    [
        # llama-server with one model answers any name: the served alias is pinned.
        (LLAMA_SERVER_LISTING, "name-the-suite-uses", "served-alias"),
        (MULTI_LISTING, "b:1b", "b:1b"),
    ],
    ids=["single-model-llama-server", "listed"],
)
def test_the_model_a_server_answers_with_is_pinned(
    make_client: MakeClient,
    server: respx.MockRouter,
    listing: dict[str, Any],
    asked: str,
    pinned: str,
) -> None:
    server.get("/v1/models").respond(200, json=listing)
    client, _ = make_client("openai")
    assert model_identity(client, asked) == {"id": pinned}


@pytest.mark.parametrize(
    "listing",
    [
        MULTI_LISTING,
        {"data": [{"id": "only:1b", "owned_by": "vllm"}]},
        {"data": [{"id": "x", "owned_by": "llamacpp"}, {"id": "y", "owned_by": "llamacpp"}]},
    ],
    ids=["several-models", "vllm-one-model", "llama-router"],
)
def test_an_unlisted_model_elsewhere_is_not_found_naming_what_is_listed(
    make_client: MakeClient, server: respx.MockRouter, listing: dict[str, Any]
) -> None:
    server.get("/v1/models").respond(200, json=listing)
    client, _ = make_client("openai")
    with pytest.raises(ModelNotFound, match=r"is not listed by GET .*/v1/models \(it lists: "):
        model_identity(client, "missing:7b")


@pytest.mark.parametrize(
    ("path", "text"),
    [("/v1/models", "[]"), ("/v1/models", '{"data": 5}'), ("/v1/models", '{"data": "x"}')],
    ids=["a-list", "data-a-number", "data-a-string"],
)
def test_a_model_listing_of_the_wrong_shape_lists_nothing(
    make_client: MakeClient, server: respx.MockRouter, path: str, text: str
) -> None:
    server.get(path).respond(200, text=text)
    client, _ = make_client("openai")
    with pytest.raises(ModelNotFound, match=r"\(it lists: nothing\)"):
        model_identity(client, "m:1b")


@pytest.mark.parametrize("tags", ['{"models": 5}', '{"models": "m"}', "[1, 2]", '{"models": [7]}'])
def test_tags_of_the_wrong_shape_give_an_identity_without_a_digest(
    make_client: MakeClient, server: respx.MockRouter, tags: str
) -> None:
    server.post("/api/show").respond(200, json={"capabilities": ["completion"]})
    server.get("/api/tags").respond(200, text=tags)
    client, _ = make_client("ollama")
    assert model_identity(client, "m:1b") == {"name": "m:1b"}


@pytest.mark.parametrize("text", ['{"capabilities": NaN}', "[" * 100 + "]" * 100, "<html>"])
def test_server_metadata_that_is_not_json_is_infra(
    make_client: MakeClient, server: respx.MockRouter, text: str
) -> None:
    server.post("/api/show").respond(200, text=text)
    client, _ = make_client("ollama")
    with pytest.raises(InfraError, match="POST /api/show answered non-JSON"):
        model_identity(client, "m:1b")


@pytest.mark.parametrize("status", [500, 503, 429])
@pytest.mark.parametrize("retries", [0, 1, 2, 3])
def test_server_errors_are_retried_with_backoff_then_infra(
    make_client: MakeClient, server: respx.MockRouter, status: int, retries: int
) -> None:
    route = server.post("/api/chat").respond(status, json={"error": "server busy"})
    client, delays = make_client("ollama", retries=retries)
    with pytest.raises(InfraError, match=rf"HTTP {status}.*server busy") as info:
        client.chat(make_request())
    assert route.call_count == retries + 1
    assert delays == [0.5 * 2**i for i in range(retries)]
    assert f"after {retries + 1} attempt{'s' if retries else ''}:" in str(info.value)


def test_backoff_for_two_retries_is_half_then_one_second(
    make_client: MakeClient, server: respx.MockRouter
) -> None:
    route = server.post("/api/chat").respond(503, json={"error": "server busy"})
    client, delays = make_client("ollama", retries=2)
    with pytest.raises(InfraError):
        client.chat(make_request())
    assert delays == [0.5, 1.0]
    assert route.call_count == 3


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_server_error_then_success_needs_one_retry(
    make_client: MakeClient, server: respx.MockRouter, api: str
) -> None:
    route = server.post(CHAT_PATH[api]).mock(
        side_effect=[
            httpx.Response(500, json={"error": "boom"}),
            httpx.Response(200, json=OK_BODY[api]),
        ]
    )
    client, delays = make_client(api, retries=2)
    reply = client.chat(make_request())
    assert reply.content == "Hello"
    assert route.call_count == 2
    assert delays == [0.5]


OLLAMA_CUT = {**OLLAMA_OK, "done": False}  # a reply that stopped before finishing
del OLLAMA_CUT["done_reason"]


@pytest.mark.parametrize(
    "failed",
    [(200, OLLAMA_CUT), (503, {"error": "server busy"})],
    ids=["cut-at-done-false", "http-503"],
)
def test_a_failed_attempt_a_cassette_holds_replays_without_backoff(
    server: respx.MockRouter, failed: tuple[int, dict[str, Any]]
) -> None:
    """Replay plays a recorded failed attempt and the retry after it at once: the backoff is
    for a server. A player that answers None (a test being recorded in mode once or stale)
    sends the request to the server, and then the retry waits as live."""
    route = server.post("/api/chat").mock(
        side_effect=[
            httpx.Response(503, json={"error": "busy"}),
            httpx.Response(200, json=OLLAMA_OK),
        ]
    )
    status, body = failed
    recorded = [
        (status, json.dumps(body).encode(), body if status == 200 else None),
        (200, json.dumps(OLLAMA_OK).encode(), OLLAMA_OK),
    ]
    plays: list[str] = []

    def player(method: str, path: str, content: str) -> tuple[int, bytes, Any] | None:
        plays.append(path)
        return recorded.pop(0) if recorded else None

    delays: list[float] = []
    client = ChatClient(
        ClientSettings(base_url=BASE, retries=2), sleep=delays.append, player=player
    )
    assert client.chat(make_request()).content == "Hello"
    assert (plays, delays, route.call_count) == (["/api/chat"] * 2, [], 0)
    # Nothing left to play: the same client asks the server, which fails once, and waits.
    assert client.chat(make_request()).content == "Hello"
    assert (len(plays), delays, route.call_count) == (4, [0.5], 2)


@pytest.mark.parametrize(
    ("failure", "match"),
    [
        (httpx.ConnectError("connection refused"), "cannot reach"),
        (httpx.ReadTimeout("read timed out"), "timed out"),
    ],
    ids=["connect-error", "read-timeout"],
)
def test_transport_failures_are_infra_errors(
    make_client: MakeClient, server: respx.MockRouter, failure: Exception, match: str
) -> None:
    route = server.post("/api/chat").mock(side_effect=failure)
    client, delays = make_client("ollama", retries=1)
    with pytest.raises(InfraError, match=match):
        client.chat(make_request())
    assert route.call_count == 2
    assert delays == [0.5]


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_non_json_200_is_infra(make_client: MakeClient, server: respx.MockRouter, api: str) -> None:
    server.post(CHAT_PATH[api]).respond(200, text="<html>proxy says hi</html>")
    client, _ = make_client(api, retries=0)
    with pytest.raises(InfraError, match="reply is not JSON"):
        client.chat(make_request())


@pytest.mark.parametrize("api", ["ollama", "openai"])
@pytest.mark.parametrize("text", ["null", "[]", '"ok"'])
def test_non_object_json_200_is_infra(
    make_client: MakeClient, server: respx.MockRouter, api: str, text: str
) -> None:
    server.post(CHAT_PATH[api]).respond(200, text=text)
    client, _ = make_client(api, retries=0)
    with pytest.raises(InfraError):
        client.chat(make_request())


def test_non_json_error_body_keeps_the_text(
    make_client: MakeClient, server: respx.MockRouter
) -> None:
    server.post("/api/chat").respond(502, text="Bad Gateway\n")
    client, _ = make_client("ollama", retries=0)
    with pytest.raises(InfraError, match=r"HTTP 502 .*: Bad Gateway"):
        client.chat(make_request())


# ------------------------------------------------------------------------------------------
# Ollama replies
# ------------------------------------------------------------------------------------------


def ollama_call(name: str, arguments: Any, index: int = 0) -> dict[str, Any]:
    return {"function": {"index": index, "name": name, "arguments": arguments}}


class TestParseOllamaReply:
    def test_content_thinking_calls_and_done_reason(self) -> None:
        body = {
            "model": MODEL,
            "message": {
                "role": "assistant",
                "content": "Here you go.",
                "thinking": "They want a date.",
                "tool_calls": [
                    ollama_call(CARD_TOOL, {"body": [{"type": "Input.Date", "id": "d"}]}),
                    ollama_call("read_file", {"path": "a.txt"}, index=1),
                ],
            },
            "done": True,
            "done_reason": "stop",
        }
        reply = parse_ollama_reply(body)
        assert reply == ChatReply(
            content="Here you go.",
            thinking="They want a date.",
            tool_calls=(
                ToolCall(CARD_TOOL, {"body": [{"type": "Input.Date", "id": "d"}]}),
                ToolCall("read_file", {"path": "a.txt"}),
            ),
            finish_reason="stop",
            raw=body,
        )

    @pytest.mark.parametrize(
        "broken",
        [
            {"function": {"arguments": {"x": 1}}},
            {"function": {"name": None, "arguments": {}}},
            {"function": "render_adaptive_card"},
            {"name": CARD_TOOL, "arguments": {}},
            "render_adaptive_card",
        ],
        ids=["no-name", "null-name", "function-not-object", "no-function", "not-object"],
    )
    def test_call_without_function_name_is_ignored(self, broken: Any) -> None:
        body = {
            "message": {"content": "", "tool_calls": [broken, ollama_call(CARD_TOOL, {})]},
            "done": True,
        }
        assert parse_ollama_reply(body).tool_calls == (ToolCall(CARD_TOOL, {}),)

    def test_missing_fields_default_to_empty(self) -> None:
        reply = parse_ollama_reply({"message": {"role": "assistant", "content": None}})
        assert (reply.content, reply.thinking, reply.tool_calls, reply.finish_reason) == (
            "",
            "",
            (),
            None,
        )

    def test_arguments_that_are_not_an_object_are_flagged(self) -> None:
        body = {"message": {"tool_calls": [ollama_call(CARD_TOOL, ["x"])]}, "done": True}
        (call,) = parse_ollama_reply(body).tool_calls
        assert call.arguments == {}
        assert call.arguments_error == "arguments have type list"


def ndjson(*chunks: dict[str, Any]) -> list[str]:
    return [json.dumps(chunk) for chunk in chunks]


def ollama_chunk(
    content: str = "", *, done: bool = False, thinking: str | None = None, **extra: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if "tool_calls" in extra:
        message["tool_calls"] = extra.pop("tool_calls")
    return {"model": MODEL, "message": message, "done": done, **extra}


class TestParseOllamaStream:
    def test_content_and_thinking_are_concatenated(self) -> None:
        lines = ndjson(
            ollama_chunk(thinking="A date "),
            ollama_chunk(thinking="input."),
            ollama_chunk("Here "),
            ollama_chunk("you go."),
            ollama_chunk(done=True, done_reason="stop", eval_count=5),
        )
        reply = parse_ollama_stream(streamed("ollama", lines))
        assert reply.content == "Here you go."
        assert reply.thinking == "A date input."
        assert reply.tool_calls == ()
        assert reply.finish_reason == "stop"
        assert reply.raw["chunks"] == 5
        assert reply.raw["final"]["eval_count"] == 5

    def test_calls_from_mid_stream_and_final_chunks_are_kept_in_order(self) -> None:
        lines = ndjson(
            ollama_chunk("", tool_calls=[ollama_call(CARD_TOOL, {"body": []})]),
            ollama_chunk("ok"),
            ollama_chunk(
                done=True,
                done_reason="stop",
                tool_calls=[
                    ollama_call("read_file", {"path": "a"}, index=1),
                    ollama_call("read_file", {"path": "b"}, index=2),
                ],
            ),
        )
        reply = parse_ollama_stream(streamed("ollama", lines))
        assert reply.tool_calls == (
            ToolCall(CARD_TOOL, {"body": []}),
            ToolCall("read_file", {"path": "a"}),
            ToolCall("read_file", {"path": "b"}),
        )
        assert reply.content == "ok"

    def test_blank_lines_are_ignored(self) -> None:
        lines = [
            "",
            json.dumps(ollama_chunk("Hi")),
            "   ",
            "\t",
            json.dumps(ollama_chunk(done=True)),
        ]
        reply = parse_ollama_stream(streamed("ollama", lines))
        assert reply.content == "Hi"
        assert reply.raw["chunks"] == 2

    def test_error_line_is_infra(self) -> None:
        lines = ndjson(ollama_chunk("Hel"), {"error": "model runner has unexpectedly stopped"})
        with pytest.raises(InfraError, match="after 1 chunks: model runner has unexpectedly"):
            parse_ollama_stream(streamed("ollama", lines))

    def test_stream_without_done_is_infra(self) -> None:
        lines = ndjson(ollama_chunk("Hel"), ollama_chunk("lo"))
        with pytest.raises(InfraError, match="without done:true"):
            parse_ollama_stream(streamed("ollama", lines))

    @pytest.mark.parametrize(
        ("lines", "problem"),
        [
            pytest.param([], "stream holds no events", id="empty"),
            pytest.param(["", "  "], "stream holds no events", id="only-blank"),
            pytest.param(
                [json.dumps(ollama_chunk("a")), "data: {oops"],
                "stream line 2 is not JSON: Expecting value: line 1 column 1 (char 0)",
                id="not-json",
            ),
        ],
    )
    def test_a_stream_no_parser_can_read_is_refused_by_the_reader(
        self, lines: list[str], problem: str
    ) -> None:
        """Each line is parsed once, by the reader: what it refuses never reaches a parser."""
        assert read_stream("ollama", "\n".join(lines)) == (problem, None)

    @settings(max_examples=40, deadline=None)
    @given(parts=st.lists(st.text(max_size=8), max_size=8))
    def test_any_chunking_reassembles_the_content(self, parts: list[str]) -> None:
        lines = ndjson(*(ollama_chunk(p) for p in parts), ollama_chunk(done=True))
        assert parse_ollama_stream(streamed("ollama", lines)).content == "".join(parts)


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_chat_assembles_a_streamed_reply(
    make_client: MakeClient, server: respx.MockRouter, api: str
) -> None:
    if api == "ollama":
        text = "\n".join(ndjson(ollama_chunk("Hel"), ollama_chunk("lo"), ollama_chunk(done=True)))
    else:
        text = sse(delta({"content": "Hel"}), delta({"content": "lo"}, finish="stop"), done=True)
    route = server.post(CHAT_PATH[api]).respond(200, text=text)
    client, _ = make_client(api, stream=True)
    reply = client.chat(make_request())
    assert reply.content == "Hello"
    assert sent_body(route)["stream"] is True


def test_chat_stream_error_line_is_retried_as_infra(
    make_client: MakeClient, server: respx.MockRouter
) -> None:
    broken = "\n".join(ndjson(ollama_chunk("Hel"), {"error": "out of memory"}))
    whole = "\n".join(ndjson(ollama_chunk("Hello"), ollama_chunk(done=True)))
    route = server.post("/api/chat").mock(
        side_effect=[httpx.Response(200, text=broken), httpx.Response(200, text=whole)]
    )
    client, delays = make_client("ollama", stream=True, retries=1)
    assert client.chat(make_request()).content == "Hello"
    assert route.call_count == 2
    assert delays == [0.5]


# ------------------------------------------------------------------------------------------
# OpenAI-compatible replies
# ------------------------------------------------------------------------------------------


def openai_call(name: str, arguments: str, call_id: str = "call_0") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai_body(message: dict[str, Any], finish: str | None = "stop") -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


class TestParseOpenAIReply:
    def test_arguments_string_is_decoded(self) -> None:
        body = openai_body(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    openai_call(CARD_TOOL, '{"body": [{"type": "TextBlock", "text": "hi"}]}'),
                    openai_call("read_file", '{"path": "a.txt"}', "call_1"),
                ],
            },
            finish="tool_calls",
        )
        reply = parse_openai_reply(body)
        assert reply.content == ""
        assert reply.tool_calls == (
            ToolCall(CARD_TOOL, {"body": [{"type": "TextBlock", "text": "hi"}]}),
            ToolCall("read_file", {"path": "a.txt"}),
        )
        assert reply.finish_reason == "tool_calls"
        assert reply.raw is body

    @pytest.mark.parametrize(
        ("arguments", "error"),
        [
            ('{"body": [', "arguments are not valid JSON"),
            ("[1, 2]", "arguments decode to list, not an object"),
            ('"text"', "arguments decode to str, not an object"),
        ],
    )
    def test_bad_arguments_string_sets_arguments_error(self, arguments: str, error: str) -> None:
        body = openai_body({"tool_calls": [openai_call(CARD_TOOL, arguments)]}, "tool_calls")
        (call,) = parse_openai_reply(body).tool_calls
        assert call.name == CARD_TOOL
        assert call.arguments == {}
        assert call.arguments_error is not None
        assert call.arguments_error.startswith(error)

    def test_content_reasoning_and_finish_reason(self) -> None:
        body = openai_body(
            {"role": "assistant", "content": "Hi", "reasoning_content": "hmm"}, finish="length"
        )
        reply = parse_openai_reply(body)
        assert (reply.content, reply.thinking, reply.finish_reason) == ("Hi", "hmm", "length")

    @pytest.mark.parametrize("body", [{}, {"choices": []}, {"choices": [None]}])
    def test_missing_choices_give_an_empty_reply(self, body: dict[str, Any]) -> None:
        reply = parse_openai_reply(body)
        assert (reply.content, reply.tool_calls, reply.finish_reason) == ("", (), None)


def delta(payload: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": payload, "finish_reason": finish}],
    }


def fragment(index: int, arguments: str, name: str | None = None) -> dict[str, Any]:
    """One streamed tool-call piece; the id, type and name only come with the first."""
    part: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if name is not None:
        part.update(id=f"call_{index}", type="function")
        part["function"]["name"] = name
    return delta({"tool_calls": [part]})


def sse(*events: dict[str, Any], done: bool = False) -> str:
    lines = [f"data: {json.dumps(event)}\n" for event in events]
    if done:
        lines.append("data: [DONE]\n")
    return "\n".join(lines)


def sse_lines(*events: dict[str, Any], done: bool = True) -> list[str]:
    return sse(*events, done=done).splitlines()


class TestParseOpenAIStream:
    def test_content_deltas_are_concatenated(self) -> None:
        reply = parse_openai_stream(
            streamed(
                "openai",
                sse_lines(
                    delta({"role": "assistant", "content": ""}),
                    delta({"content": "Hel"}),
                    delta({"content": None}),
                    delta({"content": "lo"}),
                    delta({}, finish="stop"),
                ),
            )
        )
        assert reply.content == "Hello"
        assert reply.tool_calls == ()
        assert reply.finish_reason == "stop"
        assert reply.raw == {"chunks": 5}

    def test_interleaved_argument_fragments_are_joined_per_index(self) -> None:
        reply = parse_openai_stream(
            streamed(
                "openai",
                sse_lines(
                    fragment(0, "", name=CARD_TOOL),
                    fragment(1, '{"pa', name="read_file"),
                    fragment(0, '{"body": [{"type": '),
                    fragment(1, 'th": "a.txt"}'),
                    fragment(0, '"TextBlock", "text": "hi"}]}'),
                    delta({}, finish="tool_calls"),
                ),
            )
        )
        assert reply.tool_calls == (
            ToolCall(CARD_TOOL, {"body": [{"type": "TextBlock", "text": "hi"}]}),
            ToolCall("read_file", {"path": "a.txt"}),
        )
        assert reply.finish_reason == "tool_calls"

    def test_calls_are_ordered_by_index_not_arrival(self) -> None:
        reply = parse_openai_stream(
            streamed(
                "openai",
                sse_lines(fragment(1, "{}", name="second"), fragment(0, "{}", name="first")),
            )
        )
        assert [c.name for c in reply.tool_calls] == ["first", "second"]

    def test_call_without_argument_fragments_has_empty_arguments(self) -> None:
        reply = parse_openai_stream(streamed("openai", sse_lines(fragment(0, "", name=CARD_TOOL))))
        assert reply.tool_calls == (ToolCall(CARD_TOOL, {}),)

    def test_broken_joined_arguments_set_arguments_error(self) -> None:
        reply = parse_openai_stream(
            streamed(
                "openai", sse_lines(fragment(0, '{"body": ', name=CARD_TOOL), fragment(0, "[}"))
            )
        )
        (call,) = reply.tool_calls
        assert call.name == CARD_TOOL
        assert call.arguments_error is not None

    def test_non_data_lines_and_blank_lines_are_ignored(self) -> None:
        lines = [
            ": keep-alive",
            "",
            "event: message",
            'data:{"choices": [{"delta": {"content": "A"}}]}',
            "",
            *sse_lines(delta({"content": "B"}, finish="stop")),
        ]
        assert parse_openai_stream(streamed("openai", lines)).content == "AB"

    def test_nothing_after_done_is_read(self) -> None:
        lines = [*sse_lines(delta({"content": "A"})), "data: {not json"]
        assert parse_openai_stream(streamed("openai", lines)).content == "A"

    @pytest.mark.parametrize(
        "error",
        [
            {"message": "context length exceeded", "type": "server_error"},
            "context length exceeded",
        ],
    )
    def test_error_event_is_infra(self, error: Any) -> None:
        lines = sse_lines(delta({"content": "Hel"}), {"error": error})
        with pytest.raises(InfraError, match="after 1 events"):
            parse_openai_stream(streamed("openai", lines))

    def test_stream_without_done_or_finish_is_infra(self) -> None:
        with pytest.raises(InfraError, match=r"without \[DONE\]"):
            parse_openai_stream(
                streamed("openai", sse_lines(delta({"content": "Hel"}), done=False))
            )

    def test_finish_reason_without_done_is_accepted(self) -> None:
        lines = sse_lines(delta({"content": "Hi"}, finish="stop"), done=False)
        assert parse_openai_stream(streamed("openai", lines)).content == "Hi"

    def test_non_json_event_is_refused_by_the_reader(self) -> None:
        assert read_stream("openai", "data: {oops") == (
            "stream line 1 is not JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
            None,
        )

    def test_an_error_line_ends_the_reply_after_the_events_before_it(self) -> None:
        """llama-server's ``error:`` line: the events after it are checked, never assembled."""
        lines = [
            *sse_lines(delta({"content": "Hel"}), done=False),
            "error: the model runner stopped",
            *sse_lines(delta({"content": "lo"}, finish="stop")),
        ]
        stream = streamed("openai", lines)
        assert (len(stream.chunks), stream.error, stream.done) == (
            2,
            (1, "the model runner stopped"),
            True,
        )
        with pytest.raises(InfraError, match=r"after 1 events: the model runner stopped$"):
            parse_openai_stream(stream)
        bad_after = [*lines[:2], "data: [1]"]
        assert read_stream("openai", "\n".join(bad_after))[0] == (
            "stream line 3 is a list, not an object"
        )

    @settings(max_examples=40, deadline=None)
    @given(data=st.data())
    def test_any_fragmenting_reassembles_the_arguments(self, data: st.DataObject) -> None:
        arguments = json.dumps({"body": [{"type": "TextBlock", "text": 'héllo "x"'}]})
        cuts = sorted(data.draw(st.sets(st.integers(1, len(arguments) - 1), max_size=6)))
        pieces = [arguments[a:b] for a, b in zip([0, *cuts], [*cuts, len(arguments)], strict=True)]
        events = [fragment(0, pieces[0], name=CARD_TOOL), *(fragment(0, p) for p in pieces[1:])]
        (call,) = parse_openai_stream(streamed("openai", sse_lines(*events))).tool_calls
        assert call == ToolCall(CARD_TOOL, json.loads(arguments))


def test_unfinished_ollama_reply_is_infra() -> None:
    """Ollama 0.11.4 can answer 200 with done:false after a repeated token; never judge it."""
    from pytest_cardprobe.wire.errors import InfraError
    from pytest_cardprobe.wire.ollama import parse_ollama_reply

    body = {"model": "", "created_at": "0001-01-01T00:00:00Z", "message": {}, "done": False}
    with pytest.raises(InfraError, match="done:false"):
        parse_ollama_reply(body)


@pytest.mark.parametrize("api", ["ollama", "openai"])
@pytest.mark.parametrize(
    "played",
    [
        (200, None),
        (400, {"error": "invalid request"}),
        (404, {"error": "model 'llama3' not found"}),
        (500, {"error": "error parsing tool call: raw='{bad'"}),
    ],
    ids=["ok", "400", "404", "500-unparsed"],
)
def test_a_played_request_given_its_wire_text_replays_as_one_written_here(
    api: str, played: tuple[int, dict[str, Any] | None]
) -> None:
    """The body text a caller wrote once (OneTurn, for every sample) is what the player is
    handed, at the API's path; a recorded error status reads the same as without it (the
    request's JSON is then built for the error only)."""
    status, error = played
    ok = (
        OLLAMA_OK
        if api == "ollama"
        else {"choices": [{"message": {"role": "assistant", "content": "Hello"}}]}
    )
    body = json.dumps(error if error is not None else ok).encode()
    seen: list[tuple[str, str]] = []

    def player(method: str, path: str, content: str) -> tuple[int, bytes, Any]:
        seen.append((path, content))
        return status, body, (ok if error is None else None)

    def outcome(wire: str | None) -> Any:
        client = ChatClient(ClientSettings(base_url=BASE, api=api, retries=0), player=player)
        try:
            reply = client.chat(make_request(), wire)
        except Exception as exc:  # compared: its type and words
            return type(exc), str(exc)
        return reply.content, reply.unparsed

    client = ChatClient(ClientSettings(base_url=BASE, api=api), player=player)
    text = client.played_text(make_request())
    assert text is not None
    assert outcome(text) == outcome(None)
    path = "/api/chat" if api == "ollama" else "/v1/chat/completions"
    assert seen == [(path, text), (path, text)]
