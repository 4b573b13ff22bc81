"""pytest glue: options, collection, the samples marker, result transport, session end.

No judging and no HTTP here; each job lives in the module of its pipeline stage.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cardprobe.files import MB
from pytest_cardprobe.glue import options
from pytest_cardprobe.glue.failure import describe
from pytest_cardprobe.glue.fixture import Cardprobe
from pytest_cardprobe.glue.items import (
    ProbeItem,
    SuiteFile,
    builtin_suite_files,
    marker_rule,
    marker_samples,
)
from pytest_cardprobe.glue.state import STATE_KEY, CardprobeState, get_state
from pytest_cardprobe.glue.transport import (
    REPORT_ATTR,
    ResultCollector,
    XdistHooks,
    show_against_baseline,
)
from pytest_cardprobe.types import ProbeResult, escape_control

if TYPE_CHECKING:
    from pytest_cardprobe.run.settings import Settings


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register cardprobe's hookspecs."""
    from pytest_cardprobe import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Options and ini keys (the table in glue/option_table.py)."""
    options.add_options(parser, pluginmanager)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--cardprobe-suite list``: print the built-in suites, one per line, and stop."""
    from pytest_cardprobe.suite.builtin import BUILTIN_SUITES, LIST_WORD, describe_builtin

    if LIST_WORD not in (config.option.cardprobe_suites or ()):
        return None
    from pytest_cardprobe.judge.registry import BUILTIN_JUDGES

    for name in sorted(BUILTIN_SUITES):
        print(describe_builtin(name, BUILTIN_JUDGES))
    return 0


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and create the session state."""
    config.addinivalue_line(
        "markers",
        "samples(n, at_least=k): ask the model n times; pass when at least k (default n) pass",
    )
    state = CardprobeState(config, options.resolve_settings(config))
    _filter_library_logs(state.settings)
    if not (config.option.help or config.option.version):
        problems = read_baseline(state)
        if not hasattr(config, "workerinput"):
            from pytest_cardprobe.glue.guard import check_outputs

            problems += check_outputs(config, state.settings)
        if problems:
            raise pytest.UsageError("\n".join(problems))
    config.stash[STATE_KEY] = state
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(ResultCollector(state), "cardprobe-results")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(XdistHooks(state), "cardprobe-xdist")


def _filter_library_logs(settings: Settings) -> None:
    """No credential in httpx's or vcrpy's log lines (``--log-level=INFO``, ``log_cli``)."""
    from pytest_cardprobe.wire.logfilter import install, run_secrets

    install(run_secrets(settings.headers, settings.api_key, settings.servers))


def read_baseline(state: CardprobeState) -> list[str]:
    """Read the baseline before any test runs; the problem (naming file and key), if any.

    This is the only place the baseline is read and checked. Every process reads it (xdist
    workers too): outcomes are decided where a test ran. ``--cardprobe-update-baseline`` replaces a
    broken file, so there the problem is a note, not a usage error.
    """
    from pytest_cardprobe.score.baseline import BaselineError, load_baseline

    settings = state.settings
    try:
        state.baseline = load_baseline(settings.baseline, int(settings.max_file_mb * MB))
    except BaselineError as exc:
        if not settings.update_baseline:
            return [f"{exc} (--cardprobe-baseline / ini cardprobe_baseline)"]
        state.baseline_notes.append(f"replacing a baseline that could not be read: {exc}")
    return []


def pytest_unconfigure(config: pytest.Config) -> None:
    """Close the connection pool."""
    state = config.stash.get(STATE_KEY, None)
    if state is not None and state._runtime is not None:
        state._runtime.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """YAML files whose top-level mapping has ``cardprobe: 1`` are suites."""
    from pytest_cardprobe.suite.loader import is_suite_file

    if file_path.suffix.lower() in (".yaml", ".yml") and is_suite_file(
        file_path, int(get_state(parent.config).settings.max_file_mb * MB)
    ):
        if file_path.resolve() in get_state(parent.config).builtin_files:
            return (
                None  # the same file is in the run as a built-in suite (this repository's cases/)
            )
        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Built-in suites join the session's top-level collectors, wherever pytest was started."""
    report = yield
    if isinstance(collector, pytest.Session) and report.passed:
        names = get_state(collector.config).settings.suites
        if names:
            report.result.extend(builtin_suite_files(collector, names))
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Under xdist the controller collects nothing; check suites here so a bad one stops the run."""
    config = session.config
    if hasattr(config, "workerinput") or getattr(config.option, "dist", "no") == "no":
        return
    from pytest_cardprobe.glue.items import preflight_errors, suite_files_under

    args = list(config.args) or [str(config.rootpath)]
    state = get_state(config)
    errors = preflight_errors(state, args, Path(str(config.invocation_params.dir)), config)
    errors += state.recording_clashes()
    if errors:
        raise pytest.UsageError("\n".join(errors))
    if any(True for _ in suite_files_under(args, Path(str(config.invocation_params.dir)), config)):
        from pytest_cardprobe.run import preflight

        # Workers collect; the controller checks the servers once for all of them.
        preflight.check(state.settings, bool(config.option.collectonly))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Without xdist: check servers and models once, before the first selected probe test."""
    config = session.config
    if hasattr(config, "workerinput") or getattr(config.option, "dist", "no") != "no":
        return
    if any(isinstance(item, ProbeItem) for item in session.items):
        from pytest_cardprobe.run import preflight

        state = get_state(config)
        if state.collect_errors:
            # pytest calls this hook even when collection stopped on them: theirs is the
            # error to show, and no server is asked before a suite is right.
            return
        problems = state.recording_clashes()
        if problems:
            raise pytest.UsageError("\n".join(problems))
        preflight.check(state.settings, bool(config.option.collectonly))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stop before running anything when a suite or a samples marker is wrong; order the
    probe tests and give each its lane's server.

    Last, so that lanes are cut from the tests that will run: ``-k``, ``-m``,
    ``--deselect`` and ``--lf`` deselect in this same hook, and a lane built before them
    could leave a server with nothing to do.
    """
    state = get_state(config)
    if state.collect_errors:
        raise pytest.UsageError("\n".join(state.collect_errors))
    for item in items:
        marker_samples(item)
    if state.settings.live:
        # Only a live run's order matters (one model load each, the prompt-prefix cache);
        # replay keeps the collection order, or whatever order another plugin chose.
        from pytest_cardprobe.glue.schedule import order_probes

        order_probes(state, items)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a ``samples(n, at_least=k)`` test body n times; pass when k (default n) runs pass."""
    rule = marker_rule(pyfuncitem)
    if rule is None:
        return None
    n = get_state(pyfuncitem.config).settings.samples or rule[0]
    need = min(rule[1] or n, n)  # --samples caps the rule
    found = pyfuncitem.funcargs.get("cardprobe")
    probe = found if isinstance(found, Cardprobe) else None
    # The same argument selection pytest's own pytest_pyfunc_call makes.
    kwargs = {a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames}
    failures: list[str] = []
    for run in range(n):
        if probe is not None:
            probe.run = run
        try:
            pyfuncitem.obj(**kwargs)
        except (Exception, pytest.fail.Exception) as exc:
            failures.append(f"run {run + 1}/{n}: {type(exc).__name__}: {exc}".rstrip())
    if n - len(failures) < need:
        rule_text = f" (at least {need} must pass)" if need < n else ""
        first = failures[0].splitlines()[0]
        lines = [f"{len(failures)} of {n} samples failed{rule_text}; {first}", *failures]
        if probe is not None and probe.samples:
            full = pyfuncitem.config.get_verbosity() >= 2
            lines.append(describe(probe.result("failed"), full=full))
        pytest.fail(escape_control("\n".join(lines), keep_newlines=True), pytrace=False)
    return True


