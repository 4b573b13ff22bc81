"""``cardprobe diff OLD.json [NEW.json]``: the gate between two recorded runs.

Without NEW.json, the report the project's ini key ``cardprobe_json`` names (relative to the
rootdir, as the plugin writes it; ``cli/project.py``) is the new run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_cardprobe.cli import file_arg, invoked_as
from pytest_cardprobe.cli.project import JSON_REPORT_KEY, ConfigProblem, find_project

if TYPE_CHECKING:
    from pytest_cardprobe.score.gate import Gate


#: The largest report diff reads (a report of thousands of tests is a few MB).
MAX_REPORT_BYTES = 100 * 1024 * 1024


def main(argv: Sequence[str]) -> int:
    """Compare two ``--cardprobe-json`` reports; exit 1 when the gate between them fails."""
    from pytest_cardprobe.files import FileRefused, read_capped, write_atomically
    from pytest_cardprobe.jsonread import load_json
    from pytest_cardprobe.score.diff import ReportError, compare_runs
    from pytest_cardprobe.score.gate import GATE_MODES, GateSettings
    from pytest_cardprobe.score.markdown import markdown
    from pytest_cardprobe.score.report import flip_lines, scoreboard_lines
    from pytest_cardprobe.text import escape_control
    from pytest_cardprobe.wire.values import level, non_negative_int

    parser = argparse.ArgumentParser(
        prog=f"{invoked_as()} diff",
        description="Per arm: pass and adoption change from OLD to NEW, and the flipped cases.",
    )
    parser.add_argument("old", metavar="OLD.json", type=Path)
    parser.add_argument(
        "new",
        metavar="NEW.json",
        type=Path,
        nargs="?",
        help="default: the report the ini key cardprobe_json of the project's pytest "
        "configuration names (the latest run's)",
    )
    parser.add_argument("--md", metavar="PATH", type=file_arg, help="also write it as Markdown")
    parser.add_argument(
        "--noise-floor",
        metavar="K",
        type=int,
        default=None,
        help="cases an arm may lose (default: the NEW run's, else 1)",
    )
    parser.add_argument(
        "--gate",
        choices=GATE_MODES,
        default=None,
        help="gate mode: floor or significance (default: the NEW run's, else floor)",
    )
    parser.add_argument(
        "--alpha",
        metavar="ALPHA",
        type=float,
        default=None,
        help="significance level of --gate significance (default: the NEW run's, else 0.05)",
    )
    args = parser.parse_args(list(argv))
    # The plugin's readers of --cardprobe-noise-floor and --cardprobe-alpha, in their words.
    for flag, value, read in (
        ("--noise-floor", args.noise_floor, non_negative_int),
        ("--alpha", args.alpha, level),
    ):
        try:
            if value is not None:
                read(str(value))
        except ValueError as exc:
            print(f"error: {flag} {exc}", file=sys.stderr)
            return 2
    if args.md is not None and (args.md.is_dir() or str(args.md) == ""):
        print(f"error: --md {args.md} is a directory; give a file path", file=sys.stderr)
        return 2
    if args.new is None:
        try:
            args.new = find_project(Path.cwd()).path(JSON_REPORT_KEY)
        except ConfigProblem as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if args.new is None:
            print(
                "error: give NEW.json, or set the ini key cardprobe_json in the project's pytest "
                "configuration so that each run writes the report diff compares with",
                file=sys.stderr,
            )
            return 2
    docs = []
    for path in (args.old, args.new):
        try:
            docs.append(load_json(read_capped(path, MAX_REPORT_BYTES).decode("utf-8")))
        except (OSError, ValueError, FileRefused) as exc:
            print(f"error: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    run = (docs[1].get("run") if isinstance(docs[1], dict) else None) or {}
    default = GateSettings()
    floor = args.noise_floor if args.noise_floor is not None else run.get("noise_floor")
    mode = args.gate or run.get("gate_mode")
    alpha = args.alpha if args.alpha is not None else run.get("alpha")
    settings = GateSettings(
        noise_floor=floor if type(floor) is int and floor >= 0 else default.noise_floor,
        mode=mode if mode in GATE_MODES else default.mode,
        alpha=float(alpha) if isinstance(alpha, int | float) and 0 < alpha < 1 else default.alpha,
    )
    try:
        arms, gate = compare_runs(docs[0], docs[1], settings, (str(args.old), str(args.new)))
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # An arm only in NEW is listed below as such: no "record a baseline" advice here.
    # Fitted to a terminal's width (COLUMNS, else the terminal's) as the plugin's scoreboard
    # is; piped with no COLUMNS, whole lines, for whoever reads them next.
    width = shutil.get_terminal_size((0, 0)).columns or None
    lines = scoreboard_lines(arms, gate, baseline_hint=False, width=width)
    flips = flip_lines(gate)
    if flips:
        lines += ["", "flipped cases:", *(f"  {line}" for line in flips)]
    unlike = coverage_lines(gate, str(args.old), str(args.new))
    if unlike:
        lines += ["", "not compared (in one report only):", *(f"  {line}" for line in unlike)]
    if not lines:  # e.g. two runs that selected no probe test (`-k` matching nothing)
        lines = [
            f"nothing to compare: neither report holds an arm ({args.old}, {args.new}); a run "
            "that selects no probe test writes a report without one"
        ]
    print(escape_control("\n".join(lines), keep_newlines=True))
    if args.md:
        try:
            write_atomically(args.md, markdown(arms, gate))
        except OSError as exc:
            print(
                f"error: cannot write the Markdown report to {args.md}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
    return 1 if gate.failed else 0


def coverage_lines(gate: Gate, old: str, new: str) -> list[str]:
    """What only one of the two runs has: whole arms, and per arm the cases NEW did not run
    and the cases NEW ran that OLD has not (neither is compared)."""
    lines = [f"only in OLD ({old}): {arm}" for arm in gate.not_run]
    lines += [f"only in NEW ({new}): {arm}" for arm in gate.new]
    for arm_id, c in sorted(gate.arms.items()):
        if c.partial and c.cases_in_baseline is not None:
            missing = c.cases_in_baseline - c.baseline_cases_run
            lines.append(f"{arm_id}: {missing} case(s) of OLD not run in NEW")
        if c.cases_in_baseline is not None and c.cases_run > c.baseline_cases_run:
            extra = c.cases_run - c.baseline_cases_run
            lines.append(f"{arm_id}: {extra} case(s) of NEW not in OLD")
    return lines
