"""Tool loops' messages (run/loop.feedback_messages), call-arm scores, canaries and their gate."""

from __future__ import annotations

import json

import pytest

from pytest_cardprobe.judge.call import ModelTurn
from pytest_cardprobe.run.loop import feedback_messages
from pytest_cardprobe.score.aggregate import aggregate, canaries
from pytest_cardprobe.score.baseline import BaselineError, parse_baseline
from pytest_cardprobe.score.baseline_update import baseline_document
from pytest_cardprobe.score.gate import CanaryChange, GateSettings, decide
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.score.report import scoreboard_lines
from pytest_cardprobe.score.stats import DASH
from pytest_cardprobe.suite.calls import ScriptedResult
from pytest_cardprobe.types import ChatReply, ProbeResult, SampleRecord, ToolCall

CALLS = (
    ToolCall("search_code", {"query": "Invoice"}, id="call_a"),
    ToolCall("read_file", {"path": "b.py"}),
)
RESULTS = (ScriptedResult("search_code", (), "src/b.py:1: class Invoice"),)


class TestFeedbackMessages:
    def turn(self) -> tuple[ChatReply, ModelTurn]:
        return ChatReply("", tool_calls=CALLS), ModelTurn("tool_calls", CALLS, "")

    def test_ollama_order_tool_name_and_object_arguments(self) -> None:
        reply, turn = self.turn()
        messages = feedback_messages("ollama", reply, turn, RESULTS, 0)
        assert [m["role"] for m in messages] == ["assistant", "tool", "tool"]
        # The server's id goes back with its call and is quoted by the call's result; a call
        # the server gave no id (Ollama before 0.12.10) goes back without one.
        assert messages[0]["tool_calls"] == [
            {
                "id": "call_a",
                "function": {"name": "search_code", "arguments": {"query": "Invoice"}},
            },
            {"function": {"name": "read_file", "arguments": {"path": "b.py"}}},
        ]
        assert messages[1] == {
            "role": "tool",
            "tool_name": "search_code",
            "content": "src/b.py:1: class Invoice",
            "tool_call_id": "call_a",
        }
        # An unscripted call still gets an answer, so the model is never left hanging.
        assert messages[2]["tool_name"] == "read_file" and "tool_call_id" not in messages[2]
        assert "no result scripted" in messages[2]["content"]

    def test_openai_assistant_tool_calls_then_tool_call_ids(self) -> None:
        reply, turn = self.turn()
        messages = feedback_messages("openai", reply, turn, RESULTS, 2)
        assert [m["role"] for m in messages] == ["assistant", "tool", "tool"]
        calls = messages[0]["tool_calls"]
        assert [c["id"] for c in calls] == ["call_a", "call_2_1"]  # server id, else ours
        assert calls[0]["type"] == "function"
        assert json.loads(calls[0]["function"]["arguments"]) == {"query": "Invoice"}
        assert [m["tool_call_id"] for m in messages[1:]] == ["call_a", "call_2_1"]


def result(
    case: str, *samples: SampleRecord, canary: str | None = None, cond: str = "cold"
) -> ProbeResult:
    status = "passed" if all(s.passed for s in samples) else "failed"
    return ProbeResult(
        f"cases/tools.yaml::{case}",
        "tools",
        "m",
        "call",
        cond,
        case,
        status,
        list(samples),
        canary=canary,
    )


def sample(
    passed: bool, route: str, calls: list[list[str]], failure: str | None = None, as_string: int = 0
) -> SampleRecord:
    return SampleRecord(
        0,
        route,
        passed,
        "ok" if passed else failure or "",
        None if passed else failure,
        calls=calls,
        turns=len(calls),
        args_as_string=as_string,
    )


