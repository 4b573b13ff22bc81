"""First-call and warm-call latency of the real servers (run by hand: ``python bench/latency.py``).

Reads the servers' addresses from the env file ``scripts/real-servers start`` writes, and asks
each server the shipped suite's request for one case (``--case``, default ``date``; prose
channel, cold condition, the suite's options) ``--warm`` + 1 times in a row: the first call
right after ``start`` includes loading the model (Ollama loads it on the first request;
llama-server at start, so its first call pays only the cold prompt), the rest are warm. Prints
one Markdown row per server with the wall time of each call and the tokens generated. Run it
on an otherwise idle machine, right after ``scripts/real-servers start`` (a restart gives a
new first call).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import expand
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.wire.client import ChatClient, ClientSettings

REPO = Path(__file__).resolve().parent.parent
ENV_FILE = Path.home() / ".cache" / "cardprobe-servers" / "run" / "servers.env"


def servers(env_file: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def tokens(api: str, data: dict[str, Any]) -> tuple[int, float]:
    """Tokens generated, and seconds spent loading the model (Ollama says; else 0)."""
    if api == "openai":
        return int((data.get("usage") or {}).get("completion_tokens", 0)), 0.0
    return int(data.get("eval_count", 0)), data.get("load_duration", 0) / 1e9


def measure(
    base_url: str, api: str, model: str, case: str, calls: int
) -> list[tuple[float, int, float]]:
    suite = load_suite(REPO / "cases" / "cards.yaml")
    probe = next(
        p
        for p in expand(suite, [model])
        if p.case.id == case and p.channel == "prose" and p.condition == "cold"
    )
    request = build_request(probe, Settings(models=[model]).base_options())
    client = ChatClient(ClientSettings(base_url=base_url, api=api))
    path, body = client.payload(request)
    client.close()
    out = []
    with httpx.Client(base_url=base_url, timeout=600) as http:
        for _ in range(calls):
            started = time.perf_counter()
            response = http.post(path, json=body)
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            out.append((elapsed, *tokens(api, response.json())))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--env-file", type=Path, default=ENV_FILE)
    parser.add_argument("--case", default="date")
    parser.add_argument("--warm", type=int, default=5, help="warm calls after the first")
    args = parser.parse_args()
    env = servers(args.env_file)
    targets = [
        ("Ollama /api/chat", env["CARDPROBE_OLLAMA_URL"], "ollama", env["CARDPROBE_OLLAMA_MODEL"]),
        (
            "llama-server /v1/chat/completions",
            env["CARDPROBE_LLAMA_SERVER_URL"],
            "openai",
            env["CARDPROBE_LLAMA_SERVER_MODEL"],
        ),
    ]
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}, case {args.case} (prose, cold)"
    )
    print()
    print(
        "| server | first call (model load) | warm calls: median (min-max) "
        "| warm tokens/s | tokens generated, call by call |"
    )
    print("|---|---:|---:|---:|---|")
    for label, url, api, model in targets:
        runs = measure(url, api, model, args.case, args.warm + 1)
        first, warm = runs[0], runs[1:]
        times = [t for t, _, _ in warm]
        rate = sum(n for _, n, _ in warm) / sum(times)
        load = f" ({first[2]:.2f} s)" if first[2] else ""
        print(
            f"| {label} | {first[0]:.2f} s{load} | {statistics.median(times):.2f} s "
            f"({min(times):.2f}-{max(times):.2f}) | {rate:.0f} "
            f"| {', '.join(str(n) for _, n, _ in runs)} |"
        )


if __name__ == "__main__":
    main()
