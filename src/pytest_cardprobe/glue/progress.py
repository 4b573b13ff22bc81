"""What a live run will cost, how far it is and what it spent, on the terminal.

Before the first request: one line with the most requests the run can send, per model and
server (:func:`plan_line`). During the run: a progress line at most every
:data:`EVERY_S` seconds, per request in one process and per test on an xdist controller
(workers cannot write to the terminal), with done/total and failures per model and an
estimate of the time left from the measured time per request (:class:`Progress`). At the
end: the tokens and server time the run's requests spent (:func:`spent_line`).

Plain lines only: never a carriage return, never a colour code (so ``NO_COLOR`` and a CI
log read the same), nothing under ``-q``. Replay runs print nothing of this.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cardprobe.glue.roles import is_worker
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.redact import redact_url

if TYPE_CHECKING:
    from pytest_cardprobe.glue.state import CardprobeState

#: Seconds between two progress lines (a model's last test and the first one always print).
EVERY_S = 10.0


def turns_per_sample(probe: Probe) -> int:
    """The most requests one sample of ``probe`` sends when none fails: a tool loop's turn
    limit, two for the retry channel (prose, then through the tool), else one."""
    case = probe.case
    if probe.suite.is_call_suite:
        return case.max_turns if case.expect is not None and case.expect.multi_turn else 1
    return 2 if probe.channel == "retry" else 1


@dataclass(frozen=True)
class Planned:
    """One test of the run: its model, its server, its samples and its most requests."""

    model: str
    server: str
    samples: int
    most: int


def planned(probe: Probe, samples: int, server: str, retries: int) -> Planned:
    """A test of ``samples`` samples on ``server``; each request may be tried ``retries``
    more times after an infra failure."""
    return Planned(probe.model, server, samples, samples * turns_per_sample(probe) * (1 + retries))


@dataclass
class Plan:
    """The tests a live run will ask, by node id."""

    tests: dict[str, Planned]
    retries: int
    warmup: bool
    #: Tests using the ``cardprobe`` fixture: they ask what their code asks (not counted).
    python_tests: int = 0

    def by_arm(self) -> dict[tuple[str, str], list[Planned]]:
        """The tests per (model, server), in the order they first appear."""
        found: dict[tuple[str, str], list[Planned]] = {}
        for test in self.tests.values():
            found.setdefault((test.model, test.server), []).append(test)
        return found

    def most(self, tests: Sequence[Planned]) -> int:
        """The most requests ``tests`` of one model and server send, its warm-up included."""
        return sum(t.most for t in tests) + (1 if self.warmup and tests else 0)


def plan_line(plan: Plan, mode: str, width: int = 100) -> list[str]:
    """The run's cost before it starts: ``cardprobe: live — at most N requests: ...``, each
    model and server on a line of its own when one line would be wider than ``width``."""
    arms = plan.by_arm()
    total = sum(plan.most(tests) for tests in arms.values())
    parts = [
        f"{model} on {redact_url(server)} ({plan.most(tests)})"
        for (model, server), tests in arms.items()
    ]
    doing = "live" if mode == "rewrite" else f"live (record mode {mode})"
    head = f"cardprobe: {doing} — at most {total} requests:"
    lines = [f"{head} {', '.join(parts)}"]
    if len(lines[0]) > width:
        lines = [head, *(f"  {part}" for part in parts)]
    samples = sum(t.samples for t in plan.tests.values())
    retries = plan.retries
    tries = f"{retries} retr{'y' if retries == 1 else 'ies'} of a failed request"
    tests = len(plan.tests)
    why = [f"{tests} test{'s' * (tests != 1)}, {samples} sample{'s' * (samples != 1)}"]
    why.append(f"an upper bound: tool-loop turns, {tries if retries else 'no retry'}")
    if plan.warmup:
        why[-1] += ", one warm-up per model and server"
    if mode != "rewrite":
        why.append(f"record mode {mode} replays what is recorded already")
    if plan.python_tests:
        why.append(f"{plan.python_tests} Python tests with the cardprobe fixture not counted")
    lines += textwrap.wrap(
        f"({'; '.join(why)})", max(40, width), initial_indent="  ", subsequent_indent="   "
    )
    return lines


def header_lines(line: str, config: pytest.Config) -> list[str]:
    """The run's header line (``CardprobeState.header``) cut at its ``; `` joints to the
    terminal's width, the lines after the first indented (a CI log is 80 or 100 wide)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    width = config.get_terminal_writer().fullwidth if reporter else 100
    lines: list[str] = []
    for part in line.split("; "):
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += f"; {part}"
        else:
            lines.append(f"  {part}" if lines else part)
    # A part wider than the terminal on its own (a long path) is cut at its spaces.
    return [
        cut
        for whole in lines
        for cut in textwrap.wrap(
            whole, width, subsequent_indent="    ", break_long_words=False, drop_whitespace=True
        )
        or [whole]
    ]


