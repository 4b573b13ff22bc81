"""Build the neutral chat request a probe sends: system prompt, history, question, tools."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.matrix import Probe

Message = dict[str, Any]


@dataclass
class ChatRequest:
    """What is asked of a model, independent of the wire API.

    Mutable on purpose: the ``pytest_cardprobe_adjust_request`` hook may edit it before it
    is sent.
    """

    model: str
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def tool_names(self) -> list[str]:
        """Names of the declared functions."""
        names = []
        for tool in self.tools:
            fn = tool.get("function", tool)
            if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
                names.append(fn["name"])
        return names


def build_request(probe: Probe, base_options: Mapping[str, Any]) -> ChatRequest:
    """The reference request for one probe (DESIGN.md section 5)."""
    suite = probe.suite
    messages: list[Message] = [{"role": "system", "content": suite.prompts[probe.channel]}]
    if probe.condition == "history":
        messages.extend({"role": t.role, "content": t.content} for t in suite.history)
    messages.append({"role": "user", "content": probe.case.prompt})
    tools = [dict(suite.tool)] if probe.channel == "tool" else []
    options = {**base_options, **suite.options}
    return ChatRequest(model=probe.model, messages=messages, tools=tools, options=options)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(request: ChatRequest) -> dict[str, str]:
    """Short hashes of each part of a request, so a stale recording can say what changed."""
    system = [m for m in request.messages if m.get("role") == "system"]
    rest = [m for m in request.messages if m.get("role") != "system"]
    return {
        "model": request.model,
        "system prompt": _digest(system),
        "history": _digest(rest[:-1]),
        "question": _digest(rest[-1:]),
        "tool declaration": _digest(request.tools),
        "options": _digest(request.options),
    }
