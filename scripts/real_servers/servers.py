"""How each server is started: its command line and environment (docs/real-servers.md,
"How the servers run")."""

from __future__ import annotations

import http.client
import os
import time
from pathlib import Path

from . import paths
from .build import find_llama_server, find_ollama, fix_llama_symlinks, link_ollama_helper
from .kinds import kind_version
from .models import create_ollama_models
from .pins import LLAMA_ALIAS, LLAMA_CTX, LLAMA_THREADS, OLLAMA_MODEL
from .processes import launch, terminate
from .steps import Fail, say


def start_ollama(port: int, gguf: Path, timeout: float, kind: str) -> dict[str, object]:
    version = kind_version(kind)
    binary, where = find_ollama(version)
    if binary is None:
        raise Fail(
            f"ollama {version}: not installed: run `scripts/real-servers install "
            f"--ollama-versions {version}`"
        )
    helper = link_ollama_helper(version)
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    store = paths.ollama_models(version)
    store.mkdir(parents=True, exist_ok=True)
    env.update(
        OLLAMA_HOST=f"127.0.0.1:{port}",
        OLLAMA_MODELS=str(store),
        OLLAMA_NUM_PARALLEL="1",
        OLLAMA_MAX_LOADED_MODELS="1",
        OLLAMA_KEEP_ALIVE="-1",  # keep the model loaded between test sessions
        OLLAMA_NOPRUNE="1",
        # Newer releases reach out to ollama.com (model recommendations, cloud models): a
        # test server on loopback has no business there. Older releases ignore it.
        OLLAMA_NO_CLOUD="1",
        GIN_MODE="release",
    )
    if helper:
        # The helper is our llama-server build: no weight repacking, as for our own
        # llama-server below (it crashes at start on a Xeon with AMX).
        env["LLAMA_ARG_REPACK"] = "false"
    say(f"  {kind}: {binary} ({where}){'; ' + helper if helper else ''}")
    # Extra Ollamas of a release share its model store: the blobs exist once, each server
    # loads its own runner.
    state = launch(kind, [str(binary), "serve"], env, url, port, OLLAMA_MODEL, timeout)
    t0 = time.monotonic()
    try:
        made = create_ollama_models(url, gguf)
    except (Fail, OSError, http.client.HTTPException) as exc:
        terminate(kind, state, quiet=True)
        reason = exc.reason if isinstance(exc, Fail) else f"ollama: create model: {exc}"
        raise Fail(reason, Path(str(state["log"]))) from exc
    say(f"  {kind}: models {'; '.join(made)} in {time.monotonic() - t0:.1f} s")
    return state


def start_llama_server(
    port: int, gguf: Path, timeout: float, gguf_template: bool = False
) -> dict[str, object]:
    binary, where = find_llama_server()
    if binary is None:
        raise Fail("llama-server: not installed: run `scripts/real-servers install`")
    if where == "cache":
        fix_llama_symlinks(binary)
    url = f"http://127.0.0.1:{port}"
    argv = [
        str(binary),
        "-m",
        str(gguf),
        "--jinja",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(LLAMA_CTX),
        "-t",
        str(LLAMA_THREADS),
        "--parallel",
        "1",
        "--alias",
        LLAMA_ALIAS,
        # Weight repacking (an extra CPU buffer type) crashes this build with SIGSEGV right
        # after "threadpool init" on a Xeon with AMX; without it the server starts and serves.
        "--no-repack",
    ]
    if not gguf_template:
        # The GGUF's template ignores tools, so llama-server would silently drop them.
        argv += ["--chat-template-file", str(paths.LLAMA_TEMPLATE)]
    say(f"  llama-server: {binary} ({where})")
    return launch("llama-server", argv, dict(os.environ), url, port, LLAMA_ALIAS, timeout)


def uses_tools_template(state: dict[str, object]) -> bool:
    argv = state.get("argv")
    return isinstance(argv, list) and "--chat-template-file" in argv
