"""The ``cardprobe`` fixture: ask a model from an ordinary Python test."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.glue.hints import shell_quoted
from pytest_cardprobe.glue.internal import InternalError, internal_report
from pytest_cardprobe.glue.items import SuiteWarning
from pytest_cardprobe.judge.card import REFERENCE_VOCABULARY, judge_card
from pytest_cardprobe.run.result import probe_result
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.suite.askcall import CallAsk, call_probe_suite
from pytest_cardprobe.suite.loader import CALL_CHANNEL, SuiteError, SuiteLimits
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.text import escape_control, model_problem
from pytest_cardprobe.types import (
    ChatReply,
    ChatRequest,
    ProbeResult,
    SampleRecord,
    Status,
    Verdict,
)
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.paths import fixture_cassette_path
from pytest_cardprobe.wire.errors import CassetteProblem, ClientError
from pytest_cardprobe.wire.redact import run_secrets


@dataclass(frozen=True)
class Asked:
    """What one ``cardprobe.ask`` returned."""

    reply: ChatReply | None  # None when the call failed on infra
    route: str | None
    verdict: Verdict
    record: SampleRecord

    @property
    def passed(self) -> bool:
        """The judge's pass/fail."""
        return self.verdict.passed

    @property
    def label(self) -> str:
        """The judge's label, worded as a suite's test words it (the failure's reason).

        Control characters of the model's text in it (a tool name, an argument) are escaped:
        ``assert asked.passed, asked.label`` prints it to the terminal as it is.
        ``verdict.label`` keeps the judge's own text.
        """
        return escape_control(self.verdict.label)

    def __repr__(self) -> str:
        # What an assertion's report shows: the verdict, not the whole reply and record.
        return f"Asked(passed={self.passed}, route={self.route!r}, label={self.verdict.label!r})"


