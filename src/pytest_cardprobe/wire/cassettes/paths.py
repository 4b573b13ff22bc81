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


#: Folders of cassettes found inside their cassette folder, by (cassette folder, parts):
#: a replay asks for the same suite and model folder once per test, so an existing one is
#: joined once per process and resolved once (``_existing_folder_inside``). It must still be
#: a folder when it is asked for again: one removed meanwhile (or a suite folder swapped for
#: a link to somewhere without it) is checked anew, as it was before it was kept.
_CHECKED: dict[tuple[Path, tuple[str, ...]], Path] = {}


def _folder_below(root: Path, parts: tuple[str, ...]) -> Path:
    folder = _CHECKED.get((root, parts))
    if folder is not None and os.path.isdir(folder):
        return folder
    folder = root.joinpath(*parts)
    if not _folder_inside(str(folder), str(root)):
        raise CassetteProblem(f"cassette folder {folder} would leave the cassette folder {root}")
    if os.path.isabs(folder) and os.path.isdir(folder) and len(_CHECKED) < 1024:
        _CHECKED[(root, parts)] = folder
    return folder


def _below(root: Path, *parts: str) -> Path:
    *folders, name = parts
    # path_part makes this impossible; the check is the last line of defence if it changes.
    if name in ("", ".", "..") or os.sep in name or (os.altsep and os.altsep in name):
        raise CassetteProblem(f"cassette name {name!r} would leave the cassette folder {root}")
    path = _folder_below(root, tuple(folders)) / name
    # A cassette may be a link the user made, but only to a file inside the cassette folder:
    # a recording writes through it, and a link out of the folder (or a dangling one, which
    # would create its target) would write outside the project.
    if os.path.islink(path) and not _resolved_inside(str(path), str(root)):
        raise CassetteProblem(
            f"cassette {path} is a symbolic link to {os.readlink(path)}, which is outside the "
            f"cassette folder {root}; cardprobe neither reads nor records through it: remove "
            "the link (or put the file itself in its place)"
        )
    return path


def cassette_path(root: Path, suite: str, model: str, case: str, channel: str, cond: str) -> Path:
    """Where the cassette of one test lives (always inside ``root``)."""
    return _below(
        root,
        path_part(suite),
        path_part(model),
        path_part(f"{case}-{channel}-{cond}") + ".yaml",
    )


#: What ``files.write_atomically`` adds to a file name for its temporary file
#: (``.<name>.<8 random characters>.tmp``): a cassette's name must leave room for it.
TEMP_NAME_EXTRA = len(".") + len(".") + 8 + len(".tmp")


@functools.lru_cache(maxsize=64)
def _limits(root: Path) -> tuple[int, int]:
    """The longest file name and path the file system under ``root`` takes."""
    probe = root
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return os.pathconf(probe, "PC_NAME_MAX"), os.pathconf(probe, "PC_PATH_MAX")
    except (OSError, ValueError):
        return 255, 4096


def cassette_path_problem(
    root: Path, suite: str, model: str, case: str, channel: str, cond: str
) -> str | None:
    """Why the cassette of one test could not be written (a name or the path too long), or
    None. Checked at collection so the server is never asked for a reply that cannot be kept.
    """
    name_max, path_max = _limits(root)
    parts = (
        ("suite name", path_part(suite), 0),
        ("model name", path_part(model), 0),
        ("case id", path_part(f"{case}-{channel}-{cond}") + ".yaml", TEMP_NAME_EXTRA),
    )
    for what, part, extra in parts:
        size = len(os.fsencode(part)) + extra
        if size > name_max:
            return (
                f"the {what} makes a cassette file name of {size} bytes (as written, "
                f"percent-encoded), more than the {name_max} bytes the file system allows"
            )
    full = os.path.abspath(os.path.join(root, *(p for _, p, _ in parts)))
    size = len(os.fsencode(full)) + TEMP_NAME_EXTRA
    if size > path_max:
        return (
            f"the cassette path would be {size} bytes long, more than the {path_max} bytes "
            "the file system allows (shorten the case id, the suite or model name, or use a "
            "shorter --cardprobe-cassette-dir)"
        )
    return None


def fixture_cassette_path(root: Path, nodeid: str) -> Path:
    """Where the one cassette of an ordinary test using the ``cardprobe`` fixture lives."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")
    return _below(root, "_tests", path_part(safe) + ".yaml")
