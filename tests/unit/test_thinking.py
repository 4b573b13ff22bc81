"""Thinking: reasoning is kept out of the judged answer; cut-off replies are ``truncated``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cardprobe.judge.card import judge_card, truncated_verdict
from pytest_cardprobe.judge.routing import answer_of, split_reasoning
from pytest_cardprobe.suite.loader import SuiteError, load_suite
from pytest_cardprobe.types import ChatReply, ChatRequest, FailureClass
from pytest_cardprobe.wire.cassettes.fingerprint import check_fingerprint, fingerprint
from pytest_cardprobe.wire.client import ChatClient, ClientSettings

CARD = '{"type": "AdaptiveCard", "body": [{"type": "Input.Date", "id": "d"}]}'


def judge(text: str) -> str:
    return judge_card(text, accept=["Input.Date"], requires_input=True).label


def test_a_leading_think_block_is_not_part_of_the_answer() -> None:
    content = f"<think>\nThe user wants a date picker. {{not json}}\n</think>\n\n{CARD}"
    answer, reasoning = split_reasoning(content)
    assert answer.strip() == CARD
    assert reasoning.startswith("The user wants a date picker")
    # Judged whole, the reply would not pass; judged without its reasoning, it does.
    assert not judge(content).startswith("ok")
    reply = ChatReply(content=content)
    assert judge(answer_of(reply, "prose", None).text) == "ok Input.Date"


def test_only_a_leading_block_counts_and_an_unclosed_one_is_all_reasoning() -> None:
    later = f"{CARD}\n<think>afterthought</think>"
    assert split_reasoning(later) == (later, "")
    answer, reasoning = split_reasoning("<think>still going when the limit hit")
    assert answer == ""
    assert reasoning == "still going when the limit hit"


def test_a_think_block_before_a_text_written_call_is_skipped_on_the_tool_channel() -> None:
    call = '{"name": "render_adaptive_card", "arguments": {"body": [{"type": "Input.Date"}]}}'
    reply = ChatReply(content=f"<think>call the tool</think>{call}")
    answer = answer_of(reply, "tool", "render_adaptive_card")
    assert answer.route == "recovered"
    assert answer.thinking == "call the tool"


@pytest.mark.parametrize(
    ("text", "was"),
    [("Sure! Here is a date picker for you", "prose"), ('{"type": "AdaptiveCard", "bo', "broken")],
)
def test_a_cut_off_reply_is_truncated_not_declined_or_malformed(text: str, was: str) -> None:
    verdict = judge_card(text, accept=["Input.Date"], requires_input=True)
    assert verdict.label.startswith(was)
    cut = truncated_verdict(verdict, "length")
    assert cut.failure is FailureClass.TRUNCATED
    assert cut.label.startswith("truncated at the token limit (length): ")
    assert not cut.passed
    # The same reply that ended on its own keeps its verdict.
    assert truncated_verdict(verdict, "stop") == verdict


def test_a_passing_reply_at_the_limit_still_passes() -> None:
    verdict = judge_card(CARD, accept=["Input.Date"], requires_input=True)
    assert truncated_verdict(verdict, "length") == verdict


def request(think: str) -> ChatRequest:
    return ChatRequest(model="m", messages=[{"role": "user", "content": "q"}], think=think)


@pytest.mark.parametrize(
    ("think", "ollama", "openai"),
    [
        ("off", False, None),
        ("on", True, "medium"),
        ("low", "low", "low"),
        ("high", "high", "high"),
    ],
)
def test_think_levels_map_to_each_api(think: str, ollama: object, openai: object) -> None:
    for api, want in (("ollama", ollama), ("openai", openai)):
        client = ChatClient(ClientSettings(base_url="http://127.0.0.1:9", api=api))
        try:
            _, body = client.payload(request(think))
        finally:
            client.close()
        key = "think" if api == "ollama" else "reasoning_effort"
        assert body.get(key) == want, (api, body)


def test_thinking_changes_the_fingerprint_only_when_asked_for(tmp_path: Path) -> None:
    assert "thinking" not in fingerprint(request("off"))
    recorded = {"metadata": {"cardprobe": {"fingerprint": fingerprint(request("on"))}}}
    with pytest.raises(Exception, match="thinking changed"):
        check_fingerprint(tmp_path / "c.yaml", recorded, fingerprint(request("off")))


def write(tmp_path: Path, think: str) -> Path:
    (tmp_path / "p.md").write_text("Answer.\n")
    path = tmp_path / "s.yaml"
    path.write_text(
        "cardprobe: 1\nchannels: [prose]\nconditions: [cold]\nprompts: {prose: p.md}\n"
        f"think: {think}\ncases:\n  - id: a\n    prompt: q\n    accept: [TextBlock]\n"
    )
    return path


@pytest.mark.parametrize(("raw", "level"), [("off", "off"), ("on", "on"), ("high", "high")])
def test_suite_key_think(tmp_path: Path, raw: str, level: str) -> None:
    assert load_suite(write(tmp_path, raw)).think == level


def test_suite_key_think_rejects_other_values(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"s\.yaml.*think.*off, on, low, medium, high"):
        load_suite(write(tmp_path, "max"))
