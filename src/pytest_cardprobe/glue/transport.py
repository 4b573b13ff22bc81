"""Results riding on pytest's reports: shown against the baseline where the test ran,
collected on the controller, and the xdist events that leave a test without one."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_cardprobe.glue.state import CardprobeState
from pytest_cardprobe.score.outcome import ACCEPTED, FLIP, GAIN, KNOWN, Outcome
from pytest_cardprobe.types import ProbeResult

#: The attribute of a call report that carries the test's ProbeResult.
REPORT_ATTR = "cardprobe"
#: Replay problems shown as one line per test and one block for the run (glue/replaying.py;
#: a corrupt cassette keeps its own paragraph: each is different).
QUIET = ("not recorded", "stale")


def show_against_baseline(report: pytest.TestReport, outcome: Outcome | None) -> None:
    """Turn a known failure into xfailed, a gain into XPASS, and mark a flip as one.

    ``outcome`` was decided where the test ran (:meth:`ProbeItem.runtest`, through
    ``score/outcome.score_result``, which noted its word on the result too).
    """
    if outcome is None:
        return
    if outcome.kind in (KNOWN, ACCEPTED):
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

    def pytest_configure_node(self, node: Any) -> None:
        """Each worker gets the sources the controller read at session start."""
        from pytest_cardprobe.glue.sources import hand_to_worker

        hand_to_worker(self.state.sources, node)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker that died is reported and fails the run."""
        if error:
            self.state.crashed_workers.append(f"{node.gateway.id}: {error}")


def quiet(report: Any) -> bool:
    """A failed call report of a test that could not replay for want of a fitting recording."""
    result = getattr(report, REPORT_ATTR, None)
    return (
        getattr(report, "when", None) == "call"
        and getattr(result, "problem", None) in QUIET
        and bool(getattr(report, "failed", False))
    )


class QuietReplayFailures:
    """Keeps tests that could not replay out of pytest's FAILURES section (controller only).

    Below ``-vv``, which shows each test's own paragraph (its cassette and the command that
    records it alone). Outermost around the terminal reporter's own summary: their reports
    are set aside before
    it prints FAILURES and put back (by :func:`restore`, from cardprobe's own terminal
    summary) before it prints the short summary, so each still has its ``FAILED`` line and
    counts among the failed in the last line.
    """

    def __init__(self, state: CardprobeState) -> None:
        self.state = state

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(
        self, terminalreporter: Any, config: pytest.Config
    ) -> Generator[None, None, None]:
        failed = terminalreporter.stats.get("failed")
        # -vv shows every test's own paragraph (its cassette, its re-record command).
        if failed and config.get_verbosity() < 2:
            self.state.set_aside = [r for r in failed if quiet(r)]
            failed[:] = [r for r in failed if not quiet(r)]
        try:
            return (yield)
        finally:
            restore(self.state, terminalreporter)


def restore(state: CardprobeState, terminalreporter: Any) -> None:
    """Put the reports :class:`QuietReplayFailures` set aside back among the failed."""
    if state.set_aside:
        terminalreporter.stats.setdefault("failed", []).extend(state.set_aside)
        state.set_aside = []
