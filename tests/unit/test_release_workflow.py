"""The release workflow and the artefacts it would publish.

``.github/workflows/release.yml`` cannot run here (it needs GitHub and PyPI), so what can be
checked is checked: its shape (a published release triggers it; one job builds with
``python -m build`` and runs ``twine check``; only the publishing job may ask for an OIDC
token, and it uploads with ``pypa/gh-action-pypi-publish``, no password anywhere), the linter
zizmor on it and on the CI workflow the guide shows, and ``twine check --strict`` on an sdist
and a wheel built from this tree. zizmor and twine come with the ``dev`` extra; without them
these tests skip, except in CI and under ``CARDPROBE_REQUIRE_LIVE=1``, where they fail.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml
from test_docs_site import missing, needed

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def release() -> dict[Any, Any]:
    data = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_a_published_release_builds_checks_and_publishes_with_trusted_publishing() -> None:
    data = release()
    assert data[True] == {"release": {"types": ["published"]}}  # YAML 1.1 reads `on` as true
    assert data["permissions"] == {}  # nothing by default; each job says what it needs
    build, publish = data["jobs"]["build"], data["jobs"]["publish"]
    runs = [s["run"] for s in build["steps"] if "run" in s]
    assert "python -m build" in runs and "twine check --strict dist/*" in runs
    assert build["permissions"] == {"contents": "read"}
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    last = publish["steps"][-1]
    assert last["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert "with" not in last  # no password, no token: trusted publishing
    text = RELEASE.read_text(encoding="utf-8")
    assert "secrets." not in text and "password" not in text


def test_every_action_is_pinned_to_a_commit() -> None:
    for job in release()["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert PINNED.match(step["uses"]), step["uses"]


def test_the_dev_extra_has_the_docs_and_release_tools() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    name = re.compile(r"[ <>=!~;\[]")
    dev = {name.split(d, maxsplit=1)[0] for d in extras["dev"]}
    assert {name.split(d, maxsplit=1)[0] for d in extras["docs"]} <= dev
    assert {"zizmor", "twine", "build"} <= dev


def zizmor(*paths: Path) -> subprocess.CompletedProcess[str]:
    # zizmor is a compiled program in a wheel: no module to import, a script beside python.
    exe = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    if exe is None:
        missing("zizmor", "dev")
    return subprocess.run(
        [exe, "--offline", "--no-progress", *map(str, paths)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_linter_finds_nothing_in_the_repository_workflows() -> None:
    done = zizmor(ROOT / ".github" / "workflows")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_linter_finds_nothing_in_the_guide_ci_workflow(tmp_path: Path) -> None:
    from test_readme_workflow import GUIDE_CI

    text = GUIDE_CI.read_text(encoding="utf-8")
    found = re.search(r"```yaml\n(# \.github/workflows/cardprobe\.yml\n.*?)```", text, re.S)
    assert found
    workflow = tmp_path / ".github" / "workflows" / "cardprobe.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(found.group(1), encoding="utf-8")
    done = zizmor(workflow)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_linter_refuses_an_unpinned_action(tmp_path: Path) -> None:
    """What the two tests above lean on: zizmor fails a workflow it should fail."""
    workflow = tmp_path / ".github" / "workflows" / "release.yml"
    workflow.parent.mkdir(parents=True)
    text = RELEASE.read_text(encoding="utf-8")
    workflow.write_text(re.sub(r"actions/checkout@[0-9a-f]{40}", "actions/checkout@main", text))
    done = zizmor(workflow)
    assert done.returncode != 0 and "unpinned-uses" in done.stdout + done.stderr


def test_twine_check_passes_on_the_built_sdist_and_wheel(tmp_path: Path) -> None:
    needed("build", "dev")
    needed("twine", "dev")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        f"pytest_cardprobe-{version}-py3-none-any.whl",
        f"pytest_cardprobe-{version}.tar.gz",
    ]
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *sorted(map(str, tmp_path.iterdir()))],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout
