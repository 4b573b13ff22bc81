"""k of n from the user's side: the suite and case key ``at_least``, ``samples(n,
at_least=k)`` on a Python test, ``--samples`` capping the rule, and every wrong rule a
usage error naming where it is."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from cardprobe_testing import cassette, report

# The shipped recordings (Ollama 0.33.0) hold no case whose two samples disagree: every case
# passes both samples or neither. So these tests make such cases, as test data for the k-of-n
# rule (the replay, judging and scoring are real): in the pytester copy, sample 1 of each
# case below is rewritten into a complete card the case accepts; sample 2 keeps its real,
# failing reply. One more case is made to pass both samples, so that pass^k has a case to count.
SCHEMA = "cards/smollm2:135m/prose/schema"
SEEDED = "cards/smollm2:135m/prose/seeded"
UNSTABLE: dict[str, dict[str, Any]] = {  # arm -> case -> the card its sample 1 answers with
    SCHEMA: {
        "codeblock": {
            "type": "AdaptiveCard",
            "body": [{"type": "CodeBlock", "codeSnippet": "s[::-1]", "language": "Python"}],
        },
        "facts": {
            "type": "AdaptiveCard",
            "body": [{"type": "FactSet", "facts": [{"title": "Gate", "value": "B12"}]}],
        },
    },
    SEEDED: {"rating_shown": [{"type": "Rating", "value": 4.3, "max": 5}]},
}
STEADY = ("date", {"type": "AdaptiveCard", "body": [{"type": "Input.Date", "id": "day"}]})


def answer_with(path: Path, card: Any, samples: tuple[int, ...]) -> None:
    """Rewrite these samples (recorded interactions) of a cassette into a complete reply
    carrying ``card``; the other samples keep their recorded replies."""
    data = yaml.safe_load(path.read_text())
    for sample in samples:
        body = data["interactions"][sample]["response"]["body"]
        reply = json.loads(body["string"])
        reply["message"]["content"] = json.dumps(card)
        reply["done_reason"] = "stop"
        body["string"] = json.dumps(reply)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def unsettle(project: pytest.Pytester) -> None:
    """Make the ``UNSTABLE`` cases pass one of their two samples and ``STEADY`` pass both."""
    for arm, cases in UNSTABLE.items():
        condition = arm.rsplit("/", 1)[1]
        for case, card in cases.items():
            answer_with(cassette(project, case, "prose", condition), card, (0,))
    case, card = STEADY
    answer_with(cassette(project, case, "prose", "schema"), card, (0, 1))


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


@pytest.mark.usefixtures("wide_terminal")
def test_one_of_two_passes_the_unstable_cases_and_shows_pass_k(recorded: pytest.Pytester) -> None:
    unsettle(recorded)
    # Under the suite's default rule (every sample must pass) an unstable case fails.
    _, data = report(recorded, "-k", "schema and (facts or codeblock)")
    assert statuses(data) == {(SCHEMA, "facts"): "failed", (SCHEMA, "codeblock"): "failed"}
    suite_with(recorded, "samples: 2\n", "samples: 2\nat_least: 1\n")
    result, data = report(recorded)
    found = statuses(data)
    for arm, cases in UNSTABLE.items():
        for case in cases:
            assert found[(arm, case)] == "passed", (arm, case)
    # They passed where the baseline (every sample must pass) failed them: gains, not errors.
    # The 7 passes are the negative control's, on every arm but prose/schema (shipped data);
    # the 4 gains are the three unstable cases and date of prose/schema.
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=7, xfailed=189, xpassed=4)
    head = next(line for line in result.stdout.lines if re.match(r"gate +channel ", line))
    assert head.split()[3:6] == ["passed", "samples", "pass^k"]
    schema = next(a for a in data["arms"] if a["condition"] == "schema" and a["channel"] == "prose")
    # 1 of 2 passes codeblock, facts and date; only date passed every sample (pass^k).
    assert schema["passed"] == 3 and schema["intervals"]["pass_all"]["count"] == 1
    assert schema["cases"]["facts"]["at_least"] == 1
    # --samples 1 asks one sample: the rule is capped at it (1 of 1). Sample 1 is the one
    # that passes, so facts passes, under no at_least of its own.
    result, data = report(recorded, "--cardprobe-samples", "1", "-k", "facts and schema")
    assert statuses(data)[(SCHEMA, "facts")] == "passed"
    assert "at_least" not in data["tests"][0]


def test_a_case_rule_beats_the_suite_rule(recorded: pytest.Pytester) -> None:
    # facts and codeblock each pass one of their two samples; only facts says 1 of 2 is enough.
    unsettle(recorded)
    suite_with(recorded, "  - id: facts\n", "  - id: facts\n    at_least: 1\n")
    _, data = report(recorded, "-k", "schema and (facts or codeblock)")
    assert statuses(data) == {(SCHEMA, "facts"): "passed", (SCHEMA, "codeblock"): "failed"}
    cases = next(a for a in data["arms"] if a["condition"] == "schema")["cases"]
    assert [cases[c]["samples_passed"] for c in ("facts", "codeblock")] == [1, 1]


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
