"""The bodies of the plugin's hooks (``plugin.py`` keeps one delegating line per hook): options,
collection, the samples marker, result transport, session end. Each function is named after
its hook without the ``pytest_`` prefix; a wrapper hook's is a generator, delegated to with
``yield from``.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cardprobe.files import MB
from pytest_cardprobe.glue import options, progress
from pytest_cardprobe.glue.failure import describe
from pytest_cardprobe.glue.fixture import Cardprobe
from pytest_cardprobe.glue.hints import update_command
from pytest_cardprobe.glue.items import (
    MARKER,
    ProbeItem,
    SuiteFile,
    builtin_suite_files,
)
from pytest_cardprobe.glue.markers import marker_rule, marker_samples
from pytest_cardprobe.glue.roles import is_controller, is_worker
from pytest_cardprobe.glue.state import STATE_KEY, CardprobeState, get_state
from pytest_cardprobe.glue.transport import (
    REPORT_ATTR,
    QuietReplayFailures,
    ResultCollector,
    XdistHooks,
    show_against_baseline,
)
from pytest_cardprobe.text import escape_control
from pytest_cardprobe.types import ProbeResult, Status

if TYPE_CHECKING:
    from pytest_cardprobe.run.settings import Settings

#: Where a test's ``cardprobe`` fixture keeps its probe (read by runtest_makereport).
FIXTURE_KEY = pytest.StashKey[Any]()


def addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Options and ini keys (the table in glue/option_table.py)."""
    options.add_options(parser, pluginmanager)


def cmdline_main(config: pytest.Config) -> int | None:
    """``--cardprobe-suite list``: print the built-in suites, one per line, and stop."""
    from pytest_cardprobe.suite.builtin import BUILTIN_SUITES, LIST_WORD, describe_builtin

    if LIST_WORD not in (config.option.cardprobe_suites or ()):
        return None
    from pytest_cardprobe.judge.registry import BUILTIN_JUDGES

    for name in sorted(BUILTIN_SUITES):
        print(describe_builtin(name, BUILTIN_JUDGES))
    return 0


def configure(config: pytest.Config) -> None:
    """Register the marker and create the session state."""
    config.addinivalue_line(
        "markers",
        "samples(n, at_least=k): ask the model n times; pass when at least k (default n) pass",
    )
    config.addinivalue_line(
        "markers",
        f"{MARKER}: a cardprobe probe (a suite's test, or a test using the cardprobe fixture); "
        f'-m "not {MARKER}" runs a project\'s own tests only, -m {MARKER} the probes only',
    )
    state = CardprobeState(config, options.resolve_settings(config))
    _filter_library_logs(state.settings)
    if not (config.option.help or config.option.version):
        problems = state.read_baselines()
        if not is_worker(config):
            from pytest_cardprobe.glue.guard import check_outputs

            problems += check_outputs(config, state.settings)
        if problems:
            raise pytest.UsageError("\n".join(problems))
    config.stash[STATE_KEY] = state
    if not is_worker(config):
        config.pluginmanager.register(ResultCollector(state), "cardprobe-results")
        config.pluginmanager.register(QuietReplayFailures(state), "cardprobe-quiet-replay")
        progress.register(config, state)  # live runs: cost, progress, spent (glue/progress.py)
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(XdistHooks(state), "cardprobe-xdist")


def report_header(config: pytest.Config) -> list[str] | None:
    """At the start of a run that probes: one line (replay or record, the baseline in force),
    then what the run did with the sources suites name."""
    from pytest_cardprobe.glue.sources import header

    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    lines = header(state.sources) if state.sources_read is not None else []
    if state.settings.models or state.settings.suites:
        lines[0:0] = progress.header_lines(escape_control(state.header()), config)
    return lines or None


def _filter_library_logs(settings: Settings) -> None:
    """No credential in httpx's or vcrpy's log lines (``--log-level=INFO``, ``log_cli``)."""
    from pytest_cardprobe.wire.logfilter import install
    from pytest_cardprobe.wire.redact import run_secrets

    install(run_secrets(settings))


def sessionstart(session: pytest.Session) -> None:
    """Read the sources suites name (python:, mcp:) before the header and before xdist's
    workers start, so each is read once per run and the header can say how it went."""
    from pytest_cardprobe.glue.items import suite_files_under
    from pytest_cardprobe.glue.sources import read_early
    from pytest_cardprobe.suite.loader import load_suite

    config, state = session.config, get_state(session.config)
    args = list(config.args) or [str(config.rootpath)]
    read_early(
        config,
        suite_files_under(args, Path(str(config.invocation_params.dir)), config),
        lambda path: load_suite(
            path, known_judges=state.judge_names(), limits=state.limits, sources=state.sources
        ),
        int(state.settings.max_file_mb * MB),
    )


