"""Installed, not cloned: the built wheel in a fresh virtual environment, used from an empty folder.

The wheel is built once per session (``python -m build``: an sdist, then the wheel from it) and
installed with ``pip`` into a new venv (dependencies come from PyPI). Every command then runs
with the venv's python, from a temporary folder, with ``PYTHONPATH`` removed, so no file of
this repository is importable. Only the last test needs a model server (the real Ollama); the
others pass without one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIVE_LOCK = os.environ.get("CARDPROBE_LIVE_LOCK", "/tmp/cardprobe-live.lock")
# Variables that would let the subprocess see this checkout or change how pytest starts.
_DROPPED_ENV = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "VIRTUAL_ENV",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "OLLAMA_HOST",
    "CARDPROBE_API_KEY",
)


@dataclass(frozen=True)
class Venv:
    """A virtual environment with the wheel installed, and how to run commands in it."""

    path: Path
    wheel: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
        env["PATH"] = f"{self.path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONNOUSERSITE"] = "1"
        return env

    def run(self, cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """``python ARGS`` with the venv's python in ``cwd``; output kept for assertions."""
        return subprocess.run(
            [str(self.python), *args],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def shown(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def cases_files() -> dict[str, bytes]:
    folder = ROOT / "cases"
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and wheel ``python -m build`` makes of this checkout (built once)."""
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, shown(result)
    return out


@pytest.fixture(scope="session")
def wheel(dist: Path) -> Path:
    (found,) = dist.glob("*.whl")
    return found


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv with the wheel (and its dependencies from PyPI) installed."""
    path = tmp_path_factory.mktemp("venv")
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(path)], capture_output=True, text=True, check=False
    )
    assert made.returncode == 0, shown(made)
    venv = Venv(path, wheel)
    installed = venv.run(
        path, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)
    )
    assert installed.returncode == 0, shown(installed)
    return venv


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    """An empty folder outside the repository to run in."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


#: The runtime dependencies the wheel declares: exactly the third-party imports of src/.
RUNTIME = {
    *("pytest", "pytest-xdist", "httpx", "httpcore", "vcrpy", "pyyaml", "jsonschema"),
    "referencing",
    "google-re2",
}


def archive_text(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(name).decode()


def test_sdist_and_wheel_metadata_and_contents(dist: Path, wheel: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, shown(check)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(info).decode())
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
        packaged = {
            n.removeprefix("pytest_cardprobe/suites/"): archive.read(n)
            for n in names
            if n.startswith("pytest_cardprobe/suites/") and not n.endswith("/")
        }
    assert "[pytest11]\ncardprobe = pytest_cardprobe.plugin" in entry_points
    assert "[console_scripts]\ncardprobe = pytest_cardprobe.__main__:main" in entry_points
    assert {"pytest_cardprobe/py.typed", "pytest_cardprobe/suite/suite.schema.json"} <= names
    assert "pytest_cardprobe/__main__.py" in names
    # The built-in suites in the wheel are the repository's cases/, byte for byte.
    assert packaged == cases_files()
    requires = metadata.get_all("Requires-Dist") or []
    runtime = {
        re.split(r"[ <>=!~;\[]", r, maxsplit=1)[0].lower() for r in requires if "extra ==" not in r
    }
    # Only what src/ imports (tests/unit/test_packaging.py ties the list to the imports).
    assert runtime == RUNTIME, requires
    assert metadata["License-Expression"] == "MIT"
    licence = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert archive_text(wheel, licence) == (ROOT / "LICENSE").read_text()
    with tarfile.open(sdist) as tar:
        inside = tar.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/LICENSE")
        assert inside is not None and inside.read().decode() == (ROOT / "LICENSE").read_text()
    assert "Framework :: Pytest" in (metadata.get_all("Classifier") or [])
    assert metadata["Requires-Python"] == ">=3.11"
    # No invented homepage or repository links.
    assert metadata.get_all("Project-URL") is None and metadata["Home-page"] is None
    assert not any(n.startswith(("tests/", "cases/", "cassettes/")) for n in names)


def test_the_package_imported_is_the_installed_wheel(venv: Venv, empty: Path) -> None:
    result = venv.run(empty, "-c", "import pytest_cardprobe; print(pytest_cardprobe.__file__)")
    assert result.returncode == 0, shown(result)
    where = Path(result.stdout.strip())
    assert where.is_relative_to(venv.path), where
    assert not where.resolve().is_relative_to(ROOT)


def test_the_console_script_says_its_version_and_commands(venv: Venv, empty: Path) -> None:
    script = venv.path / "bin" / "cardprobe"
    version = re.search(r"cardprobe-([^-]+)-", venv.wheel.name)
    assert version is not None
    env = venv.env()
    said = subprocess.run(
        [str(script), "--version"], cwd=empty, env=env, capture_output=True, text=True, timeout=60
    )
    assert said.stdout == f"pytest-cardprobe {version.group(1)}\n", shown(said)
    helped = subprocess.run(
        [str(script), "--help"], cwd=empty, env=env, capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0 and helped.stdout.startswith("usage: cardprobe "), shown(helped)
    for command in ("init", "diff", "trend", "capture", "draft"):
        assert re.search(rf"^  {command} +\S", helped.stdout, re.M), command


def test_list_prints_each_builtin_suite_on_a_line(venv: Venv, empty: Path) -> None:
    result = venv.run(empty, "-m", "pytest", "--cardprobe-suite", "list")
    assert result.returncode == 0, shown(result)
    lines = result.stdout.splitlines()
    assert any(line.startswith("cards  25 cases; judge card;") for line in lines), shown(result)
    assert "Traceback" not in result.stdout + result.stderr
    assert list(empty.iterdir()) == []  # listing writes nothing


def test_init_then_pytest_skips_the_unrecorded_starter_and_says_how(
    venv: Venv, empty: Path
) -> None:
    made = venv.run(empty, "-m", "pytest_cardprobe", "init")
    assert made.returncode == 0, shown(made)
    assert (empty / "pytest.ini").is_file()
    result = venv.run(empty, "-m", "pytest")
    # Nothing is recorded yet: a plain `pytest` right after init is not red.
    assert result.returncode == 0, shown(result)
    lines = result.stdout.splitlines()
    assert "23 test(s) not recorded yet:" in lines, shown(result)
    assert "  record exactly them: pytest --cardprobe-record-mode once" in lines, shown(result)
    assert " 23 skipped " in result.stdout, shown(result)
    assert "Traceback" not in result.stdout + result.stderr


@contextlib.contextmanager
def live_lock() -> Iterator[None]:
    """Hold the machine's live lock, unless a parent process (``flock LOCK pytest``) does."""
    if _held_by_an_ancestor(LIVE_LOCK):
        yield
        return
    with open(LIVE_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _held_by_an_ancestor(lock: str) -> bool:
    pid = os.getppid()
    while pid > 1:
        try:
            if lock.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
            # Field 4 of /proc/PID/stat, after the parenthesised command name, is the parent.
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def verdicts(report: dict[str, Any]) -> dict[str, list[tuple[bool, str, str | None]]]:
    return {
        t["nodeid"]: [(s["passed"], s["label"], s["route"]) for s in t["samples"]]
        for t in report["tests"]
    }


@pytest.mark.live
def test_builtin_suite_records_live_then_replays_with_the_same_verdicts(
    venv: Venv, empty: Path, real_ollama: Any
) -> None:
    made = venv.run(empty, "-m", "pytest_cardprobe", "init", "--model", real_ollama.model)
    assert made.returncode == 0, shown(made)
    command = [
        "-m",
        "pytest",
        "--cardprobe-suite",
        "cards",
        "--model",
        real_ollama.model,
        "-k",
        "date or table",
        *("--cardprobe-samples", "1"),  # one sample each: 9 long requests instead of 17
        *("--cardprobe-channel", "prose", "--cardprobe-channel", "tool"),
        *("--cardprobe-condition", "cold", "--cardprobe-condition", "history"),
        "--cardprobe-server",
        real_ollama.base_url,
    ]
    with live_lock():
        # A first recording writes the baseline too, so the replay is judged against it.
        # 9 requests of up to 512 tokens (the built-in suite's limit): 10 minutes was too short
        # for 17 of them on a shared 2-core machine (2026-12-01: timed out at load 5, ~4 tok/s).
        live = venv.run(
            empty,
            *command,
            "--live",
            "--cardprobe-update-baseline",
            "--cardprobe-json=live.json",
            timeout=1800,
        )
    assert live.returncode == 0, shown(live)
    replay = venv.run(empty, *command, "--cardprobe-json=replay.json")
    assert replay.returncode == 0, shown(replay)
    recorded = json.loads((empty / "live.json").read_text())
    replayed = json.loads((empty / "replay.json").read_text())
    # Two cases x two channels x two conditions of the built-in suite; the starter's cases
    # (collected through testpaths) are deselected by -k.
    assert len(recorded["tests"]) == 8
    assert {t["suite"] for t in recorded["tests"]} == {"cards"}
    assert verdicts(replayed) == verdicts(recorded)
    # Cassettes are the user's project files, never written into the installed package.
    cassettes = sorted((empty / "cassettes" / "cards").rglob("*.yaml"))
    assert len(cassettes) == 8, cassettes
    assert not [p for p in venv.path.rglob("*") if p.suffix == ".yaml" and "cassettes" in p.parts]
    assert "Traceback" not in live.stdout + live.stderr + replay.stdout + replay.stderr
