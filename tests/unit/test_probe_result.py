"""The probe result's one constructor, its typed status and broken server, and the one
score call that settles a test where it ran."""

from __future__ import annotations

from pathlib import Path

from pytest_cardprobe.glue.session import breaker_lines
from pytest_cardprobe.run.result import probe_result
from pytest_cardprobe.score.baseline import parse_baseline
from pytest_cardprobe.score.outcome import KNOWN, Against, score_result
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ProbeResult, SampleRecord, Status

ROOT = Path(__file__).resolve().parents[2]


def _probe() -> Probe:
    suite = load_suite(ROOT / "cases" / "cards.yaml")
    return next(iter(expand(suite, ["m"])))


def _sample(index: int, passed: bool) -> SampleRecord:
    return SampleRecord(index, "content", passed, "ok" if passed else "prose", None, [], [], "")


def test_a_status_given_as_text_becomes_the_enum_and_round_trips_as_text() -> None:
    result = ProbeResult("n", "s", "m", "prose", "cold", "c", "failed")  # type: ignore[arg-type]
    assert result.status is Status.FAILED
    data = result.to_dict()
    assert type(data["status"]) is str and data["status"] == "failed"
    assert ProbeResult.from_dict(data).status is Status.FAILED


def test_one_constructor_for_a_probe_an_error_and_a_fixture_test() -> None:
    probe = _probe()
    asked = probe_result("n", probe)
    assert asked.arm == (probe.suite.name, "m", probe.channel, probe.condition)
    assert asked.status is Status.PASSED and asked.case == probe.case.id
    errored = probe_result("n", probe, Status.ERROR, "boom")
    assert errored.message == "boom" and errored.canary is None and errored.draft is None
    fixture = probe_result("t::x", None, Status.FAILED, model="m", samples=[_sample(0, False)])
    assert (fixture.suite, fixture.case, fixture.model) == ("", "t::x", "m")
    assert len(fixture.samples) == 1


def test_the_breaker_lines_read_the_typed_server_not_the_message() -> None:
    spared = [probe_result(f"n{i}", _probe(), Status.INFRA, "anything at all") for i in range(3)]
    for result in spared:
        result.broken_server = "http://h:1"
    asked = probe_result("a", _probe(), Status.INFRA, "circuit breaker open on x y")
    asked.samples.append(_sample(0, False))
    (line,) = breaker_lines([*spared, asked])
    assert line.startswith("circuit breaker opened on http://h:1: 3 test(s)")
    assert line.endswith("— anything at all")
    assert "broken_server" in spared[0].to_dict()
    assert "broken_server" not in asked.to_dict()


def test_one_score_call_settles_k_of_n_and_notes_the_outcome() -> None:
    result = probe_result("n", _probe())
    result.samples += [_sample(0, True), _sample(1, False)]
    shown = score_result(result, 1, Against(None))  # 1 of 2 passed: the rule holds
    assert result.status is Status.PASSED and result.at_least == 1
    assert shown is not None and shown.kind == "passed" == result.outcome
    failing = probe_result("n", _probe())
    failing.samples += [_sample(0, False), _sample(1, False)]
    verdicts = {failing.case: {"passed": False, "label": "prose"}}
    base = parse_baseline({"format": 1, "arms": {failing.arm_id: {"verdicts": verdicts}}}, "b")
    shown = score_result(failing, None, Against(base))
    assert failing.status is Status.FAILED
    assert shown is not None and shown.kind == KNOWN == failing.outcome
    assert shown.reason.startswith("known: prose")
