"""Sampling defaults that move under byte-identical requests (docs/design.md §7).

Decision: a request sends what the suite says (the probe asks as the application asks),
and the recorded server identity carries the server's sampling defaults: Ollama's from a
per-release table read in its source (``api/types.go``), keyed by the recorded version so a
cassette recorded before needs no re-recording; llama-server's from its ``/props``. A live
run on a server whose defaults moved names each moved default the request does not set
itself: ``ollama 0.11.4 → 0.33.0 (repeat_penalty 1.1 → 1.0)``. The model's parser and
renderer (Ollama ``/api/show``, since 0.32.2) are part of its identity the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import expand
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.wire.cassettes.reading import recorded_identity
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.identity import (
    llama_server_defaults,
    model_change,
    model_identity,
    ollama_defaults,
    parser_and_renderer,
    sampling_text,
    server_change,
    server_defaults,
)
from pytest_cardprobe.wire.ollama import ollama_body

ROOT = Path(__file__).resolve().parents[2]
WIRE = ROOT / "tests" / "unit" / "data" / "wire"


@pytest.mark.parametrize(
    ("version", "penalty"),
    [
        ("0.5.0", "1.1"),
        ("0.11.4", "1.1"),
        ("0.17.4", "1.1"),
        ("0.17.5", "1.0"),  # the ollama runner's token-history samplers...
        ("0.17.7", "1.0"),
        ("0.18.0", "1.1"),  # ...reverted
        ("0.32.9", "1.1"),
        ("0.32.10", "1.0"),  # "stop applying repeat_penalty 1.1 to models that don't set one"
        ("0.33.0", "1.0"),
        ("v0.33.0", "1.0"),
    ],
)
def test_the_table_by_release(version: str, penalty: str) -> None:
    defaults = ollama_defaults(version)
    assert defaults is not None and defaults["repeat_penalty"] == penalty
    assert defaults["temperature"] == "0.8" and defaults["top_k"] == "40"


@pytest.mark.parametrize("version", ["0.4.9", "0.33.1", "1.0.0", "0.0.0-dev", "", "fault", "9" * 9])
def test_a_release_the_table_was_not_read_for_has_no_defaults(version: str) -> None:
    assert ollama_defaults(version) is None


def test_the_requests_send_what_the_suite_says_and_no_default_of_their_own() -> None:
    """The first half of the decision: pinning is the suite's (``options:``), not ours."""
    suite = load_suite(ROOT / "cases" / "cards.yaml")
    probe = next(p for p in expand(suite, ["smollm2:135m"]) if p.channel == "prose")
    request = build_request(probe, Settings(models=[]).base_options(), "off")
    body = ollama_body(request, stream=False, keep_alive="10m")
    sampling = set(ollama_defaults("0.33.0") or {})
    assert set(body["options"]) & sampling == {"temperature", "num_predict"}
    assert "repeat_penalty" not in body["options"]  # the server's default applies


def shipped_server(path: Path) -> dict[str, str]:
    return recorded_identity(path)["server"]


def test_cassettes_recorded_before_need_no_re_recording(tmp_path: Path) -> None:
    """The shipped cassettes (0.33.0), recorded before the defaults were, hold no
    ``sampling``: theirs come from the table by their recorded version. The same cassette
    as it would read had it been recorded on 0.11.4 (the version edited in a copy)."""
    shipped = ROOT / "cassettes" / "cards" / "smollm2%3A135m" / "date-prose-cold.yaml"
    now = shipped_server(shipped)
    assert now == {"kind": "ollama", "version": "0.33.0"}
    copy = tmp_path / "c.yaml"
    copy.write_text(shipped.read_text().replace('"version": "0.33.0"', '"version": "0.11.4"'))
    then = shipped_server(copy)
    assert then == {"kind": "ollama", "version": "0.11.4"}
    assert server_change(then, now) == "ollama 0.11.4 → 0.33.0 (repeat_penalty 1.1 → 1.0)"
    # A request that sets the option itself did not feel the default move.
    assert server_change(then, now, {"repeat_penalty": 1.1}) == "ollama 0.11.4 → 0.33.0"


