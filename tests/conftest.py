"""Shared fixtures for pytest-cardprobe's own tests."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import httpx
import pytest

# =============================================================================================
# Real model servers (issue 2; docs/design.md §8)
#
# `real_ollama` and `real_llama_server` are session-scoped and return a RealServer(base_url,
# model). They read CARDPROBE_OLLAMA_URL / CARDPROBE_OLLAMA_MODEL and CARDPROBE_LLAMA_SERVER_URL
# / CARDPROBE_LLAMA_SERVER_MODEL from the environment, else from the env file written by
# `scripts/real-servers start` (${XDG_CACHE_HOME:-~/.cache}/cardprobe-servers/run/servers.env,
# or the path in CARDPROBE_SERVERS_ENV). A missing or silent server skips the test; with
# CARDPROBE_REQUIRE_LIVE=1 it fails instead. Tests that use them are marked `live`.
# =============================================================================================

PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class RealServer:
    """A real model server on (usually) loopback: where it is and which model to ask for."""

    base_url: str
    model: str


# Read once at import: pytester points HOME at a temporary folder while its tests run, and a
# session fixture first requested inside such a test must still find the real env file.
_ENV_AT_IMPORT = {k: os.environ.get(k) for k in ("CARDPROBE_SERVERS_ENV", "XDG_CACHE_HOME")}
_HOME_AT_IMPORT = Path.home()


def servers_env_path() -> Path:
    explicit = _ENV_AT_IMPORT["CARDPROBE_SERVERS_ENV"]
    if explicit:
        return Path(explicit)
    cache = _ENV_AT_IMPORT["XDG_CACHE_HOME"] or str(_HOME_AT_IMPORT / ".cache")
    return Path(cache) / "cardprobe-servers" / "run" / "servers.env"


def _read_env_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text()
    except OSError:
        return {}
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip().strip("'\"")
    return values


def _unavailable(how_to: str, why: str) -> NoReturn:
    message = f"{how_to} ({why})"
    if os.environ.get("CARDPROBE_REQUIRE_LIVE") == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _real_server(
    what: str, url_var: str, model_var: str, probes: list[tuple[str, str, bool]]
) -> RealServer:
    """Read url/model (environment first, then the env file) and check the server answers.

    `probes` are (method, path, send_model) requests that must all answer 200.
    """
    how_to = (
        f"no real {what}: run `scripts/real-servers install && scripts/real-servers start`, "
        f"or set {url_var} and {model_var}"
    )
    if os.environ.get(url_var):
        source = "the environment"
        url, model = os.environ[url_var], os.environ.get(model_var, "")
    else:
        env_file = servers_env_path()
        source = str(env_file)
        values = _read_env_file(env_file)
        url, model = values.get(url_var, ""), values.get(model_var, "")
    if not url:
        _unavailable(how_to, f"{url_var} is neither in the environment nor in {source}")
    if not model:
        _unavailable(how_to, f"{url_var} is set in {source} but {model_var} is not")
    url = url.rstrip("/")
    with httpx.Client(base_url=url, timeout=PROBE_TIMEOUT_S, trust_env=False) as client:
        for method, path, send_model in probes:
            body = {"model": model} if send_model else None
            why = ""
            try:
                response = client.request(method, path, json=body)
                if response.status_code != 200:
                    why = f"{method} {url}{path} -> {response.status_code} {response.text[:200]}"
            except httpx.HTTPError as exc:
                why = f"{method} {url}{path}: {type(exc).__name__}: {exc}"
            if why:  # outside the except block: no chained traceback in the report
                _unavailable(how_to, why)
    return RealServer(base_url=url, model=model)


@pytest.fixture(scope="session")
def real_ollama() -> RealServer:
    """A real Ollama that answers /api/version and knows the model (/api/show)."""
    return _real_server(
        "Ollama",
        "CARDPROBE_OLLAMA_URL",
        "CARDPROBE_OLLAMA_MODEL",
        [("GET", "/api/version", False), ("POST", "/api/show", True)],
    )


@pytest.fixture(scope="session")
def real_llama_server() -> RealServer:
    """A real llama.cpp llama-server that answers GET /health with 200."""
    return _real_server(
        "llama-server",
        "CARDPROBE_LLAMA_SERVER_URL",
        "CARDPROBE_LLAMA_SERVER_MODEL",
        [("GET", "/health", False)],
    )


# ============================ end of real-server fixtures ====================================
