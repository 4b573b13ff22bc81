"""Probe tests read against the baseline: passed, xfailed (known), XPASS (gain), FAILED (flip).

Each runs with and without xdist workers, since outcomes are decided where a test ran.
Changes are made by editing recorded replies (test data); replay, judge, baseline and gate
are the real ones.
"""

from __future__ import annotations

import json
from xml.etree import ElementTree

import pytest
from cardprobe_testing import cassette, report, set_replies

DATE_CARD = json.dumps([{"type": "Input.Date", "id": "day", "label": "Day"}])
TIME_CARD = json.dumps([{"type": "Input.Time", "id": "at", "label": "Time"}])
PROSE = "Sure! Any weekday morning works well for most people."
DATE = "date and prose and cold"


@pytest.fixture(params=[["-n", "0"], ["-n", "2"]], ids=["n0", "n2"])
def workers(request: pytest.FixtureRequest) -> list[str]:
    """Run each test in-process and with two xdist workers."""
    return list(request.param)


def passing_baseline(project: pytest.Pytester, *cases: tuple[str, str]) -> None:
    """Record a baseline in which these (case, card) pairs pass on prose/cold."""
    for case, card in cases:
        set_replies(cassette(project, case, "prose", "cold"), content=card)
    result, _ = report(project, "--cardprobe-update-baseline", "-k", "prose and cold")
    assert result.ret == 0, result.stdout.str()


def outcomes(data: dict[str, object]) -> dict[str, str]:
    """Case id -> outcome, for the prose/cold arm, from the JSON report."""
    tests = data["tests"]
    assert isinstance(tests, list)
    return {t["case"]: t["outcome"] for t in tests if t["nodeid"].endswith("prose-cold]")}


def test_known_failures_are_xfailed_with_both_labels(
    recorded: pytest.Pytester, workers: list[str]
) -> None:
    # -x: a known failure is not a failure, so nothing stops the run.
    result, data = report(recorded, "-rxX", "-x", "--junitxml=junit.xml", *workers)
    assert result.ret == 0, result.stdout.str()
    # The shipped card suite is 200 tests; the negative control passes on 7 of its 8 arms
    # (not prose/schema) and every other test is a known failure in the baseline.
    result.assert_outcomes(passed=7, xfailed=193)
    result.stdout.fnmatch_lines(
        [
            "XFAIL cases/cards.yaml::date[[]smollm2:135m-prose-cold[]] - "
            "known: prose (baseline: prose)",
        ]
    )
    assert "FAILED" not in result.stdout.str()
    assert outcomes(data)["date"] == "xfailed" and outcomes(data)["control"] == "passed"
    # What pytest's own xfail gives a JUnit reader: skipped, with the reason.
    junit = ElementTree.parse(recorded.path / "junit.xml").getroot()
    case = next(
        c for c in junit.iter("testcase") if c.get("name") == "date[smollm2:135m-prose-cold]"
    )
    (skipped,) = case.findall("skipped")
    assert skipped.get("type") == "pytest.xfail"
    assert skipped.get("message") == "known: prose (baseline: prose)"
    assert not case.findall("failure") and not case.findall("error")


def test_a_case_that_now_passes_is_xpass_and_a_gain(
    recorded: pytest.Pytester, workers: list[str]
) -> None:
    set_replies(cassette(recorded, "date", "prose", "cold"), content=DATE_CARD)
    result, data = report(recorded, "-rxX", "-k", "prose and cold", *workers)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1, xfailed=23, xpassed=1)
    result.stdout.fnmatch_lines(
        ["XPASS cases/cards.yaml::date[[]smollm2:135m-prose-cold[]] - gain: ok Input.Date *"]
    )
    assert outcomes(data)["date"] == "xpassed"
    assert data["gate"]["arms"]["cards/smollm2:135m/prose/cold"]["flipped_to_pass"] == ["date"]


