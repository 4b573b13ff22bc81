"""The real exchanges in tests/unit/data/wire/ are well formed and show what they claim.

These bytes came from real servers (tests/live/capture_wire.py, README.md beside them). The
checks below pin the wire differences between Ollama 0.11.4 and 0.33.0 that the plugin must
cope with, so a re-capture that changes them fails here and gets a note in
docs/real-servers.md ("Ollama 0.11.4 and 0.33.0 on the wire").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

WIRE = Path(__file__).parent / "data" / "wire"
FILES = sorted(WIRE.glob("*.json"))
OLD, NEW = "ollama-0.11.4", "ollama-0.33.0"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((WIRE / f"{name}.json").read_text())
    return data


def events(name: str) -> list[Any]:
    """The parsed items of a reply: one JSON document, NDJSON lines or SSE `data:` events."""
    response = load(name)["response"]
    body, kind = response["body"], response["content_type"]
    if kind.startswith("application/x-ndjson"):
        return [json.loads(line) for line in body.splitlines() if line.strip()]
    if kind.startswith("text/event-stream"):
        assert body.endswith("data: [DONE]\n\n")
        blocks = [b for b in body.split("\n\n") if b]
        assert all(b.startswith("data: ") for b in blocks)
        return [json.loads(b[len("data: ") :]) for b in blocks[:-1]]
    return [json.loads(body)]


def message(name: str) -> dict[str, Any]:
    (reply,) = events(name)
    msg: dict[str, Any] = reply["message"]
    return msg


def test_there_are_captures_from_each_server() -> None:
    kinds = {path.name.split("-api-")[0].split("-v1-")[0] for path in FILES}
    assert {OLD, NEW, "llama-server"} <= kinds


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_capture_is_one_well_formed_exchange(path: Path) -> None:
    data = json.loads(path.read_text())
    assert data["name"] == path.stem
    assert data["server"]["kind"] in ("ollama", "llama-server")
    if data["server"]["kind"] == "ollama":
        assert path.stem.startswith(f"ollama-{data['server']['version']}-")
    assert data["request"]["method"] in ("GET", "POST")
    assert isinstance(data["response"]["status"], int)
    assert events(path.stem)  # the body parses as its Content-Type says


def test_tool_call_ids_and_index_appear_in_0_33() -> None:
    (old,) = message(f"{OLD}-api-chat-tag-recipe")["tool_calls"]
    (new,) = message(f"{NEW}-api-chat-json-start-recipe")["tool_calls"]
    assert set(old) == {"function"} and "index" not in old["function"]
    assert new["id"].startswith("call_") and new["function"]["index"] == 0


def test_tag_recipe_is_swallowed_on_0_33_and_read_on_0_11() -> None:
    old, new = load(f"{OLD}-api-chat-tag-recipe"), load(f"{NEW}-api-chat-tag-recipe")
    assert message(old["name"])["tool_calls"]
    (reply,) = events(new["name"])
    assert "tool_calls" not in reply["message"]
    assert reply["eval_count"] > 50  # the whole call was generated ...
    assert "".join(reply["message"]["content"].split()) == '{"tag":"'  # ... and dropped
    (v1,) = events(f"{NEW}-v1-chat-tag-recipe-swallowed")
    assert v1["usage"]["completion_tokens"] > 50
    assert v1["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in v1["choices"][0]["message"]


def test_a_call_cut_by_the_token_limit_keeps_only_the_text_before_the_tag() -> None:
    for release in (OLD, NEW):
        (reply,) = events(f"{release}-api-chat-tag-recipe-cut")
        assert reply["done_reason"] == "length" and "tool_calls" not in reply["message"]
        assert "".join(reply["message"]["content"].split()) == '{"tag":"'


def test_a_loop_sends_the_call_id_back_when_the_server_gave_one() -> None:
    for release, has_id in ((OLD, False), (NEW, True)):
        turn2 = load(f"{release}-api-chat-loop-turn2")["request"]["body"]
        assistant, tool = turn2["messages"][-2:]
        assert tool["tool_name"] == assistant["tool_calls"][0]["function"]["name"]
        assert ("tool_call_id" in tool) == has_id
        if has_id:
            assert tool["tool_call_id"] == assistant["tool_calls"][0]["id"]
        assert load(f"{release}-api-chat-loop-turn2")["response"]["status"] == 200


def test_thinking_is_parsed_by_0_33_only() -> None:
    new = events(f"{NEW}-api-chat-think-on-stream")
    thinking = [c for c in new if c["message"].get("thinking")]
    content = [c for c in new if c["message"]["content"]]
    assert thinking and content and new.index(thinking[-1]) < new.index(content[0])
    # No chunk carries both: thinking and content arrive in chunks of their own.
    assert not [c for c in new if c["message"].get("thinking") and c["message"]["content"]]
    old = events(f"{OLD}-api-chat-think-on-stream")
    assert not any("thinking" in c["message"] for c in old)
    assert "</think>" in "".join(c["message"]["content"] for c in old)


def test_0_33_thinks_when_think_is_not_sent() -> None:
    assert message(f"{NEW}-api-chat-think-default")["thinking"]
    assert "thinking" not in message(f"{OLD}-api-chat-think-default")
    off = message(f"{NEW}-api-chat-think-off")
    assert "thinking" not in off and "<think>" in off["content"]  # unparsed, as written
    assert load(f"{OLD}-api-chat-think-high")["response"]["status"] == 400
    assert message(f"{NEW}-api-chat-think-high")["thinking"]


def test_v1_stream_shapes() -> None:
    for release in (OLD, NEW):
        chunks = events(f"{release}-v1-chat-plain-stream")
        *body, finish, usage = chunks
        assert usage["choices"] == [] and usage["usage"]["completion_tokens"] > 0
        (choice,) = finish["choices"]
        assert choice["finish_reason"] == "stop"
        # 0.33.0 sends the finish reason on an empty delta; 0.11.4 on an empty content.
        expected = {} if release == NEW else {"role": "assistant", "content": ""}
        assert choice["delta"] == expected
        assert all(c["choices"][0]["finish_reason"] is None for c in body)
    new_length = events(f"{NEW}-v1-chat-call-length-stream")
    assert [c["choices"][0]["finish_reason"] for c in new_length[:-1]] == [None, "length"]
    assert new_length[-1]["choices"] == []


def test_unknown_model_message_changed() -> None:
    old = json.loads(load(f"{OLD}-api-chat-unknown-model")["response"]["body"])
    new = json.loads(load(f"{NEW}-api-chat-unknown-model")["response"]["body"])
    assert old == {"error": 'model "no-such-model:0b" not found, try pulling it first'}
    assert new == {"error": "model 'no-such-model:0b' not found"}


def test_llama_server_streams_call_fragments_and_usage_last() -> None:
    chunks = events("llama-server-v1-chat-call-stream")
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    fragments = [
        frag for c in chunks for ch in c["choices"] for frag in ch["delta"].get("tool_calls", [])
    ]
    assert fragments[0]["function"]["name"] == "render_adaptive_card" and fragments[0]["id"]
    joined = "".join(f["function"]["arguments"] for f in fragments)
    assert json.loads(joined)["body"][0]["type"] == "TextBlock"
    assert chunks[-2]["choices"][0] == {"finish_reason": "tool_calls", "index": 0, "delta": {}}
    assert chunks[-1]["choices"] == [] and "timings" in chunks[-1]
