"""What the user is told to run next: the command that re-records a test, what to do when
no suite was collected, and which channel or condition filter selected nothing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_cardprobe.text import shell_quoted as shell_quoted
from pytest_cardprobe.wire.redact import redact_option

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
    ``cardprobe_*`` keys (``-o cardprobe_keep_alive=5m``), each value redacted as every
    echoed option is (:func:`wire.redact.redact_option`); nothing else (no
    ``--cardprobe-server``: the ini names the server anyway).
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
                kept += [flag, redact_option(flag, value)]
            elif following is not None:
                kept += [flag, redact_option(flag, following)]
        elif flag in ("-o", "--override-ini") and (eq or following is not None):
            setting = value if eq else str(following)
            if setting.startswith("cardprobe_"):
                kept += ["-o", _shown_setting(setting)]
        elif arg.startswith("-ocardprobe_"):
            kept += ["-o", _shown_setting(arg[2:])]
    return kept


def _shown_setting(setting: str) -> str:
    """``key=value`` of an ``-o`` option as a hint may repeat it: the value through
    ``wire.redact.redact_option`` (header values, URL credentials and secret-looking keys
    come out as ``[redacted]``, which the user fills in when running the command)."""
    key, eq, value = setting.partition("=")
    return f"{key}{eq}{redact_option(key, value)}" if eq else setting


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
    with ``--cardprobe-suite NAME -k``. Values are shell-quoted (:func:`shell_quoted`). The
    node id is relative to the rootdir, as pytest prints it: run the command from there.
    """
    extra = "".join(" " + shell_quoted(a) for a in carried)
    if nodeid.startswith(BUILTIN_PREFIX):
        suite, _, name = nodeid.removeprefix(BUILTIN_PREFIX).partition("::")
        return (
            f"pytest --live --cardprobe-suite {shell_quoted(suite)} --model {shell_quoted(model)}"
            f"{extra} -k {shell_quoted(name)}"
        )
    return f"pytest --live --model {shell_quoted(model)}{extra} {shell_quoted(nodeid)}"


def no_suite_message() -> str:
    """What to do when models were given but no suite was collected."""
    return (
        "no cardprobe suite was collected, so no model was probed. Add a built-in suite with "
        "`pytest --cardprobe-suite cards` (`pytest --cardprobe-suite list` shows them; ini "
        "cardprobe_suites), or write your own: `python -m pytest_cardprobe init` starts one"
    )


def nothing_selected(
    channels: Sequence[str],
    conditions: Sequence[str],
    arms: Mapping[str, Iterable[tuple[str, str]]],
) -> list[str]:
    """A line per ``--cardprobe-channel``/``--cardprobe-condition`` value that selects no test
    of the collected suites (``arms``: suite name -> its asked (channel, condition) pairs),
    naming what the suites have; or one line when each selects but the two together do not.
    """
    have: dict[tuple[str, str], list[str]] = {}
    for suite, pairs in sorted(arms.items()):
        for pair in pairs:
            have.setdefault(pair, []).append(suite)
    if not have:
        return []
    lines = []
    for flag, given, part, noun in (
        ("--cardprobe-channel", channels, 0, "channel"),
        ("--cardprobe-condition", conditions, 1, "condition"),
    ):
        by_value: dict[str, set[str]] = {}
        for pair, suites in have.items():
            by_value.setdefault(pair[part], set()).update(suites)
        there = "; ".join(
            f"{value} ({', '.join(sorted(by_value[value]))})" for value in sorted(by_value)
        )
        for value in dict.fromkeys(given):
            if value not in by_value:
                lines.append(
                    f"{flag} {value} selects no test: the collected suites have {noun}s {there}"
                )
    together = any(ch in channels and co in conditions for ch, co in have)
    if not lines and channels and conditions and not together:
        asked = ", ".join(f"{ch}/{co}" for ch, co in sorted(have))
        lines.append(
            f"--cardprobe-channel {' '.join(dict.fromkeys(channels))} with "
            f"--cardprobe-condition {' '.join(dict.fromkeys(conditions))} selects no test: "
            f"the collected suites ask channel/condition {asked}"
        )
    return lines


