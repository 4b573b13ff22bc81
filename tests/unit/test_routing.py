"""Which route a reply took and which text the judge scores: pytest_cardprobe.judge.routing."""

from __future__ import annotations

import json

import pytest

from pytest_cardprobe.judge.routing import Answer, answer_of
from pytest_cardprobe.types import ChatReply, ToolCall

CARD = "render_adaptive_card"
BODY = [{"type": "TextBlock", "text": "hi"}]
BODY_JSON = json.dumps(BODY)
PROSE_CARD = '{"type": "AdaptiveCard", "version": "1.5", "body": [{"type": "TextBlock"}]}'
TEXT_CALL = (
    '<tool_call>{"name": "render_adaptive_card", "arguments": '
    '{"body": [{"type": "TextBlock", "text": "hi"}]}}</tool_call>'
)
MALFORMED_TEXT_CALL = (
    '<tool_call>{"name": "render_adaptive_card", "arguments": {"body": [}</tool_call>'
)


def reply(content: str = "", *calls: ToolCall) -> ChatReply:
    return ChatReply(content=content, tool_calls=calls)


class TestContentChannel:
    @pytest.mark.parametrize(
        ("channel", "tool_name"),
        [("prose", CARD), ("prose", None), ("tool", None), ("tool", "")],
    )
    def test_content_is_judged_whatever_else_came(
        self, channel: str, tool_name: str | None
    ) -> None:
        got = answer_of(reply(PROSE_CARD, ToolCall(CARD, {"body": BODY})), channel, tool_name)
        assert got == Answer("content", PROSE_CARD)

    def test_prose_channel_ignores_a_text_written_call(self) -> None:
        assert answer_of(reply(TEXT_CALL), "prose", CARD) == Answer("content", TEXT_CALL)


class TestStructuredCalls:
    def test_call_to_declared_tool_judges_its_body(self) -> None:
        got = answer_of(reply("Here is your card.", ToolCall(CARD, {"body": BODY})), "tool", CARD)
        assert got == Answer("tool_calls", BODY_JSON)

    def test_body_keeps_non_ascii_text(self) -> None:
        body = [{"type": "TextBlock", "text": "Grüße, 日付"}]
        got = answer_of(reply("", ToolCall(CARD, {"body": body})), "tool", CARD)
        assert got.text == json.dumps(body, ensure_ascii=False)
        assert "Grüße, 日付" in got.text

    @pytest.mark.parametrize("arguments", [{}, {"card": BODY}, {"title": "x"}])
    def test_call_without_body_has_nothing_to_judge(self, arguments: dict[str, object]) -> None:
        got = answer_of(reply(PROSE_CARD, ToolCall(CARD, arguments)), "tool", CARD)
        assert got == Answer("tool_calls", "")

    def test_first_call_to_declared_tool_wins(self) -> None:
        second = [{"type": "Input.Date", "id": "d"}]
        got = answer_of(
            reply(
                "",
                ToolCall("read_file", {"path": "a"}),
                ToolCall(CARD, {"body": BODY}),
                ToolCall(CARD, {"body": second}),
            ),
            "tool",
            CARD,
        )
        assert got == Answer("tool_calls", BODY_JSON)

    def test_arguments_error_refuses_the_sample(self) -> None:
        bad = ToolCall(CARD, {}, arguments_error="arguments are not valid JSON: boom")
        got = answer_of(reply("", bad), "tool", CARD)
        assert got.route == "tool_calls"
        assert got.text == ""
        assert got.refused == f"{CARD}: arguments are not valid JSON: boom"

    def test_arguments_error_on_another_tool_is_ignored(self) -> None:
        bad = ToolCall("read_file", {}, arguments_error="arguments are not valid JSON")
        got = answer_of(reply(PROSE_CARD, bad, ToolCall(CARD, {"body": BODY})), "tool", CARD)
        assert got == Answer("tool_calls", BODY_JSON)

    def test_call_to_another_tool_only_falls_back_to_content(self) -> None:
        got = answer_of(reply(PROSE_CARD, ToolCall("read_file", {"path": "a"})), "tool", CARD)
        assert got == Answer("content", PROSE_CARD)


class TestTextWrittenCalls:
    @pytest.mark.parametrize(
        "content",
        [
            TEXT_CALL,
            f"Sure!\n{TEXT_CALL}\nDone.",
            f"```json\n{json.dumps({'name': CARD, 'arguments': {'body': BODY}})}\n```",
        ],
        ids=["tagged", "tagged-in-prose", "fenced"],
    )
    def test_recovered_call_judges_its_body(self, content: str) -> None:
        assert answer_of(reply(content), "tool", CARD) == Answer("recovered", BODY_JSON)

    def test_recovered_call_without_body_has_nothing_to_judge(self) -> None:
        content = f'<tool_call>{{"name": "{CARD}", "arguments": {{}}}}</tool_call>'
        assert answer_of(reply(content), "tool", CARD) == Answer("recovered", "")

    def test_structured_call_beats_text_written_one(self) -> None:
        other = [{"type": "Input.Text", "id": "t"}]
        got = answer_of(reply(TEXT_CALL, ToolCall(CARD, {"body": other})), "tool", CARD)
        assert got == Answer("tool_calls", json.dumps(other))

    def test_text_call_recovered_next_to_a_call_to_another_tool(self) -> None:
        got = answer_of(reply(TEXT_CALL, ToolCall("read_file", {"path": "a"})), "tool", CARD)
        assert got == Answer("recovered", BODY_JSON)

    def test_text_call_to_undeclared_tool_is_content(self) -> None:
        content = TEXT_CALL.replace(CARD, "show_card")
        assert answer_of(reply(content), "tool", CARD) == Answer("content", content)

    @pytest.mark.parametrize(
        "content",
        [
            MALFORMED_TEXT_CALL,
            f"<tool_call>{{'name': '{CARD}', 'arguments': {{}}}}</tool_call>",
            f'[TOOL_CALLS]{CARD}[ARGS]{{"body": []',
        ],
        ids=["broken-json", "single-quotes", "truncated-marker"],
    )
    def test_malformed_text_call_is_refused_content(self, content: str) -> None:
        got = answer_of(reply(content), "tool", CARD)
        assert got.route == "content"
        assert got.text == content
        assert got.refused is not None
        assert CARD in got.refused
