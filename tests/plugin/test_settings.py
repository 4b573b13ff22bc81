"""Settings are read once, and ini keys pass the same checks as their command-line options."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("cardprobe_noise_floor = -3", "cardprobe_noise_floor wants an integer >= 0"),
        ("cardprobe_max_unscored = -1", "ini key cardprobe_max_unscored"),
        ("cardprobe_max_unscored = 1.5", "a number from 0 to 1"),
        ("cardprobe_timeout = 0", "ini key cardprobe_timeout"),
        ("cardprobe_retries = many", "ini key cardprobe_retries"),
        ("cardprobe_num_ctx = 0", "ini key cardprobe_num_ctx"),
    ],
)
def test_a_bad_ini_number_is_a_usage_error_naming_the_key(
    project: pytest.Pytester, line: str, said: str
) -> None:
    project.makeini(f"[pytest]\ncardprobe_models = smollm2:135m\n{line}\n")
    result = project.runpytest("cases")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_command_line_wins_over_ini(recorded: pytest.Pytester) -> None:
    # An ini floor of 0 would fail the gate on any lost case; --cardprobe-noise-floor 5 counts.
    recorded.makeini("[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_noise_floor = 0\n")
    result = recorded.runpytest(
        "cases", "-k", "date and prose and cold", "--cardprobe-noise-floor", "5"
    )
    out = result.stdout.str()
    assert "±5" in out, out
