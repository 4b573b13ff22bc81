"""Collection: suite files become one pytest item per case x model x channel x condition."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cardprobe.suite.loader import SuiteError, load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.cassettes import CassetteProblem

if TYPE_CHECKING:
    from pytest_cardprobe.state import CardprobeState

SAMPLES_HELP = "samples(n) takes one integer n >= 1, e.g. @pytest.mark.samples(3)"


def not_asked(items: list[pytest.Item]) -> list[pytest.Item]:
    """Probe items whose channel cannot carry their condition (e.g. tool + seeded)."""
    return [i for i in items if isinstance(i, ProbeItem) and i.probe.skip_reason]


def marker_samples(item: pytest.Item) -> int | None:
    """The validated ``samples(n)`` of ``item``, or None; bad arguments are a usage error."""
    mark = item.get_closest_marker("samples")
    if mark is None:
        return None
    n: object = None
    if len(mark.args) == 1 and not mark.kwargs:
        n = mark.args[0]
    elif not mark.args and list(mark.kwargs) == ["n"]:
        n = mark.kwargs["n"]
    # bool is an int subclass; samples(True) is a mistake, not one sample.
    if type(n) is not int or n < 1:
        shown = ", ".join([*map(repr, mark.args), *(f"{k}={v!r}" for k, v in mark.kwargs.items())])
        raise pytest.UsageError(f"{item.nodeid}: {SAMPLES_HELP}; got samples({shown})")
    return n


_SKIPPED_DIRS = {".git", ".hg", ".tox", ".venv", "venv", "node_modules", "__pycache__", "build"}


def suite_files_under(args: list[str], root: Path) -> Iterator[Path]:
    """Suite files a run over ``args`` would collect (for checks made before collection)."""
    from pytest_cardprobe.suite.loader import is_suite_file

    for arg in args:
        path = Path(arg.split("::", 1)[0])
        path = path if path.is_absolute() else root / path
        if path.is_file():
            candidates: Iterator[Path] = iter([path])
        elif path.is_dir():
            candidates = (
                p
                for p in sorted(path.rglob("*.y*ml"))
                if not _SKIPPED_DIRS & set(p.relative_to(path).parts)
            )
        else:
            continue
        for candidate in candidates:
            if candidate.suffix in (".yaml", ".yml") and is_suite_file(candidate):
                yield candidate


def preflight_errors(state: CardprobeState, args: list[str], root: Path) -> list[str]:
    """Load every suite up front; the problems a run over ``args`` would stop on."""
    errors = []
    found = False
    for path in suite_files_under(args, root):
        found = True
        try:
            load_suite(path, known_judges=state.judge_names())
        except SuiteError as exc:
            errors.append(str(exc))
    if found and not state.settings.models:
        errors.append(
            "no model to probe — pass --model NAME (repeatable) or set "
            "cardprobe_models in [tool.pytest.ini_options]"
        )
    return errors


class ProbeFailed(Exception):
    """A probe that did not pass; carries the result for the failure report."""

    def __init__(self, result: ProbeResult) -> None:
        super().__init__(result.describe())
        self.result = result


class SuiteFile(pytest.File):
    """A YAML file with ``cardprobe: 1`` at the top."""

    def collect(self) -> Iterator[pytest.Item]:
        """Load the suite and yield its probes; a bad suite stops the run (usage error)."""
        from pytest_cardprobe.state import get_state

        state = get_state(self.config)
        try:
            suite = load_suite(self.path, known_judges=state.judge_names())
        except SuiteError as exc:
            state.collect_errors.append(str(exc))
            return
        settings = state.settings
        if not settings.models:
            state.collect_errors.append(
                f"{self.path}: no model to probe — pass --model NAME (repeatable) or set "
                "cardprobe_models in [tool.pytest.ini_options]"
            )
            return
        for probe in expand(
            suite,
            settings.models,
            channels=settings.channels or None,
            conditions=settings.conditions or None,
        ):
            yield ProbeItem.from_parent(self, name=probe.name, probe=probe)


class ProbeItem(pytest.Item):
    """One generated test: asks one probe ``samples`` times."""

    def __init__(self, *, probe: Probe, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.probe = probe
        # Keywords so that -k model / channel / condition / case selects as people expect.
        for word in (probe.model, probe.channel, probe.condition, probe.case.id, probe.suite.name):
            self.keywords[word] = True
        self.result: ProbeResult | None = None

    def samples(self) -> int:
        """--samples, else the samples(n) marker, else the suite's default."""
        from pytest_cardprobe.state import get_state

        override = get_state(self.config).settings.samples
        return override or marker_samples(self) or self.probe.suite.samples

    def runtest(self) -> None:
        """Ask, judge, and pass only if every sample passed."""
        from pytest_cardprobe.state import get_state

        state = get_state(self.config)
        probe = self.probe
        judge = state.judge_for(probe.suite.judge)
        try:
            result = state.runtime.run(
                probe,
                self.samples(),
                self.nodeid,
                lambda text: judge(text, probe.case, probe.suite),
            )
        except CassetteProblem as exc:
            self.result = ProbeResult(
                self.nodeid,
                probe.suite.name,
                probe.model,
                probe.channel,
                probe.condition,
                probe.case.id,
                status="error",
                message=str(exc),
            )
            raise
        self.result = result
        if result.status == "passed":
            return
        if result.status == "unsupported":
            pytest.skip(f"unsupported: {result.message}")
        raise ProbeFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """The per-sample report, or the cassette problem, without a traceback."""
        if isinstance(excinfo.value, ProbeFailed):
            # Whole replies only when asked for (-vv); the reports always carry them.
            return excinfo.value.result.describe(full=self.config.get_verbosity() >= 2)
        if isinstance(excinfo.value, CassetteProblem):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Where the case is defined."""
        line = self.probe.case.line
        return self.path, (line - 1 if line else None), f"cardprobe {self.name}"
