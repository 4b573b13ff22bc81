"""The ``required`` condition of call suites: every turn that must call is forced to call, the
way an application forces one (OpenAI's ``tool_choice: "required"``; on Ollama, which has no
``tool_choice``, a ``format`` schema of the declared calls). What is sent per API, which
cases are asked, how the loop forces, the ``unforced`` label, the fingerprint, a format the
server cannot convert, and the offered-vs-forced reading of the scoreboard and the canary.

The wire facts these pin (what Ollama 0.11.4 and 0.33.0 answer to each schema keyword, that
Ollama's /v1 drops tool_choice) are measured by tests/live/test_forced_live.py; the error
bodies below are the ones those servers sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from probing import ReplyingClient

from pytest_cardprobe.judge.call import ModelTurn, judge_calls
from pytest_cardprobe.run.loop import forced_by
from pytest_cardprobe.score.aggregate import aggregate, canaries
from pytest_cardprobe.score.forced import pairs
from pytest_cardprobe.score.jsonreport import json_report
from pytest_cardprobe.score.report import scoreboard_lines
from pytest_cardprobe.score.stats import DASH
from pytest_cardprobe.suite.calls import CallSpec, Expectation
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import expand
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.types import ChatReply, ChatRequest, ProbeResult, SampleRecord, ToolCall
from pytest_cardprobe.wire.cassettes.fingerprint import check_fingerprint, fingerprint
from pytest_cardprobe.wire.errors import FormatUnsupported, StaleCassette, classify_http_error
from pytest_cardprobe.wire.forcing import calls_format
from pytest_cardprobe.wire.ollama import ollama_body
from pytest_cardprobe.wire.openai import openai_body

ROOT = Path(__file__).resolve().parents[2]
TOOLS: list[dict[str, Any]] = json.loads((ROOT / "cases" / "tools" / "tools.json").read_text())


def _tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": "d", "parameters": parameters},
    }


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


# --------------------------------------------------------------------------- the format


class TestCallsFormat:
    def test_admits_exactly_one_call_of_a_declared_tool_or_a_list_of_them(self) -> None:
        fmt = calls_format(TOOLS)
        jsonschema.Draft202012Validator.check_schema(fmt)
        read = {"name": "read_file", "arguments": {"path": "README.md"}}
        assert _valid(fmt, read)
        assert _valid(fmt, [read, {"name": "search_code", "arguments": {"query": "TODO"}}])
        assert not _valid(fmt, [])  # a list holds at least one call
        assert not _valid(fmt, {"name": "delete_everything", "arguments": {}})  # undeclared
        assert not _valid(fmt, {"name": "read_file", "arguments": {}})  # path is required
        assert not _valid(fmt, {"name": "read_file", "arguments": {"path": 3}})
        assert not _valid(fmt, {"name": "read_file"})  # arguments are required
        assert not _valid(fmt, {**read, "why": "x"})  # nothing beside name and arguments
        assert not _valid(fmt, "I would read README.md")  # prose is no call
        names = [a["properties"]["name"]["const"] for a in fmt["anyOf"][:-1]]
        assert names == [t["function"]["name"] for t in TOOLS]  # one per tool, in order

    def test_a_ref_moves_to_the_documents_defs_and_still_resolves(self) -> None:
        params = {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/P"}, "c": {"const": {"$ref": "#/x"}}},
            "required": ["p"],
            "$defs": {"P": {"type": "string", "enum": ["a", "b"]}},
        }
        fmt = calls_format([_tool("one", {"type": "object"}), _tool("two", params)])
        assert fmt["anyOf"][1]["properties"]["arguments"] == {"$ref": "#/$defs/tool1"}
        moved = fmt["$defs"]["tool1"]
        assert moved["properties"]["p"] == {"$ref": "#/$defs/tool1/$defs/P"}
        assert moved["properties"]["c"] == {"const": {"$ref": "#/x"}}  # data stays data
        assert _valid(fmt, {"name": "two", "arguments": {"p": "a"}})
        assert not _valid(fmt, {"name": "two", "arguments": {"p": "z"}})

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.text("abcdefghij_", min_size=1, max_size=8),
                st.sampled_from(["string", "integer", "boolean"]),
                st.booleans(),
            ),
            min_size=1,
            max_size=5,
            unique_by=lambda t: t[0],
        )
    )
    def test_every_call_a_tool_admits_is_admitted_and_only_under_its_name(
        self, declared: list[tuple[str, str, bool]]
    ) -> None:
        samples = {"string": "s", "integer": 3, "boolean": True}
        tools = [
            _tool(
                name,
                {
                    "type": "object",
                    "properties": {"v": {"type": kind}},
                    "required": ["v"] if needed else [],
                    "additionalProperties": False,
                },
            )
            for name, kind, needed in declared
        ]
        fmt = calls_format(tools)
        for name, kind, needed in declared:
            assert _valid(fmt, {"name": name, "arguments": {"v": samples[kind]}})
            assert _valid(fmt, {"name": name, "arguments": {}}) is not needed
            assert not _valid(fmt, {"name": name + "X", "arguments": {"v": samples[kind]}})


# --------------------------------------------------------------------------- the wire


class TestWhatIsSent:
    def request(self, tool_choice: str | None = "required", **options: Any) -> ChatRequest:
        return ChatRequest(
            model="m",
            messages=[{"role": "user", "content": "Show me README.md"}],
            tools=TOOLS,
            options=dict(options),
            tool_choice=tool_choice,
        )

    def test_ollama_sends_the_format_of_the_calls_and_no_tool_choice(self) -> None:
        body = ollama_body(self.request(format={"type": "object"}), stream=False, keep_alive="5m")
        assert body["format"] == calls_format(TOOLS)  # in place of any other format
        assert body["tools"] == TOOLS and "tool_choice" not in body
        free = ollama_body(self.request(None), stream=False, keep_alive="5m")
        assert "format" not in free and "tool_choice" not in free

    def test_openai_sends_tool_choice_and_no_format(self) -> None:
        body = openai_body(self.request(), stream=True)
        assert body["tool_choice"] == "required" and body["tools"] == TOOLS
        assert "response_format" not in body
        assert "tool_choice" not in openai_body(self.request(None), stream=False)

    def test_a_format_the_server_cannot_convert_is_unsupported_not_a_failure(self) -> None:
        def response(status: int, text: str) -> httpx.Response:
            request = httpx.Request("POST", "http://127.0.0.1:1/api/chat")
            return httpx.Response(status, text=text, request=request)

        # Ollama 0.11.4 (an unanchored pattern, a $ref out of the document): HTTP 500.
        old = classify_http_error(response(500, '{"error":"invalid JSON schema in format"}'), "m")
        assert isinstance(old, FormatUnsupported)
        assert "cannot constrain the reply to the format: invalid JSON schema" in str(old)
        # Ollama 0.33.0 hands llama.cpp's converter error on inside its own: HTTP 400.
        inner = {
            "error": {
                "code": 400,
                "message": "Field 'json_schema': \"json_schema\": JSON schema conversion "
                "failed:\nJSON schema error at #/$defs/tool0/properties/p: unsupported $ref "
                "other.json#/P, only references into the same document are supported",
                "type": "invalid_request_error",
            }
        }
        new = classify_http_error(response(400, json.dumps({"error": json.dumps(inner)})), "m")
        assert isinstance(new, FormatUnsupported)
        assert "unsupported $ref other.json#/P" in str(new) and "\n" not in str(new)
        assert '{"error"' not in str(new)


# --------------------------------------------------------------------------- the suite


SUITE = """\
cardprobe: 1
judge: call
conditions: [cold, history, required]
tools: t.json
history:
  - {role: user, content: hello}
  - {role: assistant, content: hi}
