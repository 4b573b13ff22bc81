"""What the plugin may read and write, checked at configure and collection time.

Paths come from suites, ini keys and the command line. A path the user typed on the command
line may point anywhere (that is an explicit choice); anything else (ini keys, suite keys)
must stay inside the project: pytest's rootdir or the cassette folder. Outputs (baseline,
reports) are checked before the first test runs, so a typo costs seconds, not a live run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pytest_cardprobe.files import MB, inside
from pytest_cardprobe.glue.option_table import BY_NAME
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.loader import SuiteLimits
from pytest_cardprobe.wire.slots import private_dir, slot_dir


def _arg_path(arg: str, invoked: Path) -> Path:
    path = Path(arg.split("::", 1)[0])
    return path if path.is_absolute() else invoked / path


def read_roots(config: pytest.Config, settings: Settings) -> tuple[Path, ...]:
    """Folders a suite may read files from: rootdir, the cassette folder, and whatever the
    command line named outside them (a suite given by path keeps its prompts next to it)."""
    roots = [Path(str(config.rootpath)), settings.cassette_dir]
    invoked = Path(str(config.invocation_params.dir))
    for arg in config.args:
        path = _arg_path(arg, invoked)
        if path.exists():
            roots.append(path if path.is_dir() else path.parent)
    if settings.suites:
        # Built-in suites read their prompts and tool files from the package.
        from pytest_cardprobe.suite.builtin import SUITES_DIR

        roots.append(SUITES_DIR.resolve())
    return tuple(roots)


def suite_limits(config: pytest.Config, settings: Settings) -> SuiteLimits:
    """The limits suites of this run are loaded with."""
    return SuiteLimits(
        roots=read_roots(config, settings),
        max_bytes=int(settings.max_file_mb * MB),
        max_samples=settings.max_samples,
    )


def _writable_problem(path: Path) -> str | None:
    """Why a file could not be written at ``path``, found by trying, or None.

    The nearest existing folder gets a temporary file that is removed at once: permission
    bits alone do not tell (root ignores them, read-only mounts and /proc do not).
    """
    if path.is_dir():
        return "is a directory"
    if path.exists() and not path.is_file():
        return "exists and is not a regular file"
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"cannot be created: {folder} is a file, not a folder"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cardprobe-check.", dir=folder)
    except OSError as exc:
        return f"cannot be written in {folder}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(tmp)
    return None


def _outside(path: Path, config: pytest.Config) -> bool:
    return not inside(path, [Path(str(config.rootpath))])


def check_outputs(config: pytest.Config, settings: Settings) -> list[str]:
    """Problems with where this run would write; [] when none.

    Called at configure time, before any test runs. A path typed on the command line may be
    anywhere; one from an ini key must stay inside the project (rootdir).
    """
    errors: list[str] = []
    for name in ("cassette_dir", "baseline"):
        spec = BY_NAME[name]
        path = getattr(settings, name)
        if name not in settings.command_line and _outside(path, config):
            errors.append(
                f"ini key {spec.ini}: {path} is outside the project ({config.rootpath}); "
                f"use a path inside it, or give {spec.flag} on the command line to mean it"
            )
    if settings.live:
        try:  # created (or checked) now, so a foreign one stops the run before any request
            private_dir(slot_dir())
        except OSError as exc:
            errors.append(str(exc))
    cassettes = settings.cassette_dir
    if cassettes.exists() and not cassettes.is_dir():
        errors.append(f"cassette folder {cassettes} (--cardprobe-cassette-dir) is not a folder")
    if settings.live and not errors:
        problem = _writable_problem(cassettes / ".probe")
        if problem:
            errors.append(f"cassette folder {cassettes} (--cardprobe-cassette-dir): {problem}")
    # The baseline's content is read and checked once, by plugin.read_baseline; here only
    # whether --cardprobe-update-baseline could write it.
    baseline = settings.baseline
    if settings.update_baseline:
        problem = _writable_problem(baseline)
        if problem:
            errors.append(
                f"baseline {baseline} (--cardprobe-baseline with --cardprobe-update-baseline): "
                f"{problem}"
            )
    for flag, report in (
        ("--cardprobe-json", settings.json_report),
        ("--cardprobe-md", settings.md_report),
        ("--cardprobe-html", settings.html_report),
    ):
        if report is not None:
            problem = _writable_problem(report)
            if problem:
                errors.append(f"{flag} {report}: {problem}")
    return errors
