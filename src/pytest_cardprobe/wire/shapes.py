"""What a 2xx chat reply must look like before anything reads it, per API and per stream.

A reply is checked against the shape of the API it came from: live, a wrong shape is an
infra error (the server misbehaved); replayed, the cassette is corrupt. Either way the judge
never sees garbage and no parser meets a type it did not expect (a ``message`` that is a
string, a ``content`` that is a number).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.wire.unparsed import error_line

CHAT_PATHS = {"/api/chat": "ollama", "/v1/chat/completions": "openai"}


@dataclass(frozen=True)
class Stream:
    """A streamed reply as :func:`read_stream` read it, each line parsed once, up to where a
    client stops reading (Ollama's first ``done: true`` chunk, OpenAI's ``data: [DONE]``).

    ``chunks``: the JSON object of every NDJSON line or SSE ``data:`` event, in order, each of
    its API's shape. ``error``: the first SSE ``error:`` line (llama-server's word for a
    failure after the stream started) as the number of chunks before it and its text.
    ``done``: the stream reached ``data: [DONE]``. The parsers (``ollama_stream.py``,
    ``openai_stream.py``) assemble a reply from it.
    """

    chunks: tuple[dict[str, Any], ...]
    error: tuple[int, str] | None = None
    done: bool = False


@dataclass(frozen=True)
class StreamLimits:
    """The most a streamed reply may hold: lines (any, blank ones and SSE comments too)
    and chunks (NDJSON objects, SSE ``data:`` events). A real reply sends one chunk per
    token or so (two lines for SSE); the byte cap of a reply is the transport's."""

    lines: int = 300_000
    chunks: int = 100_000


#: The ini keys of the limits, named in the refusals.
LINES_KEY, CHUNKS_KEY = "cardprobe_max_stream_lines", "cardprobe_max_stream_chunks"


# Every line break ``str.splitlines`` splits at, which is how a stream is read.
_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def stream_size_problem(api: str, text: str, limits: StreamLimits) -> str | None:
    """What makes a streamed reply too long to read, or None: counted before anything is
    parsed, on the stream as sent (what follows its end too), in time bounded by the limits
    rather than by the text."""
    found = sum(1 for _ in itertools.islice(_BREAK.finditer(text), limits.lines + 1))
    # As many lines as splitlines() gives: one more than the breaks unless a break ends it.
    lines = found + int(bool(text) and _BREAK.fullmatch(text[-1]) is None)
    if lines > limits.lines:
        return f"stream of more than {limits.lines} lines ({LINES_KEY})"
    if lines <= limits.chunks:
        return None  # no more lines than the chunk limit: no more chunks either
    every = text.splitlines()
    if api == "openai":
        chunks = sum(1 for line in every if line.startswith("data:"))
    else:
        chunks = sum(1 for line in every if line.strip())
    if chunks > limits.chunks:
        return f"stream of more than {limits.chunks} chunks ({CHUNKS_KEY})"
    return None


def chat_api(path: str) -> str | None:
    """The API of a chat request's URL path, behind any base path of the server's own
    (``/ollama/api/chat`` on a gateway is Ollama's ``/api/chat``); None for other requests."""
    return next((api for chat, api in CHAT_PATHS.items() if path.endswith(chat)), None)


def _type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _message_problem(message: Any, where: str, api: str, stream: bool) -> str | None:
    if not isinstance(message, dict):
        return f"{where} is {_type(message)}, not an object"
    for key in ("role", "content", "thinking", "reasoning_content"):
        value = message.get(key)
        if value is not None and not isinstance(value, str):
            return f"{where}.{key} is {_type(value)}, not a string"
    calls = message.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"{where}.tool_calls is {_type(calls)}, not a list"
    for index, call in enumerate(calls):
        at = f"{where}.tool_calls[{index}]"
        if not isinstance(call, dict):
            return f"{at} is {_type(call)}, not an object"
        fn = call.get("function")
        if not isinstance(fn, dict):
            return f"{at}.function is {_type(fn)}, not an object"
        name = fn.get("name")
        # A streamed OpenAI call sends its name once; later fragments carry only arguments.
        if not isinstance(name, str) and not (stream and api == "openai" and name is None):
            return f"{at}.function.name is {_type(name)}, not a string"
        arguments = fn.get("arguments")
        if arguments is not None and not isinstance(arguments, dict | str):
            return f"{at}.function.arguments is {_type(arguments)}, not an object or a string"
        if stream and api == "openai" and not isinstance(call.get("index", 0), int):
            return f"{at}.index is {_type(call.get('index'))}, not an integer"
    return None


