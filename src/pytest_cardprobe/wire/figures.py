"""The server's own figures for one reply: token counts and durations, in tokens and seconds."""

from __future__ import annotations

import math
from typing import Any

_NS = 1e9
_MS = 1e3


def server_figures(raw: dict[str, Any]) -> dict[str, float]:
    """The server's own token counts and durations of one reply, in tokens and seconds.

    Ollama reports counts and nanosecond durations on the final body (or the final stream
    chunk); OpenAI-compatible servers report ``usage`` and llama-server adds ``timings`` in
    milliseconds. Keys: ``prompt_tokens``, ``generated_tokens``, ``prompt_s``,
    ``generate_s``, ``load_s``, ``total_s``, each only when the server gave it.
    """
    final = raw.get("final")
    body: dict[str, Any] = final if isinstance(final, dict) else raw
    figures: dict[str, float] = {}

    def put(key: str, value: Any, scale: float = 1.0) -> None:
        # A number a float cannot hold (an int of 400 digits) is no figure: skipped, so the
        # arithmetic here and at the session's end never meets an overflow or an infinity.
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                scaled = value / scale
            except OverflowError:
                return
            if math.isfinite(scaled):
                figures[key] = scaled

    put("prompt_tokens", body.get("prompt_eval_count"))
    put("generated_tokens", body.get("eval_count"))
    put("prompt_s", body.get("prompt_eval_duration"), _NS)
    put("generate_s", body.get("eval_duration"), _NS)
    put("load_s", body.get("load_duration"), _NS)
    put("total_s", body.get("total_duration"), _NS)
    usage = body.get("usage")
    if isinstance(usage, dict):
        put("prompt_tokens", usage.get("prompt_tokens"))
        put("generated_tokens", usage.get("completion_tokens"))
    timings = body.get("timings")
    if isinstance(timings, dict):
        put("prompt_tokens", timings.get("prompt_n"))
        put("generated_tokens", timings.get("predicted_n"))
        put("prompt_s", timings.get("prompt_ms"), _MS)
        put("generate_s", timings.get("predicted_ms"), _MS)
        if "prompt_s" in figures and "generate_s" in figures:
            total = figures["prompt_s"] + figures["generate_s"]
            if math.isfinite(total):
                figures["total_s"] = total
    return figures
