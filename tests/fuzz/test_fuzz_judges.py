"""Fuzz: the judges on hostile replies, and a tool loop's next request built from them.

Replies as a model might write them (prose, cards, fenced cards, calls written as text,
think blocks; ``test_fuzz_replies.content``) and structured calls whose arguments came
through the wire's own reading (``wire.calls.decode_arguments`` of hostile JSON text), judged
by ``judge/card.judge_card``, ``judge/routing.answer_of`` and ``turn_of``,
``judge/recovery.recover_tool_calls`` and ``judge/call.judge_calls`` against every case of
the shipped call suite. Every judge returns a verdict (never raises), its label is one line
of bounded length, the verdict survives the JSON report, and the next turn of a tool loop
(``run/loop.feedback_messages``) is a request both APIs can send.

Budget: see ``test_fuzz_replies.py``.
"""

from __future__ import annotations

import json

from fuzzing import TEXT, fuzz_settings, mutated, to_json
from hypothesis import given
from hypothesis import strategies as st
from pipeline import CALLS as CALL_SUITE
from test_fuzz_replies import CALLS, content

from pytest_cardprobe.judge.call import LABEL_LIMIT, judge_calls, scripted_result
from pytest_cardprobe.judge.card import judge_card
from pytest_cardprobe.judge.recovery import recover_tool_calls
from pytest_cardprobe.judge.routing import answer_of, turn_of
from pytest_cardprobe.run.loop import feedback_messages
from pytest_cardprobe.types import ChatReply, ChatRequest, ToolCall, Verdict
from pytest_cardprobe.wire.body import json_body
from pytest_cardprobe.wire.calls import decode_arguments
from pytest_cardprobe.wire.client import ChatClient, ClientSettings

CARD_LABEL_LIMIT = 120  # docs/design.md §5


# What a reply's text can be: the wire decodes UTF-8 strictly and refuses JSON escapes of
# lone surrogates, so a reply holds valid text (a model may still type "\ud800" in it).
def _decoded(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


TEXT_OF_A_REPLY = content().map(_decoded)
NAMES = [*CALLS, "not_declared", ""]
CLIENTS = [
    ChatClient(ClientSettings("http://127.0.0.1:9", api=api)) for api in ("ollama", "openai")
]


def _judged(verdict: Verdict, limit: int) -> None:
    assert isinstance(verdict, Verdict)
    assert "\n" not in verdict.label and len(verdict.label) <= limit, verdict.label
    json.dumps(verdict.to_dict(), allow_nan=False, ensure_ascii=False).encode("utf-8")


@st.composite
def wire_call(draw: st.DrawFn) -> ToolCall:
    """A structured call as the wire reads it: arguments from an object or from JSON text."""
    name = draw(st.sampled_from(NAMES))
    tree = draw(mutated(CALLS.get(name) or {"x": 1}))
    arguments, error, as_string = decode_arguments(to_json(tree), object_expected=True)
    return ToolCall(
        name,
        arguments,
        error,
        id=draw(st.none() | TEXT.map(_decoded)),
        arguments_as_string=as_string,
    )


@fuzz_settings(400)
@given(text=TEXT_OF_A_REPLY, accept=st.sampled_from([[], ["Input.Date"], ["Table", "FactSet"]]))
def test_the_card_judge_gives_a_one_line_verdict_whatever_the_reply(
    text: str, accept: list[str]
) -> None:
    for allow in (False, True):
        verdict = judge_card(text, accept=accept, requires_input=bool(accept), allow_unknown=allow)
        _judged(verdict, CARD_LABEL_LIMIT)


@fuzz_settings(300)
@given(text=TEXT_OF_A_REPLY, calls=st.lists(wire_call(), max_size=3))
def test_routing_and_recovery_take_any_reply(text: str, calls: list[ToolCall]) -> None:
    reply = ChatReply(content=text, tool_calls=tuple(calls))
    recovery = recover_tool_calls(text, list(CALLS))
    for call in recovery.calls:
        json.dumps(call.arguments, allow_nan=False)
    for channel in ("prose", "tool"):
        answer = answer_of(reply, channel, "render_adaptive_card")
        _judged(judge_card(answer.text, accept=["Input.Date"], requires_input=True), 120)
    turn = turn_of(reply, CALL_SUITE.tool_names)
    for case in CALL_SUITE.cases:
        assert case.expect is not None
        _judged(judge_calls([turn], case.expect, CALL_SUITE.tools, max_turns=4), LABEL_LIMIT)
        for call in turn.calls:
            scripted_result(call, case.results)


@fuzz_settings(200)
@given(
    text=TEXT_OF_A_REPLY,
    calls=st.lists(wire_call(), min_size=1, max_size=3),
    number=st.integers(0, 5),
)
def test_a_tool_loop_hands_any_calls_back_in_a_request_both_apis_can_send(
    text: str, calls: list[ToolCall], number: int
) -> None:
    reply = ChatReply(content=text, tool_calls=tuple(calls))
    turn = turn_of(reply, CALL_SUITE.tool_names)
    case = next(c for c in CALL_SUITE.cases if c.id == "find_then_read")
    for api, client in zip(("ollama", "openai"), CLIENTS, strict=True):
        extra = feedback_messages(api, reply, turn, case.results, number)
        request = ChatRequest("m", [{"role": "user", "content": "q"}, *extra], CALL_SUITE.tools)
        _, _, body = client.wire_request(request)
        body.encode("utf-8")
        json_body(extra)
