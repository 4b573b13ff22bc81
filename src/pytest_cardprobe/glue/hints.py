"""What the user is told to run next: the command that re-records a test, and what to do
when no suite was collected."""

from __future__ import annotations

import shlex

#: Node id prefix of a built-in suite: ``cardprobe:cards::date[model-tool-cold]``. It is not a
#: path, so a test of a built-in suite is re-run with ``--cardprobe-suite NAME -k``.
BUILTIN_PREFIX = "cardprobe:"


def rerecord_hint(nodeid: str, model: str) -> str:
    """The command that records one test again, in any record mode.

    It always carries ``--live``: in the modes that record only some tests (``once``,
    ``stale``) a command without it would replay again. A built-in suite's id is not a path,
    so its test is selected with ``--cardprobe-suite NAME -k``. Values are shell-quoted.
    """
    if nodeid.startswith(BUILTIN_PREFIX):
        suite, _, name = nodeid.removeprefix(BUILTIN_PREFIX).partition("::")
        return (
            f"pytest --live --cardprobe-suite {shlex.quote(suite)} --model {shlex.quote(model)} "
            f"-k {shlex.quote(name)}"
        )
    return f"pytest --live --model {shlex.quote(model)} {shlex.quote(nodeid)}"


def no_suite_message() -> str:
    """What to do when models were given but no suite was collected."""
    return (
        "no cardprobe suite was collected, so no model was probed. Add a built-in suite with "
        "`pytest --cardprobe-suite cards` (`pytest --cardprobe-suite list` shows them; ini "
        "cardprobe_suites), or write your own: `python -m pytest_cardprobe init` starts one"
    )
