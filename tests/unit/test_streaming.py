"""Withholding streamed content that opens like a call or a card."""

from __future__ import annotations

import json

import pytest
from streams import streamed

from pytest_cardprobe.judge.withhold import ContentGate
from pytest_cardprobe.wire.ollama_stream import parse_ollama_stream

TOOL = "render_adaptive_card"
CALL = '{"name": "render_adaptive_card", "arguments": {"body": [{"type": "TextBlock"}]}}'


def pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def run_gate(text: str) -> tuple[str, str]:
    gate = ContentGate([TOOL])
    early = "".join(gate.feed(p) for p in pieces(text))
    gate.finish()
    return early, gate.shown


def test_plain_prose_is_released_as_it_arrives() -> None:
    early, shown = run_gate("Sure, pick any day next week.")
    assert early == shown == "Sure, pick any day next week."


@pytest.mark.parametrize(
    "text",
    [
        CALL,
        f"  <tool_call>{CALL}</tool_call>",
        f"```json\n{CALL}\n```",
        f"[TOOL_CALLS][{CALL}]",
        f"<|python_tag|>{CALL}",
    ],
)
def test_text_written_call_is_never_shown(text: str) -> None:
    early, shown = run_gate(text)
    assert early == "" and shown == ""


def test_json_that_is_not_a_call_is_released_at_the_end() -> None:
    card = json.dumps([{"type": "Input.Date", "id": "d"}])
    early, shown = run_gate(card)
    assert early == ""
    assert shown == card


def test_malformed_call_attempt_is_not_shown_either() -> None:
    early, shown = run_gate('{"name": "render_adaptive_card", "arguments": {"body": [}')
    assert early == shown == ""


def test_undecided_prefix_waits_for_more() -> None:
    gate = ContentGate([TOOL])
    assert gate.feed("<to") == ""  # could become <tool_call>
    assert gate.feed("day is fine") == "<today is fine"


def test_gate_fed_from_a_parsed_ollama_stream_withholds_the_call() -> None:
    chunks = [{"message": {"content": p}, "done": False} for p in pieces(CALL)]
    chunks.append({"message": {"content": ""}, "done": True, "done_reason": "stop"})
    lines = [json.dumps(c) for c in chunks]
    reply = parse_ollama_stream(streamed("ollama", lines))
    assert reply.content == CALL
    gate = ContentGate([TOOL])
    early = "".join(gate.feed(c["message"]["content"]) for c in chunks)
    gate.finish()
    assert early == gate.shown == ""