class TestCallArms:
    def test_counts_classes_adoption_and_args_as_string(self) -> None:
        results = [
            result("a", sample(True, "tool_calls", [["read_file"]], as_string=1)),
            result("b", sample(False, "recovered", [["run_shell"]], "wrong_tool")),
            result("c", sample(False, "content", [[]], "declined")),
            result("d", sample(True, "content", [[]])),
        ]
        (arm,) = aggregate(results)
        assert arm.is_call_arm and (arm.passed, arm.scored) == (2, 4)
        assert arm.failures["wrong_tool"] == 1 and arm.failures["declined"] == 1
        assert "wrong_element" not in arm.failures  # a card class has no column here
        assert arm.adoption == 0.5  # 1 structured of the 2 samples that called at all
        assert arm.args_as_string == 1
        assert arm.to_dict()["args_as_string"] == 1
        lines = scoreboard_lines([arm], None)
        assert lines[0].split()[:9] == [
            "suite", "model", "channel", "condition", "passed", "adoption", "recovered",
            "args_as_string", "declined",
        ]  # fmt: skip
        # Shares carry their 95 % Wilson interval (score/stats.py).
        assert " ".join(lines[1].split()[:9]) == (
            f"tools m call cold 2/4 [15{DASH}85%] 1/2 50% [9{DASH}91%]"
        )


class TestCountClasses:
    """``missing_call`` / ``extra_call`` get scoreboard columns; older baselines still gate."""

    def results(self) -> list[ProbeResult]:
        return [
            result("both", sample(False, "tool_calls", [["read_file"]], "missing_call")),
            result("one", sample(False, "tool_calls", [["read_file", "run_shell"]], "extra_call")),
            result("ok", sample(True, "tool_calls", [["read_file"]])),
        ]

    def test_columns_in_the_scoreboard_report_and_json(self) -> None:
        (arm,) = aggregate(self.results())
        header = scoreboard_lines([arm], None)[0].split()
        assert header.index("missing_call") < header.index("extra_call")
        assert "wrong_tool" not in header  # a column only for classes some arm has
        assert {"missing_call": 1, "extra_call": 1}.items() <= arm.to_dict()["failures"].items()
        assert "missing_call" in markdown([arm], None)

    def test_a_baseline_from_before_the_classes_still_reads_and_gates(self) -> None:
        # Written when a dropped parallel call was labelled wrong_tool and an extra over_call.
        verdicts = {
            "both": {
                "passed": False,
                "label": "wrong_tool got read_file want read_file, read_file",
            },
            "one": {"passed": False, "label": "over_call got read_file, run_shell want read_file"},
            "ok": {"passed": True, "label": "ok read_file"},
        }
        arm = {"suite": "tools", "model": "m", "channel": "call", "condition": "cold"}
        old = {
            "format": 1,
            "arms": {"tools/m/call/cold": {**arm, "passed": 1, "cases": 3, "verdicts": verdicts}},
        }
        baseline = parse_baseline(old, "old baseline")
        results = self.results()
        gate = decide(aggregate(results), results, baseline, GateSettings())
        assert gate.decision == "pass" and not gate.flips


class TestCanary:
    def run(self, needs_called: bool, no_called: bool) -> list[ProbeResult]:
        return [
            result(
                "n",
                sample(
                    needs_called,
                    "tool_calls" if needs_called else "content",
                    [["read_file"]] if needs_called else [[]],
                    None if needs_called else "declined",
                ),
                canary="needs_tool",
            ),
            result(
                "o",
                sample(
                    not no_called,
                    "tool_calls" if no_called else "content",
                    [["run_shell"]] if no_called else [[]],
                    "over_call" if no_called else None,
                ),
                canary="no_tool",
            ),
        ]

    def test_verdicts(self) -> None:
        assert canaries(self.run(True, False))[0].verdict == "supported"
        assert canaries(self.run(False, False))[0].verdict == "supportedButDeclines"
        assert canaries(self.run(True, True))[0].verdict == "overCalls"
        unsupported = [
            ProbeResult("x", "tools", "m", "call", "cold", "n", "unsupported", canary="needs_tool")
        ]
        assert canaries(unsupported)[0].verdict == "unsupported"

    def test_line(self) -> None:
        (c,) = canaries(self.run(False, False))
        assert c.line() == (
            "canary tools/m: declines although supported — needs_tool called 0/1, no_tool abstained 1/1 samples"  # noqa: E501
        )

    def test_a_changed_canary_is_a_gate_regression(self) -> None:
        before = self.run(True, False)
        document, _ = baseline_document(aggregate(before), before, canaries(before))
        assert document["canary"] == {"tools/m": "supported"}
        base = parse_baseline(json.loads(json.dumps(document)), "baseline")
        assert base.canary == {"tools/m": "supported"}
        now = self.run(False, False)  # loses one case: within the floor of 1 ...
        arms = aggregate(now)
        gate = decide(arms, now, base, GateSettings(noise_floor=1), canaries(now))
        assert gate.decision == "fail"  # ... but the canary moved
        assert gate.canary_changes == [CanaryChange("tools/m", "supported", "supportedButDeclines")]
        assert gate.regressions == [
            "canary tools/m: supports tools -> declines although supported; accept it with "
            "--cardprobe-update-baseline if intended"
        ]
        assert gate.to_dict()["canary"] == {"tools/m": "supportedButDeclines"}
        lines = scoreboard_lines(arms, gate)
        assert "canary tools/m: declines although supported — needs_tool called 0/1, " in "\n".join(
            lines
        )
        assert "### Canaries" in markdown(arms, gate)
        same = decide(aggregate(before), before, base, GateSettings(), canaries(before))
        assert same.decision == "pass" and not same.canary_changes


