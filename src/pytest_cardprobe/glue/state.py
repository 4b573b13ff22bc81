"""Per-session state kept in ``config.stash``."""

from __future__ import annotations

import functools
import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.files import MB, shown
from pytest_cardprobe.glue.baseref import Base
from pytest_cardprobe.glue.hints import carried_options, rerecord_hint
from pytest_cardprobe.glue.recording import clashes, suite_file
from pytest_cardprobe.judge.registry import BUILTIN_JUDGES, Judge
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.baseline import Baseline
from pytest_cardprobe.score.gate import Gate
from pytest_cardprobe.score.outcome import Against
from pytest_cardprobe.score.summary import Block
from pytest_cardprobe.source.reader import SourceReader
from pytest_cardprobe.suite.loader import Suite, SuiteLimits
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.cassettes.modes import backend_for
from pytest_cardprobe.wire.redact import redact_url


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
    # The base's baseline, with --cardprobe-baseline-ref (glue/baseref.py).
    base: Base | None = None
    arms: list[ArmScore] = field(default_factory=list)
    gate: Gate | None = None
    #: Suite files this process collected (or checked before an xdist run).
    suites_found: int = 0
    #: A message for the end of the run that is not part of the scoreboard.
    notice: str = ""
    suite_names: dict[str, Path] = field(default_factory=dict)
    #: The suites this process loaded, by name (the controller's, for glue/progress.py).
    suites: dict[str, Suite] = field(default_factory=dict)
    #: Per suite this process loaded: its case ids and asked (channel, condition) arms, for
    #: ``--prune-baseline`` (on the xdist controller, from the check made before collection).
    suite_shapes: dict[str, tuple[frozenset[str], frozenset[tuple[str, str]]]] = field(
        default_factory=dict
    )
    #: Per suite this process loaded: the suite file its cassettes record (glue/recording.py).
    suite_files: dict[str, str] = field(default_factory=dict)
    #: The real paths of every file the suites of this process were read from: no report
    #: may be written over one (glue/guard.input_clashes, reports.write_reports).
    read_files: set[str] = field(default_factory=set)
    #: What the reports say beside the scoreboard (score/summary.py), built at the end.
    blocks: list[Block] = field(default_factory=list)
    #: Per suite name: whether anything of it was ever recorded (glue/replaying.py).
    recorded_suites: dict[str, bool] = field(default_factory=dict)
    #: Reports of tests that could not replay, kept out of pytest's FAILURES section.
    set_aside: list[Any] = field(default_factory=list)
    _limits: SuiteLimits | None = None
    _runtime: Runtime | None = None
    _sources: SourceReader | None = None
    _judges: dict[str, Judge] = field(default_factory=dict)
    _carried: list[str] | None = None

    @property
    def builtin_files(self) -> set[Path]:
        """The real files of the built-in suites this run adds."""
        from pytest_cardprobe.suite.builtin import builtin_suite_path

        return {builtin_suite_path(name).resolve() for name in self.settings.suites}

    def close(self) -> None:
        """Close the runtime's connection pools, when a runtime was made."""
        if self._runtime is not None:
            self._runtime.close()

    @property
    def runtime(self) -> Runtime:
        """The probe runner, created on first use (one per worker)."""
        if self._runtime is None:
            workerinput = getattr(self.config, "workerinput", None)
            index = 0
            if workerinput is not None:
                index = int(str(workerinput.get("workerid", "gw0")).lstrip("gw") or 0)
            hook = self.config.hook
            self._runtime = Runtime(
                self.settings,
                backend_for(
                    self.settings.record_mode,
                    max_bytes=int(self.settings.max_file_mb * MB),
                    redact=self.settings.redact_fields,
                    limits=self.settings.stream_limits,
                ),
                server_index=index,
                # The hook itself, so the runtime calls the plugins, not a closure of glue's;
                # and whether any plugin implements it (a request nothing edits is written
                # once per test).
                adjust=functools.partial(hook.pytest_cardprobe_adjust_request, config=self.config),
                adjusts=lambda: bool(hook.pytest_cardprobe_adjust_request.get_hookimpls()),
            )
        return self._runtime

    def rerecord_hint(self, nodeid: str, model: str) -> str:
        """The command that records the test ``nodeid`` again, with this run's options."""
        if self._carried is None:
            self._carried = carried_options(self.config.invocation_params.args)
        return rerecord_hint(nodeid, model, self._carried)

    def suite_file(self, suite: Suite) -> str:
        """The identity a recording of ``suite`` writes (glue/recording.py): the one noted
        when this process collected that very suite (resolving its path costs more than the
        rest of a replayed test's glue), else worked out now."""
        if self.suites.get(suite.name) is suite:
            return self.suite_files[suite.name]
        return suite_file(suite, self.config.rootpath)

    @property
    def sources_read(self) -> SourceReader | None:
        """The reader of the application's sources if a suite needed it, else None."""
        return self._sources

    @property
    def sources(self) -> SourceReader:
        """What suites of this run read from the application (glue/sources.py), made once."""
        if self._sources is None:
            from pytest_cardprobe.glue.sources import make_reader

            self._sources = make_reader(self.config, self.settings)
        return self._sources

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

        self.suites[suite.name] = suite
        self.suite_shapes[suite.name] = (frozenset(c.id for c in suite.cases), asked_arms(suite))
        self.suite_files[suite.name] = suite_file(suite, self.config.rootpath)
        from pytest_cardprobe.glue.guard import suite_inputs

        self.read_files.update(os.path.realpath(p) for p in suite_inputs(suite))

    def recording_clashes(self) -> list[str]:
        """A recording run's usage errors: suites whose cassette folder holds another file's."""
        if not self.settings.live:
            return []
        return clashes(
            self.suite_files.items(),
            self.settings.cassette_dir,
            int(self.settings.max_file_mb * MB),
        )

    def read_baselines(self) -> list[str]:
        """Read the baseline (and, with ``--cardprobe-baseline-ref``, the base's) before any
        test runs; the problems (naming file and key), if any.

        This is the only place the baselines are read and checked. Every process reads them
        (xdist workers too): outcomes are decided where a test ran.
        ``--cardprobe-update-baseline`` replaces a broken file, so there the problem is a
        note, not a usage error.
        """
        from pytest_cardprobe.glue.baseref import BaseRefError, read_base
        from pytest_cardprobe.score.baseline import BaselineError, load_baseline

        settings = self.settings
        max_bytes = int(settings.max_file_mb * MB)
        try:
            self.baseline = load_baseline(settings.baseline, max_bytes)
        except BaselineError as exc:
            if not settings.update_baseline:
                return [f"{exc} (--cardprobe-baseline / ini cardprobe_baseline)"]
            self.baseline_notes.append(f"replacing a baseline that could not be read: {exc}")
        if settings.baseline_ref:
            try:
                self.base = read_base(settings.baseline_ref, settings.baseline, max_bytes)
            except BaseRefError as exc:
                return [str(exc)]
        return []

    def header(self) -> str:
        """The run's header line (``pytest_report_header``): replay or record, the baseline
        in force, and with a recording run the servers and models."""
        s = self.settings
        if s.live:
            servers = ", ".join(redact_url(url) for url in s.servers)
            doing = f"record (mode {s.record_mode}) from {servers} ({s.api} API)"
        else:
            doing = "replay (record mode none: no server is asked)"
        models = f"models {', '.join(s.models)}" if s.models else "no model given"
        where = shown(s.baseline)
        if s.update_baseline:
            baseline = f"writing the baseline {where}"
        elif self.baseline is None:
            baseline = f"no baseline yet ({where} does not exist)"
        else:
            baseline = f"baseline {where}"
        if self.base is not None:
            baseline += f", gating against {self.base.shown} ({self.base.path} there)"
        return f"cardprobe: {doing}; {models}; {baseline}"

    def against(self, runxfail: bool) -> Against:
        """What a test is read against (score/outcome.score_result): the base's baseline
        when a base ref is set (the change's own for a case the base lacks), else the
        committed one; a flip is accepted by this update's reason, or by an acceptance the
        change committed for this very base."""
        own, base = self.baseline, self.base.baseline if self.base else None
        return Against(
            base or own, own if base else None, self.accepts, runxfail, self.settings.strict_review
        )

    def accepts(self, arm: str, case: str, before: str, after: str) -> str | None:
        """The reason a flip is accepted in this run, or None (score/outcome.Accepts)."""
        settings = self.settings
        if settings.update_baseline and settings.accept_reason:
            return settings.accept_reason
        if self.baseline is None or (self.base is None and not settings.update_baseline):
            return None
        # Gated against a base, or an update with no new reason: what the committed baseline
        # accepted against this very base (an update keeps it, a gate honours it).
        commit = self.base.commit if self.base else None
        key = ("flip", arm, case, before, after)
        found = (a for a in self.baseline.accepted if a.key == key and a.base == commit)
        return next((a.reason for a in found), None)

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
