"""Numbers that are not finite in what replay, the gate and ``diff`` read (a recorded reply,
the baseline, a JSON report): a clear error naming the file, never a crash."""

from __future__ import annotations

import sys

import pytest
import yaml
from cardprobe_testing import cassette, report

ONE = ("-k", "date and prose and cold")


def test_a_recorded_number_that_overflows_a_float_is_a_corrupt_cassette(
    recorded: pytest.Pytester,
) -> None:
    path = cassette(recorded, "date", "prose", "cold")
    data = yaml.safe_load(path.read_text())
    body = data["interactions"][0]["response"]["body"]
    assert '"eval_count":' in body["string"]
    body["string"] = body["string"].replace('"eval_count":', '"eval_count":1e999,"x":', 1)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result, data = report(recorded, *ONE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*corrupt cassette*date-prose-cold.yaml*overflows a float*"])
    assert data["gate"] is not None  # the session ended and wrote its report


@pytest.mark.parametrize("bad", ["NaN", "1e999", "-Infinity"])
def test_a_baseline_number_that_is_not_finite_is_a_usage_error(
    recorded: pytest.Pytester, bad: str
) -> None:
    path = recorded.path / "cardprobe-baseline.json"
    path.write_text(path.read_text().replace('"calls": 50', f'"calls": {bad}', 1))
    result = recorded.runpytest("-p", "no:cacheprovider", "cases", *ONE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*baseline*cardprobe-baseline.json is not valid JSON*"])


def test_diff_refuses_a_report_with_a_number_that_is_not_finite(
    recorded: pytest.Pytester,
) -> None:
    _, data = report(recorded, *ONE)
    good = recorded.path / "report.json"
    bad = recorded.path / "bad.json"
    bad.write_text(good.read_text().replace('"passed": 0', '"passed": NaN', 1))
    result = recorded.run(sys.executable, "-m", "pytest_cardprobe", "diff", good, bad)
    assert result.ret == 2
    result.stderr.fnmatch_lines(["error: cannot read *bad.json: NaN is not a JSON number"])
    assert data["tests"]
