"""The ``cardprobe`` command line: the console script beside ``python -m pytest_cardprobe``,
``--help`` with a line per command, ``--version`` from the installed metadata."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_cardprobe.__main__ import COMMANDS, SUMMARIES, help_text, main

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "src" / "pytest_cardprobe" / "cli"


def command_modules() -> set[str]:
    """The modules of cli/ that define a ``main(argv)``: each is a command."""
    found = set()
    for path in CLI.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            found.add(path.stem)
    return found


def test_every_command_of_cli_is_dispatched_and_has_one_help_line() -> None:
    assert set(COMMANDS) == command_modules()
    assert set(SUMMARIES) == set(COMMANDS)
    text = help_text()
    for name in COMMANDS:
        (line,) = [row for row in text.splitlines() if row.split()[:1] == [name]]
        assert SUMMARIES[name] in line and len(line) <= 80, line


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "commands:" in out and "--version" in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == (
        f"pytest-cardprobe {importlib.metadata.version('pytest-cardprobe')}\n"
    )


def test_the_console_script_is_declared_and_installed_with_the_same_entry() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"] == {"cardprobe": "pytest_cardprobe.__main__:main"}
    (script,) = [
        ep
        for ep in importlib.metadata.entry_points(group="console_scripts")
        if ep.name == "cardprobe"
    ]
    assert script.load() is main


def test_the_installed_script_runs_and_names_itself(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "cardprobe"
    if not script.exists():
        pytest.fail(f"{script} missing: reinstall the project (pip install -e .)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: cardprobe ")
    trend = subprocess.run(
        [str(script), "trend", "--help"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert trend.stdout.startswith("usage: cardprobe trend "), trend.stdout
    module = subprocess.run(
        [sys.executable, "-m", "pytest_cardprobe", "--help"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert module.stdout.startswith("usage: python -m pytest_cardprobe ")
    assert module.stdout.splitlines()[1:] == [
        line.replace("cardprobe COMMAND", "python -m pytest_cardprobe COMMAND")
        for line in done.stdout.splitlines()[1:]
    ]


def test_an_unknown_command_points_at_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'nope'" in err and "--help` says what each does" in err


def test_a_command_piped_into_a_reader_that_stopped_ends_without_a_traceback(
    tmp_path: Path,
) -> None:
    # `cardprobe init | head -1` once head has exited: every write meets a closed pipe.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_cardprobe", "init", str(tmp_path / "p")],
            cwd=tmp_path, stdout=write, stderr=subprocess.PIPE, text=True, env=env, timeout=60,
        )  # fmt: skip
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr  # it did not finish: never a success
