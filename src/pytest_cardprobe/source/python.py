"""Source stage: an object in the application's code, read in a bounded subprocess.

``python: package.module:NAME`` is imported by :mod:`source.appside` in a child of this
process, with the session's own ``sys.path`` (so the module is found as the tests would find
it), the rootdir as working folder, and a deadline after which the child's whole process group
is killed. The same child converts declarations (``convert: ollama | openai``) for any source,
an MCP server's included, so the client library's conversion runs where that library lives.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.source.bounded import run_bounded
from pytest_cardprobe.suite.sources import SourceInvalid, SourceProblem
from pytest_cardprobe.text import escape_control

APPSIDE = Path(__file__).with_name("appside.py")


@dataclass(frozen=True)
class Read:
    """What a source gave: the value and who converted it (``converter``, ``version``)."""

    value: Any
    identity: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Bounds:
    """How long a source may take and how much it may send."""

    timeout: float
    max_bytes: int
    cwd: Path | None = None


def read_python(target: str, task: str, convert: str | None, bounds: Bounds) -> Read:
    """``target`` (``package.module:NAME``) imported in a subprocess: a tool list (``task``
    ``tools``, converted by ``convert``) or a string (``prompt``)."""
    request = {"task": task, "target": target, "convert": convert}
    return _ask(request, f"python: {target}", bounds)


def convert_items(items: list[Any], convert: str, bounds: Bounds) -> Read:
    """Declarations (plain JSON) passed through the ``convert`` client library's conversion."""
    request = {"task": "convert", "items": items, "convert": convert}
    return _ask(request, f"convert: {convert}", bounds)


def _ask(request: dict[str, Any], what: str, bounds: Bounds) -> Read:
    request["sys_path"] = [p or str(bounds.cwd or ".") for p in sys.path]
    try:
        finished = run_bounded(
            [sys.executable, str(APPSIDE)],
            stdin=json.dumps(request, ensure_ascii=False).encode("utf-8"),
            timeout=bounds.timeout,
            max_stdout=bounds.max_bytes,
            cwd=bounds.cwd,
        )
    except OSError as exc:
        raise SourceProblem(f"{what}: cannot start {sys.executable}: {exc}") from None
    tail = stderr_tail(finished.stderr_tail)
    if finished.timed_out:
        raise SourceProblem(
            f"{what} did not finish within {bounds.timeout:g} s and was stopped (a module "
            "that loops or waits at import?); if it is only slow, raise ini "
            f"cardprobe_source_timeout{tail}"
        )
    if finished.too_much:
        raise SourceProblem(
            f"{what} gave more than {bounds.max_bytes} bytes and was stopped (ini "
            f"cardprobe_max_file_mb){tail}"
        )
    try:
        answer = load_json(finished.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        answer = None
    except ValueError as exc:
        # A whole answer the plugin will not read (nested too deep, a lone surrogate): what
        # the module holds cannot go into a request.
        raise SourceInvalid(f"{what}: holds what a request cannot carry ({exc}){tail}") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        raise SourceProblem(
            f"{what}: the subprocess that reads it exited (code {finished.code}) without an "
            f"answer (did the module end the process at import?){tail}"
        )
    if not answer["ok"]:
        # "invalid": the module was read and holds something unusable (a change at the source).
        kind = SourceInvalid if answer.get("invalid") is True else SourceProblem
        raise kind(f"{what}: {escape_control(str(answer.get('error')))}{tail}")
    identity = answer.get("identity")
    if not isinstance(identity, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in identity.items()
    ):
        identity = {}
    return Read(answer.get("value"), identity)


def stderr_tail(text: str, lines: int = 6) -> str:
    """``; its standard error ended with: ...`` (the last lines, escaped), or nothing."""
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    if not kept:
        return ""
    shown = " | ".join(escape_control(line.strip())[:300] for line in kept)
    return f"; its standard error ended with: {shown}"
