"""Extension points of pytest-cardprobe (registered in ``pytest_addhooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_cardprobe.judge.registry import Judge
    from pytest_cardprobe.suite.matrix import Probe
    from pytest_cardprobe.types import ChatRequest


@pytest.hookspec(firstresult=True)
def pytest_cardprobe_get_judge(name: str, config: pytest.Config) -> Judge | None:
    """Return the judge called ``name`` (a suite's ``judge:`` key), or None to pass."""


@pytest.hookspec
def pytest_cardprobe_adjust_request(
    request: ChatRequest, probe: Probe | None, config: pytest.Config
) -> None:
    """Edit ``request`` in place just before it is sent (or matched against a cassette).

    Called for every request of a suite's probe and of a fixture call probe
    (``cardprobe.ask(..., expect=...)``), in a tool loop before every turn's request; a
    fixture's card ask (no ``expect=``) is sent as the test wrote it. Each request given to
    the hook is its own (its messages, tools and options are copies), so an edit made in
    place is not seen by the next request it is given: a later turn, retry or test.
    """


@pytest.hookspec
def pytest_cardprobe_report(report: dict[str, Any], config: pytest.Config) -> None:
    """Receive the final JSON-able report (scoreboard, gate decision) on the controller."""
