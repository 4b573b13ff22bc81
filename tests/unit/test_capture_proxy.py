"""The capture proxy (``wire/capture``) in front of a scripted server on loopback: what the
client gets is what the server sent, as it sends it, and what the capture file holds.

The behaviour against real model servers and their official clients is in
tests/live/test_capture_live.py; here the server is scripted so that a stream can be held
between two events, and a reply can break, hang or never end, on demand.
"""

from __future__ import annotations

import concurrent.futures
import gzip
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from scripted_upstream import (
    Script,
    Upstream,
    cut_after,
    endless,
    garbage,
    hang,
    in_turn,
    json_reply,
    running_proxy,
    stream,
    unanswered,
)

from pytest_cardprobe.wire.capture.format import read_capture
from pytest_cardprobe.wire.capture.relay import Limits
from pytest_cardprobe.wire.capture.serve import (
    ServeProblem,
    bind,
    check_upstream,
    loopback_problem,
    parse_listen,
)

pytest.importorskip("uvicorn")

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def captures(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def test_a_plain_reply_passes_unchanged_and_is_written_down(tmp_path: Path) -> None:
    reply = {"message": {"role": "assistant", "content": "hello"}, "done": True}
    with Upstream() as up:
        up.script["/api/chat"] = json_reply(reply)
        with running_proxy(up.url, tmp_path / "cap") as (proxy, store):
            got = httpx.post(f"{proxy}/api/chat", json={**CHAT, "tools": TOOLS})
    assert got.status_code == 200
    assert got.content == b"".join(up.sent).split(b"\r\n\r\n", 1)[1]
    assert got.headers["content-type"] == "application/json"
    (doc,) = captures(tmp_path / "cap")
    assert doc["cardprobe_capture"] == 1 and doc["api"] == "ollama"
    assert doc["request"]["body"] == {**CHAT, "tools": TOOLS}
    assert json.loads(doc["reply"]["body"]) == reply
    assert doc["reply"]["status"] == 200 and doc["reply"]["truncated"] is False
    assert store.written == 1 and len(store.tool_sets) == 1
    assert (tmp_path / "cap" / ".gitignore").read_text().rstrip().endswith("*")


@pytest.mark.parametrize(
    ("path", "content_type", "events"),
    [
        (
            "/api/chat",
            "application/x-ndjson",
            [
                b'{"message":{"content":"a"},"done":false}\n',
                b'{"message":{"content":"b"},"done":true}\n',
            ],
        ),
        (
            "/v1/chat/completions",
            "text/event-stream",
            [b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n', b"data: [DONE]\n\n"],
        ),
    ],
)
def test_a_stream_is_relayed_event_by_event_as_it_arrives(
    tmp_path: Path, path: str, content_type: str, events: list[bytes]
) -> None:
    """The client holds event 1 while the server has not sent event 2: the server waits on a
    gate the test opens only after the client read event 1 (a proxy that buffered would leave
    the client waiting, and the server would give up and reset)."""
    with Upstream(gate_timeout_s=10) as up:
        second = up.gate()
        up.script[path] = stream(content_type, events, {1: second})
        with (
            running_proxy(up.url, tmp_path) as (proxy, _),
            httpx.stream("POST", proxy + path, json={**CHAT, "stream": True}) as reply,
        ):
            chunks = reply.iter_raw()
            first = next(chunks)
            assert first == events[0]
            assert not second.is_set() and b"".join(up.sent).endswith(events[0] + b"\r\n")
            second.set()
            rest = b"".join(chunks)
    assert first + rest == b"".join(events)
    (doc,) = captures(tmp_path)
    assert doc["reply"]["body"] == b"".join(events).decode()
    assert doc["first_byte_seconds"] is not None


def test_gzip_goes_through_encoded_and_is_written_decoded(tmp_path: Path) -> None:
    reply = {"message": {"content": "zipped"}, "done": True}
    with Upstream() as up:
        up.script["/api/chat"] = json_reply(reply, gzipped=True)
        with (
            running_proxy(up.url, tmp_path) as (proxy, _),
            httpx.stream(
                "POST", f"{proxy}/api/chat", json=CHAT, headers={"accept-encoding": "gzip"}
            ) as got,
        ):
            raw = b"".join(got.iter_raw())
            assert got.headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(raw)) == reply
    assert up.requests[0].headers["accept-encoding"] == "gzip"
    (doc,) = captures(tmp_path)
    assert json.loads(doc["reply"]["body"]) == reply


def test_the_proxy_adds_no_headers_of_its_own(tmp_path: Path) -> None:
    with (
        Upstream() as up,
        running_proxy(up.url, tmp_path) as (proxy, _),
        socket.create_connection(("127.0.0.1", int(proxy.rsplit(":", 1)[1]))) as conn,
    ):
        body = json.dumps(CHAT).encode()
        conn.sendall(
            b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
        )
        while conn.recv(65536):
            pass
    # Connection is hop-by-hop: the client's "close" is for the proxy, not passed on.
    assert set(up.requests[0].headers) == {"host", "content-type", "content-length"}


@pytest.mark.parametrize("status", [400, 404, 500, 503])
def test_error_statuses_and_bodies_pass_as_they_are(tmp_path: Path, status: int) -> None:
    with Upstream() as up:
        up.script["/api/chat"] = json_reply({"error": "model 'x' not found"}, status=status)
        with running_proxy(up.url, tmp_path) as (proxy, _):
            got = httpx.post(f"{proxy}/api/chat", json=CHAT)
    assert got.status_code == status and got.json() == {"error": "model 'x' not found"}
    assert captures(tmp_path)[0]["reply"]["status"] == status


def test_other_routes_pass_through_unwritten(tmp_path: Path) -> None:
    with Upstream() as up:
        up.script["/api/tags"] = json_reply({"models": []})
        with running_proxy(up.url, tmp_path) as (proxy, store):
            assert httpx.get(f"{proxy}/api/tags").json() == {"models": []}
            assert httpx.post(f"{proxy}/api/show", json={"model": "m"}).json() == {"ok": True}
            assert httpx.get(f"{proxy}/v1/models?x=1").json() == {"ok": True}
    assert captures(tmp_path) == [] and store.passed_through == 3
    assert [r.path for r in up.requests] == ["/api/tags", "/api/show", "/v1/models?x=1"]


def test_an_upstream_that_does_not_answer_is_a_clear_gateway_error(tmp_path: Path) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"
    with running_proxy(dead, tmp_path) as (proxy, store):
        ollama = httpx.post(f"{proxy}/api/chat", json=CHAT)
        openai = httpx.post(f"{proxy}/v1/chat/completions", json=CHAT)
    assert (
        ollama.status_code == 502 and "cannot reach the upstream server" in ollama.json()["error"]
    )
    assert openai.status_code == 502
    assert "cannot reach" in openai.json()["error"]["message"]
    docs = captures(tmp_path)
    assert [d["reply"]["status"] for d in docs] == [502, 502] and all(d["error"] for d in docs)
    assert store.failed == 2


def test_an_upstream_that_hangs_is_a_gateway_timeout(tmp_path: Path) -> None:
    with Upstream() as up:
        release = up.gate()
        up.script["/api/chat"] = hang(release)
        with running_proxy(up.url, tmp_path, Limits(read_timeout_s=0.5)) as (proxy, _):
            got = httpx.post(f"{proxy}/api/chat", json=CHAT, timeout=10)
        release.set()
    assert got.status_code == 504 and "did not answer within" in got.json()["error"]


def test_garbage_from_the_upstream_is_a_bad_gateway(tmp_path: Path) -> None:
    with Upstream() as up:
        up.script["/api/chat"] = garbage(b"\x00\xffnot http at all\r\n\r\n")
        with running_proxy(up.url, tmp_path) as (proxy, _):
            got = httpx.post(f"{proxy}/api/chat", json=CHAT, timeout=10)
    assert got.status_code == 502 and "cannot reach" in got.json()["error"]
    assert len(up.requests) == 1  # bytes that are no reply: not asked again


def test_a_kept_alive_connection_closed_as_the_request_arrives_is_asked_on_again(
    tmp_path: Path,
) -> None:
    """The first reply leaves its connection open; the server closes it, unanswered, when
    the second request comes (as llama-server does to one idle for 5 s): the proxy asks once
    more on a new connection, says so, and the client never sees the drop."""
    first, third = {"message": {"content": "one"}}, {"message": {"content": "two"}}
    notices: list[str] = []
    with Upstream() as up:
        up.script["/api/chat"] = in_turn(json_reply(first), unanswered(), json_reply(third))
        with (
            running_proxy(up.url, tmp_path, notices=notices) as (proxy, store),
            httpx.Client() as client,
        ):
            got = [client.post(f"{proxy}/api/chat", json=CHAT, timeout=10) for _ in range(2)]
    assert [g.status_code for g in got] == [200, 200]
    assert [g.json() for g in got] == [first, third]
    assert [r.json() for r in up.requests] == [CHAT] * 3  # the second asked twice, unchanged
    docs = captures(tmp_path)
    assert [d["reply"]["status"] for d in docs] == [200, 200] and not any(d["error"] for d in docs)
    assert store.failed == 0
    assert notices == [
        "cardprobe capture: POST /api/chat: the upstream closed a kept-alive connection "
        "before replying; asked again"
    ]


def _second_of_two(
    tmp_path: Path, path: str, method: str, *then: Script
) -> tuple[httpx.Response, int]:
    """Ask ``path`` twice on one kept-alive connection, the first answered and the second
    met by ``then`` (one script per ask, then answers): the second reply and how many
    requests the server saw."""
    with Upstream() as up:
        up.script[path] = in_turn(json_reply({"ok": 1}), *then, json_reply({"ok": 3}))
        with running_proxy(up.url, tmp_path) as (proxy, _), httpx.Client(timeout=10) as client:
            body = None if method in ("GET", "DELETE") else CHAT
            first = client.request(method, f"{proxy}{path}", json=body)
            second = client.request(method, f"{proxy}{path}", json=body)
    assert first.status_code == 200
    return second, len(up.requests)


def test_a_server_that_drops_the_request_again_on_a_new_connection_is_a_bad_gateway(
    tmp_path: Path,
) -> None:
    second, asked = _second_of_two(
        tmp_path, "/v1/chat/completions", "POST", unanswered(), unanswered()
    )
    assert second.status_code == 502  # the retry was on a connection of its own: no third ask
    assert "without sending a response" in second.json()["error"]["message"]
    assert asked == 3
    assert [d["reply"]["status"] for d in captures(tmp_path)] == [200, 502]


def test_a_request_dropped_on_a_connection_of_its_own_is_not_asked_again(
    tmp_path: Path,
) -> None:
    """A new connection closed after the request (a crash, say) may have reached a server
    that acted on it: one ask only."""
    with Upstream() as up:
        up.script["/api/chat"] = unanswered()
        with running_proxy(up.url, tmp_path) as (proxy, store):
            got = httpx.post(f"{proxy}/api/chat", json=CHAT, timeout=10)
    assert got.status_code == 502 and len(up.requests) == 1 and store.failed == 1


@pytest.mark.parametrize(
    "sent",
    [b"HTTP/1.1 2", b"HTTP/1.1 200 OK\r\nContent-Type: applic", b"HTTP/1.1 200 OK\r\n"],
    ids=["status-cut", "header-cut", "head-unended"],
)
def test_a_reply_that_began_and_broke_is_not_asked_again(tmp_path: Path, sent: bytes) -> None:
    second, asked = _second_of_two(tmp_path, "/api/chat", "POST", garbage(sent))
    assert second.status_code == 502 and asked == 2


@pytest.mark.parametrize(
    ("method", "path", "asked"),
    [("GET", "/api/tags", 3), ("DELETE", "/api/delete", 2), ("POST", "/api/pull", 2)],
)
def test_a_passed_through_request_is_asked_again_only_when_it_changes_nothing(
    tmp_path: Path, method: str, path: str, asked: int
) -> None:
    second, seen = _second_of_two(tmp_path, path, method, unanswered())
    assert seen == asked
    assert second.status_code == (200 if asked == 3 else 502)


def test_idle_connections_are_let_go_before_the_servers_5_s(tmp_path: Path) -> None:
    """llama-server, uvicorn and Node close a connection idle for 5 s; httpx would keep one
    for 5 s, so both ends could drop it at once, as a request goes out."""
    from pytest_cardprobe.wire.capture.relay import CaptureApp
    from pytest_cardprobe.wire.capture.store import CaptureStore
    from pytest_cardprobe.wire.deadline import Deadline
    from pytest_cardprobe.wire.transport import deadline_transport

    app = CaptureApp("http://127.0.0.1:1", CaptureStore(tmp_path, "http://127.0.0.1:1", []))
    client = deadline_transport(Deadline(), "http://127.0.0.1:1")
    for transport in (app.transport, client):
        expiry = transport._pool._keepalive_expiry  # type: ignore[attr-defined]
        assert expiry is not None and expiry < 5


def test_a_reply_cut_by_the_upstream_is_cut_for_the_client_too(tmp_path: Path) -> None:
    events = [b'{"message":{"content":"a"},"done":false}\n']
    with Upstream() as up:
        up.script["/api/chat"] = cut_after("application/x-ndjson", events)
        with running_proxy(up.url, tmp_path) as (proxy, _):
            received = b""
            with (
                pytest.raises(httpx.HTTPError),
                httpx.stream("POST", f"{proxy}/api/chat", json=CHAT, timeout=10) as got,
            ):
                for chunk in got.iter_raw():
                    received += chunk
    assert received == events[0]
    (doc,) = captures(tmp_path)
    assert doc["reply"]["body"] == events[0].decode() and "broke after" in doc["error"]


def test_a_never_ending_stream_is_captured_bounded_while_the_client_gets_every_byte(
    tmp_path: Path,
) -> None:
    line = b'{"message":{"content":"' + b"x" * 200 + b'"},"done":false}\n'
    with Upstream() as up:
        stop = up.gate()
        up.script["/api/chat"] = endless(line, stop)
        with running_proxy(up.url, tmp_path, Limits(max_capture_bytes=4096)) as (proxy, store):
            got = 0
            with httpx.stream("POST", f"{proxy}/api/chat", json=CHAT, timeout=10) as reply:
                for chunk in reply.iter_raw():
                    got += len(chunk)
                    if got > 200_000:
                        break  # the client hangs up: the relay stops at once
            stop.set()
    assert got > 200_000
    (doc,) = captures(tmp_path)
    assert doc["reply"]["truncated"] is True and len(doc["reply"]["body"]) <= 4096
    assert doc["reply"]["bytes"] >= 4096 and "client went away" in doc["error"]
    assert store.written == 1


def test_a_client_that_hangs_up_after_the_last_event_leaves_a_whole_capture(
    tmp_path: Path,
) -> None:
    """The OpenAI client closes its stream once it has read ``[DONE]``, which can be before
    the upstream's end of body arrives: that reply was whole, so its capture has no error.
    The upstream holds its end of body until the client has been gone a while (0.3 s, under
    the proxy's grace), so a proxy that gave up at the hang-up would write the reply as cut."""
    events = [b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n', b"data: [DONE]\n\n"]
    with Upstream(gate_timeout_s=10) as up:
        end = up.gate()
        up.script["/v1/chat/completions"] = stream("text/event-stream", events, {2: end})
        with running_proxy(up.url, tmp_path) as (proxy, _):
            url = proxy + "/v1/chat/completions"
            received = b""
            with httpx.stream("POST", url, json={**CHAT, "stream": True}, timeout=10) as reply:
                for chunk in reply.iter_raw():
                    received += chunk
                    if received == b"".join(events):
                        break  # the client read the last event and hangs up
            time.sleep(0.3)
            end.set()
    assert received == b"".join(events)
    (doc,) = captures(tmp_path)
    assert doc["error"] is None and doc["reply"]["status"] == 200
    assert doc["reply"]["body"] == b"".join(events).decode()


def test_concurrent_streams_are_served_together(tmp_path: Path) -> None:
    """Two streams held open at once: neither waits for the other."""
    with Upstream() as up:
        gates = {name: up.gate() for name in ("a", "b")}
        events = {n: [f'{{"n":"{n}1"}}\n'.encode(), f'{{"n":"{n}2"}}\n'.encode()] for n in gates}

        def by_model(upstream, request, wfile, conn):  # type: ignore[no-untyped-def]
            name = request.json()["model"]
            stream("application/x-ndjson", events[name], {1: gates[name]})(
                upstream, request, wfile, conn
            )

        up.script["/api/chat"] = by_model
        with (
            running_proxy(up.url, tmp_path) as (proxy, store),
            httpx.stream("POST", f"{proxy}/api/chat", json={**CHAT, "model": "a"}) as a,
            httpx.stream("POST", f"{proxy}/api/chat", json={**CHAT, "model": "b"}) as b,
        ):
            ita, itb = a.iter_raw(), b.iter_raw()
            assert next(ita) == events["a"][0] and next(itb) == events["b"][0]
            gates["b"].set()
            assert b"".join(itb) == events["b"][1]
            gates["a"].set()
            assert b"".join(ita) == events["a"][1]
    assert store.written == 2


def test_a_request_over_the_limit_is_refused_without_asking_the_upstream(tmp_path: Path) -> None:
    with (
        Upstream() as up,
        running_proxy(up.url, tmp_path, Limits(max_request_bytes=1000)) as (proxy, _),
    ):
        got = httpx.post(f"{proxy}/api/chat", json={**CHAT, "pad": "x" * 2000})
    assert got.status_code == 413 and "--max-request-mb" in got.json()["error"]
    assert up.requests == []


def test_secrets_in_headers_urls_and_bodies_never_reach_the_capture(tmp_path: Path) -> None:
    body = {
        **CHAT,
        "api_key": "sk-body-secret",
        "options": {"nested": {"password": "pw-secret"}},
        "myfield": "custom-secret",
    }
    reply = {"message": {"content": "ok"}, "done": True, "token": "reply-secret"}
    with Upstream() as up:
        up.script["/api/chat"] = json_reply(reply)
        upstream = up.url.replace("http://", "http://user:url-secret@")
        with running_proxy(upstream, tmp_path, redact=("myfield",)) as (proxy, _):
            got = httpx.post(
                f"{proxy}/api/chat?key=query-secret",
                json=body,
                headers={"Authorization": "Bearer hdr-secret", "X-Api-Key": "hdr2-secret"},
            )
    assert got.json() == reply  # the client's own reply is not touched
    # Headers go on to the server; credentials in the upstream URL become its Basic auth.
    assert up.requests[0].headers["x-api-key"] == "hdr2-secret"
    assert up.requests[0].headers["authorization"].startswith("Basic ")
    text = "".join(p.read_text() for p in tmp_path.glob("*.json"))
    for secret in ("sk-body", "pw-secret", "custom-secret", "reply-secret", "hdr-secret",
                   "hdr2-secret", "url-secret", "query-secret"):  # fmt: skip
        assert secret not in text


@pytest.mark.parametrize(
    ("body", "kind", "dropped"),
    [
        (b"api_key=SECRET123&q=hello", "application/x-www-form-urlencoded", "not JSON"),
        (b"prompt: hi\napi_key: SECRET123\n", "text/plain", "not JSON"),
        (b'"api_key=SECRET123"', "application/json", "JSON, not an object"),
        (b'[{"role": "user", "content": "api_key=SECRET123"}]', "application/json",
         "JSON, not an object"),
    ],
)  # fmt: skip
def test_a_request_body_the_redaction_cannot_read_keeps_none_of_its_content(
    tmp_path: Path, body: bytes, kind: str, dropped: str
) -> None:
    with Upstream() as up:
        up.script["/api/chat"] = json_reply({"error": "bad request"}, status=400)
        with running_proxy(up.url, tmp_path) as (proxy, store):
            got = httpx.post(f"{proxy}/api/chat", content=body, headers={"Content-Type": kind})
    assert got.status_code == 400 and up.requests[0].body == body  # relayed as it was
    assert store.written == 1
    folder = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"SECRET123" not in folder
    (request,) = [c["request"] for c in captures(tmp_path)]
    assert request["body"] is None and request["dropped"] == dropped
    assert request["bytes"] == len(body) and request["content_type"] == kind


def test_a_chat_route_under_a_prefix_of_the_applications_own_is_captured(tmp_path: Path) -> None:
    with Upstream() as up:
        up.script["/gw/v1/chat/completions"] = json_reply({"choices": []})
        with running_proxy(up.url, tmp_path) as (proxy, store):
            httpx.post(f"{proxy}/gw/v1/chat/completions", json=CHAT)
            httpx.get(f"{proxy}/gw/v1/chat/completions")  # not a POST: passed through
    assert [r.path for r in up.requests] == ["/gw/v1/chat/completions"] * 2
    assert store.written == 1 and captures(tmp_path)[0]["api"] == "openai"


def test_the_capture_file_reads_back(tmp_path: Path) -> None:
    with Upstream() as up:
        up.script["/v1/chat/completions"] = json_reply({"choices": []})
        with running_proxy(up.url, tmp_path) as (proxy, _):
            httpx.post(f"{proxy}/v1/chat/completions", json={**CHAT, "tools": TOOLS})
    (path,) = tmp_path.glob("*.json")
    read = read_capture(path, 10_000_000)
    assert read.api == "openai" and read.request["tools"] == TOOLS and read.status == 200


# ------------------------------------------------------------------- where it listens


@pytest.mark.parametrize(
    ("text", "want"),
    [("127.0.0.1:8080", ("127.0.0.1", 8080)), ("[::1]:0", ("::1", 0)),
     ("9000", ("127.0.0.1", 9000)), ("localhost:1", ("localhost", 1))],
)  # fmt: skip
def test_listen_addresses_are_read(text: str, want: tuple[str, int]) -> None:
    assert parse_listen(text) == want


@pytest.mark.parametrize("text", ["", "nohost", ":80", "h:port", "h:70000", "[::1]80"])
def test_bad_listen_addresses_are_refused_in_words(text: str) -> None:
    with pytest.raises(ServeProblem, match="--listen"):
        parse_listen(text)


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_a_listen_address_other_machines_reach_is_refused_unless_asked(host: str) -> None:
    with pytest.raises(ServeProblem, match="--allow-remote"):
        bind(host, 0, allow_remote=False)
    assert loopback_problem(host) is not None


def test_loopback_names_pass() -> None:
    assert loopback_problem("127.0.0.1") is None and loopback_problem("localhost") is None


def test_an_upstream_written_as_ollama_host_is_plain_http() -> None:
    assert check_upstream("127.0.0.1:11434") == "http://127.0.0.1:11434"


@pytest.mark.parametrize(
    "url", ["ftp://x", "", "http://", "http://h:0", "http://h/?q=1", "http://h x", "h:99999"]
)
def test_bad_upstreams_are_refused_without_quoting_credentials(url: str) -> None:
    with pytest.raises(ServeProblem) as caught:
        check_upstream(url.replace("://", "://u:pw-secret@", 1) if "://h" in url else url)
    assert "pw-secret" not in str(caught.value)


# ------------------------------------------------------------------- the command


def test_the_command_ends_on_ctrl_c_with_a_one_line_summary(tmp_path: Path) -> None:
    with Upstream() as up:
        up.script["/api/chat"] = json_reply({"message": {"content": "x"}, "done": True})
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest_cardprobe", "capture", "--upstream", up.url,
             "--listen", "127.0.0.1:0", "--out", str(tmp_path / "caps")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            first = process.stdout.readline()  # type: ignore[union-attr]
            proxy = first.split("listening on ", 1)[1].split(",", 1)[0]
            for _ in range(2):
                httpx.post(f"{proxy}/api/chat", json={**CHAT, "tools": TOOLS})
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    assert err == ""
    assert out.strip().splitlines() == [
        f"capture: 2 chat exchanges with 1 distinct tool set, 0 other request(s) passed "
        f"through; written to {tmp_path / 'caps'}"
    ]
    assert len(list((tmp_path / "caps").glob("*.json"))) == 2


def test_the_command_refuses_a_remote_listen_address_before_starting(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_cardprobe", "capture", "--upstream", "http://127.0.0.1:9",
         "--listen", "0.0.0.0:0", "--out", str(tmp_path / "c")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "--allow-remote" in done.stderr
    assert not (tmp_path / "c").exists() or list((tmp_path / "c").glob("*.json")) == []


def test_ctrl_c_during_a_never_ending_stream_ends_within_the_grace_time(tmp_path: Path) -> None:
    line = b'{"message":{"content":"x"},"done":false}\n'
    with Upstream() as up:
        stop = up.gate()
        up.script["/api/chat"] = endless(line, stop)
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest_cardprobe", "capture", "--upstream", up.url,
             "--listen", "127.0.0.1:0", "--out", str(tmp_path / "caps")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            first = process.stdout.readline()  # type: ignore[union-attr]
            proxy = first.split("listening on ", 1)[1].split(",", 1)[0]
            with httpx.stream("POST", f"{proxy}/api/chat", json=CHAT, timeout=30) as reply:
                chunks = reply.iter_raw()
                next(chunks)
                process.send_signal(signal.SIGINT)
                with pytest.raises(httpx.HTTPError):
                    for _ in chunks:
                        pass
            out, err = process.communicate(timeout=30)
        finally:
            stop.set()
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    assert err.strip().splitlines() == [
        "cardprobe capture: POST /api/chat: stopped before the reply ended"
    ], err
    assert (
        out.strip()
        .splitlines()[-1]
        .startswith("capture: 1 chat exchange (1 streamed, 1 cut short) with 0 distinct tool sets")
    )
    (doc,) = captures(tmp_path / "caps")
    assert doc["error"] == "capture stopped before the reply ended" and doc["reply"]["body"]


def test_exchanges_ending_together_each_get_a_file_of_their_own(tmp_path: Path) -> None:
    """Files are written on worker threads; 400 at once must give 400 files, not fewer."""
    import concurrent.futures
    import time

    from pytest_cardprobe.wire.capture.store import CaptureStore, Exchange

    store = CaptureStore(tmp_path, "http://127.0.0.1:9", [])
    store.prepare()
    exchange = Exchange("ollama", "POST", "/api/chat", time.perf_counter(), {}, b"{}", status=200)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        paths = list(pool.map(lambda _: store.write(exchange), range(400)))
    assert len(set(paths)) == 400 and store.written == 400
    assert len(list(tmp_path.glob("*.json"))) == 400


def test_a_transport_whose_pool_moved_is_refused_in_words() -> None:
    """The watch wraps httpx's private pool in place: a new httpx that moves it must stop
    capture in words as it starts (the application builds its transport at once)."""
    from types import SimpleNamespace

    from pytest_cardprobe.wire.capture.attempt import watch

    with pytest.raises(RuntimeError, match=r"httpx changed: httpx .*'s transport has no"):
        watch(SimpleNamespace(_pool=SimpleNamespace()))  # type: ignore[arg-type]


def test_a_drop_the_watch_did_not_see_is_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reuse is positive evidence: were the wrapped backend never used (a new httpx), a
    dropped request fails as it failed instead of being asked again and again."""
    from pytest_cardprobe.wire.capture import attempt

    monkeypatch.setattr(attempt, "watch", lambda transport: transport)
    second, asked = _second_of_two(tmp_path, "/api/chat", "POST", unanswered(), unanswered())
    assert second.status_code == 502 and asked == 2


def test_one_request_is_asked_three_times_at_most(tmp_path: Path) -> None:
    """Four kept-alive connections, each dropping the next request on it: one request uses
    up two of them and fails on the third ask, however many stale connections are left."""
    from pytest_cardprobe.wire.capture.relay import MAX_ASKS

    together = threading.Barrier(4, timeout=10)

    def held(up: Upstream, request: Any, wfile: Any, conn: socket.socket) -> None:
        together.wait()  # the four first requests at once: four connections
        json_reply({"ok": True})(up, request, wfile, conn)

    notices: list[str] = []
    with Upstream() as up:
        up.script["/api/chat"] = in_turn(held, held, held, held, unanswered())
        with running_proxy(up.url, tmp_path, notices=notices) as (proxy, _):
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                firsts = list(
                    pool.map(
                        lambda _: httpx.post(f"{proxy}/api/chat", json=CHAT, timeout=10), range(4)
                    )
                )
            last = httpx.post(f"{proxy}/api/chat", json=CHAT, timeout=10)
    assert [f.status_code for f in firsts] == [200] * 4
    assert last.status_code == 502 and MAX_ASKS == 3
    assert len(up.requests) == 4 + MAX_ASKS
    assert sum("asked again" in n for n in notices) == MAX_ASKS - 1


def test_the_connection_the_last_ask_opens_is_watched_too(tmp_path: Path) -> None:
    """Two stale connections take a request to its last ask, which opens a third; when the
    server later drops the next request on that one, it is asked again like any other."""
    together = threading.Barrier(2, timeout=10)

    def held(up: Upstream, request: Any, wfile: Any, conn: socket.socket) -> None:
        together.wait()
        json_reply({"ok": True})(up, request, wfile, conn)

    drop, answer = unanswered(), json_reply({"ok": True})
    with Upstream() as up:
        up.script["/api/chat"] = in_turn(held, held, drop, drop, answer, drop, answer)
        with running_proxy(up.url, tmp_path) as (proxy, _):
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                firsts = list(
                    pool.map(lambda _: httpx.post(f"{proxy}/api/chat", json=CHAT), [0, 1])
                )
            with httpx.Client(timeout=10) as client:
                third = client.post(f"{proxy}/api/chat", json=CHAT)  # asks 3, 4, 5
                fourth = client.post(f"{proxy}/api/chat", json=CHAT)  # asks 6, 7
    assert [r.status_code for r in [*firsts, third, fourth]] == [200] * 4
    assert len(up.requests) == 7


def test_the_application_s_idle_connections_outlast_its_own_keep_alive(tmp_path: Path) -> None:
    """uvicorn closes an idle client connection after 5 s, just when httpx (the OpenAI and
    Ollama clients) lets go of one: the same race, on the application's side."""
    from pytest_cardprobe.wire.capture.relay import CaptureApp
    from pytest_cardprobe.wire.capture.serve import make_server
    from pytest_cardprobe.wire.capture.store import CaptureStore

    app = CaptureApp("http://127.0.0.1:1", CaptureStore(tmp_path, "http://127.0.0.1:1", []))
    assert make_server(app).config.timeout_keep_alive > 30


def test_an_httpx_capture_cannot_watch_is_an_error_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_cardprobe.__main__ import main
    from pytest_cardprobe.wire.capture import attempt
    from pytest_cardprobe.wire.transport import BackendMoved

    def moved(transport: Any) -> Any:
        raise BackendMoved("httpx changed: no network backend")

    monkeypatch.setattr(attempt, "watch", moved)
    out = tmp_path / "c"
    code = main(["capture", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0",
                 "--out", str(out)])  # fmt: skip
    assert code == 2 and "error: httpx changed" in capsys.readouterr().err
    assert not out.exists()


def test_the_notice_shows_the_path_as_sent_never_decoded(tmp_path: Path) -> None:
    """The path is the application's text: an escape percent-encoded in it stays encoded in
    the notice, so it cannot reach the terminal."""
    path = "/api/ta%1b[2Jgs"
    notices: list[str] = []
    with Upstream() as up:
        up.script["/api/ta%1b[2Jgs"] = in_turn(json_reply({}), unanswered(), json_reply({}))
        with (
            running_proxy(up.url, tmp_path, notices=notices) as (proxy, _),
            httpx.Client(timeout=10) as client,
        ):
            got = [client.get(f"{proxy}{path}").status_code for _ in range(2)]
    assert got == [200, 200] and len(up.requests) == 3
    assert notices == [
        f"cardprobe capture: GET {path}: the upstream closed a kept-alive connection before "
        "replying; asked again"
    ]