def test_recorded_defaults_win_over_the_table_and_a_moved_one_is_named_alone() -> None:
    """llama-server's come from its /props; the same build started with other sampling
    flags keeps its version but not its defaults."""
    captured = json.loads((WIRE / "llama-server-props.json").read_text())
    props = json.loads(captured["response"]["body"])
    before = llama_server_defaults(props)
    assert before["temperature"] == "0.8" and before["top_p"] == "0.95"  # float32 0.949999…
    assert before["min_p"] == "0.05" and before["seed"] == "4294967295"
    props["default_generation_settings"]["params"]["temperature"] = 0.5
    after = llama_server_defaults(props)
    old = {"kind": "llama-server", "version": "b1", "sampling": sampling_text(before)}
    new = {**old, "sampling": sampling_text(after)}
    assert server_change(old, new) == "llama-server b1 (temperature 0.8 → 0.5)"
    assert server_change(old, new, {"temperature": 0}) is None
    assert server_change(old, dict(old)) is None


def test_older_llama_servers_report_them_at_the_top_and_others_not_at_all() -> None:
    assert llama_server_defaults({"default_generation_settings": {"temperature": 0.7}}) == {
        "temperature": "0.7"
    }
    assert llama_server_defaults({"build_info": "b1"}) == {}
    hostile = {"default_generation_settings": {"params": {"temperature": "hot", "top_k": True}}}
    assert llama_server_defaults(hostile) == {}


def test_a_hand_edited_sampling_line_is_read_safely() -> None:
    edited = {"kind": "ollama", "version": "0.33.0", "sampling": "x\x1b[2J=1 =2 y= bare z=3"}
    assert server_defaults(edited) == {"x?[2J": "1", "z": "3"}
    assert server_defaults({"kind": "vllm", "version": "0.9"}) is None


def test_a_change_of_parser_or_renderer_is_named() -> None:
    old = {"name": "m", "digest": "aaa"}
    assert model_change(old, {**old, "parser": "qwen3"}) == "parser (none) → qwen3"
    both = {**old, "parser": "qwen3", "renderer": "qwen3-coder"}
    assert model_change(both, {**old, "digest": "bbb"}) == (
        "aaa → bbb; parser qwen3 → (none); renderer qwen3-coder → (none)"
    )
    assert model_change(both, dict(both)) is None
    assert model_change({}, both) is None  # nothing recorded: nothing to compare


# /api/show's modelfile as Ollama 0.33.0 writes it for a model created with parser qwen3
# (fields `parser`/`renderer` exist in its ShowResponse but no release fills them).
MODELFILE = """# Modelfile generated by "ollama show"
FROM /models/blobs/sha256-b179
TEMPLATE \"\"\"{{- if .Tools }}<|im_start|>system
PARSER not-this-one, it is template text
RENDERER nor this
{{ end }}\"\"\"
SYSTEM "a system prompt
PARSER still text, a quoted value over lines"
PARSER qwen3
PARAMETER num_ctx 8192
PARAMETER stop <|im_end|>
"""


def test_parser_and_renderer_are_read_from_the_modelfile_when_the_fields_are_empty() -> None:
    assert parser_and_renderer({"modelfile": MODELFILE}) == {"parser": "qwen3"}
    both = MODELFILE.replace("PARSER qwen3", "RENDERER qwen3-coder\nPARSER qwen3-coder")
    assert parser_and_renderer({"modelfile": both}) == {
        "parser": "qwen3-coder",
        "renderer": "qwen3-coder",
    }
    # The fields win when a release fills them.
    assert parser_and_renderer({"parser": "glm-4.7", "modelfile": MODELFILE}) == {
        "parser": "glm-4.7"
    }
    assert parser_and_renderer({"modelfile": "FROM x\nPARSER \x1b[2J\n"}) == {"parser": "?[2J"}
    assert parser_and_renderer({"modelfile": 7}) == {}


def test_the_model_identity_takes_parser_and_renderer_from_api_show() -> None:
    shown = {"capabilities": ["completion", "tools"], "parser": "qwen3", "renderer": ""}
    tags = {"models": [{"name": "m:latest", "digest": "d1"}]}

    class Answers(ChatClient):
        def send(self, method: str, path: str, body: Any = None) -> httpx.Response:
            return httpx.Response(200, json=shown if path == "/api/show" else tags)

    client = Answers(ClientSettings(base_url="http://127.0.0.1:1"))
    assert model_identity(client, "m") == {"name": "m", "parser": "qwen3", "digest": "d1"}
