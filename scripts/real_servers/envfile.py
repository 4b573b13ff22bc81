"""The env file the live-test fixtures read (tests/live/conftest.py): run/servers.env."""

from __future__ import annotations

import contextlib

from . import paths
from .kinds import kind_version, ollama_kind, ollama_kinds_with_run_files
from .pins import parse_version, plain
from .processes import running_state


def env_var_version(version: str) -> str:
    """`0.33.0` -> `0_33_0`, for CARDPROBE_OLLAMA_0_33_0_URL."""
    return plain(version).replace(".", "_")


def write_env_file() -> None:
    """The env file the fixtures read (tests/live/conftest.py).

    CARDPROBE_OLLAMA_URL is the newest release running (today's Ollama); the extras of that
    release are CARDPROBE_OLLAMA_URL_2 ...; every release running has its own
    CARDPROBE_OLLAMA_<X_Y_Z>_URL and is listed in CARDPROBE_OLLAMA_VERSIONS.
    """
    env_file = paths.env_file()
    lines = ["# written by scripts/real-servers start; read by tests/live/conftest.py"]
    firsts = {}
    extras: dict[str, list[tuple[str, dict[str, object]]]] = {}
    for kind in ollama_kinds_with_run_files():
        state, version = running_state(kind), kind_version(kind)
        if state is None or not version:
            continue
        if kind == ollama_kind(version):
            firsts[version] = state
        else:
            extras.setdefault(version, []).append((kind.rsplit("-", 1)[1], state))
    ls = running_state("llama-server")
    if firsts:
        newest = max(firsts, key=lambda v: parse_version(v) or (0, 0, 0))
        default = firsts[newest]
        lines += [
            f"CARDPROBE_OLLAMA_URL={default['url']}",
            f"CARDPROBE_OLLAMA_MODEL={default['model']}",
            f"CARDPROBE_OLLAMA_VERSION={newest}",
        ]
        for n, state in extras.get(newest, []):  # for the live test of two servers (-n 2)
            lines.append(f"CARDPROBE_OLLAMA_URL_{n}={state['url']}")
        lines.append(f"CARDPROBE_OLLAMA_VERSIONS={','.join(firsts)}")
        for version, state in firsts.items():
            lines.append(f"CARDPROBE_OLLAMA_{env_var_version(version)}_URL={state['url']}")
    if ls:
        lines += [
            f"CARDPROBE_LLAMA_SERVER_URL={ls['url']}",
            f"CARDPROBE_LLAMA_SERVER_MODEL={ls['model']}",
        ]
    if not (firsts or ls):
        with contextlib.suppress(FileNotFoundError):
            env_file.unlink()
        return
    paths.run_dir().mkdir(parents=True, exist_ok=True)
    tmp = env_file.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(env_file)