@dataclass
class Cardprobe:
    """Asks models on behalf of one test; every ask is one recorded sample."""

    runtime: Runtime
    nodeid: str
    default_model: str | None
    limits: SuiteLimits = field(default_factory=SuiteLimits)
    # The command that records this test again (with the run's model and options), shown
    # when its cassette is stale or missing; without one, ``pytest --live NODEID``.
    rerecord: str | None = None
    samples: list[SampleRecord] = field(default_factory=list)
    run: int = 0  # which samples(n) run of the test body is going on
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _recording_open: Recording | None = None

    def __repr__(self) -> str:
        # pytest shows a failed test's arguments above the failure: one short line.
        return (
            f"Cardprobe(nodeid={self.nodeid!r}, model={self.default_model!r}, "
            f"samples={len(self.samples)})"
        )

    def _recording(self) -> Recording:
        """The test's one cassette, opened at the first ask, holding every model's calls.

        One cassette per test, not per model: live, vcrpy records into the innermost open
        cassette, so per-model cassettes opened side by side would get each other's calls.
        """
        if self._recording_open is None:
            path = fixture_cassette_path(self.runtime.settings.cassette_dir, self.nodeid)
            self._recording_open = self._stack.enter_context(
                self.runtime.backend.open(
                    path,
                    fingerprint=None,
                    rerecord_hint=self.rerecord or f"pytest --live {shell_quoted(self.nodeid)}",
                )
            )
        return self._recording_open

    def ask(
        self,
        messages: str | Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | str | Path | None = None,
        accept: Sequence[str] | None = None,
        requires_input: bool | None = None,
        model: str | None = None,
        options: dict[str, Any] | None = None,
        system: str | None = None,
        expect: Mapping[str, Any] | None = None,
        results: Any = None,
        max_turns: int | None = None,
        condition: str | None = None,
    ) -> Asked:
        """Ask once and judge the reply: as a card, or, with ``expect``, by its calls.

        ``messages`` is the question as text or a list of messages ending with the user's;
        ``system`` puts a system prompt before them.

        A card: ``accept`` lists the element types that answer the question (default: any
        card; ``[]`` means prose is the right answer). With ``tools`` the first declared tool
        is the card tool, and its ``body`` argument is judged.

        A call probe: ``expect`` is a call suite case's ``expect:`` (``call`` with ``args``
        matchers, ``no_call``, ``calls``, ``sequence``, ...), judged against ``tools`` (the
        declarations, or a tools file relative to the calling file); ``results`` and
        ``max_turns`` drive a ``sequence``'s tool loop; ``condition="required"`` forces the
        call. The loader reads them by a suite's rules and refuses what it would refuse.
        """
        __tracebackhide__ = True
        caller = sys._getframe(1)
        where = Path(caller.f_code.co_filename), caller.f_lineno
        try:
            if expect is not None:
                if accept is not None or requires_input is not None:
                    raise ValueError(
                        "cardprobe.ask: accept= and requires_input= judge a card; a call "
                        "probe (expect=) is judged by its expectation alone"
                    )
                call = CallAsk(
                    messages, tools, expect, system, results, max_turns, condition or "cold",
                    options,
                )  # fmt: skip
                return self._ask_calls(call, *where, model)
            extra = {"results": results, "max_turns": max_turns, "condition": condition}
            given = [f"{k}=" for k, v in extra.items() if v is not None]
            if given or isinstance(tools, str | Path):
                raise ValueError(
                    f"cardprobe.ask: {', '.join(given) or 'a tools file'} go with expect= "
                    "(a call probe); a card is asked with tools as a list of declarations"
                )
            if isinstance(messages, str):
                said: list[dict[str, Any]] = [{"role": "user", "content": messages}]
            else:
                said = list(messages)
            if system is not None:
                said = [{"role": "system", "content": system}, *said]
            card_tools = tools if not isinstance(tools, str | Path) else None
            return self._ask(said, card_tools, accept, requires_input, model, options)
        except SuiteError as exc:
            raise SuiteError(exc.path, exc.problem, exc.key, exc.line) from None
        except (CassetteProblem, ValueError, ClientError) as exc:
            raise type(exc)(str(exc)) from None
        except Exception as exc:
            # A bug of the plugin: its own report, without our frames' arguments or secrets.
            report = internal_report(exc, run_secrets(self.runtime.settings))
            raise InternalError(report) from None

    def _model(self, model: str | None) -> str:
        name = model or self.default_model
        if not name:
            raise ValueError("no model: pass model=... or configure --model / cardprobe_models")
        problem = model_problem(name)
        if problem:
            raise ValueError(f"cardprobe.ask(model={name!r}): the model name {problem}")
        return name

    def _ask(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        accept: Sequence[str] | None,
        requires_input: bool | None,
        model: str | None,
        options: dict[str, Any] | None,
    ) -> Asked:
        name = self._model(model)
        wanted = tuple(REFERENCE_VOCABULARY if accept is None else accept)
        needs_input = (
            requires_input
            if requires_input is not None
            else bool(wanted) and accept is not None and all(t.startswith("Input.") for t in wanted)
        )
        request = ChatRequest(
            model=name,
            messages=[dict(m) for m in messages],
            tools=[dict(t) for t in tools or []],
            options={**self.runtime.settings.base_options(), **(options or {})},
        )
        rec = self._recording()
        channel = "tool" if request.tools else "prose"
        record, reply = self.runtime.ask(
            request,
            channel,
            lambda text: judge_card(text, accept=wanted, requires_input=needs_input),
            len(self.samples),
        )
        return self._asked(rec, record, reply)

    def _ask_calls(self, call: CallAsk, path: Path, line: int, model: str | None) -> Asked:
        """A call probe: a one-case call suite read by the loader, asked by its way of asking
        (one turn, or the tool loop) and judged by the call judge, as in a suite."""
        name = self._model(model)
        suite = call_probe_suite(call, path, line, self.limits)
        for doubt in suite.warnings:
            warnings.warn_explicit(
                SuiteWarning(str(doubt)), None, str(doubt.source), doubt.line or 1
            )
        probe = Probe(suite, suite.cases[0], name, CALL_CHANNEL, call.condition)
        s = self.runtime.settings
        base = build_request(probe, s.base_options(), s.think or s.think_default, api=s.api)
        rec = self._recording()
        way = self.runtime.way_of_asking(probe, base, base, None, self.runtime.server, None)
        record, reply = way.sample(len(self.samples))
        return self._asked(rec, record, reply)

    def _asked(self, rec: Recording, record: SampleRecord, reply: ChatReply | None) -> Asked:
        if record.failure == "infra":
            rec.keep = False
        self.samples.append(record)
        verdict = Verdict(
            passed=record.passed,
            label=record.label,
            failure=None if record.failure is None else _failure(record.failure),
            types=tuple(record.types),
            unknown_types=tuple(record.unknown_types),
        )
        return Asked(reply, record.route, verdict, record)

    def result(self, status: Status) -> ProbeResult:
        """This test's samples as a result record (kept out of suite arms)."""
        return probe_result(
            self.nodeid, None, status, model=self.default_model or "", samples=self.samples
        )

    def close(self) -> None:
        """Finish the cassettes this test opened."""
        self._stack.close()


def _failure(value: str) -> Any:
    from pytest_cardprobe.types import FailureClass

    return FailureClass(value)
