"""Ask the real servers and save each exchange, byte for byte, under tests/unit/data/wire/.

    scripts/real-servers start      # both Ollama releases and llama-server
    python tests/live/capture_wire.py [--out tests/unit/data/wire] [--only NAME-PART]

Every exchange is one JSON file: the request (method, path, the JSON body as sent), the
response status, its Content-Type and its raw body as text (NDJSON and SSE streams whole),
which server answered (kind and the version it states), the model and the UTC time. The
server URLs come from the env file `scripts/real-servers start` writes (or the environment:
CARDPROBE_OLLAMA_<X_Y_Z>_URL, CARDPROBE_LLAMA_SERVER_URL). Nothing here is written by hand:
the unit tests that read these files test the plugin against what real servers sent.

Standard library only (http.client, so no client decodes or reorders anything).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recipes

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "unit" / "data" / "wire"
MODEL = "smollm2:135m"
LLAMA_MODEL = "smollm2-135m"
TIMEOUT_S = 600

READ_FILE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file of the user's project and return its text.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "maxLength": 30,
                    "description": "Path of the file, relative to the project root.",
                }
            },
            "required": ["path"],
        },
    },
}
LOOP_QUESTION = [{"role": "user", "content": "Read notes.txt and tell me when the meeting is."}]
LOOP_RESULT = "Meeting moved to 10:30 on Thursday."
SAY_HELLO = [{"role": "user", "content": "Say hello."}]
# Few-shot history for the -think variant: with two earlier turns whose thinking was closed,
# SmolLM2 closes its own </think> and then answers.
THINK_HISTORY = [
    {"role": "user", "content": "What is 1+1?"},
    {"role": "assistant", "thinking": "One plus one is two.", "content": "2"},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "thinking": "Two plus two is four.", "content": "4"},
    {"role": "user", "content": "What is 3+3?"},
]


@dataclass
class Server:
    kind: str  # "ollama" or "llama-server"
    url: str
    version: str

    @property
    def label(self) -> str:
        return f"{self.kind}-{self.version}" if self.kind == "ollama" else self.kind


def env_values() -> dict[str, str]:
    path = Path(
        os.environ.get("CARDPROBE_SERVERS_ENV")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "cardprobe-servers"
        / "run"
        / "servers.env"
    )
    values: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and not key.startswith("#"):
                values[key] = value
    values.update({k: v for k, v in os.environ.items() if k.startswith("CARDPROBE_")})
    return values


def exchange(
    server: Server, method: str, path: str, body: Any = None
) -> tuple[dict[str, Any], Any]:
    """One request; returns (the record to save, the parsed reply or its lines)."""
    parsed = urllib.parse.urlsplit(server.url)
    sent = None if body is None else json.dumps(body, ensure_ascii=False).encode()
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=TIMEOUT_S)
    t0 = time.monotonic()
    try:
        headers = {"Content-Type": "application/json"} if sent is not None else {}
        conn.request(method, path, body=sent, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    text = raw.decode("utf-8", errors="replace")
    record = {
        "captured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "server": {"kind": server.kind, "version": server.version, "url": server.url},
        "request": {"method": method, "path": path, "body": body},
        "response": {
            "status": resp.status,
            "content_type": resp.getheader("Content-Type", ""),
            "body": text,
        },
        "seconds": round(time.monotonic() - t0, 2),
    }
    return record, decode(text)


def decode(text: str) -> Any:
    """The reply as JSON, NDJSON lines or SSE `data:` events (for building the next turn)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    items: list[Any] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("data: "):
            line = line[len("data: ") :]
        if not line or line == "[DONE]":
            continue
        try:
            items.append(json.loads(line))
        except ValueError:
            items.append(line)
    return items


class Capture:
    def __init__(self, out: Path, only: str) -> None:
        self.out, self.only, self.saved = out, only, []

    def wanted(self, name: str) -> bool:
        return not self.only or self.only in name

    def save(self, name: str, note: str, record: dict[str, Any]) -> None:
        record = {"name": name, "note": note, **record}
        path = self.out / f"{name}.json"
        path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
        self.saved.append(path)
        status = record["response"]["status"]
        print(f"  {path.name}: {status} in {record['seconds']} s", flush=True)

    def ask(
        self, server: Server, name: str, note: str, method: str, path: str, body: Any = None
    ) -> Any:
        full = f"{server.label}-{name}"
        if not self.wanted(full):
            return None
        record, reply = exchange(server, method, path, body)
        self.save(full, note, record)
        return reply


