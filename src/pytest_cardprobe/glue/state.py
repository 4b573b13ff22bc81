"""Per-session state kept in ``config.stash``."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.files import MB
from pytest_cardprobe.glue.hints import carried_options, rerecord_hint
from pytest_cardprobe.glue.recording import clashes, suite_file
from pytest_cardprobe.judge.registry import BUILTIN_JUDGES, Judge
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.baseline import Baseline
from pytest_cardprobe.score.gate import Gate
from pytest_cardprobe.suite.loader import Suite, SuiteLimits
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.cassettes.modes import backend_for


@dataclass
class CardprobeState:
    """What one pytest process knows: settings, the runtime, and the results it saw."""

    config: pytest.Config
    settings: Settings
    collect_errors: list[str] = field(default_factory=list)
    results: list[ProbeResult] = field(default_factory=list)
    crashed_workers: list[str] = field(default_factory=list)
    other_failures: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None
    summary: list[str] = field(default_factory=list)
    # The baseline read before the first test (every process reads it; outcomes need it).
    baseline: Baseline | None = None
    baseline_notes: list[str] = field(default_factory=list)
    arms: list[ArmScore] = field(default_factory=list)
    gate: Gate | None = None
    #: Suite files this process collected (or checked before an xdist run).
    suites_found: int = 0
    #: A message for the end of the run that is not part of the scoreboard.
    notice: str = ""
    suite_names: dict[str, Path] = field(default_factory=dict)
    #: Per suite this process loaded: its case ids and asked (channel, condition) arms, for
    #: ``--prune-baseline`` (on the xdist controller, from the check made before collection).
    suite_shapes: dict[str, tuple[frozenset[str], frozenset[tuple[str, str]]]] = field(
        default_factory=dict
    )
    #: Per suite this process loaded: the suite file its cassettes record (glue/recording.py).
    suite_files: dict[str, str] = field(default_factory=dict)
    _limits: SuiteLimits | None = None
    _runtime: Runtime | None = None
    _judges: dict[str, Judge] = field(default_factory=dict)

    @property
    def builtin_files(self) -> set[Path]:
        """The real files of the built-in suites this run adds."""
        from pytest_cardprobe.suite.builtin import builtin_suite_path

        return {builtin_suite_path(name).resolve() for name in self.settings.suites}

    @property
    def runtime(self) -> Runtime:
        """The probe runner, created on first use (one per worker)."""
        if self._runtime is None:
            workerinput = getattr(self.config, "workerinput", None)
            index = 0
            if workerinput is not None:
                index = int(str(workerinput.get("workerid", "gw0")).lstrip("gw") or 0)
            hook = self.config.hook
            carried = carried_options(self.config.invocation_params.args)
            self._runtime = Runtime(
                self.settings,
                backend_for(
                    self.settings.record_mode,
                    max_bytes=int(self.settings.max_file_mb * MB),
                    redact=self.settings.redact_fields,
                ),
                server_index=index,
                adjust=lambda request, probe: hook.pytest_cardprobe_adjust_request(
                    request=request, probe=probe, config=self.config
                ),
                rerecord_hint=lambda nodeid, model: rerecord_hint(nodeid, model, carried),
                suite_file=lambda suite: suite_file(suite, self.config.rootpath),
            )
        return self._runtime

    @property
    def limits(self) -> SuiteLimits:
        """What suites of this run may read (roots, size cap) and ask for (samples)."""
        if self._limits is None:
            from pytest_cardprobe.glue.guard import suite_limits

            self._limits = suite_limits(self.config, self.settings)
        return self._limits

    @property
    def lanes(self) -> int:
        """Contiguous runs of probe tests a live run is split into: one per server slot."""
        return len(self.settings.servers) * max(1, self.settings.parallel)

    def note_suite(self, suite: Suite) -> None:
        """Remember what ``suite`` has (its cases and arms) for pruning the baseline."""
        from pytest_cardprobe.suite.matrix import asked_arms

        self.suite_shapes[suite.name] = (frozenset(c.id for c in suite.cases), asked_arms(suite))
        self.suite_files[suite.name] = suite_file(suite, self.config.rootpath)

    def recording_clashes(self) -> list[str]:
        """A recording run's usage errors: suites whose cassette folder holds another file's."""
        if not self.settings.live:
            return []
        return clashes(
            self.suite_files.items(),
            self.settings.cassette_dir,
            int(self.settings.max_file_mb * MB),
        )

    def judge_names(self) -> JudgeNames:
        """Names a suite's ``judge:`` key may use: built-ins plus plugin-provided ones."""
        return JudgeNames(self)

    def has_judge(self, name: object) -> bool:
        """True when a built-in or a plugin provides the judge ``name``."""
        if not isinstance(name, str):
            return False
        if name in self._judges or name in BUILTIN_JUDGES:
            return True
        provided = self.config.hook.pytest_cardprobe_get_judge(name=name, config=self.config)
        if provided is not None:
            self._judges[name] = provided
        return provided is not None

    def judge_for(self, name: str) -> Judge:
        """The judge called ``name``: a plugin's, else a built-in."""
        if name not in self._judges:
            provided = self.config.hook.pytest_cardprobe_get_judge(name=name, config=self.config)
            self._judges[name] = provided or BUILTIN_JUDGES[name]
        return self._judges[name]


class JudgeNames(Collection[str]):
    """Judge names as a collection whose membership test asks the plugins."""

    def __init__(self, state: CardprobeState) -> None:
        self._state = state

    def __contains__(self, name: object) -> bool:
        return self._state.has_judge(name)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*BUILTIN_JUDGES, *self._state._judges}))

    def __len__(self) -> int:
        return len({*BUILTIN_JUDGES, *self._state._judges})


STATE_KEY = pytest.StashKey[CardprobeState]()


def get_state(config: pytest.Config) -> CardprobeState:
    """The session's state (created in ``pytest_configure``)."""
    return config.stash[STATE_KEY]
