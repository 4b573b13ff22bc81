"""Objects of the wire that hold a server URL or headers show no credential in ``repr``,
so neither a traceback's frame arguments nor a debugger print a password, key or token."""

from __future__ import annotations

from typing import Any

import pytest
from _pytest._code import ExceptionInfo
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.redact import redact_headers

# Secrets that cannot occur by chance in anything else a repr shows.
SECRET = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=10, max_size=16).map(
    lambda s: "S3" + s
)
HEADER_NAME = st.sampled_from(
    ["Authorization", "X-Api-Key", "Ocp-Apim-Subscription-Key", "Cookie", "X-Custom", "api-key"]
)


def made(user: str, password: str, token: str, key: str, header: str, name: str) -> ClientSettings:
    return ClientSettings(
        base_url=f"http://{user}:{password}@gateway.test:8443/ollama?api_key={token}&region=eu",
        api="openai",
        api_key=key,
        headers={name: header, "Content-Type": "application/json"},
    )


def traceback_of(value: Any) -> str:
    """What pytest prints for a failure in a frame whose argument is ``value``."""

    def failing(value: Any) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError) as caught:
        failing(value)
    info: ExceptionInfo[BaseException] = caught
    return str(info.getrepr(style="long", funcargs=True, showlocals=True))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(user=SECRET, password=SECRET, token=SECRET, key=SECRET, header=SECRET, name=HEADER_NAME)
def test_no_secret_reaches_a_repr_or_a_traceback(
    user: str, password: str, token: str, key: str, header: str, name: str
) -> None:
    s = made(user, password, token, key, header, name)
    client = ChatClient(s)
    shown = [repr(s), repr(client), traceback_of(s), traceback_of(client)]
    for text in shown:
        for secret in (user, password, token, key, header):
            assert secret not in text, text
    # What helps is still there: where the server is and how the client talks to it.
    assert "gateway.test:8443/ollama?region=eu" in repr(s)
    assert "api='openai'" in repr(s) and "api_key='[redacted]'" in repr(s)
    assert f"{name!r}: '[redacted]'" in repr(s)
    assert "'Content-Type': 'application/json'" in repr(s)
    assert repr(client) == "<ChatClient openai http://gateway.test:8443/ollama?region=eu>"


def test_settings_without_secrets_show_as_before() -> None:
    plain = ClientSettings(base_url="http://127.0.0.1:11434")
    assert repr(plain) == (
        "ClientSettings(base_url='http://127.0.0.1:11434', api='ollama', stream=False, "
        "timeout=120.0, retries=2, backoff=0.5, keep_alive='10m', api_key=None, headers={}, "
        "max_reply_bytes=10485760, limits=StreamLimits(lines=300000, chunks=100000))"
    )
    assert plain == ClientSettings(base_url="http://127.0.0.1:11434")  # equality unchanged


def test_header_values_are_redacted_by_default() -> None:
    assert redact_headers({"X-Team-Token": "t", "Accept": "application/json"}) == {
        "X-Team-Token": "[redacted]",
        "Accept": "application/json",
    }
