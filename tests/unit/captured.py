"""Read the real exchanges in tests/unit/data/wire/ as the plugin reads a server's reply.

Each file is one exchange a real server had (tests/live/capture_wire.py saved it byte for
byte; README.md beside the files). These helpers hand its reply body to the plugin's own
shape check and parsers, exactly as a live reply or a replayed cassette is handed to them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_cardprobe.run.asking import OneTurn
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.types import ChatReply, ChatRequest, SampleRecord, Verdict
from pytest_cardprobe.wire.figures import server_figures
from pytest_cardprobe.wire.ollama import parse_ollama_reply
from pytest_cardprobe.wire.ollama_stream import parse_ollama_stream
from pytest_cardprobe.wire.openai import parse_openai_reply
from pytest_cardprobe.wire.openai_stream import parse_openai_stream
from pytest_cardprobe.wire.shapes import check_reply

WIRE = Path(__file__).parent / "data" / "wire"
OLD, NEW = "ollama-0.11.4", "ollama-0.33.0"


def load(name: str) -> dict[str, Any]:
    """One capture file: name, note, server, request, response."""
    data: dict[str, Any] = json.loads((WIRE / f"{name}.json").read_text(encoding="utf-8"))
    return data


def api_of(name: str) -> tuple[str, bool]:
    """``(api, stream)`` of a captured chat exchange, from its request."""
    request = load(name)["request"]
    api = "openai" if request["path"] == "/v1/chat/completions" else "ollama"
    return api, bool(request["body"].get("stream"))


def reply_of(name: str) -> ChatReply:
    """The captured chat reply, checked and parsed as the client does."""
    api, stream = api_of(name)
    text = load(name)["response"]["body"]
    problem, parsed = check_reply(api, stream, text)
    assert problem is None, f"{name}: {problem}"
    if stream:
        parse = parse_openai_stream if api == "openai" else parse_ollama_stream
        return parse(parsed)
    return parse_openai_reply(parsed) if api == "openai" else parse_ollama_reply(parsed)


def generated(reply: ChatReply) -> float | None:
    """The server's count of tokens generated for ``reply``, as the runtime reads it."""
    return server_figures(reply.raw).get("generated_tokens")


def chat_captures() -> list[str]:
    """Every captured chat exchange that the server answered with 200."""
    names = []
    for path in sorted(WIRE.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        chat = data["request"]["path"] in ("/api/chat", "/v1/chat/completions")
        if chat and data["response"]["status"] == 200:
            names.append(path.stem)
    return names


class Replayed:
    """An exchange that answers every request with one captured reply, as a cassette would."""

    settings = Settings(models=["m"])

    def __init__(self, name: str) -> None:
        self.reply = reply_of(name)

    def send(self, *args: Any, **kwargs: Any) -> tuple[ChatReply, None]:
        return self.reply, None

    def wire_text(self, request: ChatRequest, server: str) -> None:
        return None

    def adjust(self, request: ChatRequest, probe: object) -> bool:
        return False  # never edits

    def edits_requests(self) -> bool:
        return False


def tool_sample(name: str, tool: str = "render_adaptive_card") -> SampleRecord:
    """A tool-channel sample whose reply is the captured one; the card judge stands in by a
    judge that passes whatever it reads (these tests are about routes and streams)."""
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}])
    request.tools.append({"type": "function", "function": {"name": tool}})

    def judge(text: str) -> Verdict:
        return Verdict(True, "ok TextBlock", None)

    record, _ = OneTurn(Replayed(name), request, "tool", judge, "s").sample(0)  # type: ignore[arg-type]
    return record
