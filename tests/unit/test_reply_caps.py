"""What one reply may bring: bytes (``cardprobe_max_reply_mb``, by default the cassette cap
``cardprobe_max_file_mb``), no compression, and for a stream its lines and chunks
(``cardprobe_max_stream_lines``, ``cardprobe_max_stream_chunks``).

The servers here are loopback sockets that send scripted bytes (a gzip bomb, a reply that
never ends), for error paths only. Each limit is tested at its default and one past it.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.files import MB
from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire.cassettes.reading import read_cassette
from pytest_cardprobe.wire.cassettes.record import Record
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.errors import CassetteProblem, CorruptCassette, InfraError
from pytest_cardprobe.wire.shapes import StreamLimits, stream_size_problem

REQUEST = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}])
DEFAULT = ClientSettings(base_url="http://x:1")
GIVE_UP_S = 30.0


def whole(content: str = "hi") -> bytes:
    return json.dumps({"message": {"role": "assistant", "content": content}, "done": True}).encode()


class Scripted:
    """A loopback server that answers every request with ``answer(conn)``; it notes the
    requests' heads and how many connections it took."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.answer = answer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.heads: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            self.heads.append(head.decode("latin-1"))
            length = next(
                (
                    int(line.split(":", 1)[1])
                    for line in head.decode("latin-1").split("\r\n")
                    if line.lower().startswith("content-length:")
                ),
                0,
            )
            while len(body) < length:
                body += conn.recv(65536)
            with contextlib.suppress(OSError):  # the client stopped reading
                self.answer(conn)


@contextmanager
def scripted(answer: Callable[[socket.socket], None]) -> Iterator[Scripted]:
    server = Scripted(answer)
    server.thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.thread.join()
        server.sock.close()


def sized(body: bytes, *headers: str) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        head = ["HTTP/1.1 200 OK", "Content-Type: application/json", *headers]
        head.append(f"Content-Length: {len(body)}")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    return answer


def chunked(parts: Iterator[bytes]) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in parts:
            conn.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        conn.sendall(b"0\r\n\r\n")

    return answer


