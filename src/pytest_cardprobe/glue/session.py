"""Controller-side session end: score arms, gate, write reports, set the exit status.

The steps are separate functions so each reads on its own: :func:`decide_gate` (baseline
I/O happens here, decisions in ``score/gate.py``), :func:`exit_status` (the one rule),
:func:`write_reports` (``reports.py``). Rendering lives in ``score/report.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pytest

from pytest_cardprobe.files import MB, shown
from pytest_cardprobe.glue.baseref import Base
from pytest_cardprobe.glue.hints import (
    accept_base_command,
    accept_command,
    no_suite_message,
    nothing_selected,
    record_command,
)
from pytest_cardprobe.glue.reports import write_reports, written
from pytest_cardprobe.glue.state import CardprobeState
from pytest_cardprobe.score import gate as gating
from pytest_cardprobe.score.accepting import applied, carried, pending, uncommitted
from pytest_cardprobe.score.aggregate import ArmScore, Canary, aggregate, canaries
from pytest_cardprobe.score.basediff import baseline_diff
from pytest_cardprobe.score.baseline import Baseline
from pytest_cardprobe.score.baseline_update import BaselineUpdate, route_counts, write_baseline
from pytest_cardprobe.score.drafts import draft_counts, draft_lines, split_drafts
from pytest_cardprobe.score.gate import Decision, Gate
from pytest_cardprobe.score.outcome import FAILED, FLIP, UNREVIEWED
from pytest_cardprobe.score.summary import unreplayed, update_block, verdict_block
from pytest_cardprobe.types import ProbeResult, Status


@dataclass(frozen=True)
class Failures:
    """What failed in the run, sorted by whether the gate may forgive it."""

    flips: int  # probe tests that passed in the baseline and fail now
    unbaselined: int  # failing probe tests with no baseline verdict
    errors: int  # stale, missing or corrupt cassettes; unknown models; infra
    others: int  # ordinary tests, setup errors, fixture-driven probes
    crashed: int  # xdist workers that died
    unreviewed: int = 0  # drafted cases failed by --cardprobe-strict-review

    def forgivable(self, updating: bool) -> bool:
        """Every failure is a flip (or, while recording a baseline, any model failure)."""
        if self.errors or self.others or self.crashed or self.unreviewed:
            return False
        return not self.unbaselined or updating


def scored(results: Sequence[ProbeResult]) -> list[ProbeResult]:
    """The suite tests of a run the gate reads: all but those of a suite never recorded
    (skipped: it has nothing to compare yet; glue/replaying.py)."""
    return [r for r in results if r.suite and r.problem != "never recorded"]


def tally(state: CardprobeState) -> Failures:
    """Sort the run's failures (from results riding on reports, and reports without one)."""
    suite = scored(state.results)
    return Failures(
        flips=sum(r.outcome == FLIP for r in suite),
        unbaselined=sum(r.outcome == FAILED for r in suite),
        errors=sum(r.status in (Status.ERROR, Status.INFRA) for r in suite),
        others=len(state.other_failures)
        + sum(not r.suite and r.status == Status.FAILED for r in state.results),
        crashed=len(state.crashed_workers),
        unreviewed=sum(r.outcome == UNREVIEWED for r in suite),
    )


def exit_status(status: int, gate: Gate | None, failures: Failures, updating: bool) -> int:
    """pytest's own status with the gate added.

    A failing gate or a crashed worker turns 0 into 1. A failed run is lowered to 0 only
    when the gate passed and every failure is a flip (so within the noise floor), or a
    model failure that ``--cardprobe-update-baseline`` is recording.
    """
    if status == pytest.ExitCode.OK and ((gate is not None and gate.failed) or failures.crashed):
        return pytest.ExitCode.TESTS_FAILED
    if (
        status == pytest.ExitCode.TESTS_FAILED
        and gate is not None
        and not gate.failed
        and failures.forgivable(updating)
    ):
        return pytest.ExitCode.OK
    return status


def decide_gate(
    state: CardprobeState,
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    problems: list[str] | None = None,
) -> Gate | None:
    """Merge this run into the baseline (``--cardprobe-update-baseline``) or compare with the
    baselines loaded at start: the committed one, and the base's with a base ref.

    Both are compared against the base's baseline when a base ref is set, else against the
    committed one. A baseline that cannot be written is added to ``problems`` (when given;
    else raised). ``--prune-baseline`` also drops what the suites this run collected no
    longer have.
    """
    if not arms:
        return None
    found = canaries(results)
    base = state.base
    compared = gating.decide(
        arms, results, base.baseline if base else state.baseline, state.settings.gate, found
    )
    if state.settings.update_baseline:
        return update_baseline(state, arms, results, found, compared, problems)
    if base is None:
        return compared
    return against_base(state, base, arms, results, found, compared)