#: Options of a run that say how it records, gates or reports rather than which tests it
#: selects, with the number of values each takes: a command that records the run's
#: unreplayed tests leaves them out (it adds its own record mode).
NOT_SELECTION = {
    "--live": 0,
    "--cardprobe-record-mode": 1,
    "--record-mode": 1,
    "--cardprobe-update-baseline": 0,
    "--update-baseline": 0,
    "--cardprobe-prune-baseline": 0,
    "--cardprobe-accept-reason": 1,
    "--cardprobe-json": 1,
    "--cardprobe-md": 1,
    "--cardprobe-html": 1,
    "--junitxml": 1,
    "--junit-xml": 1,
    "--basetemp": 1,
}


def record_command(args: Sequence[str], mode: str) -> str:
    """The command that records what a run over ``args`` could not replay, and only that:
    the run's own arguments (its selection: paths, ``-k``, ``-m``, models, channels) with
    ``--cardprobe-record-mode MODE`` in place of how it recorded and reported.

    Every value is shown as an echoed option is (:func:`wire.redact.redact_option`): header
    values and URL credentials come out as ``[redacted]`` or not at all, for the user to
    fill in. Values are shell-quoted (:func:`shell_quoted`).
    """
    words = ["pytest", *_kept(args, NOT_SELECTION), "--cardprobe-record-mode", mode]
    return " ".join(shell_quoted(w) for w in words)


def update_command(args: Sequence[str]) -> str:
    """The command that records a baseline from a run over ``args``: its selection kept (paths,
    ``-k``, models, servers), how it recorded and reported left out, so the update reads the
    recordings the run left."""
    words = ["pytest", *_kept(args, NOT_SELECTION), "--cardprobe-update-baseline"]
    return " ".join(shell_quoted(w) for w in words)


def accept_command(args: Sequence[str]) -> str:
    """The refused update over ``args`` again, with a reason to give (to be filled in)."""
    kept = _kept(args, {"--cardprobe-accept-reason": 1, "--basetemp": 1})
    words = " ".join(shell_quoted(w) for w in ["pytest", *kept])
    return f'{words} --cardprobe-accept-reason "<why these regressions are accepted>"'


#: What a gated run's own command has that an update accepting its regressions leaves out.
NOT_FOR_UPDATE = {
    **{k: v for k, v in NOT_SELECTION.items() if k not in ("--live", "--cardprobe-record-mode")},
    "--record-mode": 1,
}


def accept_base_command(args: Sequence[str]) -> str:
    """A gated run over ``args`` as the update that accepts its regressions (its selection
    and base ref kept; reports and recording left out), with a reason to give."""
    words = " ".join(shell_quoted(w) for w in ["pytest", *_kept(args, NOT_FOR_UPDATE)])
    return (
        f'{words} --cardprobe-update-baseline --cardprobe-accept-reason "<why these '
        'regressions are accepted>"'
    )


def _kept(args: Sequence[str], dropped: Mapping[str, int]) -> list[str]:
    """``args`` without the options of ``dropped`` (with their values), every other value
    redacted as an echoed option is: ``-o key=value`` by its key, ``--flag=value`` and
    ``--flag value`` by the flag."""
    kept: list[str] = []
    skip = 0
    for index, arg in enumerate(args):
        if skip:
            skip -= 1
            continue
        flag, eq, value = arg.partition("=")
        if flag in dropped:
            skip = 0 if eq else dropped[flag]
            continue
        previous = args[index - 1] if index else ""
        if previous in ("-o", "--override-ini"):
            kept.append(_shown_setting(arg))
        elif arg.startswith("-o") and not arg.startswith("--") and len(arg) > 2:
            kept.append("-o" + _shown_setting(arg[2:]))
        elif flag == "--override-ini" and eq:
            kept.append(f"{flag}={_shown_setting(value)}")
        elif arg.startswith("--") and eq:
            kept.append(f"{flag}={redact_option(flag, value)}")
        elif previous.startswith("--") and not arg.startswith("-"):
            kept.append(redact_option(previous, arg))
        else:
            kept.append(arg)
    return kept
