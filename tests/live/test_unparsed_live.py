"""A real tool-call parse error from a real Ollama is judged as the model's failure.

Ollama 0.33.0 runs a model's output through a built-in parser when its Modelfile names one
(``PARSER``, accepted since 0.12). A session fixture creates such a variant of the project's
model on the running server (``/api/create`` with ``parser: qwen3``: SmolLM2's template
already writes calls as ``<tool_call>…</tool_call>``, which is what the qwen3 parser reads).

What makes the real model write a call that parser cannot read: the request's ``format``
constrains the reply to a JSON *string* (``{"type": "string", "enum": [...]}``) holding a
call, so the model writes the call JSON-escaped, ``"<tool_call>{\\"name\\": …}</tool_call>"``,
and the parser meets ``{\\"name\\"…`` between the tags: ``failed to parse JSON: invalid
character '\\\\' looking for beginning of object key string``. Whole, Ollama answers HTTP 500
with that message; streamed, the ``"`` before the tag goes out as a chunk first, so the
error arrives as the last line of an HTTP 200 stream. Both are recorded, judged
``malformed`` with an ``unparsed:`` label, never retried, and replay as judged.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from recipes import (
    ESCAPED_CALL_ERROR,
    ESCAPED_CALL_FORMAT,
    PARSER_NAME,
    PARSER_SINCE,
    parser_variant_create,
)

from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.identity import model_identity

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
LABEL = f"unparsed: the server could not parse the tool call: {ESCAPED_CALL_ERROR}"
ONE = ("-k", "date and tool and cold", "--cardprobe-samples", "1", "--cardprobe-no-warmup")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("-")[0].split(".")[:3] if p.isdigit())


@pytest.fixture(scope="session")
def parser_model(real_ollama: Any) -> str:
    """A variant of the project's model with a built-in tool-call parser, created on the
    running server (its blobs are the base model's: nothing is copied)."""
    if _version(real_ollama.version) < PARSER_SINCE:
        pytest.fail(
            f"{real_ollama.base_url} is Ollama {real_ollama.version}: PARSER needs 0.12 or later "
            "(scripts/real-servers start runs 0.33.0 as CARDPROBE_OLLAMA_URL)",
            pytrace=False,
        )
    body = parser_variant_create(real_ollama.model)
    name = body["model"]
    with httpx.Client(base_url=real_ollama.base_url, timeout=120, trust_env=False) as client:
        created = client.post("/api/create", json=body)
        assert created.status_code == 200, created.text
        shown = client.post("/api/show", json={"model": name}).json()
    assert "tools" in shown.get("capabilities", []), shown.get("capabilities")
    # The identity a recording keeps names the parser (read from /api/show's modelfile: the
    # `parser` field of 0.33.0's ShowResponse is never filled).
    client = ChatClient(ClientSettings(base_url=real_ollama.base_url))
    try:
        identity = model_identity(client, name)
    finally:
        client.close()
    assert "parser" not in shown and identity["parser"] == PARSER_NAME, (shown.keys(), identity)
    return name


def _project(pytester: pytest.Pytester, server: str, model: str) -> None:
    shutil.copytree(ROOT / "cases", pytester.path / "cases")
    suite = pytester.path / "cases" / "cards.yaml"
    text = suite.read_text()
    assert "  num_predict: 512\n" in text
    options = f"  num_predict: 96\n  format: {json.dumps(ESCAPED_CALL_FORMAT)}\n"
    suite.write_text(text.replace("  num_predict: 512\n", options))
    pytester.makeini(f"[pytest]\ncardprobe_models = {model}\ncardprobe_servers = {server}\n")


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"report-{time.monotonic_ns()}.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "cases", *ONE, *args, f"--cardprobe-json={out}"
    )
    return result, json.loads(out.read_text()) if out.exists() else {}


def _sample(report: dict[str, Any]) -> dict[str, Any]:
    (test,) = [t for t in report["tests"] if "date" in t["nodeid"]]
    (sample,) = test["samples"]
    return dict(sample)


@pytest.mark.parametrize(
    ("api", "stream"),
    [("ollama", False), ("ollama", True), ("openai", False)],
    ids=["plain", "streamed", "v1-plain"],
)
def test_a_real_parse_error_is_the_models_plain_and_streamed(
    pytester: pytest.Pytester, real_ollama: Any, parser_model: str, api: str, stream: bool
) -> None:
    """Ollama's /v1 too, whole (its 500 in OpenAI's error shape); a /v1 stream drops the
    error's words (an empty chunk, no [DONE]: docs/design.md §7), so it stays infra."""
    _project(pytester, real_ollama.base_url, parser_model)
    flags = ("--cardprobe-stream",) if stream else ()
    flags += ("-o", f"cardprobe_api={api}")
    result, live = _run(pytester, "--live", *flags, "-o", "cardprobe_retries=2")
    said = _sample(live)
    out = result.stdout.str()
    assert said["failure"] == "malformed", (said, out[-3000:])
    assert said["route"] == "swallowed" and said["label"] == LABEL[:120], said
    # What the server sent, as recorded: the shape the client told the model's failure by.
    cassette = pytester.path / "cassettes/cards" / parser_model.replace(":", "%3A")
    (interaction,) = json.loads((cassette / "date-tool-cold.yaml").read_text())["interactions"]
    response = interaction["response"]
    recorded = response["body"]["string"]
    if stream:
        assert response["status"]["code"] == 200
        first, *middle, last = [json.loads(line) for line in recorded.splitlines() if line]
        assert first["message"]["content"] == '"' and not first["done"] and not middle
        assert set(last) == {"error"} and last["error"].startswith("failed to parse JSON: ")
    else:
        assert response["status"]["code"] == 500
        error = json.loads(recorded)
        assert set(error) == {"error"}
        assert (error["error"]["message"] if api == "openai" else error["error"]) == (
            ESCAPED_CALL_ERROR
        )
    # Asked once: not retried as infra (one interaction recorded, none dropped).
    result, replayed = _run(pytester, *flags)
    again = _sample(replayed)
    again.pop("figures"), said.pop("figures")
    assert again == said, result.stdout.str()[-3000:]
