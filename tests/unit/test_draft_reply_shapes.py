"""``draft`` reads replies from files anyone may have written: a reply of the wrong shape (a
message that is not an object, content that is not text, tool calls that are not a list) is
skipped with a reason naming the file or line, as the runtime refuses it, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_draft import ASK, WEATHER, capture, chat, draft, ollama_reply

OPENAI_BAD = [
    {"choices": [{"message": True}]},
    {"choices": [{"message": {"role": "assistant", "content": {"x": 1}}}]},
    {"choices": [{"message": {"content": None, "tool_calls": 1e308}}]},
    {"choices": [{"message": {"content": None, "tool_calls": [{"function": {"name": 5}}]}}]},
]


@pytest.mark.parametrize("output", OPENAI_BAD, ids=range(len(OPENAI_BAD)))
def test_a_jsonl_output_of_the_wrong_shape_is_skipped_with_its_line(
    tmp_path: Path, output: dict
) -> None:
    path = tmp_path / "traffic.jsonl"
    line = {"input": {"model": "gpt", "messages": [ASK], "tools": [WEATHER]}, "output": output}
    path.write_text(json.dumps(line) + "\n")
    code, out = draft(tmp_path, path)
    assert code == 0, out
    assert "traffic.jsonl:1: its output was not read (reply.choices[0].message" in out


@pytest.mark.parametrize(
    "reply",
    [
        {"model": "m", "message": {"role": "assistant", "content": ["x"]}, "done": True},
        {"model": "m", "message": {"content": "", "tool_calls": {"a": 1}}, "done": True},
        '{"message": {"content": 7}, "done": false}\n{"message": {"content": ""}, "done": true}',
    ],
    ids=["whole-content", "whole-calls", "stream"],
)
def test_a_captured_reply_of_the_wrong_shape_keeps_its_question(
    tmp_path: Path, reply: dict | str
) -> None:
    folder = capture(tmp_path / "caps", [(chat(ASK), reply), (chat(ASK), ollama_reply("x"))])
    if isinstance(reply, str):  # a stream: say so, as capture does for NDJSON
        first = sorted(folder.glob("*.json"))[0]
        data = json.loads(first.read_text())
        data["reply"]["content_type"] = "application/x-ndjson"
        first.write_text(json.dumps(data))
    code, out = draft(tmp_path, folder)
    assert code == 0, out
    assert "its reply was not read (" in out and "the request is kept" in out


@pytest.mark.parametrize("version", [True, 1.0, "1"])
def test_a_capture_format_that_is_not_the_number_1_is_refused(
    tmp_path: Path, version: object
) -> None:
    from pytest_cardprobe.wire.capture.format import CaptureProblem, read_capture

    path = tmp_path / "x.json"
    reply = {"status": 200, "body": "{}"}
    path.write_text(json.dumps({"cardprobe_capture": version, "api": "ollama",
                                "request": {"body": chat(ASK)}, "reply": reply}))  # fmt: skip
    with pytest.raises(CaptureProblem, match="capture format"):
        read_capture(path, 10**6)
