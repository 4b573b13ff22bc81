"""Old option spellings still work, with one warning per run; pytest-recording keeps its own.

Every flag but ``--model`` and ``--live`` is ``--cardprobe-*``. Each old spelling has one test
here: it must configure exactly what the new spelling configures, and warn once naming the new
one. ``--record-mode`` belongs to pytest-recording: with that plugin in the run (found by its
entry point or a ``-p`` argument, whichever loads first) ours is only ``--cardprobe-record-mode``.
The real pytest-recording is installed beside the plugin by tests/plugin/test_compat.py.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.glue.option_table import RENAMED
from pytest_cardprobe.glue.state import get_state
from pytest_cardprobe.run.settings import Settings

SRC = Path(__file__).resolve().parents[2] / "src"

# A value for each old spelling (none for a switch).
EXAMPLES: dict[str, list[str]] = {
    "--record-mode": ["once"],
    "--think": ["low"],
    "--no-warmup": [],
    "--api": ["openai"],
    "--server": ["http://127.0.0.1:9"],
    "--samples": ["3"],
    "--channel": ["prose"],
    "--condition": ["cold"],
    "--stream": [],
    "--cassette-dir": ["recorded"],
    "--request-timeout": ["7"],
    "--noise-floor": ["4"],
    "--baseline": ["base.json"],
    "--update-baseline": [],
    "--strict-baseline": [],
    "--strict-tools": [],
}


class WarningLog:
    """Collects the warnings pytest records while a config is set up."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage) -> None:
        self.messages.append(str(warning_message.message))


def configured(pytester: pytest.Pytester, *args: str) -> tuple[Settings, list[str]]:
    log = WarningLog()
    pytester.plugins.append(log)
    try:
        config = pytester.parseconfigure(*args)
    finally:
        pytester.plugins.remove(log)
    return get_state(config).settings, log.messages


def test_every_old_spelling_has_an_example() -> None:
    assert set(EXAMPLES) == set(RENAMED)


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_an_old_spelling_configures_what_the_new_one_does_and_warns_once(
    pytester: pytest.Pytester, old: str
) -> None:
    pytester.makeini("[pytest]\n")
    new = RENAMED[old].flag
    assert new is not None
    value = EXAMPLES[old]
    wanted, new_warnings = configured(pytester, new, *value)
    got, old_warnings = configured(pytester, old, *value)
    plain, _ = configured(pytester)
    assert got == wanted
    assert got != plain  # the old spelling had its effect
    assert new_warnings == []
    assert old_warnings == [
        f"renamed option: {old} is now {new} (the old spelling still works for now)"
    ]


def test_several_old_spellings_under_xdist_are_one_warning(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "cases", "-n", "2", "-k", "date and prose and cold",
        "--samples", "1", "--noise-floor", "3",
    )  # fmt: skip
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert out.count("renamed options:") == 1, out
    result.stdout.fnmatch_lines(
        ["*renamed options: --samples is now --cardprobe-samples; --noise-floor is now "
         "--cardprobe-noise-floor (the old spelling still works for now)*"]
    )  # fmt: skip
    assert "±3" in out


@pytest.mark.parametrize("how", ["-W", "ini"])
def test_an_old_spelling_under_warnings_as_errors_is_a_usage_error(
    recorded: pytest.Pytester, how: str
) -> None:
    """``filterwarnings = error`` is common; the warning must not become an INTERNALERROR."""
    args: tuple[str, ...] = ("-W", "error") if how == "-W" else ()
    if how == "ini":
        recorded.makeini("[pytest]\ncardprobe_models = smollm2:135m\nfilterwarnings = error\n")
    result = recorded.runpytest_subprocess(
        "-p", "no:cacheprovider", "cases", *args, "-k", "date and prose and cold", "--samples", "1"
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert "renamed option: --samples is now --cardprobe-samples" in err
    assert "made an error by this run's warning filters" in err
    assert "INTERNALERROR" not in result.stdout.str() + err


# ------------------------------------------------------------------ beside pytest-recording

FAKE_RECORDING = '''
"""Stands in for pytest-recording's option registration (the real one: test_compat.py)."""


def pytest_addoption(parser):
    parser.getgroup("recording").addoption(
        "--record-mode", default=None, choices=("once", "new_episodes", "none", "all", "rewrite"),
        help="fake pytest-recording record mode",
    )


def pytest_report_header(config):
    return f"recording record_mode={config.option.record_mode}"
'''

SHOW_MODE = """
from pytest_cardprobe.glue.state import get_state


def pytest_report_header(config):
    return f"cardprobe record_mode={get_state(config).settings.record_mode}"
"""


@pytest.fixture
def beside_recording(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project where a package ``pytest_recording`` is importable, with its entry point."""
    site = pytester.path / "site"
    (site / "pytest_recording").mkdir(parents=True)
    (site / "pytest_recording" / "__init__.py").write_text("")
    (site / "pytest_recording" / "plugin.py").write_text(FAKE_RECORDING)
    info = site / "pytest_recording-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytest-recording\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nrecording = pytest_recording.plugin\n")
    pytester.makeconftest(SHOW_MODE)
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    return pytester


def run(pytester: pytest.Pytester, *args: str, env: dict[str, str] | None = None) -> Any:
    paths = [str(SRC), str(pytester.path / "site"), os.environ.get("PYTHONPATH", "")]
    mp = pytest.MonkeyPatch()
    mp.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    for key, value in (env or {}).items():
        mp.setenv(key, value)
    try:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    finally:
        mp.undo()


AUTOLOAD_OFF = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
OURS, THEIRS = ("-p", "pytest_cardprobe.plugin"), ("-p", "pytest_recording.plugin")
ORDERS = {
    "entry-points": ((), None),
    "p-ours-first": ((*OURS, *THEIRS), AUTOLOAD_OFF),
    "p-theirs-first": ((*THEIRS, *OURS), AUTOLOAD_OFF),
}


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_beside_pytest_recording_record_mode_is_theirs(
    beside_recording: pytest.Pytester, order: str
) -> None:
    plugins, env = ORDERS[order]
    result = run(beside_recording, *plugins, "--record-mode", "all", env=env)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stdout.fnmatch_lines(["recording record_mode=all", "cardprobe record_mode=none"])
    ours = run(beside_recording, *plugins, "--cardprobe-record-mode", "once", env=env)
    ours.stdout.fnmatch_lines(["recording record_mode=None", "cardprobe record_mode=once"])
    assert "renamed option" not in result.stdout.str() + ours.stdout.str()
    shown = run(beside_recording, *plugins, "--help", env=env)
    assert shown.ret == pytest.ExitCode.OK, shown.stderr.str()
    shown.stdout.fnmatch_lines(["*--record-mode=*", "*fake pytest-recording record mode*"])
    shown.stdout.fnmatch_lines(["*--cardprobe-record-mode=MODE*"])


def test_blocked_pytest_recording_leaves_the_old_spelling_ours(
    beside_recording: pytest.Pytester,
) -> None:
    result = run(beside_recording, "-p", "no:recording", "--record-mode", "once")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stdout.fnmatch_lines(["cardprobe record_mode=once"])
    assert "recording record_mode" not in result.stdout.str()


def test_without_pytest_recording_the_old_spelling_is_ours(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SHOW_MODE)
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--record-mode", "once")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["cardprobe record_mode=once", "*renamed option: --record-mode*"])
