"""What the user is told to run next: the command that re-records a test, and what to do
when no suite was collected."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

#: Node id prefix of a built-in suite: ``cardprobe:cards::date[model-tool-cold]``. It is not a
#: path, so a test of a built-in suite is re-run with ``--cardprobe-suite NAME -k``.
BUILTIN_PREFIX = "cardprobe:"


#: Command-line options that shape what a recording asks or where it goes: a re-record
#: without them would make a cassette the same run still refuses (another ``stream``, fewer
#: samples, another folder, another think level or API).
CARRIED = (
    "--cardprobe-stream",
    "--cardprobe-samples",
    "--cardprobe-cassette-dir",
    "--cardprobe-think",
    "--cardprobe-api",
)


def carried_options(args: Sequence[str]) -> list[str]:
    """The options of ``args`` (a run's command line) a re-record must repeat.

    Those of :data:`CARRIED` (with their value), and ``-o``/``--override-ini`` settings of
    ``cardprobe_*`` keys (``-o cardprobe_keep_alive=5m``); nothing else (no server: a URL
    may hold a credential, and the ini names the server anyway).
    """
    from pytest_cardprobe.glue.option_table import RENAMED

    kept: list[str] = []
    items = [_renamed(a, RENAMED) for a in args]
    for i, arg in enumerate(items):
        flag, eq, value = arg.partition("=")
        following = items[i + 1] if i + 1 < len(items) else None
        if flag in CARRIED:
            takes_value = flag != "--cardprobe-stream"
            if not takes_value:
                kept.append(flag)
            elif eq:
                kept += [flag, value]
            elif following is not None:
                kept += [flag, following]
        elif flag in ("-o", "--override-ini") and (eq or following is not None):
            setting = value if eq else str(following)
            if setting.startswith("cardprobe_"):
                kept += ["-o", setting]
        elif arg.startswith("-ocardprobe_"):
            kept += ["-o", arg[2:]]
    return kept


def _renamed(arg: str, renamed: Mapping[str, Any]) -> str:
    """``arg`` with an old spelling (``--stream``, ``--samples=3``) in its new form."""
    flag, eq, value = arg.partition("=")
    spec = renamed.get(flag)
    return arg if spec is None else f"{spec.flag}{eq}{value}"


def rerecord_hint(nodeid: str, model: str, carried: Sequence[str] = ()) -> str:
    """The command that records one test again, in any record mode.

    It always carries ``--live``: in the modes that record only some tests (``once``,
    ``stale``) a command without it would replay again, and the run's ``carried`` options
    (:func:`carried_options`). A built-in suite's id is not a path, so its test is selected
    with ``--cardprobe-suite NAME -k``. Values are shell-quoted. The node id is relative to
    the rootdir, as pytest prints it: run the command from there.
    """
    extra = "".join(" " + shlex.quote(a) for a in carried)
    if nodeid.startswith(BUILTIN_PREFIX):
        suite, _, name = nodeid.removeprefix(BUILTIN_PREFIX).partition("::")
        return (
            f"pytest --live --cardprobe-suite {shlex.quote(suite)} --model {shlex.quote(model)}"
            f"{extra} -k {shlex.quote(name)}"
        )
    return f"pytest --live --model {shlex.quote(model)}{extra} {shlex.quote(nodeid)}"


def no_suite_message() -> str:
    """What to do when models were given but no suite was collected."""
    return (
        "no cardprobe suite was collected, so no model was probed. Add a built-in suite with "
        "`pytest --cardprobe-suite cards` (`pytest --cardprobe-suite list` shows them; ini "
        "cardprobe_suites), or write your own: `python -m pytest_cardprobe init` starts one"
    )
