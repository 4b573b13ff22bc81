"""Asking a server what it is and whether it answers (stdlib HTTP, no proxies: loopback only)."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request

from .kinds import is_ollama, kind_version

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_json(
    method: str, url: str, body: object = None, timeout: float = 5.0
) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def server_version(kind: str, url: str, timeout: float = 2.0) -> tuple[bool, str, str]:
    """(healthy, version, detail) from Ollama's /api/version or llama-server's /health,
    /props and /v1/models."""
    probes = ["/api/version"] if is_ollama(kind) else ["/health", "/props", "/v1/models"]
    bodies: dict[str, object] = {}
    for path in probes:
        try:
            status, body = http_json("GET", url + path, timeout=timeout)
        except (OSError, http.client.HTTPException) as exc:
            return False, "", f"{path}: {type(exc).__name__}: {exc}"
        if status != 200:
            return False, "", f"{path} -> {status} {json.dumps(body)[:120]}"
        bodies[path] = body
    if is_ollama(kind):
        body = bodies["/api/version"]
        version = str(body.get("version", "")) if isinstance(body, dict) else ""
        return True, version, f"/api/version -> {json.dumps(body)}"
    return True, *llama_server_identity(bodies["/props"], bodies["/v1/models"])


def llama_server_identity(props: object, models: object) -> tuple[str, str]:
    """llama-server's version as it states it: /props build_info, /v1/models meta."""
    build = props.get("build_info", "") if isinstance(props, dict) else ""
    model_id, owned = "", ""
    data = models.get("data") if isinstance(models, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        model_id, owned = str(data[0].get("id", "")), str(data[0].get("owned_by", ""))
    version = str(build) or "(no build_info in /props)"
    return version, f"/props build_info {build!r}; /v1/models id {model_id!r} owned_by {owned!r}"


def healthy(kind: str, url: str, timeout: float = 2.0) -> tuple[bool, str]:
    ok, version, detail = server_version(kind, url, timeout)
    want = kind_version(kind)
    if ok and want and version != want:
        return False, f"{detail} (expected version {want})"
    return ok, detail