def ollama_options(num_predict: int) -> dict[str, Any]:
    return {"temperature": 0, "num_predict": num_predict}


def first_call_message(reply: Any) -> dict[str, Any] | None:
    """The assistant message of an /api/chat reply that carries tool_calls (plain or NDJSON)."""
    chunks = reply if isinstance(reply, list) else [reply]
    for chunk in chunks:
        msg = chunk.get("message", {}) if isinstance(chunk, dict) else {}
        if msg.get("tool_calls"):
            return msg
    return None


def capture_ollama(cap: Capture, server: Server) -> None:
    v = server.version
    jsoncall = MODEL + recipes.JSONCALL_SUFFIX
    think = MODEL + recipes.THINK_SUFFIX
    cap.ask(server, "api-version", "GET /api/version", "GET", "/api/version")
    cap.ask(server, "api-show", f"/api/show of {MODEL}", "POST", "/api/show", {"model": MODEL})
    cap.ask(
        server, "api-show-think", f"/api/show of {think}", "POST", "/api/show", {"model": think}
    )
    cap.ask(server, "v1-models", "GET /v1/models", "GET", "/v1/models")

    # (a)/(b) structured calls under each recipe, plain and streamed
    for recipe, model in (("tag", MODEL), ("json-start", jsoncall)):
        works = recipe == "json-start" or recipes.tag_recipe_works(v)
        what = "a real structured tool call" if works else "the call dropped (swallowed)"
        for stream in (False, True):
            cap.ask(
                server,
                f"api-chat-{recipe}-recipe{'-stream' if stream else ''}",
                f"{recipe} recipe on {model}, {'streamed (NDJSON)' if stream else 'not streamed'}:"
                f" {what}",
                "POST",
                "/api/chat",
                recipes.recipe_body(model, recipe=recipe, stream=stream),
            )

    # (g) a call written as text: the JSON-start schema without `tools`, so the server runs
    # no tool parser and the call arrives as content, token by token (what a streaming chat
    # client would show; the plugin's recovery claims it)
    untooled = recipes.recipe_body(jsoncall, recipe="json-start", stream=True)
    del untooled["tools"]
    cap.ask(
        server, "api-chat-text-call-stream",
        f"json-start schema on {jsoncall} without tools, streamed: the call written as text",
        "POST", "/api/chat", {**untooled, "think": False},
    )  # fmt: skip

    # (e) the tag recipe's call cut by num_predict: the text after the tag never parses
    body = recipes.recipe_body(MODEL, recipe="tag", stream=False)
    cap.ask(
        server, "api-chat-tag-recipe-cut",
        "tag recipe cut by num_predict inside the call: tokens generated, only the text "
        "before the tag comes back",
        "POST", "/api/chat", {**body, "options": ollama_options(24)},
    )  # fmt: skip

    # (c) plain replies, the token limit, errors
    for stream in (False, True):
        sfx = "-stream" if stream else ""
        body = {"model": MODEL, "messages": SAY_HELLO, "stream": stream, "think": False}
        cap.ask(
            server, f"api-chat-plain{sfx}", "plain text reply", "POST", "/api/chat",
            {**body, "options": ollama_options(32)},
        )  # fmt: skip
        cap.ask(
            server, f"api-chat-length{sfx}", "cut by num_predict: done_reason length",
            "POST", "/api/chat", {**body, "options": ollama_options(4)},
        )  # fmt: skip
    cap.ask(
        server, "api-chat-unknown-model", "an unknown model", "POST", "/api/chat",
        {"model": "no-such-model:0b", "messages": SAY_HELLO},
    )  # fmt: skip
    cap.ask(
        server, "api-chat-think-unsupported", f"think:true to {MODEL} (no thinking in template)",
        "POST", "/api/chat",
        {"model": MODEL, "messages": SAY_HELLO, "think": True, "stream": False,
         "options": ollama_options(8)},
    )  # fmt: skip

    # (d) a two-turn tool loop on /api/chat: the call (recipe), then the result back
    recipe = "tag" if recipes.tag_recipe_works(v) else "json-start"
    model = recipes.recipe_model(MODEL, v)
    first = {
        "model": model,
        "messages": LOOP_QUESTION,
        "tools": [READ_FILE_TOOL],
        "format": recipes.recipe_format(READ_FILE_TOOL, v),
        "stream": False,
        "think": False,
        "options": ollama_options(64),
    }
    reply = cap.ask(
        server, "api-chat-loop-turn1", f"loop turn 1 ({recipe} recipe on {model}): the call",
        "POST", "/api/chat", first,
    )  # fmt: skip
    call_msg = first_call_message(reply) if reply is not None else None
    if call_msg is not None:
        call = call_msg["tool_calls"][0]
        tool_msg: dict[str, Any] = {
            "role": "tool",
            "content": LOOP_RESULT,
            "tool_name": call["function"]["name"],
        }
        if "id" in call:
            tool_msg["tool_call_id"] = call["id"]
        assistant = {"role": "assistant", "content": "", "tool_calls": call_msg["tool_calls"]}
        for stream in (False, True):
            second = {
                "model": model,
                "messages": [*LOOP_QUESTION, assistant, tool_msg],
                "tools": [READ_FILE_TOOL],
                "stream": stream,
                "think": False,
                "options": ollama_options(64),
            }
            cap.ask(
                server, f"api-chat-loop-turn2{'-stream' if stream else ''}",
                "loop turn 2: the assistant call (with its id when the server gave one) and "
                "the tool result (tool_name, tool_call_id) sent back; the model's own answer",
                "POST", "/api/chat", second,
            )  # fmt: skip

    # (f) thinking through the -think variant
    for stream in (False, True):
        sfx = "-stream" if stream else ""
        cap.ask(
            server, f"api-chat-think-on{sfx}",
            f"think:true to {think}: thinking closed by the model, then content",
            "POST", "/api/chat",
            {"model": think, "messages": THINK_HISTORY, "think": True, "stream": stream,
             "options": ollama_options(48)},
        )  # fmt: skip
    cap.ask(
        server, "api-chat-think-default", f"no `think` sent to {think}: the server's default",
        "POST", "/api/chat",
        {"model": think, "messages": THINK_HISTORY, "stream": False,
         "options": ollama_options(48)},
    )  # fmt: skip
    cap.ask(
        server, "api-chat-think-off", f"think:false to {think}",
        "POST", "/api/chat",
        {"model": think, "messages": THINK_HISTORY, "think": False, "stream": False,
         "options": ollama_options(48)},
    )  # fmt: skip
    cap.ask(
        server, "api-chat-think-high", f'think:"high" to {think} (a level, not a bool)',
        "POST", "/api/chat",
        {"model": think, "messages": THINK_HISTORY, "think": "high", "stream": False,
         "options": ollama_options(48)},
    )  # fmt: skip

    capture_ollama_v1(cap, server, model)
    if recipes.version_tuple(v) >= recipes.PARSER_SINCE:
        capture_unparsed(cap, server)


