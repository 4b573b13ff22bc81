"""Results riding on pytest's reports: shown against the baseline where the test ran,
collected on the controller, and the xdist events that leave a test without one."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cardprobe.glue.state import CardprobeState
from pytest_cardprobe.score.outcome import FLIP, GAIN, KNOWN, Outcome
from pytest_cardprobe.types import ProbeResult

#: The attribute of a call report that carries the test's ProbeResult.
REPORT_ATTR = "cardprobe"


def show_against_baseline(
    report: pytest.TestReport, result: ProbeResult, outcome: Outcome | None
) -> None:
    """Turn a known failure into xfailed, a gain into XPASS, and mark a flip as one.

    ``outcome`` was decided where the test ran (:meth:`ProbeItem.runtest`).
    """
    if outcome is None:
        return
    result.outcome = outcome.kind
    if outcome.kind == KNOWN:
        # What pytest's own xfail does; the reason stands in for the long failure report.
        report.outcome, report.longrepr = "skipped", outcome.reason
        report.wasxfail = outcome.reason
    elif outcome.kind == GAIN:
        report.wasxfail = outcome.reason
    elif outcome.kind == FLIP:
        report.longrepr = f"{outcome.reason}\n{report.longrepr}"


class ResultCollector:
    """Controller side: collect results from this process's reports or from xdist workers."""

    def __init__(self, state: CardprobeState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the result riding on each call report; note failures that carry none."""
        result = getattr(report, REPORT_ATTR, None)
        if isinstance(result, ProbeResult) and report.when == "call":
            self.state.results.append(result)
        elif report.failed:
            # A failure that is not model behaviour: a plain test, a setup error, a crash.
            self.state.other_failures.append(report.nodeid)


class XdistHooks:
    """Hooks that only exist when pytest-xdist is installed."""

    def __init__(self, state: CardprobeState) -> None:
        self.state = state

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Live runs with xdist's default ``load`` hand out whole lanes (see schedule.py)."""
        if not self.state.settings.live or config.getvalue("dist") != "load":
            return None
        from pytest_cardprobe.glue.schedule import make_lane_scheduler

        return make_lane_scheduler(config, log, self.state.lanes)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker that died is reported and fails the run."""
        if error:
            self.state.crashed_workers.append(f"{node.gateway.id}: {error}")
