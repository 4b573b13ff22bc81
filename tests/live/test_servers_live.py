"""Live wire checks against real model servers (docs/design.md §7 and §8).

These talk plain httpx to the servers started by `scripts/real-servers start` (or your own,
see docs/real-servers.md) and assert on status codes and shapes, never on generated text:
SmolLM2-135M answers whatever it answers. Where the model may or may not call a tool, the test
records which happened (the `record` fixture: --junitxml properties, stdout with -rA) instead of
requiring it. Only the pinned recipes at the bottom require real tool calls, because they
constrain the output (grammar/format) so that the call is produced by construction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import httpx
import pytest
import recipes


class RealServer(Protocol):
    """What the `each_ollama` / `real_llama_server` fixtures (tests/live/conftest.py) return."""

    @property
    def base_url(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def version(self) -> str: ...


pytestmark = pytest.mark.live

# Short, fast requests: one CPU server, one request at a time.
OLLAMA_OPTIONS = {"temperature": 0, "num_predict": 64}
OPENAI_LIMITS = {"temperature": 0, "max_tokens": 64}
# Generous: the servers take one request at a time and other test runs may be queued ahead.
TIMEOUT = httpx.Timeout(300.0, connect=5.0)

CARD_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "render_adaptive_card",
        "description": "Show the user an Adaptive Card (JSON) in the chat window.",
        "parameters": {
            "type": "object",
            "properties": {
                "body": {
                    "type": "array",
                    "description": "Adaptive Card body elements, e.g. TextBlock",
                    "items": {"type": "object"},
                },
            },
            "required": ["body"],
        },
    },
}
USER_ASKS_FOR_CARD = [
    {"role": "user", "content": "Show me a card that says hello."},
]

Record = Callable[[str, object], None]


@pytest.fixture
def record(request: pytest.FixtureRequest) -> Record:
    """Note what the server did (e.g. how many tool calls): user_properties + stdout.

    Shown in --junitxml output and, with -rA, as captured stdout. Like record_property, but
    without its warning under the default junit_family=xunit2.
    """

    def _record(name: str, value: object) -> None:
        request.node.user_properties.append((name, value))
        print(f"{request.node.name}: {name}={value}")

    return _record


@pytest.fixture
def ollama(each_ollama: RealServer) -> Iterator[httpx.Client]:
    """A client of each Ollama release (the wire differs between them: issue 25)."""
    with httpx.Client(base_url=each_ollama.base_url, timeout=TIMEOUT, trust_env=False) as c:
        yield c


@pytest.fixture
def llama(real_llama_server: RealServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=real_llama_server.base_url, timeout=TIMEOUT, trust_env=False) as c:
        yield c


def chat_body(model: str, *, api: str, tools: bool, stream: bool) -> dict[str, Any]:
    """The card question for Ollama's /api/chat (``api="ollama"``) or /v1/chat/completions."""
    limits = {"options": OLLAMA_OPTIONS} if api == "ollama" else OPENAI_LIMITS
    body: dict[str, Any] = {
        "model": model,
        "messages": USER_ASKS_FOR_CARD,
        "stream": stream,
        **limits,
    }
    if tools:
        body["tools"] = [CARD_TOOL]
    return body


def ollama_chat_body(model: str, *, tools: bool, stream: bool) -> dict[str, Any]:
    return chat_body(model, api="ollama", tools=tools, stream=stream)


def openai_chat_body(model: str, *, tools: bool, stream: bool) -> dict[str, Any]:
    return chat_body(model, api="openai", tools=tools, stream=stream)


def assert_ollama_tool_calls(calls: object) -> list[dict[str, Any]]:
    """Ollama native tool calls: a list of {function: {name: str, arguments: dict}}."""
    assert isinstance(calls, list)
    for call in calls:
        assert isinstance(call, dict)
        fn = call["function"]
        assert isinstance(fn["name"], str)
        assert isinstance(fn["arguments"], dict)
    return calls


