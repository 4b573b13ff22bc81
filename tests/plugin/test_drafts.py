"""Unreviewed drafted cases (``reviewed: false``) through pytest: counted on the scoreboard,
kept out of the gate and out of ``--cardprobe-update-baseline``, failed by
``--cardprobe-strict-review``.

The project is the shipped tool suite with its real recordings (cassettes/tools/); marking a
case unreviewed does not change its request, so its cassette still replays. Two irrelevance
cases that passed in the baseline are made to fail by editing their recorded replies into a
call (test data; the replay, judge, gate and baseline are the real ones).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_tools_suite import make_replies_call, run, tool_cassette

FLIPPED = ("capital", "haiku")


def mark_unreviewed(project: pytest.Pytester, *cases: str) -> None:
    suite = project.path / "cases" / "tools.yaml"
    text = suite.read_text()
    for case in cases:
        text = text.replace(f"  - id: {case}\n", f"  - id: {case}\n    reviewed: false\n", 1)
    suite.write_text(text)


def flip(project: pytest.Pytester) -> None:
    for case in FLIPPED:
        for condition in ("cold", "history"):
            make_replies_call(
                tool_cassette(project, case, condition), "run_shell", {"command": "ls"}
            )


def entries_of(data: dict[str, Any], case: str) -> list[dict[str, Any]]:
    return [t for t in data["tests"] if t["case"] == case]


@pytest.mark.usefixtures("wide_terminal")  # reads the draft lines whole
def test_failing_drafts_are_not_flips_and_the_gate_does_not_see_them(
    tools_project: pytest.Pytester,
) -> None:
    flip(tools_project)
    control, _ = run(tools_project)
    assert control.ret == 1  # reviewed: two lost cases per arm fail the gate (floor 1)
    control.stdout.fnmatch_lines(["*gate: fail*"])

    mark_unreviewed(tools_project, *FLIPPED)
    result, data = run(tools_project, "-rx")
    assert result.ret == 0, result.stdout.str()
    assert data["gate"]["decision"] == "pass" and not data["gate"]["regressions"]
    # 26 cases less the 2 drafts (no-call cases: the forced arm, 18 cases, never asks them).
    assert {a["condition"]: a["scored"] for a in data["arms"]} == {
        "cold": 24,
        "history": 24,
        "required": 18,
    }
    for case in FLIPPED:
        assert [t.get("draft") for t in entries_of(data, case)] == [True, True]
        assert {t["outcome"] for t in entries_of(data, case)} == {"xfailed"}
    result.stdout.fnmatch_lines(
        ["*XFAIL*capital*unreviewed draft: over_call*(not gated until reviewed)*"]
    )
    result.stdout.fnmatch_lines(
        [
            "*unreviewed drafts: 4 test(s) of cases marked `reviewed: false`*",
            "  tools/smollm2:135m/call/cold: 2 case(s): 0 pass their drafted expectation, 2 fail*",
            "  tools/smollm2:135m/call/history: 2 case(s): 0 pass their drafted expectation, 2 f*",
        ]
    )


def test_a_passing_draft_passes_and_is_still_counted_apart(tools_project: pytest.Pytester) -> None:
    mark_unreviewed(tools_project, "greeting")
    result, data = run(tools_project, "--cardprobe-condition", "cold")
    assert result.ret == 0, result.stdout.str()
    (test,) = entries_of(data, "greeting")
    assert test["status"] == "passed" and test["draft"] is True
    result.stdout.fnmatch_lines(
        ["  tools/smollm2:135m/call/cold: 1 case(s): 1 pass their drafted expectation"]
    )
    assert [a["scored"] for a in data["arms"]] == [25]


def test_drafts_are_kept_out_of_a_new_baseline(tools_project: pytest.Pytester) -> None:
    (tools_project.path / "cardprobe-baseline.json").unlink()
    mark_unreviewed(tools_project, "capital")
    result, _ = run(tools_project, "--cardprobe-update-baseline")
    assert result.ret == 0, result.stdout.str()
    baseline = json.loads((tools_project.path / "cardprobe-baseline.json").read_text())
    for arm in ("tools/smollm2:135m/call/cold", "tools/smollm2:135m/call/history"):
        verdicts = baseline["arms"][arm]["verdicts"]
        assert "capital" not in verdicts and len(verdicts) == 25


def test_strict_review_fails_every_unreviewed_case(tools_project: pytest.Pytester) -> None:
    mark_unreviewed(tools_project, "greeting", "capital")
    flip(tools_project)  # capital fails its draft, greeting passes its own: both fail here
    result, data = run(tools_project, "--cardprobe-strict-review", "--cardprobe-condition", "cold")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*unreviewed draft: case 'capital' is marked `reviewed: false`*set `reviewed: true`*",
            "FAILED cases/tools.yaml::capital*",
            "FAILED cases/tools.yaml::greeting*",
        ]
    )
    assert {t["outcome"] for t in entries_of(data, "greeting")} == {"unreviewed"}


@pytest.mark.usefixtures("wide_terminal")  # reads the draft lines whole
def test_a_draft_without_an_expectation_says_what_the_model_did(
    tools_project: pytest.Pytester,
) -> None:
    suite = tools_project.path / "cases" / "tools.yaml"
    question = "    prompt: Write a haiku about autumn leaves.\n"
    text = suite.read_text().replace(
        f"  - id: haiku\n{question}    expect: {{no_call: true}}\n",
        f"  - id: haiku\n    reviewed: false\n{question}",
    )
    assert "reviewed: false" in text
    suite.write_text(text)
    result, data = run(tools_project, "--cardprobe-condition", "cold")
    assert result.ret == 0, result.stdout.str()
    (test,) = entries_of(data, "haiku")
    assert test["samples"][0]["label"] == "no expectation yet: answered without a call"
    result.stdout.fnmatch_lines(
        ["*cold: 1 case(s): 0 pass their drafted expectation, 1 have none yet"]
    )


def test_diff_leaves_drafts_out(tools_project: pytest.Pytester, tmp_path: Path) -> None:
    from pytest_cardprobe.score.diff import compare_runs
    from pytest_cardprobe.score.gate import GateSettings

    _, old = run(tools_project, "--cardprobe-condition", "cold")
    flip(tools_project)
    mark_unreviewed(tools_project, *FLIPPED)
    _, new = run(tools_project, "--cardprobe-condition", "cold")
    arms, gate = compare_runs(old, new, GateSettings(), ("old.json", "new.json"))
    assert not gate.failed and [a.scored for a in arms] == [24]
