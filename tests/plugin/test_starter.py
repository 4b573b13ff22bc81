"""A project set up by ``python -m pytest_cardprobe init`` runs under pytest as written."""

from __future__ import annotations

import pytest

from pytest_cardprobe.cli.init import run
from pytest_cardprobe.cli.starter import STARTER_DIR, STARTER_SUITE


def test_a_fresh_starter_errors_not_recorded_per_test_without_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    assert run(pytester.path, ["tiny:1b"], force=False) == 0
    result = pytester.runpytest("-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("FAILED ")]
    # Five cases x two channels x two conditions, each one "not recorded" with its command.
    assert len(ids) == 23  # 5 card cases x 4 arms + 3 call cases x 1
    result.stdout.fnmatch_lines(
        [
            f"not recorded — run with --live to record it: pytest --live --model tiny:1b "
            f"'{STARTER_DIR}/{STARTER_SUITE}.yaml::meeting_day[[]tiny:1b-prose-cold[]]'"
            " (no cassette *"
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
