"""``python -m pytest_cardprobe SUBCOMMAND ...``: project tools that run outside a pytest session.

Subcommands are plain functions taking the remaining arguments and returning the exit
status; add one by adding it to :data:`COMMANDS`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from pytest_cardprobe.cli import diff, init, trend

#: Subcommand -> function taking the remaining arguments and returning the exit status.
COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "diff": diff.main,
    "init": init.main,
    "trend": trend.main,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a subcommand; with none or an unknown one, print the usage (exit 2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = f"usage: python -m pytest_cardprobe {{{','.join(COMMANDS)}}} [ARGS...]"
    if args and args[0] in ("-h", "--help"):
        print(usage)
        return 0
    if not args or args[0] not in COMMANDS:
        wrong = f"unknown command {args[0]!r}; " if args else ""
        print(f"{usage}\n{wrong}commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