class _ScriptedClient:
    """Stands in for the HTTP client in a unit test of the loop's own logic: hands out the
    given replies in order and keeps every request it was asked (no server is involved)."""

    def __init__(self, *replies: ChatReply) -> None:
        self.replies = list(replies)
        self.asked: list[list[dict[str, object]]] = []

    def played_text(self, request: object) -> None:
        return None  # no player: as a live client

    def chat(self, request: object, wire: str | None = None) -> ChatReply:
        self.asked.append([dict(m) for m in request.messages])  # type: ignore[attr-defined]
        return self.replies.pop(0)


def _loop_probe(tmp_path: object, max_turns: int) -> object:
    from pathlib import Path

    from pytest_cardprobe.suite.loader import load_suite
    from pytest_cardprobe.suite.matrix import expand

    root = Path(str(tmp_path))
    (root / "t.json").write_text(
        json.dumps(
            [
                {
                    "type": "function",
                    "function": {
                        "name": "read_file",
                        "description": "Read a file.",
                        "parameters": {
                            "type": "object",
                            "properties": {"path": {"type": "string", "description": "p"}},
                        },
                    },
                }
            ]
        )
    )
    (root / "s.yaml").write_text(
        "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: t.json\n"
        f"cases:\n  - id: loop\n    prompt: read a\n    max_turns: {max_turns}\n"
        "    expect: {sequence: [read_file]}\n    results: {read_file: TEXT}\n"
    )
    return next(expand(load_suite(root / "s.yaml"), ["m"]))


def _loop(runtime: object, base: object, probe: object) -> tuple[object, object]:
    """One sample of ``probe`` through the call suite's way of asking."""
    from pytest_cardprobe.run.loop import ToolLoop

    return ToolLoop(runtime, base, probe, runtime.server).sample(0)  # type: ignore[arg-type, attr-defined]


