"""``python -m pytest_cardprobe capture --upstream URL [--listen HOST:PORT] [--out DIR]``:
a recording proxy between an application and its model server.

The application is pointed at the proxy (``OLLAMA_HOST=127.0.0.1:11435``, or an OpenAI
client's ``base_url=http://127.0.0.1:11435/v1``); every request goes on to ``--upstream``
and every reply comes back unchanged, streams chunk by chunk; each chat exchange is written
to the capture folder (``wire/capture/format.py``), from which ``draft`` writes a suite.
Needs the optional extra: ``pip install 'pytest-cardprobe[capture]'``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_cardprobe.cli import (
    add_redact_field,
    folder_arg,
    invoked_as,
    megabytes_arg,
    seconds_arg,
)


def parser() -> argparse.ArgumentParser:
    from pytest_cardprobe.wire.capture.serve import DEFAULT_LISTEN

    parse = argparse.ArgumentParser(
        prog=f"{invoked_as()} capture",
        description=(
            "A recording proxy: pass an application's requests to its Ollama or "
            "OpenAI-compatible server and the replies back unchanged, and write each chat "
            "exchange to a capture folder. A capture holds your users' real prompts."
        ),
    )
    parse.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the model server, e.g. http://127.0.0.1:11434",
    )
    parse.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where the proxy listens (default {DEFAULT_LISTEN}; port 0 picks a free one)",
    )
    parse.add_argument(
        "--out", default=Path("captures"), type=folder_arg, metavar="DIR",
        help="the capture folder (default ./captures; created with a .gitignore)",
    )  # fmt: skip
    parse.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a listen address other machines can reach (refused otherwise)",
    )
    add_redact_field(parse, "write as [redacted]")
    parse.add_argument(
        "--max-capture-mb", type=megabytes_arg, default=16 * 1024 * 1024, metavar="MB",
        help="bytes of one reply kept in its capture file (default 16); the client gets all",
    )  # fmt: skip
    parse.add_argument(
        "--max-request-mb", type=megabytes_arg, default=64 * 1024 * 1024, metavar="MB",
        help="largest request body passed on (default 64); a larger one is answered 413",
    )  # fmt: skip
    parse.add_argument(
        "--upstream-timeout", type=seconds_arg, default=600.0, metavar="S",
        help="silence allowed while waiting for the server's reply (default 600)",
    )  # fmt: skip
    return parse


def main(argv: Sequence[str]) -> int:
    """Run the proxy until Ctrl-C; exit 0 after the summary, 2 on a usage problem."""
    args = parser().parse_args(list(argv))
    from pytest_cardprobe.cli.project import redact_keys

    redact = redact_keys(args.redact_field)
    if redact is None:
        return 2
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        print(
            "error: capture needs the optional extra: pip install 'pytest-cardprobe[capture]'",
            file=sys.stderr,
        )
        return 2
    from pytest_cardprobe.wire.capture.relay import CaptureApp, Limits
    from pytest_cardprobe.wire.capture.serve import (
        ServeProblem,
        bind,
        check_upstream,
        parse_listen,
        serve,
    )
    from pytest_cardprobe.wire.capture.store import CaptureStore, FolderProblem
    from pytest_cardprobe.wire.transport import BackendMoved

    limits = Limits(
        max_request_bytes=args.max_request_mb,
        max_capture_bytes=args.max_capture_mb,
        read_timeout_s=args.upstream_timeout,
    )

    def say(line: str) -> None:
        print(line, flush=True)

    def notice(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        upstream = check_upstream(args.upstream)
        host, port = parse_listen(args.listen)
        store = CaptureStore(args.out, upstream, redact)
        app = CaptureApp(upstream, store, limits, notice)  # before anything is bound or made
        sock = bind(host, port, args.allow_remote)
        store.prepare()
    except (ServeProblem, FolderProblem, BackendMoved) as exc:
        if "sock" in locals():
            sock.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        serve(app, sock, say)
    finally:
        sock.close()
    say(store.summary())
    return 0