def test_a_flip_within_the_noise_floor_fails_the_test_but_exits_0(
    recorded: pytest.Pytester, workers: list[str]
) -> None:
    passing_baseline(recorded, ("date", DATE_CARD), ("time", TIME_CARD))
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    result, data = report(recorded, "-k", "prose and cold", *workers)
    result.assert_outcomes(passed=2, failed=1, xfailed=22)
    result.stdout.fnmatch_lines(
        [
            "flip: passed in the baseline (ok Input.Date), fails now (prose)",
            "  sample 1/2 FAIL [[]content[]] declined: prose*",
            # Wrapped to the terminal (pytester's 80 columns) like the rest of the board.
            "1 flip(s) within the ±1 noise floor, so the run exits 0:",
            "  cards/smollm2:135m/prose/cold date (ok Input.Date -> prose)",
        ]
    )
    assert result.ret == 0
    assert outcomes(data)["date"] == "flipped"


def test_flips_beyond_the_noise_floor_exit_1(recorded: pytest.Pytester, workers: list[str]) -> None:
    passing_baseline(recorded, ("date", DATE_CARD), ("time", TIME_CARD))
    for case in ("date", "time"):
        set_replies(cassette(recorded, case, "prose", "cold"), content=PROSE)
    result, data = report(recorded, "-k", "prose and cold", *workers)
    result.assert_outcomes(passed=1, failed=2, xfailed=22)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert data["gate"]["decision"] == "fail"
    result.stdout.fnmatch_lines(["gate: fail*", "  REGRESSION: cards/smollm2:135m/prose/cold*"])


@pytest.mark.usefixtures("wide_terminal")  # the summary's lines read whole
@pytest.mark.parametrize("damage", ["missing", "stale", "corrupt"])
def test_cassette_problems_are_never_forgiven(
    recorded: pytest.Pytester, workers: list[str], damage: str
) -> None:
    """A flip within the floor would exit 0; a broken cassette beside it keeps the run red."""
    passing_baseline(recorded, ("date", DATE_CARD), ("time", TIME_CARD))
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    broken = cassette(recorded, "toggle", "prose", "cold")
    if damage == "missing":
        broken.unlink()
    elif damage == "stale":
        suite = recorded.path / "cases" / "cards.yaml"
        suite.write_text(suite.read_text().replace("num_predict: 512", "num_predict: 500", 1))
    else:
        broken.write_text("just a string\n")
    result, _ = report(recorded, "-k", "prose and cold", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    # Missing and stale ones are the block of tests that could not replay; a corrupt one
    # errored on its own: either way never forgiven.
    result.stdout.fnmatch_lines(["*never forgiven by the gate*"])


def test_an_ordinary_failing_test_is_never_forgiven(
    recorded: pytest.Pytester, workers: list[str]
) -> None:
    passing_baseline(recorded, ("date", DATE_CARD), ("time", TIME_CARD))
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    recorded.makepyfile(test_plain="def test_plain():\n    assert 1 == 2\n")
    out = recorded.path / "r.json"
    result = recorded.runpytest(
        "-p",
        "no:cacheprovider",
        "cases",
        "test_plain.py",
        "-k",
        "cold and prose or plain",
        f"--cardprobe-json={out}",
        *workers,
    )
    result.assert_outcomes(passed=2, failed=2, xfailed=22)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_regression_in_a_passing_run_still_exits_1(recorded: pytest.Pytester) -> None:
    """The gate is added to pytest's status: an adoption drop fails a run with no failures."""
    body = [{"type": "Input.Date", "id": "day", "label": "Day"}]
    set_replies(cassette(recorded, "date", "tool", "cold"), tool_body=body)
    assert report(recorded, "--cardprobe-update-baseline")[0].ret == 0
    set_replies(cassette(recorded, "date", "tool", "cold"), content=json.dumps(body))
    result, data = report(recorded, "-k", "date and tool and cold", "--cardprobe-noise-floor", "0")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert data["gate"]["decision"] == "fail"


def test_runxfail_shows_known_failures_as_failures(recorded: pytest.Pytester) -> None:
    result, data = report(recorded, "--runxfail", "-k", "prose and cold")
    result.assert_outcomes(passed=1, failed=24)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert outcomes(data)["date"] == "failed"


def test_a_crashed_worker_is_never_forgiven(recorded: pytest.Pytester) -> None:
    passing_baseline(recorded, ("date", DATE_CARD), ("time", TIME_CARD))
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    recorded.makepyfile(test_crash="import os\n\ndef test_boom():\n    os._exit(3)\n")
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "cases", "test_crash.py", "-k", "prose and cold or boom",
        "-n", "2",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert "so the run exits 0" not in result.stdout.str()
