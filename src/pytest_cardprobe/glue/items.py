"""Collection: suite files become one pytest item per case x model x channel x condition."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cardprobe.glue.failure import describe
from pytest_cardprobe.glue.hints import BUILTIN_PREFIX
from pytest_cardprobe.glue.internal import InternalError, internal_report, run_secrets
from pytest_cardprobe.score.outcome import KNOWN, Outcome, outcome_of
from pytest_cardprobe.score.rule import effective_at_least, settle
from pytest_cardprobe.suite.loader import Suite, SuiteError, load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ProbeResult, Verdict
from pytest_cardprobe.wire.errors import CassetteProblem

if TYPE_CHECKING:
    from pytest_cardprobe.glue.state import CardprobeState
    from pytest_cardprobe.judge.registry import Judge
    from pytest_cardprobe.suite.toollint import LintFinding

SAMPLES_HELP = (
    "samples(n) takes one integer n >= 1 and optionally at_least=k, an integer "
    "1 <= k <= n, e.g. @pytest.mark.samples(3) or @pytest.mark.samples(3, at_least=2)"
)


def marker_rule(item: pytest.Item) -> tuple[int, int | None] | None:
    """The validated ``samples(n, at_least=k)`` of ``item`` as (n, k), k None when not
    given; None without the marker. Bad arguments are a usage error naming the test."""
    mark = item.get_closest_marker("samples")
    if mark is None:
        return None
    kwargs = dict(mark.kwargs)
    n: object = None
    if len(mark.args) == 1 and "n" not in kwargs:
        n = mark.args[0]
    elif not mark.args:
        n = kwargs.pop("n", None)
    k: object = kwargs.pop("at_least", None)
    # bool is an int subclass; samples(True) is a mistake, not one sample.
    fine = type(n) is int and n >= 1 and not kwargs and len(mark.args) <= 1
    if fine and k is not None:
        fine = type(k) is int and 1 <= k <= n  # type: ignore[operator]
    if not fine:
        shown = ", ".join([*map(repr, mark.args), *(f"{a}={v!r}" for a, v in mark.kwargs.items())])
        raise pytest.UsageError(f"{item.nodeid}: {SAMPLES_HELP}; got samples({shown})")
    assert isinstance(n, int) and (k is None or isinstance(k, int))
    from pytest_cardprobe.glue.state import get_state

    most = get_state(item.config).settings.max_samples
    if n > most:
        raise pytest.UsageError(
            f"{item.nodeid}: samples({n}) is more than the limit of {most} "
            "(ini cardprobe_max_samples)"
        )
    return n, k


def marker_samples(item: pytest.Item) -> int | None:
    """The validated n of ``samples(n)`` of ``item``, or None (see :func:`marker_rule`)."""
    rule = marker_rule(item)
    return None if rule is None else rule[0]


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


def preflight_errors(
    state: CardprobeState, args: list[str], root: Path, config: pytest.Config | None = None
) -> list[str]:
    """Load every suite up front; the problems a run over ``args`` would stop on."""
    from pytest_cardprobe.suite.builtin import builtin_suite_path

    errors = []
    found = False
    names: dict[str, Path] = {}
    under = suite_files_under(args, root, config)
    paths = [*under, *map(builtin_suite_path, state.settings.suites)]
    state.suites_found += len(paths)
    for path in paths:
        found = True
        try:
            suite = load_suite(path, known_judges=state.judge_names(), limits=state.limits)
        except SuiteError as exc:
            errors.append(str(exc))
            continue
        clash = same_name(names, suite.name, path)
        if clash:
            errors.append(clash)
        state.note_suite(suite)
        if state.settings.strict_tools:
            errors.extend(f"{f} (--cardprobe-strict-tools)" for f in tool_lint(suite))
        probes = list(expand(suite, state.settings.models))
        errors.extend(f"{path}: {p}" for p in path_problems(state.settings.cassette_dir, probes))
    if found and not state.settings.models:
        errors.append(
            "no model to probe — pass --model NAME (repeatable) or set "
            "cardprobe_models in [tool.pytest.ini_options]"
        )
    return errors


def builtin_suite_files(session: pytest.Session, names: list[str]) -> list[SuiteFile]:
    """Collectors for the built-in suites ``names``, wherever the package is installed."""
    from pytest_cardprobe.suite.builtin import builtin_suite_path

    return [
        SuiteFile.from_parent(session, path=builtin_suite_path(name), nodeid=BUILTIN_PREFIX + name)
        for name in names
    ]


def _text_judge(judge: Judge, probe: Probe) -> Callable[[str], Verdict]:
    """``judge`` bound to one probe's case and suite: it then reads only the answer's text."""
    return lambda text: judge(text, probe.case, probe.suite)


class ToolLintWarning(pytest.PytestWarning):
    """A call suite's tool declaration that small models handle badly (suite/toollint.py)."""


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


def _short(name: str, limit: int = 60) -> str:
    """``name`` quoted for a message, cut to ``limit`` characters."""
    return repr(name if len(name) <= limit else name[:limit] + "…")


