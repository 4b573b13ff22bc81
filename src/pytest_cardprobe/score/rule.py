"""The case rule: k of n samples must pass (``samples(n, at_least=k)``, suite key ``at_least``).

A test asks n samples; it passes when at least k of them pass. Without a rule k is n, every
sample must pass, which is what the plugin always did. Pure functions over a
:class:`ProbeResult`, applied where the test ran (``glue/items.py``) so that pytest's
outcome, the aggregate and the baseline all read one status.
"""

from __future__ import annotations

from pytest_cardprobe.types import VERDICT_STATUSES, ProbeResult, Status

PASSED, FAILED = Status.PASSED, Status.FAILED


def effective_at_least(at_least: int | None, samples: int) -> int | None:
    """The rule in force for a test of ``samples`` samples: ``at_least`` capped at the sample
    count (``--samples 1`` on a suite with ``at_least: 2`` asks 1 of 1), None for all-of-n."""
    if at_least is None or at_least >= samples:
        return None
    return max(1, at_least)


def sample_counts(result: ProbeResult) -> tuple[int, int]:
    """(samples that passed, samples judged): an infra sample is no observation."""
    judged = [s for s in result.samples if s.failure != "infra"]
    return sum(s.passed for s in judged), len(judged)


def settle(result: ProbeResult, at_least: int | None) -> ProbeResult:
    """Apply the case rule to a judged result (infra, errors and skips stay as they are).

    ``at_least`` None means every sample must pass.
    """
    result.at_least = at_least
    if result.status not in VERDICT_STATUSES or not result.samples:
        return result
    passed, judged = sample_counts(result)
    need = judged if at_least is None else min(at_least, judged)
    result.status = PASSED if passed >= need else FAILED
    return result


def label_of(result: ProbeResult) -> str:
    """The label a test is known by: a failing test's first failing sample's, a passing
    test's first passing sample's (under k-of-n a passing test may hold failing samples),
    else its first sample's."""
    wanted = result.status == PASSED
    found = next((s.label for s in result.samples if s.passed == wanted), None)
    return found or (result.samples[0].label if result.samples else "")
