"""The capture proxy's cost and the drafting time (``python bench/capture.py``; BENCHMARKS.md).

Three measurements, each against a baseline taken in the same run, and printed as Markdown:

1. **Added latency per request** on a *fast local server* (a minimal HTTP/1.1 server in its
   own process that answers a small chat reply at once, so what is measured is the proxy's
   own cost): the same request sent directly and through ``python -m pytest_cardprobe
   capture`` (its own process, writing every exchange), alternating one by one over one
   kept-alive connection each. Medians, min and max of both; the median difference in ms
   and the ratio of medians.
2. **Time to first chunk** of a stream from the same fast server (``--chunks`` NDJSON lines
   ``--gap-ms`` apart): from sending the request to the first body bytes, direct and
   proxied, alternating.
3. With ``--real``, both again on the real Ollama from the env file ``scripts/real-servers
   start`` writes (``num_predict`` 1, few requests: each is a model call).
4. **Drafting** ``--exchanges`` captured exchanges (``--questions`` distinct questions, some
   with a tool loop), written by the capture store itself: the ``draft`` command end to end,
   against reading the same files alone (``read_capture`` on each: the floor any drafting
   pays).

Nothing is asserted; the machine's load (``os.getloadavg``) is printed before and after.
"""

# Markdown tables use the en dash.
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
ENV_FILE = Path.home() / ".cache" / "cardprobe-servers" / "run" / "servers.env"

# A minimal HTTP/1.1 server (keep-alive, Content-Length or chunked) in a process of its own.
FAST_SERVER = r"""
import asyncio, json, sys
REPLY = json.dumps({"model": "m", "message": {"role": "assistant", "content": "ok"},
                    "done": True, "done_reason": "stop"}).encode()
CHUNKS, GAP = int(sys.argv[1]), float(sys.argv[2])
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
            if b'"stream": true' in body or b'"stream":true' in body:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")
                for i in range(CHUNKS):
                    line = json.dumps({"message": {"content": "w"}, "done": i == CHUNKS - 1})
                    line = line.encode() + b"\n"
                    writer.write(b"%x\r\n%s\r\n" % (len(line), line))
                    await writer.drain()
                    await asyncio.sleep(GAP)
                writer.write(b"0\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(REPLY), REPLY))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


CPU_OF: dict[str, int] = {}  # a started process's URL -> its pid


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def process(argv: list[str], first_line: Callable[[str], str]) -> Iterator[str]:
    """Run ``argv``; yield what ``first_line`` reads from its first line of output."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line:
            raise RuntimeError(
                f"{argv[:4]} did not start: {proc.stderr.read() if proc.stderr else ''}"
            )
        found = first_line(line)
        CPU_OF[found] = proc.pid
        yield found
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def fast_server(chunks: int, gap_ms: float) -> contextlib.AbstractContextManager[str]:
    argv = [sys.executable, "-c", FAST_SERVER, str(chunks), str(gap_ms / 1000)]
    return process(argv, lambda line: f"http://127.0.0.1:{int(line)}")


def proxy(upstream: str, folder: Path) -> contextlib.AbstractContextManager[str]:
    argv = [sys.executable, "-m", "pytest_cardprobe", "capture", "--upstream", upstream,
            "--listen", "127.0.0.1:0", "--out", str(folder)]  # fmt: skip
    return process(argv, lambda line: line.split("listening on ", 1)[1].split(",", 1)[0])