def _ollama_chunk_problem(chunk: Any, where: str, stream: bool) -> str | None:
    if not isinstance(chunk, dict):
        return f"{where} is {_type(chunk)}, not an object"
    if stream and (isinstance(chunk.get("error"), str) or error_line(chunk) is not None):
        return None  # an error line: the client reads it (infra, or a call left unparsed)
    if "message" not in chunk:
        return f"{where} has no message"
    done = chunk.get("done")
    if done is not None and not isinstance(done, bool):
        return f"{where}.done is {_type(done)}, not true or false"
    reason = chunk.get("done_reason")
    if reason is not None and not isinstance(reason, str):
        return f"{where}.done_reason is {_type(reason)}, not a string"
    return _message_problem(chunk["message"], f"{where}.message", "ollama", stream)


def _openai_chunk_problem(chunk: Any, where: str, stream: bool) -> str | None:
    if not isinstance(chunk, dict):
        return f"{where} is {_type(chunk)}, not an object"
    if "error" in chunk and stream:
        return None
    choices = chunk.get("choices")
    if not isinstance(choices, list) or (not stream and not choices):
        return f"{where}.choices is {_type(choices)}, not a non-empty list"
    part = "delta" if stream else "message"
    for index, choice in enumerate(choices):
        at = f"{where}.choices[{index}]"
        if not isinstance(choice, dict):
            return f"{at} is {_type(choice)}, not an object"
        reason = choice.get("finish_reason")
        if reason is not None and not isinstance(reason, str):
            return f"{at}.finish_reason is {_type(reason)}, not a string"
        if part not in choice:
            if stream:
                continue  # a closing chunk may carry only finish_reason
            return f"{at} has no message"
        problem = _message_problem(choice[part], f"{at}.{part}", "openai", stream)
        if problem:
            return problem
    return None


def reply_problem(api: str, stream: bool, text: str) -> str | None:
    """What is wrong with a 2xx chat reply body for ``api``, or None when it has the shape.

    ``stream`` replies are NDJSON lines (Ollama) or SSE ``data:`` events (OpenAI).
    """
    return check_reply(api, stream, text)[0]


def check_reply(
    api: str, stream: bool, text: str, limits: StreamLimits | None = None
) -> tuple[str | None, Any]:
    """``(problem, body)``: :func:`reply_problem`, and the reply read (None when it has a
    problem): a whole reply's parsed JSON, a stream's :class:`Stream`.

    The body comes back so that a checked reply is not parsed a second time. A stream is
    first held to ``limits`` (:func:`stream_size_problem`; the defaults when None).
    """
    if not stream:
        try:
            body = load_json(text)
        except ValueError as exc:
            return f"reply is not JSON: {exc}", None
        if api == "openai":
            return _openai_chunk_problem(body, "reply", False), body
        return _ollama_chunk_problem(body, "reply", False), body
    too_long = stream_size_problem(api, text, limits or StreamLimits())
    if too_long:
        return too_long, None
    return read_stream(api, text)


def read_stream(api: str, text: str) -> tuple[str | None, Stream | None]:
    """A stream read once: ``(None, its Stream)``, or the first problem up to where a client
    stops reading it (Ollama's first ``done: true`` chunk, OpenAI's ``data: [DONE]``) and None.
    What a server sends after that is no part of the reply, so it is neither checked nor
    read. No size limit here: :func:`check_reply` holds a reply to its limits first."""
    check = _openai_chunk_problem if api == "openai" else _ollama_chunk_problem
    chunks: list[dict[str, Any]] = []
    error: tuple[int, str] | None = None
    done = False
    for number, line in enumerate(text.splitlines(), 1):
        if api == "openai":
            if line.startswith("error:"):
                error = error or (len(chunks), line[6:].strip())
                continue
            if not line.startswith("data:"):
                continue
            line = line[5:].strip()
            if line == "[DONE]":
                done = True
                break
        elif not line.strip():
            continue
        try:
            chunk = load_json(line)
        except ValueError as exc:
            return f"stream line {number} is not JSON: {exc}", None
        problem = check(chunk, f"stream line {number}", True)
        if problem:
            return problem, None
        chunks.append(chunk)
        if api == "ollama" and chunk.get("done") is True:
            break
    if not chunks:
        return "stream holds no events", None
    return None, Stream(tuple(chunks), error, done)
