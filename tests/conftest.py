"""Shared settings for pytest-cardprobe's own tests (the live-server fixtures are in
tests/live/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

#: Fixture projects (suites with their recordings) that tests copy and run, never collected
#: as part of this project: their suites share the shipped suites' names.
collect_ignore = ["data"]


# The `live` marker's rule holds wherever a `live` test is written, so it stays here rather
# than beside the fixtures in tests/live/conftest.py.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CARDPROBE_REQUIRE_LIVE=1 a `live` test that skips, for whatever reason, fails."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if (
        report.skipped
        and os.environ.get("CARDPROBE_REQUIRE_LIVE") == "1"
        and item.get_closest_marker("live") is not None
        and not hasattr(report, "wasxfail")
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"live test skipped under CARDPROBE_REQUIRE_LIVE=1: {reason}"
