"""A bug of the plugin, shown as one: a short report that carries no secret.

Everything a probe test does reports failure through the plugin's own failure report. An
exception nobody expected is a bug; pytest would show it with every frame's arguments (the
server URL with its credentials, the request headers), so it is caught where a probe runs
and shown as ``cardprobe internal error: <type>: <message> (please report)`` with a stack of
this package's frames only — file, line and function, no arguments, no locals — and every
secret the run knows of (server credentials, header values, the API key) replaced.
"""

from __future__ import annotations

import functools
import site
import sysconfig
import traceback
from collections.abc import Iterable
from pathlib import Path

from pytest_cardprobe.wire.redact import scrub

PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: Frames shown at most, innermost last.
MAX_FRAMES = 12


class InternalError(Exception):
    """A bug of the plugin, already written as its secret-free report."""


def internal_report(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """The report of an unexpected exception: one headline and the frames that matter.

    When the innermost frame that is neither this package nor an installed library is the
    user's own code (a conftest hook, a custom judge), the error is theirs and is said so;
    otherwise it is a bug of this plugin. Frames show file, line and function only.
    """
    known = list(secrets)
    message = scrub(f"{type(exc).__name__}: {exc}", known)
    frames = traceback.extract_tb(exc.__traceback__)
    theirs = [f for f in frames if _kind(f.filename) == "user"]
    if theirs:
        frame = theirs[-1]
        head = (
            f"cardprobe: error in {scrub(frame.filename, known)}:{frame.lineno} in "
            f"{frame.name}, called while running the probe: {message}"
        )
    else:
        head = f"cardprobe internal error: {message} (please report)"
    lines = [head[:2000]]
    for frame in [f for f in frames if _kind(f.filename) == "ours"][-MAX_FRAMES:]:
        where = Path(frame.filename).resolve().relative_to(PACKAGE_DIR.parent)
        lines.append(f"  {where}:{frame.lineno} in {frame.name}")
    return "\n".join(lines)


def _kind(filename: str) -> str:
    """``ours`` (this package), ``library`` (the standard library, installed packages,
    frozen modules) or ``user`` (anything else: a conftest, a project's judge)."""
    if filename.startswith("<"):
        return "library"
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return "library"
    if path.is_relative_to(PACKAGE_DIR):
        return "ours"
    if any(path.is_relative_to(root) for root in _library_roots()):
        return "library"
    return "user"


@functools.cache
def _library_roots() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    roots = {Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    return tuple(roots)
