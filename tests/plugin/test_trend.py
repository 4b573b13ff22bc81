"""``python -m pytest_cardprobe trend`` in a real git repository: the baseline committed
three times (the shipped one, then edited), a broken commit in between, an arm that appears
later and one that goes away."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cardprobe_testing import chromium, render
from conftest import ROOT

NEW_ARM = "cards/smollm2:135m/prose/fresh"
GONE_ARM = "tools/smollm2:135m/call/history"
# Would retitle the page if a browser ran it; it is a commit subject, so it reaches the page.
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"


def git(where: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_AUTHOR_DATE": "2025-03-01T12:00:00Z", "GIT_COMMITTER_DATE": "2025-03-01T12:00:00Z",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    }  # fmt: skip
    done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def commit(repo: Path, data: dict[str, Any] | str, message: str) -> None:
    text = data if isinstance(data, str) else json.dumps(data, indent=2, sort_keys=True)
    (repo / "cardprobe-baseline.json").write_text(text)
    git(repo, "add", "cardprobe-baseline.json")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(pytester: pytest.Pytester) -> Path:
    path = pytester.path
    git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("not a baseline\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "start")
    shipped = json.loads((ROOT / "cardprobe-baseline.json").read_text())
    commit(path, shipped, "first baseline")
    second = json.loads(json.dumps(shipped))
    date = second["arms"]["cards/smollm2:135m/prose/cold"]["verdicts"]["date"]
    date.update(passed=True, label="ok Input.Date", samples_passed=2)
    second["arms"][NEW_ARM] = dict(
        second["arms"]["cards/smollm2:135m/prose/cold"], condition="fresh"
    )
    commit(path, second, "date passes; a new arm")
    commit(path, "{ not json", "a broken edit")
    third = json.loads(json.dumps(second))
    del third["arms"][GONE_ARM]
    tool = third["arms"]["cards/smollm2:135m/tool/cold"]["verdicts"]
    for case in ("date", "time"):
        tool[case]["tool_calls"] = 2
    commit(path, third, HOSTILE)
    (path / "README").write_text("later, unrelated\n")
    git(path, "commit", "-q", "-am", "unrelated change")
    return path


def trend(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "pytest_cardprobe", "trend", *args],
        cwd=where, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def blocks(out: str) -> dict[str, list[str]]:
    """Per arm, its table rows (without the header)."""
    found: dict[str, list[str]] = {}
    for block in out.split("\n\n")[1:]:
        lines = block.splitlines()
        if lines and "/" in lines[0] and not lines[0].startswith("skipped"):
            found[lines[0]] = [x for x in lines[2:] if re.match(r"  [0-9a-f]{7} ", x)]
    return found


def test_three_committed_baselines_give_three_rows_per_arm(repo: Path) -> None:
    done = trend(repo)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("cardprobe-baseline.json: 3 version(s)")
    arms = blocks(out)
    always = [a for a in arms if a not in (NEW_ARM, GONE_ARM)]
    assert len(always) == 10 and len(arms) == 12
    assert all(len(arms[a]) == 3 for a in always), out
    # The arm appears in the second version and the other goes away in the third.
    assert len(arms[NEW_ARM]) == 2 and len(arms[GONE_ARM]) == 2
    assert "(not in the latest version" in out.split(GONE_ARM, 1)[1].split("\n\n", 1)[0]
    prose = [row.split() for row in arms["cards/smollm2:135m/prose/cold"]]
    assert [r[2] for r in prose] == ["1/25", "2/25", "2/25"]  # date passes from the second
    # Adoption after the passed and samples cells, whose intervals are one word each.
    tool = [row.split()[6:8] for row in arms["cards/smollm2:135m/tool/cold"]]
    assert tool == [["0/50", "0%"], ["0/50", "0%"], ["4/50", "8%"]]
    assert (
        "  <script>document.title='pwned'</script><img src=x…"
        in arms["cards/smollm2:135m/tool/cold"][2]
    )
    # The broken commit is skipped with a note; the hostile subject is plain text.
    assert re.search(r"skipped [0-9a-f]{7} \(2025-03-01, 'a broken edit'\): not valid JSON", out)
    # --since: only the commits after the first baseline.
    first = git(repo, "log", "--format=%h", "--reverse", "--", "cardprobe-baseline.json").split()[0]
    later = trend(repo, "--since", first)
    assert later.returncode == 0, later.stderr
    assert later.stdout.startswith("cardprobe-baseline.json: 2 version(s)")


def test_the_trend_page_is_self_contained_and_runs_nothing(repo: Path, tmp_path: Path) -> None:
    browser = chromium()
    page, md = tmp_path / "trend.html", tmp_path / "trend.md"
    done = trend(repo, "--html", str(page), "--md", str(md))
    assert done.returncode == 0, done.stderr
    source = page.read_text()
    assert not re.search(r"<[a-zA-Z][^>]*\s(src|href|action)\s*=", source)
    assert "<script" not in source and "<link" not in source and "@import" not in source
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in source
    dom = render(browser, page, "--dump-dom")
    assert "<title>cardprobe trend</title>" in dom and "pwned" not in dom.split("<body>")[0]
    assert not re.search(r"<(script|img|a|iframe)\b", dom)
    # One chart per arm: a pass-rate line for all, an adoption line for the tool arms.
    assert len(re.findall(r'<svg class="chart" id="trend-\d+"', dom)) == 12
    assert len(re.findall(r'<circle class="point"', dom)) == 10 * 3 + 2 + 2 + 2 * 3
    assert len(re.findall(r'<polyline class="series"', dom)) == 12 + 2
    markdown = md.read_text()
    assert markdown.startswith("## cardprobe trend") and f"### {NEW_ARM}" in markdown
    shot = tmp_path / "trend.png"
    render(browser, page, f"--screenshot={shot}", "--window-size=1280,1600")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_outside_a_repository_or_without_git_it_says_so(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    os.environ["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    try:
        done = trend(alone)
    finally:
        del os.environ["GIT_CEILING_DIRECTORIES"]
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {alone} is not inside a git repository")
    assert "Traceback" not in done.stderr
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PATH": str(empty)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_cardprobe", "trend"],
        cwd=alone, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("error: git is not installed (or not on PATH)")


def test_wrong_arguments_are_clear_errors(repo: Path) -> None:
    for args, said in (
        (["--since", "no-such-rev"], "error: --since 'no-such-rev': no such commit"),
        (["--since=--output=/tmp/x"], "error: --since '--output=/tmp/x' is not a revision"),
        (["--html", str(repo)], "is a directory; give a file path"),
        (["--baseline", "/etc/passwd"], "is outside the repository"),
    ):
        done = trend(repo, *args)
        assert done.returncode == 2, (args, done.stdout)
        assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    # A file git never saw, or no commit after --since: nothing to read, not an error, and
    # nothing was unreadable either.
    for args, said in (
        (["--baseline", "other.json"], "no commit in this history changes other.json\n"),
        (["--since", "HEAD"], "no commit after HEAD changes cardprobe-baseline.json\n"),
    ):
        done = trend(repo, *args)
        assert done.returncode == 0, done.stderr
        assert done.stdout == said


def test_a_control_character_in_a_subject_is_shown_as_an_escape(repo: Path, tmp_path: Path) -> None:
    data = json.loads((repo / "cardprobe-baseline.json").read_text())
    data["arms"]["cards/smollm2:135m/prose/cold"]["verdicts"]["date"]["label"] = "edited"
    commit(repo, data, "second \x1b[31mred")
    page, md = tmp_path / "trend.html", tmp_path / "trend.md"
    done = trend(repo, "--html", str(page), "--md", str(md))
    assert done.returncode == 0, done.stderr
    for text in (done.stdout, page.read_text(), md.read_text()):
        assert "\x1b" not in text and "second \\x1b[31mred" in text


def test_huge_counts_in_a_version_never_raise() -> None:
    # Whatever counts the baseline reader lets through, the trend's shares and intervals are
    # computed (or the version is skipped with a note); nothing raises.
    from pytest_cardprobe.score.trend import Commit, Trend, trend_html, trend_lines, trend_markdown

    shipped = json.loads((ROOT / "cardprobe-baseline.json").read_text())
    huge = 10**400
    for verdict in shipped["arms"]["cards/smollm2:135m/tool/cold"]["verdicts"].values():
        verdict.update(samples=huge, samples_passed=huge, calls=huge, tool_calls=huge // 2)
    found = Trend("cardprobe-baseline.json")
    found.add(Commit("a" * 40, "aaaaaaa", "2025-03-01", "huge"), shipped)
    text = "\n".join(trend_lines(found))
    assert trend_html(found).startswith("<!doctype html>") and trend_markdown(found)
    assert "cards/smollm2:135m/tool/cold" in text or "skipped aaaaaaa" in text


def test_from_a_subfolder_the_baseline_is_the_one_the_ini_key_names(
    pytester: pytest.Pytester,
) -> None:
    # Fails without reading the project's config: trend looked for ./cardprobe-baseline.json
    # in the folder it was started from and found no history.
    path = pytester.path
    git(path, "init", "-q", "-b", "main")
    (path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ncardprobe_baseline = "ci/gate.json"\n'
    )
    (path / "ci").mkdir()
    (path / "src" / "deep").mkdir(parents=True)
    (path / "src" / "deep" / "cardprobe-baseline.json").write_text("{}")  # a decoy, never read
    shipped = (ROOT / "cardprobe-baseline.json").read_text()
    for message in ("first", "second"):
        (path / "ci" / "gate.json").write_text(shipped + ("\n" if message == "second" else ""))
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", message)
    done = trend(path / "src" / "deep")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ci/gate.json: 2 version(s)"), done.stdout
    # --baseline on the command line is relative to the folder trend was started in.
    given = trend(path / "ci", "--baseline", "gate.json")
    assert given.stdout.startswith("ci/gate.json: 2 version(s)"), given.stderr
    # A config file pytest could not read either stops trend with its name.
    (path / "pyproject.toml").write_text("[tool.pytest.ini_options\n")
    broken = trend(path / "src")
    assert broken.returncode == 2 and "pyproject.toml: cannot read it as TOML" in broken.stderr
