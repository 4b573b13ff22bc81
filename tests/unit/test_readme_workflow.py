"""The GitHub Actions workflow the README shows: valid YAML, actions named exactly, and a
comment step that looks for the very marker the Markdown report starts with."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from pytest_cardprobe.score.markdown import MARKER, markdown

README = Path(__file__).resolve().parents[2] / "README.md"


def workflow() -> dict[str, object]:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"```yaml\n(# \.github/workflows/cardprobe\.yml\n.*?)```", text, re.S)
    assert found, "the README's workflow block"
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
        "actions/checkout@v4",
        "actions/setup-python@v5",
        "actions/github-script@v7",
        "actions/upload-artifact@v4",
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
