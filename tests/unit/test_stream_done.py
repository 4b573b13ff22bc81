"""A stream ends where a client stops reading it: Ollama's first ``done: true`` chunk,
OpenAI's ``data: [DONE]``. Whatever a server sends after that is no part of the reply: it
is neither checked nor judged (and a recording keeps it as sent)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from streams import streamed

from pytest_cardprobe.wire.ollama_stream import parse_ollama_stream
from pytest_cardprobe.wire.openai_stream import parse_openai_stream
from pytest_cardprobe.wire.shapes import reply_problem

CARD = json.dumps([{"type": "Input.Date", "id": "when"}])


def chunk(content: str = "", done: bool = False, **extra: Any) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": content}, "done": done, **extra}


def lines(*chunks: dict[str, Any]) -> list[str]:
    return [json.dumps(c) for c in chunks]


def test_a_chunk_after_done_is_not_appended() -> None:
    """Defect 8: an empty reply followed by a card after ``done`` was judged as the card."""
    stream = lines(chunk("", done=True, done_reason="stop"), chunk(CARD, done=True))
    reply = parse_ollama_stream(streamed("ollama", stream))
    assert reply.content == "" and reply.pieces == ()
    assert reply.finish_reason == "stop" and reply.raw["chunks"] == 1


def test_what_follows_done_is_not_checked_either() -> None:
    """Garbage after ``done`` makes no malformed reply: the client never reads it."""
    text = "\n".join([*lines(chunk("Hi"), chunk(done=True)), "not json", "[1]", '{"error":"x"}'])
    assert reply_problem("ollama", True, text) is None
    assert parse_ollama_stream(streamed("ollama", text.splitlines())).content == "Hi"


def test_the_openai_stream_ends_at_done_too() -> None:
    event = 'data: {"choices":[{"delta":{"content":"%s"}}]}'
    text = "\n".join([event % "Hi", "data: [DONE]", event % "more", "data: {oops"])
    assert reply_problem("openai", True, text) is None
    assert parse_openai_stream(streamed("openai", text.splitlines())).content == "Hi"


# Any line a server could send: JSON chunks (done or not, errors, calls), garbage, blanks.
_TRAILING = st.one_of(
    st.builds(lambda c, d: json.dumps(chunk(c, d)), st.text(max_size=20), st.booleans()),
    st.builds(lambda e: json.dumps({"error": e}), st.text(max_size=20)),
    st.text(max_size=30).filter(lambda t: "\n" not in t and "\r" not in t),
    st.just(json.dumps(chunk(CARD, True))),
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    before=st.lists(st.text(max_size=12), max_size=6),
    after=st.lists(_TRAILING, max_size=6),
)
def test_the_reply_is_the_stream_cut_at_its_first_done(before: list[str], after: list[str]) -> None:
    """Property: whatever follows the first ``done: true``, the reply and the shape check are
    those of the stream cut there."""
    head = lines(*(chunk(c) for c in before), chunk(done=True, done_reason="stop"))
    whole = "\n".join([*head, *after])
    # splitlines, as the client splits: a \x1c or \u2028 in a text is a line break there too.
    assert reply_problem("ollama", True, whole) == reply_problem("ollama", True, "\n".join(head))
    cut = parse_ollama_stream(streamed("ollama", head))
    got = parse_ollama_stream(streamed("ollama", whole.splitlines()))
    assert (got.content, got.pieces, got.raw) == (cut.content, cut.pieces, cut.raw)
