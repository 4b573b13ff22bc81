"""A call suite's way of asking: one turn, or a tool loop with the case's scripted results."""

from __future__ import annotations

import json
from dataclasses import replace

from pytest_cardprobe.judge.call import ModelTurn, judge_calls, scripted_result
from pytest_cardprobe.judge.routing import turn_of
from pytest_cardprobe.judge.withhold import exposure
from pytest_cardprobe.run.asking import Exchange, call_id, figures, infra_record
from pytest_cardprobe.suite.calls import ScriptedResult
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.types import ChatReply, ChatRequest, Message, SampleRecord, trim
from pytest_cardprobe.wire.errors import InfraError


def feedback_messages(
    api: str, reply: ChatReply, turn: ModelTurn, results: tuple[ScriptedResult, ...], number: int
) -> list[Message]:
    """The messages that hand a turn's calls back to the model with their scripted results.

    The assistant's calls come first, then one ``role: tool`` message per call, in call
    order. Ollama names the tool (``tool_name``) and takes arguments as an object; where the
    server gave a call an id (Ollama 0.12.10 and later), the call carries it back and its
    result quotes it as ``tool_call_id``, as Ollama's own clients do; a call without one
    (older releases, or a call recovered from text) goes back without either. The OpenAI
    wire always quotes the call's id (``tool_call_id``) and takes arguments as a JSON string;
    a call the server gave no id there gets ``call_<turn>_<n>``.
    """
    answers = [scripted_result(call, results) for call in turn.calls]
    if api == "openai":
        ids = [call.id or f"call_{number}_{i}" for i, call in enumerate(turn.calls)]
        assistant: Message = {
            "role": "assistant",
            "content": reply.content,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call_id, call in zip(ids, turn.calls, strict=True)
            ],
        }
        tools: list[Message] = [
            {"role": "tool", "tool_call_id": call_id, "content": answer}
            for call_id, answer in zip(ids, answers, strict=True)
        ]
        return [assistant, *tools]
    assistant = {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [
            {**call_id(call), "function": {"name": call.name, "arguments": call.arguments}}
            for call in turn.calls
        ],
    }
    return [
        assistant,
        *(
            {
                "role": "tool",
                "tool_name": call.name,
                "content": answer,
                **({"tool_call_id": call.id} if call.id else {}),
            }
            for call, answer in zip(turn.calls, answers, strict=True)
        ),
    ]


def shown_turn(number: int, turn: ModelTurn, many: bool) -> str:
    """One turn as the reports show it (numbered when the loop had several)."""
    text = turn.content
    if turn.route == "tool_calls":
        calls = [{**call_id(c), "name": c.name, "arguments": c.arguments} for c in turn.calls]
        text = f"tool_calls: {json.dumps(calls, ensure_ascii=False)}" + (
            f"\ncontent: {turn.content}" if turn.content else ""
        )
    return f"turn {number + 1}: {text}" if many else text


def turn_request(
    exchange: Exchange, base: ChatRequest, extra: list[Message], probe: Probe
) -> ChatRequest:
    """A fresh request per turn, adjusted by the hook each time.

    So a conftest can shape the first turn of a loop differently from the turns after a
    tool result.
    """
    request = replace(
        base,
        messages=[*base.messages, *extra],
        tools=[dict(t) for t in base.tools],
        options=dict(base.options),
    )
    exchange.adjust(request, probe)
    return request


class ToolLoop:
    """A call suite's sample: one turn, or a tool loop up to the case's ``max_turns``."""

    def __init__(
        self,
        exchange: Exchange,
        base: ChatRequest,
        probe: Probe,
        server: str,
        live: bool | None = None,
    ) -> None:
        self.exchange = exchange
        self.base = base
        self.probe = probe
        self.server = server
        self.live = live

    def sample(self, index: int) -> tuple[SampleRecord, ChatReply | None]:
        """The record and the last reply (None when the sample ended in infra)."""
        probe = self.probe
        case = probe.case
        expect = case.expect
        assert expect is not None, "a call suite's case always has an expectation"
        limit = case.max_turns if expect.multi_turn else 1
        extra: list[Message] = []
        turns: list[ModelTurn] = []
        shown: list[str] = []
        added: dict[str, float] = {}
        shown_stream: dict[str, int] = {}
        reasoning: list[str] = []
        finish: str | None = None
        reply: ChatReply | None = None
        for number in range(limit):
            request = turn_request(self.exchange, self.base, extra, probe)
            try:
                reply, wall = self.exchange.send(request, self.server, self.live)
            except InfraError as exc:
                return infra_record(index, exc), None
            found = figures(reply, wall)
            turn = turn_of(reply, probe.suite.tool_names, found.get("generated_tokens"))
            turns.append(turn)
            shown.append(shown_turn(number, turn, expect.multi_turn))
            reasoning.extend(t for t in (reply.thinking.strip(), turn.thinking) if t)
            # A loop's figures are its turns' added up (tokens, durations, wall time).
            for key, value in found.items():
                added[key] = added.get(key, 0.0) + value
            if reply.pieces:
                for key, value in exposure(reply.pieces, probe.suite.tool_names).items():
                    shown_stream[key] = shown_stream.get(key, 0) + value
            finish = reply.finish_reason
            if not expect.multi_turn or not turn.calls:
                break
            api = self.exchange.settings.api
            extra.extend(feedback_messages(api, reply, turn, case.results, number))
        verdict = judge_calls(
            turns, expect, probe.suite.tools, max_turns=limit if expect.multi_turn else None
        )
        record = SampleRecord.from_verdict(index, turns[0].route, verdict, "\n".join(shown), finish)
        record.calls = [[c.name for c in t.calls] for t in turns]
        record.turns = len(turns)
        record.args_as_string = sum(c.arguments_as_string for t in turns for c in t.calls)
        record.thinking = trim("\n".join(reasoning))
        record.figures = added
        record.stream = shown_stream or None
        return record, reply
