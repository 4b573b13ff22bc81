"""The GitHub Actions workflow the guide shows (docs/guide/ci.md, once the README's): valid
YAML, actions pinned exactly, an install step that installs what exists, and a comment step
that looks for the very marker the Markdown report starts with."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from pytest_cardprobe.score.markdown import MARKER, markdown

ROOT = Path(__file__).resolve().parents[2]
GUIDE_CI = ROOT / "docs" / "guide" / "ci.md"


def workflow() -> dict[str, object]:
    text = GUIDE_CI.read_text(encoding="utf-8")
    found = re.search(r"```yaml\n(# \.github/workflows/cardprobe\.yml\n.*?)```", text, re.S)
    assert found, "the guide's workflow block"
    data = yaml.safe_load(found.group(1))
    assert isinstance(data, dict)
    return data


def test_the_workflow_replays_posts_one_sticky_comment_and_keeps_the_html() -> None:
    data = workflow()
    assert data[True] == "pull_request"  # YAML 1.1 reads the key `on` as true
    assert data["permissions"] == {"contents": "read", "pull-requests": "write"}
    steps = data["jobs"]["replay"]["steps"]  # type: ignore[index]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses == [
        "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",  # v4.2.2
        "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065",  # v5.6.0
        "actions/github-script@60a0d83039c74a4aee543508d2ffcb1c3799cdea",  # v7.0.1
        "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02",  # v4.6.2
    ]
    run = next(s["run"] for s in steps if "--cardprobe-md" in s.get("run", ""))
    assert "--cardprobe-md=cardprobe.md" in run and "--cardprobe-html=cardprobe.html" in run
    script = next(s for s in steps if s.get("uses", "").startswith("actions/github-script"))
    code = script["with"]["script"]
    assert f"const marker = '{MARKER}';" in code
    assert "updateComment" in code and "createComment" in code and "startsWith(marker)" in code
    # Both run after a failing gate, which fails the job.
    assert "!cancelled()" in script["if"]
    assert steps[-1]["with"] == {"name": "cardprobe-report", "path": "cardprobe.html"}


def test_the_markdown_report_starts_with_the_marker() -> None:
    from pytest_cardprobe.score.aggregate import ArmScore

    text = markdown([ArmScore("s", "m", "prose", "cold")], None)
    assert text.splitlines()[0] == MARKER == "<!-- cardprobe-report -->"


def test_the_install_step_installs_a_wheel_not_a_name_no_index_serves() -> None:
    steps = workflow()["jobs"]["replay"]["steps"]  # type: ignore[index]
    (install,) = [s["run"] for s in steps if "pip install" in s.get("run", "")]
    assert install.split() == [
        "python", "-m", "pip", "install", "wheels/pytest_cardprobe-0.1.0-py3-none-any.whl"
    ]  # fmt: skip
    # The wheel the step names is the one `python -m build` makes of this version.
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert install.endswith(f"pytest_cardprobe-{version['project']['version']}-py3-none-any.whl")


def test_no_expression_expands_inside_a_run_script() -> None:
    steps = workflow()["jobs"]["replay"]["steps"]  # type: ignore[index]
    for step in steps:
        assert "${{" not in step.get("run", ""), step  # the base ref reaches it through env
