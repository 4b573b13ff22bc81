"""Tool-call arguments no request could carry back (NaN, overflowing numbers, lone
surrogates, nesting thousands deep): a malformed call, never a crash.

Each test here pins an example a fuzz test (tests/fuzz) found; each failed before the fix
its docstring names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from probing import (
    ROOT,
    run_once,
    serving,
    settings_for,
)

from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import expand
from pytest_cardprobe.wire.cassettes.record import Record

# --------------------------------------------------------------------------- tool arguments


def test_arguments_nested_thousands_deep_are_refused_not_a_recursion_error() -> None:
    """Found by test_fuzz_judges (arguments as JSON text, the OpenAI way, nested 3000 deep):
    ``decode_arguments`` raised RecursionError, which escaped the client. Fixed in
    wire/calls.py: arguments are read with jsonread.load_json (bounded nesting, finite
    numbers, text), so they are refused as not valid JSON (a malformed sample)."""
    from pytest_cardprobe.wire.calls import decode_arguments

    args, error, _ = decode_arguments('{"a": ' + "[" * 3000 + "]" * 3000 + "}", False)
    assert args == {} and error == (
        "arguments are not valid JSON: JSON nested more than 64 levels deep"
    )


@pytest.mark.parametrize("number", ["NaN", "1e999", "-Infinity"])
def test_a_tool_loop_refuses_arguments_no_request_can_carry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, number: str
) -> None:
    """The same fix: an Ollama call whose arguments came as text holding NaN was decoded,
    and the loop's next request (``allow_nan=False``) raised ValueError: an internal error.
    Now the call is malformed (the loop hands back what it could read: no arguments)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    calls = load_suite(ROOT / "cases" / "tools.yaml")
    probe = next(
        p
        for p in expand(calls, ["smollm2:135m"])
        if (p.case.id, p.condition) == ("find_then_read", "cold")
    )
    arguments = json.dumps('{"path": "README.md", "start_line": ' + number + "}")
    body = (
        '{"message":{"role":"assistant","content":"","tool_calls":[{"function":'
        '{"name":"read_file","arguments":' + arguments + '}}]},"done":true}'
    )
    serving(monkeypatch, body.encode())
    result = run_once(
        Runtime(settings_for(tmp_path, "http://127.0.0.1:9", live=True), Record()), probe
    )
    assert result.status == "failed"
    assert result.samples[0].label.startswith("malformed read_file: arguments are not valid JSON")


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"path": "a", "start_line": 1e999}', "1e999 overflows a float"),
        ('{"path": "\\udfff"}', "arguments hold a lone surrogate (\\udfff)"),
    ],
)
def test_a_call_written_as_text_with_arguments_no_request_can_carry_is_refused(
    arguments: str, why: str
) -> None:
    """The same kind, in a call written as text: recovery (judge/callread.py) reads spans
    with finite floats and refuses arguments that hold a lone surrogate."""
    from pytest_cardprobe.judge.recovery import recover_tool_calls

    text = '<tool_call>{"name": "read_file", "arguments": ' + arguments + "}</tool_call>"
    recovery = recover_tool_calls(text, ["read_file"])
    assert recovery.calls == [] and recovery.error is not None and why in recovery.error
