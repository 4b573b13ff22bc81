"""Helpers shared by the pytester tests: paths of shipped cassettes, edited replies, reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml


def cassette(project: pytest.Pytester, case: str, channel: str, condition: str) -> Path:
    """Path of one shipped cassette inside a pytester project."""
    return (
        project.path
        / "cassettes"
        / "cards"
        / "smollm2%3A135m"
        / f"{case}-{channel}-{condition}.yaml"
    )


def set_replies(path: Path, content: str | None = None, tool_body: list[Any] | None = None) -> None:
    """Rewrite every recorded reply in a cassette (test data for the gate; the mechanism is real).

    ``content`` replaces ``message.content``; ``tool_body`` makes the reply a structured call
    of ``render_adaptive_card`` with that body (and empties the content).
    """
    data = yaml.safe_load(path.read_text())
    for interaction in data["interactions"]:
        body = interaction["response"]["body"]
        reply = json.loads(body["string"])
        message = reply.setdefault("message", {"role": "assistant"})
        if content is not None:
            message["content"] = content
            message.pop("tool_calls", None)
        if tool_body is not None:
            message["content"] = ""
            message["tool_calls"] = [
                {"function": {"name": "render_adaptive_card", "arguments": {"body": tool_body}}}
            ]
        body["string"] = json.dumps(reply)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def report(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run pytest on the project's cases with a JSON report; return both."""
    out = project.path / "report.json"
    if out.exists():
        out.unlink()
    result = project.runpytest("-p", "no:cacheprovider", "cases", f"--cardprobe-json={out}", *args)
    return result, (json.loads(out.read_text()) if out.exists() else {})


def compose_retry_cassette(
    project: pytest.Pytester,
    case: str,
    condition: str,
    first: str,
    retry_content: str | None = None,
    retry_body: list[Any] | None = None,
) -> Path:
    """A retry-channel cassette built from the shipped prose and tool recordings of a case.

    The retry channel's first request is the prose channel's request and its retry is the
    tool channel's request, so their real recorded interactions replay as-is. ``first``
    replaces the prose replies; ``retry_content`` / ``retry_body`` edit the tool replies as
    :func:`set_replies` does. With neither, the cassette holds the prose calls only, so a
    retry that should not happen would find nothing to replay and error.
    """
    prose = cassette(project, case, "prose", condition)
    tool = cassette(project, case, "tool", condition)
    target = cassette(project, case, "retry", condition)
    target.write_text(prose.read_text())
    set_replies(target, content=first)
    data = yaml.safe_load(target.read_text())
    if retry_content is not None or retry_body is not None:
        scratch = target.with_suffix(".tool.yaml")
        scratch.write_text(tool.read_text())
        set_replies(scratch, content=retry_content, tool_body=retry_body)
        data["interactions"] += yaml.safe_load(scratch.read_text())["interactions"]
        scratch.unlink()
    target.write_text(yaml.safe_dump(data, sort_keys=False))
    return target


def chromium() -> str:
    """The Chromium binary; missing is a skip locally and a failure where CI requires it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    message = (
        "chromium is not installed (scripts/setup-tests installs it; "
        "Debian: apt-get install -y chromium)"
    )
    if os.environ.get("CARDPROBE_REQUIRE_LIVE") == "1":
        pytest.fail(message)
    pytest.skip(message)


def render(browser: str, page: Path, *args: str) -> str:
    """Run headless Chromium on ``page``; return what it printed."""
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",  # tests may run as root in a container
            "--disable-gpu",
            "--hide-scrollbars",
            "--virtual-time-budget=3000",  # let anything that would run, run
            *args,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