def client(url: str, **settings: object) -> ChatClient:
    options: dict[str, object] = {"timeout": GIVE_UP_S, "retries": 2, **settings}
    return ChatClient(ClientSettings(base_url=url, **options), sleep=lambda s: None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- compression


def test_the_client_asks_for_no_compression_whatever_the_headers_say() -> None:
    with scripted(sized(whole())) as server:
        asking = client(server.url, headers={"accept-encoding": "gzip, br"})
        assert asking.chat(REQUEST).content == "hi"
        asking.close()
    (head,) = server.heads
    encodings = [line for line in head.split("\r\n") if line.lower().startswith("accept-enc")]
    assert encodings == ["Accept-Encoding: identity"]


def _bomb(inflated: int) -> bytes:
    """A gzip member of ``inflated`` zero bytes (about a thousandth of that on the wire)."""
    return gzip.compress(b"\0" * inflated, compresslevel=9)


@pytest.mark.parametrize("recording", [False, True], ids=["live", "recording"])
def test_a_gzip_bomb_is_refused_before_it_is_inflated(tmp_path: Path, recording: bool) -> None:
    """Defect 7: a 2 MB gzip of 3 GiB ended in MemoryError; here 64 kB of 64 MB, and the
    memory the client allocated meanwhile is measured."""
    bomb = _bomb(64 * MB)
    path = tmp_path / "c.yaml"
    with scripted(sized(bomb, "Content-Encoding: gzip")) as server:
        asking = client(server.url)
        tracemalloc.start()
        with pytest.raises(InfraError) as caught:
            if recording:
                with Record().open(path, fingerprint=None, rerecord_hint="-") as rec:
                    try:
                        asking.chat(REQUEST)
                    finally:
                        rec.keep = False  # what the runtime does after infra
            else:
                asking.chat(REQUEST)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        asking.close()
    message = str(caught.value)
    assert message == (
        "after 1 attempt: reply refused: compressed (gzip) though asked for none "
        "(Accept-Encoding: identity)"
    )
    assert len(server.heads) == 1  # not retried: asking again brings the same
    assert peak < 8 * MB, peak
    assert not path.exists()


# --------------------------------------------------------------------------- bytes


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_reply_of_the_default_cap_is_read_and_one_byte_more_is_refused(framing: str) -> None:
    cap = DEFAULT.max_reply_bytes
    assert cap == 10 * MB  # cardprobe_max_file_mb's default
    exact = whole("x")
    exact = exact + b" " * (cap - len(exact))
    for body, refused in ((exact, False), (exact + b" ", True)):
        answer = (
            sized(body)
            if framing == "content-length"
            else chunked(iter([body[i : i + 65536] for i in range(0, len(body), 65536)]))
        )
        with scripted(answer) as server:
            asking = client(server.url)
            if refused:
                with pytest.raises(InfraError) as caught:
                    asking.chat(REQUEST)
                assert str(caught.value) == (
                    "after 1 attempt: reply refused: larger than the 10 MB cap "
                    "(cardprobe_max_reply_mb)"
                )
                assert len(server.heads) == 1
            else:
                assert asking.chat(REQUEST).content == "x"
            asking.close()


def test_a_reply_that_never_ends_is_cut_at_the_cap_long_before_the_deadline() -> None:
    def forever() -> Iterator[bytes]:
        while True:
            yield b" " * 65536

    with scripted(chunked(forever())) as server:
        asking = client(server.url, max_reply_bytes=MB)
        started = time.monotonic()
        with pytest.raises(InfraError, match=r"larger than the 1 MB cap"):
            asking.chat(REQUEST)
        took = time.monotonic() - started
        asking.close()
    assert took < GIVE_UP_S / 3, took


# --------------------------------------------------------------------------- streams


def ndjson_stream(chunks: int, blank: int = 0) -> str:
    line = json.dumps({"message": {"role": "assistant", "content": "x"}, "done": False})
    last = json.dumps({"message": {"role": "assistant", "content": ""}, "done": True})
    return "\n".join([line] * (chunks - 1) + [last] + [""] * blank) + "\n"


def test_the_stream_limits_at_their_defaults_and_one_past() -> None:
    limits = StreamLimits()
    assert (limits.lines, limits.chunks) == (300_000, 100_000)
    assert stream_size_problem("ollama", ndjson_stream(100_000), limits) is None
    assert stream_size_problem("ollama", ndjson_stream(100_001), limits) == (
        "stream of more than 100000 chunks (cardprobe_max_stream_chunks)"
    )
    # Blank lines are no chunks, but they are lines.
    assert stream_size_problem("ollama", ndjson_stream(10, blank=299_990), limits) is None
    assert stream_size_problem("ollama", ndjson_stream(10, blank=299_991), limits) == (
        "stream of more than 300000 lines (cardprobe_max_stream_lines)"
    )
    event = 'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'
    assert stream_size_problem("openai", event * 100_000, limits) is None
    assert "100000 chunks" in (stream_size_problem("openai", event * 100_001, limits) or "")
    # SSE comments are lines, not chunks.
    assert stream_size_problem("openai", ":\n" * 300_000, limits) is None
    assert "300000 lines" in (stream_size_problem("openai", ":\n" * 300_001, limits) or "")


def test_a_stream_past_its_limit_is_refused_once_not_retried() -> None:
    stream = ndjson_stream(101).encode()
    with scripted(sized(stream)) as server:
        asking = client(server.url, stream=True, limits=StreamLimits(chunks=100))
        with pytest.raises(InfraError) as caught:
            asking.chat(REQUEST)
        asking.close()
    assert str(caught.value) == (
        "after 1 attempt: reply refused: stream of more than 100 chunks "
        "(cardprobe_max_stream_chunks)"
    )
    assert len(server.heads) == 1


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(
    text=st.text(alphabet="ab: \n\r\x0b\x85\u2028", max_size=40).map(
        lambda t: t.replace("a", "data:")
    ),
    lines=st.integers(0, 14),
    chunks=st.integers(0, 14),
    api=st.sampled_from(["ollama", "openai"]),
)
def test_the_counts_are_those_of_the_lines_the_client_reads(
    text: str, lines: int, chunks: int, api: str
) -> None:
    """Property over every stream text: the limits count exactly what ``splitlines`` gives
    the parsers (any line break, a trailing one or not), and the chunks among them."""
    found = stream_size_problem(api, text, StreamLimits(lines=lines, chunks=chunks))
    every = text.splitlines()
    if len(every) > lines:
        assert found is not None and "lines" in found
        return
    real = [x for x in every if (x.startswith("data:") if api == "openai" else x.strip())]
    assert (found is not None) == (len(real) > chunks), (found, every)


# --------------------------------------------------------------------------- cassettes


def _cassette(path: Path, stream: str) -> None:
    request = {"model": "m", "stream": True, "messages": []}
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "interactions": [
                    {
                        "request": {
                            "method": "POST",
                            "uri": "http://127.0.0.1:11434/api/chat",
                            "body": json.dumps(request),
                            "headers": {},
                        },
                        "response": {
                            "status": {"code": 200, "message": "OK"},
                            "headers": {},
                            "body": {"string": stream},
                        },
                    }
                ],
            }
        )
    )


def test_replay_holds_a_recorded_stream_to_the_same_limits(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    _cassette(path, ndjson_stream(101))
    assert read_cassette(path, limits=StreamLimits(chunks=101))
    with pytest.raises(CorruptCassette, match=r"interaction 1: stream of more than 100 chunks"):
        read_cassette(path, limits=StreamLimits(chunks=100))


def test_a_recording_replay_would_refuse_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("the previous cassette\n")
    body = whole("x" * 3000)
    with scripted(sized(body)) as server:
        asking = client(server.url)
        recording = Record(max_bytes=4000).open(path, fingerprint=None, rerecord_hint="-")
        with pytest.raises(CassetteProblem) as caught, recording:
            asking.chat(REQUEST)
            asking.chat(REQUEST)
        asking.close()
    message = str(caught.value)
    assert "not written: at 7,568 bytes" in message
    assert "bytes it is larger than the 0.0038147 MB cap replay reads" in message
    assert "(cardprobe_max_file_mb)" in message
    assert path.read_text() == "the previous cassette\n"
