"""A tool call the server could not parse is the model's failure, not the server's.

Told by its shape (HTTP 500 with nothing but ``{"error"}``; in a stream, an error line after
at least one chunk, with nothing after it) and by its message (one the parsers of Ollama
0.33.0 write): ``malformed``, labelled ``unparsed: the server could not parse the tool
call: …``, never retried, recorded. Every other 5xx and error line stays infra. The shapes
and messages are read in Ollama's source; ``tests/live/test_unparsed_live.py`` shows them
on a real Ollama 0.33.0.
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from hypothesis import given, settings
from hypothesis import strategies as st
from streams import streamed

from pytest_cardprobe.judge.call import judge_calls
from pytest_cardprobe.judge.routing import answer_of, turn_of
from pytest_cardprobe.suite.calls import CallSpec, Expectation
from pytest_cardprobe.types import ChatReply, ChatRequest, FailureClass
from pytest_cardprobe.wire.cassettes.record import _scrub_response
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.errors import InfraError
from pytest_cardprobe.wire.ollama_stream import parse_ollama_stream
from pytest_cardprobe.wire.shapes import reply_problem
from pytest_cardprobe.wire.unparsed import parser_message, unparsed_status

BASE = "http://model-server.test:11434"
# Messages as Ollama's parsers write them (model/parsers/*.go, harmony/harmonyparser.go).
KNOWN = (
    "failed to parse JSON: invalid character '\\\\' looking for beginning of object key string",
    "empty function name",
    "error parsing tool call: raw='{\"a\":', err=unexpected end of JSON input",
    "failed to parse XML: XML syntax error on line 1: unexpected EOF",
    "incomplete GLM tool call: unexpected EOF",
    "invalid tool call: no opening parenthesis",
    "failed to parse Laguna JSON tool call: unexpected end of JSON input",
    "expected 'call:' prefix",
    "tool 'get_weather' not found",
    "XML syntax error on line 1: unexpected EOF",
)
# 5xx a server sends for other reasons: infra, whatever the tools did.
INFRA = (
    "model runner has unexpectedly stopped, this may be due to resource limitations",
    "llama runner process has terminated: exit status 2",
    "server busy, please try again.  maximum pending requests exceeded",
    "failed to load model",
    "context canceled",
    # encoding/json's bare words: qwen3-vl's parser, but also a model Ollama cannot load.
    "unexpected end of JSON input",
    "invalid character 'x' looking for beginning of value",
    "",
)


def chunk(content: str = "", done: bool = False, **extra: Any) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": content}, "done": done, **extra}


def ndjson(*chunks: dict[str, Any]) -> list[str]:
    return [json.dumps(c) for c in chunks]


# --------------------------------------------------------------------------- recognising


@pytest.mark.parametrize("message", KNOWN)
def test_each_parsers_message_is_known(message: str) -> None:
    assert parser_message(message)
    assert unparsed_status(500, json.dumps({"error": message})) == message


@pytest.mark.parametrize("message", INFRA)
def test_other_server_errors_are_not(message: str) -> None:
    assert not parser_message(message)
    assert unparsed_status(500, json.dumps({"error": message})) is None


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (502, {"error": KNOWN[0]}),  # a gateway's status: not Ollama's
        (503, {"error": KNOWN[0]}),
        (400, {"error": KNOWN[0]}),
        (500, {"error": KNOWN[0], "status": 500}),  # more than the error
        (500, {"error": [KNOWN[0]]}),
        (500, {"message": KNOWN[0]}),
        (500, [KNOWN[0]]),
    ],
)
def test_the_shape_must_be_ollamas_too(status: int, body: Any) -> None:
    """A known message in another shape is not taken for a parse error: never one string."""
    assert unparsed_status(status, json.dumps(body)) is None


def test_ollamas_v1_wraps_the_message_and_is_known_too() -> None:
    body = {"error": {"message": "empty function name", "type": "api_error", "param": None}}
    assert unparsed_status(500, json.dumps(body)) == "empty function name"


def test_a_body_that_is_no_json_is_not() -> None:
    assert unparsed_status(500, b"\xff\xfe") is None
    assert unparsed_status(500, "failed to parse JSON: x") is None


# --------------------------------------------------------------------------- streams


def test_an_error_line_after_chunks_ends_the_turn_unparsed() -> None:
    lines = ndjson(chunk('"'), chunk("Sure"), {"error": KNOWN[0]})
    reply = parse_ollama_stream(streamed("ollama", lines))
    assert reply.unparsed == KNOWN[0]
    assert reply.content == '"Sure' and reply.pieces == ('"', "Sure")
    assert reply_problem("ollama", True, "\n".join(lines)) is None


def test_ollama_0_11_wrote_harmonys_error_under_a_key_of_its_own() -> None:
    lines = ndjson(chunk("x"), {"error parsing tool call": "unexpected end of JSON input"})
    assert reply_problem("ollama", True, "\n".join(lines)) is None
    reply = parse_ollama_stream(streamed("ollama", lines))
    assert reply.unparsed == "error parsing tool call: unexpected end of JSON input"


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (ndjson({"error": KNOWN[0]}), "after 0 chunks"),  # Ollama sends a 500 then
        (ndjson(chunk("a"), {"error": INFRA[0]}), "after 1 chunks: model runner"),
        (ndjson(chunk("a"), {"error": KNOWN[0], "status": 500}), "after 1 chunks"),
        (ndjson(chunk("a"), {"error": KNOWN[1]}, chunk("b")), "went on after its error line"),
    ],
    ids=["first-line", "infra-message", "more-than-error", "not-last"],
)
def test_other_error_lines_stay_infra(lines: list[str], said: str) -> None:
    with pytest.raises(InfraError, match=said):
        parse_ollama_stream(streamed("ollama", lines))


_MESSAGE = st.one_of(st.sampled_from(KNOWN), st.sampled_from(INFRA), st.text(max_size=40))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    before=st.lists(st.text(max_size=6), max_size=4),
    message=_MESSAGE,
    extra_key=st.booleans(),
    after=st.lists(st.text(max_size=6), max_size=2),
)
def test_a_stream_is_unparsed_exactly_when_shape_and_message_agree(
    before: list[str], message: str, extra_key: bool, after: list[str]
) -> None:
    """Property over the whole kind: an error line makes the turn unparsed if and only if
    it follows a chunk, is the last line, holds nothing but the error, and its message is
    a parser's; otherwise the stream is infra."""
    error: dict[str, Any] = {"error": message, **({"status": 500} if extra_key else {})}
    lines = ndjson(*(chunk(c) for c in before), error, *(chunk(c) for c in after))
    expected = bool(before) and not after and not extra_key and parser_message(message)
    try:
        reply = parse_ollama_stream(streamed("ollama", lines))
    except InfraError:
        assert not expected
    else:
        assert expected and reply.unparsed == message
        assert reply.content == "".join(before)


