"""The names of the servers `start` runs: `ollama-0.33.0`, `ollama-0.33.0-2`, `llama-server`.

A kind names a server's run files (`run/<kind>.json`, `.pid`, `.log`) and its line in
`status`.
"""

from __future__ import annotations

import re

from . import paths
from .pins import parse_version, plain

COMPONENTS = ("ollama", "llama-server")


def ollama_kind(version: str, n: int = 1) -> str:
    """Run-file name of the n-th Ollama of a release: `ollama-0.33.0`, `ollama-0.33.0-2`."""
    return f"ollama-{plain(version)}" + (f"-{n}" if n > 1 else "")


_OLLAMA_KIND = re.compile(r"ollama-(\d+\.\d+\.\d+)(?:-([2-9]))?")


def kind_version(kind: str) -> str:
    """`ollama-0.33.0-2` -> `0.33.0`; "" for llama-server and run files of older scripts."""
    m = _OLLAMA_KIND.fullmatch(kind)
    return m[1] if m else ""


def is_ollama(kind: str) -> bool:
    # `ollama` and `ollama-2` ... are the run files of the one-release script before this one:
    # still recognised so that `stop` and `status` find what it started.
    return bool(kind_version(kind)) or re.fullmatch(r"ollama(-[2-9])?", kind) is not None


def ollama_kinds_with_run_files() -> list[str]:
    """Every Ollama kind that has a run file (so `stop` and `status` find them), in order."""
    kinds = [p.stem for p in paths.run_dir().glob("ollama*.json") if is_ollama(p.stem)]

    def order(kind: str) -> tuple[tuple[int, int, int], str]:
        return parse_version(kind_version(kind)) or (0, 0, 0), kind

    return sorted(kinds, key=order)


def start_kinds(components: list[str], versions: list[str], n: int) -> list[str]:
    """What `start` starts: each release's first Ollama, n-1 extras of the newest, llama-server."""
    kinds: list[str] = []
    for part in components or list(COMPONENTS):
        if part == "ollama":
            kinds += [ollama_kind(v) for v in versions]
            kinds += [ollama_kind(versions[-1], i) for i in range(2, n + 1)]
        else:
            kinds.append(part)
    return list(dict.fromkeys(kinds))


def present_kinds(components: list[str]) -> list[str]:
    """What `stop` and `status` act on: `ollama` is every Ollama that has run files."""
    kinds: list[str] = []
    for part in components or list(COMPONENTS):
        if part == "ollama":
            kinds += ollama_kinds_with_run_files() or ["ollama"]
        else:
            kinds.append(part)
    return list(dict.fromkeys(kinds))
