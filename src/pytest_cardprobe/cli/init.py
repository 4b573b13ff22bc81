"""``python -m pytest_cardprobe init [DIR]``: a starter suite and its ini lines for a project.

Nothing is written unless everything can be: when a file init would write or edit already
exists, it says what would change and stops, and ``--force`` lets it go ahead. Even then an
existing config file is only added to: keys that are already set keep their values, and the
result is parsed again and compared with the original before it is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_cardprobe.cli.config_edit import Change, InitError, config_change
from pytest_cardprobe.cli.starter import DEFAULT_MODEL, starter_files
from pytest_cardprobe.files import write_atomically
from pytest_cardprobe.types import model_problem


@dataclass
class Plan:
    """Everything init would do in one project folder."""

    changes: list[Change]
    notes: list[str]


def plan(root: Path, models: Sequence[str]) -> Plan:
    """What init would write in ``root``."""
    changes = []
    for path, text in starter_files(root).items():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue  # already there as init would write it
        changes.append(
            Change(path, text, path.exists(), "overwrite" if path.exists() else "create")
        )
    config = config_change(root, models)
    notes: list[str] = []
    if isinstance(config, Change):
        changes.append(config)
    else:
        notes.extend(config)
    return Plan(changes, notes)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def run(root: Path, models: Sequence[str], force: bool, out: Any = None) -> int:
    """Write the starter into ``root``; 1 without writing anything when it would change files."""
    out = out or sys.stdout
    try:
        todo = plan(root, models)
    except InitError as exc:
        print(f"init: {exc}", file=sys.stderr)
        return 1
    clashes = [c for c in todo.changes if c.existed]
    if clashes and not force:
        print("init: nothing written; these files exist and would change:", file=sys.stderr)
        for change in clashes:
            print(f"  {_shown(change.path, root)}: {change.summary}", file=sys.stderr)
            for line in change.added_lines:
                print(f"      + {line}", file=sys.stderr)
            for note in change.notes:
                print(f"    note: {note}", file=sys.stderr)
        print(
            "run again with --force to write them (ini keys already set are kept)", file=sys.stderr
        )
        return 1
    for change in todo.changes:
        write_atomically(change.path, change.text)
        print(f"{_shown(change.path, root)}: {change.summary}", file=out)
        for line in change.added_lines:
            print(f"    + {line}", file=out)
    if not todo.changes:
        print("init: the starter is in place already; nothing to do", file=out)
    for note in [*todo.notes, *(n for change in todo.changes for n in change.notes)]:
        print(f"note: {note}", file=out)
    print(
        "next: start your model server, then `pytest --live` records the starter's cassettes "
        "and `pytest` replays them; `pytest --cardprobe-suite cards` adds the built-in suite",
        file=out,
    )
    return 0


def main(argv: Sequence[str]) -> int:
    """``init [DIR] [--model NAME ...] [--force]``."""
    parser = argparse.ArgumentParser(
        prog="python -m pytest_cardprobe init",
        description="Write a starter cardprobe suite and its ini lines into a project folder.",
    )
    parser.add_argument("dir", nargs="?", default=".", help="project folder (default: .)")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="NAME",
        help=f"model for cardprobe_models; repeatable (default: {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite starter files and add to existing config files (set keys are kept; "
        "the starter folder is added to a testpaths that lacks it)",
    )
    args = parser.parse_args(list(argv))
    for model in args.models or ():
        problem = model_problem(model)
        if problem:
            parser.error(f"--model {model!r} {problem}")
    root = Path(args.dir)
    if root.exists() and not root.is_dir():
        parser.error(f"{root} is not a folder")
    return run(root, args.models or [DEFAULT_MODEL], args.force)
