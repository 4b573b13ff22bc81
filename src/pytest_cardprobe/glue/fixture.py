"""The ``cardprobe`` fixture: ask a model from an ordinary Python test."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.glue.internal import InternalError, internal_report, run_secrets
from pytest_cardprobe.judge.card import REFERENCE_VOCABULARY, judge_card
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.types import ChatReply, ChatRequest, ProbeResult, SampleRecord, Verdict
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.paths import fixture_cassette_path
from pytest_cardprobe.wire.errors import CassetteProblem


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


@dataclass
class Cardprobe:
    """Asks models on behalf of one test; every ask is one recorded sample."""

    runtime: Runtime
    nodeid: str
    default_model: str | None
    samples: list[SampleRecord] = field(default_factory=list)
    run: int = 0  # which samples(n) run of the test body is going on
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _recording_open: Recording | None = None

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
                    rerecord_hint=f"pytest --live {shlex.quote(self.nodeid)}",
                )
            )
        return self._recording_open

    def ask(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        accept: Sequence[str] | None = None,
        requires_input: bool | None = None,
        model: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> Asked:
        """Ask once and judge the reply as a card.

        ``accept`` lists the element types that answer the question (default: any card;
        ``[]`` means prose is the right answer). With ``tools`` the first declared tool is
        the card tool, and its ``body`` argument is judged.
        """
        __tracebackhide__ = True
        try:
            return self._ask(messages, tools, accept, requires_input, model, options)
        except (CassetteProblem, ValueError) as exc:
            raise type(exc)(str(exc)) from None
        except Exception as exc:
            # A bug of the plugin: its own report, without our frames' arguments or secrets.
            report = internal_report(exc, run_secrets(self.runtime.settings))
            raise InternalError(report) from None

    def _ask(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        accept: Sequence[str] | None,
        requires_input: bool | None,
        model: str | None,
        options: dict[str, Any] | None,
    ) -> Asked:
        name = model or self.default_model
        if not name:
            raise ValueError("no model: pass model=... or configure --model / cardprobe_models")
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

    def result(self, status: str) -> ProbeResult:
        """This test's samples as a result record (kept out of suite arms)."""
        return ProbeResult(
            nodeid=self.nodeid,
            suite="",
            model=self.default_model or "",
            channel="",
            condition="",
            case=self.nodeid,
            status=status,
            samples=list(self.samples),
        )

    def close(self) -> None:
        """Finish the cassettes this test opened."""
        self._stack.close()


def _failure(value: str) -> Any:
    from pytest_cardprobe.types import FailureClass

    return FailureClass(value)
