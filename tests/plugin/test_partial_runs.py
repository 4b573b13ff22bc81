"""Partial runs on the shipped recordings: a ``-k`` slice, a slice re-record, pruning, a
suite file recording over another's cassettes, quiet output, and ``diff`` of unlike runs.

None of these may fail the gate or change the baseline by itself.
"""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

import pytest
import yaml
from cardprobe_testing import cassette, report, set_replies
from conftest import ROOT
from faultserver import fault_server

CANARY = "tools/smollm2:135m"
DAY = json.dumps([{"type": "Input.Date", "id": "d", "label": "Day"}])


def baseline(project: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((project.path / "cardprobe-baseline.json").read_text())
    return data


def without(data: dict[str, Any], case: str) -> dict[str, Any]:
    """The baseline document with ``case``'s entries (and nothing else) taken out."""
    out = json.loads(json.dumps(data))
    for arm in out["arms"].values():
        arm["verdicts"].pop(case, None)
    return out


@pytest.fixture
def everything(recorded: pytest.Pytester) -> pytest.Pytester:
    """The shipped card and tool suites with their cassettes and the baseline."""
    shutil.copy(ROOT / "cases" / "tools.yaml", recorded.path / "cases" / "tools.yaml")
    shutil.copytree(ROOT / "cases" / "tools", recorded.path / "cases" / "tools")
    return recorded


def test_one_canary_side_is_not_measured_never_compared_and_never_written(
    tools_project: pytest.Pytester,
) -> None:
    before = (tools_project.path / "cardprobe-baseline.json").read_bytes()
    result, data = report(tools_project, "-k", "canary_octopus")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"canary {CANARY}: not measured (needs_tool 0/0)*"])
    assert "REGRESSION" not in result.stdout.str()
    assert data["gate"]["canary"] == {CANARY: "not measured"}
    assert data["gate"]["canary_changes"] == []
    # Written with the slice: the canary keeps the baseline's verdict.
    result, _ = report(tools_project, "-k", "canary_octopus", "--cardprobe-update-baseline")
    assert result.ret == 0
    assert baseline(tools_project)["canary"] == {CANARY: "supportedButDeclines"}
    assert (tools_project.path / "cardprobe-baseline.json").read_bytes() == before
    result, _ = report(tools_project)
    assert result.ret == 0, result.stdout.str()


@pytest.mark.usefixtures("wide_terminal")
def test_a_slice_update_merges_and_the_next_full_run_passes(everything: pytest.Pytester) -> None:
    path = everything.path / "cardprobe-baseline.json"
    before = path.read_bytes()
    result, _ = report(everything, "-k", "date", "--cardprobe-update-baseline")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "gate: updated — baseline cardprobe-baseline.json: "
            "updated 8 case(s) in 8 arm(s), kept 262"
        ]
    )
    assert path.read_bytes() == before  # nothing changed, so not one byte
    # Now date passes on one arm: only the date entries (and that arm's totals) change.
    set_replies(cassette(everything, "date", "prose", "cold"), content=DAY)
    result, _ = report(everything, "-k", "date", "--cardprobe-update-baseline")
    assert result.ret == 0
    old, new = json.loads(before), baseline(everything)
    arm = "cards/smollm2:135m/prose/cold"
    assert new["arms"][arm]["verdicts"]["date"]["passed"] is True
    assert new["arms"][arm]["passed"] == old["arms"][arm]["passed"] + 1
    old["arms"][arm]["passed"] += 1
    assert without(new, "date") == without(old, "date")
    result, data = report(everything)
    assert result.ret == 0, result.stdout.str()
    assert data["gate"]["decision"] == "pass" and data["gate"]["coverage"] is None


@pytest.mark.usefixtures("wide_terminal")
def test_a_slice_compares_what_ran_and_shows_its_coverage(everything: pytest.Pytester) -> None:
    set_replies(cassette(everything, "date", "prose", "cold"), content="Sure, pick a day.")
    result, data = report(everything, "-k", "date or time")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "suite cards, model smollm2:135m:",
            "gate*channel*condition*passed*ran*",
            "ok*prose*cold*2/25*",
            "*coverage: partial run — 16 of 200 baseline case(s) ran in the 8 arm(s) that ran; "
            "3 baseline arm(s) did not run*",
        ]
    )
    arms = {f"{a['suite']}/{a['channel']}/{a['condition']}": a for a in data["arms"]}
    assert arms["cards/prose/cold"]["cases_run"] == 2
    assert arms["cards/prose/cold"]["cases_in_baseline"] == 25
    assert sorted(data["gate"]["arms_not_run"]) == [
        "tools/smollm2:135m/call/cold",
        "tools/smollm2:135m/call/history",
        "tools/smollm2:135m/call/required",
    ]


