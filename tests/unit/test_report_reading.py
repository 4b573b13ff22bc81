"""Reading a JSON report back (``diff``, ``score/resultread``): a field of the wrong type or
a figure no float holds is one error naming the file and the key.

Each test here pins an example a fuzz test (tests/fuzz) found; each failed before the fix
its docstring names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from probing import (
    tool_results,
)

# --------------------------------------------------------------------------- score/


def _report_with(tmp_path: Path, edit: Any) -> tuple[int, str]:
    """``diff`` of the shipped replay's JSON report against itself edited by ``edit``."""
    import contextlib
    import io

    from pytest_cardprobe.cli import diff
    from pytest_cardprobe.score.aggregate import aggregate
    from pytest_cardprobe.score.gate import GateSettings, decide
    from pytest_cardprobe.score.jsonreport import json_report

    results = tool_results()
    arms = aggregate(results)
    data = json.loads(
        json_report(
            arms, [r.to_dict() for r in results], decide(arms, results, None, GateSettings())
        )
    )
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(data))
    edit(data["tests"][0])
    new.write_text(json.dumps(data))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = diff.main([str(old), str(new)])
    return status, err.getvalue()


def _sample(**fields: Any) -> Any:
    return lambda test: test["samples"][0].update(fields)


def test_diff_refuses_a_report_with_a_figure_of_400_digits(tmp_path: Path) -> None:
    """Found by test_fuzz_scores (a sample's ``figures.generate_s`` of 400 digits, valid
    JSON): ``score/aggregate`` added it to a float, OverflowError. Fixed in
    ``score/resultread``: exit 2, the ``error:`` line naming the file and the key."""
    status, err = _report_with(
        tmp_path, lambda test: test["samples"][0]["figures"].update(generate_s=10**400)
    )
    assert status == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "new.json: tests[0].samples[0].figures: expected an object of numbers a float" in err
    assert "an object of 1" not in err and "0" * 40 not in err  # the number is not printed


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda test: test.update(condition=[]),
         "tests[0].condition: expected a string, got a list"),
        (_sample(label=7), "tests[0].samples[0].label: expected a string, got 7"),
        (_sample(index={}), "tests[0].samples[0].index: expected an integer from 0 to "),
        (_sample(stream={"naive_leak": {}}), "tests[0].samples[0].stream: expected an object of "),
        (_sample(passed=1), "tests[0].samples[0].passed: expected true or false, got 1"),
        (_sample(route="teleport"), "tests[0].samples[0].route: expected one of tool_calls, "),
        (_sample(args_as_string=10**400), "tests[0].samples[0].args_as_string: expected an "
         "integer from 0 to 1,000,000,000 or null, got an integer of 401 digits"),
        (lambda test: test.update(at_least=0), "tests[0].at_least: expected an integer from 1"),
        (lambda test: test.update(status="great"), "tests[0].status: expected one of passed, "),
        (lambda test: test.pop("case"), "tests[0].case: missing"),
        (lambda test: test.update({"\x1b[2Jx": 1}), "tests[0].\\x1b[2Jx: not a key of a test"),
        (lambda test: test.update(samples=["s"]), "tests[0].samples[0]: expected an object"),
    ],
)  # fmt: skip
def test_diff_refuses_a_report_whose_test_has_a_field_of_the_wrong_type(
    tmp_path: Path, edit: Any, said: str
) -> None:
    """Found by test_fuzz_scores (``condition`` a list; also a label that is a number,
    counts that are objects): ``results_of`` built a ProbeResult from it unchecked, and
    aggregate raised TypeError (unhashable list). Fixed in ``score/resultread``: exit 2,
    one ``error:`` line naming the file and the key (control characters escaped)."""
    status, err = _report_with(tmp_path, edit)
    assert status == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "\x1b" not in err, err
    assert f"new.json: {said}" in err
