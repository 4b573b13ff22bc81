"""What the plugin may read and write, checked at configure and collection time.

Paths come from suites, ini keys and the command line. A path the user typed on the command
line may point anywhere (that is an explicit choice); anything else (ini keys, suite keys)
must stay inside the project: pytest's rootdir or the cassette folder. Outputs (baseline,
reports) are checked before the first test runs, so a typo costs seconds, not a live run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cardprobe.files import MB
from pytest_cardprobe.settings import Settings
from pytest_cardprobe.suite.loader import SuiteLimits


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
    return tuple(roots)


def suite_limits(config: pytest.Config, settings: Settings) -> SuiteLimits:
    """The limits suites of this run are loaded with."""
    return SuiteLimits(
        roots=read_roots(config, settings),
        max_bytes=int(settings.max_file_mb * MB),
        max_samples=settings.max_samples,
    )
