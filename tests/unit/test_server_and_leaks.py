"""Reports say when the server changed under a recording and count calls a streaming client
would have shown as raw text (the recorded replies that feed these are in the live tests)."""

from __future__ import annotations

from pytest_cardprobe.score.aggregate import aggregate
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.score.report import scoreboard_lines
from pytest_cardprobe.types import ProbeResult, SampleRecord


def result(
    case: str, *, stream: dict[str, int] | None = None, server: str | None = None
) -> ProbeResult:
    sample = SampleRecord(0, "content", False, "prose", "declined", stream=stream)
    return ProbeResult(
        f"s.yaml::{case}[m-tool-cold]", "s", "m", "tool", "cold", case, "failed", [sample],
        server_changed=server,
    )  # fmt: skip


def test_a_changed_server_is_said_beside_a_changed_model() -> None:
    arms = aggregate([result("a", server="ollama 0.11.4 → ollama 0.33.0")])
    lines = scoreboard_lines(arms, None)
    assert "model or server changed since the recording:" in lines
    assert "  s/m/tool/cold: server changed: ollama 0.11.4 → ollama 0.33.0" in lines
    assert "s/m/tool/cold: server changed: ollama 0.11.4 → ollama 0.33.0" in markdown(arms, None)
    assert arms[0].to_dict()["server_changed"] == ["ollama 0.11.4 → ollama 0.33.0"]


def test_leaked_calls_get_a_column_only_when_some_sample_leaked() -> None:
    quiet = {"pieces": 3, "shown_early": 40, "naive_leak": 0, "careful_leak": 0}
    leak = {"pieces": 9, "shown_early": 0, "naive_leak": 61, "careful_leak": 0}
    arms = aggregate([result("a", stream=quiet), result("b")])
    assert "leaked" not in scoreboard_lines(arms, None)[0]
    arms = aggregate([result("a", stream=quiet), result("b", stream=leak)])
    header, row = scoreboard_lines(arms, None)[:2]
    assert header.split()[-1] == "leaked" and row.split()[-1] == "1/2"
    assert arms[0].to_dict()["stream"] == {"samples": 2, "leaked": 1, "careful_leaked": 0}


def identity_from_captures(api: str, server: str) -> dict[str, str]:
    """What ``server_identity`` makes of the real replies ``server`` gave to its questions
    (tests/unit/data/wire/: `/api/version` from Ollama, `/props` from llama-server); a
    question nobody captured (llama-server's `/api/version`) is answered 404."""
    import httpx
    from captured import load

    from pytest_cardprobe.wire.client import ChatClient, ClientSettings
    from pytest_cardprobe.wire.identity import server_identity

    answers = {"/api/version": f"{server}-api-version", "/props": f"{server}-props"}

    class Captured(ChatClient):
        def send(self, method: str, path: str, body: object = None) -> httpx.Response:
            name = answers.get(path, "")
            try:
                response = load(name)["response"]
            except FileNotFoundError:
                return httpx.Response(404, text='{"error": "not captured: not asked"}')
            return httpx.Response(response["status"], text=response["body"])

    return server_identity(Captured(ClientSettings(base_url="http://127.0.0.1:1", api=api)))


def test_server_changed_says_the_kind_once_when_only_the_release_changed() -> None:
    from pytest_cardprobe.wire.identity import server_change

    old = identity_from_captures("ollama", "ollama-0.11.4")
    new = identity_from_captures("ollama", "ollama-0.33.0")
    llama = identity_from_captures("openai", "llama-server")
    # Each with its sampling defaults (tests/unit/test_sampling_defaults.py).
    assert old.pop("sampling").endswith(
        "repeat_penalty=1.1 seed=-1 temperature=0.8 top_k=40 top_p=0.9 typical_p=1.0"
    )
    assert new.pop("sampling").endswith(
        "repeat_penalty=1.0 seed=-1 temperature=0.8 top_k=40 top_p=0.9 typical_p=1.0"
    )
    assert "min_p=0.05" in llama.pop("sampling")
    assert old == {"kind": "ollama", "version": "0.11.4"}
    assert new == {"kind": "ollama", "version": "0.33.0"}
    assert llama == {"kind": "llama-server", "version": "b0-unknown"}
    # Recorded without them (as before), Ollama's come from the table by version.
    assert server_change(old, new) == "ollama 0.11.4 → 0.33.0 (repeat_penalty 1.1 → 1.0)"
    assert server_change(new, old) == "ollama 0.33.0 → 0.11.4 (repeat_penalty 1.0 → 1.1)"
    assert server_change(new, llama) == "ollama 0.33.0 → llama-server b0-unknown"
    assert server_change(new, dict(new)) is None
    assert server_change({}, new) is None and server_change(new, {}) is None
    # A recording's metadata is shown as one printable line, however it was edited.
    assert server_change({"kind": "ollama", "version": "0.1\n\x1b[2J"}, new) == (
        "ollama 0.1??[2J → 0.33.0"
    )
