"""The base's baseline: the file at the baseline's repository path in the git revision
``--cardprobe-baseline-ref`` names (a pull request's base branch: ``origin/main``).

Read once per process at configure time, like the committed baseline, through the ``git`` on
``PATH`` (``gitread.py``). A shallow clone needs only the base's tip, so
``git fetch --depth=1 origin main`` is all a CI job adds; each way this can fail (no git, no
repository, a ref that names no commit here, a base without the file, a file that is no
baseline) is a usage error that says what to do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pytest_cardprobe.gitread import GitMissing, git, output, said
from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.score.baseline import Baseline, BaselineError, parse_baseline
from pytest_cardprobe.text import escape_control

FLAG = "--cardprobe-baseline-ref"


class BaseRefError(Exception):
    """The base's baseline cannot be read; the message says why and what to do."""


@dataclass(frozen=True)
class Base:
    """The baseline of the base the run is gated against, and where it came from."""

    ref: str
    commit: str
    path: str  # the baseline's path inside the repository
    baseline: Baseline

    @property
    def shown(self) -> str:
        """``origin/main (3f2a1b4c5d6e)``."""
        return f"{self.ref} ({self.commit[:12]})"


def _fetch_advice(top: Path, ref: str) -> str:
    """The command that brings ``ref``'s commit into a (shallow) clone."""
    remotes = output(git(top, "remote")).split()
    name = ref.removeprefix("refs/remotes/")
    remote, _, branch = name.partition("/")
    if remote in remotes and branch:
        return f"git fetch --depth=1 {remote} +refs/heads/{branch}:refs/remotes/{remote}/{branch}"
    origin = "origin" if "origin" in remotes or not remotes else remotes[0]
    return f"git fetch --depth=1 {origin} <the base branch>"


def read_base(ref: str, baseline: Path, max_bytes: int) -> Base:
    """The base's baseline: ``baseline``'s repository path as committed in ``ref``."""
    shown_ref = escape_control(ref)
    where = Path(os.path.abspath(baseline))
    try:
        done = git(None, "-C", str(where.parent), "rev-parse", "--show-toplevel")
        if done.returncode != 0:
            raise BaseRefError(
                f"{FLAG} {shown_ref}: the baseline {escape_control(str(baseline))} is not in a "
                f"git repository ({escape_control(said(done))}); gate against a base only "
                "in a clone of the repository"
            )
        top = Path(output(done))
        path = _inside(where, top, baseline)
        done = git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if done.returncode != 0:
            shallow = output(git(top, "rev-parse", "--is-shallow-repository")) == "true"
            raise BaseRefError(
                f"{FLAG} {shown_ref} names no commit in this "
                f"{'shallow clone' if shallow else 'clone'}; fetch the base branch first: "
                f"{_fetch_advice(top, ref)} (the CI workflow in docs/guide/ci.md has the step)"
            )
        commit = output(done)
        shown = f"{shown_ref} ({commit[:12]})"
        done = git(top, "cat-file", "-s", f"{commit}:{path}")
        if done.returncode != 0:
            raise BaseRefError(
                f"{FLAG} {shown}: the base has no {escape_control(path)}, so there is nothing "
                "to gate against; commit a baseline on the base branch first "
                "(pytest --cardprobe-update-baseline there), or leave the ref out"
            )
        if int(output(done) or 0) > max_bytes:
            raise BaseRefError(
                f"{FLAG} {shown}: its {escape_control(path)} is larger than the "
                f"{max_bytes // (1024 * 1024)} MB cap (ini cardprobe_max_file_mb)"
            )
        done = git(top, "show", f"{commit}:{path}")
    except GitMissing:
        raise BaseRefError(f"{FLAG} {shown_ref}: git is not installed (or not on PATH)") from None
    source = f"baseline {shown}:{escape_control(path)}"
    try:
        data = load_json(done.stdout.decode("utf-8"))
        return Base(ref, commit, path, parse_baseline(data, source))
    except UnicodeDecodeError as exc:
        raise BaseRefError(f"{source} is not UTF-8 text: {exc.reason}") from None
    except (ValueError, RecursionError) as exc:
        raise BaseRefError(f"{source} is not valid JSON: {exc}") from None
    except BaselineError as exc:
        raise BaseRefError(str(exc)) from None


def _inside(where: Path, top: Path, baseline: Path) -> str:
    """The baseline's path inside the repository at ``top`` (links resolved either way)."""
    for inner, outer in (
        (where, top),
        (Path(os.path.realpath(where)), Path(os.path.realpath(top))),
    ):
        try:
            return inner.relative_to(outer).as_posix()
        except ValueError:
            continue
    raise BaseRefError(
        f"{FLAG}: the baseline {escape_control(str(baseline))} is outside the repository at "
        f"{escape_control(str(top))}"
    )
