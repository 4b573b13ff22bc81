"""The request fingerprint: short hashes of each part of a request, stored in a cassette so
that a recording which no longer fits can say what changed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import shown
from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire.body import without_call_ids
from pytest_cardprobe.wire.cassettes.metadata import CassetteMeta
from pytest_cardprobe.wire.errors import StaleCassette
from pytest_cardprobe.wire.redact import redact_fields


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(
    request: ChatRequest, tools_label: str = "tool declaration", redact: Sequence[str] = ()
) -> dict[str, str]:
    """Short hashes of each part of a request, so a stale recording can say what changed.

    ``tools_label`` names the tools part: call suites say ``tools`` (their declared tool
    list); card suites keep ``tool declaration``, which their recorded cassettes carry.
    Redacted fields are hashed as redacted: a hash of a short secret is a secret too.
    Tool-call ids in the messages are left out: they are the server's labels, other on every
    recording, and say nothing about what was asked.
    """
    messages = without_call_ids(request.messages)
    system = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    parts = {
        "model": request.model,
        "system prompt": _digest(system),
        "history": _digest(rest[:-1]),
        "question": _digest(rest[-1:]),
        tools_label: _digest(request.tools),
        "options": _digest(redact_fields(request.options, redact)),
    }
    if request.think != "off":
        # Only when asked for: recordings made before thinking existed stay valid.
        parts["thinking"] = request.think
    if request.tool_choice:
        # The same: only a request that must call has it (the required condition).
        parts["tool choice"] = request.tool_choice
    return parts


Prints = Callable[[], Mapping[str, str]]
"""A request's fingerprint, computed when first asked for (replay rarely needs it)."""


def check_fingerprint(path: Path, data: Mapping[str, Any], expected: Mapping[str, str]) -> None:
    """Raise :class:`StaleCassette` naming every part of the request that changed."""
    recorded = CassetteMeta.of(data).fingerprint
    if recorded is None:
        raise StaleCassette(f"stale cassette {shown(path)}: it has no cardprobe fingerprint")
    changed = [k for k in expected if recorded.get(k) != expected[k]]
    changed += [k for k in ("thinking", "tool choice") if k in recorded and k not in expected]
    if changed:
        what = ", ".join(changed)
        raise StaleCassette(
            f"stale cassette {shown(path)}: {what} changed since recording", tuple(changed)
        )
