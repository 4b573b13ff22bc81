"""Build the neutral chat request a probe sends: system prompt, history, question, tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.types import ChatRequest, Message


def build_request(probe: Probe, base_options: Mapping[str, Any], think: str = "off") -> ChatRequest:
    """The reference request for one probe (docs/design.md §5) at reasoning level ``think``."""
    suite = probe.suite
    messages: list[Message] = []
    # A call suite's system prompt is optional: its tools carry their own descriptions.
    if probe.channel in suite.prompts:
        messages.append({"role": "system", "content": suite.prompts[probe.channel]})
    if probe.condition == "history":
        messages.extend({"role": t.role, "content": t.content} for t in suite.history)
    messages.append({"role": "user", "content": probe.case.prompt})
    tools = [dict(suite.tool)] if probe.channel == "tool" else []
    if suite.is_call_suite:
        # Every declared tool goes with every request, as the application would send them.
        tools = [dict(t) for t in suite.tools]
    options = {**base_options, **suite.options}
    return ChatRequest(
        model=probe.model, messages=messages, tools=tools, options=options, think=think
    )