def capture_unparsed(cap: Capture, server: Server) -> None:
    """(h) a call the server's parser cannot read: the model's variant with the built-in
    qwen3 parser, made to write the call JSON-escaped (recipes.unparsed_body)."""
    variant = MODEL + recipes.PARSER_SUFFIX
    if cap.wanted(f"{server.label}-api-show-parser"):
        exchange(server, "POST", "/api/create", recipes.parser_variant_create(MODEL))
    cap.ask(
        server, "api-show-parser", f"/api/show of {variant}: its parser and renderer",
        "POST", "/api/show", {"model": variant},
    )  # fmt: skip
    for stream in (False, True):
        cap.ask(
            server, f"api-chat-unparsed{'-stream' if stream else ''}",
            f"{variant} writes a call its parser cannot read: "
            + ("a 200 stream whose last line is the error" if stream else "HTTP 500"),
            "POST", "/api/chat", recipes.unparsed_body(MODEL, stream=stream),
        )  # fmt: skip
    body = recipes.unparsed_body(MODEL, stream=False)
    v1 = {
        "model": body["model"],
        "messages": body["messages"],
        "tools": body["tools"],
        "stream": False,
        "temperature": 0,
        "max_tokens": 96,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": body["format"]},
        },
    }
    cap.ask(
        server, "v1-chat-unparsed", "the same through /v1: HTTP 500, OpenAI's error shape",
        "POST", "/v1/chat/completions", v1,
    )  # fmt: skip


