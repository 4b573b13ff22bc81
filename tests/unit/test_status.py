"""A probe test's status is one enum (``types.Status``), str-valued: it compares equal to the
strings the reports and baselines carry, and what a worker sends (``ProbeResult.to_dict``)
holds plain strings, which execnet (pytest-xdist) can serialize."""

from __future__ import annotations

import json

import execnet

from pytest_cardprobe.score.rule import FAILED, PASSED
from pytest_cardprobe.types import VERDICT_STATUSES, ProbeResult, Status


def result(status: str, outcome: str | None = None) -> ProbeResult:
    return ProbeResult(
        nodeid="n", suite="s", model="m", channel="prose", condition="cold", case="c",
        status=status, outcome=outcome,
    )  # fmt: skip


def test_the_statuses_are_the_strings_reports_carry() -> None:
    assert [s.value for s in Status] == ["passed", "failed", "infra", "error", "unsupported"]
    assert (PASSED, FAILED) == VERDICT_STATUSES == ("passed", "failed")


def test_a_result_set_from_the_enum_travels_as_plain_strings() -> None:
    sent = result(Status.PASSED, outcome=Status.FAILED).to_dict()
    assert type(sent["status"]) is str and type(sent["outcome"]) is str
    assert sent == result("passed", outcome="failed").to_dict()
    assert json.dumps(sent) == json.dumps(result("passed", outcome="failed").to_dict())
    assert execnet.loads(execnet.dumps(sent))["status"] == "passed"
