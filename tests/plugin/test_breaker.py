"""Circuit breaker and lanes against a stand-in server that fails every chat call."""

from __future__ import annotations

import re

import pytest
from faultserver import fault_server


def test_breaker_stops_asking_a_failing_server(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ncardprobe_retries = 0\ncardprobe_breaker = 3\n")
    with fault_server() as server:
        result = project.runpytest(
            "-p", "no:cacheprovider", "cases", "--live", "--model", "m",
            "--cardprobe-server", server.url, "--cardprobe-channel", "prose",
            "--cardprobe-condition", "cold", "--cardprobe-condition", "history",
            "--cardprobe-samples", "1",
        )  # fmt: skip
    # The warm-up (unrecorded), then three failures open the breaker; 47 tests are not asked.
    assert len(server.chats) == 1 + 3
    out = result.stdout.str()
    assert out.count("circuit breaker opened") == 1, out
    result.stdout.fnmatch_lines(
        [f"circuit breaker opened on {server.url}: 47 test(s) *", "  *not asked — *"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # everything unscored: inconclusive
    assert not (project.path / "cassettes").exists()


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "n2"])
def test_each_model_goes_to_one_server_and_one_worker(
    project: pytest.Pytester, xdist: list[str]
) -> None:
    project.makeini("[pytest]\ncardprobe_retries = 0\ncardprobe_breaker = 100\n")
    with fault_server() as a, fault_server() as b:
        result = project.runpytest(
            "-p", "no:cacheprovider", "cases", "--live", "-v", "--cardprobe-samples", "1",
            "--model", "m1", "--model", "m2",
            "--cardprobe-server", a.url, "--cardprobe-server", b.url,
            "-k", "date or time", "--cardprobe-no-warmup", *xdist,
            "--cardprobe-channel", "prose", "--cardprobe-channel", "tool",
            "--cardprobe-condition", "cold", "--cardprobe-condition", "history",
        )  # fmt: skip
    # 2 cases x 2 channels x 2 conditions per model; the lanes split at the model boundary.
    assert a.chats == ["m1"] * 8
    assert b.chats == ["m2"] * 8
    if xdist:
        workers: dict[str, set[str]] = {"m1": set(), "m2": set()}
        for line in result.outlines:
            m = re.search(r"\[(gw\d)\].*\[(m\d)-", line)
            if m:
                workers[m.group(2)].add(m.group(1))
        assert len(workers["m1"]) == 1 and len(workers["m2"]) == 1
        assert workers["m1"] != workers["m2"]
