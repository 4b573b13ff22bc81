"""``python -m pytest_cardprobe init [DIR]``: a starter suite and its ini line for a project.

It does the useful thing without ``--force`` and says what it did: starter files that do not
exist are written; one that exists and differs is the user's and is kept (``--force``
overwrites it); the project's pytest config file is only added to (``cardprobe_models``,
unless set), and the result is parsed again and compared with the original before it is
written, so comments and formatting stay. ``testpaths`` is left alone: a plain ``pytest``,
the command a project's CI runs, collects what it collected before, and a note says how the
probes run (``pytest cardprobe``; ``-m cardprobe``). Until they are recorded, starter probes
a plain ``pytest`` does collect are skipped as never recorded, not failed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_cardprobe.cli import invoked_as
from pytest_cardprobe.cli.config_edit import Change, InitError, config_change
from pytest_cardprobe.cli.project import ConfigProblem, find_project
from pytest_cardprobe.cli.starter import DEFAULT_MODEL, STARTER_DIR, starter_files
from pytest_cardprobe.files import write_atomically
from pytest_cardprobe.text import model_problem


@dataclass
class Plan:
    """Everything init would do in one project folder."""

    changes: list[Change]
    notes: list[str]
    kept: list[Path]  # starter files that exist, differ, and are the user's now


def plan(root: Path, models: Sequence[str], force: bool = False) -> Plan:
    """What init would write in ``root``: an existing starter file that differs is kept
    unless ``force``."""
    changes, kept = [], []
    for path, text in starter_files(root).items():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue  # already there as init would write it
        if path.exists() and not force:
            kept.append(path)
            continue
        changes.append(
            Change(path, text, path.exists(), "overwrite" if path.exists() else "create")
        )
    config = config_change(root, models)
    notes: list[str] = []
    if isinstance(config, Change):
        changes.append(config)
    else:
        notes.extend(config)
    return Plan(changes, notes, kept)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def run(root: Path, models: Sequence[str], force: bool, out: Any = None) -> int:
    """Write the starter into ``root`` and say what was done; 1 when nothing could be."""
    out = out or sys.stdout
    try:
        todo = plan(root, models, force)
    except InitError as exc:
        print(f"init: {exc}", file=sys.stderr)
        return 1
    for change in todo.changes:
        write_atomically(change.path, change.text)
        print(f"{_shown(change.path, root)}: {change.summary}", file=out)
        for line in change.added_lines:
            print(f"    + {line}", file=out)
    for path in todo.kept:
        print(
            f"{_shown(path, root)}: kept (it exists and differs; --force overwrites it)", file=out
        )
    if not todo.changes and not todo.kept:
        print("init: the starter is in place already; nothing to do", file=out)
    for note in [*todo.notes, *(n for change in todo.changes for n in change.notes)]:
        print(f"note: {note}", file=out)
    print(
        f"next: start your model server, then `pytest {STARTER_DIR} --live` records the "
        f"starter's cassettes and `pytest {STARTER_DIR}` replays them (plus "
        f"`--cardprobe-update-baseline` to write the baseline the gate compares with); "
        "`pytest --cardprobe-suite cards` adds the built-in suite",
        file=out,
    )
    return 0


def main(argv: Sequence[str]) -> int:
    """``init [DIR] [--model NAME ...] [--force]``."""
    parser = argparse.ArgumentParser(
        prog=f"{invoked_as()} init",
        description="Write a starter cardprobe suite and its ini lines into a project folder.",
    )
    parser.add_argument(
        "dir",
        nargs="?",
        default=None,
        help="project folder (default: the rootdir of the pytest configuration found from here "
        "upwards, as pytest finds it; with none, .)",
    )
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
        help="overwrite starter files that exist and differ (config files are only ever added "
        "to, keys already set are kept, testpaths is left alone)",
    )
    args = parser.parse_args(list(argv))
    for model in args.models or ():
        problem = model_problem(model)
        if problem:
            parser.error(f"--model {model!r} {problem}")
    if args.dir is None:
        try:
            project = find_project(Path.cwd())
        except ConfigProblem as exc:
            print(f"init: {exc}", file=sys.stderr)
            return 1
        root = project.rootdir if project.configfile is not None else Path(".")
        if project.configfile is not None and project.rootdir != Path.cwd().absolute():
            # From a subfolder: a config file written here would root pytest runs here.
            print(
                f"init: writing into {root}, the project's rootdir (its pytest configuration is "
                f"{project.configfile.name}); give DIR to write elsewhere"
            )
    else:
        root = Path(args.dir)
    if root.exists() and not root.is_dir():
        parser.error(f"{root} is not a folder")
    return run(root, args.models or [DEFAULT_MODEL], args.force)
