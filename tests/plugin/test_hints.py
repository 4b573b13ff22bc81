"""The re-record hint repeats the options that shape a recording (found by the issue-20
review: the hint after a --cardprobe-stream or -o cardprobe_keep_alive=5m run recorded a
cassette the same run still refused)."""

from __future__ import annotations

import shlex

import pytest

from pytest_cardprobe.glue.hints import carried_options, rerecord_hint


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (["cases", "--cardprobe-stream"], ["--cardprobe-stream"]),
        (["--cardprobe-samples", "3", "-q"], ["--cardprobe-samples", "3"]),
        (["--cardprobe-samples=3"], ["--cardprobe-samples", "3"]),
        (["--samples=3", "--stream"], ["--cardprobe-samples", "3", "--cardprobe-stream"]),
        (["-o", "cardprobe_keep_alive=5m"], ["-o", "cardprobe_keep_alive=5m"]),
        (["-ocardprobe_keep_alive=5m"], ["-o", "cardprobe_keep_alive=5m"]),
        (["--override-ini=cardprobe_think=on"], ["-o", "cardprobe_think=on"]),
        (["-o", "addopts=-x", "-k", "date"], []),
        (["--cardprobe-cassette-dir", "/tmp/c"], ["--cardprobe-cassette-dir", "/tmp/c"]),
        (["--cardprobe-server", "http://alice:pw@h:1", "--live"], []),  # a URL may hold a secret
    ],
)
def test_the_options_that_shape_a_recording_are_carried(args: list[str], kept: list[str]) -> None:
    assert carried_options(args) == kept


def test_the_hint_is_one_shell_command_with_them() -> None:
    hint = rerecord_hint(
        "cases/cards.yaml::date[m-prose-cold]", "m", ["-o", "cardprobe_keep_alive=5m"]
    )
    assert shlex.split(hint) == [
        "pytest", "--live", "--model", "m", "-o", "cardprobe_keep_alive=5m",
        "cases/cards.yaml::date[m-prose-cold]",
    ]  # fmt: skip


def test_a_streamed_run_hints_a_streamed_re_record(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "cases", "-k", "date and prose and cold", "--cardprobe-stream"
    )  # fmt: skip
    assert "body.stream differs" in result.stdout.str()
    assert "re-record with: pytest --live --model smollm2:135m --cardprobe-stream" in (
        result.stdout.str()
    )