cases:
  - id: one
    prompt: read a
    expect: {call: read_file, args: {path: a}}
  - id: none
    prompt: say hi
    expect: {no_call: true}
  - id: loop
    prompt: read a then b
    max_turns: 4
    expect: {sequence: [read_file, read_file]}
    results: {read_file: TEXT}
  - id: c_needs
    prompt: read c
    canary: needs_tool
    expect: {call: read_file}
  - id: c_no
    prompt: what is 2+2
    canary: no_tool
    expect: {no_call: true}
"""


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    params = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    (tmp_path / "t.json").write_text(json.dumps([_tool("read_file", params)]))
    (tmp_path / "s.yaml").write_text(SUITE)
    return tmp_path / "s.yaml"


def test_cases_expecting_no_call_are_not_asked_under_required(suite_path: Path) -> None:
    probes = list(expand(load_suite(suite_path), ["m"]))
    asked = {(p.case.id, p.condition) for p in probes}
    assert {c for c, cond in asked if cond == "required"} == {"one", "loop", "c_needs"}
    assert {c for c, cond in asked if cond == "cold"} == {"one", "none", "loop", "c_needs", "c_no"}
    # Selecting only the forced condition on the command line keeps the same cases.
    only = {p.case.id for p in expand(load_suite(suite_path), ["m"], conditions=["required"])}
    assert only == {"one", "loop", "c_needs"}


def test_the_forced_request_is_the_cold_one_with_tool_choice(suite_path: Path) -> None:
    probes = {(p.case.id, p.condition): p for p in expand(load_suite(suite_path), ["m"])}
    forced = build_request(probes["one", "required"], {})
    cold = build_request(probes["one", "cold"], {})
    assert forced.tool_choice == "required" and cold.tool_choice is None
    assert forced.messages == cold.messages  # no history: the question is asked cold
    assert build_request(probes["one", "history"], {}).tool_choice is None


def test_a_forced_recording_goes_stale_when_the_forcing_changes(tmp_path: Path) -> None:
    forced = ChatRequest("m", [{"role": "user", "content": "q"}], TOOLS, tool_choice="required")
    free = ChatRequest("m", [{"role": "user", "content": "q"}], TOOLS)
    assert fingerprint(forced)["tool choice"] == "required"
    assert "tool choice" not in fingerprint(free)  # older recordings keep their prints
    path = tmp_path / "c.yaml"
    with pytest.raises(StaleCassette, match="tool choice"):
        check_fingerprint(
            path,
            {"metadata": {"cardprobe": {"fingerprint": fingerprint(forced)}}},
            fingerprint(free),
        )
    with pytest.raises(StaleCassette, match="tool choice"):
        check_fingerprint(
            path,
            {"metadata": {"cardprobe": {"fingerprint": fingerprint(free)}}},
            fingerprint(forced),
        )
    changed = ChatRequest("m", forced.messages, TOOLS[:-1], tool_choice="required")
    with pytest.raises(StaleCassette, match="tools"):
        check_fingerprint(
            path, {"metadata": {"cardprobe": {"fingerprint": fingerprint(forced, "tools")}}},
            fingerprint(changed, "tools"),
        )  # fmt: skip


# --------------------------------------------------------------------------- the loop


def _run_loop(
    suite_path: Path, case: str, *replies: ChatReply
) -> tuple[SampleRecord, ReplyingClient]:
    from pytest_cardprobe.run.loop import ToolLoop
    from pytest_cardprobe.run.runtime import Runtime
    from pytest_cardprobe.run.settings import Settings
    from pytest_cardprobe.wire.cassettes.modes import backend_for

    client = ReplyingClient(*replies)
    runtime = Runtime(Settings(models=["m"]), backend_for("none"))
    runtime.pool._clients[runtime.server] = client  # type: ignore[assignment]
    probes = {(p.case.id, p.condition): p for p in expand(load_suite(suite_path), ["m"])}
    probe = probes[case, "required"]
    record, _ = ToolLoop(runtime, build_request(probe, {}), probe, runtime.server).sample(0)
    return record, client


def _call(path: str, text: bool = True) -> ChatReply:
    if text:  # what Ollama's format gives: the call as JSON text, recovered
        return ChatReply(json.dumps({"name": "read_file", "arguments": {"path": path}}))
    return ChatReply("", tool_calls=(ToolCall("read_file", {"path": path}),))


def test_a_loop_forces_until_the_expected_calls_are_made_then_lets_the_model_answer(
    suite_path: Path,
) -> None:
    record, client = _run_loop(
        suite_path, "loop", _call("a"), _call("b", text=False), ChatReply("a says TEXT")
    )
    assert [r.tool_choice for r in client.requests] == ["required", "required", None]
    assert record.passed and record.calls == [["read_file"], ["read_file"], []], record.label
    assert record.route == "recovered"  # the first turn's route, honestly


def test_a_forced_turn_without_a_call_is_unforced_and_says_how_it_was_sent(
    suite_path: Path,
) -> None:
    record, _ = _run_loop(suite_path, "one", ChatReply("README.md holds the docs."))
    assert not record.passed and record.failure == "unforced"
    assert record.label.startswith("unforced format of the calls was sent")


def test_the_unforced_label_names_the_way_of_forcing() -> None:
    want = Expectation("call", (CallSpec("read_file"),))
    params = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = [_tool("read_file", params)]

    def label(forced: str | None) -> str:
        return judge_calls([ModelTurn("content", (), "prose", forced=forced)], want, tools).label

    assert label(None).startswith("declined")  # offered: the model chose prose
    assert label("format").startswith("unforced format of the calls")
    assert "did not enforce it" in label("tool_choice")
    assert "Ollama's /v1, which drops it" in label("tool_choice/ollama")
    # Ollama's /v1 is known by its replies' fingerprint; other servers are not blamed on it.
    assert forced_by("openai", ChatReply("", raw={"system_fingerprint": "fp_ollama"})) == (
        "tool_choice/ollama"
    )
    assert forced_by("openai", ChatReply("", raw={"system_fingerprint": "b0-unknown"})) == (
        "tool_choice"
    )
    assert forced_by("ollama", ChatReply("")) == "format"


# --------------------------------------------------------------------------- the scoreboard


def _result(case: str, cond: str, *samples: SampleRecord, canary: str | None = None) -> ProbeResult:
    status = "passed" if all(s.passed for s in samples) else "failed"
    return ProbeResult(
        f"cases/tools.yaml::{case}", "tools", "m", "call", cond, case, status, list(samples),
        canary=canary,
    )  # fmt: skip


def _sample(passed: bool, route: str, calls: list[str], failure: str | None = None) -> SampleRecord:
    label = "ok" if passed else f"{failure} x"
    return SampleRecord(0, route, passed, label, failure, calls=[calls], turns=1)


def _declining_model() -> list[ProbeResult]:
    """Offered, the model answers in prose; forced, it calls: right, wrong tool, bad args."""
    prose = _sample(False, "content", [], "declined")
    return [
        _result("a", "cold", prose),
        _result("b", "cold", prose),
        _result("c", "cold", prose),
        _result("n", "cold", prose, canary="needs_tool"),
        _result("o", "cold", _sample(True, "content", []), canary="no_tool"),
        _result("a", "required", _sample(True, "recovered", ["read_file"])),
        _result("b", "required", _sample(False, "recovered", ["run_shell"], "wrong_tool")),
        _result("c", "required", _sample(False, "recovered", ["read_file"], "bad_arguments")),
        _result("n", "required", _sample(True, "recovered", ["read_file"]), canary="needs_tool"),
    ]


def test_offered_and_forced_side_by_side() -> None:
    results = _declining_model()
    arms = aggregate(results)
    forced = next(a for a in arms if a.condition == "required")
    assert forced.forced and forced.adoption_counts is None
    ((pair),) = pairs(arms)
    assert pair.cases == ("a", "b", "c", "n")  # the cases both arms judged
    offered, made = pair.offered_side, pair.forced_side
    assert offered is not None and (offered.passed, offered.no_call) == (0, 4)
    assert (made.passed, made.wrong_tool, made.arguments, made.no_call) == (2, 1, 1, 0)
    text = "\n".join(scoreboard_lines(arms, None))
    row = next(line for line in text.splitlines() if line.split()[2:4] == ["call", "required"])
    assert "n/a (forced)" in row  # adoption means nothing when forced, and says so
    table = text[text.index("offered vs forced") :].splitlines()
    assert table[1].split()[:6] == ["suite", "model", "cases", "offered", "passed", "forced"]
    cells = " ".join(table[2].split())
    # wrong_tool, arguments, no call: offered / forced samples
    assert f"0/4 [0{DASH}49%] 2/4 [15{DASH}85%] 0 / 1 0 / 1 4 / 0 recovered 4" in cells
    report = json.loads(json_report(arms, [], None))
    (entry,) = report["offered_vs_forced"]
    assert entry["forced"]["wrong_tool"] == 1 and entry["forced"]["arguments"] == 1
    assert entry["forced"]["adoption"] == "n/a (forced)"
    arm = next(a for a in report["arms"] if a["condition"] == "required")
    assert arm["forced"] is True and "not measured" in arm["adoption_note"]


def test_the_canary_reads_the_forced_calls_as_evidence() -> None:
    (canary,) = canaries(_declining_model())
    assert canary.verdict == "supportedButDeclines"
    assert canary.evidence == "declines when offered, calls correctly when forced (1/1 samples)"
    assert canary.line() == (
        "canary tools/m: declines although supported — needs_tool called 0/1, no_tool "
        "abstained 1/1 samples — declines when offered, calls correctly when forced (1/1 samples)"
    )
    assert canary.to_dict()["forced"] == {"passed": 1, "samples": 1}
    # Forced samples never count as offered calls; without a forced reading, no evidence.
    offered_only = [r for r in _declining_model() if r.condition == "cold"]
    (plain,) = canaries(offered_only)
    assert plain.verdict == "supportedButDeclines" and plain.evidence is None
    assert "forced" not in plain.line()
    # A forced reading that never called right is no evidence, and says so.
    wrong = [
        *offered_only,
        _result("n", "required", _sample(False, "recovered", ["run_shell"], "wrong_tool"),
                canary="needs_tool"),
    ]  # fmt: skip
    (none,) = canaries(wrong)
    assert none.evidence == "no evidence: when forced it never called correctly (0/1)"
    assert none.line().endswith(
        "samples — no evidence: when forced it never called correctly (0/1)"
    )
    # A server that cannot force (its format refused) still takes tools: not unsupported.
    refused = [
        *offered_only,
        ProbeResult("x", "tools", "m", "call", "required", "n", "unsupported", canary="needs_tool"),
    ]
    assert canaries(refused)[0].verdict == "supportedButDeclines"


def test_the_option_accepts_the_condition() -> None:
    from pytest_cardprobe.glue.option_table import SPECS

    spec = next(s for s in SPECS if s.flag == "--cardprobe-condition")
    assert "required" in (spec.choices or ())