def against_base(
    state: CardprobeState,
    base: Base,
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    found: Sequence[Canary],
    compared: Gate,
) -> Gate:
    """The gate against the base: the change's committed acceptances for this base applied
    (each accepted regression listed, not counted), and this run checked against the
    committed baseline exactly (replay is deterministic: a difference is something not
    committed). An accepted regression passes, or fails with ``cardprobe_accepted_regressions
    = fail``."""
    settings, own = state.settings.gate, state.baseline
    counts = route_counts(results)
    accepted = own.accepted if own else []
    adjusted, used, notes = applied(compared, base.baseline, accepted, base.commit, arms, counts)
    gate = gating.decide(arms, results, adjusted, settings, found) if used else compared
    if used:
        # Every report shows the arms as they compare with the base; an arm whose losses the
        # change accepted reads "accepted", not as a regression nor as unchanged.
        for arm, raw in compared.arms.items():
            if raw.word == gating.REGRESSION and gate.arms[arm].word != gating.REGRESSION:
                raw.word = "accepted"
        gate.arms = compared.arms
    gate.against, gate.accepted, gate.not_accepted = base.shown, used, notes
    measured = {c.key: c.verdict for c in found if c.measured}
    gate.uncommitted = uncommitted(arms, own, measured)
    if gate.uncommitted:
        gate.decision = Decision.FAIL
    elif used and gate.decision == Decision.PASS:
        gate.decision = Decision.ACCEPTED
        if settings.accepted == "fail":
            gate.decision = Decision.FAIL
            gate.regressions.append(
                f"{len(used)} accepted regression(s) wait for a person's approval "
                "(ini cardprobe_accepted_regressions = fail)"
            )
    return gate


def update_baseline(
    state: CardprobeState,
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    found: Sequence[Canary],
    compared: Gate,
    problems: list[str] | None,
) -> Gate:
    """``--cardprobe-update-baseline``: refuse an update with regressions (against the base
    with a base ref, else against the old baseline) that gives no reason; otherwise write the
    baseline with what it accepts, each regression keyed exactly with the reason and the base
    commit, so the acceptance is part of the diff a reviewer reads."""
    settings, base = state.settings, state.base
    against = base.shown if base else f"the committed baseline {shown(settings.baseline)}"
    # What needs a reason: arms that regressed and canaries that changed (not an arm that
    # --cardprobe-strict-baseline misses: the update is what writes it).
    regressed = compared.canary_changes or any(
        c.words.get(compared.mode) == gating.REGRESSION for c in compared.arms.values()
    )
    commit = base.commit if base else None
    ref = base.ref if base else None
    earlier = {(a.key, a.base): a for a in (state.baseline.accepted if state.baseline else [])}
    # An update again against the same base needs no new reason for what the committed
    # baseline already accepts against it; only a regression it does not cover does.
    uncovered = [w for w in pending(compared) if (w.key, commit) not in earlier]
    if regressed and uncovered and not settings.accept_reason:
        refused = gating.updated(arms, settings.gate.noise_floor, BaselineUpdate(""), found)
        refused.decision, refused.against = Decision.REFUSED, against
        refused.regressions = [r for r in compared.regressions if "strict-baseline" not in r]
        return refused
    accepted = []
    for wanted in pending(compared):
        kept = earlier.get((wanted.key, commit))
        if kept is not None:
            accepted.append(kept)  # accepted before, against this base: its reason stays
        elif settings.accept_reason:
            accepted.append(
                replace(wanted, reason=settings.accept_reason, base=commit, base_ref=ref)
            )
    # What this update accepts for its own regressions is listed; what it carries over
    # (about cases it did not judge, or still true where it cannot see the base) is kept.
    carry = carried(list(earlier.values()), accepted, arms, found, base is not None)
    path = settings.baseline
    prune = state.suite_shapes if settings.prune_baseline else None
    done: list[BaselineUpdate] = []

    def write() -> None:
        cap = int(settings.max_file_mb * MB)  # the cap of the configure-time read
        done.append(write_baseline(path, arms, results, found, prune, accepted + carry, cap))

    if problems is None:
        write()
    else:
        failed = written("baseline", path, write)
        if failed:
            problems.append(failed)
    update = done[0] if done else BaselineUpdate(shown(path))
    update.path = shown(path)
    gate = gating.updated(arms, settings.gate.noise_floor, update, found)
    gate.against, gate.accepted = against, accepted if done else []
    accepted_keys = {a.key for a in gate.accepted}
    gate.warnings = [
        f"{arm}: {flip}" for arm, flip in compared.flips
        if ("flip", arm, flip.case, flip.before, flip.after) not in accepted_keys
    ]  # fmt: skip
    return gate


def notes(state: CardprobeState, gate: Gate | None, failures: Failures, lowered: bool) -> list[str]:
    """Lines printed after the scoreboard: what else the reader must know about the exit."""
    lines = list(state.baseline_notes)
    lines += [
        f"ERROR: xdist worker crashed: {crash} — its tests have no verdict"
        for crash in state.crashed_workers
    ]
    lines += breaker_lines(state.results)
    lines += warmup_lines(state.results)
    if lowered and gate is not None and gate.decision == Decision.UPDATED and failures.flips:
        lines.append(
            f"{failures.flips} flip(s) {gate.tolerance}, written without an acceptance, so the "
            "run exits 0: " + "; ".join(gate.warnings)
        )
    elif lowered and gate is not None and failures.flips:
        lines.append(
            f"{failures.flips} flip(s) {gate.tolerance}, so the run "
            "exits 0: " + ", ".join(f"{arm} {flip}" for arm, flip in gate.flips)
        )
    elif lowered:
        lines.append("probe failures recorded into the baseline, so the run exits 0")
    blocked = sum(r.problem in ("not recorded", "stale") for r in state.results)
    if failures.errors > blocked:
        lines.append(
            f"{failures.errors - blocked} probe test(s) errored (corrupt cassette, server or "
            "infra error) — never forgiven by the gate"
        )
    return lines


def finish(session: pytest.Session, state: CardprobeState) -> None:
    """Decide the run: score, gate, set the exit status, write reports, call the hook."""
    if (
        session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        and state.settings.models
        and not state.suites_found
    ):
        state.notice = no_suite_message()
    settings = state.settings
    unselected = nothing_selected(
        settings.channels,
        settings.conditions,
        {name: arms for name, (_, arms) in state.suite_shapes.items()},
    )
    if unselected:
        state.notice = "\n".join([*unselected, *([state.notice] if state.notice else [])])
    # Unreviewed drafted cases are counted apart: neither the gate nor the baseline sees them.
    results, drafts = split_drafts(scored(state.results))
    arms = aggregate(results)
    args = session.config.invocation_params.args
    found = unreplayed(state.results, lambda mode: record_command(args, mode))
    state.blocks = [found.block()] if found else []
    problems: list[str] = []
    gate = decide_gate(state, arms, results, problems)
    if gate is not None and gate.decision in (Decision.UPDATED, Decision.REFUSED):
        state.blocks.insert(0, update_block(gate, accept_command(args)))
    elif gate is not None and state.base is not None:
        diff = baseline_diff(state.base.baseline, state.baseline or Baseline())
        command = accept_base_command(args)
        state.blocks.insert(0, verdict_block(gate, diff, found.total if found else 0, command))
    failures = tally(state)
    before = session.exitstatus
    session.exitstatus = exit_status(before, gate, failures, state.settings.update_baseline)
    lowered = before != session.exitstatus == pytest.ExitCode.OK
    state.arms, state.gate = arms, gate
    state.summary = draft_lines(drafts) + notes(state, gate, failures, lowered)
    problems += write_reports(state, arms, gate)
    for problem in problems:
        state.summary.append(f"ERROR: {problem}")
    if problems and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    report: dict[str, object] = {
        "arms": [a.to_dict() for a in arms],
        "gate": gate.to_dict() if gate else None,
    }
    if drafts:
        report["unreviewed"] = draft_counts(drafts)
    state.report = report
    session.config.hook.pytest_cardprobe_report(report=report, config=session.config)


def breaker_lines(results: list[ProbeResult]) -> list[str]:
    """One line per server whose breaker opened, with how many tests it spared."""
    spared: dict[str, int] = {}
    why: dict[str, str] = {}
    for result in results:
        server = result.broken_server
        if server is not None and not result.samples:
            spared[server] = spared.get(server, 0) + 1
            why.setdefault(server, result.message or "")
    return [
        f"circuit breaker opened on {server}: {count} test(s) failed as infra and were not "
        f"asked — {why[server]}"
        for server, count in spared.items()
    ]


def warmup_lines(results: list[ProbeResult]) -> list[str]:
    """The warm-up requests of a live run, apart from the tests they preceded."""
    lines = []
    for result in results:
        warm = result.warmup
        if not warm:
            continue
        outcome = f"failed: {warm['error']}" if warm.get("error") else "ok"
        lines.append(
            f"warm-up (unrecorded, unscored): {warm['model']} on {warm['server']}: "
            f"{warm.get('seconds', 0):.2f} s, {outcome}"
        )
    return lines