def openai_limits(max_tokens: int) -> dict[str, Any]:
    return {"temperature": 0, "max_tokens": max_tokens}


def capture_ollama_v1(cap: Capture, server: Server, call_model: str) -> None:
    """(c) Ollama's OpenAI-compatible /v1/chat/completions: text, length, calls, a loop."""
    v = server.version
    for stream in (False, True):
        sfx = "-stream" if stream else ""
        usage = {"stream_options": {"include_usage": True}} if stream else {}
        cap.ask(
            server, f"v1-chat-plain{sfx}", "plain text reply (usage asked for when streamed)",
            "POST", "/v1/chat/completions",
            {"model": MODEL, "messages": SAY_HELLO, "stream": stream, **usage,
             **openai_limits(32)},
        )  # fmt: skip
        cap.ask(
            server, f"v1-chat-length{sfx}", "cut by max_tokens: finish_reason length",
            "POST", "/v1/chat/completions",
            {"model": MODEL, "messages": SAY_HELLO, "stream": stream, **usage,
             **openai_limits(4)},
        )  # fmt: skip
        fmt = recipes.recipe_format(recipes.STRICT_CARD_TOOL, v)
        cap.ask(
            server, f"v1-chat-call{sfx}",
            f"a structured call through /v1 (the {v} recipe as response_format on {call_model})",
            "POST", "/v1/chat/completions",
            {"model": call_model, "messages": recipes.USER_ASKS_FOR_CARD,
             "tools": [recipes.STRICT_CARD_TOOL], "stream": stream, **usage,
             "response_format": {"type": "json_schema",
                                 "json_schema": {"name": "call", "schema": fmt}},
             **openai_limits(128)},
        )  # fmt: skip
        cap.ask(
            server, f"v1-chat-call-length{sfx}",
            "the same call cut by max_tokens mid-arguments",
            "POST", "/v1/chat/completions",
            {"model": call_model, "messages": recipes.USER_ASKS_FOR_CARD,
             "tools": [recipes.STRICT_CARD_TOOL], "stream": stream, **usage,
             "response_format": {"type": "json_schema",
                                 "json_schema": {"name": "call", "schema": fmt}},
             **openai_limits(12)},
        )  # fmt: skip
    if not recipes.tag_recipe_works(v):
        tag = recipes.tag_format(recipes.STRICT_CARD_TOOL)
        cap.ask(
            server, "v1-chat-tag-recipe-swallowed",
            f"the tag recipe through /v1 on {MODEL}: completion tokens, no call, a fragment",
            "POST", "/v1/chat/completions",
            {"model": MODEL, "messages": recipes.USER_ASKS_FOR_CARD,
             "tools": [recipes.STRICT_CARD_TOOL],
             "response_format": {"type": "json_schema",
                                 "json_schema": {"name": "call", "schema": tag}},
             **openai_limits(128)},
        )  # fmt: skip
    first = {
        "model": call_model,
        "messages": LOOP_QUESTION,
        "tools": [READ_FILE_TOOL],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "call", "schema": recipes.recipe_format(READ_FILE_TOOL, v)},
        },
        **openai_limits(64),
    }
    reply = cap.ask(
        server, "v1-chat-loop-turn1", "loop turn 1 through /v1: the call", "POST",
        "/v1/chat/completions", first,
    )  # fmt: skip
    calls = None
    if isinstance(reply, dict) and reply.get("choices"):
        calls = reply["choices"][0]["message"].get("tool_calls")
    if calls:
        second = {
            "model": call_model,
            "messages": [
                *LOOP_QUESTION,
                {"role": "assistant", "content": "", "tool_calls": calls},
                {"role": "tool", "tool_call_id": calls[0]["id"], "content": LOOP_RESULT},
            ],
            "tools": [READ_FILE_TOOL],
            **openai_limits(64),
        }
        cap.ask(
            server, "v1-chat-loop-turn2",
            "loop turn 2 through /v1: tool message with tool_call_id; the model's answer",
            "POST", "/v1/chat/completions", second,
        )  # fmt: skip