@pytest.mark.usefixtures("wide_terminal")
def test_prune_removes_exactly_a_deleted_case(everything: pytest.Pytester) -> None:
    suite = everything.path / "cases" / "cards.yaml"
    data = yaml.safe_load(suite.read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] != "badge"]
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    result, _ = report(everything, "--cardprobe-update-baseline")
    result.stdout.fnmatch_lines(["*updated 262 case(s) in 11 arm(s), kept 8"])
    merged = baseline(everything)  # merging keeps what did not run, badge included
    assert all("badge" in a["verdicts"] for k, a in merged["arms"].items() if k[:6] == "cards/")
    result, _ = report(everything, "--cardprobe-prune-baseline")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*updated 262 case(s) in 11 arm(s), kept 0; pruned 8 case(s) and 0 arm(s) the suites*"]
    )
    expected = without(merged, "badge")
    for arm_id, arm in expected["arms"].items():
        if arm_id.startswith("cards/"):
            verdicts = arm["verdicts"].values()
            arm["cases"] -= 1
            arm["passed"] = sum(v["passed"] for v in verdicts)
            arm["calls"] = sum(v["calls"] for v in verdicts)
            arm["tool_calls"] = sum(v["tool_calls"] for v in verdicts)
    assert baseline(everything) == expected


def test_prune_keeps_the_arms_of_suites_the_run_did_not_collect(
    everything: pytest.Pytester,
) -> None:
    old = baseline(everything)
    result = everything.runpytest(
        "-p", "no:cacheprovider", "cases/tools.yaml", "--cardprobe-prune-baseline"
    )
    assert result.ret == 0, result.stdout.str()
    assert baseline(everything) == old


def test_a_suite_file_may_not_record_over_another_files_cassettes(
    recorded: pytest.Pytester,
) -> None:
    # A cassette recorded from cases/cards.yaml says so in its metadata.
    path = cassette(recorded, "date", "prose", "cold")
    data = yaml.safe_load(path.read_text())
    data["metadata"]["cardprobe"]["suite_file"] = "cases/cards.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    shutil.copy(recorded.path / "cases" / "cards.yaml", recorded.path / "cases" / "other.yaml")
    for dist in ([], ["-n", "2"]):
        with fault_server() as server:
            result = recorded.runpytest(
                "-p", "no:cacheprovider", "cases/other.yaml", "--live",
                "--cardprobe-server", server.url, "-k", "time", *dist,
            )  # fmt: skip
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
        result.stderr.fnmatch_lines(
            [
                "*cases/other.yaml: name: suite name 'cards' is also the name of "
                "cases/cards.yaml, whose recordings are in cassettes/cards*"
            ]
        )
        assert server.requests == []  # refused before anything was asked
    # The file the cassettes belong to records (and replays) as before.
    with fault_server() as server:
        result = recorded.runpytest(
            "-p", "no:cacheprovider", "cases/cards.yaml", "--live",
            "--cardprobe-server", server.url, "-k", "time and prose and cold",
            "--cardprobe-samples", "1", "--cardprobe-no-warmup",
        )  # fmt: skip
    assert result.ret != pytest.ExitCode.USAGE_ERROR, result.stderr.str()
    assert server.chats  # it was asked


@pytest.mark.usefixtures("wide_terminal")
def test_quiet_keeps_every_reason_the_gate_failed(tools_project: pytest.Pytester) -> None:
    path = tools_project.path / "cardprobe-baseline.json"
    data = json.loads(path.read_text())
    data["canary"][CANARY] = "supported"
    path.write_text(json.dumps(data))
    result, _ = report(tools_project, "-q")
    assert result.ret == 1
    board = result.stdout.lines[
        next(i for i, line in enumerate(result.stdout.lines) if "cardprobe scoreboard" in line) :
    ]
    assert board[1].startswith("gate: fail — 1 regression(s)")
    assert board[2] == (
        f"  REGRESSION: canary {CANARY}: supports tools -> declines although supported; "
        "accept it with --cardprobe-update-baseline if intended"
    )


