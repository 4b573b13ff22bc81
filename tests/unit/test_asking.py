"""A way of asking writes its request's body once for all the samples of a test."""

from __future__ import annotations

import pytest

from pytest_cardprobe.run.asking import OneTurn
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.types import ChatReply, ChatRequest, Verdict


class Exchange:
    """Stands in for the runtime: notes what it was asked to write and what it was sent."""

    settings = Settings(models=["m"])

    def __init__(self) -> None:
        self.written: list[str] = []
        self.sent: list[str | None] = []

    def wire_text(self, request: ChatRequest, server: str) -> str:
        self.written.append(request.messages[-1]["content"])
        return f"body of {request.messages[-1]['content']}"

    def send(
        self, request: ChatRequest, server: str, live: bool | None, wire: str | None = None
    ) -> tuple[ChatReply, None]:
        self.sent.append(wire)
        return ChatReply(content="[]", finish_reason="stop"), None

    def adjust(self, request: ChatRequest, probe: object) -> bool:
        return False  # never edits

    def edits_requests(self) -> bool:
        return False


def judge(text: str) -> Verdict:
    return Verdict(passed=True, label="ok", failure=None)


def test_the_samples_of_one_way_of_asking_share_one_written_body() -> None:
    exchange = Exchange()
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}])
    way = OneTurn(exchange, request, "prose", judge, "http://server")
    records = [way.sample(i)[0] for i in range(3)]
    assert [r.passed for r in records] == [True, True, True]
    assert exchange.written == ["q"] and exchange.sent == ["body of q"] * 3
    # Another way of asking (the fixture asks each request through a new one) writes anew.
    request.messages[-1]["content"] = "edited"
    OneTurn(exchange, request, "prose", judge, "http://server").sample(0)
    assert exchange.written == ["q", "edited"] and exchange.sent[-1] == "body of edited"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ({"digest": "410834b94dda"}, "410834b94dda"),
        ({"system_fingerprint": "b6190-abc"}, "b6190-abc"),
        ({"digest": "", "system_fingerprint": "fp"}, "fp"),
        ({"digest": ["410834b94dda"]}, None),
        ({"digest": 5}, None),
        ({"digest": float("nan")}, None),
        ({"digest": {"a": 1}}, None),
        ({"digest": None}, None),
        ({"digest": "\x1b[31mred"}, None),
        ({"digest": "x" * 201}, None),
        ("410834b94dda", None),
        (None, None),
    ],
)
def test_a_cassettes_digest_is_taken_only_when_it_is_one(model: object, expected: object) -> None:
    """A hand-edited cassette's model digest of another type crashed the session's end."""
    from pytest_cardprobe.wire.cassettes.metadata import CassetteMeta

    assert CassetteMeta({"model": model}).digest == expected