def unconfigure(config: pytest.Config) -> None:
    """Close the connection pool."""
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
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


def make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Built-in suites join the session's top-level collectors, wherever pytest was started."""
    report = yield
    if isinstance(collector, pytest.Session) and report.passed:
        names = get_state(collector.config).settings.suites
        if names:
            report.result.extend(builtin_suite_files(collector, names))
    return report


def collection(session: pytest.Session) -> None:
    """Under xdist the controller collects nothing; check suites here so a bad one stops the run."""
    config = session.config
    if not is_controller(config):
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


def collection_finish(session: pytest.Session) -> None:
    """Without xdist: check servers and models once, before the first selected probe test."""
    config = session.config
    if is_worker(config) or is_controller(config):
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


def collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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


def itemcollected(item: pytest.Item) -> None:
    """A Python test that uses the ``cardprobe`` fixture is a probe too: it gets the marker
    (before ``-m`` deselects, which happens after collection)."""
    if MARKER in getattr(item, "fixturenames", ()) and item.get_closest_marker(MARKER) is None:
        item.add_marker(MARKER)


def pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
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
            lines.append(describe(probe.result(Status.FAILED), full=full))
        pytest.fail(escape_control("\n".join(lines), keep_newlines=True), pytrace=False)
    return True


def runtest_makereport(
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
            show_against_baseline(report, item.shown)
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
            result = probe.result(Status.PASSED if report.passed else Status.FAILED)
    if result is not None:
        # The object itself: it becomes plain data only if the report leaves this process.
        setattr(report, REPORT_ATTR, result)
    return report


def report_to_serializable(
    config: pytest.Config, report: pytest.TestReport
) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
    """An xdist worker's report carries its result as plain data."""
    data = yield
    result = getattr(report, REPORT_ATTR, None)
    if data is not None and isinstance(result, ProbeResult):
        data[REPORT_ATTR] = result.to_dict()
    return data


def report_from_serializable(
    config: pytest.Config, data: dict[str, Any]
) -> Generator[None, Any, Any]:
    """The controller turns a worker's plain data back into the result."""
    report = yield
    found = getattr(report, REPORT_ATTR, None)
    if isinstance(found, dict):
        setattr(report, REPORT_ATTR, ProbeResult.from_dict(found))
    return report


def sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Controller: score, gate, write reports, and fail the run on a regression."""
    config = session.config
    if is_worker(config):
        return
    from pytest_cardprobe.glue.internal import internal_report
    from pytest_cardprobe.glue.session import finish
    from pytest_cardprobe.wire.redact import run_secrets

    state = get_state(config)
    if state.sources_read is not None:
        from pytest_cardprobe.glue.sources import write_snapshots

        write_snapshots(session, state.sources, exitstatus)
    try:
        finish(session, state)
    except Exception as exc:
        # A bug at the session end: said in one secret-free report, not an INTERNALERROR dump.
        state.summary = internal_report(exc, run_secrets(state.settings)).splitlines()
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


def terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print the scoreboard and the gate (never on workers, only when there is something to say)."""
    if is_worker(config):
        return
    from pytest_cardprobe.glue.transport import restore
    from pytest_cardprobe.score.layout import wrap
    from pytest_cardprobe.score.report import block_lines, scoreboard_lines

    state = get_state(config)
    restore(state, terminalreporter)  # FAILED lines for tests that could not replay
    if state.notice:
        terminalreporter.write_sep("=", "cardprobe")
        for line in state.notice.splitlines():
            terminalreporter.write_line(escape_control(line))
    # A verdict against the base (or what an update accepted) leads; other blocks follow.
    lead = [b for b in state.blocks if b.lead]
    # pytest's own writer knows the terminal's width (COLUMNS, else the terminal's). The
    # blocks are not wrapped: their lines end in commands to copy whole.
    width = config.get_terminal_writer().fullwidth
    lines = block_lines(lead)[1:]
    lines += ([""] if lines else []) + scoreboard_lines(
        state.arms,
        state.gate,
        config.get_verbosity(),
        width=width,
        update_command=update_command(config.invocation_params.args),
    )
    # The notes are prose (why the run exits as it does): wrapped like the board above them.
    # A problem (ERROR:, warning:) names a file: kept on one line, like the blocks' commands.
    for note in state.summary:
        lines += [note] if note.startswith(("ERROR: ", "warning: ")) else wrap(note, width)
    lines += block_lines([b for b in state.blocks if not b.lead])
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        return
    terminalreporter.write_sep("=", "cardprobe scoreboard")
    for line in lines:
        # Labels can quote what a model wrote (element types, JSON errors): keep them inert.
        terminalreporter.write_line(escape_control(line))
