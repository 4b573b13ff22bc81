"""Fuzz: hostile server replies, live, recorded, replayed, judged and reported, in process.

A stand-in transport (httpx's ``MockTransport``, in place of the socket transport under the
request deadline; error paths only, no model behaviour is claimed) answers every request of
a probe with a hostile reply: Ollama and OpenAI bodies, whole or streamed (NDJSON, SSE),
built on the shapes of docs/design.md §7 and the real recorded Ollama replies of the shipped
cassettes, with hostile leaves and edits (``fuzzing.py``), sometimes a 4xx/5xx, a missing
``done``/``[DONE]``, broken bytes. The probe runs through the real ``Runtime`` with the real
recording backend (vcrpy) on a server URL that carries a password, a secret query parameter,
a header and an API key; then:

- the probe ends in a :class:`ProbeResult` (infra, error or a verdict): nothing escapes;
- the session end (``pipeline.session_end``) makes every report, each writable;
- a cassette that was written replays through the real ``Replay`` to the same verdicts;
- no secret is in the result, the reports, the failure text or the cassette;
- nothing is written outside the test's folder.

Budget (every fuzz module, ``pytest tests/fuzz``): a fixed seed and bounded examples; the
examples per test and the measured time are in docs/design.md §4, "Hostile input", and the
guide's "What happens when…" (docs/guide/what-happens-when.md).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fuzzing import (
    API_KEY,
    ROOT,
    SERVER,
    TEXT,
    TOKEN,
    corrupted,
    fuzz_settings,
    leaked,
    mutated,
    to_json,
)
from hypothesis import given
from hypothesis import strategies as st
from pipeline import PROBES, as_text, run_probe, session_end

from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.cassettes.record import Record
from pytest_cardprobe.wire.cassettes.replay import Replay
from pytest_cardprobe.wire.shapes import StreamLimits

# Real recorded Ollama replies (the shipped cassettes): the seeds of a whole Ollama body.
RECORDED = [
    json.loads(i["response"]["body"]["string"])
    for name in (
        "cards/smollm2%3A135m/date-tool-cold.yaml",
        "tools/smollm2%3A135m/readme-call-cold.yaml",
    )
    for i in yaml.safe_load((ROOT / "cassettes" / name).read_text())["interactions"][:1]
]  # fmt: skip
CARD = {"type": "AdaptiveCard", "version": "1.5", "body": [{"type": "Input.Date", "id": "d"}]}
CALLS = {
    "render_adaptive_card": {"body": [{"type": "Input.Date", "id": "d", "label": "Day"}]},
    "read_file": {"path": "README.md", "start_line": 1},
    "search_code": {"query": "TODO"},
}


@st.composite
def arguments(draw: st.DrawFn, name: str, textual: bool) -> Any:
    """A call's arguments: an object, or JSON text of one (with what JSON cannot hold)."""
    tree = draw(st.one_of(st.just(CALLS[name]), mutated(CALLS[name])))
    return to_json(tree) if textual else tree


