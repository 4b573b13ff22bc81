"""Collection: suite files become one pytest item per case x model x channel x condition."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cardprobe.glue.failure import describe
from pytest_cardprobe.glue.guard import hidden_in_path, input_clashes
from pytest_cardprobe.glue.hints import BUILTIN_PREFIX
from pytest_cardprobe.glue.internal import InternalError, internal_report
from pytest_cardprobe.glue.markers import marker_rule, marker_samples
from pytest_cardprobe.glue.recording import path_problems
from pytest_cardprobe.judge.registry import BoundJudge
from pytest_cardprobe.run.result import probe_result
from pytest_cardprobe.score.outcome import ACCEPTED, KNOWN, UNREVIEWED, Outcome, score_result
from pytest_cardprobe.score.rule import effective_at_least
from pytest_cardprobe.suite.loader import Suite, SuiteError, load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ProbeResult, Status
from pytest_cardprobe.wire.errors import CassetteProblem, StaleCassette
from pytest_cardprobe.wire.redact import run_secrets

if TYPE_CHECKING:
    from pytest_cardprobe.glue.state import CardprobeState
    from pytest_cardprobe.suite.toollint import LintFinding

#: The marker of every probe test (registered in plugin.py): ``-m "not cardprobe"`` leaves
#: them out of a project's own test run.
MARKER = "cardprobe"
_SKIPPED_DIRS = {".git", ".hg", ".tox", ".venv", "venv", "node_modules", "__pycache__", "build"}


def suite_files_under(
    args: list[str], root: Path, config: pytest.Config | None = None
) -> Iterator[Path]:
    """Suite files a run over ``args`` would collect (for checks made before collection).

    With ``config``, pytest's own ignore rules apply as they will to collection
    (``pytest_ignore_collect``: ``--ignore``, ``collect_ignore`` in a conftest, ...), asked of
    each folder between the argument and the file and of the file itself.
    """
    from pytest_cardprobe.suite.loader import is_suite_file

    def ignored(path: Path, top: Path) -> bool:
        if config is None:
            return False
        chain = [*reversed(path.relative_to(top).parents), Path(path.relative_to(top))]
        return any(
            config.hook.pytest_ignore_collect(collection_path=top / part, config=config)
            for part in chain
            if part != Path(".")
        )

    for arg in args:
        path = Path(arg.split("::", 1)[0])
        path = path if path.is_absolute() else root / path
        if path.is_file():
            candidates: Iterator[Path] = iter([path])
        elif path.is_dir():
            candidates = (
                p
                for p in sorted(path.rglob("*"))
                if p.suffix.lower() in (".yaml", ".yml") and p.is_file()
                if not _SKIPPED_DIRS & set(p.relative_to(path).parts)
                if not ignored(p, path)
            )
        else:
            continue
        for candidate in candidates:
            if is_suite_file(candidate):
                yield candidate


class Collected:
    """What the collection pipeline made of one suite file: its probes, or its errors."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.probes: list[Probe] = []
        self.shown: list[tuple[type[Warning], Any]] = []  # warnings for the collector to give


def collect_suite(state: CardprobeState, path: Path, rootpath: Path) -> Collected:
    """The collection pipeline of one suite file, written once: the collector runs it, and
    so does the xdist controller's preflight (which collects nothing itself). In order, each
    stopping at its first problem: a hidden path, the load, a suite name another file took,
    an input the run would overwrite, strict tool-lint findings, no model, and the cassette
    paths of the probes the run selects (``--cardprobe-channel``/``--cardprobe-condition``)."""
    done = Collected()
    errors = done.errors
    hidden = hidden_in_path(path, rootpath)
    if hidden:
        errors.append(hidden)
        return done
    try:
        suite = load_suite(
            path, known_judges=state.judge_names(), limits=state.limits, sources=state.sources
        )
    except SuiteError as exc:
        errors.append(str(exc))
        return done
    clash = same_name(state.suite_names, suite.name, path)
    if clash:
        errors.append(clash)
        return done
    state.note_suite(suite)
    settings = state.settings
    errors += input_clashes(settings, suite)  # (the session end then writes no report either)
    findings = tool_lint(suite)
    if not errors and settings.strict_tools:
        errors += [f"{f} (--cardprobe-strict-tools)" for f in findings if f.strict]
    if errors:
        return done
    done.shown = [(ToolLintWarning, f) for f in findings]
    done.shown += [(SuiteWarning, w) for w in suite.warnings]
    if not settings.models:
        errors.append(
            f"{path}: no model to probe — pass --model NAME (repeatable) or set "
            "cardprobe_models in [tool.pytest.ini_options]"
        )
        return done
    channels, conditions = settings.channels or None, settings.conditions or None
    probes = list(expand(suite, settings.models, channels=channels, conditions=conditions))
    errors += [f"{path}: {p}" for p in path_problems(settings.cassette_dir, probes)]
    done.probes = [] if errors else probes
    return done