@pytest.mark.usefixtures("wide_terminal")
def test_quiet_lists_the_regressed_and_warned_arms(recorded: pytest.Pytester) -> None:
    # The arms that pass date now fail it: prose/cold loses 1 (a warning) ...
    set_replies(cassette(recorded, "date", "prose", "cold"), content=DAY)
    recorded.runpytest(
        "-p", "no:cacheprovider", "cases", "-k", "date", "--cardprobe-update-baseline"
    )
    set_replies(cassette(recorded, "date", "prose", "cold"), content="In words, then.")
    result, _ = report(recorded, "-q")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "gate: pass — 0 regression(s), 1 warning(s)*",
            "  let through: cards/smollm2:135m/prose/cold date: ok Input.Date -> prose — the "
            "arm's net change is -1 case(s), within ±1, so the gate passes it",
        ]
    )


def diff(project: pytest.Pytester, *args: object) -> pytest.RunResult:
    return project.run(sys.executable, "-m", "pytest_cardprobe", "diff", *map(str, args))


def test_diff_lists_what_only_one_report_has(everything: pytest.Pytester) -> None:
    _, whole = report(everything)
    (everything.path / "report.json").rename(everything.path / "old.json")
    _, _ = report(everything, "-k", "date and cards")
    new = everything.path / "report.json"
    result = diff(everything, everything.path / "old.json", new)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "not compared (in one report only):",
            f"  only in OLD ({everything.path / 'old.json'}): tools/smollm2:135m/call/cold",
            f"  only in OLD ({everything.path / 'old.json'}): tools/smollm2:135m/call/history",
            f"  only in OLD ({everything.path / 'old.json'}): tools/smollm2:135m/call/required",
            "  cards/smollm2:135m/prose/cold: 24 case(s) of OLD not run in NEW",
        ]
    )
    assert "gate: pass" in result.stdout.str()
    # A directory as the Markdown target: one clear line, exit 2, no traceback.
    result = diff(everything, everything.path / "old.json", new, "--md", everything.path)
    assert result.ret == 2
    assert "Traceback" not in result.stderr.str()
    result.stderr.fnmatch_lines(["error: --md * is a directory; give a file path"])
    # A folder that is not there yet, typed as one: refused, not written as a file.
    result = diff(everything, everything.path / "old.json", new, "--md", "out/")
    assert result.ret == 2 and "Traceback" not in result.stderr.str()
    assert "--md: wants a file path, got 'out/', which names a folder" in result.stderr.str()
    assert not (everything.path / "out").exists()
    assert whole["gate"]["decision"] == "pass"
    # The other way round: the slice as OLD, the whole run as NEW.
    result = diff(everything, new, everything.path / "old.json")
    result.stdout.fnmatch_lines(
        [
            "not compared (in one report only):",
            "*only in NEW (*old.json): tools/smollm2:135m/call/cold",
            "  cards/smollm2:135m/prose/cold: 24 case(s) of NEW not in OLD",
        ]
    )
    assert "no baseline for" not in result.stdout.str()  # a pytest run's hint, not diff's


def test_lanes_are_cut_from_the_tests_that_run(recorded: pytest.Pytester) -> None:
    """Servers go to lanes after ``-k`` deselects, so a scattered slice uses both."""
    recorded.makeconftest(
        "def pytest_collection_finish(session):\n"
        "    for item in session.items:\n"
        "        print('SERVER', item.nodeid, getattr(item, 'server', None))\n"
    )
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "cases", "--co", "-s", "--live",
        "--cardprobe-server", "http://127.0.0.1:1", "--cardprobe-server", "http://127.0.0.1:2",
        "-k", "(date and prose and cold) or (gauge and tool) or (badge and history)",
    )  # fmt: skip
    servers = [line.split()[-1] for line in result.outlines if line.startswith("SERVER ")]
    assert len(servers) == 6, result.stdout.str()
    assert servers.count("http://127.0.0.1:1") == servers.count("http://127.0.0.1:2") == 3


def test_every_rerecord_hint_names_a_command_that_records(recorded: pytest.Pytester) -> None:
    prompt = recorded.path / "cases" / "prompts" / "tool.md"
    prompt.write_text(prompt.read_text() + "\nAlways answer with the tool.\n")
    hint = (
        "*re-record with: pytest --live --model smollm2:135m "
        "'cases/cards.yaml::date[[]smollm2:135m-tool-cold[]]'"
    )
    # Replay (mode none) and mode once (which records only missing cassettes) both say --live.
    # -vv: each test's own paragraph (without it, one line and one block for the run).
    result, _ = report(recorded, "-k", "date and tool and cold", "-vv")
    result.stdout.fnmatch_lines([hint])
    with fault_server() as server:
        result, _ = report(
            recorded, "-k", "date and tool and cold", "--cardprobe-record-mode", "once",
            "--cardprobe-server", server.url, "--cardprobe-no-warmup", "-vv",
        )  # fmt: skip
    result.stdout.fnmatch_lines([hint])
    assert server.chats == []


