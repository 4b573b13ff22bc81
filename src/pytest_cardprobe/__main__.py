"""``cardprobe SUBCOMMAND ...`` (or ``python -m pytest_cardprobe SUBCOMMAND ...``): project
tools that run outside a pytest session.

Subcommands are plain functions taking the remaining arguments and returning the exit
status; add one by adding it to :data:`COMMANDS` and a line about it to :data:`SUMMARIES`.
The console script ``cardprobe`` (``[project.scripts]``) and ``python -m`` run this same
:func:`main`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from pytest_cardprobe.cli import capture, diff, draft, init, invoked_as, trend

#: The distribution whose version ``--version`` prints.
DISTRIBUTION = "pytest-cardprobe"

#: Subcommand -> function taking the remaining arguments and returning the exit status.
COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "init": init.main,
    "diff": diff.main,
    "trend": trend.main,
    "capture": capture.main,
    "draft": draft.main,
}

#: Subcommand -> the one line ``--help`` shows for it.
SUMMARIES: dict[str, str] = {
    "init": "write a starter suite and its ini line into a project",
    "diff": "gate one --cardprobe-json report against another, per arm",
    "trend": "each arm's pass rate across the commits of the baseline",
    "capture": "a recording proxy between an application and its model server",
    "draft": "draft a call suite from captured traffic (marked reviewed: false)",
}


def version() -> str:
    """The installed version of the distribution, as its metadata says."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed; run from a source tree)"


def help_text() -> str:
    """The usage line, a line per command and where each command's own help is."""
    prog = invoked_as()
    width = max(map(len, COMMANDS))
    lines = [
        f"usage: {prog} [-h] [--version] COMMAND [ARGS...]",
        "",
        "Project tools of pytest-cardprobe that run outside a pytest session; paths the",
        "plugin shares (baseline, reports) come from the project's pytest configuration.",
        "",
        "commands:",
        *(f"  {name.ljust(width)}  {SUMMARIES[name]}" for name in COMMANDS),
        "",
        "options:",
        "  -h, --help  show this help and exit",
        "  --version   print the installed version and exit",
        "",
        f"`{prog} COMMAND --help` tells more about one command.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a subcommand; with none or an unknown one, print the usage (exit 2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help", "--version"):
        said = help_text() if args[0] != "--version" else f"{DISTRIBUTION} {version()}"
        try:
            print(said, flush=True)
        except BrokenPipeError:  # `cardprobe --help | head`: the reader has what it wanted
            reader_gone()
        return 0
    if not args or args[0] not in COMMANDS:
        prog = invoked_as()
        wrong = f"unknown command {args[0]!r}; " if args else ""
        print(
            f"usage: {prog} [-h] [--version] COMMAND [ARGS...]\n"
            f"{wrong}commands: {', '.join(COMMANDS)} (`{prog} --help` says what each does)",
            file=sys.stderr,
        )
        return 2
    try:
        status = COMMANDS[args[0]](args[1:])
        sys.stdout.flush()
    except BrokenPipeError:  # `cardprobe diff a.json b.json | head`: the rest is not wanted
        reader_gone()
        return 1  # the command did not finish: never a success (a gate under `pipefail`)
    return status


def reader_gone() -> None:
    """Point stdout at the null device, so that the interpreter's last flush of what a
    reader that stopped early (``| head``) left unread raises nothing at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
