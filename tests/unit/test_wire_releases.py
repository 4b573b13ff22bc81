"""The wire as each Ollama release speaks it, read from real exchanges.

Every reply below is one a real server sent: Ollama 0.11.4 (pinned), Ollama 0.33.0 (today's
release) or llama-server, saved byte for byte under tests/unit/data/wire/ (README.md there).
What changed between the releases: tool calls gained an ``id`` and ``function.index``
(0.12.6, 0.12.10); thinking is parsed out of the content and streamed in chunks of its own
(0.18.0), and is on by default when ``think`` is not sent (0.12.4); the ``/v1`` stream sends
its finish reason on an empty delta and the usage in a chunk without a choice (0.32.6).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from captured import NEW, OLD, generated, load, reply_of
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.judge.call import ModelTurn
from pytest_cardprobe.judge.routing import answer_of, turn_of
from pytest_cardprobe.run.asking import shown_calls
from pytest_cardprobe.run.loop import feedback_messages
from pytest_cardprobe.suite.calls import ScriptedResult
from pytest_cardprobe.types import ChatReply, ChatRequest, ToolCall, Verdict
from pytest_cardprobe.wire.body import json_body, request_meaning, without_call_ids
from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint
from pytest_cardprobe.wire.cassettes.format import dump_cassette
from pytest_cardprobe.wire.cassettes.replay import Replay
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.figures import server_figures
from pytest_cardprobe.wire.ollama import ollama_body

SERVER = "http://127.0.0.1:11434"
CARD_TOOL = "render_adaptive_card"

# -------------------------------------------------------------------- ids and function.index

# The same structured call from each release: 0.11.4 sends `{"function": {name, arguments}}`,
# 0.33.0 adds `id` and `function.index`; whole and streamed; and through /v1.
CALLS = {
    f"{OLD}-api-chat-tag-recipe": False,
    f"{OLD}-api-chat-tag-recipe-stream": False,
    f"{OLD}-api-chat-json-start-recipe": False,
    f"{OLD}-api-chat-json-start-recipe-stream": False,
    f"{NEW}-api-chat-json-start-recipe": True,
    f"{NEW}-api-chat-json-start-recipe-stream": True,
    f"{OLD}-v1-chat-call": True,
    f"{OLD}-v1-chat-call-stream": True,
    f"{NEW}-v1-chat-call": True,
    f"{NEW}-v1-chat-call-stream": True,
    "llama-server-v1-chat-call": True,
    "llama-server-v1-chat-call-stream": True,
}


def wire_calls(name: str) -> list[dict[str, Any]]:
    """The tool-call entries as the server wrote them (every chunk's, for a stream)."""
    text = load(name)["response"]["body"]
    found = []
    for line in text.splitlines():
        line = line.removeprefix("data: ")
        if not line.startswith("{"):
            continue
        chunk = json.loads(line)
        for part in [chunk.get("message") or {}] + [
            c.get("delta") or c.get("message") or {} for c in chunk.get("choices") or []
        ]:
            found += part.get("tool_calls") or []
    return found


@pytest.mark.parametrize("name", list(CALLS))
def test_a_real_call_reads_the_same_with_or_without_id_and_index(name: str) -> None:
    reply = reply_of(name)
    (call,) = reply.tool_calls
    assert call.name == CARD_TOOL and call.arguments_error is None
    assert call.arguments["body"][0]["type"] == "TextBlock"
    # The id is kept (reports show it) but is no part of what the call is.
    assert call == ToolCall(call.name, call.arguments)
    sent = wire_calls(name)
    assert (call.id is not None) == CALLS[name] == any("id" in c for c in sent)
    if call.id:
        assert call.id == next(c["id"] for c in sent if c.get("id"))
        assert shown_calls(reply).startswith(f'tool_calls: [{{"id": "{call.id}", "name": ')
    else:
        assert shown_calls(reply).startswith('tool_calls: [{"name": ')
    # `function.index` is there on 0.33.0's /api/chat and never on 0.11.4's: read either way.
    indexed = any("index" in c.get("function", {}) for c in sent)
    assert indexed == name.startswith(f"{NEW}-api-chat")


def test_each_release_routes_its_recipe_call_alike() -> None:
    old = answer_of(reply_of(f"{OLD}-api-chat-tag-recipe"), "tool", CARD_TOOL)
    new = answer_of(reply_of(f"{NEW}-api-chat-json-start-recipe"), "tool", CARD_TOOL)
    assert old.route == new.route == "tool_calls"
    assert json.loads(old.text)[0]["type"] == json.loads(new.text)[0]["type"] == "TextBlock"


# ------------------------------------------------------------------------ the loop's messages

LOOP_RESULT = "Meeting moved to 10:30 on Thursday."
RESULTS = (ScriptedResult("read_file", (), LOOP_RESULT),)


def without_index(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message with `function.index` left out of its calls (0.33.0 sends it;
    the plugin does not send it back: the server reads the calls in order)."""
    calls = [
        {**c, "function": {k: v for k, v in c["function"].items() if k != "index"}}
        for c in message["tool_calls"]
    ]
    return {**message, "tool_calls": calls}


@pytest.mark.parametrize("release", [OLD, NEW])
def test_the_loop_sends_back_what_the_real_server_was_sent(release: str) -> None:
    """Turn 2 of the captured loop is the request its server answered; the plugin's own
    turn 2, built from the captured turn 1 reply, carries the same messages: the call with
    the id the server gave (0.33.0) and a tool message with `tool_name` and `tool_call_id`."""
    first = reply_of(f"{release}-api-chat-loop-turn1")
    turn = turn_of(first, ["read_file"], generated(first))
    assert turn.route == "tool_calls"
    assistant, tool = feedback_messages("ollama", first, turn, RESULTS, 0)
    sent = load(f"{release}-api-chat-loop-turn2")["request"]["body"]["messages"]
    # The capture sent an empty content beside the call; the plugin sends the reply's own.
    assert assistant == {**without_index(sent[1]), "content": first.content}
    assert tool == sent[2]
    assert ("tool_call_id" in tool) == (release == NEW) == ("id" in assistant["tool_calls"][0])
    assert tool["tool_name"] == "read_file"  # Ollama's own key stays
    # What the server then answered is a plain text turn.
    for name in (f"{release}-api-chat-loop-turn2", f"{release}-api-chat-loop-turn2-stream"):
        second = reply_of(name)
        assert turn_of(second, ["read_file"], generated(second)).route == "content"


@pytest.mark.parametrize("release", [OLD, NEW])
def test_the_v1_loop_quotes_the_servers_call_id(release: str) -> None:
    first = reply_of(f"{release}-v1-chat-loop-turn1")
    turn = turn_of(first, ["read_file"], generated(first))
    assistant, tool = feedback_messages("openai", first, turn, RESULTS, 0)
    sent = load(f"{release}-v1-chat-loop-turn2")["request"]["body"]["messages"]
    assert tool == sent[2]
    assert assistant["tool_calls"][0]["id"] == sent[1]["tool_calls"][0]["id"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == json.loads(
        sent[1]["tool_calls"][0]["function"]["arguments"]
    )


def loop_turn2(release: str, call_id: str | None) -> ChatRequest:
    """The plugin's turn 2 of the captured loop, as if the server had given ``call_id``."""
    first = reply_of(f"{release}-api-chat-loop-turn1")
    calls = tuple(ToolCall(c.name, c.arguments, id=call_id) for c in first.tool_calls)
    reply = ChatReply(first.content, tool_calls=calls)
    extra = feedback_messages("ollama", reply, ModelTurn("tool_calls", calls, ""), RESULTS, 0)
    body = load(f"{release}-api-chat-loop-turn1")["request"]["body"]
    return ChatRequest(
        model=body["model"], messages=[*body["messages"], *extra], tools=body["tools"]
    )


def test_a_loop_recorded_with_one_call_id_replays_with_another(tmp_path: Path) -> None:
    client = ChatClient(ClientSettings(base_url=SERVER))
    recorded, asked = loop_turn2(NEW, "call_vbx9ir4s"), loop_turn2(NEW, "call_q0z8k2aa")
    assert recorded.messages != asked.messages  # the ids differ on the wire ...
    prints = fingerprint(asked)
    assert fingerprint(recorded) == prints  # ... and nowhere else
    path = cassette(tmp_path, client.wire_request(recorded)[2], prints)
    assert replays(path, client.wire_request(asked)[2], prints)
    # A recording from 0.11.4, whose calls had no id, is the same request too.
    assert request_meaning(client.wire_request(loop_turn2(OLD, None))[2]) == request_meaning(
        client.wire_request(loop_turn2(OLD, "call_x"))[2]
    )


# ------------------------------------------------------------------------------- thinking


def test_split_thinking_and_content_chunks_add_up_to_the_whole_reply() -> None:
    """0.33.0 streams thinking and content in chunks of their own; assembled, the stream is
    the reply the same request got whole, and only content pieces count as shown text."""
    stream = reply_of(f"{NEW}-api-chat-think-on-stream")
    whole = reply_of(f"{NEW}-api-chat-think-on")
    body = load(f"{NEW}-api-chat-think-on-stream")["response"]["body"]
    chunks = [json.loads(line) for line in body.splitlines()]
    thought = "".join(c["message"].get("thinking", "") for c in chunks)
    assert thought and stream.thinking == thought == whole.thinking
    assert stream.content == whole.content == "6"
    assert stream.pieces == ("6",)
    answer = answer_of(stream, "prose", None)
    assert (answer.route, answer.text, answer.thinking) == ("content", "6", "")


def test_0_11_leaves_thinking_in_the_content_where_0_33_parses_it() -> None:
    old = reply_of(f"{OLD}-api-chat-think-on-stream")
    assert old.thinking == "" and "</think>" in old.content
    # Sent think:false, 0.33.0 does not parse: the model's <think> block stays in the content,
    # and the judge reads the answer after it.
    off = reply_of(f"{NEW}-api-chat-think-off")
    assert off.thinking == "" and off.content.startswith("<think>")
    answer = answer_of(off, "prose", None)
    assert answer.thinking and "<think>" not in answer.text


@pytest.mark.parametrize("think", ["off", "on", "low", "medium", "high", "max"])
def test_ollama_is_always_told_whether_to_think(think: str) -> None:
    # Ollama 0.12.4 and later think by default when ``think`` is absent (the captured
    # 0.33.0 think-default reply has `thinking`, 0.11.4's has none): it is never absent.
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}], think=think)
    body = ollama_body(request, stream=False, keep_alive="5m")
    expected = {"off": False, "on": True}.get(think, think)
    assert "think" in body and body["think"] == expected
    client = ChatClient(ClientSettings(base_url=SERVER))
    assert json.loads(json_body(client.payload(request)[1]))["think"] == expected
    assert reply_of(f"{NEW}-api-chat-think-default").thinking
    assert not reply_of(f"{OLD}-api-chat-think-default").thinking