class TestLoop:
    def runtime(self, client: _ScriptedClient) -> object:
        from pytest_cardprobe.run.runtime import Runtime
        from pytest_cardprobe.run.settings import Settings
        from pytest_cardprobe.wire.cassettes.modes import backend_for

        runtime = Runtime(Settings(models=["m"]), backend_for("none"))
        runtime.pool._clients[runtime.server] = client  # type: ignore[assignment]
        return runtime

    def test_stops_when_the_model_answers_and_feeds_results_back_in_order(
        self, tmp_path: object
    ) -> None:
        from pytest_cardprobe.suite.request import build_request

        client = _ScriptedClient(
            ChatReply("", tool_calls=(ToolCall("read_file", {"path": "a"}),)),
            ChatReply("It says TEXT."),
        )
        probe = _loop_probe(tmp_path, 5)
        runtime = self.runtime(client)
        base = build_request(probe, {})  # type: ignore[arg-type]
        record, _ = _loop(runtime, base, probe)
        assert record.passed and record.turns == 2 and record.calls == [["read_file"], []]
        assert [m["role"] for m in client.asked[1]] == ["user", "assistant", "tool"]
        assert client.asked[1][2] == {"role": "tool", "tool_name": "read_file", "content": "TEXT"}

    def test_stops_at_max_turns_as_loop_limit(self, tmp_path: object) -> None:
        from pytest_cardprobe.suite.request import build_request

        again = ChatReply("", tool_calls=(ToolCall("read_file", {"path": "a"}),))
        client = _ScriptedClient(again, again, again, again)
        probe = _loop_probe(tmp_path, 3)
        runtime = self.runtime(client)
        record, _ = _loop(runtime, build_request(probe, {}), probe)
        assert len(client.asked) == 3 and record.turns == 3
        assert record.failure == "loop_limit" and not record.passed

    def test_infra_mid_loop_leaves_the_sample_unscored(self, tmp_path: object) -> None:
        from pytest_cardprobe.suite.request import build_request
        from pytest_cardprobe.wire.errors import InfraError

        class Failing(_ScriptedClient):
            def chat(self, request: object, wire: str | None = None) -> ChatReply:
                if self.asked:
                    raise InfraError("HTTP 503 from server: queue full")
                return super().chat(request)

        client = Failing(ChatReply("", tool_calls=(ToolCall("read_file", {"path": "a"}),)))
        probe = _loop_probe(tmp_path, 5)
        record, last = _loop(self.runtime(client), build_request(probe, {}), probe)
        assert record.failure == "infra" and record.route is None and last is None
        assert record.label.startswith("infra: HTTP 503")

    def test_a_think_block_is_reasoning_and_calls_are_read_after_it(self, tmp_path: object) -> None:
        from pytest_cardprobe.suite.request import build_request

        written = (
            "<think>the user wants a.</think>\n"
            '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>'
        )
        client = _ScriptedClient(
            ChatReply(written, raw={"eval_count": 30, "total_duration": 2_000_000_000}),
            ChatReply("<think>done</think>It says TEXT.", raw={"eval_count": 5}),
        )
        probe = _loop_probe(tmp_path, 5)
        record, last = _loop(self.runtime(client), build_request(probe, {}), probe)
        assert record.passed and record.route == "recovered", record.label
        assert record.thinking == "the user wants a.\ndone"
        assert "<think>" not in record.reply
        # A loop's server figures are its turns' added up.
        assert record.figures["generated_tokens"] == 35
        assert last.content.endswith("It says TEXT.")

    def test_every_turn_keeps_the_reasoning_level(self, tmp_path: object) -> None:
        from pytest_cardprobe.suite.request import build_request

        class Seeing(_ScriptedClient):
            def chat(self, request: object, wire: str | None = None) -> ChatReply:
                self.think.append(request.think)  # type: ignore[attr-defined]
                return super().chat(request)

        client = Seeing(
            ChatReply("", tool_calls=(ToolCall("read_file", {"path": "a"}),)),
            ChatReply("It says TEXT."),
        )
        client.think = []  # type: ignore[attr-defined]
        probe = _loop_probe(tmp_path, 5)
        base = build_request(probe, {}, "high")  # type: ignore[arg-type]
        _loop(self.runtime(client), base, probe)
        assert client.think == ["high", "high"]  # type: ignore[attr-defined]

    def test_a_broken_server_is_not_asked_again(self, tmp_path: object) -> None:
        from pytest_cardprobe.suite.request import build_request

        client = _ScriptedClient()
        probe = _loop_probe(tmp_path, 5)
        runtime = self.runtime(client)
        runtime.broken_servers[runtime.server] = "circuit breaker open: 5 consecutive"  # type: ignore[attr-defined]
        record, _ = _loop(runtime, build_request(probe, {}), probe)
        assert client.asked == [] and record.failure == "infra"
        assert "circuit breaker open" in record.label


def test_a_baseline_canary_with_an_unknown_verdict_names_the_key() -> None:
    document = {"format": 1, "arms": {}, "canary": {"tools/m": "maybe"}}
    with pytest.raises(BaselineError, match=r"baseline x\.json: key canary\.tools/m must be one"):
        parse_baseline(document, "baseline x.json")
