"""The wire as today's Ollama speaks it (issue 25 item 4, the parts that need no capture).

The reply bytes below are SHAPE EXAMPLES written for these tests from the release notes of
Ollama 0.12.6 (``function.index`` always sent), 0.12.10 (call ``id``s) and 0.32.6 (the
reshaped ``/v1`` stream), not recordings of a server; real captures of v0.33.0 will replace
them. They test that the parsers accept those shapes, never what a model does.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.types import ChatReply, ChatRequest, ToolCall, Verdict
from pytest_cardprobe.wire.body import json_body, request_meaning, without_call_ids
from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint
from pytest_cardprobe.wire.cassettes.format import dump_cassette
from pytest_cardprobe.wire.cassettes.replay import Replay
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.figures import server_figures
from pytest_cardprobe.wire.ollama import ollama_body, parse_ollama_reply
from pytest_cardprobe.wire.ollama_stream import parse_ollama_stream
from pytest_cardprobe.wire.openai import parse_openai_reply
from pytest_cardprobe.wire.openai_stream import parse_openai_stream
from pytest_cardprobe.wire.shapes import check_reply

SERVER = "http://127.0.0.1:11434"
CALL = {"name": "read_file", "arguments": {"path": "a.txt"}}


def ollama_call(index: bool, call_id: str | None) -> dict[str, Any]:
    function: dict[str, Any] = {**({"index": 0} if index else {}), **CALL}
    return {**({"id": call_id} if call_id else {}), "function": function}


def ollama_whole(call: dict[str, Any]) -> str:
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    return json.dumps({"model": "m", "message": message, "done": True, "done_reason": "stop"})


def ollama_stream(call: dict[str, Any]) -> str:
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [call]}},
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True},
    ]
    return "\n".join(json.dumps({"done": False, **line}) for line in lines) + "\n"


@pytest.mark.parametrize("index", [True, False], ids=["index", "no-index"])
@pytest.mark.parametrize("call_id", ["call_k2v8a1", None], ids=["id", "no-id"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_an_ollama_call_reads_the_same_with_or_without_index_and_id(
    index: bool, call_id: str | None, stream: bool
) -> None:
    text = (ollama_stream if stream else ollama_whole)(ollama_call(index, call_id))
    assert check_reply("ollama", stream, text)[0] is None
    if stream:
        reply = parse_ollama_stream(text.splitlines())
    else:
        reply = parse_ollama_reply(json.loads(text))
    (call,) = reply.tool_calls
    assert call == ToolCall("read_file", {"path": "a.txt"})
    assert call.id == call_id  # kept, though not part of the call's equality


def test_an_openai_call_keeps_its_id_whole_and_streamed() -> None:
    call = {"id": "call_9", "type": "function", "function": {**CALL, "arguments": '{"path":"a"}'}}
    body = {"choices": [{"index": 0, "message": {"tool_calls": [call]}, "finish_reason": "x"}]}
    assert parse_openai_reply(body).tool_calls[0].id == "call_9"
    event = {"choices": [{"index": 0, "delta": {"tool_calls": [{**call, "index": 0}]}}]}
    lines = [f"data: {json.dumps(event)}", "data: [DONE]"]
    assert parse_openai_stream(lines).tool_calls[0].id == "call_9"


def reshaped_v1_stream() -> str:
    """The ``/v1`` stream as Ollama 0.32.6 and OpenAI send it: the finish reason on its own
    chunk with an empty delta, then the usage in a chunk with no choice at all."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}

    def delta(value: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": value, **more}]}

    def part(function: dict[str, str], **more: Any) -> dict[str, Any]:
        return delta({"tool_calls": [{"index": 0, **more, "function": function}]})

    events = [
        delta({"role": "assistant", "content": ""}),
        part({"name": "f"}, id="call_1", type="function"),
        part({"arguments": '{"a":'}),
        part({"arguments": "1}"}),
        delta({}, finish_reason="tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 31, "completion_tokens": 12}},
    ]
    lines = [f"data: {json.dumps({**head, **e}, separators=(',', ':'))}" for e in events]
    return "\n\n".join([*lines, "data: [DONE]"]) + "\n\n"


def test_the_reshaped_v1_stream_is_read_whole_with_its_usage() -> None:
    text = reshaped_v1_stream()
    assert check_reply("openai", True, text) == (None, None)
    reply = parse_openai_stream(text.splitlines())
    assert reply.tool_calls == (ToolCall("f", {"a": 1}),)
    assert reply.tool_calls[0].id == "call_1"
    assert reply.finish_reason == "tool_calls"
    # The usage chunk has no choice; its figures still reach the report.
    assert server_figures(reply.raw) == {"prompt_tokens": 31, "generated_tokens": 12}


@pytest.mark.parametrize("think", ["off", "on", "low", "medium", "high", "max"])
def test_ollama_is_always_told_whether_to_think(think: str) -> None:
    # Ollama 0.12.4 and later think by default when ``think`` is absent: it is never absent.
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}], think=think)
    body = ollama_body(request, stream=False, keep_alive="5m")
    expected = {"off": False, "on": True}.get(think, think)
    assert "think" in body and body["think"] == expected
    client = ChatClient(ClientSettings(base_url=SERVER))
    assert json.loads(json_body(client.payload(request)[1]))["think"] == expected