# --------------------------------------------------------------------------- the /v1 stream


# llama-server's call recipe stops at </tool_call>: no call cut by the limit was captured.
V1_PAIRS = [
    (server, what)
    for server in (OLD, NEW, "llama-server")
    for what in ("plain", "length", "call", "call-length")
    if (server, what) != ("llama-server", "call-length")
]


@pytest.mark.parametrize(("server", "what"), V1_PAIRS)
def test_the_v1_stream_reads_as_the_whole_reply(server: str, what: str) -> None:
    """0.33.0 (and llama-server) send the finish reason on an empty delta and the usage in a
    `choices: []` chunk; 0.11.4 put the finish reason beside an empty content. Each stream
    assembles into what the same request got whole, figures included."""
    stream = reply_of(f"{server}-v1-chat-{what}-stream")
    whole = reply_of(f"{server}-v1-chat-{what}")
    assert stream.finish_reason == whole.finish_reason
    assert stream.content == whole.content
    assert [(c.name, c.arguments) for c in stream.tool_calls] == [
        (c.name, c.arguments) for c in whole.tool_calls
    ]
    figures = server_figures(stream.raw)
    assert figures["generated_tokens"] == server_figures(whole.raw)["generated_tokens"] > 0


def test_a_call_cut_by_the_token_limit_is_length_not_tool_calls() -> None:
    """0.33.0's `/v1`: a call cut by `max_tokens` ends `length` (which wins over
    `tool_calls`), its text left in the content; judged as cut, not as a call."""
    reply = reply_of(f"{NEW}-v1-chat-call-length-stream")
    assert reply.finish_reason == "length" and not reply.tool_calls
    assert reply.content.startswith('{\n  "name": "render_adapt')
    answer = answer_of(reply, "tool", CARD_TOOL, generated(reply))
    assert answer.route == "content" and answer.swallowed is None


