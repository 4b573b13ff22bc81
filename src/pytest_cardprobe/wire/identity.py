"""What a server says a model is: Ollama's digest, or the OpenAI-compatible model id.

Asked before a recording (the preflight and the live runtime), never during replay.
"""

from __future__ import annotations

from typing import Any

from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.wire.client import ChatClient
from pytest_cardprobe.wire.errors import InfraError, ModelNotFound, classify_http_error


def _get_json(client: ChatClient, method: str, path: str, body: Any = None) -> Any:
    """One request for server metadata, under the request deadline; a transport failure or
    a reply that is not JSON is infra; an error status comes back as the response."""
    response = client.send(method, path, body)
    if response.status_code >= 400:
        return response
    try:
        return load_json(response.text)
    except ValueError as exc:
        raise InfraError(f"{method} {path} answered non-JSON: {response.text[:120]!r}") from exc


def model_identity(client: ChatClient, model: str) -> dict[str, str]:
    """What the server says ``model`` is: Ollama's digest, or the OpenAI-compatible model id.

    Raises :class:`ModelNotFound` when the server does not have the model and
    :class:`InfraError` when it cannot be reached.
    """
    import httpx

    if client.settings.api == "openai":
        listed = _get_json(client, "GET", "/v1/models")
        if isinstance(listed, httpx.Response):
            raise classify_http_error(listed, model)
        data = listed.get("data") if isinstance(listed, dict) else None
        entries = [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []
        ids = [str(m.get("id")) for m in entries]
        if model not in ids and _single_model_llama_server(entries):
            # llama-server serves its one model whatever name a request gives (checked on
            # the real server), so the suite's name only keys the cassettes; pin the model
            # the server really answers with.
            return {"id": ids[0]}
        if model not in ids:
            raise ModelNotFound(
                f"model {model!r} is not listed by GET {client.shown_url}/v1/models "
                f"(it lists: {', '.join(ids) or 'nothing'})"
            )
        return {"id": model}
    shown = _get_json(client, "POST", "/api/show", {"model": model})
    if isinstance(shown, httpx.Response):
        error = classify_http_error(shown, model)
        if shown.status_code == 404:
            raise ModelNotFound(
                f"model {model!r} not found on {client.shown_url}; "
                f"fetch it with: ollama pull {model}"
            )
        raise error
    identity = {"name": model}
    tags = _get_json(client, "GET", "/api/tags")
    listed = tags.get("models") if isinstance(tags, dict) else None
    if isinstance(listed, list):
        wanted = {model, f"{model}:latest"}
        for entry in listed:
            if isinstance(entry, dict) and entry.get("name") in wanted and entry.get("digest"):
                identity["digest"] = str(entry["digest"])
                break
    return identity


def _single_model_llama_server(entries: list[dict[str, Any]]) -> bool:
    """A ``/v1/models`` listing from llama-server running one model (no router)."""
    return len(entries) == 1 and entries[0].get("owned_by") == "llamacpp"


def server_identity(client: ChatClient) -> dict[str, str]:
    """What the server says it is: ``kind`` (``ollama``, ``llama-server``, ``vllm`` or
    ``openai-compatible``) and ``version`` when it tells one.

    Ollama answers ``GET /api/version`` (also when asked through its ``/v1``); llama-server
    ``GET /props`` with its ``build_info``; vLLM ``GET /version``. Recorded beside the model
    identity, so a live run can say the server changed; unknown is an empty version, and a
    server that cannot be reached is the chat call's to report.
    """
    import httpx

    def ask(path: str) -> dict[str, Any] | None:
        try:
            found = _get_json(client, "GET", path)
        except InfraError:
            return None
        return found if isinstance(found, dict) and not isinstance(found, httpx.Response) else None

    version = ask("/api/version")
    if version is not None and isinstance(version.get("version"), str):
        return {"kind": "ollama", "version": version["version"][:80]}
    if client.settings.api == "openai":
        props = ask("/props")
        if props is not None and "build_info" in props:
            return {"kind": "llama-server", "version": str(props["build_info"])[:80]}
        vllm = ask("/version")
        if vllm is not None and isinstance(vllm.get("version"), str):
            return {"kind": "vllm", "version": vllm["version"][:80]}
        return {"kind": "openai-compatible", "version": ""}
    return {"kind": "ollama", "version": ""}


def _shown(value: object) -> str:
    # A cassette's metadata is the team's file, not ours: one printable line, cut short.
    text = str(value)[:80]
    return "".join(c if c.isprintable() else "?" for c in text)


def server_line(identity: dict[str, str]) -> str:
    """``ollama 0.33.0`` as reports show a server identity (``?`` for an unknown version)."""
    return f"{_shown(identity.get('kind', '?'))} {_shown(identity.get('version') or '?')}"


def server_change(recorded: dict[str, str], serving: dict[str, str]) -> str | None:
    """What reports say when a live run finds another server than the recording's:
    ``ollama 0.11.4 → 0.33.0`` (the kind said once when it stayed), ``ollama 0.33.0 →
    llama-server b6123`` when it did not; None when either side is unknown or they agree."""
    if not recorded or not serving:
        return None
    old, new = server_line(recorded), server_line(serving)
    if old == new:
        return None
    if recorded.get("kind") == serving.get("kind"):
        new = _shown(serving.get("version") or "?")
    return f"{old} → {new}"
