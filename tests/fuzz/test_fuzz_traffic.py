"""Recorded traffic as untrusted input: what ``capture`` writes down and what ``draft`` reads.

* Any request body, header set and reply, with secrets planted in credential headers, the
  upstream URL and redacted body keys at any depth: the capture file written for it holds
  none of them, and reads back.
* Any reply — bytes of any value cut into chunks of any size, as one body or as a chunked
  stream, with any status — reaches the client through the proxy byte for byte, and the
  capture file holds it (up to the cap, and says ``truncated`` past it).
* Any traffic — conversations of every role in any order, tool calls to declared and
  undeclared tools with arguments of every JSON type, text that YAML treats specially
  (``yes``, ``null``, ``- x``, ``#``, ``: ``, ``&a``, dates, control characters), secrets in
  body keys — drafted into suites: each suite written loads with the suite loader as it is,
  holds no secret, and the rest is refused in words, never with a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fuzzing import API_KEY, PASSWORD, TOKEN, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from pytest_cardprobe.__main__ import main
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.wire.capture.format import read_capture
from pytest_cardprobe.wire.capture.relay import Limits
from pytest_cardprobe.wire.capture.store import CaptureStore, Exchange
from pytest_cardprobe.wire.redact import DEFAULT_REDACT_FIELDS

# The scripted server and the in-process proxy of the capture proxy's own tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
scripted = importlib.import_module("scripted_upstream")

TRICKY = ["yes", "no", "null", "~", "- x", "# hash", "a: b", "&anchor", "*alias", "!tag",
          "2024-01-01", "1e999", "NaN", "{", "'", '"', "\t", "\x1b[2J", "line\nbreak",
          "trailing \n", "ü é 中文", "\u2028", ""]  # fmt: skip
text = st.one_of(st.sampled_from(TRICKY), st.text(max_size=30))
scalar = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6),
                   st.floats(allow_nan=False, allow_infinity=False), text)  # fmt: skip
json_value = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "d",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "search", "description": "d",
     "parameters": {"type": "object", "additionalProperties": True}}},
    {"type": "function", "function": {"name": "now"}},
]  # fmt: skip
NAMES = ["get_weather", "search", "now", "unknown_tool", ""]


@st.composite
def call(draw: st.DrawFn, hostile: bool = False) -> dict[str, Any]:
    names = NAMES if hostile else NAMES[:3]
    name = draw(st.sampled_from(names))
    keys = (
        ["city", "days", "q", "x"]
        if hostile
        else {"get_weather": ["city", "days"]}.get(name, ["q"])
    )
    value = st.one_of(json_value, st.dictionaries(st.text(max_size=5), json_value, max_size=2))
    arguments: Any = draw(st.dictionaries(st.sampled_from(keys), value, max_size=3))
    if hostile and draw(st.booleans()):
        arguments = draw(json_value.map(json.dumps))  # OpenAI-style strings, JSON or not
    entry: dict[str, Any] = {"function": {"name": name, "arguments": arguments}}
    if draw(st.booleans()):
        entry["id"] = draw(st.sampled_from(["call_1", "call_2", "c"]))
    return entry


@st.composite
def turn(draw: st.DrawFn, hostile: bool) -> list[dict[str, Any]]:
    """One step of a conversation: a question, an answer, or calls and their results."""
    kind = draw(
        st.sampled_from(
            ["user", "system", "answer", "calls", "odd"]
            if hostile
            else ["user", "system", "answer", "calls"]
        )
    )
    if kind in ("user", "system"):
        return [{"role": kind, "content": draw(text)}]
    if kind == "answer":
        return [{"role": "assistant", "content": draw(st.one_of(text, st.none()))}]
    if kind == "calls":
        calls = draw(st.lists(call(hostile), min_size=1, max_size=2))
        results = [
            {"role": "tool", "tool_name": c["function"]["name"], "content": draw(text),
             **({"tool_call_id": c["id"]} if "id" in c else {})}
            for c in calls
        ]  # fmt: skip
        return [{"role": "assistant", "content": "", "tool_calls": calls}, *results]
    role = draw(st.sampled_from(["tool", "developer", "robot", "function"]))
    return [
        {"role": role, "content": draw(st.one_of(text, st.none(), st.just([{"type": "image"}])))}
    ]


@st.composite
def request(draw: st.DrawFn) -> dict[str, Any]:
    hostile = draw(st.integers(0, 4)) == 0
    messages = [m for step in draw(st.lists(turn(hostile), max_size=4)) for m in step]
    messages.append({"role": "user", "content": draw(text)})
    body: dict[str, Any] = {"model": "m", "messages": messages}
    tools = draw(
        st.lists(st.sampled_from(TOOLS), min_size=1, max_size=3, unique_by=lambda t: id(t))
    )
    if draw(st.integers(0, 4)) == 0:
        tools = []  # a request without tools: left out of a call suite
    if tools:
        body["tools"] = tools
    if draw(st.booleans()):
        body["options"] = {"temperature": draw(st.floats(0, 2)), "api_key": API_KEY}
    if draw(st.booleans()):
        body["metadata"] = {"nested": [{"token": TOKEN}]}
    return body


@st.composite
def reply(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.integers(0, 3)) == 0:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": draw(text)}
    if draw(st.booleans()):
        message["tool_calls"] = draw(st.lists(call(draw(st.booleans())), min_size=1, max_size=2))
    return {"message": message, "done": True, "secret": API_KEY}


@st.composite
def traffic(draw: st.DrawFn) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Exchanges, some continuing an earlier one as an application does: the same messages,
    then the model's calls and the tool results (a tool loop), or an answer and a new
    question (a follow-up)."""
    lines: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for _ in range(draw(st.integers(1, 6))):
        if lines and draw(st.booleans()):
            earlier = draw(st.sampled_from(lines))[0]
            more = draw(turn(False)) + draw(
                st.one_of(st.just([]), st.just([{"role": "user", "content": draw(text)}]))
            )
            lines.append(({**earlier, "messages": [*earlier["messages"], *more]}, draw(reply())))
        else:
            lines.append((draw(request()), draw(reply())))
    return lines