def test_the_usage_chunk_has_no_choice_and_still_reaches_the_report() -> None:
    body = load(f"{NEW}-v1-chat-plain-stream")["response"]["body"]
    events = [json.loads(b[6:]) for b in body.split("\n\n") if b.startswith("data: {")]
    usage = events[-1]
    assert usage["choices"] == [] and events[-2]["choices"][0]["delta"] == {}
    reply = reply_of(f"{NEW}-v1-chat-plain-stream")
    assert reply.finish_reason == "stop"
    assert server_figures(reply.raw)["generated_tokens"] == usage["usage"]["completion_tokens"]
    assert server_figures(reply.raw)["prompt_tokens"] == usage["usage"]["prompt_tokens"]


# ------------------------------------------------------------------------------ matching


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


def with_ids(body: dict[str, Any], ids: str) -> dict[str, Any]:
    """``body`` (a captured /v1 loop turn 2) with its call ids replaced by ``ids``."""
    text = json.dumps(body, ensure_ascii=False)
    for old in {c["id"] for m in body["messages"] for c in m.get("tool_calls", [])}:
        text = text.replace(old, ids)
    changed: dict[str, Any] = json.loads(text)
    return changed


def test_tool_call_ids_are_left_out_of_matching_and_fingerprints(tmp_path: Path) -> None:
    # The request the real 0.33.0 answered, quoting the id it gave (call_wt4fn5vv), and the
    # same turn of a later run whose call got another id.
    recorded = load(f"{NEW}-v1-chat-loop-turn2")["request"]["body"]
    asked = with_ids(recorded, "call_z8y7x6w5")
    assert "call_wt4fn5vv" in json_body(recorded) and "call_wt4fn5vv" not in json_body(asked)
    prints = fingerprint(ChatRequest(model="m", messages=asked["messages"]))
    assert fingerprint(ChatRequest(model="m", messages=recorded["messages"])) == prints
    assert request_meaning(json_body(recorded)) == request_meaning(json_body(asked))
    path = cassette(tmp_path, json.dumps(recorded, ensure_ascii=False), prints)
    assert replays(path, json_body(asked), prints)
    # The ids are all that is left out: another tool result is another request.
    changed = with_ids(recorded, "call_z8y7x6w5")
    changed["messages"][-1]["content"] = "other"
    with pytest.raises(Exception, match="stale cassette"):
        replays(path, json_body(changed), prints)


