"""scripts/setup-tests: the README's test command and .ci/run set up the tests with it.

The script is run for real, with a PATH of stand-ins for the system tools it calls (``id``,
``apt-get``, ``python3``, ``chromium``), so each test decides who runs it and what is there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "setup-tests"


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _run(folder: Path) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash
    for name in ("dirname",):  # what the script needs from coreutils
        found = shutil.which(name)
        assert found
        (folder / name).symlink_to(found)
    log = folder / "calls.log"
    return subprocess.run(
        [bash, str(SCRIPT)],
        env={"PATH": str(folder), "CALLS": str(log), "HOME": str(folder)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _calls(folder: Path) -> list[str]:
    """The calls the script made, without its first question to python3 (PEP 668)."""
    log = folder / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if not line.startswith("python3 -c")]


def test_without_root_and_without_chromium_it_says_how_before_installing_anything(
    tmp_path: Path,
) -> None:
    _tool(tmp_path, "id", "echo 1000")
    _tool(tmp_path, "apt-get", 'echo "apt-get $*" >> "$CALLS"')
    _tool(tmp_path, "python3", 'echo "python3 $*" >> "$CALLS"')
    done = _run(tmp_path)
    assert done.returncode == 1
    assert "sudo apt-get install -y chromium" in done.stderr
    assert "CARDPROBE_REQUIRE_LIVE=1" in done.stderr
    assert _calls(tmp_path) == []  # neither apt-get nor pip ran


def test_as_root_without_chromium_it_installs_it_then_the_project(tmp_path: Path) -> None:
    _tool(tmp_path, "id", "echo 0")
    # The stand-in apt-get "installs" Chromium by putting one on PATH.
    _tool(
        tmp_path,
        "apt-get",
        f'echo "apt-get $*" >> "$CALLS"; printf "#!/bin/sh\\n" > {tmp_path}/chromium; '
        f"{shutil.which('chmod')} 755 {tmp_path}/chromium",
    )
    _tool(tmp_path, "python3", 'echo "python3 $*" >> "$CALLS"')
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    calls = _calls(tmp_path)
    assert calls[0] == "apt-get update -qq"
    assert calls[1] == "apt-get install -y -qq chromium"
    assert calls[2].startswith("python3 -m pip install") and calls[2].endswith("-e .[dev]")


def test_with_chromium_present_only_the_project_is_installed(tmp_path: Path) -> None:
    _tool(tmp_path, "id", "echo 1000")
    _tool(tmp_path, "chromium-browser", "exit 0")
    _tool(tmp_path, "python3", 'echo "python3 $*" >> "$CALLS"')
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"Chromium: {tmp_path}/chromium-browser" in done.stdout
    assert [c.split()[0] for c in _calls(tmp_path)] == ["python3"]


def test_a_failing_pip_fails_the_script(tmp_path: Path) -> None:
    _tool(tmp_path, "id", "echo 1000")
    _tool(tmp_path, "chromium", "exit 0")
    _tool(tmp_path, "python3", "exit 3")
    assert _run(tmp_path).returncode == 3


def test_a_system_python_managed_by_its_distribution_gets_the_venv_words_first(
    tmp_path: Path,
) -> None:
    """Debian 12 and Ubuntu 24.04: pip refuses the system Python (PEP 668)."""
    _tool(tmp_path, "id", "echo 0")
    _tool(tmp_path, "apt-get", 'echo "apt-get $*" >> "$CALLS"')
    _tool(
        tmp_path,
        "python3",
        'if [ "$1" = -c ]; then echo externally-managed; else echo "python3 $*" >> "$CALLS"; fi',
    )
    done = _run(tmp_path)
    assert done.returncode == 1
    assert "python3 -m venv .venv && . .venv/bin/activate && scripts/setup-tests" in done.stderr
    assert _calls(tmp_path) == []  # neither apt-get nor pip ran


def test_the_pep_668_question_runs_under_this_python(tmp_path: Path) -> None:
    """The script's own check, run by the real interpreter, answers one of its two words."""
    text = SCRIPT.read_text()
    code = text.split("managed=$(python3 -c '", 1)[1].split("')", 1)[0]
    import subprocess as sp
    import sys

    out = sp.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() in ("", "externally-managed")


@pytest.mark.parametrize("script", [".ci/run", "README.md"])
def test_ci_and_the_readme_set_up_the_tests_with_it(script: str) -> None:
    text = (ROOT / script).read_text(encoding="utf-8")
    assert "scripts/setup-tests" in text
    assert os.access(SCRIPT, os.X_OK)
