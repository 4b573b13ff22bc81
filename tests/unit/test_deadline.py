"""``--request-timeout`` is a deadline for the whole exchange, however slowly bytes arrive.

The servers here are real loopback TCP servers that send a reply one byte (or one stream
line) at a time, for error paths only: no model behaviour is judged from them. Each stops
dripping after ``GIVE_UP_S`` so that a broken deadline fails a test instead of hanging it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire.cassettes.record import Record
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.errors import InfraError
from pytest_cardprobe.wire.identity import model_identity

GIVE_UP_S = 20.0
DEADLINE_S = 0.5
REQUEST = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}])


def _head(length: int | None) -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{size}\r\n".encode()


def read_request(conn: socket.socket) -> None:
    """Read one whole request (head, then as many body bytes as its Content-Length says)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)


class DripServer:
    """Accepts connections and answers each by ``mode``: ``head`` drips the whole response a
    byte at a time, ``body`` sends the head and drips the body, ``stream`` sends NDJSON
    chunks (chunked encoding) one every tick and never the last one."""

    def __init__(self, mode: str, tick: float = 0.1) -> None:
        self.mode, self.tick = mode, tick
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
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
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        started = time.monotonic()
        with conn:
            read_request(conn)
            chunk = {"message": {"role": "assistant", "content": "x"}, "done": False}
            line = (json.dumps(chunk) + "\n").encode()
            body = json.dumps({"message": {"role": "assistant", "content": "x" * 500}}).encode()
            if self.mode == "head":
                drip = _head(len(body)) + body
            elif self.mode == "body":
                conn.sendall(_head(len(body)))
                drip = body
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                drip = b""
            index = 0
            while not self.stop.is_set() and time.monotonic() - started < GIVE_UP_S:
                try:
                    if self.mode == "stream":
                        conn.sendall(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                    elif index < len(drip):
                        conn.sendall(drip[index : index + 1])
                        index += 1
                except OSError:
                    return  # the client gave up and closed the connection
                self.stop.wait(self.tick)


@contextmanager
def drip_server(mode: str) -> Iterator[DripServer]:
    server = DripServer(mode)
    server.thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.thread.join()
        server.sock.close()


def client_for(server: DripServer, **settings: object) -> ChatClient:
    options: dict[str, object] = {"timeout": DEADLINE_S, "retries": 0, **settings}
    return ChatClient(ClientSettings(base_url=server.url, **options), sleep=lambda s: None)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["head", "body", "stream"])
def test_a_reply_that_keeps_dripping_fails_as_infra_at_the_deadline(mode: str) -> None:
    with drip_server(mode) as server:
        client = client_for(server, stream=mode == "stream")
        started = time.monotonic()
        with pytest.raises(InfraError) as caught:
            client.chat(REQUEST)
        took = time.monotonic() - started
        client.close()
    # Bytes kept coming every 0.1 s: a per-read timeout would have waited for GIVE_UP_S.
    assert took < GIVE_UP_S / 2, took
    message = str(caught.value)
    assert f"exceeded the {DEADLINE_S:g} s request deadline" in message, message
    assert message.startswith("after 1 attempt: timed out: "), message
    assert "127.0.0.1" in message


def test_each_attempt_of_a_retried_request_gets_its_own_deadline() -> None:
    with drip_server("body") as server:
        client = client_for(server, retries=2)
        with pytest.raises(InfraError, match=r"^after 3 attempts: timed out: .*deadline"):
            client.chat(REQUEST)
        client.close()
        # A deadline shared by the attempts would have left the later ones no time to connect.
        assert server.connections == 3


def test_the_deadline_holds_while_vcrpy_records_the_reply(tmp_path: Path) -> None:
    # Recording, vcrpy reads the whole reply below the client: the deadline must be below it.
    path = tmp_path / "c.yaml"
    with drip_server("body") as server:
        client = client_for(server)
        started = time.monotonic()
        with Record().open(path, fingerprint=None, rerecord_hint="-") as rec:
            with pytest.raises(InfraError) as caught:
                client.chat(REQUEST)
            rec.keep = False  # as the runtime does after an infra failure
        took = time.monotonic() - started
        client.close()
    assert took < GIVE_UP_S / 2, took
    assert "request deadline" in str(caught.value)
    assert not path.exists()


def test_a_timely_reply_after_a_slow_one_is_read_whole() -> None:
    # The deadline ends with its exchange: a pooled connection reused later is not bound by it.
    body = json.dumps({"message": {"role": "assistant", "content": "ok"}, "done": True})
    sock = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"

    def serve() -> None:
        conn, _ = sock.accept()
        with conn:
            for _ in range(2):
                read_request(conn)
                time.sleep(0.3)
                conn.sendall(_head(len(body)) + body.encode())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = ChatClient(ClientSettings(base_url=url, timeout=DEADLINE_S, retries=0))
    try:
        assert client.chat(REQUEST).content == "ok"
        time.sleep(DEADLINE_S)  # longer than the first exchange's deadline
        assert client.chat(REQUEST).content == "ok"
    finally:
        client.close()
        thread.join(5)
        sock.close()


def test_a_proxy_from_the_environment_is_used_and_bound_by_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # httpx takes no proxy from the environment once it is handed a transport, so the
    # client's own transport must: a team behind a proxy keeps reaching its server.
    with drip_server("body") as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("http_proxy", raising=False)
        client = ChatClient(
            ClientSettings(base_url="http://model-server.test:11434", timeout=DEADLINE_S, retries=0)
        )
        with pytest.raises(InfraError, match="request deadline"):
            client.chat(REQUEST)
        client.close()
        assert proxy.connections == 1


def test_asking_a_server_about_a_model_keeps_to_the_deadline_too() -> None:
    # The preflight and the live runtime ask /api/show and /api/tags before recording.
    with drip_server("head") as server:
        client = client_for(server)
        started = time.monotonic()
        with pytest.raises(InfraError, match="request deadline"):
            model_identity(client, "m")
        with pytest.raises(InfraError, match="request deadline"):
            client.capabilities("m")
        client.close()
    assert time.monotonic() - started < GIVE_UP_S / 2
