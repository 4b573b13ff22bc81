"""The re-record hint repeats the options that shape a recording (found by the issue-20
review: the hint after a --cardprobe-stream or -o cardprobe_keep_alive=5m run recorded a
cassette the same run still refused)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
        "-p", "no:cacheprovider", "cases", "-k", "date and prose and cold", "--cardprobe-stream",
        "-vv",  # the test's own paragraph, with its own command
    )  # fmt: skip
    assert "body.stream differs" in result.stdout.str()
    assert "re-record with: pytest --live --model smollm2:135m --cardprobe-stream" in (
        result.stdout.str()
    )


@pytest.mark.parametrize(
    ("args", "mode", "command"),
    [
        ([], "once", ["pytest", "--cardprobe-record-mode", "once"]),
        (
            ["cases", "-k", "tool and cold", "--live", "--cardprobe-md=x.md", "-q"],
            "stale",
            ["pytest", "cases", "-k", "tool and cold", "-q", "--cardprobe-record-mode", "stale"],
        ),
        (
            ["--cardprobe-record-mode", "once", "--cardprobe-update-baseline", "--model", "m"],
            "stale",
            ["pytest", "--model", "m", "--cardprobe-record-mode", "stale"],
        ),
        (  # no credential of a server URL; a header is shown with its value redacted
            ["--cardprobe-server", "http://alice:pw@h:1/?token=t", "-o", "cardprobe_headers=X: s"],
            "once",
            [
                "pytest",
                "--cardprobe-server",
                "http://h:1/",
                "-o",
                "cardprobe_headers=X: [redacted]",
                "--cardprobe-record-mode",
                "once",
            ],
        ),
        (
            ["--cardprobe-server=http://alice:pw@h:1", "-ocardprobe_headers=X: s", "-x"],
            "once",
            [
                "pytest",
                "--cardprobe-server=http://h:1",
                "-ocardprobe_headers=X: [redacted]",
                "-x",
                "--cardprobe-record-mode",
                "once",
            ],
        ),
    ],
)
def test_the_record_command_keeps_the_selection_and_sets_the_mode(
    args: list[str], mode: str, command: list[str]
) -> None:
    from pytest_cardprobe.glue.hints import record_command

    assert shlex.split(record_command(args, mode)) == command


SECRET = "PW9xSECRET"
#: Ways a run's command line carries a secret: a header value, a URL's password, a secret
#: query parameter, each through every spelling pytest accepts.
_SECRET_ARGS = [
    ["-o", f"cardprobe_headers=X-Api-Key: {SECRET}"],
    [f"-ocardprobe_headers=Authorization: Bearer {SECRET}"],
    [f"--override-ini=cardprobe_headers=X: {SECRET}"],
    ["-o", f"cardprobe_servers=http://a:{SECRET}@h:1/"],
    ["--override-ini", f"cardprobe_servers=h:1/?api_key={SECRET}"],
    ["--cardprobe-server", f"http://a:{SECRET}@h:1"],
    [f"--cardprobe-server=https://h/?token={SECRET}"],
    [f"--server=http://u:{SECRET}@h"],
    ["-o", f"cardprobe_api_key={SECRET}"],
]
_PLAIN_ARGS = [
    ["cases"],
    ["-k", "tool and cold"],
    ["--model", "m:1"],
    ["-q"],
    ["--live"],
    ["--cardprobe-json", "r.json"],
    ["-o", "cardprobe_keep_alive=5m"],
    ["-x"],
]


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(
    parts=st.lists(st.sampled_from(_SECRET_ARGS + _PLAIN_ARGS), min_size=1, max_size=6),
    mode=st.sampled_from(["once", "stale"]),
)
def test_no_printed_command_repeats_a_secret_of_the_run(parts: list[list[str]], mode: str) -> None:
    from pytest_cardprobe.glue.hints import (
        accept_base_command,
        accept_command,
        record_command,
        update_command,
    )

    args = [word for part in parts for word in part]
    for command in (record_command(args, mode), accept_command(args), update_command(args),
                    accept_base_command(args), " ".join(carried_options(args))):  # fmt: skip
        assert SECRET not in command, (args, command)


def test_the_update_after_a_live_run_keeps_its_selection_and_reads_the_recordings() -> None:
    """What a first live run prints to record a baseline: runnable as printed (its suite,
    model and server kept), without asking the model again or writing its reports."""
    from pytest_cardprobe.glue.hints import update_command

    args = ["cases/assistant.yaml", "--model", "qwen3:8b", "--live", "--cardprobe-server",
            "http://127.0.0.1:11434", "--cardprobe-json=r.json", "-k", "readme"]  # fmt: skip
    assert shlex.split(update_command(args)) == [
        "pytest", "cases/assistant.yaml", "--model", "qwen3:8b", "--cardprobe-server",
        "http://127.0.0.1:11434", "-k", "readme", "--cardprobe-update-baseline",
    ]  # fmt: skip


def test_a_gate_that_fails_against_its_base_names_the_update_that_accepts() -> None:
    """The CI run's own command (its selection and base ref) as the update that accepts,
    without the reports it wrote; a verdict without an unaccepted regression shows none."""
    from pytest_cardprobe.glue.hints import accept_base_command
    from pytest_cardprobe.score.compare import ArmComparison
    from pytest_cardprobe.score.gate import Gate
    from pytest_cardprobe.score.summary import verdict_block

    args = ["cases", "-k", "date", "--cardprobe-baseline-ref", "origin/main",
            "--cardprobe-md=cardprobe.md", "--cardprobe-html", "r.html"]  # fmt: skip
    command = accept_base_command(args)
    assert command == (
        "pytest cases -k date --cardprobe-baseline-ref origin/main --cardprobe-update-baseline "
        '--cardprobe-accept-reason "<why these regressions are accepted>"'
    )
    gate = Gate("fail", 1, against="origin/main (3f2a1b4c5d6e)")
    gate.arms = {"s/m/prose/cold": ArmComparison("s/m/prose/cold", "prose", "regression")}
    lines = verdict_block(gate, (), 0, command).lines
    assert (
        "to accept them on purpose, with the reason a reviewer reads, run against the same "
        f"base and commit the baseline: {command}"
    ) in lines
    gate.arms["s/m/prose/cold"].word = "accepted"
    assert not any("to accept" in line for line in verdict_block(gate, (), 0, command).lines)