def timed_pair(
    direct: str, proxied: str, body: dict[str, Any], count: int, first_chunk: bool
) -> tuple[list[float], list[float]]:
    """Seconds per request (or to the first body bytes), direct and proxied, alternating."""
    times: tuple[list[float], list[float]] = ([], [])
    with httpx.Client(timeout=600) as a, httpx.Client(timeout=600) as b:
        for client, base in ((a, direct), (b, proxied)):  # untimed: open both connections
            client.post(base + "/api/chat", json={**body, "stream": False}).read()
        for _ in range(count):
            for slot, (client, base) in enumerate(((a, direct), (b, proxied))):
                started = time.perf_counter()
                if first_chunk:
                    with client.stream("POST", base + "/api/chat", json=body) as reply:
                        chunks = reply.iter_raw()
                        next(chunks)
                        times[slot].append(time.perf_counter() - started)
                        for _ in chunks:
                            pass
                else:
                    client.post(base + "/api/chat", json=body).read()
                    times[slot].append(time.perf_counter() - started)
    return times


def cpu_row(what: str, via: str, direct: str, body: dict[str, Any], count: int) -> str:
    """CPU per request of the capture process, against what this process's own httpx client
    spends per request (the same requests, sent directly): a figure the machine's load
    hardly moves, where wall times at a high load mean little."""
    with httpx.Client(timeout=600) as client:
        client.post(direct + "/api/chat", json=body).read()
        started = time.process_time()
        for _ in range(count):
            client.post(direct + "/api/chat", json=body).read()
        own = (time.process_time() - started) / count
        client.post(via + "/api/chat", json=body).read()
        before = cpu_seconds(CPU_OF[via])
        for _ in range(count):
            client.post(via + "/api/chat", json=body).read()
        proxy = (cpu_seconds(CPU_OF[via]) - before) / count
    return f"| {what} | {count} | {own * 1000:.3f} | {proxy * 1000:.3f} | {proxy / own:.2f} |"


def row(what: str, times: tuple[list[float], list[float]]) -> str:
    direct, proxied = (sorted(t) for t in times)
    md, mp = statistics.median(direct), statistics.median(proxied)

    def ms(values: list[float], mid: float) -> str:
        return f"{mid * 1000:.3f} ({values[0] * 1000:.3f}–{values[-1] * 1000:.3f})"

    return (
        f"| {what} | {len(direct)} | {ms(direct, md)} | {ms(proxied, mp)} | "
        f"{(mp - md) * 1000:+.3f} | {mp / md:.3f} |"
    )


def real_ollama(env_file: Path) -> tuple[str, str] | None:
    if not env_file.exists():
        return None
    values = dict(
        line.split("=", 1)
        for line in env_file.read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    url, model = values.get("CARDPROBE_OLLAMA_URL"), values.get("CARDPROBE_OLLAMA_MODEL")
    return (url, model) if url and model else None


def traffic(folder: Path, exchanges: int, questions: int) -> None:
    """``exchanges`` capture files written by the capture store: ``questions`` distinct
    questions asked in turn, every fifth answered through a tool loop (two exchanges)."""
    from pytest_cardprobe.wire.capture.store import CaptureStore, Exchange

    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]  # fmt: skip
    store = CaptureStore(folder, "http://127.0.0.1:11434", ["api_key"])
    store.prepare()
    system = {"role": "system", "content": "You are a weather assistant. " * 20}
    for n in range(exchanges):
        q = n % questions
        ask = {"role": "user", "content": f"What is the weather in city number {q}?"}
        messages = [system, ask]
        reply: dict[str, Any] = {"role": "assistant", "content": f"Sunny in {q}."}
        if q % 5 == 0 and n % 2:
            call = {"function": {"name": "get_weather", "arguments": {"city": str(q)}}}
            result = {"role": "tool", "tool_name": "get_weather", "content": "18 C"}
            messages += [{"role": "assistant", "content": "", "tool_calls": [call]}, result]
        elif q % 5 == 0:
            reply = {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "get_weather", "arguments": {"city": str(q)}}}]}  # fmt: skip
        body = {"model": "m", "messages": messages, "tools": tools, "stream": False}
        text = json.dumps({"model": "m", "message": reply, "done": True})
        store.write(Exchange("ollama", "POST", "/api/chat", time.perf_counter(),
                             {"content-type": "application/json"}, json.dumps(body).encode(),
                             status=200, reply_headers={"content-type": "application/json"},
                             reply_text=text))  # fmt: skip


