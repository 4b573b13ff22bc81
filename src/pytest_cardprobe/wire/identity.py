"""What a server says a model is (Ollama's digest, parser and renderer, or the
OpenAI-compatible model id) and what the server is (kind, version, sampling defaults).

Asked before a recording (the preflight and the live runtime), never during replay. The
sampling defaults are those a request gets for every option it does not send; why they are
recorded rather than sent is docs/design.md §7, "Sampling defaults".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
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
        if isinstance(error, ModelNotFound):  # Ollama's own word: {"error": "model … not found"}
            raise ModelNotFound(
                f"model {model!r} not found on {client.shown_url}; "
                f"fetch it with: ollama pull {model}"
            )
        raise error
    identity = {"name": model}
    if isinstance(shown, dict):
        identity.update(parser_and_renderer(shown))
    tags = _get_json(client, "GET", "/api/tags")
    listed = tags.get("models") if isinstance(tags, dict) else None
    if isinstance(listed, list):
        wanted = {model, f"{model}:latest"}
        for entry in listed:
            if isinstance(entry, dict) and entry.get("name") in wanted and entry.get("digest"):
                identity["digest"] = str(entry["digest"])
                break
    return identity


def _modelfile_commands(text: str, wanted: tuple[str, ...]) -> dict[str, str]:
    """The arguments of the ``wanted`` commands (upper case) of a Modelfile as Ollama
    writes it, skipping quoted values that run over several lines (``TEMPLATE \"\"\"…``)."""
    found: dict[str, str] = {}
    closing = ""
    for line in text.splitlines()[:10_000]:
        if closing:
            closing = "" if closing in line else closing
            continue
        word, _, rest = line.partition(" ")
        if word in wanted:
            found[word.lower()] = rest.strip().strip('"')
        for quote in ('"""', '"'):
            if rest.startswith(quote):
                closing = "" if quote in rest[len(quote) :] else quote
                break
    return found


def parser_and_renderer(shown: dict[str, Any]) -> dict[str, str]:
    """A model's built-in tool-call parser and prompt renderer (its Modelfile's PARSER and
    RENDERER), which decide how calls are written and read. ``ShowResponse`` has fields for
    them, but no release up to 0.33.0 fills them: they are read from ``/api/show``'s
    ``modelfile`` text (where every release since 0.12.0 writes them), fields first."""
    found = {k: v for k in ("parser", "renderer") if isinstance(v := shown.get(k), str) and v}
    if len(found) < 2 and isinstance(shown.get("modelfile"), str):
        found = {**_modelfile_commands(shown["modelfile"], ("PARSER", "RENDERER")), **found}
    return {key: _shown(value) for key, value in found.items() if value}


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
        found = {"kind": "ollama", "version": version["version"][:80]}
        known = ollama_defaults(found["version"])
        if known is not None:
            found["sampling"] = sampling_text(known)
        return found
    if client.settings.api == "openai":
        props = ask("/props")
        if props is not None and "build_info" in props:
            found = {"kind": "llama-server", "version": str(props["build_info"])[:80]}
            reported = llama_server_defaults(props)
            if reported:
                found["sampling"] = sampling_text(reported)
            return found
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


def server_change(
    recorded: dict[str, str], serving: dict[str, str], pinned: Iterable[str] = ()
) -> str | None:
    """What reports say when a live run finds another server than the recording's:
    ``ollama 0.11.4 → 0.33.0 (repeat_penalty 1.1 → 1.0)`` (the kind said once when it
    stayed; in brackets the sampling defaults that moved, leaving out the options the request
    sends itself, ``pinned``), ``ollama 0.33.0 → llama-server b6123`` when the kind changed;
    None when either side is unknown or nothing changed."""
    if not recorded or not serving:
        return None
    old, new = server_line(recorded), server_line(serving)
    moved = ""
    if recorded.get("kind") == serving.get("kind"):
        moved = _moved(server_defaults(recorded), server_defaults(serving), set(pinned))
    if old == new and not moved:
        return None
    line = old if old == new else f"{old} → {new}"
    if old != new and recorded.get("kind") == serving.get("kind"):
        line = f"{old} → {_shown(serving.get('version') or '?')}"
    return f"{line} ({moved})" if moved else line


def model_change(recorded: dict[str, str], now: dict[str, str]) -> str | None:
    """What reports say when a live run finds the model changed under a recording: its digest
    (``old → new``), and its parser or renderer (``parser (none) → qwen3``); None when
    nothing known changed."""
    parts = []
    old, new = recorded.get("digest"), now.get("digest")
    if old and new and old != new:
        parts.append(f"{_shown(old)} → {_shown(new)}")
    if recorded and now:
        for key in ("parser", "renderer"):
            before, after = recorded.get(key) or "(none)", now.get(key) or "(none)"
            if before != after:
                parts.append(f"{key} {_shown(before)} → {_shown(after)}")
    return "; ".join(parts) or None


# --------------------------------------------------------------------------- sampling defaults

#: Ollama's compiled-in sampling defaults (``api/types.go``, ``DefaultOptions``), read in
#: its source for every release tag from 0.5.0 to 0.33.0: each row holds from its release
#: until the next row's. Only ``repeat_penalty`` moved: 1.1, 1.0 in 0.17.5 to 0.17.7 (the
#: ollama runner's token-history samplers, reverted in 0.18.0), 1.1, then 1.0 from 0.32.10
#: ("stop applying repeat_penalty 1.1 to models that don't set one"). ``num_ctx`` is left
#: out: it comes from ``OLLAMA_CONTEXT_LENGTH``, and requests send it.
_OLLAMA_BASE = {
    "num_predict": "-1",
    "temperature": "0.8",
    "top_k": "40",
    "top_p": "0.9",
    "typical_p": "1.0",
    "repeat_last_n": "64",
    "repeat_penalty": "1.1",
    "presence_penalty": "0.0",
    "frequency_penalty": "0.0",
    "seed": "-1",
}
OLLAMA_DEFAULTS: tuple[tuple[tuple[int, int, int], dict[str, str]], ...] = (
    ((0, 5, 0), _OLLAMA_BASE),
    ((0, 17, 5), {**_OLLAMA_BASE, "repeat_penalty": "1.0"}),
    ((0, 18, 0), _OLLAMA_BASE),
    ((0, 32, 10), {**_OLLAMA_BASE, "repeat_penalty": "1.0"}),
)
#: The newest release whose source the table was read from: later ones are not known.
OLLAMA_DEFAULTS_UNTIL = (0, 33, 0)
#: What llama-server's ``/props`` reports under ``default_generation_settings`` (``params``
#: in current builds) that is sampling, under its own names.
LLAMA_SERVER_SAMPLING = (
    "n_predict", "temperature", "top_k", "top_p", "min_p", "typical_p", "repeat_last_n",
    "repeat_penalty", "presence_penalty", "frequency_penalty", "seed", "dry_multiplier",
    "xtc_probability", "top_n_sigma", "mirostat",
)  # fmt: skip
# The request option that pins a default of another name (the wire maps it).
_SAME_AS = {"n_predict": "num_predict", "max_tokens": "num_predict"}


def _release(version: str) -> tuple[int, int, int] | None:
    found = re.fullmatch(r"v?(\d{1,4})\.(\d{1,4})\.(\d{1,4})", version.strip())
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def ollama_defaults(version: str) -> dict[str, str] | None:
    """Ollama ``version``'s compiled-in sampling defaults, from :data:`OLLAMA_DEFAULTS`;
    None for a release outside the table (before 0.5.0, after 0.33.0, or no release)."""
    release = _release(version)
    if release is None or not (OLLAMA_DEFAULTS[0][0] <= release <= OLLAMA_DEFAULTS_UNTIL):
        return None
    return dict([row for first, row in OLLAMA_DEFAULTS if first <= release][-1])


def _number(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    if isinstance(value, int):
        return str(value)
    shown = f"{value:.6g}"  # a float32 0.800000011920929 is the 0.8 it was set to
    return shown if any(c in shown for c in ".en") else f"{shown}.0"


def llama_server_defaults(props: dict[str, Any]) -> dict[str, str]:
    """The sampling defaults llama-server reports in ``/props`` (empty when it does not)."""
    settings = props.get("default_generation_settings")
    if not isinstance(settings, dict):
        return {}
    params = settings.get("params")
    if not isinstance(params, dict):
        params = settings  # older builds report them at the top
    found = {key: _number(params.get(key)) for key in LLAMA_SERVER_SAMPLING}
    return {key: value for key, value in found.items() if value is not None}


def sampling_text(defaults: dict[str, str]) -> str:
    """Defaults as one metadata string: ``frequency_penalty=0.0 … top_p=0.9``."""
    return " ".join(f"{key}={value}" for key, value in sorted(defaults.items()))


def server_defaults(identity: dict[str, str]) -> dict[str, str] | None:
    """The sampling defaults of a recorded or serving server: as recorded, else (a recording
    made before they were) Ollama's from the table, by its version; None when unknown."""
    text = identity.get("sampling")
    if isinstance(text, str) and text:
        pairs = (part.partition("=") for part in text.split()[:64])
        return {_shown(k): _shown(v) for k, sep, v in pairs if sep and k and v}
    if identity.get("kind") == "ollama":
        return ollama_defaults(identity.get("version") or "")
    return None


def _moved(old: dict[str, str] | None, new: dict[str, str] | None, pinned: set[str]) -> str:
    """``repeat_penalty 1.1 → 1.0``: the defaults both sides know that differ, except those
    the request sends (an option it sets is no default)."""
    if not old or not new:
        return ""
    moved = [
        f"{key} {old[key]} → {new[key]}"
        for key in sorted(set(old) & set(new))
        if old[key] != new[key] and key not in pinned and _SAME_AS.get(key) not in pinned
    ]
    return ", ".join(moved)
