"""A call suite's way of asking: one turn, or a tool loop with the case's scripted results."""

from __future__ import annotations

import json
from dataclasses import replace

from pytest_cardprobe.judge.call import ModelTurn, judge_calls, not_expected, scripted_result
from pytest_cardprobe.judge.routing import turn_of
from pytest_cardprobe.judge.withhold import exposure
from pytest_cardprobe.run.asking import Exchange, call_id, figures, infra_record
from pytest_cardprobe.suite.calls import ScriptedResult
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.request import assistant_calls, tool_answer
from pytest_cardprobe.types import ChatReply, ChatRequest, Message, SampleRecord, trim
from pytest_cardprobe.wire.errors import InfraError

#: How each API carries a forced turn (``ChatRequest.tool_choice``), as the labels name it.
FORCED_BY: dict[str, str] = {"ollama": "format", "openai": "tool_choice"}


def forced_by(api: str, reply: ChatReply) -> str:
    """How a forced turn was sent, as :data:`judge.call.UNFORCED_LABELS` names it: Ollama's
    ``/v1`` (its replies say ``system_fingerprint: fp_ollama``) takes ``tool_choice`` and
    drops it, which its label says."""
    how = FORCED_BY.get(api, "tool_choice")
    if how == "tool_choice" and reply.raw.get("system_fingerprint") == "fp_ollama":
        return "tool_choice/ollama"
    return how


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
        ids: list[str | None] = [
            call.id or f"call_{number}_{i}" for i, call in enumerate(turn.calls)
        ]
    else:
        ids = [call.id for call in turn.calls]
    calls = [(c.name, c.arguments, i) for c, i in zip(turn.calls, ids, strict=True)]
    return [
        assistant_calls(api, reply.content, calls),
        *(
            tool_answer(api, call.name, answer, call_id)
            for call, answer, call_id in zip(turn.calls, answers, ids, strict=True)
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
    exchange: Exchange,
    base: ChatRequest,
    extra: list[Message],
    probe: Probe,
    forced: bool = True,
) -> tuple[ChatRequest, bool]:
    """A fresh request per turn, adjusted by the hook each time, and whether a plugin's
    hook could have edited it (False: it is a function of its arguments alone).

    So a conftest can shape the first turn of a loop differently from the turns after a
    tool result. ``forced`` False lifts the base request's ``tool_choice``: a turn of the
    ``required`` condition after the expected calls were made is free to answer.
    """
    request = replace(
        base,
        messages=[*base.messages, *extra],
        tools=[dict(t) for t in base.tools],
        options=dict(base.options),
        tool_choice=base.tool_choice if forced else None,
    )
    return request, exchange.adjust(request, probe)


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
        # The first turn and its body as replay matches it, kept for the samples after the
        # first while no plugin implements the hook: it is the same request every sample.
        self._first: tuple[ChatRequest, str | None] | None = None

    def _turn(
        self, number: int, extra: list[Message], forced: bool
    ) -> tuple[ChatRequest, str | None]:
        """Turn ``number``'s request and its body as replay matches it (None: not written)."""
        if number == 0 and self._first is not None and not self.exchange.edits_requests():
            return self._first
        request, edited = turn_request(self.exchange, self.base, extra, self.probe, forced)
        if number or edited:
            return request, None
        self._first = request, self.exchange.wire_text(request, self.server)
        return self._first

    def sample(self, index: int) -> tuple[SampleRecord, ChatReply | None]:
        """The record and the last reply (None when the sample ended in infra)."""
        probe = self.probe
        case = probe.case
        expect = case.expect
        # An unreviewed draft may have no expectation yet: one turn, reported as it went.
        multi_turn = expect is not None and expect.multi_turn
        limit = case.max_turns if multi_turn else 1
        extra: list[Message] = []
        turns: list[ModelTurn] = []
        shown: list[str] = []
        added: dict[str, float] = {}
        shown_stream: dict[str, int] = {}
        reasoning: list[str] = []
        finish: str | None = None
        reply: ChatReply | None = None
        api = self.exchange.settings.api
        made = 0  # calls made so far: a turn is forced until the expected ones were made
        # A drafted case not reviewed yet may have no expectation: its first turn is forced.
        expected = len(expect.calls) if expect is not None else 1
        for number in range(limit):
            forced = made < expected
            request, wire = self._turn(number, extra, forced)
            try:
                reply, wall = self.exchange.send(request, self.server, self.live, wire)
            except InfraError as exc:
                return infra_record(index, exc), None
            found = figures(reply, wall)
            turn = turn_of(reply, probe.suite.tool_names, found.get("generated_tokens"))
            if request.tool_choice:
                turn = replace(turn, forced=forced_by(api, reply))
            made += len(turn.calls)
            turns.append(turn)
            shown.append(shown_turn(number, turn, multi_turn))
            reasoning.extend(t for t in (reply.thinking.strip(), turn.thinking) if t)
            # A loop's figures are its turns' added up (tokens, durations, wall time).
            for key, value in found.items():
                added[key] = added.get(key, 0.0) + value
            if reply.pieces:
                for key, value in exposure(reply.pieces, probe.suite.tool_names).items():
                    shown_stream[key] = shown_stream.get(key, 0) + value
            finish = reply.finish_reason
            if not multi_turn or not turn.calls:
                break
            extra.extend(feedback_messages(api, reply, turn, case.results, number))
        if expect is None:
            verdict = not_expected(turns[0])
        else:
            verdict = judge_calls(
                turns, expect, probe.suite.tools, max_turns=limit if multi_turn else None
            )
        record = SampleRecord.from_verdict(index, turns[0].route, verdict, "\n".join(shown), finish)
        record.calls = [[c.name for c in t.calls] for t in turns]
        record.turns = len(turns)
        record.args_as_string = sum(c.arguments_as_string for t in turns for c in t.calls)
        record.thinking = trim("\n".join(reasoning))
        record.figures = added
        record.stream = shown_stream or None
        return record, reply