def requests_of(result: ProbeResult) -> int:
    """Requests a finished test sent to a server, from its samples (xdist's controller
    sees no request, only the results): a sample asked live carries its wall time."""
    count = 0
    for sample in result.samples:
        if "wall_s" in sample.figures:
            count += (sample.turns or 1) + (1 if sample.retry_of else 0)
        elif sample.failure == "infra":
            count += 1
    return count


def clock_text(seconds: float) -> str:
    """``42s``, ``6m10s``, ``2h05m``."""
    whole = max(1, round(seconds)) if seconds > 0 else 0
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


@dataclass
class Progress:
    """Done/total per model, failures, requests and the time left; pure (clock given)."""

    plan: Plan
    started: float
    every: float = EVERY_S
    done: dict[str, bool] = field(default_factory=dict)  # node id -> failed
    requests: int = 0
    #: Requests of tests not finished yet (one process: sent since the last test ended).
    pending: int = 0
    #: Requests and samples of the finished tests (their ratio scales what is left).
    finished_requests: int = 0
    finished_samples: int = 0
    last_line: float | None = None

    def request_sent(self, now: float) -> bool:
        """One request went out (one process); True when a line is due."""
        self.requests += 1
        self.pending += 1
        return self.last_line is not None and now - self.last_line >= self.every

    def test_done(self, nodeid: str, failed: bool, requests: int | None, now: float) -> bool:
        """A planned test ended; ``requests`` it sent when only its result can say (xdist),
        None when they were counted one by one. True when a line is due."""
        test = self.plan.tests.get(nodeid)
        if test is None or nodeid in self.done:
            return False
        self.done[nodeid] = failed
        if requests is None:
            requests, self.pending = self.pending, 0
        else:
            self.requests += requests
        self.finished_requests += requests
        self.finished_samples += test.samples
        model_done = all(
            n in self.done for n, t in self.plan.tests.items() if t.model == test.model
        )
        first = self.last_line is None
        return first or model_done or now - (self.last_line or now) >= self.every

    def left_s(self, now: float) -> float | None:
        """Seconds left: the requests still to send, at the run's measured time per request
        (wall time since the start over requests sent, so parallel workers count as such)."""
        if not self.requests:
            return None
        remaining = sum(t.samples for n, t in self.plan.tests.items() if n not in self.done)
        per_sample = self.finished_requests / self.finished_samples if self.finished_samples else 1
        left = max(0.0, remaining * per_sample - self.pending)
        return left * (now - self.started) / self.requests

    def line(self, now: float) -> str:
        """``cardprobe: smollm2:135m 3/10 tests, 1 failed; 4 requests, one every 2.5s; about
        20s left`` (with several models, the run's figures then each model's)."""
        self.last_line = now
        models: dict[str, list[int]] = {}
        for nodeid, test in self.plan.tests.items():
            counts = models.setdefault(test.model, [0, 0, 0])
            counts[2] += 1
            if nodeid in self.done:
                counts[0] += 1
                counts[1] += self.done[nodeid]
        done, failed = len(self.done), sum(self.done.values())
        total, sent = len(self.plan.tests), self.requests
        text = f"{done}/{total} tests, {failed} failed; {sent} request{'s' * (sent != 1)}"
        if sent:
            text += f", one every {(now - self.started) / sent:.1f}s"
        left = self.left_s(now)
        if done == total:
            text += "; done"
        elif left == 0:  # no request left to send: the last ones are on their way
            text += "; finishing"
        else:
            text += "; " + (f"about {clock_text(left)} left" if left is not None else "estimating")
        if len(models) == 1:
            return f"cardprobe: {next(iter(models))} {text}"
        each = ", ".join(f"{m} {d}/{t} ({f} failed)" for m, (d, f, t) in models.items())
        return f"cardprobe: {text} | {each}"


def spent_line(results: Iterable[ProbeResult], requests: int, wall_s: float) -> str | None:
    """The tokens and server time the run's live requests spent (None when none went out)."""
    prompt = generated = server = 0.0
    live = False
    for result in results:
        for sample in result.samples:
            figures = sample.figures
            if "wall_s" not in figures:
                continue  # replayed: spent when it was recorded
            live = True
            prompt += figures.get("prompt_tokens", 0)
            generated += figures.get("generated_tokens", 0)
            server += figures.get("total_s", 0)
    if not live and not requests:
        return None
    return (
        f"cardprobe: spent {requests} request{'s' * (requests != 1)} in {clock_text(wall_s)}: "
        f"{prompt:.0f} prompt + "
        f"{generated:.0f} generated tokens, {server:.1f}s of server time"
    )


def plan_of_items(state: CardprobeState, items: Sequence[pytest.Item]) -> Plan:
    """One process: the plan of the selected items (each knows its probe and server)."""
    from pytest_cardprobe.glue.items import MARKER, ProbeItem

    s = state.settings
    tests = {
        item.nodeid: planned(
            item.probe, item.samples(), item.server or state.runtime.server, s.retries
        )
        for item in items
        if isinstance(item, ProbeItem)
    }
    python = sum(1 for i in items if not isinstance(i, ProbeItem) and i.get_closest_marker(MARKER))
    return Plan(tests, s.retries, s.warmup, python)


