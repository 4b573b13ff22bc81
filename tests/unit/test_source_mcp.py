"""Reading an MCP server's tools through the official SDK (source/mcp.py, source/listing.py).

The servers are real: tests/unit/mcp_app.py, built with the ``mcp`` SDK, over stdio and
streamable HTTP, and a hand-written JSON-RPC responder (``--raw``) for listings the SDK server
would never send. Every hostile server ends in a :class:`SourceProblem` naming the server
and the cause, within the time bound, and no ``env``/``headers`` value reaches a message.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.source.listing import checked, from_mcp
from pytest_cardprobe.source.mcp import label, list_tools, secret_values
from pytest_cardprobe.source.python import Bounds
from pytest_cardprobe.suite.sources import McpServer, SourceProblem, map_names

pytest.importorskip("mcp")  # the optional extra; the dev extra installs it

APP = Path(__file__).with_name("mcp_app.py")
SECRET = "s3cr3t-T0KEN-value"


def stdio(*args: str, **kw: Any) -> McpServer:
    return McpServer(command=(sys.executable, str(APP), *args), **kw)


def bounds(timeout: float = 60.0) -> Bounds:
    return Bounds(timeout, 10_000_000, None)


def problem(server: McpServer, timeout: float = 60.0) -> str:
    with pytest.raises(SourceProblem) as info:
        list_tools(server, bounds(timeout))
    return str(info.value)


def test_a_stdio_server_lists_every_page_in_its_order() -> None:
    read = list_tools(stdio("--page", "1"), bounds())
    assert [t["name"] for t in read.value] == ["read_file", "code.search"]
    assert read.identity == {"mcp_server": "cardprobe-test-app 1.2.3"}
    tools = checked(from_mcp(read.value))
    assert tools[0] == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the user's project and return its text.",
            "parameters": read.value[0]["inputSchema"],
        },
    }
    mapped = map_names(tools, McpServer(command=("x",), prefix="app_", replace=((".", "_"),)))
    assert [t["function"]["name"] for t in mapped] == ["app_read_file", "app_code_search"]


@pytest.fixture
def http_server() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(APP), "--http", str(port), "--page", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_an_http_server_lists_every_page_with_the_headers_given(http_server: str) -> None:
    server = McpServer(url=http_server, headers=(("Authorization", f"Bearer {SECRET}"),))
    read = list_tools(server, bounds())
    assert [t["name"] for t in read.value] == ["read_file", "code.search"]
    assert label(server) == f"mcp: {http_server}"


def test_a_url_secret_is_not_in_the_label() -> None:
    server = McpServer(url=f"http://user:{SECRET}@127.0.0.1:9/mcp?token={SECRET}")
    assert SECRET not in label(server)
    assert secret_values(server) == [SECRET]  # blanked from any message the SDK words
    message = problem(server, timeout=20)
    assert SECRET not in message and "could not be read" in message


def test_a_server_that_crashes_is_named_with_its_standard_error() -> None:
    started = time.monotonic()
    message = problem(stdio("--crash"))
    assert message.startswith(f"mcp: {sys.executable} {APP} --crash could not be read:")
    assert "its standard error ended with: Traceback: the server broke at start" in message
    assert time.monotonic() - started < 30


def test_a_server_that_hangs_is_stopped_at_the_deadline() -> None:
    started = time.monotonic()
    message = problem(stdio("--hang"), timeout=3)
    assert "did not list its tools within 3 s and was stopped" in message
    assert time.monotonic() - started < 3 + 10  # the SDK's bounded shutdown, a loaded machine


def test_a_server_that_lists_ten_thousand_tools_is_refused_in_bounded_time() -> None:
    started = time.monotonic()
    message = problem(stdio("--many", "10000", "--page", "10000"))
    assert "lists more than 1000 tools" in message
    assert time.monotonic() - started < 60


def test_env_values_reach_the_server_and_no_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARDPROBE_TEST_TOKEN", SECRET)
    server = stdio(
        "--echo-env", "API_TOKEN", "--hang", env=(("API_TOKEN", "${CARDPROBE_TEST_TOKEN}"),)
    )
    message = problem(server, timeout=3)
    # The server got the value (it printed it), and the message shows it blanked.
    assert "API_TOKEN=[redacted]" in message
    assert SECRET not in message and SECRET not in repr(server)


def test_an_env_reference_that_is_not_set_names_the_variable_not_a_value() -> None:
    message = problem(stdio(env=(("API_TOKEN", "${CARDPROBE_NOT_SET_ANYWHERE}"),)))
    assert "env API_TOKEN: ${CARDPROBE_NOT_SET_ANYWHERE} is not set in the environment" in message


def raw(tmp_path: Path, pages: list[dict[str, Any]]) -> McpServer:
    path = tmp_path / "pages.json"
    path.write_text(json.dumps(pages))
    return stdio("--raw", str(path))


def tool(name: str, schema: Any = None) -> dict[str, Any]:
    return {"name": name, "description": f"{name}.", "inputSchema": schema or {"type": "object"}}


def test_a_cursor_that_repeats_is_refused(tmp_path: Path) -> None:
    page = {"tools": [tool("a")], "nextCursor": "again"}
    assert "sent the cursor 'again' twice" in problem(raw(tmp_path, [page]))


def test_a_listing_that_is_not_json_ends_at_the_deadline(tmp_path: Path) -> None:
    message = problem(raw(tmp_path, [{"garbage": True}]), timeout=4)
    assert "did not list its tools within 4 s" in message


@pytest.mark.parametrize(
    ("tools", "wanted"),
    [
        (
            [tool("a", {"type": "object", "properties": {"x": {"type": 12}}})],
            "tool 'a' ($[0].function.parameters): not a valid JSON Schema",
        ),
        (
            [tool("a", {"type": "object", "properties": {"x": {"$ref": "#/$defs/nope"}}})],
            "does not resolve inside the tool's parameters",
        ),
        ([tool("a"), tool("a")], "tool 'a' is declared twice"),
        ([], "gave no tools (an empty list)"),
        ([tool("x" * 129)], "a name of 129 characters; servers take at most 128"),
        ([tool("read file")], "a name with whitespace or control characters"),
    ],
)
def test_an_invalid_listing_names_the_tool(
    tmp_path: Path, tools: list[dict[str, Any]], wanted: str
) -> None:
    read = list_tools(raw(tmp_path, [{"tools": tools}]), bounds())
    with pytest.raises(SourceProblem) as info:
        checked(from_mcp(read.value))
    assert wanted in str(info.value)


@pytest.mark.parametrize("schema", ["not a schema", {"type": "string"}])
def test_an_input_schema_the_sdk_refuses_is_named(tmp_path: Path, schema: Any) -> None:
    # The SDK's client (the application's too) refuses the listing before cardprobe sees it.
    message = problem(raw(tmp_path, [{"tools": [tool("a", schema)]}]))
    assert message.startswith(f"mcp: {sys.executable} {APP} --raw")
    assert (
        "listed what the MCP SDK refuses: ValidationError: 1 validation error for ListToolsResult"
    ) in message
    assert "inputSchema" in message


def test_a_parameters_schema_of_another_type_is_refused_by_the_suite_rules() -> None:
    listing = [{"name": "a", "inputSchema": {"type": "string"}}]
    with pytest.raises(SourceProblem) as info:
        checked(from_mcp(listing))
    assert str(info.value) == (
        "tool 'a' ($[0].function.parameters.type): expected a JSON Schema mapping with "
        "`type: object`, got type 'string'"
    )


def test_a_name_that_collides_after_the_prefix_is_refused(tmp_path: Path) -> None:
    read = list_tools(raw(tmp_path, [{"tools": [tool("a.b"), tool("a_b")]}]), bounds())
    with pytest.raises(SourceProblem, match="both become 'gh_a_b'"):
        map_names(checked(from_mcp(read.value)), McpServer(prefix="gh_", replace=((".", "_"),)))
