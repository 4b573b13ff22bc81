"""``python -m pytest_cardprobe trend``: each arm's pass rate and adoption across the commits
that changed the committed baseline, read from git.

The baseline is the one the plugin gates against: ``--baseline``, else the ini key
``cardprobe_baseline`` of the project's pytest configuration (``cli/project.py``), else
``cardprobe-baseline.json`` in the rootdir; so trend works from any folder of the project.

``git log`` lists the commits that touched the file (oldest first), ``git show REV:PATH``
reads each version; both run as subprocesses of the ``git`` found on ``PATH``
(``gitread.py``), in the repository the working directory is in. Nothing is written into
the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_cardprobe.cli import file_arg, invoked_as
from pytest_cardprobe.cli.project import (
    BASELINE_KEY,
    DEFAULT_BASELINE,
    ConfigProblem,
    find_project,
)
from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB, write_atomically
from pytest_cardprobe.gitread import GitMissing, git, said
from pytest_cardprobe.text import escape_control

#: Fields of one ``git log`` line, separated by the unit separator (never in a hash or date).
LOG_FORMAT = "%H%x1f%h%x1f%cs%x1f%s"


class TrendError(Exception):
    """Why the trend cannot be read (the message is the whole reason, paths escaped)."""


def _git(top: Path | None, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return git(top, *args)
    except GitMissing:
        raise TrendError(
            "git is not installed (or not on PATH); trend reads the baseline's history from git"
        ) from None


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    return escape_control(said(done))


def repository(start: Path) -> Path:
    """The top folder of the git repository ``start`` is in."""
    done = _git(None, "-C", str(start), "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise TrendError(
            f"{escape_control(str(start))} is not inside a git repository; trend reads the "
            f"baseline's history from git ({_said(done)})"
        )
    return Path(done.stdout.decode("utf-8", "replace").strip())


def history(top: Path, path: str, since: str | None) -> list[tuple[str, str, str, str]]:
    """(hash, short hash, date, subject) of every commit that changed ``path``, oldest
    first; with ``since``, only the commits after that revision."""
    if since is not None:
        if since.startswith("-") or not since.strip():
            raise TrendError(f"--since {escape_control(since)!r} is not a revision")
        done = _git(top, "rev-parse", "--verify", "--quiet", f"{since}^{{commit}}")
        if done.returncode != 0:
            raise TrendError(f"--since {escape_control(since)!r}: no such commit in {top}")
    head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD")
    if head.returncode != 0:
        return []  # a repository without a commit has no history
    revisions = [f"{since}..HEAD"] if since is not None else ["HEAD"]
    done = _git(top, "log", "--reverse", f"--format={LOG_FORMAT}", *revisions, "--", path)
    if done.returncode != 0:
        raise TrendError(f"git log of {escape_control(path)} failed: {_said(done)}")
    commits = []
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\x1f", 3)
        if len(parts) == 4:
            commits.append((parts[0], parts[1], parts[2], parts[3]))
    return commits


def version(top: Path, rev: str, path: str, max_bytes: int) -> tuple[object | None, str | None]:
    """The file ``path`` as committed in ``rev``, decoded; or None and why it could not be."""
    done = _git(top, "show", f"{rev}:{path}")
    if done.returncode != 0:
        return None, f"no {escape_control(path)} in this commit (removed or renamed)"
    if len(done.stdout) > max_bytes:
        return None, f"larger than the {max_bytes // MB} MB cap"
    try:
        return json.loads(done.stdout.decode("utf-8")), None
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text: {exc.reason} at byte {exc.start}"
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON: {exc}"


def main(argv: Sequence[str]) -> int:
    """Print the trend; exit 0, or 2 when it cannot be read or a report not written."""
    from pytest_cardprobe.score.trend import Commit, Trend, trend_html, trend_lines, trend_markdown

    parser = argparse.ArgumentParser(
        prog=f"{invoked_as()} trend",
        description="Per arm: pass rate and adoption in every committed version of the baseline.",
    )
    parser.add_argument("--since", metavar="REV", help="only the commits after REV")
    parser.add_argument("--html", metavar="PATH", type=file_arg, help="also write an HTML page")
    parser.add_argument("--md", metavar="PATH", type=file_arg, help="also write it as Markdown")
    parser.add_argument(
        "--baseline",
        metavar="PATH",
        type=file_arg,
        default=None,
        help="the baseline file (default: the ini key cardprobe_baseline of the project's "
        "pytest configuration, else cardprobe-baseline.json in its rootdir)",
    )
    args = parser.parse_args(list(argv))
    for flag, target in (("--html", args.html), ("--md", args.md)):
        if target is not None and (str(target) == "" or target.is_dir()):
            shown = escape_control(str(target))
            print(f"error: {flag} {shown} is a directory; give a file path", file=sys.stderr)
            return 2
    try:
        baseline = args.baseline or find_project(Path.cwd()).path(BASELINE_KEY, DEFAULT_BASELINE)
    except ConfigProblem as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        top = repository(Path.cwd())
        wanted = Path(os.path.abspath(baseline))
        try:
            path = wanted.relative_to(Path(os.path.realpath(top))).as_posix()
        except ValueError:
            try:
                path = wanted.relative_to(top).as_posix()
            except ValueError:
                raise TrendError(
                    f"{escape_control(str(baseline))} is outside the repository at "
                    f"{escape_control(str(top))}"
                ) from None
        trend = Trend(path, since=args.since)
        for rev, short, date, subject in history(top, path, args.since):
            document, problem = version(top, rev, path, DEFAULT_MAX_FILE_MB * MB)
            trend.add(Commit(rev, short, date, subject), document, problem)
    except TrendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        print("\n".join(trend_lines(trend)), flush=True)
    except BrokenPipeError:  # `trend | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    for what, target, render in (
        ("HTML page", args.html, trend_html),
        ("Markdown", args.md, trend_markdown),
    ):
        if target is None:
            continue
        try:
            write_atomically(target, render(trend))
        except OSError as exc:
            shown = escape_control(str(target))
            print(
                f"error: cannot write the {what} to {shown}: {exc.strerror or exc}", file=sys.stderr
            )
            return 2
    return 0