@pytest.fixture
def cardprobe(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Ask a model from a Python test: ``cardprobe.ask(messages, tools=..., accept=...)``."""
    state = get_state(request.config)
    models = state.settings.models
    probe = Cardprobe(state.runtime, request.node.nodeid, models[0] if models else None)
    request.node.stash[FIXTURE_KEY] = probe
    try:
        yield probe
    finally:
        probe.close()


FIXTURE_KEY = pytest.StashKey[Any]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the test's result and show it against the baseline.

    Runs where the test ran (an xdist worker included); the outcome and the result travel
    with the report to the controller (as plain data when they leave a worker).
    """
    report = yield
    if call.when != "call":
        return report
    result: ProbeResult | None = None
    if isinstance(item, ProbeItem):
        result = item.result
        if result is not None:
            show_against_baseline(report, result, item.shown)
            # item.user_properties reach --junitxml (through the teardown report) and xdist.
            for key, value in (
                ("arm", result.arm_id),
                ("routes", " ".join(s.route or "-" for s in result.samples)),
                ("labels", " | ".join(s.label for s in result.samples)),
            ):
                item.user_properties.append((f"cardprobe.{key}", value))
    else:
        probe = item.stash.get(FIXTURE_KEY, None)
        if probe is not None and probe.samples:
            result = probe.result("passed" if report.passed else "failed")
    if result is not None:
        # The object itself: it becomes plain data only if the report leaves this process.
        setattr(report, REPORT_ATTR, result)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(
    config: pytest.Config, report: pytest.TestReport
) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
    """An xdist worker's report carries its result as plain data."""
    data = yield
    result = getattr(report, REPORT_ATTR, None)
    if data is not None and isinstance(result, ProbeResult):
        data[REPORT_ATTR] = result.to_dict()
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(
    config: pytest.Config, data: dict[str, Any]
) -> Generator[None, Any, Any]:
    """The controller turns a worker's plain data back into the result."""
    report = yield
    found = getattr(report, REPORT_ATTR, None)
    if isinstance(found, dict):
        setattr(report, REPORT_ATTR, ProbeResult.from_dict(found))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Controller: score, gate, write reports, and fail the run on a regression."""
    config = session.config
    if hasattr(config, "workerinput"):
        return
    from pytest_cardprobe.glue.internal import internal_report, run_secrets
    from pytest_cardprobe.glue.session import finish

    state = get_state(config)
    try:
        finish(session, state)
    except Exception as exc:
        # A bug at the session end: said in one secret-free report, not an INTERNALERROR dump.
        state.summary = internal_report(exc, run_secrets(state.settings)).splitlines()
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print the scoreboard and the gate (never on workers, only when there is something to say)."""
    if hasattr(config, "workerinput"):
        return
    from pytest_cardprobe.score.report import scoreboard_lines

    state = get_state(config)
    if state.notice:
        terminalreporter.write_sep("=", "cardprobe")
        terminalreporter.write_line(escape_control(state.notice))
    lines = scoreboard_lines(state.arms, state.gate, config.get_verbosity()) + state.summary
    if not lines:
        return
    terminalreporter.write_sep("=", "cardprobe scoreboard")
    for line in lines:
        # Labels can quote what a model wrote (element types, JSON errors): keep them inert.
        terminalreporter.write_line(escape_control(line))
