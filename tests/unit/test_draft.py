"""``python -m pytest_cardprobe draft``: a call suite from recorded traffic (``draft/``).

The exchanges here are written by the capture store itself (``CaptureStore.write``), laid out
as Ollama writes its request logs, or as JSONL lines; their replies are scripted test data,
not recordings (the live tests draft from real ones: tests/live/test_capture_live.py). Every
drafted suite is loaded by the suite loader here, as pytest would collect it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_cardprobe.__main__ import main
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.wire.capture.store import CaptureStore, Exchange

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "A city."},
                "when": {"type": "object", "description": "A date range."},
            },
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
PARIS_ARGS = {"city": "Paris", "when": {"from": "today"}, "unit": "C"}
SYSTEM = {"role": "system", "content": "You are a weather assistant.\nBe brief."}
ASK = {"role": "user", "content": "What's the weather in Paris?"}


def ollama_reply(content: str = "", calls: list[tuple[str, dict]] | None = None) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in calls]
    return {"model": "m", "message": message, "done": True, "done_reason": "stop"}


def assistant_calls(*calls: tuple[str, dict], ids: tuple[str, ...] = ()) -> dict:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {**({"id": ids[i]} if ids else {}), "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ],
    }


def capture(
    folder: Path,
    exchanges: list[tuple[dict, dict | str | None]],
    api: str = "ollama",
    upstream: str = "http://127.0.0.1:11434",
):
    """Write capture files through the real store: (request body, reply body or text)."""
    store = CaptureStore(folder, upstream, ["api_key"])
    store.prepare()
    for request, reply in exchanges:
        text = reply if isinstance(reply, str) else json.dumps(reply)
        store.write(
            Exchange(
                api, "POST", "/api/chat" if api == "ollama" else "/v1/chat/completions",
                time.perf_counter(), {"content-type": "application/json"},
                json.dumps(request).encode(), status=200,
                reply_headers={"content-type": "application/json"}, reply_text=text or "",
            )
        )  # fmt: skip
    return folder


def chat(*messages: dict, tools: list[dict] | None = None, **extra: Any) -> dict:
    return {
        "model": "m",
        "messages": list(messages),
        "tools": [WEATHER] if tools is None else tools,
        **extra,
    }


def draft(
    tmp_path: Path, *sources: Path, out: str = "cases/app.yaml", extra: tuple = ()
) -> tuple[int, str]:
    import contextlib
    import io

    buffer, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(errors):
        code = main(["draft", *map(str, sources), "--out", str(tmp_path / out), *extra])
    return code, buffer.getvalue() + errors.getvalue()


def cases_of(path: Path) -> dict[str, dict]:
    return {c["id"]: c for c in yaml.safe_load(path.read_text())["cases"]}


# ------------------------------------------------------------------- capture folders


def test_an_argument_value_the_tools_schema_refuses_is_left_out_and_said(
    tmp_path: Path,
) -> None:
    today = {"from": "today"}
    # The model sent null for a string: expecting null could never pass (the loader refuses
    # such a case), so the draft leaves the argument out and says why; the draft loads.
    folder = capture(
        tmp_path / "caps",
        [(chat(SYSTEM, ASK), ollama_reply(calls=[("get_weather", {"city": None, "when": today})]))],
    )
    code, out = draft(tmp_path, folder)
    assert code == 0, out
    suite_file = tmp_path / "cases" / "app.yaml"
    load_suite(suite_file)
    expect = cases_of(suite_file)["what_s_the_weather_in_paris"]["expect"]
    assert expect == {"call": "get_weather", "args": {"when": {"equals": today}}}
    assert "argument 'city' of 'get_weather' left out: the recorded value null is one its" in out


def test_a_capture_becomes_a_suite_that_loads_with_its_tools_prompt_and_drafts(
    tmp_path: Path,
) -> None:
    folder = capture(
        tmp_path / "caps",
        [
            (chat(SYSTEM, ASK), ollama_reply(calls=[("get_weather", PARIS_ARGS)])),
            (chat(SYSTEM, {"role": "user", "content": "Hi!"}), ollama_reply("Hello!")),
            (chat(SYSTEM, ASK), ollama_reply(calls=[("get_weather", {"city": "Lyon"})])),
        ],
    )  # fmt: skip
    code, out = draft(tmp_path, folder)
    assert code == 0, out
    suite_file = tmp_path / "cases" / "app.yaml"
    suite = load_suite(suite_file)
    assert suite.is_call_suite and suite.conditions == ("cold",)
    assert suite.prompts["call"] == SYSTEM["content"]  # the file holds the prompt exactly
    assert list(suite.tools) == [WEATHER]
    assert [c.reviewed for c in suite.cases] == [False, False]
    cases = cases_of(suite_file)
    assert cases["what_s_the_weather_in_paris"]["expect"] == {
        "call": "get_weather",
        "args": {"city": "Paris", "when": {"equals": {"from": "today"}}},
    }
    assert cases["hi"]["expect"] == {"no_call": True}
    assert "argument 'unit' left out: 'get_weather' does not declare it" in out
    text = suite_file.read_text()
    assert "(asked 2 times): the model called get_weather" in text
    assert "reviewed: false" in text and "personal data" in text


def test_a_tool_loop_becomes_a_sequence_with_the_applications_results(tmp_path: Path) -> None:
    call = assistant_calls(("get_weather", {"city": "Paris"}), ids=("call_1",))
    result = {
        "role": "tool",
        "tool_name": "get_weather",
        "tool_call_id": "call_1",
        "content": "18 C",
    }
    answer = {"role": "assistant", "content": "It is 18 C."}
    follow = {"role": "user", "content": "And tomorrow?"}
    folder = capture(
        tmp_path / "caps",
        [
            (chat(SYSTEM, ASK), ollama_reply(calls=[("get_weather", {"city": "Paris"})])),
            (chat(SYSTEM, ASK, call, result), ollama_reply("It is 18 C.")),
            (chat(SYSTEM, ASK, call, result, answer, follow), ollama_reply("No idea.")),
        ],
    )
    code, out = draft(tmp_path, folder)
    assert code == 0, out
    suite = load_suite(tmp_path / "cases" / "app.yaml")
    first, second = suite.cases
    assert first.expect is not None and first.expect.multi_turn and first.max_turns == 2
    assert [s.name for s in first.expect.calls] == ["get_weather"]
    assert first.results[0].content == "18 C"
    assert second.prompt == "And tomorrow?" and [m.role for m in second.conversation] == [
        "user", "assistant", "tool", "assistant"
    ]  # fmt: skip
    assert second.conversation[1].calls[0].id == "call_1"
    assert second.expect is not None and second.expect.kind == "no_call"


def test_tool_sets_are_deduplicated_whatever_the_key_order_and_each_set_is_a_suite(
    tmp_path: Path,
) -> None:
    reordered = json.loads(json.dumps(WEATHER), object_pairs_hook=lambda p: dict(reversed(p)))
    folder = capture(
        tmp_path / "caps",
        [
            (chat(ASK), ollama_reply("x")),
            (chat({"role": "user", "content": "Oslo?"}, tools=[reordered]), ollama_reply("y")),
            (chat({"role": "user", "content": "Find cats"}, tools=[SEARCH]), ollama_reply("z")),
        ],
    )  # fmt: skip
    code, out = draft(tmp_path, folder)
    assert code == 0, out
    first = load_suite(tmp_path / "cases" / "app.yaml")
    second = load_suite(tmp_path / "cases" / "app-2.yaml")
    assert len(first.cases) == 2 and len(second.cases) == 1
    assert (tmp_path / "cases" / "tools" / "app-2.json").exists()
    assert "wrote" in out and "app-2.yaml" in out


def test_exchanges_without_tools_are_refused_with_a_message(tmp_path: Path) -> None:
    folder = capture(tmp_path / "caps", [(chat(ASK, tools=[]), ollama_reply("x"))])
    code, out = draft(tmp_path, folder)
    assert code == 1 and not (tmp_path / "cases").exists()
    assert "declare no tools" in out and "nothing to draft: no exchange declares tools" in out


def test_a_suite_is_not_written_over_an_existing_one_without_force(tmp_path: Path) -> None:
    folder = capture(tmp_path / "caps", [(chat(ASK), ollama_reply("x"))])
    assert draft(tmp_path, folder)[0] == 0
    before = (tmp_path / "cases" / "app.yaml").read_text()
    code, out = draft(tmp_path, folder)
    assert code == 1 and "exist" in out and "--force" in out
    assert draft(tmp_path, folder, extra=("--force",))[0] == 0
    assert (tmp_path / "cases" / "app.yaml").read_text() == before


def test_the_printed_record_command_quotes_the_traffics_model_and_the_path(
    tmp_path: Path,
) -> None:
    # The model name comes from recorded traffic (untrusted) and the path from the user: the
    # command printed to be pasted runs what it shows, one shell word each.
    import shlex

    hostile = "m; touch /tmp/pwned #\nrm -rf ~"
    folder = capture(tmp_path / "caps", [({**chat(ASK), "model": hostile}, ollama_reply("x"))])
    code, out = draft(tmp_path, folder, out="my cases/app.yaml")
    assert code == 0, out
    command = next(line for line in out.splitlines() if "record it:" in line)
    words = command.split("record it: ", 1)[1]
    assert "$'m; touch /tmp/pwned #\\x0arm -rf ~'" in words
    assert shlex.split(words)[:3] == ["pytest", str(tmp_path / "my cases/app.yaml"), "--live"]
    assert "next:" not in draft(tmp_path, folder, out="my cases/app.yaml")[1]  # a refusal


def test_the_record_command_asks_the_server_the_traffic_went_to(tmp_path: Path) -> None:
    # Captured in front of llama-server on its own port (a password in the URL): the printed
    # command records against that server, without the password, not the default Ollama.
    import shlex

    folder = capture(
        tmp_path / "caps",
        [(chat(ASK), {"choices": [{"message": {"role": "assistant", "content": "x"}}]})],
        api="openai",
        upstream="http://u:S3CRET@127.0.0.1:8080",
    )
    code, out = draft(tmp_path, folder)
    assert code == 0, out
    command = next(line for line in out.splitlines() if "record it:" in line)
    words = shlex.split(command.split("record it: ", 1)[1])
    assert words[words.index("--cardprobe-server") + 1] == "http://127.0.0.1:8080"
    assert "--cardprobe-api" in words and "S3CRET" not in out


def test_nothing_is_written_through_a_link_that_leads_outside(tmp_path: Path) -> None:
    folder = capture(tmp_path / "caps", [(chat(ASK), ollama_reply("x"))])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "tools").symlink_to(elsewhere)
    code, out = draft(tmp_path, folder)
    assert code == 1 and "outside" in out
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "cases" / "app.yaml").exists()


# ------------------------------------------------------------------- Ollama's request logs


def ollama_logs(folder: Path, bodies: list[tuple[str, dict]]) -> Path:
    """A folder laid out as OLLAMA_DEBUG_LOG_REQUESTS writes it (docs/design.md §7)."""
    folder.mkdir()
    for n, (route, body) in enumerate(bodies, start=1):
        stem = f"20260509T003012.{n:09d}Z-{n:06d}_{route}"
        (folder / f"{stem}_body.json").write_text(json.dumps(body))
        (folder / f"{stem}_request.sh").write_text("#!/bin/sh\ncurl ...\n")
    return folder


def test_request_logs_draft_from_the_next_requests_assistant_turn(tmp_path: Path) -> None:
    call = assistant_calls(("get_weather", {"city": "Paris"}))
    result = {"role": "tool", "tool_name": "get_weather", "content": "18 C"}
    answer = {"role": "assistant", "content": "18 C."}
    last = {"role": "user", "content": "Thanks, and Rome?"}
    folder = ollama_logs(
        tmp_path / "logs",
        [
            ("api_chat", chat(SYSTEM, ASK, api_key="sk-in-a-log")),
            ("api_chat", chat(SYSTEM, ASK, call, result)),
            ("api_generate", {"model": "m", "prompt": "x"}),
            ("api_chat", chat(SYSTEM, ASK, call, result, answer, last)),
        ],
    )
    code, out = draft(tmp_path, folder)
    assert code == 0, out
    suite = load_suite(tmp_path / "cases" / "app.yaml")
    paris, rome = suite.cases
    assert paris.expect is not None and paris.expect.multi_turn  # from the later requests
    assert rome.expect is None and rome.reviewed is False  # nothing after it: no draft
    assert "1 Ollama log file(s) of other routes" in out
    assert "sk-in-a-log" not in "".join(p.read_text() for p in (tmp_path / "cases").rglob("*.*"))


# ------------------------------------------------------------------- OpenAI-shaped JSONL


def test_jsonl_lines_draft_from_their_outputs(tmp_path: Path) -> None:
    tools = [WEATHER]
    lines = [
        {
            "input": {"model": "gpt", "messages": [ASK], "tools": tools, "temperature": 0.2},
            "output": {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "c1",
                                    "type": "function",
                                    "function": {
                                        "name": "get_weather",
                                        "arguments": '{"city": "Paris"}',
                                    },
                                }
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ]
            },
        },
        {
            "input": {
                "model": "gpt",
                "messages": [{"role": "user", "content": "Hi"}],
                "tools": tools,
                "temperature": 0.2,
            }
        },
        "not json",
    ]
    path = tmp_path / "traffic.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    code, out = draft(tmp_path, path)
    assert code == 0, out
    suite = load_suite(tmp_path / "cases" / "app.yaml")
    assert suite.options == {"temperature": 0.2}
    weather, hi = suite.cases
    assert weather.expect is not None and weather.expect.calls[0].name == "get_weather"
    assert hi.expect is None
    assert "traffic.jsonl:3: is not read" in out
    assert "--cardprobe-api openai" in out


# ------------------------------------------------------------------- hostile folders


def test_files_someone_else_put_in_a_capture_folder_are_skipped_by_name(tmp_path: Path) -> None:
    folder = capture(tmp_path / "caps", [(chat(ASK), ollama_reply("x"))])
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"cardprobe_capture": 1, "api": "ollama",
                                  "request": {"body": chat({"role": "user", "content": "LEAK"})},
                                  "reply": {"status": 200, "body": "{}"}}))  # fmt: skip
    (folder / "link.json").symlink_to(secret)
    (folder / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (folder / "truncated.json").write_text('{"cardprobe_capture": 1, "api": "oll')
    (folder / "other.json").write_text('{"hello": 1}')
    (folder / "notes.txt").write_text("hi")
    (folder / "huge.json").write_bytes(b" " * (2 * 1024 * 1024))
    os.mkfifo(folder / "fifo.json")
    code, out = draft(tmp_path, folder, extra=("--max-file-mb", "1"))
    assert code == 0, out
    for name, words in [
        ("link.json", "symbolic link"), ("binary.json", "not UTF-8"),
        ("truncated.json", "not a whole JSON document"), ("other.json", "not a capture file"),
        ("notes.txt", "is not a capture file"), ("huge.json", "larger than"),
        ("fifo.json", "FIFO"),
    ]:  # fmt: skip
        assert f"{name}: " in out and words in out.split(f"{name}: ", 1)[1].splitlines()[0], name
    assert "LEAK" not in (tmp_path / "cases" / "app.yaml").read_text()
    assert len(load_suite(tmp_path / "cases" / "app.yaml").cases) == 1


def test_a_missing_source_is_a_usage_error(tmp_path: Path) -> None:
    code, out = draft(tmp_path, tmp_path / "nope")
    assert code == 2 and "does not exist" in out


@pytest.mark.parametrize("out", ["cases/app.txt", "cases/.yaml", "cases/"])
def test_the_out_path_must_be_a_suite_file(tmp_path: Path, out: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["draft", str(tmp_path), "--out", out])
    assert exited.value.code == 2


def test_a_reply_cut_short_keeps_its_question_and_an_error_answer_is_left_out(
    tmp_path: Path,
) -> None:
    store = CaptureStore(tmp_path / "caps", "http://127.0.0.1:11434", [])
    store.prepare()
    for status, error, question in [
        (200, "the client went away before the reply ended", "Cut?"),
        (404, None, "Missing model?"),
        (502, "cardprobe capture: cannot reach the upstream server", "Down?"),
    ]:
        body = chat({"role": "user", "content": question})
        store.write(Exchange("ollama", "POST", "/api/chat", time.perf_counter(), {},
                             json.dumps(body).encode(), status=status,
                             reply_text='{"message": {"content": "par', error=error))  # fmt: skip
    code, out = draft(tmp_path, tmp_path / "caps")
    assert code == 0, out
    (case,) = load_suite(tmp_path / "cases" / "app.yaml").cases
    assert case.prompt == "Cut?" and case.expect is None
    assert "its reply was cut short (the client went away" in out
    assert "answered 404; left out" in out and "answered 502 (cardprobe capture" in out


def test_a_capture_whose_request_body_was_not_json_is_left_out_with_its_reason(
    tmp_path: Path,
) -> None:
    folder = capture(tmp_path / "caps", [(chat(ASK), ollama_reply("x"))])
    store = CaptureStore(folder, "http://127.0.0.1:11434", [])
    reply = json.dumps(ollama_reply("y"))
    for body in (b"api_key=SECRET123&q=hi", b'"api_key=SECRET123"'):
        store.write(Exchange("ollama", "POST", "/api/chat", time.perf_counter(),
                             {"content-type": "application/x-www-form-urlencoded"}, body,
                             status=200, reply_text=reply))  # fmt: skip
    code, out = draft(tmp_path, folder)
    assert code == 0, out
    assert "its request body was not JSON (22 bytes, content type " in out
    assert "its request body was JSON, not an object (19 bytes" in out
    assert out.count("so capture kept none of it; left out") == 2
    assert "declare no tools" not in out and "SECRET123" not in out
    assert len(load_suite(tmp_path / "cases" / "app.yaml").cases) == 1
