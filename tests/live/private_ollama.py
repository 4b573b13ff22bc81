"""A private real Ollama for live tests that must stop a server or read its request log.

It runs today's Ollama as scripts/real-servers builds it (the newest cached release, with
its llama-server helper), on its own free loopback port with its own model store, and gets
SmolLM2 through `scripts/real-servers create-model`. The shared servers are never stopped;
only this one is, by the pid it was started with.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
# Read at import: pytester points HOME at a temporary folder while its tests run.
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
_ENV = dict(os.environ)
MODEL = "smollm2:135m"  # what `scripts/real-servers create-model` creates


@dataclass
class PrivateOllama:
    url: str
    log: Path
    process: subprocess.Popen[bytes]

    def chat_requests(self) -> int:
        """``POST /api/chat`` requests the server has logged so far (Gin's access log)."""
        text = self.log.read_text(errors="replace")
        return sum('POST     "/api/chat"' in line for line in text.splitlines())

    def kill(self) -> None:
        """Stop this server and its runner (the process group it was started in)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


def _release(path: Path) -> tuple[int, ...]:
    """`.../ollama-v0.33.0/bin/ollama` -> (0, 33, 0)."""
    name = path.parents[1].name.removeprefix("ollama-v")
    return tuple(int(part) for part in name.split(".")) if name.count(".") == 2 else ()


def _binary() -> str | None:
    built = [p for p in (_CACHE / "cardprobe-servers").glob("ollama-v*/bin/ollama") if _release(p)]
    return str(max(built, key=_release)) if built else shutil.which("ollama")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def private_ollama(tmp: Path, extra_env: dict[str, str] | None = None) -> Iterator[PrivateOllama]:
    """Start a private Ollama with SmolLM2; stop it (if still running) when the block ends.

    ``extra_env`` adds to its environment (``OLLAMA_DEBUG_LOG_REQUESTS=1`` and a ``TMPDIR``
    to find the request logs in)."""
    binary = _binary()
    if binary is None:
        pytest.fail("no Ollama binary: run `scripts/real-servers install`", pytrace=False)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp / f"ollama-{port}.log"
    env = {
        **_ENV,
        "OLLAMA_HOST": f"127.0.0.1:{port}",
        "OLLAMA_MODELS": str(tmp / "models"),
        "OLLAMA_NUM_PARALLEL": "1",
        "OLLAMA_MAX_LOADED_MODELS": "1",
        "OLLAMA_KEEP_ALIVE": "-1",
        "OLLAMA_NO_CLOUD": "1",  # as scripts/real-servers starts it: nothing leaves loopback
        "LLAMA_ARG_REPACK": "false",  # the helper llama-server, as scripts/real-servers runs it
        **(extra_env or {}),
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [binary, "serve"], env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    server = PrivateOllama(url, log, process)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/api/version", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail(f"private Ollama did not start: {log.read_text()[-500:]}")
            time.sleep(0.25)
        created = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "real-servers"), "create-model",
             "--ollama-url", url, "--model", MODEL, "--no-variants"],
            capture_output=True, text=True, timeout=300, env=_ENV,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        yield server
    finally:
        server.kill()
