"""The server pool: its breaker opens on a failing server, which is then sent nothing; what
it asks of a server once it keeps."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire.client import ClientSettings
from pytest_cardprobe.wire.errors import InfraError
from pytest_cardprobe.wire.pool import ServerPool

DEAD = "http://127.0.0.1:9"  # discard port: nothing listens


def _pool(**kwargs: Any) -> ServerPool:
    options: dict[str, Any] = dict(
        live_run=True, sends_live=True, api="ollama", parallel=1, breaker=2, warmup=True
    )
    options.update(kwargs)
    return ServerPool(ClientSettings(base_url=DEAD, retries=0, timeout=5), None, **options)


def test_the_breaker_opens_and_the_server_is_sent_nothing_more() -> None:
    pool, request = _pool(), ChatRequest("m", [{"role": "user", "content": "hi"}])
    for _ in range(2):
        with pytest.raises(InfraError):
            pool.send(request, DEAD)
    assert "circuit breaker open: 2 consecutive" in pool.broken[DEAD]
    sent: list[object] = []
    pool.client_for(DEAD).chat = lambda *a: sent.append(a)  # type: ignore[assignment,method-assign,return-value]
    with pytest.raises(InfraError, match="circuit breaker open"):
        pool.send(request, DEAD)
    assert sent == []


def test_a_replay_run_counts_nothing_toward_a_breaker() -> None:
    pool, request = _pool(live_run=False), ChatRequest("m", [])
    for _ in range(3):
        with pytest.raises(InfraError):
            pool.send(request, DEAD)
    assert pool.broken == {}


def test_capabilities_are_asked_once_per_model() -> None:
    pool, asked = _pool(), []

    def capabilities(model: str) -> list[str]:
        asked.append(model)
        return ["completion"]

    pool.client_for(DEAD).capabilities = capabilities  # type: ignore[method-assign]
    for _ in range(2):
        assert (
            pool.tools_missing("m", DEAD) == "m does not support tools (capabilities: completion)"
        )
    assert asked == ["m"]
    assert _pool(api="openai").tools_missing("m", DEAD) is None


def test_each_server_gets_its_own_client_settings() -> None:
    template = ClientSettings(base_url="http://a:1", headers={"X-Team": "t"}, retries=0)
    pool = ServerPool(
        template, None, live_run=False, sends_live=False, api="ollama", parallel=1,
        breaker=5, warmup=False,
    )  # fmt: skip
    a, b = pool.client_for("http://a:1"), pool.client_for("http://b:2")
    assert (a.settings.base_url, b.settings.base_url) == ("http://a:1", "http://b:2")
    assert b.settings.headers == {"X-Team": "t"} and b.settings.headers is not template.headers
    assert b.settings.retries == 0 and pool.client_for("http://b:2") is b