def test_the_hint_is_the_same_in_every_record_mode() -> None:
    from pytest_cardprobe.glue.hints import rerecord_hint

    assert rerecord_hint("cases/x.yaml::a[m-tool-cold]", "hf.co/o/r:Q4") == (
        "pytest --live --model hf.co/o/r:Q4 'cases/x.yaml::a[m-tool-cold]'"
    )
    assert rerecord_hint("cardprobe:cards::date[m-tool-cold]", "m") == (
        "pytest --live --cardprobe-suite cards --model m -k 'date[m-tool-cold]'"
    )
    # A model name cannot break out of the command it is pasted into.
    assert rerecord_hint("x.yaml::a[m]", "m;rm -rf ~").endswith(
        "--model 'm;rm -rf ~' 'x.yaml::a[m]'"
    )


def test_last_failed_reruns_exactly_the_failed_probes(recorded: pytest.Pytester) -> None:
    """``--lf`` is a slice too: pytest 9.2 matches the ``[…]`` part of an id as parameters,
    so a probe's node id must read like a parametrized test's (found by the issue-20 review:
    it selected nothing and reran the whole matrix)."""
    path = recorded.path / "cardprobe-baseline.json"
    data = json.loads(path.read_text())
    for case in ("badge", "bar", "carousel"):  # passed in the baseline: failures now
        data["arms"]["cards/smollm2:135m/prose/cold"]["verdicts"][case]["passed"] = True
    path.write_text(json.dumps(data))
    first = recorded.runpytest("cases", "-q")  # with the cache provider: it writes lastfailed
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    again = recorded.runpytest("cases", "--lf", "-q")
    outcomes = again.parseoutcomes()
    assert outcomes.get("failed") == 3, again.stdout.str()
    assert "passed" not in outcomes and "xfailed" not in outcomes, outcomes


def test_a_collection_error_is_shown_before_any_server_is_asked(
    recorded: pytest.Pytester,
) -> None:
    """A recording run over a broken set of suites: the suites' error, not the preflight's
    (pytest still calls collection_finish after modifyitems raised; found by review)."""
    shutil.copy(recorded.path / "cases" / "cards.yaml", recorded.path / "cases" / "other.yaml")
    with fault_server() as server:
        result = recorded.runpytest(
            "-p", "no:cacheprovider", "cases", "--cardprobe-record-mode", "once",
            "--cardprobe-server", server.url,
        )  # fmt: skip
        assert server.requests == []  # not even the preflight's /api/show
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "suite name 'cards' is already used by" in result.stderr.str()
    assert "preflight" not in result.stderr.str()


@pytest.mark.usefixtures("wide_terminal")
def test_cases_that_errored_are_counted_as_kept(recorded: pytest.Pytester) -> None:
    """An errored test (here: no cassette) keeps its baseline entry, and the summary says so
    (it said ``kept 0``; found by the issue-20 review)."""
    before = (recorded.path / "cardprobe-baseline.json").read_text()
    for name in ("date", "time"):
        (
            recorded.path / "cassettes" / "cards" / "smollm2%3A135m" / f"{name}-prose-cold.yaml"
        ).unlink()
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "cases", "-k", "prose and cold", "--cardprobe-update-baseline"
    )  # fmt: skip
    result.stdout.fnmatch_lines(["*updated 23 case(s) in 1 arm(s), kept 2*"])
    assert (recorded.path / "cardprobe-baseline.json").read_text() == before


def test_a_folder_pytest_ignores_is_not_scanned_for_suites_under_xdist(
    recorded: pytest.Pytester,
) -> None:
    """Under xdist the controller checks suites before collection; it follows the same
    ignore rules collection will (a conftest's ``collect_ignore``), so a fixture folder holding
    a copy of a suite is no same-name clash (found reviewing the 0.11.4 fixture)."""
    kept = recorded.path / "fixtures" / "old"
    kept.mkdir(parents=True)
    shutil.copy(recorded.path / "cases" / "cards.yaml", kept / "cards.yaml")
    recorded.makeconftest('collect_ignore = ["fixtures"]\n')
    result = recorded.runpytest(
        "-p", "no:cacheprovider", ".", "-n", "2", "-k", "date and prose and cold"
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    assert "is already used by" not in result.stderr.str()
