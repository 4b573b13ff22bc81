"""The pytest entry point (``pytest11``): each hook is one line that hands its arguments to
``glue/hooks.py``, where its body lives; the ``cardprobe`` fixture is defined here.

No judging and no HTTP here; each job lives in the module of its pipeline stage.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe import hookspecs
from pytest_cardprobe.glue import hooks
from pytest_cardprobe.glue.fixture import Cardprobe
from pytest_cardprobe.glue.hooks import FIXTURE_KEY
from pytest_cardprobe.glue.state import get_state


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)  # the entry point's own job


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    hooks.addoption(parser, pluginmanager)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    return hooks.cmdline_main(config)


def pytest_configure(config: pytest.Config) -> None:
    hooks.configure(config)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    return hooks.report_header(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    hooks.sessionstart(session)


def pytest_unconfigure(config: pytest.Config) -> None:
    hooks.unconfigure(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return hooks.collect_file(file_path, parent)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    return (yield from hooks.make_collect_report(collector))


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    hooks.collection(session)


def pytest_collection_finish(session: pytest.Session) -> None:
    hooks.collection_finish(session)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    hooks.collection_modifyitems(config, items)


def pytest_itemcollected(item: pytest.Item) -> None:
    hooks.itemcollected(item)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    return hooks.pyfunc_call(pyfuncitem)


@pytest.fixture
def cardprobe(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Ask a model from a Python test: ``cardprobe.ask(messages, tools=..., accept=...)``."""
    state = get_state(request.config)
    models = state.settings.models
    first = models[0] if models else None
    nodeid = request.node.nodeid
    hint = state.rerecord_hint(nodeid, first) if first else None
    probe = Cardprobe(state.runtime, nodeid, first, state.limits, rerecord=hint)
    request.node.stash[FIXTURE_KEY] = probe
    try:
        yield probe
    finally:
        probe.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    return (yield from hooks.runtest_makereport(item, call))


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(
    config: pytest.Config, report: pytest.TestReport
) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
    return (yield from hooks.report_to_serializable(config, report))


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(
    config: pytest.Config, data: dict[str, Any]
) -> Generator[None, Any, Any]:
    return (yield from hooks.report_from_serializable(config, data))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    hooks.sessionfinish(session, exitstatus)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    hooks.terminal_summary(terminalreporter, exitstatus, config)
