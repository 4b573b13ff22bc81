"""Helpers for unit tests that run one probe of the shipped card suite through a Runtime:
replayed from the shipped cassettes, or recorded from a stand-in transport (error paths only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pytest_cardprobe.judge.registry import card_judge
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ChatReply, ChatRequest, ProbeResult
from pytest_cardprobe.wire.cassettes.replay import Replay

ROOT = Path(__file__).resolve().parents[2]
CARDS = load_suite(ROOT / "cases" / "cards.yaml")
# A real recorded Ollama reply: the first one of the shipped date-prose-cold cassette.
RECORDED = yaml.safe_load(
    (ROOT / "cassettes" / "cards" / "smollm2%3A135m" / "date-prose-cold.yaml").read_text()
)["interactions"][0]["response"]["body"]["string"]


class ReplyingClient:
    """Stands in for a runtime's client: hands out the given replies in order and keeps each
    request as it was sent (no server involved, no transport: what is under test is what the
    runtime does with requests and replies)."""

    def __init__(self, *replies: ChatReply) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    def played_text(self, request: object) -> None:
        return None  # no player: as a live client

    def chat(self, request: ChatRequest, wire: str | None = None) -> ChatReply:
        self.requests.append(request)
        return self.replies.pop(0)


def cards_probe(case: str = "date", channel: str = "prose") -> Probe:
    return next(
        p
        for p in expand(CARDS, ["smollm2:135m"])
        if (p.case.id, p.channel, p.condition) == (case, channel, "cold")
    )


def run_once(runtime: Runtime, probe: Probe) -> ProbeResult:
    try:
        return runtime.run(probe, 1, "n", lambda text: card_judge(text, probe.case, probe.suite))
    finally:
        runtime.close()


def serving(monkeypatch: pytest.MonkeyPatch, body: bytes, api: str = "ollama") -> None:
    """A stand-in transport under the client (error paths only): ``body`` for every chat."""

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(("/api/chat", "/chat/completions")):
            return httpx.Response(200, content=body)
        return httpx.Response(404, json={"error": "404 page not found"})

    monkeypatch.setattr(
        "pytest_cardprobe.wire.transport.deadline_transport",
        lambda deadline, shown, *cap: httpx.MockTransport(handle),
    )


def settings_for(tmp_path: Path, server: str, live: bool, **more: Any) -> Settings:
    return Settings(
        models=["smollm2:135m"],
        record_mode="rewrite" if live else "none",
        servers=[server],
        cassette_dir=tmp_path / "cassettes",
        retries=0,
        warmup=False,
        **more,
    )


def tool_results() -> list[ProbeResult]:
    replay = Runtime(Settings(models=["smollm2:135m"], cassette_dir=ROOT / "cassettes"), Replay())
    return [run_once(replay, cards_probe(channel="tool"))]
