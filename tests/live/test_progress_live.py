"""A live run's request bound and progress lines against the real Ollama (glue/progress.py).

A slice of two cases with one sample each, as a CI log would take it: output to a pipe, raw
bytes checked for carriage returns and colour codes; in one process and under ``-n 2`` over
two servers. Assertions are on the lines' order and shape, never on generated text.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
SLICE = (
    "-p", "no:cacheprovider", "cases", "--live", "-k", "date or control",
    "--cardprobe-channel", "prose", "--cardprobe-condition", "cold",
    "--cardprobe-samples", "1", "--cardprobe-no-warmup",
)  # fmt: skip


def live_slice(where: Path, model: str, servers: list[str], *args: str) -> str:
    shutil.copytree(ROOT / "cases", where / "cases")
    suite = where / "cases" / "cards.yaml"
    suite.write_text(suite.read_text().replace("num_predict: 512", "num_predict: 24"))
    (where / "tox.ini").write_text(
        f"[pytest]\ncardprobe_models = {model}\ncardprobe_retries = 0\n"
        f"cardprobe_servers =\n" + "".join(f"    {url}\n" for url in servers)
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["COLUMNS"] = "100"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *SLICE, *args],
        cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900,
    )  # fmt: skip
    raw = done.stdout
    out = raw.decode()
    assert done.returncode in (0, 1), out  # a model's verdicts may fail; nothing else may
    assert b"\r" not in raw and b"\x1b[" not in raw, out
    return out


def check(out: str, model: str, servers: list[str]) -> list[str]:
    lines = out.splitlines()
    bound = [i for i, line in enumerate(lines) if line.startswith("cardprobe: live — at most")]
    assert len(bound) == 1, out
    # 2 tests x 1 sample x 1 try, no warm-up: at most 2 requests, spread over the servers
    # (one per line when they do not fit in the 100 columns).
    assert lines[bound[0]].startswith("cardprobe: live — at most 2 requests:"), out
    block = "\n".join(lines[bound[0] : bound[0] + 1 + len(servers)])
    for url in servers:
        assert f"{model} on {url} ({2 // len(servers)})" in block, out
    mine = ("cardprobe: live", f"cardprobe: {model} ", "cardprobe: spent")
    ours = [line for line in lines if line.startswith(mine)]
    ours += lines[bound[0] + 1 : bound[0] + 1 + len(servers)]
    assert all(len(line) <= 100 for line in ours), out
    first_test = next(i for i, line in enumerate(lines) if "cases/cards.yaml" in line)
    assert bound[0] < first_test, out  # the count comes before any test
    progress = [line for line in lines if line.startswith(f"cardprobe: {model} ")]
    assert progress, out
    assert all(" tests, " in line and " failed; " in line for line in progress), out
    assert progress[-1].startswith(f"cardprobe: {model} 2/2 tests, "), out
    assert progress[-1].endswith("; done"), out
    assert "cardprobe: spent 2 requests in " in out, out
    return progress


def test_live_slice_prints_the_bound_first_then_progress(tmp_path: Path, real_ollama: Any) -> None:
    out = live_slice(tmp_path, real_ollama.model, [real_ollama.base_url])
    progress = check(out, real_ollama.model, [real_ollama.base_url])
    # The first test's line estimates the second one's time from the measured request.
    assert progress[0].startswith(f"cardprobe: {real_ollama.model} 1/2 tests, "), out
    assert " left" in progress[0] and "one every " in progress[0], out
    print(out)  # the whole output, for the record (-s)


def test_live_slice_under_xdist_reports_on_the_controller(
    tmp_path: Path, real_ollama: Any, real_ollama_2: Any
) -> None:
    pytest.importorskip("xdist")
    servers = [real_ollama.base_url, real_ollama_2.base_url]
    out = live_slice(tmp_path, real_ollama.model, servers, "-n", "2")
    check(out, real_ollama.model, servers)
    print(out)
