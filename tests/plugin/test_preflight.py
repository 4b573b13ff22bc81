"""Preflight of a live run: an unreachable server is one usage error, before any test."""

from __future__ import annotations

import pytest
from faultserver import fault_server

CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "n2"])
def test_unreachable_server_is_one_usage_error(project: pytest.Pytester, xdist: list[str]) -> None:
    result = project.runpytest(
        "-p",
        "no:cacheprovider",
        "cases",
        "--live",
        "--model",
        "m",
        "--cardprobe-server",
        CLOSED,
        *xdist,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert err.count("does not answer") == 1, err
    assert f"server {CLOSED} does not answer" in err
    assert "nothing was asked or recorded" in err
    assert "Traceback" not in err
    assert not (project.path / "cassettes").exists()
    # No test ran: the run stopped before the first one.
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_replay_never_contacts_a_server(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "-p", "no:cacheprovider", "cases", "--model", "m", "--cardprobe-server", CLOSED
    )
    # Nothing of the suite is recorded, so every test is skipped as never recorded (replay
    # asks no server for it), and no preflight stopped the run.
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(skipped=200)
    assert "does not answer" not in result.stderr.str()


def test_the_preflight_error_shows_no_credentials_of_the_server_url(
    project: pytest.Pytester,
) -> None:
    secret = "http://someone:pa55word-9@127.0.0.1:9/?api_key=k3y-9&region=eu"
    result = project.runpytest(
        "-p", "no:cacheprovider", "cases", "--live", "--model", "m", "--cardprobe-server", secret
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "server http://127.0.0.1:9/?region=eu does not answer" in err, err
    for part in ("someone", "pa55word-9", "k3y-9"):
        assert part not in err + result.stdout.str()


def test_server_text_in_the_preflight_error_is_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_cardprobe.run import preflight
    from pytest_cardprobe.run.settings import Settings

    hostile = "model 'm' is not listed (it lists: \x1b[2Jx\x07, y)"
    monkeypatch.setattr(preflight, "problems", lambda settings: [hostile])
    with pytest.raises(pytest.UsageError) as raised:
        preflight.check(Settings(models=["m"], record_mode="rewrite"))
    shown = str(raised.value)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "it lists: \\x1b[2Jx\\x07, y" in shown


def test_the_preflight_sends_the_headers_and_token_of_every_request(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server behind a gateway that wants a header and a bearer token: the run starts."""
    monkeypatch.setenv("GATEWAY_KEY", "k-42")
    monkeypatch.setenv("CARDPROBE_API_KEY", "t-7")
    project.makeini(
        "[pytest]\ncardprobe_retries = 0\ncardprobe_breaker = 2\n"
        "cardprobe_headers =\n    X-Gateway-Key: ${GATEWAY_KEY}\n"
    )
    with fault_server() as server:
        server.required = {"X-Gateway-Key": "k-42", "Authorization": "Bearer t-7"}
        result = project.runpytest(
            "-p", "no:cacheprovider", "cases", "--live", "--model", "m",
            "--cardprobe-server", server.url, "-k", "date and prose and cold",
        )  # fmt: skip
    err = result.stderr.str()
    assert "preflight" not in err, err
    assert server.refused == []  # every request, the preflight's included, got through
    assert server.chats  # the tests ran and asked (the stand-in answers chats with 500)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