@pytest.mark.parametrize("name", [f"{NEW}-api-chat-loop-turn2", f"{NEW}-api-chat-tag-recipe"])
def test_a_captured_request_replays_whatever_its_key_order(tmp_path: Path, name: str) -> None:
    """The capture wrote its request with `json.dumps` (spaces, its own key order); the
    plugin writes compact JSON. Matching reads meaning, so neither the spacing nor any key
    order (0.14.0 keeps argument and schema key order as sent) makes the recording stale."""
    body = load(name)["request"]["body"]
    prints = {"model": "m"}
    path = cassette(tmp_path, json.dumps(body, ensure_ascii=False), prints)
    for seed in range(5):
        assert replays(path, json_body(shuffled(body, random.Random(seed))), prints)


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
    runtime.pool._clients[runtime.server] = Scripted()  # type: ignore[assignment]
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}])
    request.tools.append({"type": "function", "function": {"name": "render"}})
    seen: list[str] = []

    def judge(text: str) -> Verdict:
        seen.append(text)
        return Verdict(passed=True, label="ok", failure=None)

    record, _ = runtime.ask(request, "tool", judge, 0)
    assert seen == ["[]"]  # the call's body, judged as usual
    assert record.reply.startswith('tool_calls: [{"id": "call_77", "name": "render"')