# --------------------------------------------------------------------------- judging


def test_the_card_judge_reads_it_as_malformed_unparsed_on_every_channel() -> None:
    reply = ChatReply(content='"', unparsed=KNOWN[1])
    for channel, tool in (("tool", "render_adaptive_card"), ("prose", None)):
        answer = answer_of(reply, channel, tool, generated=30)
        assert answer.route == "swallowed"
        assert answer.swallowed == (
            "unparsed: the server could not parse the tool call: empty function name"
        )


def test_the_call_judge_too_even_after_a_call_that_parsed() -> None:
    from pytest_cardprobe.types import ToolCall

    reply = ChatReply(content="", tool_calls=(ToolCall("f", {}),), unparsed=KNOWN[0])
    turn = turn_of(reply, ["f"])
    assert turn.route == "swallowed" and turn.calls == ()
    expect = Expectation(kind="call", calls=(CallSpec("f"),))
    verdict = judge_calls([turn], expect, [{"type": "function", "function": {"name": "f"}}])
    assert verdict.failure is FailureClass.MALFORMED
    assert verdict.label.startswith("unparsed: the server could not parse the tool call: failed")


# --------------------------------------------------------------------------- the client

_SHARED_SSL = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ChatClient, list[float]]]:
    monkeypatch.setattr(httpx, "Client", functools.partial(httpx.Client, verify=_SHARED_SSL))
    delays: list[float] = []
    made = ChatClient(ClientSettings(base_url=BASE, retries=2), sleep=delays.append)
    yield made, delays
    made.close()