def path_problems(root: Path, probes: list[Probe]) -> list[str]:
    """One line per case (or suite/model) whose cassette path the file system cannot take."""
    from pytest_cardprobe.wire.cassettes.paths import cassette_path_problem

    found: dict[str, str] = {}
    for p in probes:
        why = cassette_path_problem(root, p.suite.name, p.model, p.case.id, p.channel, p.condition)
        if not why:
            continue
        if why.startswith(("the suite name", "the model name")):
            names = f"suite {_short(p.suite.name)}, model {_short(p.model)}"
            found.setdefault(why, f"{why} ({names})")
        else:
            where = f"cases[id={_short(p.case.id)}] (line {p.case.line})"
            found.setdefault(p.case.id, f"{where}: {why}")
    return list(found.values())


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
        try:
            suite = load_suite(self.path, known_judges=state.judge_names(), limits=state.limits)
        except SuiteError as exc:
            state.collect_errors.append(str(exc))
            return
        clash = same_name(state.suite_names, suite.name, self.path)
        if clash:
            state.collect_errors.append(clash)
            return
        state.note_suite(suite)
        settings = state.settings
        findings = tool_lint(suite)
        if findings and settings.strict_tools:
            state.collect_errors.extend(f"{f} (--cardprobe-strict-tools)" for f in findings)
            return
        for finding in findings:
            # At the finding's own file and line (Node.warn would say the suite's line 0).
            warnings.warn_explicit(
                ToolLintWarning(str(finding)), None, str(finding.source), finding.line or 1
            )
        if not settings.models:
            state.collect_errors.append(
                f"{self.path}: no model to probe — pass --model NAME (repeatable) or set "
                "cardprobe_models in [tool.pytest.ini_options]"
            )
            return
        probes = list(
            expand(
                suite,
                settings.models,
                channels=settings.channels or None,
                conditions=settings.conditions or None,
            )
        )
        problems = path_problems(settings.cassette_dir, probes)
        if problems:
            state.collect_errors.extend(f"{self.path}: {p}" for p in problems)
            return
        for probe in probes:
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
        self.result: ProbeResult | None = None
        # How pytest shows the result against the baseline, decided when the test has run.
        self.shown: Outcome | None = None
        # Set when the run is ordered (glue/schedule.order_probes): the server of this test's lane.
        self.server: str | None = None

    def samples(self) -> int:
        """--cardprobe-samples, else the samples(n) marker, else the suite's default."""
        from pytest_cardprobe.glue.state import get_state

        override = get_state(self.config).settings.samples
        return override or marker_samples(self) or self.probe.suite.samples

    def at_least(self, samples: int) -> int | None:
        """The case rule k for a test of ``samples`` samples: the marker's ``at_least``, else
        the case's, else the suite's, capped at ``samples``; None when every sample must pass."""
        rule = marker_rule(self)
        case, suite = self.probe.case.at_least, self.probe.suite.at_least
        k = (rule[1] if rule else None) or case or suite
        return effective_at_least(k, samples)

    def runtest(self) -> None:
        """Ask, judge, and pass when the case rule holds (every sample, or k of n)."""
        from pytest_cardprobe.glue.state import get_state

        state = get_state(self.config)
        probe = self.probe
        self.result = self.shown = None  # nothing from an earlier run of this item
        try:
            # Card suites are judged on the answer's text; call suites by the call judge.
            text_judge = None
            if not probe.suite.is_call_suite:
                text_judge = _text_judge(state.judge_for(probe.suite.judge), probe)
            samples = self.samples()
            result = state.runtime.run(probe, samples, self.nodeid, text_judge, self.server)
            settle(result, self.at_least(samples))  # k of n (score/rule.py)
        except CassetteProblem as exc:
            self.result = self._errored(str(exc))
            raise
        except Exception as exc:
            # A bug: reported as one, in the plugin's own words, with no frame arguments
            # (they hold the server URL and headers) and no secret (glue/internal.py).
            text = internal_report(exc, run_secrets(state.settings))
            self.result = self._errored(text.splitlines()[0])
            raise InternalError(text) from None
        self.result = result
        self.shown = outcome_of(result, state.baseline, self.config.option.runxfail)
        if result.status == "passed":
            return
        if result.status == "unsupported":
            pytest.skip(f"unsupported: {result.message}")
        if self.shown is not None and self.shown.kind == KNOWN:
            # A known failure is reported as xfailed with its one-line reason
            # (transport.show_against_baseline, in pytest_runtest_makereport): raising would
            # only build a traceback nobody is shown (see BENCHMARKS.md, "Cassette replay").
            return
        raise ProbeFailed(result)

    def _errored(self, message: str) -> ProbeResult:
        """The result of a test that errored before it had a verdict (counted, never gated)."""
        probe = self.probe
        return ProbeResult(
            self.nodeid,
            probe.suite.name,
            probe.model,
            probe.channel,
            probe.condition,
            probe.case.id,
            status="error",
            message=message,
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """The per-sample report, the cassette problem or the internal error; no traceback."""
        if isinstance(excinfo.value, ProbeFailed):
            # Whole replies only when asked for (-vv); the reports always carry them.
            return describe(excinfo.value.result, full=self.config.get_verbosity() >= 2)
        if isinstance(excinfo.value, CassetteProblem | InternalError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Where the case is defined."""
        line = self.probe.case.line
        return self.path, (line - 1 if line else None), f"cardprobe {self.name}"
