"""Route ``swallowed``: the server generated tokens and delivered neither an answer nor a call.

Ollama 0.33.0 reads SmolLM2's tag-recipe call inside out and drops it (ollama/ollama#12039
in 0.11.7): the reply says 74 tokens were generated, its content is `{\n  "tag": "` and it
has no `tool_calls`. Every reply below is that real exchange, or another real one
(tests/unit/data/wire/, README.md there), read as the plugin reads a server's reply.
"""

from __future__ import annotations

import pytest
from captured import NEW, OLD, chat_captures, generated, load, reply_of, tool_sample
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.judge.call import judge_calls
from pytest_cardprobe.judge.routing import answer_of, swallowed, turn_of, wrapper_fragment
from pytest_cardprobe.score.aggregate import aggregate
from pytest_cardprobe.score.html import html_report
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.score.report import scoreboard_lines
from pytest_cardprobe.suite.calls import CallSpec, Expectation
from pytest_cardprobe.types import ChatReply, ProbeResult, SampleRecord

CARD_TOOL = "render_adaptive_card"
SWALLOWED = [
    f"{NEW}-api-chat-tag-recipe",
    f"{NEW}-api-chat-tag-recipe-stream",
    f"{NEW}-v1-chat-tag-recipe-swallowed",
]
LABEL = (
    'swallowed: 74 tokens generated, content only a tool-call fragment \'{ "tag": "\', no tool call'
)


@pytest.mark.parametrize("name", SWALLOWED)
def test_the_dropped_call_is_route_swallowed_on_the_tool_channel(name: str) -> None:
    reply = reply_of(name)
    assert not reply.tool_calls and generated(reply) == 74
    answer = answer_of(reply, "tool", CARD_TOOL, generated(reply))
    assert (answer.route, answer.swallowed, answer.text) == ("swallowed", LABEL, "")


@pytest.mark.parametrize("name", SWALLOWED)
def test_the_dropped_call_is_a_malformed_call_turn(name: str) -> None:
    reply = reply_of(name)
    turn = turn_of(reply, [CARD_TOOL], generated(reply))
    assert turn.route == "swallowed" and not turn.calls
    want = Expectation(kind="call", calls=(CallSpec(CARD_TOOL),))
    verdict = judge_calls([turn], want, load(name)["request"]["body"]["tools"])
    assert (verdict.passed, verdict.failure, verdict.label) == (False, "malformed", LABEL)
    # Also where no call was wanted: the model made one, and nobody can say what it was.
    verdict = judge_calls([turn], Expectation(kind="no_call"), [])
    assert (verdict.failure, verdict.label) == ("malformed", LABEL)


def test_no_other_real_reply_is_swallowed() -> None:
    """Across every captured chat reply (both Ollama releases, llama-server; plain, cut,
    calls, loops, thinking), only the three dropped calls are swallowed, with or without
    a tool declared, and the stream whose server said it could not parse the call
    (tests/unit/test_unparsed_calls.py)."""
    found = set()
    for name in chat_captures():
        reply = reply_of(name)
        if swallowed(reply, generated(reply), tools=True):
            found.add(name)
        if reply.unparsed is None:
            assert swallowed(reply, generated(reply), tools=False) is None or not reply.content
    assert found == {*SWALLOWED, "ollama-0.33.0-api-chat-unparsed-stream"}


def test_the_same_recipe_on_0_11_is_a_real_call() -> None:
    for name in (f"{OLD}-api-chat-tag-recipe", f"{OLD}-api-chat-tag-recipe-stream"):
        reply = reply_of(name)
        assert answer_of(reply, "tool", CARD_TOOL, generated(reply)).route == "tool_calls"


@pytest.mark.parametrize("release", [OLD, NEW])
def test_a_call_cut_by_the_token_limit_is_truncated_not_swallowed(release: str) -> None:
    # Cut at num_predict 24 inside the call: the same fragment, but finish reason `length`.
    reply = reply_of(f"{release}-api-chat-tag-recipe-cut")
    assert reply.finish_reason == "length" and wrapper_fragment(reply.content)
    answer = answer_of(reply, "tool", CARD_TOOL, generated(reply))
    assert answer.route == "content" and answer.swallowed is None


def test_the_prose_channel_reads_a_fragment_as_content() -> None:
    # Without a declared tool no server parser was at work: the fragment is the model's text.
    reply = reply_of(f"{NEW}-api-chat-tag-recipe")
    assert answer_of(reply, "prose", None, generated(reply)).route == "content"


