"""The real model servers the live tests ask: session fixtures reading where they are."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import httpx
import pytest
from real_servers.pins import OLLAMA_LATEST, OLLAMA_PINNED, plain

# =============================================================================================
# Real model servers (issue 2, issue 25; docs/design.md §8)
#
# `real_ollama`, `real_llama_server` and `each_ollama` are session-scoped and return a
# RealServer(base_url, model, version). They read CARDPROBE_OLLAMA_URL / CARDPROBE_OLLAMA_MODEL,
# CARDPROBE_LLAMA_SERVER_URL / CARDPROBE_LLAMA_SERVER_MODEL and CARDPROBE_OLLAMA_<X_Y_Z>_URL from
# the environment, else from the env file written by `scripts/real-servers start`
# (${XDG_CACHE_HOME:-~/.cache}/cardprobe-servers/run/servers.env, or the path in
# CARDPROBE_SERVERS_ENV). `real_ollama` is today's Ollama (the newest release the script
# starts); `each_ollama` is parametrized over the releases the script builds (ids
# `ollama-0.11.4`, `ollama-0.33.0`), for the tests that cover the wire; `other_ollama` is the
# other of the two releases, beside `each_ollama`. A missing or silent
# server skips the test; with CARDPROBE_REQUIRE_LIVE=1 it fails instead, and so does any
# other skip of a `live` test (pytest_runtest_makereport in tests/conftest.py).
# =============================================================================================

PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class RealServer:
    """A real model server on (usually) loopback: where it is and which model to ask for."""

    base_url: str
    model: str
    version: str = ""  # what the server says it is (/api/version), "" when not asked


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

    `probes` are (method, path, send_model) requests that must all answer 200; the version is
    taken from a probe of /api/version.
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
        url = values.get(url_var, "")
        model = os.environ.get(model_var) or values.get(model_var, "")
    if not url:
        _unavailable(how_to, f"{url_var} is neither in the environment nor in {source}")
    if not model:
        _unavailable(how_to, f"{url_var} is set in {source} but {model_var} is not")
    url = url.rstrip("/")
    version = ""
    with httpx.Client(base_url=url, timeout=PROBE_TIMEOUT_S, trust_env=False) as client:
        for method, path, send_model in probes:
            body = {"model": model} if send_model else None
            why = ""
            try:
                response = client.request(method, path, json=body)
                if response.status_code != 200:
                    why = f"{method} {url}{path} -> {response.status_code} {response.text[:200]}"
                elif path == "/api/version":
                    version = str(response.json().get("version", ""))
            except (httpx.HTTPError, ValueError, AttributeError) as exc:
                why = f"{method} {url}{path}: {type(exc).__name__}: {exc}"
            if why:  # outside the except block: no chained traceback in the report
                _unavailable(how_to, why)
    return RealServer(base_url=url, model=model, version=version)


OLLAMA_PROBES = [("GET", "/api/version", False), ("POST", "/api/show", True)]


#: The releases scripts/real-servers builds (its pins OLLAMA_PINNED, OLLAMA_LATEST), as `0.33.0`.
OLLAMA_RELEASES = (plain(OLLAMA_PINNED), plain(OLLAMA_LATEST))


@pytest.fixture(scope="session")
def real_ollama() -> RealServer:
    """Today's Ollama (the newest release `start` runs): answers /api/version, knows the model."""
    return _real_server("Ollama", "CARDPROBE_OLLAMA_URL", "CARDPROBE_OLLAMA_MODEL", OLLAMA_PROBES)


@pytest.fixture(scope="session", params=OLLAMA_RELEASES, ids=lambda v: f"ollama-{v}")
def each_ollama(request: pytest.FixtureRequest) -> RealServer:
    """Each Ollama release scripts/real-servers builds, serving the same model.

    URL from CARDPROBE_OLLAMA_<X_Y_Z>_URL (environment, then env file); the server must say
    it is that release on /api/version.
    """
    release = str(request.param)
    url_var = f"CARDPROBE_OLLAMA_{release.replace('.', '_')}_URL"
    server = _real_server(f"Ollama {release}", url_var, "CARDPROBE_OLLAMA_MODEL", OLLAMA_PROBES)
    if server.version != release:
        _unavailable(
            f"{url_var} must point at Ollama {release}",
            f"{server.base_url}/api/version says {server.version!r}",
        )
    return server


@pytest.fixture(scope="session")
def other_ollama(each_ollama: RealServer) -> RealServer:
    """The other Ollama release of the two scripts/real-servers builds, beside `each_ollama`
    (a recording made on one and run live on the other)."""
    (release,) = [r for r in OLLAMA_RELEASES if r != each_ollama.version]
    url_var = f"CARDPROBE_OLLAMA_{release.replace('.', '_')}_URL"
    server = _real_server(f"Ollama {release}", url_var, "CARDPROBE_OLLAMA_MODEL", OLLAMA_PROBES)
    if server.version != release:
        _unavailable(
            f"{url_var} must point at Ollama {release}",
            f"{server.base_url}/api/version says {server.version!r}",
        )
    return server


@pytest.fixture(scope="session")
def real_llama_server() -> RealServer:
    """A real llama.cpp llama-server that answers GET /health with 200."""
    return _real_server(
        "llama-server",
        "CARDPROBE_LLAMA_SERVER_URL",
        "CARDPROBE_LLAMA_SERVER_MODEL",
        [("GET", "/health", False)],
    )


@pytest.fixture(scope="session")
def real_ollama_2(real_ollama: RealServer) -> RealServer:
    """A second Ollama of today's release (`scripts/real-servers start --ollama 2`)."""
    second = _real_server(
        "second Ollama (scripts/real-servers start --ollama 2)",
        "CARDPROBE_OLLAMA_URL_2",
        "CARDPROBE_OLLAMA_MODEL",
        OLLAMA_PROBES,
    )
    if second.version != real_ollama.version:
        _unavailable(
            "CARDPROBE_OLLAMA_URL_2 must be the same Ollama release as CARDPROBE_OLLAMA_URL",
            f"{second.version!r} != {real_ollama.version!r}",
        )
    return second