@st.composite
def content(draw: st.DrawFn) -> str:
    """What a model might write: prose, a card, a call written as text, a think block."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(TEXT)
    if kind == 1:
        return to_json(draw(mutated(CARD)))
    if kind == 2:
        name = draw(st.sampled_from(sorted(CALLS)))
        call = {"name": name, "arguments": draw(arguments(name, draw(st.booleans())))}
        return f"<tool_call>\n{to_json(call)}\n</tool_call>"
    if kind == 3:
        return f"```json\n{to_json(draw(mutated(CARD)))}\n```"
    if kind == 4:
        return f"<think>{draw(TEXT)}</think>{draw(TEXT)}"
    return "<think>" + draw(TEXT)


@st.composite
def tool_calls(draw: st.DrawFn, api: str, stream: bool) -> list[Any]:
    calls = []
    for index in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(sorted(CALLS)))
        args = draw(arguments(name, textual=api == "openai" or draw(st.booleans())))
        call: dict[str, Any] = {"function": {"name": name, "arguments": args}}
        if api == "openai":
            call = {"id": f"call_{index}", "type": "function", **call}
            if stream:
                call["index"] = index
        calls.append(call)
    return calls


def _ollama_whole(draw: st.DrawFn) -> dict[str, Any]:
    body = dict(draw(st.sampled_from(RECORDED)))
    message: dict[str, Any] = {"role": "assistant", "content": draw(content())}
    calls = draw(tool_calls("ollama", False))
    if calls:
        message["tool_calls"] = calls
    return {**body, "message": message}


def _openai_whole(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": draw(content())}
    calls = draw(tool_calls("openai", False))
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        "timings": {"prompt_n": 5, "prompt_ms": 1.5, "predicted_n": 3, "predicted_ms": 2.5},
    }


def _ollama_chunks(draw: st.DrawFn) -> list[Any]:
    final = dict(draw(st.sampled_from(RECORDED)))
    text = draw(content())
    cut = draw(st.integers(0, len(text)))
    chunks: list[Any] = [
        {"model": "m", "message": {"role": "assistant", "content": piece}, "done": False}
        for piece in (text[:cut], text[cut:])
    ]
    calls = draw(tool_calls("ollama", True))
    if calls:
        chunks[draw(st.integers(0, 1))]["message"]["tool_calls"] = calls
    chunks.append({**final, "message": {"role": "assistant", "content": ""}, "done": True})
    return chunks


def _openai_chunks(draw: st.DrawFn) -> list[Any]:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    text = draw(content())
    cut = draw(st.integers(0, len(text)))
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": text[:cut]}]
    deltas.append({"content": text[cut:]})
    chunks: list[Any] = [{**head, "choices": [{"index": 0, "delta": d}]} for d in deltas]
    for call in draw(tool_calls("openai", True)):
        args = call["function"]["arguments"]
        half = draw(st.integers(0, len(args)))
        first = {**call, "function": {"name": call["function"]["name"], "arguments": args[:half]}}
        rest = {"index": call["index"], "function": {"arguments": args[half:]}}
        chunks += [{**head, "choices": [{"index": 0, "delta": {"tool_calls": [part]}}]}
                   for part in (first, rest)]  # fmt: skip
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({**head, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
    return chunks


ERRORS = [400, 404, 429, 500, 503]
# What Ollama's tool-call parsers say (wire/unparsed.py): a 500 or a stream's last line.
PARSER_ERRORS = [
    "failed to parse JSON: invalid character '\\\\' looking for beginning of object key string",
    "empty function name",
    "error parsing tool call: raw='{\"a\":', err=unexpected end of JSON input",
]
# Anything after a stream's end: more chunks, error lines, garbage (never read).
AFTER_END = st.one_of(
    st.builds(lambda t: to_json({"message": {"content": t}, "done": True}), TEXT),
    st.builds(lambda t: to_json({"error": t}), st.sampled_from(PARSER_ERRORS)),
    TEXT.map(lambda t: t.replace("\n", " ")),
)


@st.composite
def reply(draw: st.DrawFn, api: str, stream: bool) -> tuple[int, bytes]:
    """One hostile reply: status and body bytes."""
    if draw(st.integers(0, 9)) == 9:
        status = draw(st.sampled_from(ERRORS))
        error: Any = {"error": draw(TEXT)} if api == "ollama" else {"error": {"message": "x"}}
        if draw(st.booleans()):  # worded as a parser's error (the model's failure at 500)
            said = draw(st.sampled_from(PARSER_ERRORS))
            error = {"error": said} if api == "ollama" else {"error": {"message": said}}
        return status, draw(corrupted(to_json(draw(mutated(error)))))
    if not stream:
        whole = _ollama_whole(draw) if api == "ollama" else _openai_whole(draw)
        return 200, draw(corrupted(to_json(draw(mutated(whole)))))
    chunks = _ollama_chunks(draw) if api == "ollama" else _openai_chunks(draw)
    edited = [draw(mutated(c)) if draw(st.integers(0, 2)) == 2 else c for c in chunks]
    if draw(st.integers(0, 7)) == 7:
        edited = edited[: draw(st.integers(0, len(edited) - 1))]  # cut short
    if api == "ollama":
        if draw(st.integers(0, 4)) == 4:  # a parser's error line in place of the end
            edited = [*edited[:-1], {"error": draw(st.sampled_from(PARSER_ERRORS))}]
        text = "".join(to_json(c) + "\n" for c in edited)
        text += "".join(line + "\n" for line in draw(st.lists(AFTER_END, max_size=3)))
    else:
        text = "".join(f"data: {to_json(c)}\n\n" for c in edited)
        if draw(st.integers(0, 7)) < 7:
            text += "data: [DONE]\n\n"
    return 200, draw(corrupted(text))


def _metadata(path: str, api: str) -> tuple[int, Any]:
    """What the stand-in says about models and itself (the live runtime asks before recording)."""
    if path.endswith("/api/show"):
        return 200, {"capabilities": ["completion", "tools"]}
    if path.endswith("/api/tags"):
        return 200, {"models": [{"name": "smollm2:135m", "digest": "abc123"}]}
    if path.endswith("/api/version"):
        return (200, {"version": "0.11.4"}) if api == "ollama" else (404, {"error": "no"})
    if path.endswith("/v1/models"):
        return 200, {"data": [{"id": "smollm2:135m", "owned_by": "llamacpp"}]}
    return 404, {"error": "404 page not found"}


def stand_in(
    api: str, replies: list[tuple[int, bytes]]
) -> Callable[[httpx.Request], httpx.Response]:
    """Answers chat requests with ``replies`` in turn (the last one again when they run out)."""
    served = [0]

    def handle(request: httpx.Request) -> httpx.Response:
        # What the plugin sends carries the secrets; what it records and shows must not.
        # (httpx turns the URL's user:password into the Authorization header; the bearer
        # token is sent when the URL has none.)
        assert request.headers.get("x-auth") == TOKEN
        assert request.headers.get("authorization")
        path = request.url.path
        if path.endswith(("/api/chat", "/chat/completions")):
            status, body = replies[min(served[0], len(replies) - 1)]
            served[0] += 1
            kind = "application/x-ndjson" if api == "ollama" else "text/event-stream"
            return httpx.Response(status, content=body, headers={"content-type": kind})
        status, data = _metadata(path, api)
        return httpx.Response(status, json=data)

    return handle


def settings_for(
    folder: Path, api: str, stream: bool, live: bool, limits: tuple[int, int] = (300_000, 100_000)
) -> Settings:
    return Settings(
        max_stream_lines=limits[0],
        max_stream_chunks=limits[1],
        models=["smollm2:135m"],
        record_mode="rewrite" if live else "none",
        api=api,
        servers=[SERVER],
        stream=stream,
        retries=0,
        timeout=5,
        cassette_dir=folder / "cassettes",
        api_key=API_KEY,
        headers={"X-Auth": TOKEN},
        warmup=False,
    )


def _labels(result: ProbeResult) -> list[tuple[str, bool, str | None]]:
    return [(s.label, s.passed, s.route) for s in result.samples]


@fuzz_settings(400)
@given(
    data=st.data(),
    api=st.sampled_from(["ollama", "openai"]),
    stream=st.booleans(),
    which=st.integers(0, len(PROBES) - 1),
)
def test_a_hostile_reply_is_a_result_a_report_and_a_replayable_cassette(
    sandbox: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: st.DataObject,
    api: str,
    stream: bool,
    which: int,
) -> None:
    folder = Path(tempfile.mkdtemp(dir=sandbox))  # this example's own
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))  # the request-slot locks
    probe = PROBES[which]
    replies = [data.draw(reply(api, stream)) for _ in range(data.draw(st.integers(1, 3)))]
    # Sometimes stream caps a hostile stream meets (a real one sends about a chunk a token).
    limits = data.draw(st.sampled_from([(300_000, 100_000), (12, 5), (4, 2)]))
    monkeypatch.setattr(
        "pytest_cardprobe.wire.transport.deadline_transport",
        lambda deadline, shown, *cap: httpx.MockTransport(stand_in(api, replies)),
    )
    live = Runtime(settings_for(folder, api, stream, live=True, limits=limits), Record(["api_key"]))
    try:
        result = run_probe(live, probe, samples=2)
    finally:
        live.close()
    assert isinstance(result, ProbeResult), result  # live, nothing is a cassette problem
    said = as_text(result) + session_end([result], folder=folder)
    cassette = live.cassette_for(probe)
    if cassette.exists():
        said += cassette.read_text(encoding="utf-8")
        held = StreamLimits(lines=limits[0], chunks=limits[1])
        replay = Runtime(
            settings_for(folder, api, stream, live=False, limits=limits), Replay(limits=held)
        )
        again = run_probe(replay, probe, samples=2)
        assert isinstance(again, ProbeResult), f"a cassette just recorded does not replay: {again}"
        assert (again.status, _labels(again)) == (result.status, _labels(result))
    assert not leaked(said), leaked(said)


ENCODINGS = ["", "identity", "IDENTITY", " identity ", "gzip", "br", "identity, gzip", "x-gzip"]


@fuzz_settings(200)
@given(
    parts=st.lists(st.integers(0, 3000), max_size=8),
    limit=st.integers(0, 12_000),
    encodings=st.lists(st.sampled_from(ENCODINGS), max_size=2),
    declared=st.sampled_from(["none", "true", "less", "more", "word"]),
)
def test_a_reply_body_is_refused_exactly_when_compressed_or_past_the_cap(
    parts: list[int], limit: int, encodings: list[str], declared: str
) -> None:
    """The byte cap under the client (``wire/transport.capped``), over every framing a server
    can send: any ``Content-Encoding`` but identity is refused from the head; a body is read
    whole up to the cap and refused one byte past it, whatever ``Content-Length`` claims."""
    import httpcore

    from pytest_cardprobe.wire.errors import ReplyRefused
    from pytest_cardprobe.wire.transport import capped

    chunks = [b"x" * size for size in parts]
    total = sum(parts)
    length = {"true": total, "less": max(total - 1, 0), "more": total + 1}.get(declared)
    headers = [(b"Content-Encoding", e.encode()) for e in encodings]
    if declared == "word":
        headers.append((b"Content-Length", b"ten"))
    elif length is not None:
        headers.append((b"Content-Length", str(length).encode()))
    closed: list[bool] = []

    class Body:
        def __iter__(self) -> Any:
            return iter(chunks)

        def close(self) -> None:
            closed.append(True)

    def pool(request: httpcore.Request) -> httpcore.Response:
        return httpcore.Response(200, headers=headers, content=Body())

    handle = capped(pool, limit, "http://s")
    named = [part.strip().lower() for e in encodings for part in e.split(",")]
    compressed = any(part not in ("", "identity") for part in named)
    too_long = total > limit or (length is not None and length > limit)
    try:
        response = handle(httpcore.Request("GET", "http://s/"))
        got = b"".join(response.stream)  # type: ignore[union-attr]
    except ReplyRefused as exc:
        assert compressed or too_long, exc
        assert "compressed" in str(exc) if compressed else "larger than the" in str(exc)
    else:
        assert not compressed and not too_long
        assert got == b"".join(chunks)
