"""k of n from the user's side: the suite and case key ``at_least``, ``samples(n,
at_least=k)`` on a Python test, ``--samples`` capping the rule, and every wrong rule a
usage error naming where it is."""

from __future__ import annotations

import pytest
from cardprobe_testing import report

UNSTABLE = {  # the shipped cases whose two samples disagree (one passes, one fails)
    "cards/smollm2:135m/prose/schema": ["codeblock", "facts"],
    "cards/smollm2:135m/prose/seeded": ["rating_shown"],
}


def suite_with(project: pytest.Pytester, old: str, new: str) -> None:
    path = project.path / "cases" / "cards.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def statuses(data: dict[str, object]) -> dict[tuple[str, str], str]:
    tests = data["tests"]
    assert isinstance(tests, list)
    return {
        (f"{t['suite']}/{t['model']}/{t['channel']}/{t['condition']}", t["case"]): t["status"]
        for t in tests
    }


def test_one_of_two_passes_the_unstable_cases_and_shows_pass_k(recorded: pytest.Pytester) -> None:
    suite_with(recorded, "samples: 2\n", "samples: 2\nat_least: 1\n")
    result, data = report(recorded)
    found = statuses(data)
    for arm, cases in UNSTABLE.items():
        for case in cases:
            assert found[(arm, case)] == "passed", (arm, case)
    # They passed where the baseline (every sample must pass) failed them: gains, not errors.
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=9, xfailed=188, xpassed=3)
    head = next(line for line in result.stdout.lines if line.startswith("suite  model"))
    assert head.split()[4:7] == ["passed", "samples", "pass^k"]
    schema = next(a for a in data["arms"] if a["condition"] == "schema" and a["channel"] == "prose")
    assert schema["passed"] == 4 and schema["intervals"]["pass_all"]["count"] == 2
    assert schema["cases"]["facts"]["at_least"] == 1
    # --samples 1 asks one sample: the rule is capped at it (1 of 1), so nothing changes.
    result, data = report(recorded, "--cardprobe-samples", "1", "-k", "facts and schema")
    assert statuses(data)[("cards/smollm2:135m/prose/schema", "facts")] in ("passed", "failed")
    assert "at_least" not in data["tests"][0]


def test_a_case_rule_beats_the_suite_rule(recorded: pytest.Pytester) -> None:
    suite_with(recorded, "  - id: facts\n", "  - id: facts\n    at_least: 1\n")
    _, data = report(recorded, "-k", "schema and (facts or codeblock)")
    found = statuses(data)
    assert found[("cards/smollm2:135m/prose/schema", "facts")] == "passed"
    assert found[("cards/smollm2:135m/prose/schema", "codeblock")] == "failed"


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("samples: 2\n", "samples: 2\nat_least: 3\n",
         "cards.yaml:15: at_least: at_least 3 is more than the suite's 2 samples"),
        ("samples: 2\n", "samples: 2\nat_least: 0\n", "at_least: expected an integer >= 1"),
        ("  - id: facts\n", "  - id: facts\n    at_least: 5\n",
         "at_least: at_least 5 is more than the suite's 2 samples"),
        ("  - id: facts\n", "  - id: facts\n    at_least: two\n",
         "at_least: expected an integer >= 1, got 'two'"),
    ],
)  # fmt: skip
def test_a_wrong_rule_in_a_suite_is_a_usage_error(
    recorded: pytest.Pytester, old: str, new: str, said: str
) -> None:
    suite_with(recorded, old, new)
    result, data = report(recorded)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str(), result.stderr.str()
    assert not data.get("tests")  # nothing ran


def test_samples_marker_with_at_least_on_a_python_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        RUNS = {"once": 0, "twice": 0}

        @pytest.mark.samples(3, at_least=2)
        def test_fails_once():
            RUNS["once"] += 1
            assert RUNS["once"] != 2, "run 2 is off"

        @pytest.mark.samples(3, at_least=2)
        def test_fails_twice():
            RUNS["twice"] += 1
            assert RUNS["twice"] == 1, "only run 1 holds"

        @pytest.mark.samples(n=2, at_least=1)
        def test_keyword_form():
            assert True
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*2 of 3 samples failed (at least 2 must pass); run 2/3: *"])
    # --samples 1 overrides n and caps k at it: run 1 passes both.
    capped = pytester.runpytest("-p", "no:cacheprovider", "--cardprobe-samples", "1")
    capped.assert_outcomes(passed=3)


@pytest.mark.parametrize(
    "marker",
    ["samples(3, at_least=4)", "samples(2, at_least=0)", "samples(2, at_least=True)",
     "samples(2, at_least=1.5)", "samples(2, least=1)", "samples(2, 1)", "samples(at_least=1)"],
)  # fmt: skip
def test_a_wrong_marker_is_a_usage_error_naming_the_test(
    pytester: pytest.Pytester, marker: str
) -> None:
    pytester.makepyfile(f"import pytest\n\n@pytest.mark.{marker}\ndef test_it():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert (
        "test_a_wrong_marker_is_a_usage_error_naming_the_test.py::test_it: samples(n) takes" in err
    )
    assert "1 <= k <= n" in err and "Traceback" not in err
