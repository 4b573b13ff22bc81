"""Server figures per sample and their per-arm summary (reported, never gated)."""

from __future__ import annotations

import pytest

from pytest_cardprobe.score.aggregate import ArmScore, percentile
from pytest_cardprobe.types import ProbeResult, SampleRecord
from pytest_cardprobe.wire.figures import server_figures

# Field names and units as the real servers send them (docs/real-servers.md).
OLLAMA = {
    "done": True,
    "total_duration": 2_500_000_000,
    "load_duration": 100_000_000,
    "prompt_eval_count": 120,
    "prompt_eval_duration": 400_000_000,
    "eval_count": 50,
    "eval_duration": 2_000_000_000,
}
LLAMA_SERVER = {
    "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40},
    "timings": {"prompt_n": 30, "prompt_ms": 50.0, "predicted_n": 10, "predicted_ms": 100.0},
}


def test_ollama_durations_are_nanoseconds() -> None:
    assert server_figures(OLLAMA) == {
        "prompt_tokens": 120,
        "generated_tokens": 50,
        "prompt_s": 0.4,
        "generate_s": 2.0,
        "load_s": 0.1,
        "total_s": 2.5,
    }
    # A stream keeps its figures on the final chunk.
    assert server_figures({"chunks": 9, "final": OLLAMA})["total_s"] == 2.5


def test_openai_usage_and_llama_server_timings() -> None:
    figures = server_figures(LLAMA_SERVER)
    assert figures["prompt_tokens"] == 30 and figures["generated_tokens"] == 10
    assert figures["total_s"] == pytest.approx(0.15)
    assert server_figures({"usage": {"prompt_tokens": 3, "completion_tokens": 4}}) == {
        "prompt_tokens": 3,
        "generated_tokens": 4,
    }


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 95) is None
    assert percentile([3.0], 95) == 3.0
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 95) == 19.0
    assert percentile(values, 50) == 10.0


def test_arm_timing_sums_tokens_and_rates_generation() -> None:
    arm = ArmScore("s", "m", "prose", "cold")
    samples = [
        SampleRecord(0, "content", True, "ok", None, figures=server_figures(OLLAMA)),
        SampleRecord(1, "content", True, "ok", None, figures={"wall_s": 1.0}),
    ]
    arm.add(ProbeResult("n", "s", "m", "prose", "cold", "c", "passed", samples=samples))
    timing = arm.timing()
    assert timing["samples"] == 2
    assert timing["latency_median_s"] == 1.75
    assert timing["prompt_tokens"] == 120 and timing["generated_tokens"] == 50
    assert timing["tokens_per_s"] == 25.0


def test_a_changed_model_is_named_in_the_scoreboard_and_markdown() -> None:
    from pytest_cardprobe.score.markdown import markdown
    from pytest_cardprobe.score.report import scoreboard_lines

    arm = ArmScore("s", "m", "prose", "cold")
    result = ProbeResult("n", "s", "m", "prose", "cold", "c", "passed")
    result.model_digest = "b" * 64
    result.model_changed = f"{'a' * 64} → {'b' * 64}"
    arm.add(result)
    board = "\n".join(scoreboard_lines([arm], None))
    assert f"model changed: {'a' * 64} → {'b' * 64}" in board
    assert "b" * 19 in board  # the digest column of the timing table
    text = markdown([arm], None)
    assert "### Model or server changed since the recording" in text
    assert f"model changed: {'a' * 64} → {'b' * 64}" in text
    assert arm.to_dict()["model_digest"] == ["b" * 64]


def test_server_text_in_the_markdown_report_is_escaped() -> None:
    """A digest or fingerprint comes from the server: no raw control character or table break."""
    from pytest_cardprobe.score.markdown import markdown

    hostile = "evil\x1b]0;owned\x07|x"
    arm = ArmScore("s", "m", "prose", "cold")
    result = ProbeResult("n", "s", "m", "prose", "cold", "c", "passed")
    result.model_digest = hostile
    result.model_changed = f"old → {hostile}"
    arm.add(result)
    text = markdown([arm], None)
    assert "\x1b" not in text and "\x07" not in text
    assert "evil\\x1b]0;owned\\x07\\|x" in text
