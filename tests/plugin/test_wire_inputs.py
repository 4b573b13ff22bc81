"""Server URLs, headers and log lines: what the issue-23 review found after round two.

Each was an INTERNALERROR, a malformed request or a credential in the terminal; each is now
a usage error at configure time or a redacted line.
"""

from __future__ import annotations

import pytest
from faultserver import fault_server

from pytest_cardprobe.wire import values

ONE = ("-k", "date and prose and cold", "--cardprobe-samples", "1", "--cardprobe-no-warmup")


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://256.1.1.1:9", "has an invalid IPv4 address '256.1.1.1'"),
        ("http://1.2.3:9", "has an invalid IPv4 address '1.2.3'"),
        ("http://" + "a" * 70 + ".com:9", "has an invalid host name (labels of 1 to 63"),
        ("http://" + "a." * 130 + "com:9", "has an invalid host name"),
    ],
)
def test_a_host_httpx_would_refuse_when_sending_is_refused_at_configure_time(
    recorded: pytest.Pytester, url: str, said: str
) -> None:
    result = recorded.runpytest_subprocess(
        "-p", "no:cacheprovider", "cases", "--live", "--cardprobe-server", url, *ONE
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert said in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_ordinary_hosts_still_pass() -> None:
    for url in ("http://127.0.0.1:9", "http://localhost:11434", "http://[::1]:9",
                "http://bücher.example:9", "https://gw.example/ollama"):  # fmt: skip
        assert values.server_url(url)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("Content-Length: 5", "sets Content-Length, which the HTTP client writes itself"),
        ("Transfer-Encoding: chunked", "sets Transfer-Encoding, which the HTTP client"),
        ("host: evil.example", "sets host, which the HTTP client writes itself"),
        ("Accept-Encoding: gzip", "sets Accept-Encoding, which the HTTP client writes itself"),
        ("X-Auth: $CARDPROBE_SURELY_UNSET_VAR", "names $CARDPROBE_SURELY_UNSET_VAR, which is not"),
        ("X-Auth: Bearer ${CARDPROBE_SURELY_UNSET_VAR}", "which is not set"),
        ("X-Auth: ${BADV", "has a '${' with no closing '}'"),
    ],
)  # fmt: skip
def test_a_header_the_client_owns_or_an_unset_variable_is_a_usage_error(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, line: str, said: str
) -> None:
    monkeypatch.delenv("CARDPROBE_SURELY_UNSET_VAR", raising=False)
    recorded.makeini(
        f"[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_headers =\n    {line}\n"
    )
    result = recorded.runpytest_subprocess("-p", "no:cacheprovider", "cases", *ONE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert said in result.stderr.str()


def test_a_set_variable_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARDPROBE_TEST_TOKEN", "abc123")
    assert values.header_line("X-Auth: Bearer ${CARDPROBE_TEST_TOKEN}") == (
        "X-Auth",
        "Bearer abc123",
    )


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_no_credential_in_httpx_or_vcrpy_log_lines(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    """httpx logs each request's URL at INFO, vcrpy at DEBUG: shown with --log-level."""
    monkeypatch.setenv("CARDPROBE_TEST_TOKEN", "T0KENVALUE")
    recorded.makeini(
        "[pytest]\ncardprobe_models = smollm2:135m\n"
        "cardprobe_headers =\n    X-Api-Key: $CARDPROBE_TEST_TOKEN\n"
    )
    with fault_server() as server:
        host = server.url.removeprefix("http://")
        url = f"http://alice:S3CRETPW@{host}/?key=K3YVALUE"
        result = recorded.runpytest_subprocess(
            "-p", "no:cacheprovider", "cases", "--live", "--cardprobe-server", url,
            f"--log-level={level}", "-rA", "--cardprobe-json=r.json",
            "-o", "cardprobe_retries=0", *ONE,
        )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert "HTTP Request: POST" in out  # the log lines are shown: the test looks at them
    for secret in ("S3CRETPW", "K3YVALUE", "T0KENVALUE"):
        assert secret not in out, secret
        assert secret not in (recorded.path / "r.json").read_text()
