"""A pull request gated against its base branch, end to end on a real git repository made
here: the guide's GitHub Actions workflow (docs/guide/ci.md: its ``run:`` steps, the install
step replaced by the package under test) runs in a shallow clone of each branch.

``main`` holds a card suite, its recordings (replies edited so three cases pass: test data;
replay, judging, baselines and git are real) and a baseline. Branches: one regresses and
accepts with a reason against ``main``; one regresses and rewrites its baseline without an
acceptance for ``main``; one gains. Then ``main`` moves on, and the acceptance made against
the older base no longer applies. A shallow clone that lacks the base gets the fetch advice.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cardprobe_testing import set_replies

ROOT = Path(__file__).resolve().parents[2]
GUIDE_CI = ROOT / "docs" / "guide" / "ci.md"
CASES = ("date", "time", "toggle", "number")
CARDS = {
    "date": [{"type": "Input.Date", "id": "day", "label": "Day"}],
    "time": [{"type": "Input.Time", "id": "at", "label": "Time"}],
    "toggle": [{"type": "Input.Toggle", "id": "on", "title": "Remind me"}],
    "number": [{"type": "Input.Number", "id": "n", "label": "How many"}],
}
PROSE = "Sure! Any weekday morning works well for most people."
REASON = "the shorter tool prompt trades the date and time pickers for fewer over-calls"
ARM = "cards/smollm2:135m/prose/cold"


def env() -> dict[str, str]:
    """The environment of a CI step: this interpreter's scripts first, no outer pytest state."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    kept["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{kept.get('PATH', '')}"
    kept.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t")
    kept.update(GIT_COMMITTER_EMAIL="t@e", COLUMNS="200", CI="")
    return kept


def sh(cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, shell=True, cwd=cwd, env=env(), capture_output=True, text=True, check=False
    )


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def workflow_steps() -> list[str]:
    """The ``run:`` steps of the guide's workflow, for base branch ``main`` (each step's
    ``env`` set before its command, as Actions does); the install step checks the package
    under test is the one installed instead of installing the wheel the project keeps."""
    text = GUIDE_CI.read_text(encoding="utf-8")
    found = re.search(r"```yaml\n(# \.github/workflows/cardprobe\.yml\n.*?)```", text, re.S)
    assert found
    steps = yaml.safe_load(found.group(1))["jobs"]["replay"]["steps"]
    out = []
    for step in (s for s in steps if "run" in s):
        run = step["run"]
        if run.strip().startswith("python -m pip install "):
            run = "python -c 'import pytest_cardprobe'"  # the local package, installed
        for name, value in step.get("env", {}).items():
            value = value.replace("${{ github.base_ref }}", "main")
            run = f"{name}={shlex.quote(value)}; export {name}; {run}"
        assert "${{" not in run, run  # no expression expands inside a script
        out.append(run)
    return out


def pytest_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "cases", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        check=False,
    )


def cassette(repo: Path, case: str) -> Path:
    return repo / "cassettes" / "cards" / "smollm2%3A135m" / f"{case}-prose-cold.yaml"


def make_main(repo: Path) -> None:
    """A project whose card suite asks four cases on prose/cold, recorded and baselined."""
    suite = yaml.safe_load((ROOT / "cases" / "cards.yaml").read_text(encoding="utf-8"))
    suite["cases"] = [c for c in suite["cases"] if c["id"] in CASES]
    suite["channels"], suite["conditions"] = ["prose"], ["cold"]
    (repo / "cases").mkdir(parents=True)
    (repo / "cases" / "cards.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    shutil.copytree(ROOT / "cases" / "prompts", repo / "cases" / "prompts")
    for case in CASES:
        source = ROOT / "cassettes" / "cards" / "smollm2%3A135m" / f"{case}-prose-cold.yaml"
        cassette(repo, case).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, cassette(repo, case))
    for case in ("date", "time", "toggle"):
        set_replies(cassette(repo, case), content=json.dumps(CARDS[case]))
    (repo / "pytest.ini").write_text("[pytest]\ncardprobe_models = smollm2:135m\n")
    done = pytest_run(repo, "--cardprobe-update-baseline")
    assert done.returncode == 0, done.stdout + done.stderr


def ci(tmp: Path, origin: Path, branch: str, name: str) -> tuple[list[Any], Path]:
    """A shallow clone of ``branch`` running the guide's steps: each step's result."""
    clone = tmp / name
    git(tmp, "clone", "--quiet", "--depth=1", "--branch", branch, origin.as_uri(), str(clone))
    return [sh(clone, step) for step in workflow_steps()], clone


def report_of(clone: Path) -> tuple[str, str]:
    return (clone / "cardprobe.md").read_text(), (clone / "cardprobe.html").read_text()


