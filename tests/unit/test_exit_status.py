"""The exit rule: pytest's status with the gate added; lowered only for flips within the floor."""

from __future__ import annotations

import pytest

from pytest_cardprobe.glue.session import Failures, exit_status
from pytest_cardprobe.score.gate import Gate

OK, FAILED = pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED
PASSING, FAILING = Gate("pass", 1), Gate("fail", 1)
NONE = Failures(flips=0, unbaselined=0, errors=0, others=0, crashed=0)
FLIPS = Failures(flips=1, unbaselined=0, errors=0, others=0, crashed=0)


@pytest.mark.parametrize(
    ("status", "gate", "failures", "updating", "want"),
    [
        (OK, PASSING, NONE, False, OK),
        (OK, FAILING, NONE, False, FAILED),  # the gate is added to a green run
        (OK, Gate("inconclusive", 1), NONE, False, FAILED),
        (OK, PASSING, Failures(0, 0, 0, 0, 1), False, FAILED),  # a crashed worker
        (FAILED, PASSING, FLIPS, False, OK),  # every failure a flip within the floor
        (FAILED, FAILING, FLIPS, False, FAILED),  # flips beyond the floor
        (FAILED, PASSING, Failures(1, 0, 1, 0, 0), False, FAILED),  # plus a stale cassette
        (FAILED, PASSING, Failures(1, 0, 0, 1, 0), False, FAILED),  # plus an ordinary test
        (FAILED, PASSING, Failures(0, 3, 0, 0, 0), False, FAILED),  # no baseline: not forgiven
        (FAILED, Gate("updated", 1), Failures(1, 3, 0, 0, 0), True, OK),  # being recorded
        (FAILED, None, NONE, False, FAILED),  # no probe ran: pytest's own status
        (pytest.ExitCode.INTERRUPTED, FAILING, NONE, False, pytest.ExitCode.INTERRUPTED),
        (pytest.ExitCode.USAGE_ERROR, PASSING, FLIPS, False, pytest.ExitCode.USAGE_ERROR),
    ],
)
def test_exit_status(
    status: int, gate: Gate | None, failures: Failures, updating: bool, want: int
) -> None:
    assert exit_status(status, gate, failures, updating) == want
