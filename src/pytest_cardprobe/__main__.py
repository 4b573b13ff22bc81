"""``python -m pytest_cardprobe SUBCOMMAND ...``: project tools that run outside a pytest session.

Subcommands are plain functions taking the remaining arguments and returning the exit
status; add one by adding it to :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_cardprobe import starter


def diff(argv: Sequence[str]) -> int:
    """Compare two ``--cardprobe-json`` reports; exit 1 when the gate between them fails."""
    from pytest_cardprobe.files import write_atomically
    from pytest_cardprobe.score.diff import ReportError, compare_runs
    from pytest_cardprobe.score.gate import GateSettings
    from pytest_cardprobe.score.report import flip_lines, markdown, scoreboard_lines

    parser = argparse.ArgumentParser(
        prog="python -m pytest_cardprobe diff",
        description="Per arm: pass and adoption change from OLD to NEW, and the flipped cases.",
    )
    parser.add_argument("old", metavar="OLD.json", type=Path)
    parser.add_argument("new", metavar="NEW.json", type=Path)
    parser.add_argument("--md", metavar="PATH", type=Path, help="also write it as Markdown")
    parser.add_argument(
        "--noise-floor",
        metavar="K",
        type=int,
        default=None,
        help="cases an arm may lose (default: the NEW run's, else 1)",
    )
    args = parser.parse_args(list(argv))
    docs = []
    for path in (args.old, args.new):
        try:
            docs.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            print(f"error: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    floor = args.noise_floor
    if floor is None:
        run = docs[1].get("run") if isinstance(docs[1], dict) else None
        floor = (run or {}).get("noise_floor", GateSettings().noise_floor)
    try:
        arms, gate = compare_runs(
            docs[0], docs[1], GateSettings(noise_floor=int(floor)), (str(args.old), str(args.new))
        )
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    lines = scoreboard_lines(arms, gate)
    flips = flip_lines(gate)
    if flips:
        lines += ["", "flipped cases:", *(f"  {line}" for line in flips)]
    print("\n".join(lines))
    if args.md:
        write_atomically(args.md, markdown(arms, gate))
    return 1 if gate.failed else 0


#: Subcommand -> function taking the remaining arguments and returning the exit status.
COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "diff": diff,
    "init": starter.main,
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
