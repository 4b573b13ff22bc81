"""What a live run prints before, during and after its requests (glue/progress.py).

The stand-in server (replyserver.py) answers at once, so a fake clock (5 s a tick, from a
conftest) makes the lines due; the real servers are in tests/live/test_progress_live.py.
"""

from __future__ import annotations

import textwrap

import pytest
from replyserver import reply_server

FAKE_CLOCK = """
    import itertools
    import pytest

    @pytest.hookimpl(trylast=True)
    def pytest_configure(config):
        reporter = config.pluginmanager.get_plugin("cardprobe-progress")
        if reporter is not None:
            ticks = itertools.count(0, 5)
            reporter.clock = lambda: float(next(ticks))
"""
SLICE = (
    "-p", "no:cacheprovider", "cases", "--model", "m", "--cardprobe-channel", "prose",
    "--cardprobe-condition", "cold", "--cardprobe-samples", "2", "--cardprobe-no-warmup",
    "-k", "date or time or toggle",
)  # fmt: skip


def live_run(project: pytest.Pytester, *args: str) -> tuple[str, int]:
    project.makeconftest(textwrap.dedent(FAKE_CLOCK))
    with reply_server() as server:
        result = project.runpytest_subprocess(
            *SLICE, "--live", "--cardprobe-server", server.url, *args, timeout=120
        )
    # The stand-in answers every question with a date picker: date passes, the others fail.
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    return result.stdout.str(), server.chats


def test_the_request_bound_comes_before_any_test_and_progress_follows(
    project: pytest.Pytester,
) -> None:
    out, chats = live_run(project)
    assert chats == 6
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("cardprobe: live"))
    # 3 tests x 2 samples x (1 + 2 retries); the stand-in's URL is shown redacted as given.
    assert lines[first].startswith("cardprobe: live — at most 18 requests: m on http://127.0.0.1:")
    assert lines[first].endswith("(18)")
    said = " ".join(line.strip() for line in lines[first + 1 : first + 3])
    assert said == (
        "(3 tests, 6 samples; an upper bound: tool-loop turns, 2 retries of a failed request)"
    )
    assert all(len(line) <= 80 for line in lines[first : first + 3])  # pytester's width
    assert not any("cases/cards.yaml" in line for line in lines[:first])  # before any test
    progress = [line for line in lines if line.startswith("cardprobe: m ")]
    assert len(progress) >= 3, out
    assert progress[-1].startswith("cardprobe: m 3/3 tests, 2 failed; 6 requests, one every ")
    assert progress[-1].endswith("; done")
    assert any(line.endswith(" left") for line in progress), out
    assert out.index(lines[first]) < out.index(progress[0])
    assert "\r" not in out and "\x1b[" not in out
    # The end: what the requests spent (the stand-in says 12 generated tokens a reply).
    assert "cardprobe: spent 6 requests in " in out and ": 0 prompt + 72 generated tokens" in out
    # Every line the reporter writes fits pytester's 80 columns, the spent line included.
    ours = [line for line in lines if line.startswith("cardprobe:")]
    assert max(len(line) for line in ours) <= 80, "\n".join(ours)


def test_quiet_runs_show_the_bound_only(project: pytest.Pytester) -> None:
    out, _ = live_run(project, "-q")
    assert "cardprobe: live — at most 18 requests" in out
    assert "cardprobe: m " not in out and "cardprobe: spent" not in out
    out, _ = live_run(project, "-qq")
    assert "at most" not in out


def test_under_xdist_the_controller_reports_per_test(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    out, chats = live_run(project, "-n", "2")
    assert chats == 6
    lines = out.splitlines()
    bound = [i for i, line in enumerate(lines) if line.startswith("cardprobe: live")]
    assert len(bound) == 1, out  # once, though each worker collected
    assert "at most 18 requests: m on http://127.0.0.1:" in lines[bound[0]]
    progress = [i for i, line in enumerate(lines) if line.startswith("cardprobe: m ")]
    assert progress and progress[0] > bound[0], out
    # Requests come with each test's result (2 samples, one request each).
    assert lines[progress[-1]].startswith("cardprobe: m 3/3 tests, 2 failed; 6 requests")
    assert "\r" not in out


def test_replay_prints_none_of_it(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "cases", "-k", "date", "--cardprobe-channel", "prose"
    )
    out = result.stdout.str()
    assert "date[smollm2:135m-prose-cold]" in out or result.ret in (0, 1), out
    assert "at most" not in out and "cardprobe: spent" not in out
    assert not any(line.startswith("cardprobe: smollm2:135m ") for line in out.splitlines())


def test_collect_only_says_no_bound(project: pytest.Pytester) -> None:
    # (Under xdist, --co reaches no pytest_xdist_node_collection_finished: nothing to guard.)
    with reply_server() as server:
        result = project.runpytest_subprocess(
            *SLICE, "--live", "--cardprobe-server", server.url, "--co", timeout=120
        )
    out = result.stdout.str()
    assert result.ret == 0, out
    assert server.chats == 0 and "at most" not in out, out


def test_without_a_terminal_reporter_nothing_breaks(project: pytest.Pytester) -> None:
    with reply_server() as server:
        result = project.runpytest_subprocess(
            *SLICE, "--live", "--cardprobe-server", server.url, "-p", "no:terminal", timeout=120
        )
    assert server.chats == 6
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