REQUEST = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}])


def test_a_500_parse_error_is_a_reply_and_not_retried(
    client: tuple[ChatClient, list[float]],
) -> None:
    chat, delays = client
    with respx.mock(base_url=BASE) as router:
        route = router.post("/api/chat").respond(500, json={"error": KNOWN[0]})
        reply = chat.chat(REQUEST)
    assert reply.unparsed == KNOWN[0] and reply.content == ""
    assert route.call_count == 1 and delays == []


def test_any_other_500_is_still_infra_and_retried(client: tuple[ChatClient, list[float]]) -> None:
    chat, delays = client
    with respx.mock(base_url=BASE) as router:
        route = router.post("/api/chat").respond(500, json={"error": INFRA[1]})
        with pytest.raises(InfraError, match="after 3 attempts: HTTP 500"):
            chat.chat(REQUEST)
    assert route.call_count == 3 and delays == [0.5, 1.0]


# --------------------------------------------------------------------------- recording


def test_a_recording_keeps_a_parse_error_and_drops_other_5xx() -> None:
    def response(status: int, error: str) -> dict[str, Any]:
        body = json.dumps({"error": error}).encode()
        return {"status": {"code": status, "message": ""}, "headers": {}, "body": {"string": body}}

    assert _scrub_response(response(500, KNOWN[0])) is not None
    assert _scrub_response(response(500, INFRA[0])) is None
    assert _scrub_response(response(503, KNOWN[0])) is None


# --------------------------------------------------------------------------- real bytes

# What Ollama 0.33.0 sent (tests/unit/data/wire/, saved by tests/live/capture_wire.py): the
# model's qwen3-parser variant made to write its call JSON-escaped (tests/live/recipes.py).
REAL = {
    "ollama-0.33.0-api-chat-unparsed": ("ollama", False),
    "ollama-0.33.0-api-chat-unparsed-stream": ("ollama", True),
    "ollama-0.33.0-v1-chat-unparsed": ("openai", False),
}
REAL_MESSAGE = (
    "failed to parse JSON: invalid character '\\\\' looking for beginning of object key string"
)


@pytest.mark.parametrize("name", sorted(REAL))
def test_what_a_real_ollama_sent_is_read_as_the_models_failure(
    name: str, client: tuple[ChatClient, list[float]]
) -> None:
    from captured import load

    api, stream = REAL[name]
    response = load(name)["response"]
    chat, delays = client
    chat.settings.api, chat.settings.stream = api, stream
    path = "/api/chat" if api == "ollama" else "/v1/chat/completions"
    with respx.mock(base_url=BASE) as router:
        route = router.post(path).respond(
            response["status"],
            content=response["body"].encode(),
            headers={"Content-Type": response["content_type"]},
        )
        reply = chat.chat(REQUEST)
    assert reply.unparsed == REAL_MESSAGE
    assert reply.content == ('"' if stream else "")  # what the stream sent before the error
    assert route.call_count == 1 and delays == []
    answer = answer_of(reply, "tool", "render_adaptive_card")
    assert (
        answer.swallowed
        == ("unparsed: the server could not parse the tool call: " + REAL_MESSAGE)[:120]
    )