def assert_openai_tool_calls(calls: object, *, complete: bool = True) -> list[dict[str, Any]]:
    """OpenAI-style tool calls: function.arguments is a JSON *string* holding an object.

    With complete=False (the reply may have been cut by max_tokens) the string is not parsed.
    """
    assert isinstance(calls, list)
    for call in calls:
        assert isinstance(call, dict)
        assert call.get("type", "function") == "function"
        fn = call["function"]
        assert isinstance(fn["name"], str)
        assert isinstance(fn["arguments"], str)
        if complete:
            assert isinstance(json.loads(fn["arguments"]), dict)
    return calls


# ------------------------------------------------------------------------------------ Ollama


def test_ollama_version(ollama: httpx.Client, each_ollama: RealServer) -> None:
    r = ollama.get("/api/version")
    assert r.status_code == 200
    # Built with the version ldflags: the release it is, never go install's "0.0.0".
    assert r.json() == {"version": each_ollama.version}
    assert recipes.version_tuple(each_ollama.version) > (0, 0, 0)


def test_ollama_show_lists_completion_and_tools(
    ollama: httpx.Client, each_ollama: RealServer
) -> None:
    r = ollama.post("/api/show", json={"model": each_ollama.model})
    assert r.status_code == 200
    body = r.json()
    assert {"completion", "tools"} <= set(body["capabilities"])
    assert isinstance(body["template"], str)
    assert isinstance(body["details"], dict)