def preflight_errors(
    state: CardprobeState, args: list[str], root: Path, config: pytest.Config | None = None
) -> list[str]:
    """The problems a run over ``args`` would stop on, found by the collector's own
    pipeline (:func:`collect_suite`) before any worker collects."""
    from pytest_cardprobe.suite.builtin import builtin_suite_path

    under = suite_files_under(args, root, config)
    paths = [*under, *map(builtin_suite_path, state.settings.suites)]
    state.suites_found += len(paths)
    rootpath = config.rootpath if config else root
    return [e for path in paths for e in collect_suite(state, path, rootpath).errors]


def builtin_suite_files(session: pytest.Session, names: list[str]) -> list[SuiteFile]:
    """Collectors for the built-in suites ``names``, wherever the package is installed."""
    from pytest_cardprobe.suite.builtin import builtin_suite_path

    return [
        SuiteFile.from_parent(session, path=builtin_suite_path(name), nodeid=BUILTIN_PREFIX + name)
        for name in names
    ]


class ToolLintWarning(pytest.PytestWarning):
    """A call suite's tool declaration that small models handle badly (suite/toollint.py)."""


class SuiteWarning(pytest.PytestWarning):
    """A suite's doubt that does not stop the run (suite/argvalues.py: an impossible one_of)."""


def tool_lint(suite: Suite) -> list[LintFinding]:
    """The tool-definition lint findings of a call suite (``str()`` is one line each)."""
    if not suite.is_call_suite:
        return []
    from pytest_cardprobe.suite.toollint import lint_tools

    return lint_tools(suite.tools, suite.tools_file or suite.path, suite.tool_lines)


def same_name(names: dict[str, Path], name: str, path: Path) -> str | None:
    """Note that suite ``name`` lives in ``path``; the error when another file took it first.

    Two suites with one name would share cassette folders and baseline arms, so recording
    one would overwrite the other's cassettes.
    """
    first = names.setdefault(name, path)
    if first == path:
        return None
    return (
        f"{path}: name: suite name {name!r} is already used by {first}; "
        "two suites with one name would share cassettes and baseline arms — rename one"
    )


class UnreviewedDraft(Exception):
    """An unreviewed drafted case under --cardprobe-strict-review; the message says what to do."""


class ProbeFailed(Exception):
    """A probe that failed (and is not a known failure); carries the result for the report."""

    def __init__(self, result: ProbeResult) -> None:
        super().__init__(result.nodeid)
        self.result = result

    def __str__(self) -> str:
        # Written only when asked for: repr_failure writes the report itself.
        return describe(self.result)


class SuiteFile(pytest.File):
    """A YAML file with ``cardprobe: 1`` at the top."""

    def collect(self) -> Iterator[pytest.Item]:
        """Load the suite and yield its probes; a bad suite stops the run (usage error)."""
        from pytest_cardprobe.glue.state import get_state

        state = get_state(self.config)
        state.suites_found += 1
        done = collect_suite(state, self.path, self.config.rootpath)
        state.collect_errors.extend(done.errors)
        for kind, finding in done.shown:
            # At the finding's own file and line (Node.warn would say the suite's line 0).
            warnings.warn_explicit(kind(str(finding)), None, str(finding.source), finding.line or 1)
        for probe in done.probes:
            # The node id given as text, so pytest (9.2 and later) reads its ``[…]`` part as
            # the test's parameters, as for a parametrized function: ``--lf`` matches by them.
            yield ProbeItem.from_parent(
                self, name=probe.name, nodeid=f"{self.nodeid}::{probe.name}", probe=probe
            )


