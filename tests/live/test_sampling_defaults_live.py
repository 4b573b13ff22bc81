"""The sampling defaults in the recorded identity, against the real servers and their source.

Ollama's come from a table (``wire/identity.OLLAMA_DEFAULTS``) read in Ollama's source: here
it is checked against ``api/types.go`` of the very releases ``scripts/real-servers`` builds
and runs, in the Go module cache that build filled. llama-server's come from its own ``/props``. The
recording and the change line on both Ollama releases are
tests/live/test_server_identity_live.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.identity import ollama_defaults, server_identity

pytestmark = pytest.mark.live

# DefaultOptions' Go fields, by the JSON names requests and the table use.
GO_FIELDS = {
    "NumPredict": "num_predict",
    "Temperature": "temperature",
    "TopK": "top_k",
    "TopP": "top_p",
    "TypicalP": "typical_p",
    "RepeatLastN": "repeat_last_n",
    "RepeatPenalty": "repeat_penalty",
    "PresencePenalty": "presence_penalty",
    "FrequencyPenalty": "frequency_penalty",
    "Seed": "seed",
}


def _types_go(release: str) -> str:
    """``api/types.go`` of Ollama ``release`` from the Go module cache, or a skip saying how
    to fill it (a failure under CARDPROBE_REQUIRE_LIVE=1)."""
    try:
        cache = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"no Go toolchain to find the module cache: {exc}")
    path = Path(cache) / "github.com" / "ollama" / f"ollama@v{release}" / "api" / "types.go"
    if not path.is_file():
        pytest.skip(f"{path} is missing: run scripts/real-servers install (it builds Ollama)")
    return path.read_text()


def _default_options(source: str) -> dict[str, float]:
    body = re.search(r"^func DefaultOptions\(\) Options \{\n(.*?)^\}", source, re.S | re.M)
    assert body is not None, "DefaultOptions not found in api/types.go"
    found = dict(re.findall(r"^\s+(\w+):\s+(-?[0-9.]+),", body[1], re.M))
    return {GO_FIELDS[k]: float(v) for k, v in found.items() if k in GO_FIELDS}


def test_the_table_is_what_the_built_releases_source_says(each_ollama: Any) -> None:
    release = each_ollama.version  # each release scripts/real-servers builds and runs
    source = _default_options(_types_go(release))
    table = ollama_defaults(release)
    assert table is not None, f"the table has no row for {release}"
    assert set(source) == set(GO_FIELDS.values()), source
    assert {k: float(v) for k, v in table.items()} == source


def test_llama_server_reports_its_defaults_and_they_are_recorded(real_llama_server: Any) -> None:
    client = ChatClient(ClientSettings(base_url=real_llama_server.base_url, api="openai"))
    try:
        found = server_identity(client)
    finally:
        client.close()
    assert found["kind"] == "llama-server", found
    sampling = dict(part.split("=", 1) for part in found["sampling"].split())
    for key in ("temperature", "top_k", "top_p", "min_p", "repeat_penalty", "seed"):
        assert key in sampling, (key, sampling)
    assert all(re.fullmatch(r"-?[0-9.e+-]+", v) for v in sampling.values()), sampling


def test_each_ollama_says_its_version_and_the_table_gives_its_defaults(each_ollama: Any) -> None:
    client = ChatClient(ClientSettings(base_url=each_ollama.base_url))
    try:
        found = server_identity(client)
    finally:
        client.close()
    expected = ollama_defaults(each_ollama.version)
    assert expected is not None
    assert found["version"] == each_ollama.version
    assert found["sampling"].split() == [f"{k}={v}" for k, v in sorted(expected.items())]
