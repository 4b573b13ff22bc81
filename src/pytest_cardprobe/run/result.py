"""The one constructor of a test's result (:class:`~pytest_cardprobe.types.ProbeResult`)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.types import ProbeResult, SampleRecord, Status


def probe_result(
    nodeid: str,
    probe: Probe | None,
    status: Status = Status.PASSED,
    message: str | None = None,
    *,
    model: str = "",
    samples: Sequence[SampleRecord] = (),
) -> ProbeResult:
    """The one constructor of a test's result.

    Of a probe: its arm and case; a passing result to be filled in by its samples carries the
    case's canary role and draft mark, one that ended before it had a verdict (``status``
    error) does not (counted, never scored). Of a fixture-driven test (``probe`` None): keyed
    by its node id and ``model`` and kept out of suite arms.
    """
    if probe is None:
        return ProbeResult(nodeid, "", model, "", "", nodeid, status, list(samples), message)
    judged = status != Status.ERROR
    return ProbeResult(
        nodeid=nodeid,
        suite=probe.suite.name,
        model=probe.model,
        channel=probe.channel,
        condition=probe.condition,
        case=probe.case.id,
        status=status,
        samples=list(samples),
        message=message,
        canary=probe.case.canary if judged else None,
        draft=True if judged and not probe.case.reviewed else None,
    )
