"""Reading a git repository through the ``git`` on ``PATH``, as a subprocess (a leaf).

Two parts of the plugin read committed files: the ``trend`` command (every version of the
baseline) and a run gated against a base (``--cardprobe-baseline-ref``: the base's
baseline). Both go through :func:`git`, which never pages, prompts or colours, and never
writes the repository. Messages are the callers': git's own error text comes back raw
(:func:`said`), for them to escape.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


class GitMissing(Exception):
    """No ``git`` on ``PATH``."""


def git(top: Path | None, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``git [-C top] ARGS``, output captured; GitMissing when there is no git."""
    found = shutil.which("git")
    if found is None:
        raise GitMissing("git is not installed (or not on PATH)")
    where = ["-C", str(top)] if top is not None else []
    # No pager, no prompts, no configured colours: plain output for a program to read.
    env = {**os.environ, "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(
        [found, *where, "--no-pager", "-c", "color.ui=never", *args],
        capture_output=True,
        env=env,
        check=False,
    )


def said(done: subprocess.CompletedProcess[bytes]) -> str:
    """The last line git wrote to stderr (not escaped), or its exit status."""
    text = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return text[-1] if text else f"exit status {done.returncode}"


def output(done: subprocess.CompletedProcess[bytes]) -> str:
    """What git wrote to stdout, as text, stripped."""
    return done.stdout.decode("utf-8", "replace").strip()