class ProbeItem(pytest.Item):
    """One generated test: asks one probe ``samples`` times."""

    def __init__(self, *, probe: Probe, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.probe = probe
        # Keywords so that -k model / channel / condition / case selects as people expect.
        for word in (probe.model, probe.channel, probe.condition, probe.case.id, probe.suite.name):
            self.keywords[word] = True
        self.add_marker(MARKER)  # -m cardprobe / -m "not cardprobe"
        self.result: ProbeResult | None = None
        # How pytest shows the result against the baseline, decided when the test has run.
        self.shown: Outcome | None = None
        # Set when the run is ordered (glue/schedule.order_probes): the server of this test's lane.
        self.server: str | None = None
        # A test that could not replay: why, on one line (glue/replaying.py).
        self.reason = ""

    def samples(self, rule: tuple[int, int | None] | None = None) -> int:
        """--cardprobe-samples, else the samples(n) marker, else the suite's default.
        ``rule``: the marker as ``marker_rule`` read it, when the caller has it already."""
        from pytest_cardprobe.glue.state import get_state

        override = get_state(self.config).settings.samples
        marked = rule[0] if rule else marker_samples(self)
        return override or marked or self.probe.suite.samples

    def at_least(self, samples: int, rule: tuple[int, int | None] | None) -> int | None:
        """The case rule k for a test of ``samples`` samples: the marker's ``at_least``, else
        the case's, else the suite's, capped at ``samples``; None when every sample must pass.
        ``rule``: this item's samples marker as ``marker_rule`` read it."""
        case, suite = self.probe.case.at_least, self.probe.suite.at_least
        k = (rule[1] if rule else None) or case or suite
        return effective_at_least(k, samples)

    def runtest(self) -> None:
        """Ask, judge, and pass when the case rule holds (every sample, or k of n)."""
        from pytest_cardprobe.glue.state import get_state

        state = get_state(self.config)
        probe = self.probe
        self.result = self.shown = None  # nothing from an earlier run of this item
        self.reason = ""
        try:
            # Card suites are judged on the answer's text; call suites by the call judge.
            text_judge = None
            if not probe.suite.is_call_suite:
                text_judge = BoundJudge(state.judge_for(probe.suite.judge), probe.case, probe.suite)
            drift = state.sources_read and state.sources.drift(probe.suite.name)
            if drift:  # a source changed since the snapshot its cassettes were recorded with
                raise StaleCassette(drift[0], said=tuple(drift[1]))
            # The samples marker looked up once for both of its numbers (n here, k below).
            rule = marker_rule(self)
            samples = self.samples(rule)
            result = state.runtime.run(
                probe,
                samples,
                self.nodeid,
                text_judge,
                self.server,
                hint=state.rerecord_hint(self.nodeid, probe.model),
                suite_file=state.suite_file(probe.suite),
            )
        except CassetteProblem as exc:
            self._cassette_problem(state, exc)
            raise
        except Exception as exc:
            # A bug: reported as one, in the plugin's own words, with no frame arguments
            # (they hold the server URL and headers) and no secret (glue/internal.py).
            text = internal_report(exc, run_secrets(state.settings))
            self.result = self._errored(text.splitlines()[0])
            raise InternalError(text) from None
        self.result = result
        # The case rule (k of n) and the baseline's reading, in one call (score/outcome.py).
        against = state.against(self.config.option.runxfail)
        self.shown = score_result(result, self.at_least(samples, rule), against)
        if self.shown is not None and self.shown.kind == UNREVIEWED:
            raise UnreviewedDraft(self.shown.reason)
        if result.status == Status.PASSED:
            return
        if result.status == Status.UNSUPPORTED:
            pytest.skip(f"unsupported: {result.message}")
        if self.shown is not None and self.shown.kind in (KNOWN, ACCEPTED):
            # A known failure is reported as xfailed with its one-line reason
            # (transport.show_against_baseline, in pytest_runtest_makereport): raising would
            # only build a traceback nobody is shown (see BENCHMARKS.md, "Cassette replay").
            return
        raise ProbeFailed(result)

    def _cassette_problem(self, state: CardprobeState, exc: CassetteProblem) -> None:
        """Note why the test could not replay, in one line (glue/replaying.py); a suite
        nothing was ever recorded of is skipped, outside a gating run."""
        from pytest_cardprobe.glue import replaying

        problem, changes = replaying.problem_of(exc)
        cassette = state.runtime.cassette_for(self.probe)
        if problem == "not recorded" and replaying.never_recorded(state, self.probe, cassette):
            problem = "never recorded"
        self.result = result = self._errored(str(exc))
        result.problem, result.changes = problem, changes
        self.reason = replaying.short_reason(problem, changes, str(exc))
        if problem == "never recorded":
            reason = f"never recorded: suite {self.probe.suite.name!r} has no recording yet"
            raise pytest.skip.Exception(reason, _use_item_location=True)  # the case's line

    def _errored(self, message: str) -> ProbeResult:
        """The result of a test that errored before it had a verdict (counted, never gated)."""
        return probe_result(self.nodeid, self.probe, Status.ERROR, message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """The per-sample report, the cassette problem or the internal error; no traceback."""
        if isinstance(excinfo.value, ProbeFailed):
            # Whole replies only when asked for (-vv); the reports always carry them.
            return describe(excinfo.value.result, full=self.config.get_verbosity() >= 2)
        if isinstance(excinfo.value, CassetteProblem):  # -vv: the whole paragraph
            full = self.config.get_verbosity() >= 2
            return str(excinfo.value) if full or not self.reason else self.reason
        if isinstance(excinfo.value, InternalError | UnreviewedDraft):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Where the case is defined."""
        line = self.probe.case.line
        return self.path, (line - 1 if line else None), f"cardprobe {self.name}"