def llama_recipe(stream: bool, tool: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
    return {
        "model": LLAMA_MODEL,
        "messages": [*messages, {"role": "assistant", "content": "<tool_call>\n"}],
        "tools": [tool],
        "tool_choice": "required",
        "stop": ["</tool_call>"],
        "stream": stream,
        **openai_limits(128),
    }


def capture_llama_server(cap: Capture, server: Server) -> None:
    cap.ask(server, "props", "GET /props", "GET", "/props")
    cap.ask(server, "v1-models", "GET /v1/models", "GET", "/v1/models")
    for stream in (False, True):
        sfx = "-stream" if stream else ""
        usage = {"stream_options": {"include_usage": True}} if stream else {}
        cap.ask(
            server, f"v1-chat-plain{sfx}", "plain text reply (usage asked for when streamed)",
            "POST", "/v1/chat/completions",
            {"model": LLAMA_MODEL, "messages": SAY_HELLO, "stream": stream, **usage,
             **openai_limits(32)},
        )  # fmt: skip
        cap.ask(
            server, f"v1-chat-length{sfx}", "cut by max_tokens: finish_reason length",
            "POST", "/v1/chat/completions",
            {"model": LLAMA_MODEL, "messages": SAY_HELLO, "stream": stream, **usage,
             **openai_limits(4)},
        )  # fmt: skip
        cap.ask(
            server, f"v1-chat-call{sfx}",
            "a structured call: the llama-server recipe (prefill, required, stop)",
            "POST", "/v1/chat/completions",
            {**llama_recipe(stream, recipes.STRICT_CARD_TOOL, recipes.USER_ASKS_FOR_CARD),
             **usage},
        )  # fmt: skip
    reply = cap.ask(
        server, "v1-chat-loop-turn1", "loop turn 1: the call (llama-server recipe)", "POST",
        "/v1/chat/completions", llama_recipe(False, READ_FILE_TOOL, LOOP_QUESTION),
    )  # fmt: skip
    if isinstance(reply, dict) and reply.get("choices"):
        calls = reply["choices"][0]["message"].get("tool_calls")
        if calls:
            second = {
                "model": LLAMA_MODEL,
                "messages": [
                    *LOOP_QUESTION,
                    {"role": "assistant", "content": "", "tool_calls": calls},
                    {"role": "tool", "tool_call_id": calls[0]["id"], "content": LOOP_RESULT},
                ],
                "tools": [READ_FILE_TOOL],
                "stream": True,
                "stream_options": {"include_usage": True},
                **openai_limits(64),
            }
            cap.ask(
                server, "v1-chat-loop-turn2-stream",
                "loop turn 2: tool message with tool_call_id; the model's own answer, streamed",
                "POST", "/v1/chat/completions", second,
            )  # fmt: skip


def servers(values: dict[str, str]) -> list[Server]:
    found = []
    for version in values.get("CARDPROBE_OLLAMA_VERSIONS", "").split(","):
        url = values.get(f"CARDPROBE_OLLAMA_{version.replace('.', '_')}_URL")
        if version and url:
            found.append(Server("ollama", url.rstrip("/"), version))
    url = values.get("CARDPROBE_LLAMA_SERVER_URL")
    if url:
        _, props = exchange(Server("llama-server", url, ""), "GET", "/props")
        build = props.get("build_info", "") if isinstance(props, dict) else ""
        found.append(Server("llama-server", url.rstrip("/"), str(build)))
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--only", default="", help="capture only files whose name contains this")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cap = Capture(args.out, args.only)
    found = servers(env_values())
    if not found:
        print("no servers: run `scripts/real-servers start`", file=sys.stderr)
        return 1
    runners: dict[str, Callable[[Capture, Server], None]] = {
        "ollama": capture_ollama,
        "llama-server": capture_llama_server,
    }
    for server in found:
        print(f"{server.label} at {server.url}", flush=True)
        runners[server.kind](cap, server)
    print(f"{len(cap.saved)} file(s) in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
