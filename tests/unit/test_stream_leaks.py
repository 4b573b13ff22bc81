"""What a streaming chat client would have shown of a real streamed turn (issue 25 item 7).

A naive client shows every content piece as it arrives; a careful one passes them through
``judge.withhold.ContentGate``. The streams below are real (tests/unit/data/wire/, README.md
there): `*-api-chat-text-call-stream` is the JSON-start schema sent without `tools`, so the
server ran no tool parser and SmolLM2's call arrived as text, token by token.
"""

from __future__ import annotations

import pytest
from captured import NEW, OLD, load, reply_of, tool_sample

from pytest_cardprobe.judge.routing import answer_of
from pytest_cardprobe.judge.withhold import ContentGate, exposure
from pytest_cardprobe.score.aggregate import aggregate
from pytest_cardprobe.score.html import html_report
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.score.report import scoreboard_lines
from pytest_cardprobe.types import ProbeResult

CARD_TOOL = "render_adaptive_card"


def streamed_pieces(name: str) -> list[str]:
    """The content of each NDJSON chunk that carried any, straight from the bytes."""
    import json

    body = load(name)["response"]["body"]
    chunks = [json.loads(line) for line in body.splitlines() if line.strip()]
    return [c["message"]["content"] for c in chunks if c["message"].get("content")]


@pytest.mark.parametrize("release", [OLD, NEW])
def test_a_call_written_as_text_reaches_only_the_naive_client(release: str) -> None:
    name = f"{release}-api-chat-text-call-stream"
    reply = reply_of(name)
    assert reply.pieces == tuple(streamed_pieces(name)) and len(reply.pieces) > 50
    assert reply.content.startswith('{\n  "name": "render_adaptive_card"')
    assert answer_of(reply, "tool", CARD_TOOL).route == "recovered"  # recovery claims it
    # The naive client showed all of it, piece by piece; the careful one held it from the
    # first `{` and, since recovery claimed it, never showed it at all.
    assert exposure(reply.pieces, [CARD_TOOL]) == {
        "pieces": len(reply.pieces),
        "shown_early": 0,
        "naive_leak": len(reply.content),
        "careful_leak": 0,
    }
    gate = ContentGate([CARD_TOOL])
    assert [gate.feed(p) for p in reply.pieces] == [""] * len(reply.pieces)
    assert gate.finish() == "" and gate.shown == ""


def test_without_a_declared_tool_the_same_text_is_no_leak() -> None:
    reply = reply_of(f"{NEW}-api-chat-text-call-stream")
    assert exposure(reply.pieces, [])["naive_leak"] == 0


def test_prose_is_shown_as_it_comes_by_both_clients() -> None:
    reply = reply_of(f"{NEW}-api-chat-plain-stream")
    assert exposure(reply.pieces, [CARD_TOOL]) == {
        "pieces": len(reply.pieces),
        "shown_early": len(reply.content),
        "naive_leak": 0,
        "careful_leak": 0,
    }


@pytest.mark.parametrize(
    "name", [f"{OLD}-api-chat-tag-recipe-stream", f"{NEW}-api-chat-tag-recipe-stream"]
)
def test_a_wrapper_fragment_is_held_back_but_is_no_leaked_call(name: str) -> None:
    # The tag recipe streams `{\n  "tag":"` as content (0.11.4 then sends the call whole,
    # 0.33.0 drops it): a naive client showed the fragment, the careful one nothing early.
    reply = reply_of(name)
    assert "".join(reply.content.split()) == '{"tag":"'
    found = exposure(reply.pieces, [CARD_TOOL])
    assert found["shown_early"] == 0 and found["naive_leak"] == found["careful_leak"] == 0


def test_an_arm_counts_the_streamed_samples_that_leaked_a_call() -> None:
    leaked = tool_sample(f"{NEW}-api-chat-text-call-stream")
    prose = tool_sample(f"{NEW}-api-chat-plain-stream")
    assert leaked.route == "recovered" and leaked.stream is not None
    assert leaked.stream["naive_leak"] == len(reply_of(f"{NEW}-api-chat-text-call-stream").content)
    assert prose.stream is not None and prose.stream["naive_leak"] == 0
    results = [
        ProbeResult(f"c.yaml::{case}[m-tool-cold]", "cards", "m", "tool", "cold", case,
                    "passed", [record])
        for case, record in (("a", leaked), ("b", prose))
    ]  # fmt: skip
    (arm,) = aggregate(results)
    assert arm.to_dict()["stream"] == {"samples": 2, "leaked": 1, "careful_leaked": 0}
    header, row = scoreboard_lines([arm], None)[:2]
    assert header.split()[-1] == "leaked" and row.split()[-1] == "1/2"
    table = [line for line in markdown([arm], None).splitlines() if line.startswith("| ")]
    assert table[0].endswith("| leaked |") and table[1].endswith("| 1/2 |")
    assert "leaked" in html_report([arm], results, None, {})