def test_a_pull_request_is_gated_against_its_base(tmp_path: Path) -> None:
    repo, origin = tmp_path / "work", tmp_path / "origin.git"
    repo.mkdir()
    git(repo, "init", "--quiet", "-b", "main")
    make_main(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "main: the suite, its recordings and baseline")
    git(tmp_path, "init", "--quiet", "--bare", str(origin))
    git(repo, "remote", "add", "origin", origin.as_uri())
    git(repo, "push", "--quiet", "origin", "main")
    base_a = git(repo, "rev-parse", "main")

    # A branch that regresses two cases (beyond the ±1 floor) and accepts them with a reason.
    git(repo, "checkout", "--quiet", "-b", "accept", "main")
    for case in ("date", "time"):
        set_replies(cassette(repo, case), content=PROSE)
    git(repo, "fetch", "--quiet", "origin")
    refused = pytest_run(
        repo, "--cardprobe-update-baseline", "--cardprobe-baseline-ref", "origin/main"
    )
    print("== update without a reason ==", refused.stdout, sep="\n")
    assert refused.returncode == 1
    assert "update refused: 1 regression(s) against origin/main" in refused.stdout
    assert git(repo, "status", "--porcelain", "cardprobe-baseline.json") == ""  # not written
    accepted = pytest_run(
        repo, "--cardprobe-update-baseline", "--cardprobe-baseline-ref", "origin/main",
        "--cardprobe-accept-reason", REASON,
    )  # fmt: skip
    print("== update with a reason ==", accepted.stdout, sep="\n")
    assert accepted.returncode == 0, accepted.stdout
    assert "FAILED" not in accepted.stdout  # the tests it accepted are not failures
    assert (
        f"accepted {ARM}: date (ok Input.Date -> prose), time (ok Input.Time -> truncated at "
        f"the token limit (length): prose) — reason: {REASON}"
    ) in accepted.stdout
    assert "within the" not in accepted.stdout
    written = json.loads((repo / "cardprobe-baseline.json").read_text())
    assert [(a["case"], a["base"], a["reason"]) for a in written["accepted"]] == [
        ("date", base_a, REASON),
        ("time", base_a, REASON),
    ]
    git(repo, "commit", "--quiet", "-am", "accept: a shorter prompt, two pickers lost")
    git(repo, "push", "--quiet", "origin", "accept")

    # A branch that regresses the same way and rewrites its baseline with no acceptance for
    # main (an update without a base ref accepts against no base; the entry then removed).
    git(repo, "checkout", "--quiet", "-b", "sneaky", "main")
    for case in ("date", "time"):
        set_replies(cassette(repo, case), content=PROSE)
    done = pytest_run(repo, "--cardprobe-update-baseline", "--cardprobe-accept-reason", "x")
    assert done.returncode == 0, done.stdout
    data = json.loads((repo / "cardprobe-baseline.json").read_text())
    assert {a["base"] for a in data.pop("accepted")} == {None}
    (repo / "cardprobe-baseline.json").write_text(json.dumps(data, indent=2) + "\n")
    git(repo, "commit", "--quiet", "-am", "sneaky: the baseline rewritten, nothing accepted")
    git(repo, "push", "--quiet", "origin", "sneaky")

    # A branch that gains a case.
    git(repo, "checkout", "--quiet", "-b", "gain", "main")
    set_replies(cassette(repo, "number"), content=json.dumps(CARDS["number"]))
    done = pytest_run(
        repo, "--cardprobe-update-baseline", "--cardprobe-baseline-ref", "origin/main"
    )
    assert done.returncode == 0, done.stdout
    git(repo, "commit", "--quiet", "-am", "gain: the number input")
    git(repo, "push", "--quiet", "origin", "gain")

    # CI on each pull request: the guide's steps in a shallow clone.
    steps, clone = ci(tmp_path, origin, "accept", "ci-accept")
    gate = steps[-1]
    print("== CI: accept ==", gate.stdout, gate.stderr, sep="\n")
    assert all(s.returncode == 0 for s in steps), [s.stderr for s in steps]
    # The header, whatever the terminal's width (it is cut at its joints and spaces).
    header = "cardprobe: replay (record mode none: no server is asked) models smollm2:135m "
    assert (
        header + f"baseline cardprobe-baseline.json, gating against origin/main ({base_a[:12]})"
        in " ".join(gate.stdout.replace(";", " ").split())
    )
    said = f"ACCEPTED: {ARM}: date (ok Input.Date -> prose) — reason: {REASON}"
    assert f"verdict against origin/main ({base_a[:12]}): accepted" in gate.stdout
    assert said in gate.stdout and "FAILED" not in gate.stdout
    assert f"arm changed: {ARM}: passed 3 -> 1 of 4 (accepted)" in gate.stdout
    md, html = report_of(clone)
    print("== CI: accept, the Markdown report ==", md, sep="\n")
    start = html.index("<section><h2>verdict against")
    print(
        "== CI: accept, the HTML report's verdict ==", html[start : html.index("</section>", start)]
    )
    assert "**Gate: accepted**" in md
    assert f"- ACCEPTED: {ARM}: date (ok Input.Date -&gt; prose) — reason: {REASON}" in md or (
        f"- ACCEPTED: {ARM}: date (ok Input.Date -> prose) — reason: {REASON}" in md
    )
    assert "Gate: accepted" in html and "ACCEPTED: cards/smollm2:135m/prose/cold: date" in html
    json_run = pytest_run(
        clone, "--cardprobe-baseline-ref", "origin/main", "--cardprobe-json=r.json"
    )
    assert json_run.returncode == 0
    verdict = json.loads((clone / "r.json").read_text())["summary"]["verdict"]
    print("== CI: accept, the JSON report's summary.verdict ==", json.dumps(verdict, indent=1))
    assert verdict["decision"] == "accepted"
    assert [(a["case"], a["reason"]) for a in verdict["accepted"]] == [
        ("date", REASON),
        ("time", REASON),
    ]

    steps, clone = ci(tmp_path, origin, "sneaky", "ci-sneaky")
    gate = steps[-1]
    print("== CI: sneaky ==", gate.stdout, gate.stderr, sep="\n")
    assert gate.returncode == 1
    assert f"verdict against origin/main ({base_a[:12]}): fail" in gate.stdout
    assert f"REGRESSION (not accepted): {ARM}: passed 3 -> 1 of 4 (floor ±1)" in gate.stdout
    assert "**Gate: fail**" in report_of(clone)[0]

    steps, clone = ci(tmp_path, origin, "gain", "ci-gain")
    gate = steps[-1]
    print("== CI: gain ==", gate.stdout, gate.stderr, sep="\n")
    assert gate.returncode == 0
    assert f"verdict against origin/main ({base_a[:12]}): pass" in gate.stdout
    assert f"gain: {ARM}: number (prose -> ok Input.Number)" in gate.stdout
    assert f"arm changed: {ARM}: passed 3 -> 4 of 4" in gate.stdout

    # main moves on: the acceptance was made against the older base and no longer applies.
    git(repo, "checkout", "--quiet", "main")
    (repo / "NOTES.md").write_text("A later change on main.\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "--quiet", "-m", "main moves on")
    git(repo, "push", "--quiet", "origin", "main")
    base_b = git(repo, "rev-parse", "main")
    steps, clone = ci(tmp_path, origin, "accept", "ci-accept-later")
    gate = steps[-1]
    print("== CI: accept, against a newer main ==", gate.stdout, gate.stderr, sep="\n")
    assert gate.returncode == 1
    assert (
        f"not accepted: {ARM}: date (ok Input.Date -> prose): accepted against base "
        f"{base_a[:12]}, not against base {base_b[:12]}"
    ) in gate.stdout

    # A shallow clone that never fetched the base: the fetch advice, before any test.
    shallow = tmp_path / "shallow"
    git(
        tmp_path,
        "clone",
        "--quiet",
        "--depth=1",
        "--branch",
        "accept",
        origin.as_uri(),
        str(shallow),
    )
    lacking = pytest_run(shallow, "--cardprobe-baseline-ref", "origin/main")
    print("== shallow clone without the fetch ==", lacking.stdout, lacking.stderr, sep="\n")
    assert lacking.returncode == pytest.ExitCode.USAGE_ERROR
    assert (
        "--cardprobe-baseline-ref origin/main names no commit in this shallow clone; fetch the "
        "base branch first: git fetch --depth=1 origin +refs/heads/main:refs/remotes/origin/main"
    ) in lacking.stderr


def test_a_later_update_keeps_the_acceptances_the_branch_made(tmp_path: Path) -> None:
    """After accepting against main, more updates on the branch (against the same base with
    no new reason, a partial one, one without the base ref) keep every acceptance: none of
    them asks for a reason again, prints the accepted tests as FAILED, or drops an entry
    (which would turn the pull request red with "not accepted")."""
    repo = tmp_path / "work"
    repo.mkdir()
    git(repo, "init", "--quiet", "-b", "main")
    make_main(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "main")
    git(repo, "branch", "origin-main")  # stands in for the fetched base
    git(repo, "checkout", "--quiet", "-b", "accept")
    for case in ("date", "time"):
        set_replies(cassette(repo, case), content=PROSE)
    ref = ("--cardprobe-update-baseline", "--cardprobe-baseline-ref", "origin-main")
    done = pytest_run(repo, *ref, "--cardprobe-accept-reason", REASON)
    assert done.returncode == 0, done.stdout
    git(repo, "commit", "--quiet", "-am", "accept")
    committed = (repo / "cardprobe-baseline.json").read_text()
    assert len(json.loads(committed)["accepted"]) == 2
    for args in (ref, (*ref, "-k", "toggle"), ("--cardprobe-update-baseline",)):
        again = pytest_run(repo, *args)
        print(f"== {' '.join(args)} ==", again.stdout, sep="\n")
        assert again.returncode == 0, again.stdout
        assert "refused" not in again.stdout and "FAILED" not in again.stdout
        assert (repo / "cardprobe-baseline.json").read_text() == committed
    gated = pytest_run(repo, "--cardprobe-baseline-ref", "origin-main")
    assert gated.returncode == 0, gated.stdout
    assert "gate: accepted — 2 accepted regression(s)" in gated.stdout