def test_tokens_spent_and_nothing_delivered_is_swallowed_on_any_channel() -> None:
    # No capture has an empty reply with tokens counted (no recipe made a server drop all of
    # it); these replies are the swallowed capture's, with its content taken away.
    real = reply_of(f"{NEW}-api-chat-tag-recipe")
    empty = ChatReply("", finish_reason=real.finish_reason, raw=real.raw)
    want = "swallowed: 74 tokens generated, no content and no tool call"
    assert answer_of(empty, "prose", None, generated(empty)).swallowed == want
    assert answer_of(empty, "tool", CARD_TOOL, generated(empty)).swallowed == want
    # One token is the end of the turn, not a dropped call; tokens spent thinking are not
    # dropped either; a server that counts nothing cannot say.
    assert swallowed(empty, 1, tools=True) is None
    assert swallowed(ChatReply("", thinking="Three plus three."), 11, tools=True) is None
    assert swallowed(empty, None, tools=True) is None


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{\n  "tag": "', True),
        ("<tool_call>", True),
        ("  <tool_call>\n", True),
        ("<tool_call></tool_call>", True),
        ("{", True),
        ('{"name": "', True),
        ("[TOOL_CALLS]", True),
        ("Hello there", False),
        ('{"type": "TextBlock"}', False),
        ('{"name": "render_adaptive_card", "arguments": {}}', False),
        ("", False),
    ],
)
def test_what_counts_as_a_bare_fragment(content: str, fragment: bool) -> None:
    assert wrapper_fragment(content) is fragment


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.text(min_size=1, max_size=40).filter(lambda t: any(c.isalnum() for c in t)))
def test_text_with_any_word_after_the_opening_is_never_a_fragment(text: str) -> None:
    # What follows a wrapper's opening is the call (or an answer): never a bare fragment.
    assert not wrapper_fragment('{"tag": "<tool_call>", "name": "x", ' + text)
    assert not wrapper_fragment("<tool_call>" + text + "</tool_call>x")


# ------------------------------------------------------------------------ the arm's counts


def result(case: str, record: SampleRecord) -> ProbeResult:
    status = "passed" if record.passed else "failed"
    nodeid = f"cards.yaml::{case}[m-tool-cold]"
    return ProbeResult(nodeid, "cards", "m", "tool", "cold", case, status, [record])


def test_an_arm_counts_swallowed_samples_and_adoption_counts_them_as_no_call() -> None:
    dropped = tool_sample(f"{NEW}-api-chat-tag-recipe")
    assert (dropped.route, dropped.failure, dropped.label) == ("swallowed", "malformed", LABEL)
    assert dropped.reply == '{\n  "tag": "'  # the content as it came, shown in reports
    made = tool_sample(f"{NEW}-api-chat-json-start-recipe")
    assert made.route == "tool_calls" and made.passed
    (arm,) = aggregate([result("a", dropped), result("b", made)])
    data = arm.to_dict()
    assert data["routes"]["swallowed"] == 1 and data["route_passed"]["swallowed"] == 0
    assert data["failures"]["malformed"] == 1
    assert arm.adoption_counts == (1, 2)  # the swallowed sample made no call
    header, row = scoreboard_lines([arm], None)[:2]
    assert row[header.index("swallowed") :].split()[0] == "1"  # its own column
    assert "swallowed 0/1; tool_calls 1/1" in row  # and in pass_by_route
    table = [line for line in markdown([arm], None).splitlines() if line.startswith("| ")]
    assert "| swallowed |" in table[0] and "| 1 | swallowed 0/1; tool_calls 1/1 |" in table[1]
    page = html_report([arm], [result("a", dropped), result("b", made)], None, {})
    assert "swallowed" in page


def test_a_call_arm_leaves_swallowed_samples_out_of_adoption() -> None:
    # In a call arm adoption is over the samples that made a call, structured or as text.
    record = SampleRecord(0, "swallowed", False, LABEL, "malformed")
    nodeid = "tools.yaml::c[m-call-cold]"
    (arm,) = aggregate([ProbeResult(nodeid, "tools", "m", "call", "cold", "c", "failed", [record])])
    assert arm.adoption_counts is None and arm.to_dict()["routes"]["swallowed"] == 1