HEADERS = st.dictionaries(
    st.sampled_from(["authorization", "x-api-key", "cookie", "content-type"]), text, max_size=4
)


@fuzz_settings(150)
@given(body=json_value, headers=HEADERS, reply_text=text)
def test_a_capture_file_holds_no_secret_and_reads_back(
    sandbox: Path, body: Any, headers: dict[str, str], reply_text: str
) -> None:
    planted = {"messages": [{"role": "user", "content": "q"}], "api_key": API_KEY,
               "deep": [{"password": PASSWORD}], "body": body}  # fmt: skip
    store = CaptureStore(
        sandbox / "caps", f"http://u:{PASSWORD}@127.0.0.1:9", DEFAULT_REDACT_FIELDS
    )
    store.prepare()
    secret_headers = {**headers, "authorization": f"Bearer {TOKEN}"}
    reply_body = json.dumps({"message": {"content": reply_text}, "token": TOKEN})
    path = store.write(
        Exchange(
            "ollama",
            "POST",
            f"/api/chat?key={TOKEN}",
            time.perf_counter(),
            secret_headers,
            json.dumps(planted).encode(),
            status=200,
            reply_text=reply_body,
        )
    )
    assert path is not None
    written = path.read_text(encoding="utf-8")
    for secret in (API_KEY, PASSWORD, TOKEN):
        assert secret not in written
    assert read_capture(path, 10**8).api == "ollama"


@fuzz_settings(100)
@given(lines=traffic())
def test_drafted_suites_load_as_they_are_and_hold_no_secret(
    sandbox: Path, lines: list[tuple[dict[str, Any], dict[str, Any] | None]]
) -> None:
    source = sandbox / "traffic.jsonl"
    source.write_text(
        "".join(json.dumps({"input": r, **({"output": o} if o else {})}) + "\n" for r, o in lines)
    )
    out = sandbox / "cases" / "app.yaml"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(["draft", str(source), "--out", str(out), "--force"])
    assert code in (0, 1), printed.getvalue()
    # Refused only for want of tools or questions, never because the draft does not load.
    assert "does not load" not in printed.getvalue(), printed.getvalue()
    written = sorted(out.parent.glob("*.yaml"))
    assert (code == 0) == bool(written), printed.getvalue()
    for suite in written:
        loaded = load_suite(suite)
        assert loaded.cases and all(not c.reviewed for c in loaded.cases)
    for path in (sandbox / "cases").rglob("*") if (sandbox / "cases").exists() else []:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert API_KEY not in text and TOKEN not in text
    for path in written:
        path.unlink()


@pytest.fixture
def chain(sandbox: Path) -> Iterator[tuple[Any, str, Path]]:
    """A scripted server and the proxy in front of it (a 500-byte capture cap), started once
    for all the examples of a test: (server, proxy URL, capture folder)."""
    with (
        scripted.Upstream() as up,
        scripted.running_proxy(up.url, sandbox / "caps", Limits(max_capture_bytes=500)) as (
            proxy,
            _,
        ),
    ):
        yield up, proxy, sandbox / "caps"


@fuzz_settings(60)
@given(
    chunks=st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=8),
    streamed=st.booleans(),
    status=st.sampled_from([200, 400, 500]),
)
def test_any_reply_reaches_the_client_byte_for_byte_and_is_captured(
    chain: tuple[Any, str, Path], chunks: list[bytes], streamed: bool, status: int
) -> None:
    up, proxy, folder = chain
    whole = b"".join(chunks)
    up_head, as_chunk = scripted.head, scripted.chunked

    def reply(up: Any, request: object, wfile: Any, conn: object) -> None:
        kind = "application/x-ndjson" if streamed else "application/json"
        if streamed:
            up.write(wfile, up_head(status, {"content-type": kind, "transfer-encoding": "chunked"}))
            for chunk in chunks:
                up.write(wfile, as_chunk(chunk))
            up.write(wfile, b"0\r\n\r\n")
        else:
            length = str(len(whole))
            up.write(wfile, up_head(status, {"content-type": kind, "content-length": length}))
            up.write(wfile, whole)

    up.script["/api/chat"] = reply
    got = httpx.post(f"{proxy}/api/chat", json={"messages": []}, timeout=30)
    assert got.status_code == status and got.content == whole
    deadline = time.monotonic() + 10  # the file is written just after the reply ends
    while not list(folder.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.01)
    (path,) = folder.glob("*.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    kept = whole[:500].decode("utf-8", "replace")
    assert document["reply"]["body"] == kept and document["reply"]["bytes"] == len(whole)
    assert document["reply"]["truncated"] is (len(whole) > 500)
    path.unlink()
