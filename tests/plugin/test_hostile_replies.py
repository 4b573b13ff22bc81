"""What a hostile server sends, recorded and replayed: a stream that goes on after
``done: true``, a gzip bomb, replies and streams past their caps.

The server here is a scripted loopback stand-in (``scriptedserver.py``): these are the bytes
a real server would not send. Each test failed on the code before the change it names.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from scriptedserver import Scripted, chunk, ndjson, scripted_server

ONE = ("cases", "-k", "date and prose and cold", "--cardprobe-samples", "1")
LIVE = ("--live", "--cardprobe-no-warmup", "-o", "cardprobe_retries=0")
CARD = json.dumps([{"type": "Input.Date", "id": "when"}])
CASSETTE = Path("cassettes/cards/smollm2%3A135m/date-prose-cold.yaml")


def run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = project.path / "report.json"
    if out.exists():
        out.unlink()
    result = project.runpytest("-p", "no:cacheprovider", *ONE, f"--cardprobe-json={out}", *args)
    return result, (json.loads(out.read_text()) if out.exists() else {})


def sample(report: dict[str, Any]) -> dict[str, Any]:
    (test,) = report["tests"]
    (first,) = test["samples"]
    return dict(first)


def test_a_stream_that_goes_on_after_done_is_judged_up_to_done_and_replays_so(
    project: pytest.Pytester,
) -> None:
    """Defect 8: the chunk after ``done: true`` (a card) was appended and judged, so an
    empty reply passed as ``ok Input.Date``, was recorded, and replayed as a pass."""
    stream = ndjson(
        chunk("", done=True, done_reason="stop", eval_count=1),
        chunk(CARD, done=True, done_reason="stop"),
    )
    project.makeini("[pytest]\ncardprobe_models = smollm2:135m\n")
    reply = Scripted(stream, headers={"Content-Type": "application/x-ndjson"})
    with scripted_server(reply) as server:
        result, live = run(project, *LIVE, "--cardprobe-stream", "--cardprobe-server", server.url)
    said = sample(live)
    assert said["label"] == "prose" and not said["passed"], (said, result.stdout.str()[-2000:])
    # The cassette keeps what the server sent, after done too: a cassette holds raw replies.
    recorded = json.loads((project.path / CASSETTE).read_text())
    body = recorded["interactions"][0]["response"]["body"]["string"]
    assert body == stream.decode()
    result, replayed = run(project, "--cardprobe-stream")
    assert sample(replayed)["label"] == "prose", result.stdout.str()[-2000:]


def test_a_gzip_bomb_is_infra_named_and_not_recorded(project: pytest.Pytester) -> None:
    """Defect 7: 2 MB on the wire inflating to 3 GiB ended in MemoryError. The client asks
    for no compression and refuses a compressed reply unread (here 64 kB of 64 MB)."""
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
    project.makeini("[pytest]\ncardprobe_models = smollm2:135m\n")
    reply = Scripted(bomb, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    with scripted_server(reply) as server:
        result, live = run(project, *LIVE, "--cardprobe-server", server.url)
        encodings = set(server.accept_encoding)
    said = sample(live)
    assert said["failure"] == "infra", (said, result.stdout.str()[-2000:])
    assert said["label"] == (
        "infra: after 1 attempt: reply refused: compressed (gzip) though asked for none "
        "(Accept-Encoding: identity)"
    )
    assert encodings == {"identity"}
    assert not (project.path / CASSETTE).exists()


def test_a_reply_cap_above_the_cassette_cap_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_max_reply_mb = 20\n")
    result = project.runpytest("-p", "no:cacheprovider", *ONE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ini cardprobe_max_reply_mb = 20 is above cardprobe_max_file_mb = 10: a recording of "
        "such a reply would be a cassette replay refuses" in result.stderr.str()
    )


def test_a_recording_larger_than_the_cassette_cap_is_not_written(
    project: pytest.Pytester,
) -> None:
    """Two replies, each under the reply cap, make a cassette above the file cap: it is not
    written (replay would refuse it), the test errors saying so, the old cassette stays."""
    body = json.dumps(
        {"message": {"role": "assistant", "content": "x" * 6000}, "done": True}
    ).encode()
    project.makeini("[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_max_file_mb = 0.01\n")
    old = project.path / CASSETTE
    old.parent.mkdir(parents=True)
    old.write_text("old\n")
    with scripted_server(Scripted(body)) as server:
        result, _ = run(
            project, *LIVE, "--cardprobe-server", server.url, "--cardprobe-samples", "2"
        )
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out[-2000:]
    assert "date-prose-cold.yaml not written: at 20,392 bytes it is larger than the " in out
    assert "MB cap replay reads (cardprobe_max_file_mb)" in out
    assert old.read_text() == "old\n"