def drafting(exchanges: int, questions: int, repeat: int) -> list[str]:
    from pytest_cardprobe.wire.capture.format import read_capture

    lines = []
    with tempfile.TemporaryDirectory(prefix="cardprobe-bench-") as tmp:
        folder = Path(tmp) / "captures"
        started = time.perf_counter()
        traffic(folder, exchanges, questions)
        lines.append(f"Wrote {exchanges:,} capture files in {time.perf_counter() - started:.1f} s.")
        lines += ["", "| run | read only (s) | draft (s) | draft / read |", "|---|---:|---:|---:|"]
        for n in range(repeat):
            started = time.perf_counter()
            for path in sorted(folder.glob("*.json")):
                read_capture(path, 64 * 1024 * 1024)
            floor = time.perf_counter() - started
            out = Path(tmp) / f"cases{n}" / "app.yaml"
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "pytest_cardprobe", "draft", str(folder), "--out", str(out)],
                capture_output=True, text=True,
            )  # fmt: skip
            took = time.perf_counter() - started
            if done.returncode != 0:
                raise RuntimeError(done.stdout + done.stderr)
            lines.append(f"| {n + 1} | {floor:.2f} | {took:.2f} | {took / floor:.2f} |")
        wrote = done.stdout.split("wrote ", 1)[1].split("\n", 1)[0]
        lines.append(f"\nThe suite: {wrote.split(': ', 1)[1]}.")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--requests", type=int, default=2000, help="pairs per fast-server row")
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--gap-ms", type=float, default=2.0)
    parser.add_argument("--real", action="store_true", help="also time the real Ollama")
    parser.add_argument("--real-requests", type=int, default=10)
    parser.add_argument("--exchanges", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3, help="drafting runs")
    parser.add_argument("--env-file", type=Path, default=ENV_FILE)
    args = parser.parse_args()
    load = os.getloadavg()
    command = f"python bench/capture.py {' '.join(sys.argv[1:])}".strip()
    out = [
        f"`{command}` — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start.",
        "",
        "| request | pairs | direct ms: median (min–max) | through capture ms "
        "| added ms (median) | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    plain = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    streamed = {**plain, "stream": True}
    pairs = args.requests
    with tempfile.TemporaryDirectory(prefix="cardprobe-bench-") as tmp:
        with fast_server(args.chunks, args.gap_ms) as fast, proxy(fast, Path(tmp) / "a") as via:
            times = timed_pair(fast, via, plain, pairs, False)
            out.append(row("fast server, whole reply", times))
            times = timed_pair(fast, via, streamed, max(1, pairs // 4), True)
            out.append(row(f"fast server, first of {args.chunks} chunks", times))
            cpu = [
                "",
                "| CPU per request | requests | client's httpx ms | capture process ms | ratio |",
                "|---|---:|---:|---:|---:|",
                cpu_row("a captured chat exchange", via, fast, plain, pairs),
            ]
        real = real_ollama(args.env_file) if args.real else None
        if real:
            url, model = real
            options = {"temperature": 0, "num_predict": 1}
            body = {"model": model, "messages": [{"role": "user", "content": "Say hi."}],
                    "stream": False, "options": options}  # fmt: skip
            with proxy(url, Path(tmp) / "b") as via:
                times = timed_pair(url, via, body, args.real_requests, False)
                out.append(row("real Ollama, whole reply (1 token)", times))
                body = {**body, "stream": True, "options": {**options, "num_predict": 8}}
                times = timed_pair(url, via, body, args.real_requests, True)
                out.append(row("real Ollama, first chunk of 8 tokens", times))
    out += [*cpu, "", *drafting(args.exchanges, args.questions, args.repeat)]
    end = os.getloadavg()
    out.append(f"\nLoad average at the end: {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}.")
    print("\n".join(out))


if __name__ == "__main__":
    main()