def plan_of_ids(state: CardprobeState, ids: Sequence[str], root: Path) -> Plan:
    """xdist's controller: the plan of the node ids a worker collected, from the suites the
    controller loaded before collection; servers by lane, as the lane scheduler hands them."""
    from pytest_cardprobe.glue.hints import BUILTIN_PREFIX
    from pytest_cardprobe.glue.schedule import lanes_by_nodeid
    from pytest_cardprobe.suite.builtin import builtin_suite_path

    s = state.settings
    probes: dict[tuple[Path, str], Probe] = {}
    for suite in state.suites.values():
        for probe in expand(suite, s.models, channels=s.channels, conditions=s.conditions):
            probes[(suite.path.resolve(), probe.name)] = probe
    lanes = lanes_by_nodeid(ids, state.lanes)
    tests: dict[str, Planned] = {}
    for nodeid in ids:
        file, _, name = nodeid.partition("::")
        if file.startswith(BUILTIN_PREFIX):
            path = builtin_suite_path(file[len(BUILTIN_PREFIX) :])
        else:
            path = root / file
        found = probes.get((path.resolve(), name))
        if found is None or nodeid not in lanes:
            continue  # not a probe test (its asks are its own code's)
        server = s.servers[lanes[nodeid] % len(s.servers)]
        tests[nodeid] = planned(found, s.samples or found.suite.samples, server, s.retries)
    return Plan(tests, s.retries, s.warmup)


class ProgressReporter:
    """The controller's hooks (live runs only): the plan line, progress lines, spent line."""

    def __init__(self, state: CardprobeState, clock: Callable[[], float] = time.monotonic):
        self.state = state
        self.clock = clock
        self.progress: Progress | None = None
        self.every = EVERY_S

    def _write(self, lines: Sequence[str]) -> None:
        config = self.state.config
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        from pytest_cardprobe.text import escape_control

        capture = config.pluginmanager.get_plugin("capturemanager")
        # Inside a test pytest captures output; the line goes around it (as live logging).
        with capture.global_and_fixture_disabled() if capture else nullcontext():
            reporter.ensure_newline()
            if config.get_terminal_writer().width_of_current_line:
                reporter.write("\n")  # after xdist's dots, which leave the line open
            for line in lines:
                reporter.write_line(escape_control(line))

    def _start(self, plan: Plan) -> None:
        if self.progress is not None or not plan.tests:
            return
        config = self.state.config
        if config.get_verbosity() > -2:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            width = config.get_terminal_writer().fullwidth if reporter else 100
            self._write(plan_line(plan, self.state.settings.record_mode, width))
        self.progress = Progress(plan, self.clock(), self.every)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """One process: the plan of the selected tests, before the first one runs."""
        if (
            getattr(session.config.option, "dist", "no") != "no"
            or session.config.option.collectonly
        ):
            return
        self._start(plan_of_items(self.state, session.items))
        if self.progress is not None:
            self.state.runtime.pool.on_sent = self.request_sent

    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """xdist: the plan of what the first worker collected (all collect the same), before
        the scheduler hands out the first test."""
        self._start(plan_of_ids(self.state, ids, self.state.config.rootpath))

    def request_sent(self) -> None:
        """One process: a request went out."""
        if self.progress is not None and self.progress.request_sent(self.clock()):
            self._line()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A test ended (its call report, or the setup report of one that never ran)."""
        progress = self.progress
        if progress is None or not (report.when == "call" or report.failed or report.skipped):
            return
        from pytest_cardprobe.glue.transport import REPORT_ATTR

        result = getattr(report, REPORT_ATTR, None)
        requests = None  # one process: counted one by one as they went out
        if getattr(self.state.config.option, "dist", "no") != "no":
            requests = requests_of(result) if isinstance(result, ProbeResult) else 0
        if progress.test_done(report.nodeid, report.failed, requests, self.clock()):
            self._line()

    def _line(self) -> None:
        if self.progress is not None and self.state.config.get_verbosity() >= 0:
            self._write([self.progress.line(self.clock())])

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The tokens and server time the run's requests spent."""
        if self.progress is None or self.state.config.get_verbosity() < 0:
            return
        progress = self.progress
        line = spent_line(self.state.results, progress.requests, self.clock() - progress.started)
        width = self.state.config.get_terminal_writer().fullwidth
        for part in textwrap.wrap(line or "", width, subsequent_indent="  "):
            terminalreporter.write_line(part)


def register(config: pytest.Config, state: CardprobeState) -> None:
    """Add the reporter to a live run's controller (nothing for replay or a worker)."""
    if state.settings.live and not is_worker(config):
        config.pluginmanager.register(ProgressReporter(state), "cardprobe-progress")