@pytest.mark.parametrize("tools", [False, True], ids=["plain", "tools"])
def test_ollama_chat_not_streamed(
    ollama: httpx.Client, each_ollama: RealServer, tools: bool, record: Record
) -> None:
    r = ollama.post(
        "/api/chat", json=ollama_chat_body(each_ollama.model, tools=tools, stream=False)
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["model"] == each_ollama.model
    assert isinstance(body["created_at"], str)
    assert body["done"] is True
    assert body["done_reason"] in ("stop", "length")
    msg = body["message"]
    assert msg["role"] == "assistant"
    assert isinstance(msg["content"], str)
    calls = assert_ollama_tool_calls(msg.get("tool_calls", []))
    if not tools:
        assert "tool_calls" not in msg
    record("tool_calls", len(calls))
    for key in ("total_duration", "load_duration", "prompt_eval_count", "eval_count"):
        assert isinstance(body.get(key, 0), int)


@pytest.mark.parametrize("tools", [False, True], ids=["plain", "tools"])
def test_ollama_chat_streamed_ndjson(
    ollama: httpx.Client, each_ollama: RealServer, tools: bool, record: Record
) -> None:
    body = ollama_chat_body(each_ollama.model, tools=tools, stream=True)
    chunks: list[dict[str, Any]] = []
    with ollama.stream("POST", "/api/chat", json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/x-ndjson")
        for line in r.iter_lines():
            if line.strip():
                chunks.append(json.loads(line))
    assert len(chunks) >= 2
    *middle, last = chunks
    assert all(c["done"] is False for c in middle)
    assert last["done"] is True
    assert last["done_reason"] in ("stop", "length")
    assert "error" not in last
    calls_mid: list[dict[str, Any]] = []
    for c in middle:
        assert c["message"]["role"] == "assistant"
        assert isinstance(c["message"]["content"], str)
        calls_mid += assert_ollama_tool_calls(c["message"].get("tool_calls", []))
    calls_final = assert_ollama_tool_calls(last["message"].get("tool_calls", []))
    if not tools:
        assert not calls_mid
        assert not calls_final
    record("tool_calls_mid_stream", len(calls_mid))
    record("tool_calls_final_chunk", len(calls_final))


def test_ollama_unknown_model_is_404_with_error(ollama: httpx.Client) -> None:
    body = ollama_chat_body("no-such-model:0b", tools=False, stream=False)
    r = ollama.post("/api/chat", json=body)
    assert r.status_code == 404
    assert isinstance(r.json()["error"], str)


def test_ollama_invalid_json_is_400_with_error(ollama: httpx.Client) -> None:
    r = ollama.post(
        "/api/chat",
        content=b'{"model": "x", "messages": [',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400
    assert isinstance(r.json()["error"], str)


def test_ollama_messages_of_wrong_type_is_400_with_error(
    ollama: httpx.Client, each_ollama: RealServer
) -> None:
    r = ollama.post("/api/chat", json={"model": each_ollama.model, "messages": "hello"})
    assert r.status_code == 400
    assert isinstance(r.json()["error"], str)


# Thinking, through the -think variant of the model (scripts/real-servers MODEL_VARIANTS):
# Ollama's thinking variables in the template, so Ollama lists the `thinking` capability and
# opens the reply with <think> when asked to think. Two earlier turns whose thinking was
# closed make SmolLM2 close its own </think> and then answer.
THINK_HISTORY = [
    {"role": "user", "content": "What is 1+1?"},
    {"role": "assistant", "thinking": "One plus one is two.", "content": "2"},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "thinking": "Two plus two is four.", "content": "4"},
    {"role": "user", "content": "What is 3+3?"},
]
# ollama/ollama#12024 (v0.11.7): a reply whose prompt ends with the opening tag is thinking
# from its first token; before it, the parser waits for the model to write <think> itself.
THINKING_AFTER_PROMPT_TAG_SINCE = (0, 11, 7)


def think_chunks(ollama: httpx.Client, model: str, **think: object) -> list[dict[str, Any]]:
    body = {
        "model": model + recipes.THINK_SUFFIX,
        "messages": THINK_HISTORY,
        "stream": True,
        "options": {"temperature": 0, "num_predict": 48},
        **think,
    }
    with ollama.stream("POST", "/api/chat", json=body) as r:
        assert r.status_code == 200, r.read()
        return [json.loads(line) for line in r.iter_lines() if line.strip()]


def test_ollama_think_variant_streams_thinking_then_content(
    ollama: httpx.Client, each_ollama: RealServer, record: Record
) -> None:
    show = ollama.post("/api/show", json={"model": each_ollama.model + recipes.THINK_SUFFIX})
    assert show.status_code == 200
    assert "thinking" in show.json()["capabilities"]
    chunks = think_chunks(ollama, each_ollama.model, think=True)
    assert chunks[-1]["done"] is True
    kinds = [
        "thinking" if c["message"].get("thinking") else "content"
        for c in chunks
        if c["message"].get("thinking") or c["message"]["content"]
    ]
    content = "".join(c["message"]["content"] for c in chunks)
    if recipes.version_tuple(each_ollama.version) >= THINKING_AFTER_PROMPT_TAG_SINCE:
        # Thinking first, then the answer; the tags never reach either field.
        assert kinds[0] == "thinking"
        assert kinds == sorted(kinds, key=lambda k: k != "thinking")
        assert "<think>" not in content and "</think>" not in content
    else:
        # The model never writes <think> itself (the prompt did), so 0.11.4 never parses
        # thinking: everything, the closing tag included, arrives as content.
        assert kinds and set(kinds) == {"content"}
    record("chunks", "".join(k[0] for k in kinds))


def test_ollama_think_default_when_think_is_not_sent(
    ollama: httpx.Client, each_ollama: RealServer, record: Record
) -> None:
    """Since 0.12.4 a thinking-capable model thinks unless the request says `think: false`."""
    unsent = think_chunks(ollama, each_ollama.model)
    off = think_chunks(ollama, each_ollama.model, think=False)
    thought = any(c["message"].get("thinking") for c in unsent)
    assert thought == (recipes.version_tuple(each_ollama.version) >= (0, 12, 4))
    assert not any(c["message"].get("thinking") for c in off)
    record("thinks_by_default", thought)


# ------------------------------------------------------------------------------ llama-server


def test_llama_server_health_and_models(llama: httpx.Client, real_llama_server: RealServer) -> None:
    r = llama.get("/health")
    assert r.status_code == 200
    r = llama.get("/v1/models")
    assert r.status_code == 200
    assert real_llama_server.model in [m["id"] for m in r.json()["data"]]


@pytest.mark.parametrize("tools", [False, True], ids=["plain", "tools"])
def test_llama_server_chat_completions(
    llama: httpx.Client, real_llama_server: RealServer, tools: bool, record: Record
) -> None:
    body = openai_chat_body(real_llama_server.model, tools=tools, stream=False)
    r = llama.post("/v1/chat/completions", json=body)
    assert r.status_code == 200
    out = r.json()
    assert out["object"] == "chat.completion"
    choice = out["choices"][0]
    assert choice["finish_reason"] in ("stop", "length", "tool_calls")
    msg = choice["message"]
    assert msg["role"] == "assistant"
    assert msg.get("content") is None or isinstance(msg["content"], str)
    complete = choice["finish_reason"] != "length"
    calls = assert_openai_tool_calls(msg.get("tool_calls") or [], complete=complete)
    if not tools:
        assert not calls
    if calls:
        # A call cut short by max_tokens still comes back, with finish_reason "length" (and
        # then possibly with arguments that are not valid JSON, see the pinned recipe below).
        assert choice["finish_reason"] in ("tool_calls", "length")
    record("tool_calls", len(calls))
    assert isinstance(out["usage"]["completion_tokens"], int)


def collect_sse(r: httpx.Response) -> tuple[list[dict[str, Any]], bool]:
    """Parse an OpenAI SSE stream: data lines until `data: [DONE]`."""
    chunks: list[dict[str, Any]] = []
    saw_done = False
    for line in r.iter_lines():
        if not line.startswith("data: "):
            assert line.strip() == "" or line.startswith(":"), line
            continue
        data = line[len("data: ") :]
        if data == "[DONE]":
            saw_done = True
            continue
        chunks.append(json.loads(data))
    return chunks, saw_done


def join_tool_call_fragments(chunks: list[dict[str, Any]]) -> dict[int, dict[str, str]]:
    """Join streamed tool-call fragments per index: name once, arguments in pieces."""
    calls: dict[int, dict[str, str]] = {}
    for c in chunks:
        for choice in c["choices"]:
            for frag in choice.get("delta", {}).get("tool_calls") or []:
                call = calls.setdefault(frag["index"], {"name": "", "arguments": ""})
                fn = frag.get("function", {})
                call["name"] += fn.get("name") or ""
                call["arguments"] += fn.get("arguments") or ""
    return calls


@pytest.mark.parametrize("tools", [False, True], ids=["plain", "tools"])
def test_llama_server_chat_completions_sse(
    llama: httpx.Client, real_llama_server: RealServer, tools: bool, record: Record
) -> None:
    body = openai_chat_body(real_llama_server.model, tools=tools, stream=True)
    with llama.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        chunks, saw_done = collect_sse(r)
    assert saw_done
    assert chunks
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert len(finishes) == 1
    assert finishes[0] in ("stop", "length", "tool_calls")
    calls = join_tool_call_fragments(chunks)
    if not tools:
        assert not calls
    for call in calls.values():
        assert call["name"]
        if finishes[0] != "length":
            assert isinstance(json.loads(call["arguments"]), dict)
    record("tool_calls", len(calls))


def test_llama_server_invalid_json_is_400_with_error_object(llama: httpx.Client) -> None:
    r = llama.post(
        "/v1/chat/completions",
        content=b'{"model": "x", "messages": [',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400
    error = r.json()["error"]  # OpenAI style: an object, not a string as in Ollama
    assert error["code"] == 400
    assert isinstance(error["message"], str)
    assert isinstance(error["type"], str)


def test_llama_server_messages_of_wrong_type_is_400_with_error_object(
    llama: httpx.Client, real_llama_server: RealServer
) -> None:
    r = llama.post(
        "/v1/chat/completions", json={"model": real_llama_server.model, "messages": "hello"}
    )
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == 400
    assert isinstance(error["message"], str)


# ------------------------------------------------------------------------------------------
# Pinned recipes: requests that make SmolLM2-135M produce REAL structured tool calls.
# Left to itself the model answers in prose or code when offered a tool (tests above record
# it). These recipes constrain the output so the call exists by construction, which gives
# later tests real tool-call bytes from real servers. Measured and explained in
# docs/real-servers.md ("What makes SmolLM2-135M call a tool"); the Ollama recipes, one per
# parser generation, are in tests/live/recipes.py.

STRICT_CARD_ARGS = recipes.STRICT_CARD_ARGS
STRICT_CARD_TOOL = recipes.STRICT_CARD_TOOL


def assert_card_call(call: dict[str, Any]) -> None:
    assert call["function"]["name"] == "render_adaptive_card"
    args = call["function"]["arguments"]
    if isinstance(args, str):  # OpenAI wire format
        args = json.loads(args)
    assert isinstance(args, dict)
    assert isinstance(args["body"], list)
    assert args["body"][0]["type"] == "TextBlock"


def ollama_recipe(server: RealServer, *, stream: bool) -> dict[str, Any]:
    """The release's own recipe (tests/live/recipes.py): tag up to 0.11.6, JSON-start after."""
    recipe = "tag" if recipes.tag_recipe_works(server.version) else "json-start"
    model = recipes.recipe_model(server.model, server.version)
    return recipes.recipe_body(model, recipe=recipe, stream=stream)


@pytest.fixture
def ollama_with_hermes_template(ollama: httpx.Client, each_ollama: RealServer) -> httpx.Client:
    for model in (each_ollama.model, each_ollama.model + recipes.JSONCALL_SUFFIX):
        r = ollama.post("/api/show", json={"model": model})
        if r.status_code != 200 or "<tool_call>" not in r.json()["template"]:
            pytest.skip(
                f"{model} is missing or has no <tool_call> template: create it and its "
                "variants from scripts/real_servers/Modelfile.smollm2 "
                "(scripts/real-servers create-model)"
            )
    return ollama


def test_recipe_ollama_format_schema_yields_real_tool_call(
    ollama_with_hermes_template: httpx.Client, each_ollama: RealServer, record: Record
) -> None:
    r = ollama_with_hermes_template.post("/api/chat", json=ollama_recipe(each_ollama, stream=False))
    assert r.status_code == 200
    body = r.json()
    assert body["done"] is True
    assert body["done_reason"] == "stop"  # never "tool_calls" on Ollama's native API
    calls = assert_ollama_tool_calls(body["message"].get("tool_calls"))
    assert len(calls) == 1
    assert_card_call(calls[0])
    # The tag recipe leaves what preceded the tag in content ('{"tag":"'); with the
    # JSON-start recipe the whole reply is the call and content is empty.
    assert isinstance(body["message"]["content"], str)
    if not recipes.tag_recipe_works(each_ollama.version):
        assert body["message"]["content"] == ""
    record("call_id", calls[0].get("id"))
    record("function_index", calls[0]["function"].get("index"))


def test_recipe_ollama_format_schema_streams_call_whole_before_done(
    ollama_with_hermes_template: httpx.Client, each_ollama: RealServer, record: Record
) -> None:
    body = ollama_recipe(each_ollama, stream=True)
    with ollama_with_hermes_template.stream("POST", "/api/chat", json=body) as r:
        assert r.status_code == 200
        chunks = [json.loads(line) for line in r.iter_lines() if line.strip()]
    *middle, last = chunks
    assert last["done"] is True
    with_calls = [c for c in middle if c["message"].get("tool_calls")]
    # The call arrives whole (arguments already an object) in one done:false chunk.
    assert len(with_calls) == 1
    calls = assert_ollama_tool_calls(with_calls[0]["message"]["tool_calls"])
    assert len(calls) == 1
    assert_card_call(calls[0])
    assert not last["message"].get("tool_calls")
    record("chunk_with_call", chunks.index(with_calls[0]))


def test_the_other_recipe_on_each_release(
    ollama_with_hermes_template: httpx.Client, each_ollama: RealServer, record: Record
) -> None:
    """0.11.4 also calls under the JSON-start recipe; 0.33.0 swallows the tag recipe's call.

    Swallowed: the model wrote the whole call (tokens counted), the parser found the tag but
    no arguments, and the reply is the fragment before the tag with no tool call at all.
    """
    if recipes.tag_recipe_works(each_ollama.version):
        model = each_ollama.model + recipes.JSONCALL_SUFFIX
        body = recipes.recipe_body(model, recipe="json-start", stream=False)
    else:
        body = recipes.recipe_body(each_ollama.model, recipe="tag", stream=False)
    r = ollama_with_hermes_template.post("/api/chat", json=body)
    assert r.status_code == 200
    reply = r.json()
    assert reply["done"] is True
    if recipes.tag_recipe_works(each_ollama.version):
        (call,) = assert_ollama_tool_calls(reply["message"].get("tool_calls"))
        assert_card_call(call)
    else:
        assert "tool_calls" not in reply["message"]
        assert reply["eval_count"] > 10  # the whole call was generated ...
        fragment = "".join(reply["message"]["content"].split())
        assert fragment == '{"tag":"'  # ... and only the text before the tag came back
    record("content", reply["message"]["content"])


@pytest.fixture
def llama_with_hermes_template(llama: httpx.Client) -> httpx.Client:
    props = llama.get("/props").json()
    if "<tool_call>" not in props.get("chat_template", ""):
        pytest.skip(
            "llama-server runs a chat template without tools (the GGUF's own): start it with "
            "scripts/real-servers (default) or --chat-template-file "
            "scripts/real_servers/smollm2-tools.jinja"
        )
    return llama


def llama_recipe_body(model: str, *, stream: bool) -> dict[str, Any]:
    # tool_choice "required" alone lets the model write prose before <tool_call> (and it
    # rambles to max_tokens); prefilling the assistant turn with the tag makes the grammar
    # start at the call, and stopping at </tool_call> keeps it to exactly one call.
    return {
        "model": model,
        "messages": [*USER_ASKS_FOR_CARD, {"role": "assistant", "content": "<tool_call>\n"}],
        "tools": [STRICT_CARD_TOOL],
        "tool_choice": "required",
        "stop": ["</tool_call>"],
        "stream": stream,
        "temperature": 0,
        "max_tokens": 128,
    }


def test_recipe_llama_server_prefill_required_yields_real_tool_call(
    llama_with_hermes_template: httpx.Client, real_llama_server: RealServer
) -> None:
    r = llama_with_hermes_template.post(
        "/v1/chat/completions", json=llama_recipe_body(real_llama_server.model, stream=False)
    )
    assert r.status_code == 200
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    calls = assert_openai_tool_calls(choice["message"].get("tool_calls"))
    assert len(calls) == 1
    assert isinstance(calls[0]["id"], str)
    assert_card_call(calls[0])


def test_recipe_llama_server_prefill_required_streams_argument_fragments(
    llama_with_hermes_template: httpx.Client, real_llama_server: RealServer, record: Record
) -> None:
    body = llama_recipe_body(real_llama_server.model, stream=True)
    with llama_with_hermes_template.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        chunks, saw_done = collect_sse(r)
    assert saw_done
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert finishes == ["tool_calls"]
    fragments = [
        frag
        for c in chunks
        for ch in c["choices"]
        for frag in (ch.get("delta", {}).get("tool_calls") or [])
    ]
    assert len(fragments) > 1  # arguments arrive in pieces ...
    assert fragments[0]["function"]["name"] == "render_adaptive_card"  # ... name and id first
    assert isinstance(fragments[0]["id"], str)
    calls = join_tool_call_fragments(chunks)
    assert list(calls) == [0]
    assert_card_call({"function": calls[0]})
    record("argument_fragments", len(fragments))
