"""Build the neutral chat request a probe sends: system prompt, history, question, tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.types import ChatRequest, Message


def build_request(probe: Probe, base_options: Mapping[str, Any], think: str = "off") -> ChatRequest:
    """The reference request for one probe (docs/design.md §5) at reasoning level ``think``."""
    suite = probe.suite
    messages: list[Message] = [{"role": "system", "content": suite.prompts[probe.channel]}]
    if probe.condition == "history":
        messages.extend({"role": t.role, "content": t.content} for t in suite.history)
    messages.append({"role": "user", "content": probe.case.prompt})
    tools = [dict(suite.tool)] if probe.channel == "tool" else []
    options = {**base_options, **suite.options}
    return ChatRequest(
        model=probe.model, messages=messages, tools=tools, options=options, think=think
    )
