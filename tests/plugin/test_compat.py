"""The plugin beside the pytest plugins people already use: same verdicts, same gate, no noise.

A fresh virtual environment gets the built wheel together with pytest-recording, pytest-xdist,
pytest-rerunfailures, pytest-randomly, pytest-timeout, pytest-cov, pytest-html,
pytest-json-report and syrupy, and replays the shipped suites five ways: plain, ``-n 2``,
randomised order with a fixed seed, ``--reruns 1`` and ``--timeout 60``. Each run must exit 0
with the plain run's scoreboard and gate, a JSON report equal to the plain run's up to the
order of its lists, and no warning from cardprobe. ``pytest --help`` must list both plugins'
record-mode options.

The environment (without the wheel) is kept under ``$XDG_CACHE_HOME/cardprobe-compat``, keyed
by the plugin list and the Python version, so only the first run downloads anything; the
wheel is built and reinstalled every run. It installs from PyPI, so it runs only when
``CARDPROBE_COMPAT=1`` (``.ci/run`` runs it as a step of its own); otherwise it is skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

pytestmark = [
    pytest.mark.compat,
    pytest.mark.skipif(
        os.environ.get("CARDPROBE_COMPAT") != "1",
        reason="installs plugins from PyPI into a venv: set CARDPROBE_COMPAT=1 (.ci/run does)",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = (
    "pytest-recording",
    "pytest-xdist",
    "pytest-rerunfailures",
    "pytest-randomly",
    "pytest-timeout",
    "pytest-cov",
    "pytest-html",
    "pytest-json-report",
    "syrupy",
)
#: How the shipped replay is run beside them; pytest-randomly is on unless switched off.
RUNS = {
    "plain": ["-p", "no:randomly"],
    "xdist": ["-p", "no:randomly", "-n", "2"],
    "randomly": ["-p", "randomly", "--randomly-seed=20260517"],
    "reruns": ["-p", "no:randomly", "--reruns", "1"],
    "timeout": ["-p", "no:randomly", "--timeout", "60"],
}
_DROPPED_ENV = ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "OLLAMA_HOST")


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cardprobe-compat"


class Venv:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.python = path / "bin" / "python"

    def run(self, cwd: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
        env["PATH"] = f"{self.path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONNOUSERSITE"] = "1"
        return subprocess.run(
            [str(self.python), *args], cwd=cwd, env=env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip


def shown(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert built.returncode == 0, shown(built)
    (found,) = out.glob("*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path) -> Venv:
    """The cached venv with the plugins (and the wheel's dependencies), the wheel reinstalled."""
    key = hashlib.sha256(repr((sys.version, PLUGINS)).encode()).hexdigest()[:12]
    path = _cache() / f"venv-{key}"
    env = Venv(path)
    with _locked(_cache() / "lock"):
        if not (path / "ready").exists():
            shutil.rmtree(path, ignore_errors=True)
            made = subprocess.run([sys.executable, "-m", "venv", str(path)], check=False)
            assert made.returncode == 0
            pip = env.run(path, "-m", "pip", "install", "--quiet", *PLUGINS, str(wheel))
            assert pip.returncode == 0, shown(pip)
            (path / "ready").write_text("\n".join(PLUGINS) + "\n")
        pip = env.run(
            path, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)
        )
        assert pip.returncode == 0, shown(pip)
    return env


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shipped suites, cassettes and baseline, outside the repository."""
    folder = tmp_path_factory.mktemp("project")
    shutil.copytree(ROOT / "cases", folder / "cases")
    shutil.copytree(ROOT / "cassettes", folder / "cassettes")
    shutil.copy(ROOT / "cardprobe-baseline.json", folder)
    (folder / "pytest.ini").write_text("[pytest]\ncardprobe_models = smollm2:135m\n")
    # Ordinary tests beside the probes: what pytest-randomly visibly shuffles.
    plain = "".join(f"def test_plain_{i}():\n    pass\n\n\n" for i in range(30))
    (folder / "test_plain.py").write_text(plain)
    return folder


def _scoreboard(out: str) -> str:
    """The scoreboard and gate lines (pytest's closing counts are compared apart)."""
    board = out[out.index("cardprobe scoreboard") :].rstrip()
    return board.rsplit("\n", 1)[0]


def _counts(out: str) -> dict[str, int]:
    """pytest's closing counts, without ``deselected`` (xdist's controller does not know it)."""
    last = out.rstrip().rsplit("\n", 1)[-1]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}
    counts.pop("deselected", None)
    return counts


