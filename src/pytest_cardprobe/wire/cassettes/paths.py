"""Where cassettes live: one reversible, safe path component per name, always inside the
cassette folder."""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
from pathlib import Path

from pytest_cardprobe.wire.errors import CassetteProblem


@functools.lru_cache(maxsize=4096)
def path_part(name: str) -> str:
    """``name`` as one safe, reversible path component: ``smollm2:135m`` -> ``smollm2%3A135m``.

    Suite names, model names and case ids become folders and file names. Percent-encoding
    everything but letters, digits, ``-``, ``_`` and ``.`` leaves no separator, and a leading
    dot is encoded too, so neither ``..`` nor a hidden file can come out; an empty name
    becomes ``%`` followed by nothing a decoder would accept, so it cannot vanish either.
    """
    quoted = urllib.parse.quote(name, safe="-_.")
    if quoted.startswith("."):
        quoted = "%2E" + quoted[1:]
    return quoted or "%"


def safe_model_name(model: str) -> str:
    """Filesystem-safe, reversible model name (see :func:`path_part`)."""
    return path_part(model)


def _folder_inside(folder: str, root: str) -> bool:
    if os.path.isabs(folder) and os.path.isdir(folder):
        # An existing folder is resolved once per session: a run has a folder per suite and
        # model, and resolving costs a system call per path component. (A folder swapped
        # for a link during the session is not noticed.)
        return _existing_folder_inside(folder, root)
    return _resolved_inside(folder, root)


@functools.lru_cache(maxsize=1024)
def _existing_folder_inside(folder: str, root: str) -> bool:
    return _resolved_inside(folder, root)


def _resolved_inside(folder: str, root: str) -> bool:
    return Path(os.path.realpath(folder)).is_relative_to(os.path.realpath(root))


def _below(root: Path, *parts: str) -> Path:
    path = root.joinpath(*parts)
    # path_part makes this impossible; the check is the last line of defence if it changes.
    # The folder is resolved, not the file: a cassette may be a link the user made.
    if path.name in ("", ".", "..") or not _folder_inside(str(path.parent), str(root)):
        raise CassetteProblem(f"cassette path {path} would leave the cassette folder {root}")
    return path


def cassette_path(root: Path, suite: str, model: str, case: str, channel: str, cond: str) -> Path:
    """Where the cassette of one test lives (always inside ``root``)."""
    return _below(
        root,
        path_part(suite),
        path_part(model),
        path_part(f"{case}-{channel}-{cond}") + ".yaml",
    )


def fixture_cassette_path(root: Path, nodeid: str) -> Path:
    """Where the one cassette of an ordinary test using the ``cardprobe`` fixture lives."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")
    return _below(root, "_tests", path_part(safe) + ".yaml")
