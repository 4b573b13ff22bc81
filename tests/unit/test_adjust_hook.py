"""The adjust hook edits a request of its own: an edit made in place reaches that request only.

A request shares its inner objects with what it was built from: the suite's tool
definitions and options, and in a tool loop the turns before it, whose assistant messages
carry the model's call arguments. The hook is documented to edit in place, so the runtime
hands it copies; otherwise an edit reached every later turn and test, and through the suite
the call judge's own schema. No server is involved: a stand-in client hands out replies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from probing import ReplyingClient

from pytest_cardprobe.run.loop import ToolLoop
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.types import ChatReply, ChatRequest, ToolCall
from pytest_cardprobe.wire.cassettes.modes import backend_for

SUITE = """\
cardprobe: 1
judge: call
conditions: [cold]
tools: t.json
options: {stop: [END]}
cases:
  - id: loop
    prompt: read a then b
    max_turns: 4
    expect:
      sequence:
        - {call: read_file, args: {path: a}}
        - {call: read_file, args: {path: b}}
    results: {read_file: TEXT}
"""

PARAMETERS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOL = {
    "type": "function",
    "function": {"name": "read_file", "description": "d", "parameters": PARAMETERS},
}


def editing_hook(seen: list[str]) -> Any:
    """A hook that notes the request it is given, then edits everything in it in place."""

    def adjust(request: ChatRequest, probe: Probe | None) -> None:
        seen.append(json.dumps([request.messages, request.tools, request.options]))
        for message in request.messages:
            message["content"] = (message.get("content") or "") + " (edited)"
            for call in message.get("tool_calls") or []:
                call["function"]["arguments"]["path"] = "EDITED"
        for tool in request.tools:
            tool["function"]["description"] += " (edited)"
            tool["function"]["parameters"]["properties"]["path"]["type"] = "integer"
        request.options["stop"].append("(edited)")

    return adjust


def test_a_tool_loops_turns_each_reach_the_hook_unedited_and_the_judge_sees_the_suite(
    tmp_path: Path,
) -> None:
    (tmp_path / "t.json").write_text(json.dumps([TOOL]))
    (tmp_path / "s.yaml").write_text(SUITE)
    suite = load_suite(tmp_path / "s.yaml")
    (probe,) = expand(suite, ["m"])
    seen: list[str] = []
    runtime = Runtime(
        Settings(models=["m"]), backend_for("none"), adjust=editing_hook(seen), adjusts=lambda: True
    )
    turns = (
        ChatReply("", tool_calls=(ToolCall("read_file", {"path": "a"}),)),
        ChatReply("", tool_calls=(ToolCall("read_file", {"path": "b"}),)),
        ChatReply("a and b say TEXT"),
    )
    client = ReplyingClient(*turns, *turns)  # two samples of three turns
    runtime.pool._clients[runtime.server] = client  # type: ignore[assignment]
    base = build_request(probe, {})
    loop = ToolLoop(runtime, base, probe, runtime.server)
    records = [loop.sample(0)[0], loop.sample(1)[0]]  # a second sample asks from the start

    sent = [json.dumps([r.messages, r.tools, r.options]) for r in client.requests]
    assert len(seen) == len(sent) == 6
    # What the hook was given: never an earlier edit, whether of the suite's tool and
    # options, the question, or the model's arguments fed back in a later turn.
    assert [s for s in seen if "edited" in s or "EDITED" in s] == []
    # What went out: each request as the hook left it.
    assert all("(edited)" in s and '"integer"' in s for s in sent)
    assert "EDITED" in sent[1] and "EDITED" in sent[2]  # the fed-back calls
    # The judge read the suite's schema (path a string) and the model's own arguments.
    assert [r.passed for r in records] == [True, True], [r.label for r in records]
    assert list(suite.tools) == [TOOL] and suite.options == {"stop": ["END"]}