# ------------------------------------------------------------------------------ matching


def loop_request(ids: tuple[str, str]) -> dict[str, Any]:
    """The second turn of an OpenAI-wire tool loop, quoting the server's call ids."""
    calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": '{"n":1}'}}
        for i in ids
    ]
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": calls},
            *({"role": "tool", "tool_call_id": i, "content": "r"} for i in ids),
        ],
        "stream": False,
    }


def cassette(tmp_path: Path, body: str, prints: dict[str, str]) -> Path:
    reply = json.dumps({"message": {"role": "assistant", "content": "done"}, "done": True})
    data = {
        "interactions": [
            {
                "request": {"method": "POST", "uri": f"{SERVER}/api/chat", "body": body},
                "response": {"status": {"code": 200}, "body": {"string": reply}},
            }
        ],
        "metadata": {"cardprobe": {"format": 1, "fingerprint": prints}},
        "version": 1,
    }
    path = tmp_path / "c.yaml"
    path.write_text(dump_cassette(data), encoding="utf-8")
    return path


def replays(path: Path, body: str, prints: dict[str, str]) -> bool:
    backend = Replay()
    with backend.open(path, fingerprint=lambda: prints, rerecord_hint="-"):
        status, _, _ = backend.play("POST", "/api/chat", body)  # raises when stale
    return status == 200


def test_tool_call_ids_are_left_out_of_matching_and_fingerprints(tmp_path: Path) -> None:
    recorded, asked = loop_request(("call_a1", "call_a2")), loop_request(("call_z8", "call_z9"))
    as_request = ChatRequest(model="m", messages=asked["messages"])
    prints = fingerprint(as_request)
    assert fingerprint(ChatRequest(model="m", messages=recorded["messages"])) == prints
    assert request_meaning(json_body(recorded)) == request_meaning(json_body(asked))
    path = cassette(tmp_path, json_body(recorded), prints)
    assert replays(path, json_body(asked), prints)
    # The ids are all that is left out: another tool result is another request.
    changed = loop_request(("call_z8", "call_z9"))
    changed["messages"][-1]["content"] = "other"
    with pytest.raises(Exception, match="stale cassette"):
        replays(path, json_body(changed), prints)


def test_ids_are_dropped_only_where_calls_carry_them() -> None:
    messages = [{"role": "user", "content": "id", "id": "kept"}, "not a message"]
    assert without_call_ids(messages) == messages
    assert without_call_ids({"messages": 1}) == {"messages": 1}


def shuffled(value: Any, rng: random.Random) -> Any:
    """``value`` with the keys of every object in another order (lists keep theirs)."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


JSON_LEAF = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    options=st.dictionaries(st.text(min_size=1, max_size=6), JSON, max_size=5), seed=st.integers()
)
def test_key_order_of_a_recorded_body_never_makes_it_stale(
    tmp_path_factory: pytest.TempPathFactory, options: dict[str, Any], seed: int
) -> None:
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}], options=options)
    client = ChatClient(ClientSettings(base_url=SERVER))
    body = client.payload(request)[1]
    prints = fingerprint(request)
    # Another writer: keys in another order at every depth, and spaced as json.dumps does.
    written = json.dumps(shuffled(body, random.Random(seed)), ensure_ascii=False)
    path = cassette(tmp_path_factory.mktemp("order"), written, prints)
    assert replays(path, json_body(body), prints)


def test_a_shown_reply_names_the_servers_call_ids() -> None:
    from pytest_cardprobe.run.runtime import Runtime
    from pytest_cardprobe.run.settings import Settings
    from pytest_cardprobe.wire.cassettes.modes import backend_for

    class Scripted:
        def played_text(self, request: ChatRequest) -> None:
            return None  # no player: as a live client

        def chat(self, request: ChatRequest, wire: str | None = None) -> ChatReply:
            calls = (ToolCall("render", {"body": []}, id="call_77"),)
            return ChatReply("", tool_calls=calls, finish_reason="stop")

    runtime = Runtime(Settings(models=["m"]), backend_for("none"))
    runtime._clients[runtime.server] = Scripted()  # type: ignore[assignment]
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}])
    request.tools.append({"type": "function", "function": {"name": "render"}})
    seen: list[str] = []

    def judge(text: str) -> Verdict:
        seen.append(text)
        return Verdict(passed=True, label="ok", failure=None)

    record, _ = runtime.ask(request, "tool", judge, 0)
    assert seen == ["[]"]  # the call's body, judged as usual
    assert record.reply.startswith('tool_calls: [{"id": "call_77", "name": "render"')