def _ordered(value: Any) -> Any:
    """``value`` with every list sorted, so two reports compare up to the order of tests."""
    if isinstance(value, dict):
        return {k: _ordered(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_ordered(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return value


@pytest.fixture(scope="module")
def replays(venv: Venv, project: Path) -> dict[str, tuple[subprocess.CompletedProcess[str], Any]]:
    done = {}
    for name, extra in RUNS.items():
        report = project / f"{name}.json"
        result = venv.run(
            project, "-m", "pytest", "-p", "no:cacheprovider", "cases", "test_plain.py", "-rN",
            f"--cardprobe-json={report}", f"--junitxml={project / name}.xml", *extra,
        )  # fmt: skip
        done[name] = (result, json.loads(report.read_text()) if report.exists() else None)
    return done


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_shipped_replay_is_the_same_beside_other_plugins(
    replays: dict[str, tuple[subprocess.CompletedProcess[str], Any]], name: str
) -> None:
    result, report = replays[name]
    plain, plain_report = replays["plain"]
    assert result.returncode == 0, shown(result)
    assert "gate: pass" in result.stdout, shown(result)
    assert _scoreboard(result.stdout) == _scoreboard(plain.stdout)
    assert _counts(result.stdout) == _counts(plain.stdout)
    assert report is not None and _ordered(report) == _ordered(plain_report)
    warnings = result.stdout.partition("warnings summary")[2]
    assert "cardprobe" not in warnings.lower(), shown(result)


def test_random_order_shuffles_the_probe_tests_too_and_changes_no_verdict(
    replays: dict[str, tuple[subprocess.CompletedProcess[str], Any]], project: Path
) -> None:
    def order(name: str) -> list[str]:
        """The tests in the order they ran, from the JUnit XML (the JSON report is sorted)."""
        cases = ElementTree.parse(project / f"{name}.xml").iter("testcase")
        return [f"{case.get('classname')}::{case.get('name')}" for case in cases]

    def probes(name: str) -> list[str]:
        return [test for test in order(name) if "test_plain" not in test]

    assert "Using --randomly-seed=20260517" in replays["randomly"][0].stdout
    assert len(order("randomly")) == len(order("plain")) > 100
    assert sorted(order("randomly")) == sorted(order("plain"))
    assert order("randomly") != order("plain")
    # Replay leaves the order to pytest-randomly (only a live run orders its probe tests), so
    # the probes ran shuffled too, and the same scoreboard, gate and report came out
    # (test_the_shipped_replay_is_the_same_beside_other_plugins checks those).
    assert probes("randomly") != probes("plain")


def test_help_lists_both_plugins_record_modes(venv: Venv, project: Path) -> None:
    result = venv.run(project, "-m", "pytest", "--help")
    assert result.returncode == 0, shown(result)
    assert re.search(r"^\s+--record-mode=\{", result.stdout, re.M), shown(result)
    assert "VCR.py record mode" in result.stdout
    assert re.search(r"^\s+--cardprobe-record-mode=MODE", result.stdout, re.M)


def test_record_mode_goes_to_pytest_recording_and_ours_has_its_own_flag(
    venv: Venv, project: Path
) -> None:
    theirs = venv.run(
        project, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "cases",
        "--record-mode", "all", "-k", "date and prose and cold",
    )  # fmt: skip
    assert theirs.returncode == 0, shown(theirs)  # replayed: pytest-recording's mode is its own
    assert "renamed option" not in theirs.stdout
